"""What the file readers share: the error type, the size check and labels."""

import os
import stat
from dataclasses import dataclass

import numpy as np

from sklcalib._utils._memory import human_size

LABEL_COLUMN = "y_true"


@dataclass(frozen=True)
class Layout:
    """Where a file's labels and scores are, and what the scores are.

    ``label``: the column or array of the true classes; ``scores``: the class
    columns of a table (a tuple), the array of an .npz (a str), or None for
    the defaults; ``logits``: the scores are logits; ``segments``: columns of
    a table read as segment columns (left out of the default class columns).
    """

    label: str = LABEL_COLUMN
    scores: object = None
    logits: bool = False
    segments: tuple = ()

    @property
    def kind(self):
        return "logits" if self.logits else "probabilities"


class InputFileError(ValueError):
    """A file that cannot be read as predictions; the message is one line.

    Raised by :func:`~sklcalib.io.read_predictions` for a missing, unreadable,
    malformed or too large file, with the file's path and what to change.

    Examples
    --------
    >>> from sklcalib.io import InputFileError, read_predictions
    >>> try:
    ...     read_predictions("no_such_file.csv")
    ... except InputFileError as exc:
    ...     print(exc)
    no_such_file.csv: no such file
    """


def check_size(path, needed, limit, what):
    """Refuse, before reading, data that would take more than ``limit`` (a
    :class:`~sklcalib._utils._memory.DataLimit`)."""
    if needed > limit.max_bytes:
        raise InputFileError(
            f"{path}: {what} would take {human_size(needed)} of memory, more than "
            f"the limit of {human_size(limit.max_bytes)} ({limit.explanation}); "
            "refused before reading"
        )


def short(value, limit=40):
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ----------------------------------------------------------------------------
# the file itself
# ----------------------------------------------------------------------------
def check_regular_file(path):
    """Raise unless ``path`` is a regular file (symbolic links followed),
    naming what it is instead."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputFileError(
                f"{path}: a dangling symbolic link (to {os.readlink(path)!r}, "
                "which does not exist)"
            ) from None
        raise InputFileError(f"{path}: no such file") from None
    except PermissionError:
        raise InputFileError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({exc.strerror})") from None
    mode = info.st_mode
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            raise InputFileError(f"{path}: is {what}, not a regular file")
    if not stat.S_ISREG(mode):
        raise InputFileError(f"{path}: not a regular file")
    return info


def maybe_number(text):
    try:
        return float(text)
    except ValueError:
        return text


def label_text(value):
    """A label as text; integral floats (``2.0``) as integers (``"2"``),
    bytes (a NumPy ``S`` array) decoded."""
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, float | np.floating):
        value = float(value)
        if value.is_integer():
            return str(int(value))
    return str(value)


def unknown_labels(path, unknown, classes, where):
    shown = ", ".join(repr(short(u, 30)) for u in unknown[:5])
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    raise InputFileError(
        f"{path}: {where} has labels that match no class column: {shown}{more} "
        f"(class columns: {', '.join(classes)})"
    )


def label_indices(path, labels, classes, *, where):
    position = {c: i for i, c in enumerate(classes)}
    unknown = sorted({lab for lab in labels if lab not in position})
    if unknown:
        unknown_labels(path, unknown, classes, where)
    return np.array([position[lab] for lab in labels], dtype=np.intp)


def index_labels(path, y_raw, n_classes, names=None):
    """Labels that must be column indices 0..K-1."""
    y_raw = np.ravel(y_raw)
    ok = y_raw.dtype.kind in "biuf"
    if ok:
        as_float = y_raw.astype(np.float64)
        ok = bool(
            np.all(np.isfinite(as_float)) and np.all(as_float == np.round(as_float))
        )
    if not ok:
        raise InputFileError(
            f"{path}: {LABEL_COLUMN!r} holds labels that are not column indices "
            f"0..{n_classes - 1}; add an array 'classes' naming the {n_classes} "
            "columns"
        )
    y = as_float.astype(np.intp)
    bad = sorted(set(y[(y < 0) | (y >= n_classes)].tolist()))
    if bad:
        hint = (
            "; integer labels are column indices even with 'classes' (save "
            "y_true as the class names, as strings, to match them by name)"
            if names is not None
            else ""
        )
        raise InputFileError(
            f"{path}: labels {bad[:5]} match no column: the scores have "
            f"{n_classes} columns (indices 0..{n_classes - 1}){hint}"
        )
    return y
