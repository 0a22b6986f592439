"""Reading predictions from files people were sent: .csv, .parquet, .npz, .npy.

File layouts (the columns' order is the classes' order):

- ``.csv`` / ``.parquet``: a column ``y_true`` holding each row's class, and one
  column per class holding its probability (``--logits``: its logit); the
  column headers are the class names, and ``y_true`` must use them. Parquet
  needs pandas and pyarrow (``pip install "sklcalib[parquet]"``).
- ``.npz``: an array ``y_true`` and an array ``y_prob`` (probabilities) or
  ``logits``, of shape (n, K), or (n,) for the positive class of a binary
  problem; optionally ``classes``, the K class names. Integer ``y_true`` holds
  column indices 0..K-1 (with or without ``classes``); string ``y_true`` holds
  class names, which need ``classes``. Saved by ``numpy.savez``.
- ``.npy``: a structured array with a field ``y_true`` and one field per class
  (like a table), or a plain (n, K + 1) float array whose first column is the
  column index 0..K-1 of the true class and whose other K columns are the
  probabilities (or logits).

A file is untrusted input: every problem ends in :class:`InputFileError`, one
line for the user, never a traceback. Arrays of Python objects are refused
(loading a pickle can run arbitrary code). Before anything is decompressed or
allocated, the size the data would take in memory is read from the file's own
directory (the zip directory of an .npz, the header of an .npy, the row-group
sizes of a parquet file, the first rows of a csv) and compared with a limit,
:func:`default_max_bytes` unless the caller gives one: a 5 MB archive that
inflates to 2 GB is refused, not decompressed.
"""

import csv
import os
import re
import stat
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import softmax

from sklcalib._utils._scores import as_columns, binary_logits, log_floored
from sklcalib._utils._validation import check_prob_values

__all__ = [
    "InputFileError",
    "Predictions",
    "default_max_bytes",
    "parse_size",
    "read_predictions",
]

LABEL_COLUMN = "y_true"
SUFFIXES = (".csv", ".parquet", ".npz", ".npy")

#: the csv header is read as one line: wider than this is no table of classes
MAX_HEADER_BYTES = 1 << 20
#: rows of a csv sampled to estimate the bytes per row
_SAMPLE_BYTES = 1 << 20
#: rows of --logits summing to 1 within this, every value in [0, 1]: these
#: are probabilities (a softmax of them would be almost uniform)
LOGITS_ROW_SUM_ATOL = 1e-3


class InputFileError(ValueError):
    """A file the command cannot use; the message is one line for the user."""


@dataclass
class Predictions:
    """What a file holds: true class indices and scores, one column per class."""

    path: Path
    y: np.ndarray  # column index of the true class, (n,)
    scores: np.ndarray  # (n, K) float64: probabilities or logits
    classes: list  # K class names, as str
    kind: str  # "probabilities" or "logits"

    @property
    def proba(self):
        return softmax(self.scores, axis=1) if self.kind == "logits" else self.scores

    @property
    def logits(self):
        if self.kind == "logits":
            return self.scores
        # log-probabilities are logits (softmax(log p) = p); 0 -> tiny
        return log_floored(self.scores)


# ----------------------------------------------------------------------------
# limits
# ----------------------------------------------------------------------------
def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX
        return None


