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


def _check_named(path, header, names, label, role):
    """Every column of ``names`` (named as a ``role`` column) is in ``header``,
    and none is the labels' column."""
    missing = [c for c in names if c not in header]
    if missing:
        raise InputFileError(
            f"{path}: no column {', '.join(map(repr, missing[:5]))} (named as a "
            f"{role} column; found: {', '.join(map(repr, header[:8]))})"
        )
    if label in names:
        raise InputFileError(
            f"{path}: {label!r} is named both the labels' column and a {role} column"
        )


def _check_header(path, header, layout):
    """The class columns of a table with this header: ``layout.scores`` if
    given, else every column but the label column."""
    label = layout.label
    if label not in header:
        shown = ", ".join(repr(short(h, 20)) for h in header[:8])
        more = ", ..." if len(header) > 8 else ""
        named = label != LABEL_COLUMN
        raise InputFileError(
            f"{path}: no column {label!r}"
            + (
                " (named as the labels' column)"
                if named
                else f"; the file needs a column {label!r} with each row's class "
                "and one column per class (another name: y_true=..., --y-true)"
            )
            + f" (found columns: {shown or 'none'}{more})"
        )
    if len(set(header)) != len(header):
        raise InputFileError(f"{path}: repeated column names in the header")
    _check_named(path, header, layout.segments, label, "segment")
    if layout.scores is not None:
        _check_named(path, header, layout.scores, label, "class")
        both = [c for c in layout.scores if c in layout.segments]
        if both:
            raise InputFileError(
                f"{path}: {both[0]!r} is named both a class column and a segment column"
            )
        classes = list(layout.scores)
    else:
        classes = [h for h in header if h != label and h not in layout.segments]
    if len(classes) == 1:
        raise InputFileError(
            f"{path}: one class column ({classes[0]!r}); give one column per "
            "class, headed by the class names: for a binary problem both "
            "(e.g. the column 1 - p beside p), or save an .npz whose y_prob "
            "has shape (n,) (the positive class's probability)"
        )
    if not classes:
        raise InputFileError(
            f"{path}: no class column; give one column per class (two or "
            "more), headed by the class names"
        )
    for name in classes:
        if name == "" or name.startswith("Unnamed:"):
            raise InputFileError(
                f"{path}: a column without a name ({name!r}) among the class "
                "columns: likely the row index pandas writes by default; save "
                "with DataFrame.to_csv(path, index=False)"
            )
    return classes


def _indices_or_names(path, labels, classes, where):
    """Column indices of text labels: by class name, or, when no label names a
    class and every one is a whole number in ``0..K-1``, the numbers themselves
    (integer labels are column indices, as in an .npz)."""
    position = {c: i for i, c in enumerate(classes)}
    known = [position.get(lab) for lab in labels]
    if all(k is not None for k in known):
        return np.array(known, dtype=np.intp)
    if all(k is None for k in known):
        numbers = [maybe_number(lab) for lab in labels]
        if all(
            isinstance(v, float) and v.is_integer() and 0 <= v < len(classes)
            for v in numbers
        ):
            return np.array(numbers, dtype=np.intp)
    unknown = sorted({lab for lab, k in zip(labels, known, strict=True) if k is None})
    unknown_labels(path, unknown, classes, where)


