"""Gradient-boosted corrections of a model's logits on [segments, logits].

The boosting starts from the model's own logit (the correction is learnt,
not the probability): ``eta = z + sum_t lr * tree_t(features)``, each tree a
Newton step of the log-loss (scikit-learn's ``DecisionTreeRegressor`` fitted
to ``-g / h`` with weights ``h w``, so each leaf holds ``-sum g w / sum h
w``: the LogitBoost step; one tree per class and round for K classes, scaled
by ``(K - 1) / K`` as in Friedman's multiclass gradient boosting). Rounds
stop when the log-loss of a held-out part of the rows has not improved for
``n_iter_no_change`` rounds, and the best round is kept. A final rescaling
(``a eta + b`` for two classes, ``eta / T`` otherwise) is fitted on all rows.
With LightGBM installed (``backend="lightgbm"``, or ``"auto"``), its
``init_score`` starts the boosting from the logit instead; the corrected
logits of the fitted and held-out rows are read from LightGBM's running
scores, not predicted.
"""

from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.special import expit, log_softmax, softmax
from sklearn.tree import DecisionTreeRegressor

from sklcalib._utils._optional import is_installed

from ._segment_logistic import log_loss_of


def _newton(eta, y, w, binary):
    """Per-class gradients and diagonal Hessians of the log-loss."""
    if binary:
        p = expit(eta[:, 0])
        return (p - y)[:, None], np.maximum(p * (1 - p), 1e-12)[:, None]
    p = softmax(eta, axis=1)
    g = p.copy()
    g[np.arange(len(y)), y] -= 1.0
    return g, np.maximum(p * (1 - p), 1e-12)


class TreeBoost:
    """Boosted trees on numpy/scikit-learn (the default backend)."""

    def __init__(self, trees, learning_rate, scale):
        self.trees = trees  # list over rounds of lists over classes
        self.learning_rate = learning_rate
        self.scale = scale

    def correction(self, X, K):
        out = np.zeros((X.shape[0], K))
        for round_trees in self.trees:
            for k, tree in enumerate(round_trees):
                out[:, k] += tree.predict(X)
        return self.learning_rate * self.scale * out


class BoostSettings(NamedTuple):
    """The boosting parameters of a :class:`SegmentCalibrator` that both
    backends read (``random_state`` an int seed, for numpy's Generator and
    LightGBM)."""

    max_iter: int
    learning_rate: float
    max_depth: int
    min_samples_leaf: int
    validation_fraction: float
    n_iter_no_change: int
    random_state: int


def fit_tree_boost(X, z, y, w, settings):
    """Boost on the training part, stop on the held-out part; returns the
    booster truncated at its best round, and that round."""
    rng = np.random.default_rng(settings.random_state)
    n, K = z.shape
    binary = K == 1
    yf = y.astype(np.float64) if binary else y
    is_val = rng.uniform(size=n) < settings.validation_fraction
    if is_val.sum() < 10 or (~is_val).sum() < 10:
        is_val[:] = False
    tr, va = ~is_val, is_val
    scale = 1.0 if binary else (K - 1) / K
    eta_tr, eta_va = z[tr].copy(), z[va].copy()
    Xtr, Xva = X[tr], X[va]
    best_loss = log_loss_of(eta_va, yf[va], w[va], binary) if va.any() else np.inf
    best_round, trees, stall = 0, [], 0
    seed = int(rng.integers(2**31 - 1))
    for t in range(settings.max_iter):
        g, h = _newton(eta_tr, yf[tr], w[tr], binary)
        round_trees = []
        for k in range(K):
            tree = DecisionTreeRegressor(
                max_depth=settings.max_depth,
                min_samples_leaf=settings.min_samples_leaf,
                random_state=seed + t,
            )
            tree.fit(Xtr, -g[:, k] / h[:, k], sample_weight=h[:, k] * w[tr])
            step = settings.learning_rate * scale
            eta_tr[:, k] += step * tree.predict(Xtr)
            if va.any():
                eta_va[:, k] += step * tree.predict(Xva)
            round_trees.append(tree)
        trees.append(round_trees)
        if not va.any():
            best_round = t + 1
            continue
        loss = log_loss_of(eta_va, yf[va], w[va], binary)
        if loss < best_loss - 1e-7:
            best_loss, best_round, stall = loss, t + 1, 0
        else:
            stall += 1
            if stall >= settings.n_iter_no_change:
                break
    return TreeBoost(trees[:best_round], settings.learning_rate, scale), best_round