def default_max_bytes():
    """The default limit on the memory a file's data may take: a quarter of
    the machine's physical memory (4 GiB where it cannot be read).

    A quarter leaves room for the copies the metrics make of the scores.

    Returns
    -------
    max_bytes : int

    Examples
    --------
    >>> from sklcalib.cli.readers import default_max_bytes
    >>> default_max_bytes() > 0
    True
    """
    memory = _physical_memory()
    return int(memory // 4) if memory else 4 << 30


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text):
    """``"500M"`` -> 524288000: bytes, with an optional K, M, G or T (powers
    of 1024, an optional trailing ``B`` or ``iB``).

    Parameters
    ----------
    text : str

    Returns
    -------
    size : int

    Examples
    --------
    >>> from sklcalib.cli.readers import parse_size
    >>> parse_size("2G"), parse_size("1000")
    (2147483648, 1000)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.I)
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G or a byte count)")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte, got {text!r}")
    return int(value)


def _human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def _check_size(path, needed, max_bytes, what):
    if needed > max_bytes:
        raise InputFileError(
            f"{path}: {what} would take {_human(needed)} of memory, more than "
            f"the limit of {_human(max_bytes)} (--max-bytes; default a quarter "
            "of this machine's memory); refused"
        )


def _short(value, limit=40):
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ----------------------------------------------------------------------------
# the file itself
# ----------------------------------------------------------------------------
def _check_regular_file(path):
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


def read_predictions(path, *, logits=False, max_bytes=None):
    """Read labels and scores from a .csv, .parquet, .npz or .npy file.

    Parameters
    ----------
    path : str or path-like
        The file; its layout is described in the module's docstring.
    logits : bool, default=False
        The class columns of a table (or the plain .npy array) are logits,
        not probabilities. An .npz file says which by naming its array
        ``logits`` or ``y_prob``.
    max_bytes : int, optional
        Refuse a file whose data would take more memory than this (default:
        :func:`default_max_bytes`). Read from the file's directory or header
        before anything is decompressed.

    Returns
    -------
    predictions : Predictions
        ``y`` (column index of the true class), ``scores`` (n, K),
        ``classes`` (K names), ``kind`` (``"probabilities"`` or ``"logits"``).

    Raises
    ------
    InputFileError
        With a one-line message, for any file the command cannot use.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklcalib.cli.readers import read_predictions
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.csv"
    >>> _ = path.write_text("y_true,cat,dog\\ncat,0.8,0.2\\ndog,0.3,0.7\\n")
    >>> p = read_predictions(path)
    >>> p.classes, p.y.tolist(), p.scores[0].tolist()
    (['cat', 'dog'], [0, 1], [0.8, 0.2])
    """
    path = Path(path)
    max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
    info = _check_regular_file(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputFileError(
            f"{path}: unknown file type {suffix or '(none)'!r}; give a "
            f"{', '.join(SUFFIXES)} file"
        )
    try:
        if suffix == ".csv":
            return _read_csv(path, logits, info.st_size, max_bytes)
        if suffix == ".parquet":
            return _read_parquet(path, logits, max_bytes)
        if suffix == ".npz":
            return _read_npz(path, logits, max_bytes)
        return _read_npy(path, logits, info.st_size, max_bytes)
    except PermissionError:
        raise InputFileError(f"{path}: permission denied") from None
    except MemoryError:
        raise InputFileError(
            f"{path}: not enough memory to read this file (--max-bytes sets "
            "the limit checked before reading)"
        ) from None
    except OSError as exc:
        raise InputFileError(
            f"{path}: cannot read ({exc.strerror or type(exc).__name__})"
        ) from None


# ----------------------------------------------------------------------------
# csv
# ----------------------------------------------------------------------------
def _csv_header(path):
    """The header's fields and the byte offset of the first data row."""
    with open(path, "rb") as fh:
        line = fh.readline(MAX_HEADER_BYTES + 1)
        offset = fh.tell()
    if len(line) > MAX_HEADER_BYTES:
        raise InputFileError(
            f"{path}: the header line is longer than {_human(MAX_HEADER_BYTES)}; "
            "a table of classes has one column per class"
        )
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(f"{path}: not a UTF-8 text csv file") from None
    if not text.strip():
        raise InputFileError(f"{path}: the file is empty")
    try:
        (fields,) = list(csv.reader([text.rstrip("\r\n")]))
    except (csv.Error, ValueError) as exc:
        raise InputFileError(f"{path}: unreadable header line ({exc})") from None
    return [h.strip() for h in fields], offset


def _check_header(path, header):
    if LABEL_COLUMN not in header:
        shown = ", ".join(repr(_short(h, 20)) for h in header[:8])
        more = ", ..." if len(header) > 8 else ""
        raise InputFileError(
            f"{path}: no column {LABEL_COLUMN!r}; the file needs a column "
            f"{LABEL_COLUMN!r} with each row's class and one column per class "
            f"(found columns: {shown or 'none'}{more})"
        )
    if len(set(header)) != len(header):
        raise InputFileError(f"{path}: repeated column names in the header")
    classes = [h for h in header if h != LABEL_COLUMN]
    if len(classes) < 2:
        raise InputFileError(
            f"{path}: {len(classes)} class column(s); give one column per class "
            "(two or more), headed by the class names"
        )
    for name in classes:
        if name == "" or name.startswith("Unnamed:"):
            raise InputFileError(
                f"{path}: a column without a name ({name!r}) among the class "
                "columns: likely the row index pandas writes by default; save "
                "with DataFrame.to_csv(path, index=False)"
            )
    return classes


