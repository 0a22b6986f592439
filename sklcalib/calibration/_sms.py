"""Structured matrix and vector scaling (SMS, SVS; Berta et al., 2026).

Both calibrators follow the authors' recipe (``probmetrics`` 1.3): the logits
are first temperature-scaled (exact NLL minimum), the result is mixed with the
uniform distribution with weight ``1 / (n + 1)`` and turned back into logits
``x = log q``; then an affine map of ``x`` is fitted by penalised NLL, the
penalty pulling it towards the identity (towards the temperature-scaled
model) with strengths that shrink like ``1 / n``.

The penalised NLL is convex and has at most K (K + 1) parameters, so it is
minimised by exact Newton steps with a backtracking line search (float64),
where the authors use BFGS in float32 (torchmin). We write the solver
ourselves because neither scipy nor scikit-learn offers multinomial logistic
regression with an offset, per-parameter ridge strengths and a non-zero
centre, and a Newton step converges in a handful of passes over the data.
"""

import warnings

import numpy as np
from scipy.optimize import minimize as scipy_minimize
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning

from sklcalib._utils._validation import check_scalar, check_solver_params

from ._base import LOGITS, BaseCalibrator, binary_logits, softmax_rows
from ._scaling import mean_weights, nll_terms
from ._temperature import fit_temperature_nll

#: Newton stops once the decrease it predicts is below this relative size
_ROUND_OFF = 8 * np.finfo(np.float64).eps

#: rows per block when the Hessian is accumulated (bounds the memory used)
_BLOCK = 8192
#: the SMS Hessian costs n (K (K + 1))^2; above this many rows it is taken on
#: an evenly strided subsample (the gradient and the loss stay exact), which
#: keeps each Newton step cheap and the convergence fast (linear with a small
#: rate instead of quadratic)
HESSIAN_ROWS = 16384


def newton_minimise(fun, theta, max_iter, tol):
    """``(theta, n_iter, converged)`` minimising a smooth convex ``fun``.

    ``fun(theta, order)`` returns the loss (``order=0``), the loss and its
    gradient (``order=1``) or the loss, its gradient and its Hessian
    (``order=2``), all for the flattened parameters.
    Newton steps with a backtracking (Armijo) line search; stops when the
    largest gradient entry is at most ``tol``, when the decrease a Newton
    step predicts is below the round-off of the loss, or when no decrease is
    left.
    """
    theta = np.asarray(theta, dtype=np.float64).ravel().copy()
    loss, grad, hess = fun(theta, 2)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        if np.max(np.abs(grad)) <= tol:
            return theta, n_iter - 1, True
        # softmax ignores a shift shared by all classes: without penalty the
        # Hessian is singular along it; a tiny ridge picks the short step
        ridge = 1e-12 * max(np.trace(hess), 1.0)
        hess[np.diag_indices_from(hess)] += ridge
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(hess, grad, rcond=None)[0]
        slope = float(np.dot(grad, step))
        if slope >= 0:  # not a descent direction: fall back on the gradient
            step, slope = -grad, -float(np.dot(grad, grad))
        elif -slope <= _ROUND_OFF * max(abs(loss), 1.0):
            # the Newton decrement: the decrease left is below the rounding
            # of the loss (ill-conditioned features keep the gradient a little
            # above tol even at the minimum)
            return theta + step, n_iter, True
        # the full step is almost always taken: evaluate it with its
        # derivatives at once, and backtrack (loss only) when it is not
        new = fun(theta + step, 2)
        if new[0] <= loss + 1e-4 * slope:
            theta = theta + step
            loss, grad, hess = new
            continue
        t = 0.5
        while True:  # backtracking (Armijo) line search
            new_loss = fun(theta + t * step, 0)
            if new_loss <= loss + 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        if t < 1e-10:  # no decrease left: at the minimum up to rounding
            return theta, n_iter, True
        theta = theta + t * step
        loss, grad, hess = fun(theta, 2)
    return theta, n_iter, bool(np.max(np.abs(grad)) <= tol)


def ridge_penalised(fun, strengths, centre):
    """``fun`` (as :func:`newton_minimise` takes it) plus the ridge penalty
    ``sum_j strengths_j (theta_j - centre_j)^2`` and its derivatives."""

    def penalised(theta, order):
        delta = theta - centre
        penalty = np.dot(strengths, delta**2)
        if order == 0:
            return fun(theta, 0) + penalty
        loss, grad, *hess = fun(theta, order)
        grad = grad + 2.0 * strengths * delta
        if order == 1:
            return loss + penalty, grad
        hess = hess[0]
        hess[np.diag_indices_from(hess)] += 2.0 * strengths
        return loss + penalty, grad, hess

    return penalised


