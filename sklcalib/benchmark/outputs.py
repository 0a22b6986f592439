"""One folder per benchmark run, so a run never mixes with an earlier one's files.

``sklcalib benchmark --out DIR`` writes into a new ``DIR/run-YYYYMMDD-HHMMSS``
(local time; ``-2``, ``-3``, ... if two runs start in the same second) and,
once every file of the run is written, points ``DIR/latest`` at it in one
atomic step. A run that does not complete (Ctrl-C, SIGTERM, a failed import,
a full disk) removes its folder and leaves ``latest`` on the last complete
run; where the folder cannot be removed it is renamed ``run-...-incomplete``.
Nothing an earlier run wrote is removed or overwritten: a second run with fewer
datasets cannot leave stale reliability diagrams beside its results, and
earlier results stay for comparison.
"""

import contextlib
import os
import shutil
from datetime import datetime
from pathlib import Path

from sklcalib._utils._docstrings import fill_doc as _fill_doc

__all__ = ["INCOMPLETE", "LATEST", "discard_run", "new_run_dir", "run_folder"]

#: name of the pointer to the newest complete run folder inside --out
LATEST = "latest"
#: suffix of a run folder that did not complete and could not be removed
INCOMPLETE = "-incomplete"


@_fill_doc
def new_run_dir(base, *, now=None):
    """Create and return a fresh, empty run folder inside ``base``.

    ``latest`` is not touched: :func:`run_folder` points it at the folder
    once the run is complete.

    %(run_folder_parameters)s

    Returns
    -------
    run_dir : pathlib.Path

    Examples
    --------
    >>> import tempfile
    >>> from datetime import datetime
    >>> from pathlib import Path
    >>> from sklcalib.benchmark.outputs import new_run_dir
    >>> base = Path(tempfile.mkdtemp())
    >>> new_run_dir(base, now=datetime(2026, 1, 2, 3, 4, 5)).name
    'run-20260102-030405'
    >>> new_run_dir(base, now=datetime(2026, 1, 2, 3, 4, 5)).name
    'run-20260102-030405-2'
    """
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    name, k = f"run-{stamp}", 1
    while True:
        try:
            run_dir = base / name
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            k += 1
            name = f"run-{stamp}-{k}"


def discard_run(run_dir):
    """Remove an incomplete run folder, or rename it ``...-incomplete``.

    Parameters
    ----------
    run_dir : str or path-like

    Returns
    -------
    left : pathlib.Path or None
        The renamed folder, or None if it was removed.
    """
    run_dir = Path(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    if not run_dir.exists():
        return None
    marked = run_dir.with_name(run_dir.name + INCOMPLETE)
    with contextlib.suppress(OSError):
        run_dir.rename(marked)
        return marked
    return run_dir


@contextlib.contextmanager
@_fill_doc
def run_folder(base, *, now=None):
    """A new run folder for the block; ``latest`` points at it only if the
    block completes.

    If the block raises (KeyboardInterrupt and SystemExit included), the
    folder is discarded (:func:`discard_run`) and ``latest`` keeps pointing
    at the last complete run.

    %(run_folder_parameters)s

    Yields
    ------
    run_dir : pathlib.Path

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklcalib.benchmark.outputs import run_folder
    >>> base = Path(tempfile.mkdtemp())
    >>> with run_folder(base) as run_dir:
    ...     _ = (run_dir / "results.csv").write_text("a,b\\n")
    >>> (base / "latest").resolve() == run_dir.resolve()
    True
    """
    base = Path(base)
    run_dir = new_run_dir(base, now=now)
    try:
        yield run_dir
    except BaseException:
        discard_run(run_dir)
        raise
    _point_latest(base, run_dir.name)


def _point_latest(base, name):
    """Point ``base/latest`` at ``name`` in one step (a relative symbolic
    link; a text file holding the name where links are refused)."""
    latest = base / LATEST
    tmp = base / f".{LATEST}-{os.getpid()}"
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(name, target_is_directory=True)
        # replace in one step: a concurrent reader never sees no pointer
        os.replace(tmp, latest)
    except OSError:
        # no symbolic links here (Windows without developer mode): a text file,
        # also replaced in one step
        with contextlib.suppress(OSError):
            tmp.unlink()
        tmp.write_text(name + "\n")
        if latest.is_symlink():
            latest.unlink()
        os.replace(tmp, latest)
