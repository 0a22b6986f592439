"""Tables of predictions: .csv, .parquet, and structured .npy arrays."""

import csv
import re
import warnings

import numpy as np

from sklcalib._utils._memory import human_size
from sklcalib.io._common import (
    LABEL_COLUMN,
    InputFileError,
    check_size,
    label_indices,
    label_text,
    maybe_number,
    short,
    unknown_labels,
)

#: the csv header is read as one line: wider than this is no table of classes
MAX_HEADER_BYTES = 1 << 20
#: rows of a csv sampled to estimate the bytes per row
_SAMPLE_BYTES = 1 << 20


def _csv_header(path):
    """The header's fields and the byte offset of the first data row."""
    with open(path, "rb") as fh:
        line = fh.readline(MAX_HEADER_BYTES + 1)
        offset = fh.tell()
    if len(line) > MAX_HEADER_BYTES:
        raise InputFileError(
            f"{path}: the header line is longer than {human_size(MAX_HEADER_BYTES)}; "
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
        shown = ", ".join(repr(short(h, 20)) for h in header[:8])
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


def read_csv(path, logits, size, max_bytes):
    header, offset = _csv_header(path)
    classes = _check_header(path, header)
    label_at = header.index(LABEL_COLUMN)
    # each row becomes K + 1 float64; the parser's growing buffer may double it
    rows = _estimated_rows(path, offset, size)
    check_size(path, 2 * 8 * len(header) * rows, max_bytes, f"about {rows:,} rows")

    position = {c: i for i, c in enumerate(classes)}
    unknown = {}

    def label_index(text):
        text = text.strip()
        k = position.get(text)
        if k is None:
            k = position.get(label_text(maybe_number(text)))
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
        unknown_labels(path, list(unknown), classes, f"column {LABEL_COLUMN!r}")
    y = table[:, label_at].astype(np.intp)
    scores = np.delete(table, label_at, axis=1)
    return (y, scores, classes, "logits" if logits else "probabilities")


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
            f"{path}: {where} holds {short(value)!r}, not a number{row}"
        )
    changed = _CHANGED.search(text)
    if changed:
        now, row = int(changed.group(2)), int(changed.group(3))
        return InputFileError(
            f"{path}: row {row} has {now} fields, the header {len(header)}"
        )
    return InputFileError(f"{path}: unreadable csv ({short(text, 120)})")


def read_parquet(path, logits, max_bytes):
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
            f"{path}: not a readable parquet file ({short(exc, 120)})"
        ) from None
    check_size(path, needed, max_bytes, "its data")
    try:
        frame = pd.read_parquet(path)
    except MemoryError:
        raise
    except Exception as exc:
        raise InputFileError(
            f"{path}: not a readable parquet file ({short(exc, 120)})"
        ) from None
    header = [str(c) for c in frame.columns]
    columns = {
        name: frame[column].to_numpy()
        for name, column in zip(header, frame.columns, strict=True)
    }
    return from_table(path, header, columns, logits)


def from_table(path, header, columns, logits):
    classes = _check_header(path, header)
    scores = np.column_stack([_numbers(path, columns[c], c) for c in classes])
    labels = [label_text(v) for v in np.asarray(columns[LABEL_COLUMN]).tolist()]
    y = label_indices(path, labels, classes, where=f"column {LABEL_COLUMN!r}")
    return (y, scores, classes, "logits" if logits else "probabilities")


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
                what = repr(short(v))
            raise InputFileError(
                f"{path}: column {name!r} holds {what} in row {i + 1}, not a number"
            )
    return values.astype(np.float64)
