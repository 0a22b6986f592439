"""Temperature scaling (Guo et al., 2017): ``softmax(z / T)`` with one scalar T."""

import warnings
from typing import ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklcalib._utils._binning import (
    bin_index,
    binned_error,
    uniform_edges,
    weighted_bin_sums,
)
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._param_validation import InvalidParameterError, StrOptions
from sklcalib._utils._scores import looks_like_probabilities
from sklcalib._utils._solvers import bracketed_newton
from sklcalib._utils._validation import check_sample_weight
from sklcalib.metrics import expected_calibration_error

from ._base import LOGITS, N_BINS, BaseCalibrator, binary_logits, softmax_rows
from ._temperature_nll import (
    TEMPERATURE_BOUNDS,
    fit_temperature_nll,
    nll_derivatives,
)

#: The grid of ``objective="ece"``: T = 0.1, 0.2, ..., 10.0 (read-only: it is
#: every TemperatureScaler's default).
DEFAULT_GRID = np.round(np.arange(1, 101) * 0.1, 1)
DEFAULT_GRID.flags.writeable = False

_ECE_ON_DASK = (
    "TemperatureScaler(objective='ece') cannot be fitted on dask arrays "
    "(a grid search would take one pass per temperature); use "
    "objective='nll', or fit on an in-memory sample."
)


@fill_doc
class TemperatureScaler(BaseCalibrator):
    """Temperature scaling: ``softmax(logits / T)`` with one scalar T.

    Dividing all logits by one positive T keeps the predicted class and only
    changes the confidence (Guo et al., 2017).

    Parameters
    ----------
    objective : {"nll", "ece"}, default="nll"
        ``"nll"`` minimises the negative log-likelihood of the calibration
        data exactly: the NLL is convex in the inverse temperature 1/T, and a
        few safeguarded Halley (third-order Newton) steps in float64 reach its
        minimum. The fitted
        T is clipped to ``TEMPERATURE_BOUNDS`` = [1e-4, 1e4]: scores the
        calibration data finds perfectly separable want T -> 0, scores with
        no information want T -> inf.
        ``"ece"`` picks the T of ``grid`` with the smallest ``n_bins``-bin
        expected calibration error (ties go to the smaller T), as Mukhoti et
        al. (2020) and Tao et al. (2023) tune it.
    grid : array-like of float, default=None
        Candidate temperatures for ``objective="ece"``; None means
        0.1, 0.2, ..., 10.0. Ignored for ``"nll"``.
    n_bins : int, default=15
        Number of equal-width bins of the ECE of ``objective="ece"``.

    Attributes
    ----------
    temperature_ : float
        The fitted temperature T.
    classes_ : ndarray of shape (n_classes,)
        Class labels, the order of the columns of ``predict_proba``.
    n_features_in_ : int
        Number of score columns seen in ``fit``: the number of classes, or 1
        for binary decision scores.
    feature_names_in_ : ndarray of str
        Column names, when ``fit`` got a DataFrame with string column names.

    Notes
    -----
    Binary decision scores s of shape (n,) or (n, 1) are treated as the
    logits [0, s], so that ``predict_proba[:, 1] = sigmoid(s / T)``.
    (scikit-learn's ``CalibratedClassifierCV(method="temperature")`` uses
    [-s, s] instead, whose temperature is twice this one.)

    Examples
    --------
    >>> from sklcalib.calibration import TemperatureScaler
    >>> logits = [[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]]
    >>> y = [0, 1, 1, 1]
    >>> scaler = TemperatureScaler().fit(logits, y)
    >>> bool(scaler.temperature_ > 1)  # over-confident logits get cooled
    True
    >>> scaler.predict(logits)
    array([0, 1, 0, 1])
    """

    _input = LOGITS

    _parameter_constraints: ClassVar[dict] = {
        "objective": [StrOptions({"nll", "ece"})],
        "grid": ["array-like", None],
        "n_bins": [N_BINS],
    }

    def __init__(self, objective="nll", grid=None, n_bins=15):
        self.objective = objective
        self.grid = grid
        self.n_bins = n_bins

    def _check_param_values(self):
        if self.grid is None:
            return
        try:
            grid = np.asarray(self.grid, dtype=np.float64)
        except (TypeError, ValueError):
            grid = None
        if (
            grid is None
            or grid.ndim != 1
            or grid.size == 0
            or not np.all(np.isfinite(grid) & (grid > 0))
        ):
            raise InvalidParameterError(
                "The 'grid' parameter of TemperatureScaler must be a non-empty "
                f"1-D array of finite positive temperatures. Got {self.grid!r} "
                "instead."
            )

    def _fit(self, scores, y_idx, sample_weight=None):
        _warn_if_probabilities(scores)
        logits = binary_logits(scores)
        # the solver's NLL of the scores as given and of the fit: the harm
        # check of CalibratedClassifier reads them instead of two passes more
        self._fit_nll = None
        if self.objective == "nll":
            self.temperature_, self._fit_nll = fit_temperature_nll(
                logits, y_idx, sample_weight=sample_weight, return_nll=True
            )
            _warn_if_at_bound(self.temperature_)
        else:
            grid = DEFAULT_GRID if self.grid is None else self.grid
            self.temperature_ = fit_temperature_ece(
                logits,
                y_idx,
                grid=grid,
                n_bins=self.n_bins,
                sample_weight=sample_weight,
            )

    def _fit_dask(self, X, y, sample_weight):
        # dask is an optional extra: imported only once a dask array has arrived
        from sklcalib._utils._dask import map_row_blocks

        from ._streaming import prepare_fit

        refusal = None if self.objective == "nll" else _ECE_ON_DASK
        X, y, w = prepare_fit(self, X, y, sample_weight, refusal)
        lo, hi = 1.0 / TEMPERATURE_BOUNDS[1], 1.0 / TEMPERATURE_BOUNDS[0]
        beta = 1.0
        if X.numblocks[0] > 1:  # start from the first block's optimum
            first = [X.blocks[0], y.blocks[0], None if w is None else w.blocks[0]]
            first = map_row_blocks(_block_temperature, first, self)
            beta = 1.0 / first[0] if first else beta

        def derivatives(beta):
            sums = map_row_blocks(_temperature_sums, [X, y, w], self, beta)
            sums = np.sum(sums, axis=0)
            return tuple(sums[1:] / sums[0])

        beta = bracketed_newton(derivatives, beta, lo, hi, 100)
        self.temperature_ = float(1.0 / min(max(beta, lo), hi))
        self._fit_nll = None
        _warn_if_at_bound(self.temperature_)
        return self

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) / self.temperature_)


