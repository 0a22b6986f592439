"""The logistic-regression objectives the calibrators minimise.

Platt, quadratic and beta scaling are binary logistic regressions on a few
features of one score; vector scaling, matrix scaling, Dirichlet calibration,
SMS and SVS are multinomial logistic regressions on the logits (or
log-probabilities). Each objective here is a *weighted mean* NLL with its
exact gradient and Hessian, in the form the shared minimisers take
(``fun(theta, order)``, see :mod:`sklcalib._utils._solvers`); the calibrators
add their penalties with :func:`~sklcalib._utils._solvers.ridge_penalised`.

This module holds no calibrator: every calibrator module imports its
numerics from here, from ``_temperature_nll`` and from ``sklcalib._utils``,
never from another calibrator module.
"""

import numpy as np
from scipy.special import expit

from sklcalib._utils._scores import logistic_nll, softmax_nll_terms
from sklcalib._utils._solvers import newton_minimise, ridge_penalised

#: what a binary logistic fit that stops at max_iter means (the slope grows
#: without bound on scores that separate the classes)
SEPARATED = (
    ": the classes are (nearly) separated by the scores; the probabilities are "
    "close to 0 and 1."
)
#: rows per block when the multinomial Hessian is accumulated (bounds memory)
_BLOCK = 8192


def mean_weights(sample_weight, n_samples):
    """Weights summing to 1 that make a sum the (weighted) mean: ``1 / n``
    each without ``sample_weight``."""
    if sample_weight is None:
        return np.full(n_samples, 1.0 / n_samples)
    return sample_weight / sample_weight.sum()


def binary_score(scores):
    """The binary logit s: the one score column, or ``z1 - z0`` of two."""
    if scores.shape[1] == 2:
        return scores[:, 1] - scores[:, 0]
    return scores[:, 0]


def binary_objective(features, y, weights):
    """Weighted mean NLL of ``sigmoid(features @ theta)``, labels ``y`` in
    {0, 1} as floats, ``weights`` summing to 1."""

    def nll(theta, order):
        t = features @ theta
        loss = np.dot(weights, logistic_nll(t, y))
        if order == 0:
            return loss
        p = expit(t)
        grad = features.T @ (weights * (p - y))
        if order == 1:
            return loss, grad
        hess = (features * (weights * p * (1.0 - p))[:, None]).T @ features
        return loss, grad, hess

    return nll


def fit_binary_logistic(features, y_idx, weights, strengths, max_iter, tol):
    """``(theta, n_iter, converged)`` of a ridge-penalised binary logistic
    regression: the weighted mean NLL of ``sigmoid(features @ theta)`` plus
    ``sum_j strengths_j theta_j^2``, by Newton steps from 0 (three parameters
    at most: the exact Hessian is free and the fit converges to round-off)."""
    nll = binary_objective(features, y_idx.astype(np.float64), weights)
    centre = np.zeros(features.shape[1])
    fun = ridge_penalised(nll, strengths, centre)
    return newton_minimise(fun, centre, max_iter, tol)


def multinomial_hessian(features, proba, weights):
    """Hessian of the weighted mean NLL of ``softmax(features @ theta.T)`` in
    the flattened (K, d) parameters: block (c, e) is
    ``sum_i w_i (p_ic [c = e] - p_ic p_ie) f_i f_i^T``."""
    n, d = features.shape
    k = proba.shape[1]
    hess = np.zeros((k * d, k * d))
    for start in range(0, n, _BLOCK):
        rows = slice(start, start + _BLOCK)
        f, p, w = features[rows], proba[rows], weights[rows]
        root = np.sqrt(w)[:, None]
        outer = (p[:, :, None] * (f * root)[:, None, :]).reshape(len(f), k * d)
        hess -= outer.T @ outer  # one symmetric rank-n update (BLAS syrk)
        wp = w[:, None] * p
        for c in range(k):
            block = slice(c * d, (c + 1) * d)
            hess[block, block] += (f * wp[:, c : c + 1]).T @ f
    return hess