def _estimated_rows(path, offset, size):
    """An estimate of the number of data rows from the first MiB."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        sample = fh.read(_SAMPLE_BYTES)
    lines = sample.count(b"\n")
    if lines == 0:
        return 1 if sample.strip() else 0
    return int((size - offset) * lines / len(sample)) + 1


def _read_csv(path, logits, size, max_bytes):
    header, offset = _csv_header(path)
    classes = _check_header(path, header)
    label_at = header.index(LABEL_COLUMN)
    # each row becomes K + 1 float64; the parser's growing buffer may double it
    rows = _estimated_rows(path, offset, size)
    _check_size(path, 2 * 8 * len(header) * rows, max_bytes, f"about {rows:,} rows")

    position = {c: i for i, c in enumerate(classes)}
    unknown = {}

    def label_index(text):
        text = text.strip()
        k = position.get(text)
        if k is None:
            k = position.get(_label_text(_maybe_number(text)))
        if k is None:
            unknown.setdefault(text, len(unknown))
            return -1.0
        return float(k)

    with (
        open(path, encoding="utf-8-sig", newline="") as fh,
        warnings.catch_warnings(),
    ):
        # a header without rows is reported below, not as numpy's warning
        warnings.simplefilter("ignore", UserWarning)
        fh.seek(offset)  # past the header (its BOM included)
        try:
            table = np.loadtxt(
                fh,
                delimiter=",",
                quotechar='"',
                comments=None,
                dtype=np.float64,
                converters={label_at: label_index},
                ndmin=2,
                encoding=None,
            )
        except UnicodeDecodeError:
            raise InputFileError(f"{path}: not a UTF-8 text csv file") from None
        except ValueError as exc:
            raise _csv_error(path, header, exc) from None
    if table.shape[0] == 0:
        raise InputFileError(f"{path}: no rows")
    if table.shape[1] != len(header):
        raise InputFileError(
            f"{path}: the rows have {table.shape[1]} fields, the header {len(header)}"
        )
    if unknown:
        _unknown_labels(path, list(unknown), classes, f"column {LABEL_COLUMN!r}")
    y = table[:, label_at].astype(np.intp)
    scores = np.delete(table, label_at, axis=1)
    return _checked(path, y, scores, classes, "logits" if logits else "probabilities")


_AT = re.compile(r" at row (\d+), column (\d+)\.?$")
_CHANGED = re.compile(r"number of columns changed from (\d+) to (\d+) at row (\d+)")


def _csv_error(path, header, exc):
    """One line for numpy's parser error, with the column's name."""
    text = str(exc)
    prefix = "could not convert string "
    if text.startswith(prefix):
        at = _AT.search(text)
        value = text[len(prefix) : at.start() if at else len(text)]
        value = value[: value.rfind(" to ")].strip("'\"")
        where, row = "a field", ""
        if at:
            col = int(at.group(2))
            name = header[col - 1] if 0 < col <= len(header) else f"#{col}"
            where, row = f"column {name!r}", f" in row {int(at.group(1)) + 1}"
        return InputFileError(
            f"{path}: {where} holds {_short(value)!r}, not a number{row}"
        )
    changed = _CHANGED.search(text)
    if changed:
        now, row = int(changed.group(2)), int(changed.group(3))
        return InputFileError(
            f"{path}: row {row} has {now} fields, the header {len(header)}"
        )
    return InputFileError(f"{path}: unreadable csv ({_short(text, 120)})")


def _maybe_number(text):
    try:
        return float(text)
    except ValueError:
        return text


def _label_text(value):
    """A label as text; integral floats (``2.0``) as integers (``"2"``),
    bytes (a NumPy ``S`` array) decoded."""
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, float | np.floating):
        value = float(value)
        if value.is_integer():
            return str(int(value))
    return str(value)


# ----------------------------------------------------------------------------
# tables in memory (parquet, structured .npy)
# ----------------------------------------------------------------------------
def _read_parquet(path, logits, max_bytes):
    try:
        import pandas as pd
        import pyarrow.parquet as pq
    except ImportError:
        raise InputFileError(
            f"{path}: reading .parquet needs pandas and pyarrow: "
            'pip install "sklcalib[parquet]"'
        ) from None
    try:
        meta = pq.ParquetFile(path).metadata
        needed = sum(
            meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)
        )
    except Exception as exc:  # pyarrow raises its own error types
        raise InputFileError(
            f"{path}: not a readable parquet file ({_short(exc, 120)})"
        ) from None
    _check_size(path, needed, max_bytes, "its data")
    try:
        frame = pd.read_parquet(path)
    except MemoryError:
        raise
    except Exception as exc:
        raise InputFileError(
            f"{path}: not a readable parquet file ({_short(exc, 120)})"
        ) from None
    header = [str(c) for c in frame.columns]
    columns = {
        name: frame[column].to_numpy()
        for name, column in zip(header, frame.columns, strict=True)
    }
    return _from_table(path, header, columns, logits)


def _from_table(path, header, columns, logits):
    classes = _check_header(path, header)
    scores = np.column_stack([_numbers(path, columns[c], c) for c in classes])
    labels = [_label_text(v) for v in np.asarray(columns[LABEL_COLUMN]).tolist()]
    y = _label_indices(path, labels, classes, where=f"column {LABEL_COLUMN!r}")
    return _checked(path, y, scores, classes, "logits" if logits else "probabilities")


def _numbers(path, values, name):
    values = np.asarray(values)
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    # an object column: lists, text, None; say what the first bad cell is
    for i, v in enumerate(values.tolist()):
        if isinstance(v, bool) or not isinstance(v, int | float):
            if isinstance(v, list | tuple | np.ndarray):
                what = "a list"
            elif isinstance(v, dict):
                what = "a mapping"
            else:
                what = repr(_short(v))
            raise InputFileError(
                f"{path}: column {name!r} holds {what} in row {i + 1}, not a number"
            )
    return values.astype(np.float64)


def _unknown_labels(path, unknown, classes, where):
    shown = ", ".join(repr(_short(u, 30)) for u in unknown[:5])
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    raise InputFileError(
        f"{path}: {where} has labels that match no class column: {shown}{more} "
        f"(class columns: {', '.join(classes)})"
    )


def _label_indices(path, labels, classes, *, where):
    position = {c: i for i, c in enumerate(classes)}
    unknown = sorted({lab for lab in labels if lab not in position})
    if unknown:
        _unknown_labels(path, unknown, classes, where)
    return np.array([position[lab] for lab in labels], dtype=np.intp)


# ----------------------------------------------------------------------------
# numpy files
# ----------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


def _npy_header(fh):
    """(shape, fortran_order, dtype) of the .npy stream at ``fh``."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(fh)
    # numpy writes 3.0 for utf-8 field names; its reader is not public
    return np.lib.format._read_array_header(fh, version)


