"""Structured matrix and vector scaling (SMS, SVS; Berta et al., 2026).

Both calibrators follow the authors' recipe (``probmetrics`` 1.3): the logits
are first temperature-scaled (exact NLL minimum), the result is mixed with the
uniform distribution with weight ``1 / (n + 1)`` and turned back into logits
``x = log q``; then an affine map of ``x`` is fitted by penalised NLL, the
penalty pulling it towards the identity (towards the temperature-scaled
model) with strengths that shrink like ``1 / n``.

The penalised NLL is convex and has at most K (K + 1) parameters, so it is
minimised by exact Newton steps with a backtracking line search (float64,
the shared ``sklcalib._utils._solvers``), where the authors use BFGS in
float32 (torchmin): neither scipy nor scikit-learn offers multinomial
logistic regression with an offset, per-parameter ridge strengths and a
non-zero centre, and a Newton step converges in a handful of passes over the
data.

Sample weights are frequency weights: n is their sum, so the mixing weight
and the penalties see ``sum(w)`` rows, and a fit whose weights sum to far
fewer rows than carry weight warns (weights normalised to sum to 1 would make
``eps = 1 / 2`` and the penalties n times stronger).
"""

from typing import ClassVar

import numpy as np
from scipy.special import log_softmax

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._solvers import minimise, ridge_penalised, warn_not_converged

from ._base import (
    FINITE,
    LOGITS,
    NON_NEGATIVE,
    SOLVER_CONSTRAINTS,
    BaseCalibrator,
    binary_logits,
    softmax_rows,
)
from ._logistic import mean_weights, multinomial_objective, vector_objective
from ._temperature_nll import fit_temperature_nll

#: the SMS Hessian costs n (K (K + 1))^2; above this many rows it is taken on
#: an evenly strided subsample (the gradient and the loss stay exact)
HESSIAN_ROWS = 16384


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


class _StructuredScaler(BaseCalibrator):
    """Steps 1 and 2 of SMS and SVS, the penalised fit of step 3 and the
    prediction; a subclass gives the affine map's penalised NLL
    (``_objective``), stores its parameters (``_store``) and applies the map
    (``_affine``)."""

    _input = LOGITS
    _parameter_constraints: ClassVar[dict] = {
        "lambda_intercept": [NON_NEGATIVE],
        "lambda_diagonal": [NON_NEGATIVE],
        "rho": [FINITE],
        "tau": [FINITE],
        **SOLVER_CONSTRAINTS,
    }

    def _sample_size_term(self):
        return (
            "the uniform mixing weight 1 / (n + 1) and the ridge strengths "
            "(proportional to 1 / n^tau)"
        )

    def _fit(self, scores, y_idx, sample_weight=None):
        self.temperature_, self.epsilon_, x, weights, n = _prepare(
            scores, y_idx, sample_weight
        )
        nll, strengths, centre = self._objective(x, y_idx, weights, n)
        fun = ridge_penalised(nll, strengths, centre)
        theta, self.n_iter_, converged = minimise(fun, centre, self.max_iter, self.tol)
        if not converged:
            warn_not_converged(
                type(self).__name__,
                self.max_iter,
                "; increase max_iter or the lambda_* penalties.",
                lbfgs=True,
            )
        self._store(theta, x.shape[1])

    def _predict_proba(self, scores):
        x = mixed_log_probabilities(
            binary_logits(scores), self.temperature_, self.epsilon_
        )
        return softmax_rows(self._affine(x))


@fill_doc
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
    %(structured_scaler_stopping)s

    Attributes
    ----------
    %(structured_scaler_steps_1_2)s
    %(matrix_coef)s
    %(structured_scaler_intercept_and_steps)s
    %(fitted_score_inputs)s

    See Also
    --------
    SVSCalibrator : The same recipe with a diagonal W (cheaper for many
        classes).
    MatrixScaler : Plain matrix scaling of the logits.

    Notes
    -----
    %(structured_scaler_weights_note)s

    The fit agrees with ``probmetrics.calibrators.SMSCalibrator`` (fed
    ``softmax(z)``) to a few 1e-3 in probability (at most 6e-3 in
    ``benchmarks/bench_leaders.py`` on 1e4 x 10 logits): probmetrics works in
    float32 and stops BFGS at torchmin's default tolerance, so its penalised
    NLL is never lower than ours (tests/test_leaders_sms.py). On 1e5 x 10
    logits the fit takes about 0.4 s of CPU time on one thread.

    References
    ----------
    %(sms_reference)s

    Examples
    --------
    >>> from sklcalib.calibration import SMSCalibrator
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(600, 4, temperature=3)
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

    _parameter_constraints: ClassVar[dict] = {
        **_StructuredScaler._parameter_constraints,
        "lambda_off_diagonal": [NON_NEGATIVE],
    }

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
        nll = multinomial_objective(features, y_idx, weights, k, HESSIAN_ROWS)
        return nll, strengths, centre

    def _store(self, theta, k):
        params = theta.reshape(k, k + 1)
        self.coef_, self.intercept_ = params[:, :k], params[:, k]

    def _affine(self, x):
        return x @ self.coef_.T + self.intercept_


@fill_doc
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
    %(structured_scaler_stopping)s

    Attributes
    ----------
    %(structured_scaler_steps_1_2)s
    coef_ : ndarray of shape (n_classes,)
        The per-class scale v.
    %(structured_scaler_intercept_and_steps)s
    %(fitted_score_inputs)s

    See Also
    --------
    SMSCalibrator : The same recipe with a full matrix.
    VectorScaler : Plain vector scaling of the logits.

    Notes
    -----
    %(structured_scaler_weights_note)s

    References
    ----------
    %(sms_reference)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import SVSCalibrator
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(600, 4, temperature=3)
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
        nll = vector_objective(x, y_idx, weights)
        return nll, strengths, centre

    def _store(self, theta, k):
        self.coef_, self.intercept_ = theta[:k], theta[k:]

    def _affine(self, x):
        return x * self.coef_ + self.intercept_
