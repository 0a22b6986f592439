"""Vector, matrix and Platt scaling: affine maps of logits fitted on NLL."""

from typing import ClassVar

import numpy as np

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._solvers import minimise, ridge_penalised, warn_not_converged

from ._base import (
    LOGITS,
    POSITIVE,
    RIDGE_SOLVER_CONSTRAINTS,
    SOLVER_CONSTRAINTS,
    BaseCalibrator,
    BinaryOnlyMixin,
    binary_logits,
    softmax_rows,
)
from ._logistic import (
    binary_score,
    fit_platt,
    mean_weights,
    merge_moments,
    multinomial_objective,
    platt_moments,
    platt_sums,
    vector_objective,
)


@fill_doc
class VectorScaler(BaseCalibrator):
    """Vector scaling: ``softmax(w * z + b)`` with a scale and a bias per class.

    Fitted by minimising the (weighted) mean NLL of the calibration data by
    exact Newton steps with a line search (float64), starting from the
    identity map; above 1000 parameters (more than 500 classes) by L-BFGS.

    Parameters
    ----------
    max_iter : int, default=1000
        Maximum number of Newton steps (L-BFGS: ``20 * max_iter``
        iterations).
    tol : float, default=1e-8
        Stop when the largest entry of the gradient of the mean NLL is at
        most ``tol``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes,)
        Per-class scale w.
    intercept_ : ndarray of shape (n_classes,)
        Per-class bias b.
    %(logit_scaler_steps_and_notes)s

    Examples
    --------
    >>> from sklcalib.calibration import VectorScaler
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(temperature=5)  # over-confident
    >>> scaler = VectorScaler().fit(logits, y)
    >>> scaler.predict_proba(logits[:2]).sum(axis=1)
    array([1., 1.])
    """

    _input = LOGITS

    _parameter_constraints: ClassVar[dict] = {**SOLVER_CONSTRAINTS}

    def __init__(self, max_iter=1000, tol=1e-8):
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, scores, y_idx, sample_weight=None):
        z = binary_logits(scores)
        k = z.shape[1]
        nll = vector_objective(z, y_idx, mean_weights(sample_weight, len(y_idx)))
        start = np.r_[np.ones(k), np.zeros(k)]
        params, self.n_iter_, converged = minimise(nll, start, self.max_iter, self.tol)
        if not converged:
            warn_not_converged(
                "VectorScaler", self.max_iter, "; increase max_iter.", lbfgs=True
            )
        self.coef_, self.intercept_ = params[:k], params[k:]

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) * self.coef_ + self.intercept_)


