"""One folder per benchmark run, so a run never mixes with an earlier one's files.

``sklcalib benchmark --out DIR`` writes into a new ``DIR/run-YYYYMMDD-HHMMSS``
(local time; ``-2``, ``-3``, ... if two runs start in the same second) and
points ``DIR/latest`` at it. Nothing an earlier run wrote is removed or
overwritten: a second run with fewer datasets cannot leave stale reliability
diagrams beside its results, and earlier results stay for comparison.
"""

import os
from datetime import datetime
from pathlib import Path

__all__ = ["LATEST", "new_run_dir"]

#: name of the pointer to the newest run folder inside --out
LATEST = "latest"


def new_run_dir(base, *, now=None):
    """Create and return a fresh run folder inside ``base``; point ``latest`` at it.

    ``base/latest`` is a relative symbolic link to the run folder; where the
    file system refuses symbolic links (Windows without developer mode) it is a
    text file holding the run folder's name instead.

    Parameters
    ----------
    base : str or path-like
        The ``--out`` folder; created if missing.
    now : datetime, optional
        The time stamp of the folder's name (default: now).

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
    >>> (base / "latest").resolve().name
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
            break
        except FileExistsError:
            k += 1
            name = f"run-{stamp}-{k}"
    _point_latest(base, name)
    return run_dir


def _point_latest(base, name):
    latest = base / LATEST
    tmp = base / f".{LATEST}-{os.getpid()}"
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(name, target_is_directory=True)
        # replace in one step: a concurrent reader never sees no pointer
        os.replace(tmp, latest)
    except OSError:
        if latest.is_symlink():
            latest.unlink()
        latest.write_text(name + "\n")