# The per-block functions of the streaming fit: module-level, so that they
# reach the Dask workers by pickle.


def _temperature_sums(X, y, w, estimator, beta):
    """The block's weight and its weighted sums of the NLL's derivatives."""
    X, y_idx, w = estimator._block_inputs(X, y, w)
    total = float(len(y_idx)) if w is None else w.sum()
    if total == 0:  # a block of zero weight adds nothing
        return None
    derivatives = nll_derivatives(binary_logits(X), y_idx, sample_weight=w)(beta)
    return total * np.array([1.0, *derivatives])


def _block_temperature(X, y, w, estimator):
    X, y_idx, w = estimator._block_inputs(X, y, w)
    if w is not None and w.sum() == 0:
        return None  # no starting point here: the fit starts from T = 1
    return fit_temperature_nll(binary_logits(X), y_idx, sample_weight=w)


def _warn_if_probabilities(scores):
    """Warn when the scores look like probabilities rather than logits."""
    # one column has no row sum to go by: a binary margin may lie in [0, 1]
    if scores.shape[1] > 1 and looks_like_probabilities(scores):
        warnings.warn(
            "TemperatureScaler was given scores whose rows are in [0, 1] and sum "
            "to 1: they look like probabilities, but it takes logits, and on "
            "probabilities the fitted temperature is meaningless. Pass the "
            "model's logits (decision_function, or NetClassifier.predict_logits), "
            "or np.log(probabilities) when the model has no logits "
            "(softmax(log p) = p), or use a probability calibrator such as "
            "IsotonicCalibrator.",
            UserWarning,
            stacklevel=4,
        )


