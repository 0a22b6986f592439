"""Mergeable calibration statistics: one pass, any number of pieces.

The pieces may be the row blocks of dask arrays: :func:`stream_statistics`
reduces every block to an accumulator on a worker of the active Dask scheduler
(a ``distributed.Client`` if there is one) and merges them in row order.
"""

import numpy as np

from sklcalib._utils._binning import (
    calibration_gaps,
    error_from_stats,
    uniform_edges,
)
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import row_scores
from sklcalib._utils._validation import (
    any_dask,
    check_found_classes,
    check_labels_for,
    check_n_bins,
    check_prob_values,
    check_targets,
    is_dask_array,
    refuse_string_order,
)

from ._statistics import classwise_statistics, uniform_top_label_statistics
from .binning import BinStatistics

# What an accumulator collects: the top-label bins, the per-class bins, and the
# NLL/Brier sums. The Dask path of a single metric collects only its part.
_PARTS = ("top", "classwise", "scores")


@fill_doc
class CalibrationAccumulator:
    """Mergeable, picklable uniform-bin calibration statistics.

    Feed predictions in pieces with :meth:`update` (or build one accumulator
    per piece, on different processes or machines, and :meth:`merge` them),
    then read every streamable metric with :meth:`compute`. The state is a few
    arrays of size ``n_classes * n_bins``, whatever the number of samples: the
    top-label bin sums of :func:`~sklcalib.metrics.expected_calibration_error`,
    the per-class bin sums of
    :func:`~sklcalib.metrics.classwise_calibration_error`, and the sums of the
    negative log-likelihood, the Brier score and the weights.

    Every :meth:`update` validates its piece as the one-shot metrics do and
    runs the same statistics code (the fused compiled pass on large pieces),
    so :meth:`compute` equals the one-shot functions on the concatenated
    input up to the order of the floating-point additions (a relative
    difference of about 1e-15). The metrics that need all samples at once
    (equal-mass bins, smooth ECE) cannot be accumulated.

    Parameters
    ----------
    n_bins : int, default=15
        Number of equal-width bins, right-closed ``(lower, upper]`` with the
        first also holding 0.
    labels : array-like of shape (n_classes,)
        The label of every column of ``y_prob``, in column order (for
        instance ``estimator.classes_``). Required: a piece need not hold
        every class. With 1-D (binary positive-class) ``y_prob``, the two
        labels.

    Attributes
    ----------
    n_samples_ : int
        Number of samples seen with a positive weight (a row of weight 0 is
        no row).
    labels_ : ndarray of shape (n_classes,)
        The validated labels.

    See Also
    --------
    expected_calibration_error : The one-shot top-label ECE.
    calibration_report : Every metric of one in-memory input.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import CalibrationAccumulator
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> y_true = np.array([0, 1, 1, 1])
    >>> first = CalibrationAccumulator(n_bins=5, labels=[0, 1])
    >>> second = CalibrationAccumulator(n_bins=5, labels=[0, 1])
    >>> first.update(y_true[:2], y_prob[:2]).merge(
    ...     second.update(y_true[2:], y_prob[2:]))
    CalibrationAccumulator(n_bins=5, labels=[0, 1], n_samples_=4)
    >>> result = first.compute()
    >>> round(result["ece"], 6), result["accuracy"], result["n_samples"]
    (0.25, 0.75, 4)
    """

    def __init__(self, n_bins=15, *, labels):
        self.n_bins = check_n_bins(n_bins)
        if labels is None:
            raise ValueError(
                "labels is required: the label of every column of y_prob, so that "
                "pieces missing a class still line up (e.g. labels=model.classes_)."
            )
        self.labels_ = check_labels_for(labels, len(np.asarray(labels)), 2)
        self._parts = _PARTS
        self._reset()

    @classmethod
    def _collecting(cls, n_bins, labels, parts):
        """An accumulator of only some statistics (the Dask path of one metric)."""
        acc = cls(n_bins, labels=labels)
        acc._parts = tuple(parts)
        return acc

    def _reset(self):
        k = self.labels_.shape[0]
        self._top = np.zeros((3, self.n_bins))
        self._classwise = np.zeros((k, 3, self.n_bins))
        self._scores = np.zeros(3)  # weight, NLL sum, Brier sum
        self.n_samples_ = 0

    def __repr__(self):
        return (
            f"CalibrationAccumulator(n_bins={self.n_bins}, "
            f"labels={self.labels_.tolist()!r}, n_samples_={self.n_samples_})"
        )

    def update(self, y_true, y_prob, sample_weight=None):
        """Add a piece of predictions.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels, each one of ``labels``.
        y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
            Predicted probabilities, see
            :func:`~sklcalib.metrics.expected_calibration_error`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights (a piece may weigh zero in all; the total may not).

            Dask arrays (rows chunked) are reduced block by block on the
            active Dask scheduler, one accumulator per block merged in row
            order; an invalid block raises a ValueError naming the argument
            and the block.

        Returns
        -------
        self : CalibrationAccumulator
            The accumulator, updated.
        """
        if any_dask(y_true, y_prob, sample_weight):
            return self.merge(
                stream_statistics(
                    y_true,
                    y_prob,
                    n_bins=self.n_bins,
                    labels=self.labels_,
                    sample_weight=sample_weight,
                    parts=self._parts,
                )
            )
        y_idx, p, _, w = check_targets(
            y_true, y_prob, self.labels_, sample_weight, allow_zero_weight=True
        )
        if "top" in self._parts:
            stats = uniform_top_label_statistics(p, y_idx, self.n_bins, w)  # checks
            top = np.stack([stats.counts, stats.sum_confidence, stats.sum_correct])
        else:
            p = check_prob_values(p)
        if "classwise" in self._parts:
            classwise = np.stack(
                [
                    np.stack([s.counts, s.sum_confidence, s.sum_correct])
                    for s in classwise_statistics(p, y_idx, self.n_bins, "uniform", w)
                ]
            )
        if "scores" in self._parts:
            nll, brier = row_scores(p, y_idx)
            if w is None:
                scores = np.array([float(len(nll)), nll.sum(), brier.sum()])
            else:
                scores = np.array([w.sum(), np.dot(nll, w), np.dot(brier, w)])
        # state changes only once the whole piece is valid
        if "top" in self._parts:
            self._top += top
        if "classwise" in self._parts:
            self._classwise += classwise
        if "scores" in self._parts:
            self._scores += scores
        # a row of weight 0 is no row
        self.n_samples_ += int(y_idx.shape[0] if w is None else np.count_nonzero(w))
        return self

    def merge(self, other):
        """Add the statistics of another accumulator.

        Parameters
        ----------
        other : CalibrationAccumulator
            An accumulator with the same ``n_bins`` and ``labels``.

        Returns
        -------
        self : CalibrationAccumulator
            The accumulator, holding both.
        """
        if not isinstance(other, CalibrationAccumulator):
            raise ValueError(
                f"other must be a CalibrationAccumulator, got {type(other).__name__}."
            )
        if other.n_bins != self.n_bins:
            raise ValueError(
                f"Cannot merge accumulators with n_bins={self.n_bins} and "
                f"n_bins={other.n_bins}."
            )
        if other.labels_.shape != self.labels_.shape or not np.all(
            other.labels_ == self.labels_
        ):
            raise ValueError(
                f"Cannot merge accumulators with labels {self.labels_.tolist()!r} "
                f"and {other.labels_.tolist()!r}."
            )
        if other._parts != self._parts:
            raise ValueError("Cannot merge accumulators collecting other statistics.")
        self._top += other._top
        self._classwise += other._classwise
        self._scores += other._scores
        self.n_samples_ += other.n_samples_
        return self

    def _check_nonempty(self):
        if self.n_samples_ == 0:
            raise ValueError(
                "The accumulator is empty: no sample of positive weight was seen "
                "(sample_weight sums to zero if every update weighed 0); update "
                "it with samples first."
            )

    def _stats(self, sums):
        if not sums[0].sum() > 0:
            raise ValueError("sample_weight sums to zero: no sample would be counted.")
        return BinStatistics(sums[0], sums[1], sums[2], uniform_edges(self.n_bins))

    def top_label_statistics(self):
        """Top-label uniform-bin :class:`~sklcalib.metrics.BinStatistics`.

        Returns
        -------
        stats : BinStatistics
            Sums over every sample seen.
        """
        self._check_nonempty()
        return self._stats(self._top)

    def classwise_statistics(self):
        """Per-class uniform-bin statistics.

        Returns
        -------
        stats : list of BinStatistics
            One per column of ``y_prob``: ``p[:, k]`` against ``y == labels[k]``.
        """
        self._check_nonempty()
        return [self._stats(sums) for sums in self._classwise]

    def compute(self):
        """Every streamable metric of the samples seen.

        Returns
        -------
        result : dict
            The keys of :func:`~sklcalib.metrics.calibration_report` that do
            not need all samples at once: ``"ece"``, ``"ece_l2"``,
            ``"ece_over"``, ``"ece_under"``, ``"mce"``, ``"classwise_ece"``,
            ``"nll"``, ``"brier"``, ``"accuracy"``, ``"error"`` (floats) and
            ``"n_samples"`` (an int).
        """
        out = {}
        if "top" in self._parts:
            stats = self.top_label_statistics()
            frac, gaps = calibration_gaps(stats)
            accuracy = float(stats.sum_correct.sum() / stats.counts.sum())
            out.update(
                ece=error_from_stats(stats, "l1"),
                ece_l2=error_from_stats(stats, "l2"),
                ece_over=float(np.dot(frac, np.maximum(gaps, 0.0))),
                ece_under=float(np.dot(frac, np.maximum(-gaps, 0.0))),
                mce=error_from_stats(stats, "max"),
                accuracy=accuracy,
                error=1.0 - accuracy,
            )
        if "classwise" in self._parts:
            errors = [error_from_stats(s) for s in self.classwise_statistics()]
            out["classwise_ece"] = float(np.mean(errors))
        if "scores" in self._parts:
            self._check_nonempty()
            weight, nll, brier = self._scores
            if not weight > 0:
                raise ValueError(
                    "sample_weight sums to zero: no sample would be counted."
                )
            out.update(nll=float(nll / weight), brier=float(brier / weight))
        out["n_samples"] = int(self.n_samples_)
        return out


