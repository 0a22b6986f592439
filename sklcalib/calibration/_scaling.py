"""Vector, matrix and Platt scaling: affine maps of logits fitted on NLL."""

import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from sklcalib._utils._validation import (
    any_dask,
    as_numpy,
    check_scalar,
    check_solver_params,
)

from ._base import LOGITS, BaseCalibrator, binary_logits, softmax_rows


def nll_terms(logits, y_idx, weights, order=2):
    """Weighted mean NLL of softmax(logits) and (``order > 0``) the
    probabilities and the residual ``w_i (p_i - e_{y_i})``, the gradient of
    the NLL in the logits.

    ``weights`` sum to 1 (:func:`mean_weights`). In place on ``logits`` (a
    fresh product of the caller), which saves passes over an (n, K) array on
    large inputs.
    """
    rows = np.arange(len(y_idx))
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    total = exp.sum(axis=1)
    nll = np.dot(weights, np.log(total) - logits[rows, y_idx])
    if order == 0:
        return nll
    exp /= total[:, None]
    residual = exp * weights[:, None]
    residual[rows, y_idx] -= weights
    return nll, exp, residual


def _nll_and_logit_grad(new_logits, y_idx, weights):
    """Mean NLL of softmax(new_logits) and its gradient in new_logits."""
    nll, _, grad = nll_terms(new_logits, y_idx, weights)
    return nll, grad


def normalised_weights(sample_weight):
    """Weights summing to 1 (None stays None: the plain mean)."""
    return None if sample_weight is None else sample_weight / sample_weight.sum()


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


