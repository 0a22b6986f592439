"""Debiased L2 calibration error of Kumar, Liang & Ma, "Verified Uncertainty
Calibration" (NeurIPS 2019).

The plug-in binned error ``sum_b (n_b/N) (ybar_b - pbar_b)^2`` is biased
upwards: even a calibrated model shows a gap of size ``ybar_b(1 - ybar_b)/n_b``
in every bin from label noise alone. The estimator subtracts the unbiased
estimate of that variance, ``ybar_b (1 - ybar_b) / (n_b - 1)``, per bin.
Binning follows the authors' ``calibration.get_equal_bins``: equal-mass groups
of the sorted scores (``numpy.array_split``), bin edges at the midpoints
between consecutive groups (computed in the dtype of the scores, as theirs
are), last edge 1.0, duplicate edges removed, bins right-closed.
"""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._binning import (
    bin_summaries,
    equal_mass_edges,
    right_edge_index,
    top_label,
    weighted_bin_sums,
)
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import as_columns
from sklcalib._utils._validation import (
    check_n_bins,
    check_option,
    check_prob_values,
    check_targets,
)

MODES = ("top_label", "classwise")


class DebiasedLayout(NamedTuple):
    """What the debiased error's equal-mass bins of one score fix before any
    outcome is seen: every row's bin ``idx`` (of ``n_edges``), the bins
    ``used`` (at least two rows), and per used bin its ``share`` of the total
    weight, its effective number of rows ``n_eff``, its (weighted) ``mass``
    and mean score ``pbar``. Label draws (the consistency test) only change
    the outcome sums of these bins."""

    idx: np.ndarray
    n_edges: int
    used: np.ndarray
    share: np.ndarray
    n_eff: np.ndarray
    mass: np.ndarray
    pbar: np.ndarray


def debiased_layout(score, n_bins, weights):
    """The :class:`DebiasedLayout` of ``score`` (see :func:`debiased_bins`)."""
    edges = equal_mass_edges(score, n_bins)
    score64 = score.astype(np.float64)
    idx = right_edge_index(score64, edges)
    n_edges = edges.shape[0]
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
    rows, mass, n_eff, (sum_score,) = bin_summaries(idx, n_edges, weights, score64)
    total = mass.sum()
    if not total > 0:
        raise ValueError("sample_weight sums to zero: the error is undefined.")
    # a bin of one row has no variance estimate: it adds 0
    used = (rows > 1) & (n_eff > 1.0) & (mass > 0)
    return DebiasedLayout(
        idx,
        n_edges,
        used,
        mass[used] / total,
        n_eff[used],
        mass[used],
        sum_score[used] / mass[used],
    )


def debiased_bins(score, outcome, n_bins, weights):
    """Per equal-mass bin: ``(share, n_eff, ybar, pbar)`` of the bins holding
    at least two rows.

    ``share`` is the bin's (weighted) fraction of the total, ``ybar`` and
    ``pbar`` its (weighted) mean outcome and score, and ``n_eff`` the number
    of rows in it, or with weights Kish's effective number
    ``(sum w)^2 / sum w^2``, which does not change when the weights are
    rescaled (a bin's count is not its summed weight: normalised weights
    would make every bin look like less than one row).
    """
    layout = debiased_layout(score, n_bins, weights)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
    _, sum_outcome = weighted_bin_sums(
        layout.idx, layout.n_edges, weights, outcome.astype(np.float64)
    )
    ybar = sum_outcome[layout.used] / layout.mass
    return layout.share, layout.n_eff, ybar, layout.pbar


def debiased_terms_sum(layout, ybar):
    """``sum_b share_b [(ybar_b - pbar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1)]``
    over the used bins, for ``ybar`` of shape ``(..., n_used)``."""
    terms = (ybar - layout.pbar) ** 2 - ybar * (1.0 - ybar) / (layout.n_eff - 1.0)
    return terms @ layout.share


