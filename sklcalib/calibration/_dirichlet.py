"""Dirichlet calibration with ODIR regularisation (Kull et al., 2019)."""

import numpy as np

from ._base import PROBABILITIES, BaseCalibrator, check_params, softmax_rows
from ._scaling import _minimise, _nll_and_logit_grad, normalised_weights

#: log p is taken of p clipped to this: the smallest positive normal float64.
_TINY = np.finfo(np.float64).tiny


def _log_probabilities(scores):
    """log p of (n, K) probabilities, or of [1 - p, p] for one binary column."""
    if scores.shape[1] == 1:
        scores = np.hstack([1.0 - scores, scores])
    return np.log(np.maximum(scores, _TINY))


def odir_objective(log_p, y_idx, reg_lambda, reg_mu, weights=None):
    """``params -> (loss, gradient)`` of the ODIR-penalised NLL.

    ``params`` is ``W`` (K x K, row-major) followed by ``b`` (K). The loss is
    ``mean NLL of softmax(log_p W^T + b) + reg_lambda / (K (K - 1)) *
    sum_{i != j} W_ij^2 + reg_mu / K * sum_j b_j^2``; ``weights`` (summing
    to 1) make the mean a weighted one.
    """
    k = log_p.shape[1]
    off_diagonal = ~np.eye(k, dtype=bool)
    scale_w = reg_lambda / (k * (k - 1))
    scale_b = reg_mu / k

    def fun(params):
        W, b = params[: k * k].reshape(k, k), params[k * k :]
        nll, g = _nll_and_logit_grad(log_p @ W.T + b, y_idx, weights)
        W_off = W * off_diagonal
        loss = nll + scale_w * np.sum(W_off**2) + scale_b * np.sum(b**2)
        grad_W = g.T @ log_p + 2.0 * scale_w * W_off
        grad_b = g.sum(axis=0) + 2.0 * scale_b * b
        return loss, np.concatenate([grad_W.ravel(), grad_b])

    return fun


class DirichletCalibrator(BaseCalibrator):
    """Dirichlet calibration: ``softmax(W log p + b)`` (Kull et al., 2019).

    A full linear map of the log-probabilities, fitted by minimising the
    mean NLL of the calibration data plus the ODIR penalty ("off-diagonal
    and intercept regularisation") of Kull et al.:
    ``reg_lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + reg_mu / K *
    sum_j b_j^2``. The fit is L-BFGS with the analytic gradient in float64,
    starting from the identity map (W = I, b = 0). ``log p`` is taken of p
    clipped to the smallest positive normal float64, so zero probabilities
    stay finite.

    Parameters
    ----------
    reg_lambda : float, default=1e-3
        Strength of the penalty on the off-diagonal entries of W (>= 0).
    reg_mu : float or None, default=None
        Strength of the penalty on the intercept b (>= 0); None means
        ``reg_mu = reg_lambda``.
    max_iter : int, default=1000
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-8
        L-BFGS tolerance on the projected gradient.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix W.
    intercept_ : ndarray of shape (n_classes,)
        The intercept b.
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

    def __init__(self, reg_lambda=1e-3, reg_mu=None, max_iter=1000, tol=1e-8):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self):
        check_params("reg_lambda", self.reg_lambda, low=0)
        if self.reg_mu is not None:
            check_params("reg_mu", self.reg_mu, low=0)
        check_params("max_iter", self.max_iter, low=1, integer=True)
        check_params("tol", self.tol, low=0)

    def _fit(self, scores, y_idx, sample_weight=None):
        log_p = _log_probabilities(scores)
        k = log_p.shape[1]
        reg_mu = self.reg_lambda if self.reg_mu is None else self.reg_mu
        fun = odir_objective(
            log_p, y_idx, self.reg_lambda, reg_mu, normalised_weights(sample_weight)
        )
        x0 = np.r_[np.eye(k).ravel(), np.zeros(k)]
        params = _minimise(fun, x0, self.max_iter, self.tol, "DirichletCalibrator")
        self.coef_ = params[: k * k].reshape(k, k)
        self.intercept_ = params[k * k :]

    def _predict_proba(self, scores):
        return softmax_rows(_log_probabilities(scores) @ self.coef_.T + self.intercept_)