class BinaryOnlyMixin:
    """``fit`` refuses targets with more than two classes, naming the type.

    ``_multiclass_hint`` names the calibrators to use instead.
    """

    _multiclass_hint = (
        "use SMSCalibrator or SVSCalibrator for multiclass logits, "
        "SplineCalibrator for one-vs-rest calibration"
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, sample_weight=None):
        """Fit the calibrator on held-out binary scores.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores of the positive class ``classes_[1]``, or two columns.
        y : array-like of shape (n_samples,)
            Binary targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights (an integer weight is the same as
            repeating the row); None weights every sample 1.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        if not any_dask(X, y, sample_weight) and y is not None:
            y = as_numpy(y)  # a torch tensor of targets, detached
            y_type = type_of_target(y, input_name="y", raise_unknown=True)
            if y_type not in ("binary", "multiclass"):
                check_classification_targets(y)  # its message for other targets
            if y_type != "binary":
                raise ValueError(
                    f"Only binary classification is supported by "
                    f"{type(self).__name__}. The type of the target is {y_type}; "
                    f"{self._multiclass_hint}."
                )
        return super().fit(X, y, sample_weight)


def _minimise(fun, x0, max_iter, tol, name):
    # L-BFGS with the analytic gradient: smooth, convex (vector scaling,
    # matrix scaling) problems of a few hundred parameters at most.
    result = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        # ftol off: stop on the gradient (tol), not on a stalling loss
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15},
    )
    if not result.success:
        warnings.warn(
            f"{name} did not converge in max_iter={max_iter} iterations "
            f"({result.message}); increase max_iter, or reg for MatrixScaler.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return result.x


class VectorScaler(BaseCalibrator):
    """Vector scaling: ``softmax(w * z + b)`` with a scale and a bias per class.

    Fitted by minimising the NLL of the calibration data with L-BFGS (analytic
    gradient, float64), starting from the identity map.

    Parameters
    ----------
    max_iter : int, default=1000
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-8
        L-BFGS tolerance on the projected gradient.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes,)
        Per-class scale w.
    intercept_ : ndarray of shape (n_classes,)
        Per-class bias b.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of score columns seen in ``fit``.

    Notes
    -----
    Binary decision scores s of shape (n,) or (n, 1) are the logits [0, s].

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import VectorScaler
    >>> rng = np.random.default_rng(0)
    >>> logits = 5 * rng.normal(size=(300, 3))
    >>> y = np.argmax(logits / 5 + rng.gumbel(size=(300, 3)), axis=1)
    >>> scaler = VectorScaler().fit(logits, y)
    >>> scaler.predict_proba(logits[:2]).sum(axis=1)
    array([1., 1.])
    """

    _input = LOGITS

    def __init__(self, max_iter=1000, tol=1e-8):
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self):
        check_solver_params(self.max_iter, self.tol)

    def _fit(self, scores, y_idx, sample_weight=None):
        z = binary_logits(scores)
        k = z.shape[1]
        weights = mean_weights(sample_weight, len(y_idx))

        def fun(params):
            w, b = params[:k], params[k:]
            nll, g = _nll_and_logit_grad(z * w + b, y_idx, weights)
            return nll, np.concatenate([np.einsum("ij,ij->j", g, z), g.sum(axis=0)])

        params = _minimise(
            fun, np.r_[np.ones(k), np.zeros(k)], self.max_iter, self.tol, "VectorScaler"
        )
        self.coef_, self.intercept_ = params[:k], params[k:]

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) * self.coef_ + self.intercept_)


class MatrixScaler(BaseCalibrator):
    """Matrix scaling: ``softmax(W z + b)`` with a full K x K matrix W.

    Fitted by minimising ``NLL + reg * sum of squared off-diagonal W_ij``
    with L-BFGS (analytic gradient, float64), starting from the identity map.
    The penalty on the off-diagonal terms (Kull et al., 2019, "ODIR" without
    the intercept term) keeps the K^2 parameters from over-fitting small
    calibration sets; ``reg=0`` is plain matrix scaling (Guo et al., 2017).

    Parameters
    ----------
    reg : float, default=0.0
        Strength of the L2 penalty on the off-diagonal entries of W.
    max_iter : int, default=1000
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-8
        L-BFGS tolerance on the projected gradient.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix W.
    intercept_ : ndarray of shape (n_classes,)
        The bias b.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of score columns seen in ``fit``.

    Notes
    -----
    Binary decision scores s of shape (n,) or (n, 1) are the logits [0, s].

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import MatrixScaler
    >>> rng = np.random.default_rng(0)
    >>> logits = 5 * rng.normal(size=(300, 3))
    >>> y = np.argmax(logits / 5 + rng.gumbel(size=(300, 3)), axis=1)
    >>> scaler = MatrixScaler(reg=1e-3).fit(logits, y)
    >>> scaler.coef_.shape
    (3, 3)
    """

    _input = LOGITS

    def __init__(self, reg=0.0, max_iter=1000, tol=1e-8):
        self.reg = reg
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self):
        check_scalar(self.reg, "reg", low=0)
        check_solver_params(self.max_iter, self.tol)

    def _fit(self, scores, y_idx, sample_weight=None):
        z = binary_logits(scores)
        k = z.shape[1]
        off_diagonal = ~np.eye(k, dtype=bool)
        weights = mean_weights(sample_weight, len(y_idx))

        def fun(params):
            W, b = params[: k * k].reshape(k, k), params[k * k :]
            nll, g = _nll_and_logit_grad(z @ W.T + b, y_idx, weights)
            W_off = W * off_diagonal
            loss = nll + self.reg * np.sum(W_off**2)
            grad_W = g.T @ z + 2.0 * self.reg * W_off
            return loss, np.concatenate([grad_W.ravel(), g.sum(axis=0)])

        x0 = np.r_[np.eye(k).ravel(), np.zeros(k)]
        params = _minimise(fun, x0, self.max_iter, self.tol, "MatrixScaler")
        self.coef_ = params[: k * k].reshape(k, k)
        self.intercept_ = params[k * k :]

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) @ self.coef_.T + self.intercept_)


class PlattScaler(BinaryOnlyMixin, BaseCalibrator):
    """Platt scaling of a binary score: ``P(classes_[1]) = sigmoid(a * s + b)``.

    Parameters
    ----------
    C : float, default=1e4
        Inverse strength of the L2 penalty on the slope ``a`` (the intercept is
        not penalised), as in scikit-learn's ``LogisticRegression``, which
        fits the two parameters by NLL. A weak penalty, not none, keeps ``a``
        finite when the calibration scores separate the classes perfectly.

    Attributes
    ----------
    coef_ : float
        The slope a.
    intercept_ : float
        The intercept b.
    classes_ : ndarray of shape (2,)
        Class labels.
    n_features_in_ : int
        Number of score columns seen in ``fit`` (1 or 2).

    Notes
    -----
    The score s is a 1-D array (or one column) of positive-class decision
    scores, or two columns of logits [z0, z1], in which case s = z1 - z0.
    Scores are standardised before the logistic regression (and ``a``, ``b``
    mapped back) so that scores of magnitude 1e4 are as well conditioned as
    scores of magnitude 1. Platt's (1999) smoothed targets are not used: the
    fit is the plain maximum likelihood one.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import PlattScaler
    >>> scores = np.array([-3.0, -1.0, -2.0, 1.0, 2.0, 3.0, 0.5, -0.5])
    >>> y = np.array([0, 0, 0, 1, 1, 1, 0, 1])
    >>> platt = PlattScaler().fit(scores, y)
    >>> platt.predict(scores)
    array([0, 0, 0, 1, 1, 1, 1, 0])
    """

    _input = LOGITS
    _multiclass_hint = (
        "use TemperatureScaler, VectorScaler or MatrixScaler for multiclass logits"
    )

    def __init__(self, C=1e4):
        self.C = C

    def _check_params(self):
        check_scalar(self.C, "C", low=0, low_open=True)

    def _fit(self, scores, y_idx, sample_weight=None):
        s = self._score(scores)
        # weighted moments: integer weights standardise like repeated rows
        center = np.average(s, weights=sample_weight)
        scale = np.sqrt(np.average((s - center) ** 2, weights=sample_weight))
        scale = scale if scale > 0 else 1.0
        model = LogisticRegression(C=self.C, tol=1e-10, max_iter=1000)
        model.fit(((s - center) / scale)[:, None], y_idx, sample_weight=sample_weight)
        a = model.coef_[0, 0] / scale
        self.coef_ = float(a)
        self.intercept_ = float(model.intercept_[0] - a * center)

    def _fit_dask(self, X, y, sample_weight):
        # dask is an optional extra: imported only once a dask array has arrived
        from sklcalib._utils._dask import map_row_blocks

        from ._streaming import prepare_fit

        X, y, w = prepare_fit(self, X, y, sample_weight)
        if len(self.classes_) != 2:
            raise ValueError(
                "Only binary classification is supported by PlattScaler. y holds "
                f"{len(self.classes_)} classes; use TemperatureScaler, "
                "VectorScaler or MatrixScaler for multiclass logits."
            )
        # mean and variance merged block by block (Chan et al.): stable where
        # sum(s^2) - n mean^2 would cancel
        n = mean = m2 = positives = 0.0
        for nb, mb, m2b, pb in map_row_blocks(_platt_moments, [X, y, w], self):
            delta = mb - mean
            total = n + nb
            mean += delta * nb / total
            m2 += m2b + delta * delta * n * nb / total
            n, positives = total, positives + pb
        center, scale = mean, np.sqrt(m2 / n)
        scale = scale if scale > 0 else 1.0
        C = float(self.C)

        # scikit-learn's LogisticRegression objective on the standardised score:
        # C * sum(log-loss) + a^2 / 2 (the intercept is not penalised)
        def evaluate(theta):
            sums = np.sum(
                map_row_blocks(_platt_sums, [X, y, w], self, center, scale, theta),
                axis=0,
            )
            loss = C * sums[0] + 0.5 * theta[0] ** 2
            grad = C * sums[1:3] + np.array([theta[0], 0.0])
            hess = C * np.array([[sums[3], sums[4]], [sums[4], sums[5]]])
            hess[0, 0] += 1.0
            return loss, grad, hess

        rate = min(max(positives / n, 1e-12), 1 - 1e-12)
        theta = np.array([0.0, logit(rate)])
        loss, grad, hess = evaluate(theta)
        for _ in range(100):
            step = -np.linalg.solve(hess, grad)
            if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(theta))):
                theta = theta + step  # quadratic convergence: this step is exact
                break
            slope = float(np.dot(grad, step))
            length = 1.0
            while True:  # backtracking (Armijo) keeps Newton safe far from the optimum
                candidate = theta + length * step
                new = evaluate(candidate)
                if new[0] <= loss + 1e-4 * length * slope or length < 1e-10:
                    break
                length /= 2
            theta = candidate
            loss, grad, hess = new
        a = theta[0] / scale
        self.coef_ = float(a)
        self.intercept_ = float(theta[1] - a * center)
        return self

    _score = staticmethod(binary_score)

    def _predict_proba(self, scores):
        t = self.coef_ * self._score(scores) + self.intercept_
        return softmax_rows(binary_logits(t))


# The per-block functions of PlattScaler's streaming fit: module-level, so that
# they reach the Dask workers by pickle.


def _platt_moments(X, y, w, estimator):
    """(weight, weighted mean, weighted sum of squared deviations, weighted
    positives) of the block's score; None for a block of zero weight."""
    X, y_idx, w = estimator._block_inputs(X, y, w)
    s = PlattScaler._score(X)
    total = float(s.shape[0]) if w is None else w.sum()
    if total == 0:
        return None
    mean = np.average(s, weights=w)
    squares = (s - mean) ** 2
    if w is None:
        return np.array([total, mean, squares.sum(), y_idx.sum()])
    return np.array([total, mean, np.dot(w, squares), np.dot(w, y_idx)])


def _platt_sums(X, y, w, estimator, center, scale, theta):
    """The block's (weighted) log-loss, its gradient and its Hessian terms."""
    X, y_idx, w = estimator._block_inputs(X, y, w)
    x = (PlattScaler._score(X) - center) / scale
    t = theta[0] * x + theta[1]
    sigma = expit(t)
    residual = sigma - y_idx
    curvature = sigma * (1.0 - sigma)
    loss = np.logaddexp(0.0, t) - y_idx * t
    if w is not None:  # scikit-learn's weighted objective: C * sum(w * loss)
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