def _check_npy_header(path, fh, available, max_bytes, what):
    """Read and check the header of one .npy stream; the bytes its data need
    must be in the stream (``available``) and under the limit."""
    try:
        shape, _, dtype = _npy_header(fh)
    except ValueError as exc:
        raise InputFileError(
            f"{path}: {what} has an unreadable .npy header ({_short(exc, 80)})"
        ) from None
    if dtype.hasobject:
        raise _pickle_error(path, what)
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    _check_size(path, needed, max_bytes, f"{what} of shape {shape}")
    if available is not None and needed > available - fh.tell():
        raise InputFileError(
            f"{path}: {what}'s header declares shape {shape} ({_human(needed)}) "
            f"but holds only {_human(max(available - fh.tell(), 0))}: truncated "
            "or corrupt"
        )


def _magic(path):
    with open(path, "rb") as fh:
        return fh.read(6)


def _pickle_error(path, what="the array"):
    return InputFileError(
        f"{path}: {what} holds Python objects, which only unpickling could read; "
        "refused, because loading a pickle can run arbitrary code (save numbers, "
        "and class names as a string array, e.g. np.asarray(names, dtype=str))"
    )


def _read_npz(path, logits, max_bytes):
    magic = _magic(path)
    if magic.startswith(_NPY_MAGIC):
        raise InputFileError(
            f"{path}: holds a single array (.npy), not an .npz archive; rename "
            "it to .npy, or save with numpy.savez"
        )
    if not magic.startswith(_ZIP_MAGICS):
        raise InputFileError(
            f"{path}: not an .npz archive (no zip signature); save it with "
            "numpy.savez(path, y_true=..., y_prob=...)"
        )
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise InputFileError(f"{path}: not a readable .npz archive ({exc})") from None
    with archive:
        members = {
            info.filename.removesuffix(".npy"): info for info in archive.infolist()
        }
        keys = set(members)
        if LABEL_COLUMN not in keys:
            raise InputFileError(
                f"{path}: no array {LABEL_COLUMN!r} (found: "
                f"{', '.join(repr(_short(k, 20)) for k in sorted(keys)[:8]) or 'none'}"
                "); save it with np.savez(path, y_true=..., y_prob=...) or logits=..."
            )
        if logits or "y_prob" not in keys:
            key = "logits"
            if key not in keys:
                wanted = "'logits' (--logits)" if logits else "'y_prob' or 'logits'"
                raise InputFileError(
                    f"{path}: no array {wanted} (found: {', '.join(sorted(keys))})"
                )
        else:
            key = "y_prob"
        wanted = [LABEL_COLUMN, key] + (["classes"] if "classes" in keys else [])
        # the zip directory declares each member's size before anything is
        # inflated: a small archive of a huge array is refused here
        declared = sum(members[k].file_size for k in wanted)
        _check_size(path, declared, max_bytes, "its arrays, decompressed,")
        arrays = {}
        for k in wanted:
            info = members[k]
            try:
                with archive.open(info) as fh:
                    _check_npy_header(
                        path, fh, info.file_size, max_bytes, f"array {k!r}"
                    )
                with archive.open(info) as fh:
                    arrays[k] = np.lib.format.read_array(fh, allow_pickle=False)
            except InputFileError:
                raise
            # NotImplementedError: an unsupported compression method;
            # RuntimeError: an encrypted member
            except (
                zipfile.BadZipFile,
                EOFError,
                ValueError,
                NotImplementedError,
                RuntimeError,
            ) as exc:
                raise InputFileError(
                    f"{path}: array {k!r} cannot be read ({_short(exc, 100)})"
                ) from None
    y_raw, scores = arrays[LABEL_COLUMN], arrays[key]
    names = arrays.get("classes")
    if scores.dtype.kind not in "biuf":
        raise InputFileError(f"{path}: array {key!r} is not numeric")
    scores = np.asarray(scores, dtype=np.float64)
    kind = "logits" if key == "logits" else "probabilities"
    if scores.ndim == 1:  # binary: the positive class's score
        scores = _binary_columns(scores, kind)
    if scores.ndim != 2:
        raise InputFileError(
            f"{path}: array {key!r} has shape {scores.shape}; give (n, K) or (n,)"
        )
    n_classes = scores.shape[1]
    if names is None:
        classes = [str(k) for k in range(n_classes)]
        y = _index_labels(path, y_raw, n_classes)
    else:
        classes = [_label_text(c) for c in np.ravel(names).tolist()]
        if len(classes) != n_classes:
            raise InputFileError(
                f"{path}: 'classes' names {len(classes)} classes, but {key!r} has "
                f"{n_classes} columns"
            )
        if np.asarray(y_raw).dtype.kind in "biu":
            # integer labels with names: column indices, as without names
            y = _index_labels(path, y_raw, n_classes, names=classes)
        else:
            labels = [_label_text(v) for v in np.ravel(y_raw).tolist()]
            y = _label_indices(path, labels, classes, where=f"array {LABEL_COLUMN!r}")
    if len(y) != scores.shape[0]:
        raise InputFileError(
            f"{path}: {LABEL_COLUMN!r} has {len(y)} entries, {key!r} "
            f"{scores.shape[0]} rows"
        )
    return _checked(path, y, scores, classes, kind)


