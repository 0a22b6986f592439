"""Ensemble temperature scaling (Zhang, Kailkhura & Han, 2020)."""

import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from sklcalib._utils._docstrings import fill_doc

from ._base import LOGITS, BaseCalibrator, binary_logits, softmax_rows
from ._temperature_nll import fit_temperature_nll


def _mixture(logits, temperature, weights):
    k = logits.shape[1]
    return (
        weights[0] * softmax_rows(logits / temperature)
        + weights[1] * softmax_rows(logits)
        + weights[2] / k
    )


def fit_simplex_weights(components, sample_weight=None):
    """Weights on the simplex minimising ``-mean log(components @ w)``.

    ``components`` is (n, 3): the probability each mixture component gives
    the true class. The objective is convex in w; SLSQP with the analytic
    gradient solves it on (w1, w2) with w3 = 1 - w1 - w2.
    """
    n = components.shape[0]
    weights = np.full(n, 1.0 / n) if sample_weight is None else sample_weight
    weights = weights / weights.sum()
    floor = np.finfo(np.float64).tiny
    last = components[:, 2]
    diff = components[:, :2] - last[:, None]

    def fun(w12):
        q = np.maximum(last + diff @ w12, floor)
        return -np.dot(weights, np.log(q)), -(weights / q) @ diff

    best = None
    for start in ([1.0, 0.0], [1 / 3, 1 / 3]):  # guard against a flat start
        result = minimize(
            fun,
            np.array(start),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, 1.0), (0.0, 1.0)],
            constraints=[
                {
                    "type": "ineq",
                    "fun": lambda w: 1.0 - w.sum(),
                    "jac": lambda w: -np.ones(2),
                }
            ],
            options={"ftol": 1e-14, "maxiter": 1000},
        )
        if best is None or result.fun < best.fun:
            best = result
    if not best.success:
        warnings.warn(
            f"EnsembleTemperatureScaler's weights did not converge ({best.message}).",
            ConvergenceWarning,
            stacklevel=3,
        )
    w12 = np.clip(best.x, 0.0, 1.0)
    w12 = w12 / max(w12.sum(), 1.0)
    return np.r_[w12, 1.0 - w12.sum()]


@fill_doc
class EnsembleTemperatureScaler(BaseCalibrator):
    """Ensemble temperature scaling (ETS, Zhang, Kailkhura & Han, 2020).

    The calibrated probabilities are a mixture of the temperature-scaled
    softmax, the uncalibrated softmax and the uniform distribution:
    ``w1 softmax(z / T) + w2 softmax(z) + w3 / K``. T is fitted first by
    temperature scaling (exact NLL minimum, as
    :class:`~sklcalib.calibration.TemperatureScaler`), then the weights on
    the simplex minimise the NLL of the mixture (a convex problem in the
    weights).

    Attributes
    ----------
    temperature_ : float
        The temperature T.
    weights_ : ndarray of shape (3,)
        The simplex weights ``(w1, w2, w3)``: temperature-scaled, original,
        uniform.
    %(fitted_score_inputs)s

    Notes
    -----
    Binary decision scores s of shape (n,) or (n, 1) are the logits [0, s].
    Zhang et al.'s code fits the weights with either the squared error or
    the NLL; the NLL is used here, so that the mixture's weights and its
    temperature minimise the same loss.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import EnsembleTemperatureScaler
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(temperature=5)  # over-confident
    >>> ets = EnsembleTemperatureScaler().fit(logits, y)
    >>> bool(np.isclose(ets.weights_.sum(), 1.0))
    True
    """

    _input = LOGITS

    def __init__(self):
        pass

    def _fit(self, scores, y_idx, sample_weight=None):
        logits = binary_logits(scores)
        self.temperature_ = fit_temperature_nll(
            logits, y_idx, sample_weight=sample_weight
        )
        rows = np.arange(len(y_idx))
        components = np.column_stack(
            [
                softmax_rows(logits / self.temperature_)[rows, y_idx],
                softmax_rows(logits)[rows, y_idx],
                np.full(len(y_idx), 1.0 / logits.shape[1]),
            ]
        )
        self.weights_ = fit_simplex_weights(components, sample_weight)

    def _predict_proba(self, scores):
        return _mixture(binary_logits(scores), self.temperature_, self.weights_)