class LightGBMBoost:
    """A LightGBM booster started from the logits (``init_score``); it
    predicts on the fit's threads (without ``num_threads`` LightGBM's
    prediction runs on every core, whatever the booster was trained with)."""

    def __init__(self, booster, n_rounds, n_jobs=1):
        self.booster = booster
        self.n_rounds = n_rounds
        self.n_jobs = n_jobs

    def correction(self, X, K):
        if self.n_rounds == 0:
            return np.zeros((X.shape[0], K))
        raw = self.booster.predict(
            X, raw_score=True, num_iteration=self.n_rounds, num_threads=self.n_jobs
        )
        return np.asarray(raw, dtype=np.float64).reshape(X.shape[0], K)


class LightGBMData:
    """The rows of a calibrator's fits (features, logits, labels, weights);
    each fit bins the features of its own training rows only, and its
    held-out rows take those bins: bins drawn with the held-out rows in them
    place split points between held-out values, and the early stopping then
    runs on (a segment suite table: 43 rounds where 13 were right, and 0.001
    more test log-loss). The features are kept as CSR rows: LightGBM bins a
    sparse matrix by its nonzeros, and a row of segment indicators has one
    per column (tv16's 51 states: a fold's datasets a quarter cheaper than
    from the dense rows, the same bins and trees)."""

    def __init__(self, X, z, y, w, n_jobs=1):
        self.X, self.z, self.y, self.w = _csr_rows(X), z, y, w
        self.binary = z.shape[1] == 1
        # the threads of the binning too: without it LightGBM bins on every
        # core (OpenMP's default), and on a busy machine its waits tripled
        # the CPU time of a dataset (10 ms for 10,000 rows, 44 ms unpinned)
        self.params = dict(_DATASET_PARAMS, num_threads=n_jobs)

    def dataset(self, rows, reference=None):
        import lightgbm as lgb

        z = self.z[rows]
        # no labels and no weights: the custom objective reads both from
        # this object, and LightGBM reads a dataset's only in its own
        # objectives and metrics (none here)
        return lgb.Dataset(
            self.X[rows],
            init_score=z[:, 0] if self.binary else z.ravel(order="F"),
            reference=reference,
            params=self.params,
            free_raw_data=False,
        )


_DATASET_PARAMS = {"verbosity": -1, "force_col_wise": True}


def _csr_rows(X):
    """``X`` as a CSR matrix (NaN kept as stored values: LightGBM reads
    them as missing, as in a dense matrix), found from one flat scan of its
    nonzeros (scipy's conversion of a dense array is several times slower)."""
    X = np.ascontiguousarray(X)
    flat = np.flatnonzero(X != 0)
    rows, cols = np.divmod(flat, X.shape[1])
    indptr = np.searchsorted(rows, np.arange(X.shape[0] + 1))
    return sparse.csr_matrix((X.ravel()[flat], cols, indptr), shape=X.shape)


