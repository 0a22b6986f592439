"""``read_predictions``: labels and scores from a file, checked."""

import numbers
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import softmax

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._memory import data_limit
from sklcalib._utils._scores import log_floored, looks_like_probabilities
from sklcalib._utils._validation import check_prob_values
from sklcalib.io._common import (
    LABEL_COLUMN,
    InputFileError,
    Layout,
    check_regular_file,
    short,
)
from sklcalib.io._numpy_files import read_npy, read_npz
from sklcalib.io._tables import read_csv, read_parquet, read_segment_columns

SUFFIXES = (".csv", ".parquet", ".npz", ".npy")


@dataclass
@fill_doc
class Predictions:
    """What a file of predictions holds: true classes and one score per class.

    Returned by :func:`read_predictions`.

    Parameters
    ----------
    path : pathlib.Path
        The file read.
    y : ndarray of shape (n_samples,)
        Column index ``0..K-1`` of each row's true class.
    scores : ndarray of shape (n_samples, K)
        The scores as stored, in float64: probabilities or logits.
    classes : list of str
        The K class names, in the columns' order.
    kind : {"probabilities", "logits"}
        What ``scores`` holds.
    segments : dict of str to ndarray, optional
        The segment columns asked for (``read_predictions(..., segments=...)``),
        each of shape (n_samples,): numbers as float64, text as str.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.io import Predictions
    >>> p = Predictions("f.npz", np.array([0, 1]), np.log([[0.8, 0.2], [0.4, 0.6]]),
    ...                 ["a", "b"], "logits")
    >>> p.proba.round(2).tolist()
    [[0.8, 0.2], [0.4, 0.6]]
    """

    path: Path
    y: np.ndarray
    scores: np.ndarray
    classes: list
    kind: str
    segments: dict | None = None

    @property
    def proba(self):
        """The probabilities, shape (n_samples, K).

        A softmax of the scores when they are logits.
        """
        return softmax(self.scores, axis=1) if self.kind == "logits" else self.scores

    @property
    def logits(self):
        """The logits, shape (n_samples, K).

        The log of the probabilities when the scores are probabilities (a
        probability of 0 floored to a tiny value).
        """
        if self.kind == "logits":
            return self.scores
        # log-probabilities are logits (softmax(log p) = p); 0 -> tiny
        return log_floored(self.scores)


