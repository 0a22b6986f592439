"""Temperature scaling (Guo et al., 2017): ``softmax(z / T)`` with one scalar T."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklcalib._utils._optional import extra_imports, is_installed
from sklcalib._utils._validation import check_n_bins, check_option, row_sum_tolerance
from sklcalib.metrics import expected_calibration_error

from ._base import LOGITS, BaseCalibrator, binary_logits, softmax_rows

#: Range of the fitted temperature. An NLL that keeps decreasing as T -> 0
#: (perfectly separable scores) or T -> inf (scores that carry no
#: information) stops at these bounds instead of running off to 0 or inf.
TEMPERATURE_BOUNDS = (1e-4, 1e4)

#: The grid of ``objective="ece"``: T = 0.1, 0.2, ..., 10.0 (read-only: it is
#: every TemperatureScaler's default).
DEFAULT_GRID = np.round(np.arange(1, 101) * 0.1, 1)
DEFAULT_GRID.flags.writeable = False

_ECE_ON_DASK = (
    "TemperatureScaler(objective='ece') cannot be fitted on dask arrays "
    "(a grid search would take one pass per temperature); use "
    "objective='nll', or fit on an in-memory sample."
)


def _nll_derivatives(shifted, shifted_true, beta, buffer, weights=None):
    """NLL of softmax(beta * z) and its first three derivatives in beta.

    Means are weighted by ``weights`` (normalised to sum 1) when given.

    ``shifted`` is z minus its row maximum (softmax is shift invariant and
    ``exp(beta * shifted) <= 1`` cannot overflow), ``shifted_true`` its entry
    at the true class, ``buffer`` a scratch array of the same shape (reused so
    that a fit allocates no further (n, K) arrays).

    With p = softmax(beta z): NLL = mean(logsumexp(beta z) - beta z_y),
    dNLL/dbeta = mean(E_p[z] - z_y), d2NLL/dbeta2 = mean(Var_p[z]) >= 0, and
    the third derivative is the mean third central moment of z under p.
    """
    np.multiply(shifted, beta, out=buffer)
    np.exp(buffer, out=buffer)
    s0 = buffer.sum(axis=1)  # >= 1: the row maximum contributes exp(0)
    buffer *= shifted
    s1 = buffer.sum(axis=1)
    buffer *= shifted
    s2 = buffer.sum(axis=1)
    s3 = np.einsum("ij,ij->i", buffer, shifted)
    mean = s1 / s0
    second = s2 / s0

    def average(values):
        return np.mean(values) if weights is None else np.dot(weights, values)

    nll = average(np.log(s0) - beta * shifted_true)
    grad = average(mean - shifted_true)
    hess = average(np.maximum(second - mean**2, 0.0))
    third = average(s3 / s0 - 3 * mean * second + 2 * mean**3)
    return nll, grad, hess, third


#: Logit matrices with at least this many entries use the compiled kernels.
FUSED_MIN_SIZE = 1_000_000
#: Rows of the subsample whose optimum starts Newton on large inputs.
SUBSAMPLE_ROWS = 5_000


def _numpy_derivatives(logits, y_idx, weights=None):
    """beta -> (nll, grad, hess), numpy reference (two (n, K) scratch arrays)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    shifted_true = shifted[np.arange(len(y_idx)), y_idx]
    buffer = np.empty_like(shifted)
    if weights is not None:
        weights = weights / weights.sum()
    return lambda beta: _nll_derivatives(shifted, shifted_true, beta, buffer, weights)


def _fused_derivatives(logits, y_idx):
    """beta -> (nll, grad, hess, third), compiled one-pass kernel."""
    # imports numba (the "fast" extra): large inputs only
    with extra_imports("the compiled temperature kernel"):
        from . import _temperature_fused as fused

    logits = np.ascontiguousarray(logits, dtype=np.float64)
    y_idx = np.ascontiguousarray(y_idx, dtype=np.int64)
    return lambda beta: fused.nll_derivatives(logits, y_idx, beta)


def _fused_by_default(logits):
    # without numba (the "fast" extra) the numpy path serves every size
    return logits.size >= FUSED_MIN_SIZE and is_installed("numba")


def nll_derivatives(logits, y_idx, *, fused=None, sample_weight=None):
    """A function beta -> the NLL of softmax(beta z) and three derivatives.

    ``fused=None`` picks the compiled kernels for inputs of at least
    ``FUSED_MIN_SIZE`` entries and numpy otherwise; weighted fits always use
    numpy (the compiled kernel has no weights).
    """
    if sample_weight is not None:
        return _numpy_derivatives(logits, y_idx, sample_weight)
    if fused is None:
        fused = _fused_by_default(logits)
    return (_fused_derivatives if fused else _numpy_derivatives)(logits, y_idx)


def _step(beta, grad, hess, third):
    """Halley's step, Newton's where Halley's is undefined; NaN if neither.

    A tiny curvature can overflow the division: an infinite step simply
    fails the bracket test and the caller bisects instead.
    """
    grad, hess, third = np.float64(grad), np.float64(hess), np.float64(third)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        denominator = 2 * hess**2 - grad * third
        if hess > 0 and denominator > 0:
            return beta - 2 * grad * hess / denominator
        if hess > 0:
            return beta - grad / hess
    return np.nan