def debiased_square_error(score, outcome, n_bins, weights):
    """``sum_b (n_b/N) [(ybar_b - pbar_b)^2 - ybar_b(1 - ybar_b)/(n_b - 1)]``
    over the bins holding more than one sample (not yet clipped or rooted)."""
    share, n_b, ybar, pbar = debiased_bins(score, outcome, n_bins, weights)
    terms = (ybar - pbar) ** 2 - ybar * (1.0 - ybar) / (n_b - 1.0)
    return float(np.dot(share, terms))


@fill_doc
def debiased_calibration_error(
    y_true,
    y_prob,
    *,
    n_bins=15,
    mode="top_label",
    labels=None,
    sample_weight=None,
):
    """Debiased L2 calibration error of Kumar, Liang & Ma (2019).

    Scores are put in ``n_bins`` equal-mass bins (the authors'
    ``get_equal_bins``: sort, split by ``numpy.array_split``, edges at the
    midpoints between consecutive groups, last edge 1.0, duplicate edges
    removed; bins are right-closed). In every bin ``b`` with ``n_b >= 2``
    samples the squared gap is corrected for the label noise::

        (ybar_b - pbar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1)

    and the corrected gaps are weighted by ``n_b / N`` and summed. The result
    is ``sqrt(max(sum, 0))``. Unlike the plug-in ECE, its square is an unbiased
    estimate of the binned squared calibration error: a calibrated model
    scores about 0 however few samples there are.

    For a 2-D ``y_prob`` it equals ``calibration.lower_bound_scaling_ce(probs,
    labels, p=2, debias=True, num_bins=n_bins, mode=...)`` of the authors'
    package ``uncertainty-calibration`` (``mode="top-label"`` or
    ``"marginal"``). A 1-D binary ``y_prob`` is read here as the two columns
    ``[1 - p, p]`` (top label: the larger of the two), while the authors'
    function given 1-D scores measures the calibration of ``p`` itself, the
    probability of class 1: a different quantity; pass the two columns to it
    to compare.

    Parameters
    ----------
    %(labels_and_ece_probabilities)s
        A 1-D binary ``y_prob`` counts as the two columns ``[1 - p, p]``.
    n_bins : int, default=15
        Number of equal-mass bins (at most the number of samples).
    mode : {"top_label", "classwise"}, default="top_label"
        ``"top_label"``: the top-label confidence against the correctness of
        the top label. ``"classwise"``: every column ``k`` against
        ``[y = k]``, each with its own bins; the per-class sums, each clipped
        at 0 as the authors do, are averaged over the columns before the root.
    labels : array-like of shape (n_classes,), default=None
        The label of every column of ``y_prob``.
    sample_weight : array-like of shape (n_samples,), default=None
        Relative weights: a bin's share and its means are weighted, and the
        noise correction uses the bin's effective number of rows
        ``(sum w)^2 / sum w^2`` (its row count for equal weights), so that
        rescaling the weights changes nothing. The bins are formed by count.

    Returns
    -------
    ce : float
        In [0, 1]; about 0 for a calibrated model; lower is better.

    See Also
    --------
    expected_calibration_error : The plug-in estimate.

    References
    ----------
    A. Kumar, P. Liang and T. Ma. Verified Uncertainty Calibration. NeurIPS 2019.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import debiased_calibration_error
    >>> p, y = make_binary_scores(2000)  # drawn from the model: calibrated
    >>> round(debiased_calibration_error(y, p), 3)  # the root of ~0 noise
    0.017
    >>> round(debiased_calibration_error(y, p**3), 2)  # miscalibrated
    0.2
    """
    n_bins = check_n_bins(n_bins)
    check_option(mode, "mode", MODES)
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    p = check_prob_values(p)
    if mode == "top_label":
        conf, correct = top_label(p, y_idx)
        total = max(debiased_square_error(conf, correct, n_bins, w), 0.0)
    else:
        columns = as_columns(p)
        total = np.mean(
            [
                max(debiased_square_error(columns[:, k], y_idx == k, n_bins, w), 0.0)
                for k in range(columns.shape[1])
            ]
        )
    return float(np.sqrt(total))
