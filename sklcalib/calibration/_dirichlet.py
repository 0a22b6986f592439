"""Dirichlet calibration with ODIR regularisation (Kull et al., 2019)."""

from typing import ClassVar

import numpy as np

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import as_columns, log_floored
from sklcalib._utils._solvers import (
    newton_minimise,
    ridge_penalised,
    warn_not_converged,
)

from ._base import (
    NON_NEGATIVE,
    PROBABILITIES,
    SOLVER_CONSTRAINTS,
    BaseCalibrator,
    softmax_rows,
)
from ._logistic import mean_weights, multinomial_objective


def _log_probabilities(scores):
    """log p of (n, K) probabilities, or of [1 - p, p] for one binary column."""
    if scores.shape[1] == 1:
        scores = as_columns(scores[:, 0])
    return log_floored(scores)


def _penalty_scales(k, reg_lambda, reg_mu):
    """Per-parameter L2 scales of ``[W | b]`` (K x (K + 1)): ODIR."""
    scales = np.full((k, k + 1), reg_lambda / (k * (k - 1)))
    scales[np.arange(k), np.arange(k)] = 0.0  # the diagonal of W is free
    scales[:, k] = reg_mu / k
    return scales


def odir_fit(log_p, y_idx, reg_lambda, reg_mu, weights, max_iter=100, tol=1e-8):
    """``(W, b, n_iter, converged)`` of the ODIR-penalised NLL, by Newton.

    The loss is ``mean NLL of softmax(log_p W^T + b) + reg_lambda / (K (K - 1))
    * sum_{i != j} W_ij^2 + reg_mu / K * sum_j b_j^2``; ``weights`` (summing
    to 1) make the mean a weighted one. The objective is convex and has only
    K (K + 1) parameters, so exact Newton steps with a backtracking line
    search converge in a few tens of passes over the data, where L-BFGS
    needs hundreds on the ill-conditioned log-probabilities of confident
    models. Starts at W = I, b = 0.
    """
    n, k = log_p.shape
    features = np.hstack([log_p, np.ones((n, 1))])  # (n, K + 1)
    nll = multinomial_objective(features, y_idx, weights, k)
    scales = _penalty_scales(k, reg_lambda, reg_mu).ravel()
    start = np.hstack([np.eye(k), np.zeros((k, 1))]).ravel()
    # the diagonal is free: its centre does not matter; the others' is 0
    fun = ridge_penalised(nll, scales, np.zeros_like(start))
    theta, n_iter, converged = newton_minimise(fun, start, max_iter, tol)
    theta = theta.reshape(k, k + 1)
    return theta[:, :k], theta[:, k], n_iter, converged


@fill_doc
class DirichletCalibrator(BaseCalibrator):
    """Dirichlet calibration: ``softmax(W log p + b)`` (Kull et al., 2019).

    A full linear map of the log-probabilities, fitted by minimising the
    mean NLL of the calibration data plus the ODIR penalty ("off-diagonal
    and intercept regularisation") of Kull et al.:
    ``reg_lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + reg_mu / K *
    sum_j b_j^2``. The fit is Newton's method with the exact gradient and
    Hessian and a backtracking line search, in float64, starting from the
    identity map (W = I, b = 0). ``log p`` is taken of p
    clipped to the smallest positive normal float64, so zero probabilities
    stay finite.

    Parameters
    ----------
    reg_lambda : float, default=1e-3
        Strength of the penalty on the off-diagonal entries of W (>= 0).
    reg_mu : float or None, default=None
        Strength of the penalty on the intercept b (>= 0); None means
        ``reg_mu = reg_lambda``.
    max_iter : int, default=100
        Maximum number of Newton steps.
    tol : float, default=1e-8
        Stop when the largest entry of the gradient is at most ``tol``.

    Attributes
    ----------
    %(matrix_coef)s
    intercept_ : ndarray of shape (n_classes,)
        The intercept b.
    n_iter_ : int
        Number of Newton steps taken.
    %(fitted_probability_inputs)s

    Notes
    -----
    A binary problem given one column of positive-class probabilities p is
    calibrated on ``[1 - p, p]`` (a 2 x 2 map: beta calibration's family).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from sklcalib.calibration import DirichletCalibrator
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(500, temperature=3)
    >>> proba = softmax(logits, axis=1)  # over-confident
    >>> dirichlet = DirichletCalibrator().fit(proba, y)
    >>> bool(np.all(np.diag(dirichlet.coef_) < 1))  # cooled: W ~ I / 3
    True
    """

    _input = PROBABILITIES

    _parameter_constraints: ClassVar[dict] = {
        "reg_lambda": [NON_NEGATIVE],
        "reg_mu": [NON_NEGATIVE, None],
        **SOLVER_CONSTRAINTS,
    }

    def __init__(self, reg_lambda=1e-3, reg_mu=None, max_iter=100, tol=1e-8):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, scores, y_idx, sample_weight=None):
        reg_mu = self.reg_lambda if self.reg_mu is None else self.reg_mu
        self.coef_, self.intercept_, self.n_iter_, converged = odir_fit(
            _log_probabilities(scores),
            y_idx,
            self.reg_lambda,
            reg_mu,
            mean_weights(sample_weight, len(y_idx)),
            max_iter=self.max_iter,
            tol=self.tol,
        )
        if not converged:
            warn_not_converged(
                "DirichletCalibrator",
                self.max_iter,
                "; increase max_iter or reg_lambda.",
            )

    def _predict_proba(self, scores):
        return softmax_rows(_log_probabilities(scores) @ self.coef_.T + self.intercept_)
