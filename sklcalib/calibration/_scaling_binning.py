"""The scaling-binning calibrator (Kumar, Liang & Ma, 2019)."""

from typing import ClassVar

import numpy as np
from scipy.special import expit, logit

from sklcalib._utils._binning import (
    equal_mass_edges,
    right_edge_index,
    weighted_bin_sums,
)
from sklcalib._utils._docstrings import fill_doc

from ._base import N_BINS
from ._one_vs_rest import OneVsRestCalibrator
from ._scaling import PlattScaler

#: Probabilities are clipped to [_CLIP, 1 - _CLIP] before their log-odds.
_CLIP = 1e-6


@fill_doc
class ScalingBinningCalibrator(OneVsRestCalibrator):
    """Scaling-binning calibration (Kumar, Liang & Ma, 2019).

    Per class, Platt scaling of that column's log-odds (p clipped to
    [1e-6, 1 - 1e-6]) against ``[y == k]``, then equal-mass bins of the
    scaled values; each value is replaced by the mean scaled value of its
    bin, so the output takes at most ``n_bins`` values per class and its
    calibration error can be measured (unlike a continuous scaling map).
    Multiclass rows are renormalised.

    Parameters
    ----------
    n_bins : int, default=10
        Number of equal-mass bins per class.

    Attributes
    ----------
    calibrators_ : list of tuple
        ``(platt, bin_edges, bin_values)`` per calibrated column: the fitted
        :class:`~sklcalib.calibration.PlattScaler` of the log-odds, the
        right edges of the bins (right-closed, the last one 1.0) and the
        output of each bin (one column for binary problems, one per class
        otherwise).
    %(fitted_probability_inputs)s

    Notes
    -----
    The bins are those of Kumar et al.'s ``get_equal_bins``: the scaled
    calibration values are sorted and split into ``n_bins`` groups as
    ``numpy.array_split`` does, an edge is put at the midpoint between
    consecutive groups and a last one at 1.0, duplicates dropped. A bin with
    no calibration value outputs the midpoint of its edges. Binary problems
    calibrate the positive-class column and return ``[1 - q, q]``. The Platt
    step is :class:`~sklcalib.calibration.PlattScaler` (maximum likelihood
    with a very weak penalty on the slope).

    Examples
    --------
    >>> from sklcalib.calibration import ScalingBinningCalibrator
    >>> from sklcalib.datasets import make_binary_scores
    >>> p1, y = make_binary_scores(500, truth=lambda p: p**2)  # over-confident
    >>> sb = ScalingBinningCalibrator(n_bins=5).fit(p1, y)
    >>> len(set(sb.predict_proba(p1)[:, 1]))  # one value per bin
    5
    """

    _parameter_constraints: ClassVar[dict] = {"n_bins": [N_BINS]}

    def __init__(self, n_bins=10):
        self.n_bins = n_bins

    @staticmethod
    def _log_odds(p):
        return logit(np.clip(p, _CLIP, 1.0 - _CLIP))

    def _fit_column(self, p, target, sample_weight=None):
        platt = PlattScaler().fit(self._log_odds(p), target, sample_weight)
        scaled = self._scaled(platt, p)
        keep = slice(None) if sample_weight is None else sample_weight > 0
        edges = equal_mass_edges(
            scaled[keep],
            self.n_bins,
            None if sample_weight is None else sample_weight[keep],
        )
        idx = right_edge_index(scaled, edges)
        counts, totals = weighted_bin_sums(idx, len(edges), sample_weight, scaled)
        midpoints = (edges + np.r_[0.0, edges[:-1]]) / 2
        values = np.divide(totals, counts, out=midpoints, where=counts > 0)
        return platt, edges, values

    def _scaled(self, platt, p):
        return expit(platt.coef_ * self._log_odds(p) + platt.intercept_)

    def _predict_column(self, model, p):
        platt, edges, values = model
        return values[right_edge_index(self._scaled(platt, p), edges)]