def _block_statistics(p, y, w, n_bins, classes, parts):
    acc = CalibrationAccumulator._collecting(n_bins, classes, parts)
    return acc.update(y, p, w)


def stream_statistics(
    y_true, y_prob, *, n_bins=15, labels=None, sample_weight=None, parts=_PARTS
):
    """A :class:`CalibrationAccumulator` of dask inputs, computed block by block.

    ``y_prob`` must be a dask array of known row chunks; ``y_true`` and
    ``sample_weight`` may be dask arrays (rechunked to ``y_prob``'s rows when
    their chunks differ) or in-memory arrays (split along them). Without
    ``labels``, one extra pass over ``y_true`` finds them.
    """
    # dask is an optional extra: imported only once a dask array has arrived
    from sklcalib._utils._dask import map_row_blocks, row_blocks, unique_values

    if not is_dask_array(y_prob):
        raise ValueError(
            "y_true or sample_weight is a dask array but y_prob is not: pass "
            "y_prob as a dask array too (the metric streams over y_prob's row "
            "blocks), or compute y_true and sample_weight."
        )
    if y_prob.ndim not in (1, 2):
        raise ValueError(
            "y_prob must be 1-D (binary positive-class probabilities) or 2-D "
            f"(n_samples, n_classes), got a dask array of shape {y_prob.shape}."
        )
    if y_prob.ndim == 2 and y_prob.shape[1] == 1:
        y_prob = y_prob[:, 0]  # one column is the positive-class probability
    p, y, w = row_blocks(
        y_prob, "y_prob", {"y_true": y_true, "sample_weight": sample_weight}
    )
    n_columns = 2 if p.ndim == 1 else p.shape[1]
    if labels is None:
        classes = unique_values(y)
        check_found_classes(classes, n_columns, p.ndim)
        refuse_string_order(
            np.asarray(classes), "on dask arrays the rows are read block by block"
        )
    else:
        classes = check_labels_for(labels, n_columns, p.ndim)
    parts = tuple(parts)
    states = map_row_blocks(_block_statistics, [p, y, w], n_bins, classes, parts)
    total = CalibrationAccumulator._collecting(n_bins, classes, parts)
    for state in states:  # block order: a fixed order of the additions
        total.merge(state)
    return total