#: above this many parameters (SMS from 31 classes, SVS from 501) the
#: (parameters x parameters) Hessian is too large to form: L-BFGS instead, as
#: the authors switch from BFGS to L-BFGS at the same size
NEWTON_MAX_PARAMS = 1000


def minimise(fun, theta, max_iter, tol):
    """``(theta, n_iter, converged)``: Newton up to ``NEWTON_MAX_PARAMS``
    parameters, scipy's L-BFGS (``fun(theta, 1)``: loss and gradient, at most
    ``20 * max_iter`` iterations) above."""
    if theta.size <= NEWTON_MAX_PARAMS:
        return newton_minimise(fun, theta, max_iter, tol)
    result = scipy_minimize(
        lambda t: fun(t, 1),
        theta,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 20 * max_iter, "gtol": tol, "ftol": 1e-15},
    )
    converged = bool(result.success) or np.max(np.abs(result.jac)) <= max(tol, 1e-6)
    return result.x, int(result.nit), converged


def mixed_log_probabilities(logits, temperature, epsilon):
    """``log((1 - eps) softmax(z / T) + eps / K)``, computed stably."""
    k = logits.shape[1]
    log_p = log_softmax(logits / temperature, axis=1)
    return np.logaddexp(np.log1p(-epsilon) + log_p, np.log(epsilon / k))


def _prepare(scores, y_idx, sample_weight):
    """Temperature, mixture weight, mixed log-probabilities and weights."""
    z = binary_logits(scores)
    temperature = fit_temperature_nll(z, y_idx, sample_weight=sample_weight)
    n = len(y_idx) if sample_weight is None else float(sample_weight.sum())
    epsilon = 1.0 / (n + 1.0)
    x = mixed_log_probabilities(z, temperature, epsilon)
    weights = mean_weights(sample_weight, len(y_idx))
    return temperature, epsilon, x, weights, n


def _warn(name, max_iter):
    warnings.warn(
        f"{name} did not converge in max_iter={max_iter} Newton steps (or "
        f"{20 * max_iter} L-BFGS iterations); "
        "increase max_iter or the lambda_* penalties.",
        ConvergenceWarning,
        stacklevel=4,
    )


class _StructuredScaler(BaseCalibrator):
    """Steps 1 and 2 of SMS and SVS, the penalised fit of step 3 and the
    prediction; a subclass gives the affine map's penalised NLL
    (``_objective``), stores its parameters (``_store``) and applies the map
    (``_affine``)."""

    _input = LOGITS

    def _check_params(self):
        check_scalar(self.lambda_intercept, "lambda_intercept", low=0)
        check_scalar(self.lambda_diagonal, "lambda_diagonal", low=0)
        check_scalar(self.rho, "rho")
        check_scalar(self.tau, "tau")
        check_solver_params(self.max_iter, self.tol)

    def _fit(self, scores, y_idx, sample_weight=None):
        self.temperature_, self.epsilon_, x, weights, n = _prepare(
            scores, y_idx, sample_weight
        )
        nll, strengths, centre = self._objective(x, y_idx, weights, n)
        fun = ridge_penalised(nll, strengths, centre)
        theta, self.n_iter_, converged = minimise(fun, centre, self.max_iter, self.tol)
        if not converged:
            _warn(type(self).__name__, self.max_iter)
        self._store(theta, x.shape[1])

    def _predict_proba(self, scores):
        x = mixed_log_probabilities(
            binary_logits(scores), self.temperature_, self.epsilon_
        )
        return softmax_rows(self._affine(x))