def _warn_if_at_bound(temperature):
    """Warn when the NLL optimum lies at (or beyond) a temperature bound."""
    low, high = TEMPERATURE_BOUNDS
    rtol = 1e-6  # 1 / (1 / T) need not give the bound back exactly
    if low * (1 + rtol) < temperature < high * (1 - rtol):
        return
    if temperature >= high * (1 - rtol):
        why = (
            f"T = {high:g}, the upper bound: the NLL still falls as T grows, so the "
            "scores carry (almost) no information about y at their scale, or a "
            "few huge wrong scores dominate (e.g. the log-probabilities of "
            "GaussianNB). Pass logits of a model (decision_function or "
            "predict_logits), or calibrate its predict_proba with a probability "
            "calibrator (IsotonicCalibrator, HistogramBinningCalibrator)."
        )
    else:
        why = (
            f"T = {low:g}, the lower bound: the scores separate the calibration "
            "data perfectly, so the NLL keeps falling as T -> 0. Pass scores on "
            "held-out data that the model was not trained on (and enough of it), "
            "or, if these are probabilities, pass logits."
        )
    warnings.warn(
        f"TemperatureScaler stopped at {why}", ConvergenceWarning, stacklevel=4
    )


def fit_temperature_ece(
    logits, y_idx, *, grid=DEFAULT_GRID, n_bins=15, sample_weight=None
):
    """The temperature of ``grid`` with the smallest ECE (ties: smaller T).

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
    y_idx : ndarray of shape (n_samples,)
        Integer index of the true class.
    grid : array-like of float
        Candidate temperatures.
    n_bins : int
        Number of equal-width ECE bins.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Weights of the samples in the ECE.

    Returns
    -------
    temperature : float
    """
    grid = np.sort(np.asarray(grid, dtype=np.float64))
    eces = ece_over_grid(logits, y_idx, grid, n_bins, sample_weight)
    return float(grid[int(np.argmin(eces))])  # argmin: first of the ties


def ece_over_grid(logits, y_idx, grid, n_bins, sample_weight=None):
    """``expected_calibration_error(y_idx, softmax_rows(logits / t), ...)`` for
    every ``t`` of ``grid``, to the last bit, validated once.

    Per T only the confidences are computed, with the operations of
    ``softmax_rows`` up to its row sums ``s``: the largest probability of a
    row is ``exp(0) / s = 1 / s`` exactly. Dividing by T > 0 keeps the
    predicted class, so the correctness is computed once, except in the rows
    whose two largest logits are so close (relative gap 2**-20 of the logits
    and the largest T) that rounding might tie them in the probabilities:
    there it is taken per T from the probabilities as ``softmax_rows`` gives
    them.
    """
    labels = np.arange(logits.shape[1])
    with np.errstate(over="ignore"):
        overflow = not np.isfinite(np.max(np.abs(logits)) / grid[0])
    if overflow:
        # some logits / T overflow: the full metric reports it as it would
        return np.array(
            [
                expected_calibration_error(
                    y_idx,
                    softmax_rows(logits / t),
                    n_bins=n_bins,
                    labels=labels,
                    sample_weight=sample_weight,
                )
                for t in grid
            ]
        )
    w = check_sample_weight(sample_weight, y_idx.shape[0])
    # rows of weight 0 are dropped from the statistics, as the metric drops
    # them; the softmax runs on all rows, as it does there
    keep = None if w is None or np.all(w > 0) else w > 0
    if keep is not None:
        w = w[keep]
    top2 = np.partition(logits, logits.shape[1] - 2, axis=1)[:, -2:]
    top, second = top2[:, 1], top2[:, 0]
    close = np.flatnonzero(
        top - second <= 2.0**-20 * (grid[-1] + np.abs(top) + np.abs(second))
    )
    correct = np.argmax(logits, axis=1) == y_idx
    edges = uniform_edges(n_bins)
    eces = np.empty(grid.shape[0])
    for i, t in enumerate(grid):
        # fl(max(z) / t) is the largest fl(z_j / t): rounding is monotone
        e = np.exp(logits / t - (top / t)[:, None])
        s = np.sum(e, axis=1)
        if close.size:
            p = e[close] / s[close, None]
            correct[close] = np.argmax(p, axis=1) == y_idx[close]
        conf = (1.0 / s).astype(np.float64, copy=False)
        corr = correct.astype(np.float64)
        if keep is not None:
            conf, corr = conf[keep], corr[keep]
        sums = weighted_bin_sums(bin_index(conf, edges), n_bins, w, conf, corr)
        eces[i] = binned_error(*sums)
    return eces
