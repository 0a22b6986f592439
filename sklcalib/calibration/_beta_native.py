"""Beta calibration of binary probabilities (Kull, Silva Filho & Flach, 2017),
written natively: no netcal, no betacal."""

from typing import ClassVar

import numpy as np
from scipy.special import expit

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import log_floored, logistic_nll
from sklcalib._utils._solvers import warn_not_converged

from ._base import (
    PROBABILITIES,
    RIDGE_SOLVER_CONSTRAINTS,
    BaseCalibrator,
    BinaryOnlyMixin,
)
from ._logistic import SEPARATED, fit_binary_logistic, mean_weights

#: the faces of the constraint set {a >= 0, b >= 0}: which of (a, b) are free
_FACES = ((True, True), (False, True), (True, False), (False, False))


def _beta_features(p):
    """``[ln p, -ln(1 - p), 1]`` of positive-class probabilities."""
    return np.column_stack(
        [
            log_floored(p),
            -log_floored(1.0 - p),
            np.ones_like(p),
        ]
    )


@fill_doc
class BetaScaler(BinaryOnlyMixin, BaseCalibrator):
    """Beta calibration of a binary probability, fitted natively.

    The calibrated probability of ``classes_[1]`` is
    ``sigmoid(a ln p - b ln(1 - p) + c)`` with ``a, b >= 0`` (the "abm"
    family of Kull et al., 2017): a monotone map of p that contains the
    identity (``a = b = 1, c = 0``), Platt scaling of ``logit(p)`` (``a =
    b``) and S-shaped and inverse-S-shaped curves. One of the leading binary
    calibrators of the CalArena benchmark.

    The fit minimises the (weighted) NLL under the constraints ``a, b >= 0``
    exactly: the problem is convex, so its minimum is the unconstrained
    minimum restricted to one face of the constraint set; each face (both
    free, ``a = 0``, ``b = 0``, both 0) is fitted by Newton steps and the
    feasible fit with the lowest NLL is kept. (The authors' ``betacal``
    refits once without the offending coefficient, which is the same
    whenever the remaining coefficient stays non-negative.) Unlike
    :class:`BetaCalibrator`, this class needs no optional dependency and
    honours ``sample_weight``.

    Parameters
    ----------
    reg : float, default=0.0
        Ridge penalty ``reg * (a^2 + b^2 + c^2)`` added to the summed NLL
        (>= 0), in units of samples; 0 is the authors' (nearly) unpenalised
        fit. A small value keeps the coefficients finite when the scores
        separate the classes.
    max_iter : int, default=100
        Maximum number of Newton steps per face.
    tol : float, default=1e-10
        Stop when the largest entry of the gradient of the mean NLL is at
        most ``tol``.

    Attributes
    ----------
    coef_ : ndarray of shape (3,)
        ``(a, b, c)``.
    n_iter_ : int
        Number of Newton steps of the kept fit.
    %(fitted_binary_probability_inputs)s

    See Also
    --------
    BetaCalibrator : Netcal's beta calibration (optional dependency).
    QuadraticScaler : Quadratic scaling of a binary logit.

    Notes
    -----
    X holds the probability of the positive class (1-D or one column), or
    two columns of probabilities. ``ln p`` and ``ln(1 - p)`` are taken of
    values clipped to the smallest positive normal float64, so 0 and 1 stay
    finite. ``probmetrics`` 1.3 wraps ``betacal``, which clips p to float32's
    epsilon: on probabilities within ``[1e-7, 1 - 1e-7]`` and with an
    unconstrained optimum inside ``a, b >= 0`` our fit equals its
    ``BinaryLogisticCalibrator(type="beta")`` (the same model without the
    constraints) to about 1e-4 (tests/test_leaders_binary.py).

    References
    ----------
    M. Kull, T. Silva Filho and P. Flach. Beta calibration: a well-founded
    and easily implemented improvement on logistic calibration for binary
    classifiers. AISTATS, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import BetaScaler
    >>> from sklcalib.datasets import make_binary_scores
    >>> p, y = make_binary_scores(
    ...     50000, low=0.01, high=0.99, truth=lambda p: p**2 / (p**2 + (1 - p) ** 2)
    ... )
    >>> beta = BetaScaler().fit(p, y)  # truth: a = b = 2, c = 0
    >>> bool(np.abs(beta.coef_ - [2, 2, 0]).max() < 0.2)
    True
    >>> beta.predict_proba([0.5, 0.9]).round(1)  # sharpened
    array([[0.5, 0.5],
           [0. , 1. ]])
    """

    _input = PROBABILITIES

    _parameter_constraints: ClassVar[dict] = {**RIDGE_SOLVER_CONSTRAINTS}

    def __init__(self, reg=0.0, max_iter=100, tol=1e-10):
        self.reg = reg
        self.max_iter = max_iter
        self.tol = tol

    def _sample_size_term(self):
        return (
            None if self.reg == 0 else "its ridge penalty (reg: worth that many rows)"
        )

    @staticmethod
    def _positive(scores):
        return scores[:, -1]

    def _fit(self, scores, y_idx, sample_weight=None):
        features = _beta_features(self._positive(scores))
        n = len(y_idx) if sample_weight is None else float(sample_weight.sum())
        weights = mean_weights(sample_weight, len(y_idx))
        y = y_idx.astype(np.float64)
        best = None
        for free_a, free_b in _FACES:
            columns = np.array([free_a, free_b, True])
            theta, n_iter, converged = fit_binary_logistic(
                features[:, columns],
                y_idx,
                weights,
                np.full(columns.sum(), self.reg / n),
                self.max_iter,
                self.tol,
            )
            coef = np.zeros(3)
            coef[columns] = theta
            if coef[0] < 0 or coef[1] < 0:
                continue
            loss = np.dot(weights, logistic_nll(features @ coef, y))
            loss += self.reg / n * np.dot(coef, coef)
            if best is None or loss < best[0] - 1e-15:
                best = (loss, coef, n_iter, converged)
            if free_a and free_b:  # the unconstrained minimum is feasible
                break
        _, self.coef_, self.n_iter_, converged = best
        if not converged:
            warn_not_converged("BetaScaler", self.max_iter, SEPARATED)

    def _predict_proba(self, scores):
        t = _beta_features(self._positive(scores)) @ self.coef_
        return np.column_stack([expit(-t), expit(t)])
