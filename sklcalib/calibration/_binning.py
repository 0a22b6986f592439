"""Histogram binning and isotonic regression, one-vs-rest on probabilities."""

from typing import ClassVar

import numpy as np
from sklearn.isotonic import IsotonicRegression

from sklcalib._utils._binning import (
    bin_index,
    quantile_value_edges,
    weighted_bin_sums,
)
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._param_validation import StrOptions
from sklcalib._utils._validation import STRATEGIES

from ._base import N_BINS
from ._one_vs_rest import OneVsRestCalibrator

_QUANTILE_ON_DASK = (
    "HistogramBinningCalibrator(strategy='quantile') cannot be fitted on "
    "dask arrays: its edges are quantiles of all scores; use "
    "strategy='uniform', or fit on an in-memory sample."
)


@fill_doc
class HistogramBinningCalibrator(OneVsRestCalibrator):
    """Histogram binning (Zadrozny & Elkan, 2001), one-vs-rest.

    Each class's probability column is cut into bins; a probability is
    replaced by the frequency of that class among the calibration samples of
    its bin. Multiclass rows are then renormalised.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins per class.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: equal-width bins on [0, 1]. ``"quantile"``: edges at
        the quantiles of the calibration probabilities of that class
        (duplicate edges merged, so there can be fewer bins), the outer edges
        stretched to 0 and 1, as the bins of scikit-learn's
        ``calibration_curve(strategy="quantile")``. Tied probabilities share a
        bin (a new probability is placed by its value), unlike the metrics'
        ``"quantile"`` bins, which are exactly ``n_bins`` groups by rank.

    Attributes
    ----------
    calibrators_ : list of tuple
        ``(bin_edges, bin_values)`` for each calibrated column (one column for
        binary problems, one per class otherwise).
    bin_edges_ : list of ndarray
        Edges of the bins for each calibrated column (one column for binary
        problems, one per class otherwise).
    bin_values_ : list of ndarray
        Calibrated probability of each bin. A bin with no calibration sample
        gets the centre of its edges: with no evidence, the bin's own
        confidence level is the least surprising value.
    %(fitted_probability_inputs)s

    Notes
    -----
    Bins are right-closed (lower, upper], the first also holding 0, like the
    bins of :func:`sklcalib.metrics.expected_calibration_error`. A multiclass
    row whose calibrated columns are all 0 becomes uniform.

    Examples
    --------
    >>> from sklcalib.calibration import HistogramBinningCalibrator
    >>> p1 = [0.1, 0.2, 0.8, 0.9, 0.95, 0.85]
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> hb = HistogramBinningCalibrator(n_bins=2).fit(p1, y)
    >>> hb.predict_proba([0.3, 0.99])[:, 1]
    array([0.  , 0.75])
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_bins": [N_BINS],
        "strategy": [StrOptions(set(STRATEGIES))],
    }

    def __init__(self, n_bins=15, strategy="uniform"):
        self.n_bins = n_bins
        self.strategy = strategy

    def _sample_size_term(self):
        if self.strategy == "quantile":
            return "its quantile edges (interpolated between consecutive rows)"
        return None

    def _fit(self, scores, y_idx, sample_weight=None):
        super()._fit(scores, y_idx, sample_weight)
        self.bin_edges_ = [edges for edges, _ in self.calibrators_]
        self.bin_values_ = [values for _, values in self.calibrators_]

    def _fit_column(self, p, target, sample_weight=None):
        if self.strategy == "uniform":
            edges = np.linspace(0.0, 1.0, self.n_bins + 1)
        else:
            edges = quantile_value_edges(p, self.n_bins, sample_weight)
        n_bins = len(edges) - 1
        idx = bin_index(p, edges)
        counts, hits = weighted_bin_sums(idx, n_bins, sample_weight, target)
        centres = (edges[:-1] + edges[1:]) / 2
        values = np.divide(hits, counts, out=centres.copy(), where=counts > 0)
        return edges, values

    def _fit_dask(self, X, y, sample_weight):
        # dask is an optional extra: imported only once a dask array has arrived
        from sklcalib._utils._dask import map_row_blocks

        from ._streaming import prepare_fit

        refusal = None if self.strategy == "uniform" else _QUANTILE_ON_DASK
        X, y, w = prepare_fit(self, X, y, sample_weight, refusal)
        edges = np.linspace(0.0, 1.0, self.n_bins + 1)
        counts, hits = np.sum(
            map_row_blocks(_histogram_counts, [X, y, w], self, edges), axis=0
        ).transpose(1, 0, 2)
        centres = (edges[:-1] + edges[1:]) / 2
        self.calibrators_ = [
            (edges, np.divide(h, c, out=centres.copy(), where=c > 0))
            for c, h in zip(counts, hits, strict=True)
        ]
        self.bin_edges_ = [e for e, _ in self.calibrators_]
        self.bin_values_ = [v for _, v in self.calibrators_]
        return self

    @staticmethod
    def _predict_column(model, p):
        edges, values = model
        return values[bin_index(p, edges)]


def _histogram_counts(X, y, w, estimator, edges):
    """Per-bin (weighted) counts and hits of one row block of the streaming fit
    (module-level, so that it reaches the Dask workers by pickle)."""
    X, y_idx, w = estimator._block_inputs(X, y, w)
    n_bins = len(edges) - 1
    out = []
    for c, k in estimator._columns(X):
        idx = bin_index(X[:, c], edges)
        out.append(weighted_bin_sums(idx, n_bins, w, (y_idx == k).astype(np.float64)))
    return np.array(out)


@fill_doc
class IsotonicCalibrator(OneVsRestCalibrator):
    """Isotonic regression (Zadrozny & Elkan, 2002), one-vs-rest.

    Each class's probability column is mapped through a non-decreasing step
    function fitted to ``[y == k]`` by scikit-learn's ``IsotonicRegression``
    (``out_of_bounds="clip"``, outputs in [0, 1]); multiclass rows are then
    renormalised.

    Attributes
    ----------
    calibrators_ : list of IsotonicRegression
        The fitted isotonic regressions: one for the positive class of a
        binary problem, one per class otherwise.
    %(fitted_probability_inputs)s

    Notes
    -----
    A multiclass row whose isotonic outputs are all 0 (every class's
    regression is 0 at that score) becomes uniform instead of 0/0, as in
    scikit-learn's ``CalibratedClassifierCV``.

    Examples
    --------
    >>> from sklcalib.calibration import IsotonicCalibrator
    >>> p1 = [0.1, 0.2, 0.8, 0.9, 0.95, 0.85]
    >>> y = [0, 0, 1, 0, 1, 1]
    >>> iso = IsotonicCalibrator().fit(p1, y)
    >>> iso.predict_proba([0.05, 0.99])[:, 1]
    array([0., 1.])
    """

    def __init__(self):
        pass

    @staticmethod
    def _fit_column(p, target, sample_weight=None):
        return IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(
            p, target, sample_weight=sample_weight
        )

    @staticmethod
    def _predict_column(model, p):
        return model.predict(p)
