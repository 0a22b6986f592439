"""What the file readers share: the error type, the size check and labels."""

import os
import stat

import numpy as np

from sklcalib._utils._memory import human_size

LABEL_COLUMN = "y_true"


class InputFileError(ValueError):
    """A file the command cannot use; the message is one line for the user."""


def check_size(path, needed, max_bytes, what):
    if needed > max_bytes:
        raise InputFileError(
            f"{path}: {what} would take {human_size(needed)} of memory, more than "
            f"the limit of {human_size(max_bytes)} (--max-bytes; default a quarter "
            "of this machine's memory); refused"
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