def _estimated_rows(path, offset, size):
    """An estimate of the number of data rows from the first MiB."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        sample = fh.read(_SAMPLE_BYTES)
    lines = sample.count(b"\n")
    if lines == 0:
        return 1 if sample.strip() else 0
    return int((size - offset) * lines / len(sample)) + 1


def read_csv(path, layout, size, limit):
    header, offset = _csv_header(path)
    classes = _check_header(path, header, layout)
    label_at = header.index(layout.label)
    # every column, so that a row with more fields than the header is caught;
    # only the named ones where the class or segment columns are named (the
    # others, such as an identifier, a comment or a region, need not be numbers)
    named = layout.scores is not None or bool(layout.segments)
    used = (
        [label_at, *(header.index(c) for c in classes)]
        if named
        else list(range(len(header)))
    )
    # each row becomes K + 1 float64 (the parser's buffers are in the limit's
    # allowance for the report's peak)
    rows = _estimated_rows(path, offset, size)
    check_size(path, 8 * len(used) * rows, limit, f"about {rows:,} rows")

    position = {c: i for i, c in enumerate(classes)}
    unknown = {}

    def label_index(text):
        text = text.strip()
        k = position.get(text)
        if k is None:
            k = position.get(label_text(maybe_number(text)))
        if k is None:
            # a label that names no class: -1 - its code among such labels
            return -1.0 - unknown.setdefault(text, len(unknown))
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
                usecols=used if named else None,
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
    if table.shape[1] != len(used):
        raise InputFileError(
            f"{path}: the rows have {table.shape[1]} fields, the header {len(header)}"
        )
    position_of = {c: i for i, c in enumerate(used)}
    codes = table[:, position_of[label_at]]
    if unknown:
        texts = list(unknown)
        if np.any(codes >= 0):  # some labels name a class, others do not
            unknown_labels(path, texts, classes, f"column {layout.label!r}")
        # no label names a class: column indices, if they are
        indices = _indices_or_names(path, texts, classes, f"column {layout.label!r}")
        y = indices[(-1.0 - codes).astype(np.intp)]
    else:
        y = codes.astype(np.intp)
    columns = [position_of[header.index(c)] for c in classes]
    return y, table[:, columns], classes, layout.kind


_AT = re.compile(r" at row (\d+), column (\d+)\.?$")
_CHANGED = re.compile(r"number of columns changed from (\d+) to (\d+) at row (\d+)")
_MISSING = re.compile(r"invalid column index \d+ at row (\d+) with (\d+) columns")


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
        first, now, row = map(int, changed.groups())
        if first != len(header):  # the first data row was the odd one
            return InputFileError(
                f"{path}: row 1 has {first} fields, the header {len(header)}"
            )
        return InputFileError(
            f"{path}: row {row} has {now} fields, the header {len(header)}"
        )
    missing = _MISSING.search(text)
    if missing:
        row, now = int(missing.group(1)), int(missing.group(2))
        return InputFileError(
            f"{path}: row {row} has {now} fields, the header {len(header)}"
        )
    return InputFileError(f"{path}: unreadable csv ({short(text, 120)})")


def read_parquet(path, layout, limit):
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
    check_size(path, needed, limit, "its data")
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
    return from_table(path, header, columns, layout)


def _segment_values(values):
    """A segment column as read: numbers as float64 (empty cells NaN), any
    other column as text (empty cells None)."""
    cells = [None if v is None or v == "" else v for v in values]
    try:
        return np.array([np.nan if v is None else float(v) for v in cells])
    except (TypeError, ValueError):
        return np.array([None if v is None else str(v) for v in cells], dtype=object)


def read_segment_columns(path, layout, n_rows):
    """The segment columns of a .csv or .parquet table: name -> (n_rows,)
    array (see :func:`_segment_values`; parquet columns keep their dtype)."""
    if not layout.segments:
        return None
    if path.suffix.lower() == ".parquet":
        import pandas as pd

        frame = pd.read_parquet(path, columns=list(layout.segments))
        out = {c: frame[c].to_numpy() for c in layout.segments}
    else:
        header, offset = _csv_header(path)
        at = [header.index(c) for c in layout.segments]
        values = [[] for _ in at]
        with open(path, encoding="utf-8-sig", newline="") as fh:
            fh.seek(offset)
            for fields in csv.reader(fh):
                if not fields:
                    continue
                for column, i in zip(values, at, strict=True):
                    column.append(fields[i].strip() if i < len(fields) else "")
        out = {
            c: _segment_values(v) for c, v in zip(layout.segments, values, strict=True)
        }
    for name, column in out.items():
        if column.shape[0] != n_rows:
            raise InputFileError(
                f"{path}: segment column {name!r} has {column.shape[0]} rows, the "
                f"scores {n_rows}"
            )
    return out


def from_table(path, header, columns, layout):
    classes = _check_header(path, header, layout)
    scores = np.column_stack([_numbers(path, columns[c], c) for c in classes])
    labels = [label_text(v) for v in np.asarray(columns[layout.label]).tolist()]
    y = _indices_or_names(path, labels, classes, f"column {layout.label!r}")
    return y, scores, classes, layout.kind


def _numbers(path, values, name):
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return values  # its own precision: float16 is held to float16's round-off
    if values.dtype.kind in "biu":
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