def multinomial_objective(features, y_idx, weights, n_classes, hessian_rows=None):
    """Weighted mean NLL of ``softmax(features @ theta.T)``, ``theta`` the
    flattened (K, d) matrix (matrix scaling, Dirichlet calibration, SMS).

    The Hessian costs n (K d)^2; with ``hessian_rows``, inputs with more rows
    take it on an evenly strided subsample of about that many rows (the loss
    and the gradient stay exact): each Newton step stays cheap and the
    convergence fast (linear with a small rate instead of quadratic).
    """
    n_rows, d = features.shape
    k = n_classes

    def nll(theta, order):
        params = theta.reshape(k, d)
        if order == 0:
            return softmax_nll_terms(features @ params.T, y_idx, weights, 0)
        loss, proba, residual = softmax_nll_terms(features @ params.T, y_idx, weights)
        grad = (residual.T @ features).ravel()
        if order == 1:
            return loss, grad
        step = 1 if hessian_rows is None else max(1, n_rows // hessian_rows)
        rows = slice(None, None, step)
        sub = weights[rows]
        hess = multinomial_hessian(features[rows], proba[rows], sub / sub.sum())
        return loss, grad, hess

    return nll


def vector_objective(x, y_idx, weights):
    """Weighted mean NLL of ``softmax(v * x + b)``, ``theta = [v, b]``
    (vector scaling, SVS): 2 K parameters, the class-c pair seeing the
    features ``(x_ic, 1)``."""
    k = x.shape[1]

    def nll(theta, order):
        v, b = theta[:k], theta[k:]
        if order == 0:
            return softmax_nll_terms(x * v + b, y_idx, weights, 0)
        loss, proba, residual = softmax_nll_terms(x * v + b, y_idx, weights)
        grad = np.r_[np.einsum("ij,ij->j", residual, x), residual.sum(axis=0)]
        if order == 1:
            return loss, grad
        wp = weights[:, None] * proba
        a = np.concatenate([proba * x, proba], axis=1)  # (n, 2K)
        hess = -(a * weights[:, None]).T @ a
        diag_vv = np.einsum("ic,ic->c", wp, x * x)
        diag_vb = np.einsum("ic,ic->c", wp, x)
        idx = np.arange(k)
        hess[idx, idx] += diag_vv
        hess[idx, idx + k] += diag_vb
        hess[idx + k, idx] += diag_vb
        hess[idx + k, idx + k] += wp.sum(axis=0)
        return loss, grad, hess

    return nll


# Platt scaling, shared by the in-memory fit and the streaming one (which
# sums the same per-block quantities over the row blocks of a dask array).


def platt_moments(s, y_idx, w):
    """``(total weight, mean, sum of squared deviations, positives)`` of the
    score ``s`` (weighted by ``w``, or unit weights for None); None for a
    block of zero weight."""
    total = float(s.shape[0]) if w is None else float(w.sum())
    if total == 0:
        return None
    mean = np.average(s, weights=w)
    squares = (s - mean) ** 2
    if w is None:
        return np.array([total, mean, squares.sum(), y_idx.sum()])
    return np.array([total, mean, np.dot(w, squares), np.dot(w, y_idx)])


def merge_moments(parts):
    """:func:`platt_moments` of row blocks merged into those of all rows
    (Chan et al.'s update: stable where ``sum(s^2) - n mean^2`` cancels)."""
    n = mean = m2 = positives = 0.0
    for nb, mb, m2b, pb in parts:
        delta = mb - mean
        total = n + nb
        mean += delta * nb / total
        m2 += m2b + delta * delta * n * nb / total
        n, positives = total, positives + pb
    return n, mean, m2, positives


def platt_sums(s, y_idx, w, center, scale, theta):
    """The (weighted) sums of the log-loss of ``sigmoid(a x + b)`` on the
    standardised score ``x = (s - center) / scale`` and of its derivatives:
    ``[loss, d/da, d/db, d2/da2, d2/dadb, d2/db2]``."""
    x = (s - center) / scale
    t = theta[0] * x + theta[1]
    sigma = expit(t)
    residual = sigma - y_idx
    curvature = sigma * (1.0 - sigma)
    loss = logistic_nll(t, y_idx)
    if w is not None:
        loss, residual, curvature = loss * w, residual * w, curvature * w
    return np.array(
        [
            loss.sum(),
            np.dot(residual, x),
            residual.sum(),
            np.dot(curvature, x * x),
            np.dot(curvature, x),
            curvature.sum(),
        ]
    )


def fit_platt(sums, moments, C, max_iter=100, tol=1e-12):
    """``(slope, intercept)`` of Platt scaling on the raw score.

    Minimises scikit-learn's ``LogisticRegression`` objective on the
    standardised score, ``C * sum_i w_i log-loss_i + a^2 / 2`` (the intercept
    unpenalised), divided by ``C * sum(w)``: the weighted mean log-loss plus
    ``a^2 / (2 C sum(w))``, by Newton steps from ``(0, logit(positive
    rate))``. ``moments`` are the merged :func:`platt_moments`;
    ``sums(center, scale, theta)`` returns the :func:`platt_sums` of all rows
    (one pass over a dask array, or one numpy expression).
    """
    total, center, m2, positives = moments
    scale = np.sqrt(m2 / total)
    scale = scale if scale > 0 else 1.0
    ridge = 1.0 / (C * total)

    def fun(theta, order):
        s = sums(center, scale, theta) / total
        loss = s[0] + 0.5 * ridge * theta[0] ** 2
        if order == 0:
            return loss
        grad = np.array([s[1] + ridge * theta[0], s[2]])
        if order == 1:
            return loss, grad
        hess = np.array([[s[3] + ridge, s[4]], [s[4], s[5]]])
        return loss, grad, hess

    rate = min(max(positives / total, 1e-12), 1 - 1e-12)
    start = np.array([0.0, np.log(rate) - np.log1p(-rate)])
    theta, _, _ = newton_minimise(fun, start, max_iter, tol)
    slope = theta[0] / scale
    return float(slope), float(theta[1] - slope * center)