class SMSCalibrator(_StructuredScaler):
    """Structured matrix scaling (SMS; Berta, Holzmüller, Jordan & Bach, 2026).

    Matrix scaling ``softmax(W x + b)`` made safe for small calibration sets
    and many classes by the authors' structure and regularisation:

    1. temperature scaling of the logits ``z`` (exact NLL minimum, ``T``);
    2. a mixture with the uniform distribution, ``q = (1 - eps) softmax(z / T)
       + eps / K`` with ``eps = 1 / (n + 1)``, and ``x = log q``;
    3. ``W`` and ``b`` minimising the mean NLL of ``softmax(W x + b)`` plus
       ridge penalties pulling the map towards the identity:
       ``lambda_intercept K^rho / n^tau * sum_j b_j^2``,
       ``lambda_diagonal K^rho / n^tau * sum_j (W_jj - 1)^2`` and
       ``lambda_off_diagonal (K (K - 1))^rho / n^tau * sum_{i != j} W_ij^2``.

    The defaults are those of ``probmetrics`` 1.3 (``get_calibrator("sms")``),
    the leader of the CalArena benchmark on multiclass problems. Step 3 is
    solved by exact Newton steps with a line search in float64, starting
    from ``W = I, b = 0``.

    Parameters
    ----------
    lambda_intercept : float, default=1.0
        Penalty scale of the intercept b (>= 0).
    lambda_diagonal : float, default=1.0
        Penalty scale of the diagonal of W - I (>= 0).
    lambda_off_diagonal : float, default=1.0
        Penalty scale of the off-diagonal entries of W (>= 0).
    rho : float, default=1.0
        Exponent of the number of classes (or of class pairs) in the penalty
        strengths.
    tau : float, default=1.0
        Exponent of the number of samples n in the penalty strengths; with
        the default, each penalty is worth a fixed number of samples.
    max_iter : int, default=100
        Maximum number of Newton steps. Above 1000 parameters (more than 30
        classes for SMS, more than 500 for SVS) the Hessian is too large to
        form and L-BFGS runs instead, for at most ``20 * max_iter``
        iterations.
    tol : float, default=1e-8
        Stop when the largest entry of the gradient of the penalised mean NLL
        is at most ``tol``.

    Attributes
    ----------
    temperature_ : float
        Temperature of step 1.
    epsilon_ : float
        Weight of the uniform distribution in step 2, ``1 / (n + 1)``.
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix W.
    intercept_ : ndarray of shape (n_classes,)
        The intercept b.
    n_iter_ : int
        Number of Newton steps (or L-BFGS iterations) taken.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of score columns seen in ``fit``.

    See Also
    --------
    SVSCalibrator : The same recipe with a diagonal W (cheaper for many
        classes).
    MatrixScaler : Plain matrix scaling of the logits.

    Notes
    -----
    With ``sample_weight``, n is the sum of the weights and the NLL a
    weighted mean, so integer weights give the fit of repeated rows. Binary
    decision scores s of shape (n,) or (n, 1) are the logits [0, s].

    The fit agrees with ``probmetrics.calibrators.SMSCalibrator`` (fed
    ``softmax(z)``) to a few 1e-3 in probability (at most 6e-3 in
    ``benchmarks/bench_leaders.py`` on 1e4 x 10 logits): probmetrics works in
    float32 and stops BFGS at torchmin's default tolerance, so its penalised
    NLL is never lower than ours (tests/test_leaders_sms.py). On 1e5 x 10
    logits the fit takes about 0.4 s of CPU time on one thread.

    References
    ----------
    E. Berta, D. Holzmüller, M. I. Jordan and F. Bach. Structured matrix
    scaling for multi-class calibration. AISTATS, 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from sklcalib.calibration import SMSCalibrator
    >>> rng = np.random.default_rng(0)
    >>> logits = 3 * rng.normal(size=(600, 4))
    >>> y = np.array([rng.choice(4, p=q) for q in softmax(logits / 3, axis=1)])
    >>> sms = SMSCalibrator().fit(logits, y)
    >>> bool(2.5 < sms.temperature_ < 3.5)  # over-confident logits cooled first
    True
    >>> sms.predict_proba(logits[:2]).sum(axis=1)
    array([1., 1.])
    """

    def __init__(
        self,
        lambda_intercept=1.0,
        lambda_diagonal=1.0,
        lambda_off_diagonal=1.0,
        rho=1.0,
        tau=1.0,
        max_iter=100,
        tol=1e-8,
    ):
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal
        self.lambda_off_diagonal = lambda_off_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self):
        super()._check_params()
        check_scalar(self.lambda_off_diagonal, "lambda_off_diagonal", low=0)

    def _objective(self, x, y_idx, weights, n):
        n_rows, k = x.shape
        scale = k**self.rho / n**self.tau
        # per-parameter ridge strengths of [W | b] and its centre [I | 0]
        strengths = np.full(
            (k, k + 1),
            self.lambda_off_diagonal * (k * (k - 1)) ** self.rho / n**self.tau,
        )
        strengths[np.arange(k), np.arange(k)] = self.lambda_diagonal * scale
        strengths[:, k] = self.lambda_intercept * scale
        strengths = strengths.ravel()
        centre = np.hstack([np.eye(k), np.zeros((k, 1))]).ravel()
        features = np.hstack([x, np.ones((n_rows, 1))])  # (n, K + 1)

        def nll(theta, order):
            params = theta.reshape(k, k + 1)
            if order == 0:
                return nll_terms(features @ params.T, y_idx, weights, 0)
            loss, proba, residual = nll_terms(features @ params.T, y_idx, weights)
            grad = (residual.T @ features).ravel()
            if order == 1:
                return loss, grad
            rows = slice(None, None, max(1, n_rows // HESSIAN_ROWS))
            sub = weights[rows]
            hess = _multinomial_hessian(features[rows], proba[rows], sub / sub.sum())
            return loss, grad, hess

        return nll, strengths, centre

    def _store(self, theta, k):
        params = theta.reshape(k, k + 1)
        self.coef_, self.intercept_ = params[:, :k], params[:, k]

    def _affine(self, x):
        return x @ self.coef_.T + self.intercept_


def _multinomial_hessian(features, proba, weights):
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


class SVSCalibrator(_StructuredScaler):
    """Structured vector scaling (SVS; Berta, Holzmüller, Jordan & Bach, 2026).

    Vector scaling ``softmax(v * x + b)`` in the structured, regularised form
    of the SMS paper:

    1. temperature scaling of the logits ``z`` (exact NLL minimum, ``T``);
    2. a mixture with the uniform distribution, ``q = (1 - eps) softmax(z / T)
       + eps / K`` with ``eps = 1 / (n + 1)``, and ``x = log q``;
    3. ``v`` and ``b`` minimising the mean NLL of ``softmax(v * x + b)`` plus
       ``lambda_intercept K^rho / n^tau * sum_j b_j^2`` and
       ``lambda_diagonal K^rho / n^tau * sum_j (v_j - 1)^2``.

    The defaults are those of ``probmetrics`` 1.3 (``get_calibrator("svs")``),
    second to SMS on CalArena's multiclass problems and much cheaper for many
    classes (2 K parameters instead of K (K + 1)). Step 3 is solved by exact
    Newton steps with a line search in float64, starting from ``v = 1,
    b = 0``.

    Parameters
    ----------
    lambda_intercept : float, default=1.0
        Penalty scale of the intercept b (>= 0).
    lambda_diagonal : float, default=1.0
        Penalty scale of v - 1 (>= 0).
    rho : float, default=1.0
        Exponent of the number of classes in the penalty strengths.
    tau : float, default=1.0
        Exponent of the number of samples n in the penalty strengths.
    max_iter : int, default=100
        Maximum number of Newton steps. Above 1000 parameters (more than 30
        classes for SMS, more than 500 for SVS) the Hessian is too large to
        form and L-BFGS runs instead, for at most ``20 * max_iter``
        iterations.
    tol : float, default=1e-8
        Stop when the largest entry of the gradient of the penalised mean NLL
        is at most ``tol``.

    Attributes
    ----------
    temperature_ : float
        Temperature of step 1.
    epsilon_ : float
        Weight of the uniform distribution in step 2, ``1 / (n + 1)``.
    coef_ : ndarray of shape (n_classes,)
        The per-class scale v.
    intercept_ : ndarray of shape (n_classes,)
        The intercept b.
    n_iter_ : int
        Number of Newton steps (or L-BFGS iterations) taken.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of score columns seen in ``fit``.

    See Also
    --------
    SMSCalibrator : The same recipe with a full matrix.
    VectorScaler : Plain vector scaling of the logits.

    Notes
    -----
    With ``sample_weight``, n is the sum of the weights and the NLL a
    weighted mean, so integer weights give the fit of repeated rows. Binary
    decision scores s of shape (n,) or (n, 1) are the logits [0, s].

    References
    ----------
    E. Berta, D. Holzmüller, M. I. Jordan and F. Bach. Structured matrix
    scaling for multi-class calibration. AISTATS, 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from sklcalib.calibration import SVSCalibrator
    >>> rng = np.random.default_rng(0)
    >>> logits = 3 * rng.normal(size=(600, 4))
    >>> y = np.array([rng.choice(4, p=q) for q in softmax(logits / 3, axis=1)])
    >>> svs = SVSCalibrator().fit(logits, y)
    >>> svs.coef_.shape
    (4,)
    >>> svs.predict(logits[:3]) == np.argmax(logits[:3], axis=1)
    array([ True,  True,  True])
    """

    def __init__(
        self,
        lambda_intercept=1.0,
        lambda_diagonal=1.0,
        rho=1.0,
        tau=1.0,
        max_iter=100,
        tol=1e-8,
    ):
        self.lambda_intercept = lambda_intercept
        self.lambda_diagonal = lambda_diagonal
        self.rho = rho
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol

    def _objective(self, x, y_idx, weights, n):
        k = x.shape[1]
        scale = k**self.rho / n**self.tau
        strengths = np.r_[
            np.full(k, self.lambda_diagonal * scale),
            np.full(k, self.lambda_intercept * scale),
        ]
        centre = np.r_[np.ones(k), np.zeros(k)]

        def nll(theta, order):
            v, b = theta[:k], theta[k:]
            if order == 0:
                return nll_terms(x * v + b, y_idx, weights, 0)
            loss, proba, residual = nll_terms(x * v + b, y_idx, weights)
            grad = np.r_[np.einsum("ij,ij->j", residual, x), residual.sum(axis=0)]
            if order == 1:
                return loss, grad
            # parameters (v_c, b_c) see the features f_ic = (x_ic, 1)
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

        return nll, strengths, centre

    def _store(self, theta, k):
        self.coef_, self.intercept_ = theta[:k], theta[k:]

    def _affine(self, x):
        return x * self.coef_ + self.intercept_
