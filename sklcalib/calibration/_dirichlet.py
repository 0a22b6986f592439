"""Dirichlet calibration with ODIR regularisation (Kull et al., 2019)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklcalib._utils._scores import as_columns, log_floored
from sklcalib._utils._validation import check_scalar, check_solver_params

from ._base import PROBABILITIES, BaseCalibrator, softmax_rows
from ._scaling import normalised_weights


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


def odir_fit(log_p, y_idx, reg_lambda, reg_mu, weights=None, max_iter=100, tol=1e-8):
    """``(W, b, n_iter, converged)`` of the ODIR-penalised NLL, by Newton.

    The loss is ``mean NLL of softmax(log_p W^T + b) + reg_lambda / (K (K - 1))
    * sum_{i != j} W_ij^2 + reg_mu / K * sum_j b_j^2``; ``weights`` (summing
    to 1) make the mean a weighted one. The objective is convex and has only
    K (K + 1) parameters, so exact Newton steps (the Hessian of multinomial
    logistic regression, ``sum_i w_i (diag(p_i) - p_i p_i^T) kron x_i x_i^T``
    with ``x_i = [log p_i, 1]``, one BLAS product) with a backtracking line
    search converge in a few tens of passes over the data, where L-BFGS
    needs hundreds on the ill-conditioned log-probabilities of confident
    models. Starts at W = I, b = 0.
    """
    n, k = log_p.shape
    x = np.hstack([log_p, np.ones((n, 1))])  # (n, K + 1)
    w = np.full(n, 1.0 / n) if weights is None else weights
    scales = _penalty_scales(k, reg_lambda, reg_mu)
    theta = np.hstack([np.eye(k), np.zeros((k, 1))])  # [W | b]
    rows = np.arange(n)

    def loss_and_proba(theta):
        z = x @ theta.T
        z -= z.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(z).sum(axis=1))
        nll = np.dot(w, log_norm - z[rows, y_idx])
        proba = np.exp(z - log_norm[:, None])
        return nll + np.sum(scales * theta**2), proba

    loss, proba = loss_and_proba(theta)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is returned)
        residual = proba.copy()
        residual[rows, y_idx] -= 1.0
        grad = (residual * w[:, None]).T @ x + 2.0 * scales * theta
        if np.max(np.abs(grad)) <= tol:
            converged = True
            break
        # Hessian: block (k, l) = sum_i w_i (p_ik [k = l] - p_ik p_il) x_i x_i^T
        outer = (proba[:, :, None] * x[:, None, :]).reshape(n, -1)
        hess = -(outer * w[:, None]).T @ outer
        for c in range(k):
            block = slice(c * (k + 1), (c + 1) * (k + 1))
            hess[block, block] += (x * (w * proba[:, c])[:, None]).T @ x
        hess[np.diag_indices_from(hess)] += 2.0 * scales.ravel()
        # softmax ignores a shift shared by all classes: without penalty the
        # Hessian is singular along it; a tiny ridge picks the short step
        hess[np.diag_indices_from(hess)] += 1e-12 * max(np.trace(hess), 1.0)
        try:
            step = -np.linalg.solve(hess, grad.ravel()).reshape(theta.shape)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(hess, grad.ravel(), rcond=None)[0].reshape(
                theta.shape
            )
        slope = np.sum(grad * step)
        t = 1.0
        while True:  # backtracking (Armijo) line search
            new_loss, new_proba = loss_and_proba(theta + t * step)
            if new_loss <= loss + 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        if t < 1e-10:  # no decrease left: at the minimum up to rounding
            converged = True
            break
        theta, loss, proba = theta + t * step, new_loss, new_proba
    return theta[:, :k], theta[:, k], n_iter, converged


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
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix W.
    intercept_ : ndarray of shape (n_classes,)
        The intercept b.
    n_iter_ : int
        Number of Newton steps taken.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of probability columns seen in ``fit``.

    Notes
    -----
    A binary problem given one column of positive-class probabilities p is
    calibrated on ``[1 - p, p]`` (a 2 x 2 map: beta calibration's family).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from sklcalib.calibration import DirichletCalibrator
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(500, 3))
    >>> y = np.array([rng.choice(3, p=q) for q in softmax(logits, axis=1)])
    >>> proba = softmax(3 * logits, axis=1)  # over-confident
    >>> dirichlet = DirichletCalibrator().fit(proba, y)
    >>> bool(np.all(np.diag(dirichlet.coef_) < 1))  # cooled: W ~ I / 3
    True
    """

    _input = PROBABILITIES

    def __init__(self, reg_lambda=1e-3, reg_mu=None, max_iter=100, tol=1e-8):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self):
        check_scalar(self.reg_lambda, "reg_lambda", low=0)
        if self.reg_mu is not None:
            check_scalar(self.reg_mu, "reg_mu", low=0)
        check_solver_params(self.max_iter, self.tol)

    def _fit(self, scores, y_idx, sample_weight=None):
        reg_mu = self.reg_lambda if self.reg_mu is None else self.reg_mu
        self.coef_, self.intercept_, self.n_iter_, converged = odir_fit(
            _log_probabilities(scores),
            y_idx,
            self.reg_lambda,
            reg_mu,
            normalised_weights(sample_weight),
            max_iter=self.max_iter,
            tol=self.tol,
        )
        if not converged:
            warnings.warn(
                f"DirichletCalibrator did not converge in max_iter={self.max_iter} "
                "Newton steps; increase max_iter or reg_lambda.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _predict_proba(self, scores):
        return softmax_rows(_log_probabilities(scores) @ self.coef_.T + self.intercept_)