def read_predictions(
    path, *, logits=False, y_true="y_true", scores=None, max_bytes=None, segments=None
):
    """Read true classes and scores from a .csv, .parquet, .npz or .npy file.

    The layouts (the columns' order is the classes' order):

    - ``.csv`` / ``.parquet``: a column ``y_true`` holding each row's class and
      one column per class holding its probability (``logits=True``: its
      logit), headed by the class name. ``y_true`` holds class names; whole
      numbers ``0..K-1`` that name no class column are column indices (as in
      an .npz). Parquet needs pandas and pyarrow (``pip install
      "sklcalib[parquet]"``).
    - ``.npz``: an array ``y_true`` and an array ``y_prob`` (probabilities) or
      ``logits``, of shape (n, K), or (n,) for the positive class of a binary
      problem; optionally ``classes``, the K class names. Integer ``y_true``
      holds column indices 0..K-1; string ``y_true`` holds class names, which
      need ``classes``.
    - ``.npy``: a structured array with a field ``y_true`` and one field per
      class (read as a table), or a plain (n, K + 1) array whose first column
      is the column index of the true class and whose other K columns are the
      scores.

    Other names are given with ``y_true`` and ``scores``. Probabilities are
    checked as the metrics check them: float32 and float16 files are held to
    their own round-off, rows written with a few decimals (a spreadsheet
    export, ``float_format="%.4f"``) are accepted with a warning, and the
    accepted rows are divided by their sums, in float64.

    A file is untrusted input: every problem ends in :class:`InputFileError`,
    one line, never a traceback. Arrays of Python objects are refused (loading
    a pickle can run arbitrary code). The memory the data would take is read
    from the file's own directory or header (the zip directory of an .npz, the
    header of an .npy, the row-group sizes of a parquet file, the first MiB of
    a csv) and compared with ``max_bytes`` before anything is decompressed or
    allocated: a 5 MB archive that inflates to 2 GB is refused, not read.

    Parameters
    ----------
    path : str or path-like
        The file.
    logits : bool, default=False
        The scores are logits, not probabilities. An .npz file without
        ``scores`` says which by naming its array ``logits`` or ``y_prob``.
        Refused for scores that read as probabilities (every value in [0, 1],
        every row summing to 1): their softmax would be almost uniform.
    y_true : str, default="y_true"
        The column (table, structured .npy) or array (.npz) of the true
        classes.
    scores : str or list of str, optional
        .npz: the array of the scores (default ``"y_prob"``, else
        ``"logits"``); table or structured .npy: the class columns, in the
        classes' order (default: every column but ``y_true``; other columns,
        such as a row identifier, are then left out).
    max_bytes : int, optional
        Refuse a file whose scores would take more memory than this in
        float64. Default: :func:`default_max_bytes`, what this process may
        still allocate (physical memory, resource limits and cgroup limits
        included) less the report's own peak.
    segments : list of str, optional
        Columns of a table (.csv or .parquet) to read as segment columns
        (region, device, age, ...) for
        :func:`~sklcalib.metrics.multicalibration_audit`: they are left out
        of the default class columns and returned as ``Predictions.segments``.

    Returns
    -------
    predictions : Predictions
        ``y`` (column index of the true class), ``scores`` (n, K), ``classes``
        (K names), ``kind`` (``"probabilities"`` or ``"logits"``).

    Raises
    ------
    InputFileError
        With a one-line message, for any file that cannot be used.
    ValueError
        For an argument of the wrong type or value.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from sklcalib.io import read_predictions
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "preds.csv").write_text(
    ...     "y_true,cat,dog\\ncat,0.8,0.2\\ndog,0.3,0.7\\n")
    >>> p = read_predictions(folder / "preds.csv")
    >>> p.classes, p.y.tolist(), p.scores[0].tolist()
    (['cat', 'dog'], [0, 1], [0.8, 0.2])

    An archive saved under other names (a published CIFAR-10 file uses
    ``labels`` and ``probs``):

    >>> np.savez(folder / "cifar.npz", labels=[0, 1], probs=[[0.9, 0.1], [0.2, 0.8]])
    >>> p = read_predictions(folder / "cifar.npz", y_true="labels", scores="probs")
    >>> p.kind, p.proba.shape
    ('probabilities', (2, 2))
    """
    layout = _layout(logits, y_true, scores, segments)
    if max_bytes is not None and (
        isinstance(max_bytes, bool)
        or not isinstance(max_bytes, numbers.Integral)
        or max_bytes < 1
    ):
        raise ValueError(f"max_bytes must be a positive integer, got {max_bytes!r}.")
    limit = data_limit(max_bytes)
    path = Path(path)
    info = check_regular_file(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputFileError(
            f"{path}: unknown file type {suffix or '(none)'!r}; give a "
            f"{', '.join(SUFFIXES)} file"
        )
    if suffix == ".npz" and not (
        layout.scores is None or isinstance(layout.scores, str)
    ):
        raise InputFileError(
            f"{path}: an .npz archive holds its scores in one array: give its "
            f"name as scores (got {list(layout.scores)!r})"
        )
    if layout.segments and suffix not in (".csv", ".parquet"):
        raise InputFileError(
            f"{path}: segment columns need a table (.csv or .parquet), not a "
            f"{suffix} file"
        )
    if suffix in (".csv", ".parquet") and isinstance(layout.scores, str):
        raise InputFileError(
            f"{path}: scores names the class columns of a table: give a list of "
            f"column names (got {layout.scores!r})"
        )
    try:
        segment_columns = None
        if suffix == ".csv":
            found = read_csv(path, layout, info.st_size, limit)
        elif suffix == ".parquet":
            found = read_parquet(path, layout, limit)
        elif suffix == ".npz":
            found = read_npz(path, layout, limit)
        else:
            found = read_npy(path, layout, info.st_size, limit)
        segment_columns = read_segment_columns(path, layout, len(found[0]))
    except PermissionError:
        raise InputFileError(f"{path}: permission denied") from None
    except MemoryError:
        raise InputFileError(
            f"{path}: not enough memory to read this file (max_bytes, "
            "--max-bytes, sets the limit checked before reading)"
        ) from None
    except OSError as exc:
        raise InputFileError(
            f"{path}: cannot read ({exc.strerror or type(exc).__name__})"
        ) from None
    predictions = _checked(path, *found)
    predictions.segments = segment_columns
    return predictions


def _layout(logits, y_true, scores, segments=None):
    if not isinstance(logits, bool | np.bool_):
        raise ValueError(f"logits must be a bool, got {logits!r}.")
    if not isinstance(y_true, str) or not y_true:
        raise ValueError(f"y_true must be a non-empty str, got {y_true!r}.")
    if scores is not None and not isinstance(scores, str):
        try:
            scores = tuple(scores)
        except TypeError:
            raise ValueError(
                f"scores must be a str, a list of str or None, got {scores!r}."
            ) from None
        if not all(isinstance(c, str) for c in scores):
            raise ValueError(f"scores must name columns by str, got {scores!r}.")
    if segments is None:
        segments = ()
    else:
        segments = (segments,) if isinstance(segments, str) else tuple(segments)
        if not segments or not all(isinstance(c, str) and c for c in segments):
            raise ValueError(
                f"segments must name one or more columns by str, got {segments!r}."
            )
    return Layout(label=y_true, scores=scores, logits=bool(logits), segments=segments)


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
                f"({short(column[0])}, {short(column[min(1, n - 1)])}, ...): an "
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
    """Predictions of these labels and scores, or InputFileError. The scores
    are checked in their stored dtype (a float16 file is held to float16's
    round-off) and kept as float64."""
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
            # "scores", as read_predictions names them
            scores = check_prob_values(scores, name="scores")
        except ValueError as exc:
            if scores.min() < 0 or scores.max() > 1:
                hint = "if these are logits, say so (logits=True, --logits)"
            else:
                # in [0, 1] but not summing to 1: not logits either (their
                # softmax would be almost uniform)
                hint = (
                    "give one column per class, each row's probabilities summing to 1"
                )
            message = str(exc).rstrip(".")
            raise InputFileError(f"{path}: {message}; {hint}") from None
    elif (
        len(y) > 1
        and scores.shape[1] > 1
        # the library's one definition, rows written with a few decimals
        # included; logits that all look so are beyond coincidence
        and looks_like_probabilities(scores)
    ):
        raise InputFileError(
            f"{path}: logits=True (--logits), but every row lies in [0, 1] and "
            "sums to 1 (within the rounding of its decimals, if written with "
            "few): these are probabilities (their softmax would be almost "
            "uniform); drop it"
        )
    scores = np.asarray(scores, dtype=np.float64)
    if kind == "probabilities":
        # rows that sum to 1 within their stored precision (float16, float32,
        # a few decimals) are divided by their sums: in float64 they are then
        # probabilities for every function of the library, whatever its
        # tolerance, and no row moves by more than that precision; rows exact
        # to float64's round-off of a sum of K terms are kept as they are
        sums = scores.sum(axis=1, keepdims=True)
        if np.abs(sums - 1.0).max() > 4 * scores.shape[1] * np.finfo(np.float64).eps:
            scores /= sums
    return Predictions(path, y, scores, classes, kind)
