"""NumPy files of predictions: .npz archives and .npy arrays."""

import zipfile

import numpy as np

from sklcalib._utils._memory import human_size
from sklcalib._utils._scores import as_columns, binary_logits
from sklcalib.io._common import (
    LABEL_COLUMN,
    InputFileError,
    check_size,
    index_labels,
    label_indices,
    label_text,
    short,
)
from sklcalib.io._tables import from_table

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


def _check_npy_header(path, fh, available, limit, what):
    """Read and check the header of one .npy stream; the bytes its data need
    must be in the stream (``available``) and under the limit."""
    try:
        shape, _, dtype = _npy_header(fh)
    except ValueError as exc:
        raise InputFileError(
            f"{path}: {what} has an unreadable .npy header ({short(exc, 80)})"
        ) from None
    if dtype.hasobject:
        raise _pickle_error(path, what)
    count = int(np.prod(shape, dtype=object))
    stored = count * dtype.itemsize
    # numbers are worked on in float64, whatever their stored width
    check_size(path, count * max(dtype.itemsize, 8), limit, f"{what} of shape {shape}")
    if available is not None and stored > available - fh.tell():
        raise InputFileError(
            f"{path}: {what}'s header declares shape {shape} ({human_size(stored)}) "
            f"but holds only {human_size(max(available - fh.tell(), 0))}: truncated "
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


def _check_signature(path, ours, other, if_other, if_neither):
    """The file starts with the signature ``ours``; the error says
    ``if_other`` when it starts with the ``other`` format's, ``if_neither``
    otherwise."""
    magic = _magic(path)
    if magic.startswith(other):
        raise InputFileError(f"{path}: {if_other}")
    if not magic.startswith(ours):
        raise InputFileError(f"{path}: {if_neither}")


def read_npz(path, layout, limit):
    _check_signature(
        path,
        _ZIP_MAGICS,
        _NPY_MAGIC,
        "holds a single array (.npy), not an .npz archive; rename it to .npy, "
        "or save with numpy.savez",
        "not an .npz archive (no zip signature); save it with "
        "numpy.savez(path, y_true=..., y_prob=...)",
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
        found = ", ".join(repr(short(k, 20)) for k in sorted(keys)[:8]) or "none"
        label = layout.label
        if label not in keys:
            raise InputFileError(
                f"{path}: no array {label!r} (found: {found}); name the arrays "
                "of the labels and the scores (y_true=..., scores=...; "
                "--y-true, --scores)"
                if label == LABEL_COLUMN
                else f"{path}: no array {label!r} (found: {found})"
            )
        if layout.scores is not None:
            key = layout.scores
            if key not in keys:
                raise InputFileError(f"{path}: no array {key!r} (found: {found})")
            kind = layout.kind
        elif layout.logits or "y_prob" not in keys:
            key, kind = "logits", "logits"
            if key not in keys:
                wanted = (
                    "'logits' (logits=True, --logits)"
                    if layout.logits
                    else "'y_prob' or 'logits'"
                )
                raise InputFileError(
                    f"{path}: no array {wanted} (found: {found}); name the array "
                    "of the scores with scores=... (--scores)"
                )
        else:
            key, kind = "y_prob", "probabilities"
        if key == label:
            raise InputFileError(
                f"{path}: {key!r} is named both the labels' and the scores' array"
            )
        wanted = [label, key] + (
            ["classes"] if "classes" in keys and "classes" not in (label, key) else []
        )
        # the zip directory declares each member's size before anything is
        # inflated: a small archive of a huge array is refused here
        declared = sum(members[k].file_size for k in wanted)
        check_size(path, declared, limit, "its arrays, decompressed,")
        arrays = {}
        for k in wanted:
            info = members[k]
            try:
                with archive.open(info) as fh:
                    _check_npy_header(path, fh, info.file_size, limit, f"array {k!r}")
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
                    f"{path}: array {k!r} cannot be read ({short(exc, 100)})"
                ) from None
    y_raw, scores = arrays[label], arrays[key]
    names = arrays.get("classes") if "classes" in wanted else None
    if scores.dtype.kind not in "biuf":
        raise InputFileError(f"{path}: array {key!r} is not numeric")
    if scores.dtype.kind != "f":
        scores = scores.astype(np.float64)  # floats keep their precision
    if scores.ndim == 1:  # binary: the positive class's score
        scores = binary_columns(scores, kind)
    if scores.ndim != 2:
        raise InputFileError(
            f"{path}: array {key!r} has shape {scores.shape}; give (n, K) or (n,)"
        )
    n_classes = scores.shape[1]
    if names is None:
        classes = [str(k) for k in range(n_classes)]
        y = index_labels(path, y_raw, n_classes)
    else:
        classes = [label_text(c) for c in np.ravel(names).tolist()]
        if len(classes) != n_classes:
            raise InputFileError(
                f"{path}: 'classes' names {len(classes)} classes, but {key!r} has "
                f"{n_classes} columns"
            )
        if np.asarray(y_raw).dtype.kind in "biu":
            # integer labels with names: column indices, as without names
            y = index_labels(path, y_raw, n_classes, names=classes)
        else:
            labels = [label_text(v) for v in np.ravel(y_raw).tolist()]
            y = label_indices(path, labels, classes, where=f"array {label!r}")
    if len(y) != scores.shape[0]:
        raise InputFileError(
            f"{path}: {label!r} has {len(y)} entries, {key!r} {scores.shape[0]} rows"
        )
    return (y, scores, classes, kind)


def binary_columns(score, kind):
    return binary_logits(score) if kind == "logits" else as_columns(score)


def read_npy(path, layout, size, limit):
    _check_signature(
        path,
        _NPY_MAGIC,
        _ZIP_MAGICS,
        "is an .npz archive (zip), not a single .npy array; rename it to .npz",
        "not an .npy file (no NumPy header); save it with numpy.save",
    )
    with open(path, "rb") as fh:
        _check_npy_header(path, fh, size, limit, "the array")
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise InputFileError(
            f"{path}: not a readable .npy file ({short(exc, 100)})"
        ) from None
    if array.dtype.names:  # structured: fields are the table's columns
        header = list(array.dtype.names)
        columns = {name: array[name] for name in header}
        return from_table(path, header, columns, layout)
    if array.ndim != 2 or array.shape[1] < 3 or array.dtype.kind not in "biuf":
        raise InputFileError(
            f"{path}: a plain .npy file must be a numeric (n, K + 1) array, the "
            f"true class index first, then K >= 2 score columns; got shape "
            f"{array.shape} of dtype {array.dtype}"
        )
    if layout.label != LABEL_COLUMN or layout.scores is not None:
        raise InputFileError(
            f"{path}: a plain (n, K + 1) array has no named columns (the true "
            "class index first, then the scores); names are for tables, "
            ".npz archives and structured arrays"
        )
    if array.dtype.kind != "f":
        array = array.astype(np.float64)  # floats keep their precision
    n_classes = array.shape[1] - 1
    y = index_labels(path, array[:, 0], n_classes)
    classes = [str(k) for k in range(n_classes)]
    return y, array[:, 1:], classes, layout.kind