def _binary_columns(score, kind):
    return binary_logits(score) if kind == "logits" else as_columns(score)


def _index_labels(path, y_raw, n_classes, names=None):
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


def _read_npy(path, logits, size, max_bytes):
    magic = _magic(path)
    if magic.startswith(_ZIP_MAGICS):
        raise InputFileError(
            f"{path}: is an .npz archive (zip), not a single .npy array; rename "
            "it to .npz"
        )
    if not magic.startswith(_NPY_MAGIC):
        raise InputFileError(
            f"{path}: not an .npy file (no NumPy header); save it with numpy.save"
        )
    with open(path, "rb") as fh:
        _check_npy_header(path, fh, size, max_bytes, "the array")
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise InputFileError(
            f"{path}: not a readable .npy file ({_short(exc, 100)})"
        ) from None
    if array.dtype.names:  # structured: fields are the table's columns
        header = list(array.dtype.names)
        columns = {name: array[name] for name in header}
        return _from_table(path, header, columns, logits)
    if array.ndim != 2 or array.shape[1] < 3 or array.dtype.kind not in "biuf":
        raise InputFileError(
            f"{path}: a plain .npy file must be a numeric (n, K + 1) array, the "
            f"true class index first, then K >= 2 score columns; got shape "
            f"{array.shape} of dtype {array.dtype}"
        )
    array = array.astype(np.float64)
    n_classes = array.shape[1] - 1
    y = _index_labels(path, array[:, 0], n_classes)
    classes = [str(k) for k in range(n_classes)]
    kind = "logits" if logits else "probabilities"
    return _checked(path, y, array[:, 1:], classes, kind)