def _safeguarded_newton(derivatives, beta, lo, hi, max_iter):
    """Minimise a convex function of beta on [lo, hi] from ``beta``.

    Steps are Halley's (Newton's with the third derivative: cubic
    convergence, so one pass over the data fewer than Newton) or Newton's
    where Halley's is not defined. Each step keeps a bracket [lo, hi] holding
    the root of the derivative and falls back to bisection (in log space)
    whenever the step leaves it. A step below 1e-5 relative is taken as the
    last one without evaluating its end point: Halley's error after it is
    about the cube of the step (Newton's the square), far below 1e-9.
    """
    beta = min(max(beta, lo), hi)
    tried_lo = tried_hi = False
    for _ in range(max_iter):
        _, grad, hess, third = derivatives(beta)
        if grad == 0.0:
            break
        if grad > 0:
            hi = beta
        else:
            lo = beta
        step = _step(beta, grad, hess, third)
        if abs(step - beta) <= 1e-5 * beta:  # converged (also when rounding
            return min(max(step, lo), hi)  # puts the step on a bracket end)
        if lo < step < hi:
            new = step
        elif step >= hi and not tried_hi:  # the minimum may lie at a bound:
            new, tried_hi = hi, True  # look there once instead of bisecting
        elif step <= lo and not tried_lo:
            new, tried_lo = lo, True
        else:
            new = np.sqrt(lo * hi)  # bisection in log space
        if hi - lo <= 1e-12 * lo:
            return new
        beta = new
    return beta


def fit_temperature_nll(
    logits,
    y_idx,
    *,
    bounds=TEMPERATURE_BOUNDS,
    max_iter=100,
    fused=None,
    sample_weight=None,
):
    """The temperature minimising the NLL of ``softmax(logits / T)``.

    The NLL is convex in the inverse temperature beta = 1/T, so safeguarded
    Halley/Newton steps on beta (closed-form derivatives, float64, stable
    log-sum-exp) find the minimum exactly. On large inputs the steps start
    from the optimum of a subsample of rows, so that about two passes over
    the full logits remain.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
        Float64 logits.
    y_idx : ndarray of shape (n_samples,)
        Integer index of the true class.
    bounds : tuple of float, default=TEMPERATURE_BOUNDS
        Range of T; the result lies in it.
    max_iter : int, default=100
        Maximum number of Halley, Newton or bisection steps.
    fused : bool or None, default=None
        Use the compiled kernels (True), numpy (False), or decide by size.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Weights of the weighted mean NLL (numpy path).

    Returns
    -------
    temperature : float
    """
    lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
    beta = 1.0
    n = len(y_idx)
    if fused is None:  # decided once, so the subsample uses the same kernel
        fused = _fused_by_default(logits)
    if n >= 4 * SUBSAMPLE_ROWS:
        rows = slice(None, None, n // SUBSAMPLE_ROWS)
        sub = np.ascontiguousarray(logits[rows])
        sub_weight = None if sample_weight is None else sample_weight[rows]
        if sub_weight is None or sub_weight.sum() > 0:
            start = nll_derivatives(
                sub, y_idx[rows], fused=fused, sample_weight=sub_weight
            )
            beta = _safeguarded_newton(start, beta, lo, hi, max_iter)
    derivatives = nll_derivatives(
        logits, y_idx, fused=fused, sample_weight=sample_weight
    )
    beta = _safeguarded_newton(derivatives, beta, lo, hi, max_iter)
    return 1.0 / min(max(beta, lo), hi)


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

    Notes
    -----
    Binary decision scores s of shape (n,) or (n, 1) are treated as the
    logits [0, s], so that ``predict_proba[:, 1] = sigmoid(s / T)``.
    (scikit-learn's ``CalibratedClassifierCV(method="temperature")`` uses
    [-s, s] instead, whose temperature is twice this one.)

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import TemperatureScaler
    >>> logits = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]])
    >>> y = np.array([0, 1, 1, 1])
    >>> scaler = TemperatureScaler().fit(logits, y)
    >>> bool(scaler.temperature_ > 1)  # over-confident logits get cooled
    True
    >>> scaler.predict(logits)
    array([0, 1, 0, 1])
    """

    _input = LOGITS

    def __init__(self, objective="nll", grid=None, n_bins=15):
        self.objective = objective
        self.grid = grid
        self.n_bins = n_bins

    def _check_params(self):
        check_option(self.objective, "objective", ("nll", "ece"))
        check_n_bins(self.n_bins)
        if self.grid is not None:
            grid = np.asarray(self.grid, dtype=np.float64)
            if grid.ndim != 1 or grid.size == 0:
                raise ValueError("grid must be a non-empty 1-D array of temperatures.")
            if not np.all(np.isfinite(grid) & (grid > 0)):
                raise ValueError("grid must hold finite positive temperatures.")

    def _fit(self, scores, y_idx, sample_weight=None):
        _warn_if_probabilities(scores)
        logits = binary_logits(scores)
        if self.objective == "nll":
            self.temperature_ = fit_temperature_nll(
                logits, y_idx, sample_weight=sample_weight
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

        beta = _safeguarded_newton(derivatives, beta, lo, hi, 100)
        self.temperature_ = float(1.0 / min(max(beta, lo), hi))
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
    # float32's tolerance: float32 probabilities cast to float64 still count
    if (
        scores.shape[1] > 1
        and scores.min() >= 0
        and scores.max() <= 1
        and np.all(
            np.abs(scores.sum(axis=1) - 1)
            <= row_sum_tolerance(np.float32, scores.shape[1])
        )
    ):
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
    labels = np.arange(logits.shape[1])
    eces = [
        expected_calibration_error(
            y_idx,
            softmax_rows(logits / t),
            n_bins=n_bins,
            labels=labels,
            sample_weight=sample_weight,
        )
        for t in grid
    ]
    return float(grid[int(np.argmin(eces))])  # argmin: first of the ties
