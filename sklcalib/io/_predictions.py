"""``read_predictions``: labels and scores from a file, checked."""

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import softmax

from sklcalib._utils._memory import default_max_bytes
from sklcalib._utils._scores import log_floored
from sklcalib._utils._validation import check_prob_values
from sklcalib.io._common import (
    LABEL_COLUMN,
    InputFileError,
    check_regular_file,
    short,
)
from sklcalib.io._numpy_files import read_npy, read_npz
from sklcalib.io._tables import read_csv, read_parquet

SUFFIXES = (".csv", ".parquet", ".npz", ".npy")

#: rows of --logits summing to 1 within this, every value in [0, 1]: these
#: are probabilities (a softmax of them would be almost uniform)
LOGITS_ROW_SUM_ATOL = 1e-3


@dataclass
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
    >>> from sklcalib.io import read_predictions
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.csv"
    >>> _ = path.write_text("y_true,cat,dog\\ncat,0.8,0.2\\ndog,0.3,0.7\\n")
    >>> p = read_predictions(path)
    >>> p.classes, p.y.tolist(), p.scores[0].tolist()
    (['cat', 'dog'], [0, 1], [0.8, 0.2])
    """
    path = Path(path)
    max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
    info = check_regular_file(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputFileError(
            f"{path}: unknown file type {suffix or '(none)'!r}; give a "
            f"{', '.join(SUFFIXES)} file"
        )
    try:
        if suffix == ".csv":
            found = read_csv(path, logits, info.st_size, max_bytes)
        elif suffix == ".parquet":
            found = read_parquet(path, logits, max_bytes)
        elif suffix == ".npz":
            found = read_npz(path, logits, max_bytes)
        else:
            found = read_npy(path, logits, info.st_size, max_bytes)
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
    return _checked(path, *found)


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
            check_prob_values(scores, name="probabilities")
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