# ----------------------------------------------------------------------------
# the scores
# ----------------------------------------------------------------------------
_ID_NAME = re.compile(r"(?i)^(id|idx|index|row|row_?id|.*_id)$")


def _range_problem(path, scores, classes):
    """A one-line diagnosis of probabilities outside [0, 1] that names the
    column and the likely cause, or None where no column stands out."""
    low, high = scores.min(axis=0), scores.max(axis=0)
    outside = [k for k in range(len(classes)) if low[k] < 0 or high[k] > 1]
    if not outside:
        return None
    n = scores.shape[0]
    sums = scores.sum(axis=1)
    if (
        low.min() >= 0
        and high.max() <= 100
        and np.allclose(sums, 100, atol=0.01 * len(classes))
    ):
        return (
            f"{path}: probabilities in percent (rows sum to 100, max "
            f"{high.max():.4g}); divide the class columns by 100"
        )
    for k in outside:
        column = scores[:, k]
        integral = bool(np.all(column == np.round(column)))
        if _ID_NAME.match(classes[k]) or (
            integral and n > 1 and len(np.unique(column)) == n
        ):
            return (
                f"{path}: column {classes[k]!r} holds distinct whole numbers "
                f"({_short(column[0])}, {_short(column[min(1, n - 1)])}, ...): an "
                "identifier or row-index column, not a class; drop it (only "
                f"{LABEL_COLUMN!r} and one column per class)"
            )
    if len(outside) < len(classes):
        k = outside[0]
        return (
            f"{path}: column {classes[k]!r} holds values outside [0, 1] (min "
            f"{low[k]:.4g}, max {high[k]:.4g}) while other class columns do not: "
            "is it a class column?"
        )
    return None


def _checked(path, y, scores, classes, kind):
    if len(y) == 0:
        raise InputFileError(f"{path}: no rows")
    bad = ~np.isfinite(scores)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise InputFileError(
            f"{path}: {int(bad.sum())} NaN or infinite score(s), first in row "
            f"{int(row) + 1}, class {classes[col]!r}; every score must be finite"
        )
    if kind == "probabilities":
        problem = _range_problem(path, scores, classes)
        if problem:
            raise InputFileError(problem)
        try:
            # the library's one definition of a probability matrix
            scores = check_prob_values(scores, name="probabilities")
        except ValueError as exc:
            hint = (
                "if these are logits, pass --logits"
                if scores.min() < 0 or scores.max() > 1
                else "give one column per class, or pass --logits for logits"
            )
            raise InputFileError(f"{path}: {str(exc).rstrip('.')}; {hint}") from None
    elif (
        len(y) > 1
        and scores.shape[1] > 1
        and scores.min() >= 0
        and scores.max() <= 1
        # rows written as text with a few digits sum to 1 only roughly; logits
        # that all do so are beyond coincidence
        and np.allclose(scores.sum(axis=1), 1.0, rtol=0, atol=LOGITS_ROW_SUM_ATOL)
    ):
        raise InputFileError(
            f"{path}: --logits, but every row lies in [0, 1] and sums to 1: "
            "these are probabilities (their softmax would be almost uniform); "
            "drop --logits"
        )
    return Predictions(path, y, scores, classes, kind)