def boost_lightgbm(data, fit_rows, eval_rows, settings, n_jobs):
    """Boost from the logits on ``fit_rows`` of ``data`` (a held-out
    ``validation_fraction`` of them stops the rounds), Newton steps of the
    weighted log-loss (LightGBM's own binary / multiclass gradients and
    Hessians, given as a custom objective so that the scores LightGBM keeps
    are the corrected logits themselves). Returns ``(LightGBMBoost, best
    round, eta of fit_rows, eta of eval_rows)``, the corrected logits at the
    best round read from LightGBM's running scores: no prediction pass."""
    import lightgbm as lgb

    rng = np.random.default_rng(settings.random_state)
    K = data.z.shape[1]
    binary = data.binary
    fit_rows = np.asarray(fit_rows)
    is_val = rng.uniform(size=len(fit_rows)) < settings.validation_fraction
    early = is_val.sum() >= 10 and (~is_val).sum() >= 10
    if not early:
        is_val[:] = False
    # rows sorted: the scores come back in that order, put back below
    tr = np.sort(fit_rows[~is_val])
    va = np.sort(fit_rows[is_val])
    ev = None if eval_rows is None else np.sort(np.asarray(eval_rows))
    params = {
        "objective": "none",
        "metric": "None",
        "learning_rate": settings.learning_rate,
        "max_depth": settings.max_depth,
        "num_leaves": 2**settings.max_depth,
        "min_data_in_leaf": settings.min_samples_leaf,
        "num_threads": n_jobs,
        "verbosity": -1,
        "seed": int(rng.integers(2**31 - 1)),
        "deterministic": True,
        "force_col_wise": True,
        # a Newton leaf is -sum(g) / sum(h): rows the model is sure of have
        # tiny Hessians, and without these a leaf of them takes a huge step
        # (a multiclass model's 1e-8 probabilities overfit at once)
        "lambda_l2": 1.0,
        "min_sum_hessian_in_leaf": 1.0,
    }
    if not binary:
        params["num_class"] = K
    train_set = data.dataset(tr)
    booster = lgb.Booster(params, train_set)
    # one held-out dataset: the stopping rows, then the evaluated ones (a
    # dataset costs more to build than the rounds cost to run)
    held = np.r_[va, ev] if ev is not None else va
    valid = None
    if held.shape[0]:
        valid = data.dataset(held, train_set)
        booster.add_valid(valid, "held")
    n_va = va.shape[0]
    y_tr, w_tr = data.y[tr], data.w[tr]
    unit = bool(np.all(w_tr == 1.0))  # the gradients need no weighing
    # LightGBM's multiclass Hessian factor K / (K - 1)
    factor = 1.0 if binary else K / (K - 1.0)

    def objective(preds, _):
        if binary:
            p = expit(preds)
            h = p * (1 - p)
            np.maximum(h, 1e-16, out=h)
            p -= y_tr
            if unit:
                return p, h
            return w_tr * p, w_tr * h
        p = softmax(preds, axis=1)
        h = p * (1 - p)
        np.maximum(h, 1e-16, out=h)
        h *= factor
        p[np.arange(len(y_tr)), y_tr] -= 1.0
        if unit:
            return p, h
        return p * w_tr[:, None], h * w_tr[:, None]

    y_va, w_va = data.y[va], data.w[va]
    w_va_sum = w_va.sum()
    best = {"tr": data.z[tr].copy(), "va": data.z[va].copy()}
    if ev is not None:
        best["ev"] = data.z[ev].copy()
    running = {}

    def read_held(preds, _):
        # LightGBM's running scores of the held-out rows, in its own buffer
        # (copied only for a round better than the best so far)
        running["eta"] = preds.reshape(-1, K)
        return "none", 0.0, False

    def read_train(preds, _):
        best["tr"] = np.array(preds, dtype=np.float64).reshape(-1, K)
        return "none", 0.0, False

    def keep_held():
        eta = np.array(running["eta"], dtype=np.float64)
        best["va"] = eta[:n_va]
        if ev is not None:
            best["ev"] = eta[n_va:]

    best_loss = (
        log_loss_of(best["va"], y_va, w_va, binary, total=w_va_sum) if early else np.inf
    )
    best_round, stall, rounds = 0, 0, 0
    for _ in range(settings.max_iter):
        try:
            empty = booster.update(fobj=objective)
        except lgb.basic.LightGBMError as exc:
            if rounds or "num_features" not in str(exc):
                raise
            # every feature constant on these rows: nothing to split, the
            # logits are kept (LightGBM refuses a custom objective then)
            break
        rounds += 1
        if not early:
            if empty:
                break
            continue
        booster.eval_valid(read_held)
        loss = log_loss_of(running["eta"][:n_va], y_va, w_va, binary, total=w_va_sum)
        if loss < best_loss:
            best_loss, best_round, stall = loss, rounds, 0
            keep_held()
            booster.eval_train(read_train)
        else:
            stall += 1
            if stall >= settings.n_iter_no_change or empty:
                break
    if not early:
        best_round = rounds
        if rounds:
            if ev is not None:
                booster.eval_valid(read_held)
                keep_held()
            booster.eval_train(read_train)
    booster.free_dataset()
    # back to the callers' row order
    rows = np.r_[tr, va]
    order = np.argsort(rows)
    eta_fit = np.vstack([best["tr"], best["va"]])[order]
    eta_fit = eta_fit[np.searchsorted(rows[order], fit_rows)]
    eta_eval = None
    if ev is not None:
        eta_eval = best["ev"][np.searchsorted(ev, np.asarray(eval_rows))]
    return LightGBMBoost(booster, best_round, n_jobs), best_round, eta_fit, eta_eval


