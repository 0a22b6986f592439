"""The minimisers of sklcalib's smooth convex fits, one definition each.

- :func:`newton_minimise`: exact Newton steps with a backtracking (Armijo)
  line search, for the few-parameter problems of the logistic calibrators
  (Platt, quadratic, beta, vector, matrix, Dirichlet, SMS, SVS);
- :func:`lbfgs_minimise`: scipy's L-BFGS-B with the analytic gradient, for
  problems whose Hessian is too large to form;
- :func:`minimise`: Newton up to :data:`NEWTON_MAX_PARAMS` parameters, L-BFGS
  above;
- :func:`ridge_penalised`: an objective plus a ridge penalty towards a centre;
- :func:`bracketed_newton`: the safeguarded one-dimensional Halley/Newton
  iteration of a positive variable (the inverse temperature);
- :func:`warn_not_converged`: the ConvergenceWarning of a fit whose solver
  stopped at its iteration limit, in one wording.

An objective is a function ``fun(theta, order)`` of the flattened float64
parameters returning the loss (``order=0``), the loss and its gradient
(``order=1``), or the loss, its gradient and its Hessian (``order=2``).
"""

import warnings

import numpy as np
from scipy.optimize import minimize as scipy_minimize
from sklearn.exceptions import ConvergenceWarning

from ._validation import _outside_stacklevel

#: Newton stops once the decrease it predicts is below this relative size
_ROUND_OFF = 8 * np.finfo(np.float64).eps

#: above this many parameters the (parameters x parameters) Hessian is too
#: large to form: :func:`minimise` runs L-BFGS instead
NEWTON_MAX_PARAMS = 1000
#: :func:`minimise`'s L-BFGS gets this many iterations per Newton step allowed
LBFGS_ITER_PER_NEWTON = 20


def newton_minimise(fun, theta, max_iter, tol):
    """``(theta, n_iter, converged)`` minimising a smooth convex ``fun``.

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


def lbfgs_minimise(fun, theta, max_iter, tol):
    """``(theta, n_iter, converged)`` by scipy's L-BFGS-B on ``fun(theta, 1)``.

    Stops on the gradient (``gtol=tol``), not on a stalling loss; a run that
    ends with every gradient entry below ``max(tol, 1e-6)`` counts as
    converged even when scipy reports an abnormal line search (round-off at
    the minimum).
    """
    result = scipy_minimize(
        lambda t: fun(t, 1),
        np.asarray(theta, dtype=np.float64).ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15},
    )
    converged = bool(result.success) or np.max(np.abs(result.jac)) <= max(tol, 1e-6)
    return result.x, int(result.nit), converged


def minimise(fun, theta, max_iter, tol):
    """``(theta, n_iter, converged)``: Newton (:func:`newton_minimise`, at most
    ``max_iter`` steps) up to :data:`NEWTON_MAX_PARAMS` parameters, L-BFGS
    (:func:`lbfgs_minimise`, at most ``20 * max_iter`` iterations) above."""
    if np.size(theta) <= NEWTON_MAX_PARAMS:
        return newton_minimise(fun, theta, max_iter, tol)
    return lbfgs_minimise(fun, theta, LBFGS_ITER_PER_NEWTON * max_iter, tol)


def ridge_penalised(fun, strengths, centre):
    """``fun`` plus the ridge penalty ``sum_j strengths_j (theta_j -
    centre_j)^2`` and its derivatives."""

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


def _halley_step(x, grad, hess, third):
    """Halley's step, Newton's where Halley's is undefined; NaN if neither.

    A tiny curvature can overflow the division: an infinite step simply
    fails the bracket test and the caller bisects instead.
    """
    grad, hess, third = np.float64(grad), np.float64(hess), np.float64(third)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        denominator = 2 * hess**2 - grad * third
        if hess > 0 and denominator > 0:
            return x - 2 * grad * hess / denominator
        if hess > 0:
            return x - grad / hess
    return np.nan


def bracketed_newton(derivatives, x, lo, hi, max_iter):
    """Minimise a convex function of a positive scalar on ``[lo, hi]``.

    ``derivatives(x)`` returns the function and its first three derivatives.
    Steps are Halley's (Newton's with the third derivative: cubic
    convergence, so one pass over the data fewer than Newton) or Newton's
    where Halley's is not defined. Each step keeps a bracket [lo, hi] holding
    the root of the derivative and falls back to bisection (in log space,
    ``0 < lo``) whenever the step leaves it. A step below 1e-5 relative is
    taken as the last one without evaluating its end point: Halley's error
    after it is about the cube of the step (Newton's the square), far below
    1e-9.
    """
    x = min(max(x, lo), hi)
    tried_lo = tried_hi = False
    for _ in range(max_iter):
        _, grad, hess, third = derivatives(x)
        if grad == 0.0:
            break
        if grad > 0:
            hi = x
        else:
            lo = x
        step = _halley_step(x, grad, hess, third)
        if abs(step - x) <= 1e-5 * x:  # converged (also when rounding
            return min(max(step, lo), hi)  # puts the step on a bracket end)
        if lo < step < hi:
            new = step
        elif step >= hi and not tried_hi:  # the minimum may lie at a bound:
            new, tried_hi = hi, True  # look there once instead of bisecting
        elif step <= lo and not tried_lo:
            new, tried_lo = lo, True
        else:
            new = np.sqrt(lo * hi)  # bisection in log space
        if hi - lo <= 1e-12 * lo:
            return new
        x = new
    return x


def warn_not_converged(owner, max_iter, advice, *, lbfgs=False):
    """Warn (``ConvergenceWarning``, at the user's call) that ``owner``'s
    solver stopped at ``max_iter`` Newton steps (and, with ``lbfgs``, at the
    L-BFGS iterations :func:`minimise` allows), followed by ``advice``: what
    the result means or what to change."""
    limit = f"max_iter={max_iter} Newton steps"
    if lbfgs:
        limit += f" (or {LBFGS_ITER_PER_NEWTON * max_iter} L-BFGS iterations)"
    warnings.warn(
        f"{owner} did not converge in {limit}{advice}",
        ConvergenceWarning,
        stacklevel=_outside_stacklevel(),
    )
