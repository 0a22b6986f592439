"""Quadratic scaling of a binary logit, with ridge penalties (a CalArena leader)."""

from typing import ClassVar

import numpy as np
from scipy.special import expit

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._solvers import warn_not_converged

from ._base import (
    LOGITS,
    NON_NEGATIVE,
    SOLVER_CONSTRAINTS,
    BaseCalibrator,
    BinaryOnlyMixin,
)
from ._logistic import SEPARATED, binary_score, fit_binary_logistic, mean_weights


@fill_doc
class QuadraticScaler(BinaryOnlyMixin, BaseCalibrator):
    """Quadratic scaling of a binary logit: ``sigmoid(a + b s + c s^2)``.

    One of the leading binary calibrators of the CalArena benchmark (Berta,
    Holzmüller, Bach & Jordan, 2026; the default binary calibrator of
    ``probmetrics`` 1.3): Platt scaling plus a quadratic term, which bends
    the map where a model is over-confident at one end of its scores and
    under-confident at the other. Fitted by minimising

    ``sum_i w_i NLL_i + reg_intercept * a^2 + reg_quadratic * (c sigma^2)^2``

    where ``sigma^2`` is the (weighted) mean of ``s^2``: the penalty on the
    quadratic term is measured on the standardised score, so it does not
    depend on the scale of s, and with the default it is worth about one
    sample, which keeps the curve sane on small or lopsided calibration sets
    and vanishes on large ones. The intercept is measured at ``s = 0``, the
    model's own decision boundary. ``reg_intercept=0, reg_quadratic=0`` is
    the unpenalised quadratic scaling CalArena benchmarks. Solved by Newton
    steps with a line search in float64 on the standardised score.

    Parameters
    ----------
    reg_intercept : float, default=0.0
        Strength of the ridge penalty on a (>= 0), in units of samples.
    reg_quadratic : float, default=1.0
        Strength of the ridge penalty on ``c sigma^2`` (>= 0), in units of
        samples.
    max_iter : int, default=100
        Maximum number of Newton steps.
    tol : float, default=1e-10
        Stop when the largest entry of the gradient of the penalised mean NLL
        is at most ``tol``.

    Attributes
    ----------
    coef_ : ndarray of shape (3,)
        ``(a, b, c)``: intercept, slope and quadratic coefficient on s.
    n_iter_ : int
        Number of Newton steps taken.
    %(fitted_binary_score_inputs)s

    See Also
    --------
    PlattScaler : ``sigmoid(a s + b)``, the special case ``c = 0``.
    BetaScaler : Beta calibration of binary probabilities.

    Notes
    -----
    The score s is a 1-D array (or one column) of positive-class decision
    scores (logits), or two columns of logits [z0, z1], in which case
    s = z1 - z0. With ``sample_weight``, the sums are weighted, so integer
    weights give the fit of repeated rows.

    ``probmetrics`` 1.3 fits this model on ``logit(p)`` of float32
    probabilities. With both penalties 0 our fit equals its
    ``BinaryLogisticCalibrator(type="quadratic")`` (CalArena's "quadratic
    scaling") to about 1e-4 in probability (its L-BFGS stops at
    scikit-learn's ``tol=1e-4``). With penalties it equals
    ``RegularizedQuadraticScalingCalibrator(penalty="ridge",
    lambda_intercept=reg_intercept / n, lambda_quadratic=reg_quadratic *
    sigma^4 / n)``, which penalises a mean NLL on the raw score, to about
    1e-3 (its SAGA solver stops at a relative step of 1e-4;
    tests/test_leaders_binary.py).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from sklcalib.calibration import QuadraticScaler
    >>> rng = np.random.default_rng(0)
    >>> s = 3 * rng.normal(size=20000)
    >>> y = (rng.random(20000) < expit(0.5 + s / 2 - 0.05 * s**2)).astype(int)
    >>> scaler = QuadraticScaler().fit(s, y)  # truth: (0.5, 0.5, -0.05)
    >>> bool(np.abs(scaler.coef_ - [0.5, 0.5, -0.05]).max() < 0.05)
    True
    >>> scaler.predict_proba([-1.0, 0.0, 1.0]).round(1)
    array([[0.5, 0.5],
           [0.4, 0.6],
           [0.3, 0.7]])
    """

    _input = LOGITS

    _parameter_constraints: ClassVar[dict] = {
        "reg_intercept": [NON_NEGATIVE],
        "reg_quadratic": [NON_NEGATIVE],
        **SOLVER_CONSTRAINTS,
    }

    def __init__(self, reg_intercept=0.0, reg_quadratic=1.0, max_iter=100, tol=1e-10):
        self.reg_intercept = reg_intercept
        self.reg_quadratic = reg_quadratic
        self.max_iter = max_iter
        self.tol = tol

    def _sample_size_term(self):
        if self.reg_intercept == 0 and self.reg_quadratic == 0:
            return None
        return (
            "its ridge penalties (reg_intercept, reg_quadratic: worth that many rows)"
        )

    _score = staticmethod(binary_score)

    def _fit(self, scores, y_idx, sample_weight=None):
        s = self._score(scores)
        n = len(s) if sample_weight is None else float(sample_weight.sum())
        sigma = np.sqrt(np.average(s * s, weights=sample_weight))
        sigma = sigma if sigma > 0 else 1.0
        t = s / sigma
        features = np.column_stack([np.ones_like(t), t, t * t])
        strengths = np.array([self.reg_intercept, 0.0, self.reg_quadratic]) / n
        weights = mean_weights(sample_weight, len(y_idx))
        theta, self.n_iter_, converged = fit_binary_logistic(
            features, y_idx, weights, strengths, self.max_iter, self.tol
        )
        if not converged:
            warn_not_converged("QuadraticScaler", self.max_iter, SEPARATED)
        self.coef_ = theta / np.array([1.0, sigma, sigma * sigma])

    def _predict_proba(self, scores):
        s = self._score(scores)
        a, b, c = self.coef_
        # Horner's rule; the logit can be large: expit saturates cleanly, and
        # each column is computed from the logit (no 1 - q rounding)
        t = a + s * (b + c * s)
        return np.column_stack([expit(-t), expit(t)])