@fill_doc
class MatrixScaler(BaseCalibrator):
    """Matrix scaling: ``softmax(W z + b)`` with a full K x K matrix W.

    Fitted by minimising ``mean NLL + reg * sum of squared off-diagonal W_ij``
    by exact Newton steps with a line search (float64), starting from the
    identity map; above 1000 parameters (more than 30 classes) by L-BFGS.
    The penalty on the off-diagonal terms (Kull et al., 2019, "ODIR" without
    the intercept term) keeps the K^2 parameters from over-fitting small
    calibration sets; ``reg=0`` is plain matrix scaling (Guo et al., 2017).

    Parameters
    ----------
    reg : float, default=0.0
        Strength of the L2 penalty on the off-diagonal entries of W (>= 0),
        against the mean NLL: it does not depend on the number of rows.
    max_iter : int, default=1000
        Maximum number of Newton steps (L-BFGS: ``20 * max_iter``
        iterations).
    tol : float, default=1e-8
        Stop when the largest entry of the gradient of the penalised mean NLL
        is at most ``tol``.

    Attributes
    ----------
    %(matrix_coef)s
    intercept_ : ndarray of shape (n_classes,)
        The bias b.
    %(logit_scaler_steps_and_notes)s

    Examples
    --------
    >>> from sklcalib.calibration import MatrixScaler
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(temperature=5)  # over-confident
    >>> scaler = MatrixScaler(reg=1e-3).fit(logits, y)
    >>> scaler.coef_.shape
    (3, 3)
    """

    _input = LOGITS

    _parameter_constraints: ClassVar[dict] = {**RIDGE_SOLVER_CONSTRAINTS}

    def __init__(self, reg=0.0, max_iter=1000, tol=1e-8):
        self.reg = reg
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, scores, y_idx, sample_weight=None):
        z = binary_logits(scores)
        k = z.shape[1]
        features = np.hstack([z, np.ones((len(z), 1))])  # [W | b] sees [z, 1]
        nll = multinomial_objective(
            features, y_idx, mean_weights(sample_weight, len(y_idx)), k
        )
        strengths = np.zeros((k, k + 1))
        strengths[:, :k] = self.reg * ~np.eye(k, dtype=bool)
        start = np.hstack([np.eye(k), np.zeros((k, 1))]).ravel()
        fun = ridge_penalised(nll, strengths.ravel(), np.zeros(start.size))
        params, self.n_iter_, converged = minimise(fun, start, self.max_iter, self.tol)
        if not converged:
            warn_not_converged(
                "MatrixScaler", self.max_iter, "; increase max_iter or reg.", lbfgs=True
            )
        params = params.reshape(k, k + 1)
        self.coef_, self.intercept_ = params[:, :k], params[:, k]

    def _predict_proba(self, scores):
        return softmax_rows(binary_logits(scores) @ self.coef_.T + self.intercept_)


@fill_doc
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
    %(fitted_binary_score_inputs)s

    Notes
    -----
    The score s is a 1-D array (or one column) of positive-class decision
    scores, or two columns of logits [z0, z1], in which case s = z1 - z0.
    Scores are standardised before the logistic regression (and ``a``, ``b``
    mapped back) so that scores of magnitude 1e4 are as well conditioned as
    scores of magnitude 1. Platt's (1999) smoothed targets are not used: the
    fit is the plain maximum likelihood one, by Newton steps with a line
    search on scikit-learn's ``LogisticRegression`` objective
    ``C * sum_i w_i log-loss_i + a^2 / 2``, in memory and on dask arrays
    alike (there each step is one pass over the row blocks). With
    ``sample_weight`` the sum is weighted, so the penalty counts against
    ``sum(w)`` rows, as in scikit-learn.

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

    _parameter_constraints: ClassVar[dict] = {"C": [POSITIVE]}

    def __init__(self, C=1e4):
        self.C = C

    _score = staticmethod(binary_score)

    def _fit(self, scores, y_idx, sample_weight=None):
        s = self._score(scores)
        moments = platt_moments(s, y_idx, sample_weight)

        def sums(center, scale, theta):
            return platt_sums(s, y_idx, sample_weight, center, scale, theta)

        self.coef_, self.intercept_ = fit_platt(sums, moments, float(self.C))

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
        # the in-memory fit, each of its sums one pass over the row blocks
        moments = merge_moments(map_row_blocks(_platt_moments, [X, y, w], self))

        def sums(center, scale, theta):
            blocks = map_row_blocks(_platt_sums, [X, y, w], self, center, scale, theta)
            return np.sum(blocks, axis=0)

        self.coef_, self.intercept_ = fit_platt(sums, moments, float(self.C))
        return self

    def _predict_proba(self, scores):
        t = self.coef_ * self._score(scores) + self.intercept_
        return softmax_rows(binary_logits(t))


# The per-block functions of PlattScaler's streaming fit: module-level, so that
# they reach the Dask workers by pickle.


def _platt_moments(X, y, w, estimator):
    X, y_idx, w = estimator._block_inputs(X, y, w)
    return platt_moments(PlattScaler._score(X), y_idx, w)


def _platt_sums(X, y, w, estimator, center, scale, theta):
    X, y_idx, w = estimator._block_inputs(X, y, w)
    return platt_sums(PlattScaler._score(X), y_idx, w, center, scale, theta)