def resolve_backend(backend):
    if backend == "auto":
        return "lightgbm" if is_installed("lightgbm") else "sklearn"
    if backend == "lightgbm" and not is_installed("lightgbm"):
        raise ValueError(
            "backend='lightgbm' needs LightGBM (pip install lightgbm); "
            "backend='sklearn' needs nothing more."
        )
    return backend


def fit_rescaling(eta, y, w, binary, *, max_iter=50, tol=1e-12):
    """``(a, b)`` of the final rescaling ``a eta + b`` (b = 0 for K > 2):
    the weighted log-loss minimised by Newton steps with step halving (a
    convex problem of one or two parameters: a handful of passes over the
    rows, where a quasi-Newton solver took tens of them)."""
    yf = y.astype(np.float64) if binary else y
    rows = np.arange(len(y))

    def loss_of(a, b):
        e = a * eta + b
        if binary:
            return float(np.dot(w, np.logaddexp(0.0, e[:, 0]) - yf * e[:, 0]))
        return float(-np.dot(w, log_softmax(e, axis=1)[rows, y]))

    theta = np.array([1.0, 0.0])
    loss = loss_of(*theta)
    for _ in range(max_iter):
        e = theta[0] * eta + theta[1]
        if binary:
            x = eta[:, 0]
            p = expit(e[:, 0])
            r, h = w * (p - yf), w * p * (1.0 - p)
            grad = np.array([np.dot(r, x), r.sum()])
            hx = h * x
            H = np.array([[np.dot(hx, x), hx.sum()], [hx.sum(), h.sum()]])
            try:
                step = np.linalg.solve(H + 1e-12 * np.eye(2), grad)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(H, grad, rcond=None)[0]
        else:
            P = softmax(e, axis=1)
            mean = np.sum(P * eta, axis=1)
            g = np.dot(w, mean - eta[rows, y])
            h = np.dot(w, np.sum(P * eta * eta, axis=1) - mean**2)
            grad = np.array([g, 0.0])
            step = np.array([g / max(h, 1e-300), 0.0])
        t = 1.0
        while True:
            new = theta - t * step
            new_loss = loss_of(*new)
            if new_loss <= loss or t < 1e-8:
                break
            t /= 2
        done = abs(loss - new_loss) <= tol * max(1.0, abs(loss))
        if new_loss <= loss:
            theta, loss = new, new_loss
        if done or np.max(np.abs(grad)) < 1e-12:
            break
    return float(theta[0]), float(theta[1]) if binary else 0.0
