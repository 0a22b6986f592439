"""Temperature scaling (Guo et al., 2017): ``softmax(z / T)`` with one scalar T."""

import numpy as np

from ._base import LOGITS, BaseCalibrator, binary_logits, check_params, softmax_rows

#: Range of the fitted temperature. An NLL that keeps decreasing as T -> 0
#: (perfectly separable scores) or T -> inf (scores that carry no
#: information) stops at these bounds instead of running off to 0 or inf.
TEMPERATURE_BOUNDS = (1e-4, 1e4)

#: The grid of ``objective="ece"``: T = 0.1, 0.2, ..., 10.0.
DEFAULT_GRID = np.round(np.arange(1, 101) * 0.1, 1)


def _nll_derivatives(shifted, shifted_true, beta, buffer):
    """NLL of softmax(beta * z) and its first two derivatives in beta.

    ``shifted`` is z minus its row maximum (softmax is shift invariant and
    ``exp(beta * shifted) <= 1`` cannot overflow), ``shifted_true`` its entry
    at the true class, ``buffer`` a scratch array of the same shape (reused so
    that a fit on 200k x 100 logits allocates no further (n, K) arrays).

    With p = softmax(beta z): NLL = mean(logsumexp(beta z) - beta z_y),
    dNLL/dbeta = mean(E_p[z] - z_y), d2NLL/dbeta2 = mean(Var_p[z]) >= 0.
    """
    np.multiply(shifted, beta, out=buffer)
    np.exp(buffer, out=buffer)
    s0 = buffer.sum(axis=1)  # >= 1: the row maximum contributes exp(0)
    s1 = np.einsum("ij,ij->i", buffer, shifted)
    buffer *= shifted
    s2 = np.einsum("ij,ij->i", buffer, shifted)
    mean_z = s1 / s0
    nll = np.mean(np.log(s0) - beta * shifted_true)
    grad = np.mean(mean_z - shifted_true)
    hess = np.mean(np.maximum(s2 / s0 - mean_z**2, 0.0))
    return nll, grad, hess


def fit_temperature_nll(logits, y_idx, *, bounds=TEMPERATURE_BOUNDS, max_iter=100):
    """The temperature minimising the NLL of ``softmax(logits / T)``.

    The NLL is convex in the inverse temperature beta = 1/T, so safeguarded
    Newton steps on beta find the minimum exactly: each step keeps a bracket
    [lo, hi] of beta that holds the root of the derivative and falls back to
    bisection (in log space) whenever Newton leaves it.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
        Float64 logits.
    y_idx : ndarray of shape (n_samples,)
        Integer index of the true class.
    bounds : tuple of float, default=TEMPERATURE_BOUNDS
        Range of T; the result is clipped to it.
    max_iter : int, default=100
        Maximum number of Newton or bisection steps.

    Returns
    -------
    temperature : float
    """
    shifted = logits - logits.max(axis=1, keepdims=True)
    shifted_true = shifted[np.arange(len(y_idx)), y_idx]
    buffer = np.empty_like(shifted)
    lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
    beta = min(max(1.0, lo), hi)
    tried_lo = tried_hi = False
    for _ in range(max_iter):
        _, grad, hess = _nll_derivatives(shifted, shifted_true, beta, buffer)
        if grad == 0.0:
            break
        if grad > 0:
            hi = beta
        else:
            lo = beta
        step = beta - grad / hess if hess > 0 else np.nan
        if lo < step < hi:
            new = step
        elif step >= hi and not tried_hi:  # the minimum may lie at a bound:
            new, tried_hi = hi, True  # look there once instead of bisecting
        elif step <= lo and not tried_lo:
            new, tried_lo = lo, True
        else:
            new = np.sqrt(lo * hi)  # bisection in log space
        if abs(new - beta) <= 1e-12 * beta or hi - lo <= 1e-12 * lo:
            beta = new
            break
        beta = new
    return 1.0 / min(max(beta, 1.0 / bounds[1]), 1.0 / bounds[0])


def temperature_nll(logits, y_idx, temperature):
    """Mean negative log-likelihood of ``softmax(logits / temperature)``."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    buffer = np.empty_like(shifted)
    shifted_true = shifted[np.arange(len(y_idx)), y_idx]
    return _nll_derivatives(shifted, shifted_true, 1.0 / temperature, buffer)[0]


class TemperatureScaler(BaseCalibrator):
    """Temperature scaling: ``softmax(logits / T)`` with one scalar T.

    Dividing all logits by one positive T keeps the predicted class and only
    changes the confidence (Guo et al., 2017).

    Parameters
    ----------
    objective : {"nll", "ece"}, default="nll"
        ``"nll"`` minimises the negative log-likelihood of the calibration
        data exactly: the NLL is convex in the inverse temperature 1/T, and a
        few safeguarded Newton steps in float64 reach its minimum. The fitted
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
        check_params("objective", self.objective, choices={"nll", "ece"})
        check_params("n_bins", self.n_bins, low=1, integer=True)
        if self.grid is not None:
            grid = np.asarray(self.grid, dtype=np.float64)
            if grid.ndim != 1 or grid.size == 0:
                raise ValueError("grid must be a non-empty 1-D array of temperatures.")
            if not np.all(np.isfinite(grid) & (grid > 0)):
                raise ValueError("grid must hold finite positive temperatures.")

    def _fit(self, scores, y_idx):
        logits = binary_logits(scores)
        if self.objective == "nll":
            self.temperature_ = fit_temperature_nll(logits, y_idx)
        else:
            grid = DEFAULT_GRID if self.grid is None else self.grid
            self.temperature_ = fit_temperature_ece(
                logits, y_idx, grid=grid, n_bins=self.n_bins
            )

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) / self.temperature_)


def fit_temperature_ece(logits, y_idx, *, grid=DEFAULT_GRID, n_bins=15):
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

    Returns
    -------
    temperature : float
    """
    # imported here: the metric core is a sibling module
    from sklcalib.metrics import expected_calibration_error

    grid = np.sort(np.asarray(grid, dtype=np.float64))
    labels = np.arange(logits.shape[1])
    eces = [
        expected_calibration_error(
            y_idx, softmax_rows(logits / t), n_bins=n_bins, labels=labels
        )
        for t in grid
    ]
    return float(grid[int(np.argmin(eces))])  # argmin: first of the ties
