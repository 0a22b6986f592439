"""The penalised logistic segment map: logits, segment levels and logit x
segment interactions, its ridge strength chosen by cross-validation.

For logits ``z`` (one margin for two classes, K columns otherwise) and
segment indicators ``S`` (n, m), the corrected logit of class k is

    eta_k = a z_k + b_k + sum_s S_s (c_sk + d_sk z_k / sd(z)),

``a`` and ``b`` free (a global temperature and intercepts: Platt scaling for
two classes), ``c`` and ``d`` under the ridge penalty ``lam / 2 (|c|^2 +
|d|^2)`` added to the weighted mean log-loss. A large ``lam`` gives the
global map, so the penalty shrinks towards global calibration, never towards
a constant. For two classes K = 1 with the sigmoid, else the softmax.
"""

import weakref

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.optimize import minimize
from scipy.special import expit, log_expit, log_softmax
from sklearn.utils import check_random_state

from ._select import _splits

#: ridge strengths tried by the inner cross-validation, largest first (each
#: fit starts from the previous one's solution)
DEFAULT_ALPHAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)


class LogisticMap:
    """The fitted parameters and the map they define."""

    def __init__(self, a, b, c, d, z_scale, lam=0.0):
        self.a, self.b, self.c, self.d, self.z_scale = a, b, c, d, z_scale
        self.lam = lam

    def logits(self, z, S):
        return linear_predictor(z, S, self.a, self.b, self.c, self.d, self.z_scale)


def linear_predictor(z, S, a, b, c, d, z_scale):
    zs = z / z_scale
    return a * z + b + S @ c + (S @ d) * zs


def _unpack(theta, K, m):
    a = theta[0]
    b = theta[1 : 1 + K]
    c = theta[1 + K : 1 + K + m * K].reshape(m, K)
    d = theta[1 + K + m * K :].reshape(m, K)
    return a, b, c, d


def _objective(theta, z, S, y, w, lam, z_scale, binary):
    """Weighted mean log-loss plus the ridge penalty, and its gradient."""
    K = z.shape[1]
    m = S.shape[1]
    a, b, c, d = _unpack(theta, K, m)
    eta = linear_predictor(z, S, a, b, c, d, z_scale)
    if binary:
        e = eta[:, 0]
        loss = -np.dot(w, y * log_expit(e) + (1 - y) * log_expit(-e))
        G = (w * (expit(e) - y))[:, None]
    else:
        logp = log_softmax(eta, axis=1)
        loss = -np.dot(w, logp[np.arange(len(y)), y])
        G = np.exp(logp)
        G[np.arange(len(y)), y] -= 1.0
        G *= w[:, None]
    zs = z / z_scale
    grad = np.concatenate(
        [
            [np.sum(G * z)],
            G.sum(axis=0),
            (S.T @ G).ravel() + lam * c.ravel(),
            (S.T @ (G * zs)).ravel() + lam * d.ravel(),
        ]
    )
    loss += 0.5 * lam * (np.sum(c * c) + np.sum(d * d))
    return loss, grad


#: indicator columns beyond which the binary map's design is sparse: dense
#: was twice as fast with 55 (a six-column survey and its pairs), sparse
#: twice as fast with 80 (51 states, three small columns and their pairs)
SPARSE_COLUMNS = 64


def _design(z, S, z_scale):
    """The binary map's columns, in the order of ``theta``: z, 1, S, S z.
    By the rows' distinct indicator patterns when they are few (see
    :class:`_PatternDesign`); else dense for few indicators (its Hessian is
    then one BLAS product, faster than sparse products); sparse beyond
    :data:`SPARSE_COLUMNS` (a row has one indicator per segment column, so
    the Hessian of many levels, a state column's 51, costs a few products
    per row instead of the square of the columns)."""
    pattern = _PatternDesign.of(z, S, z_scale)
    if pattern is not None:
        return pattern
    if S.shape[1] <= SPARSE_COLUMNS:
        S = S.toarray() if sparse.issparse(S) else S
        return np.hstack([z, np.ones_like(z), S, S * (z / z_scale)])
    S = sparse.csr_matrix(S)
    return _SparseDesign(
        sparse.hstack(
            [
                sparse.csr_matrix(z),
                sparse.csr_matrix(np.ones_like(z)),
                S,
                S.multiply(z / z_scale),
            ],
            format="csr",
        )
    )


class _SparseDesign:
    """A sparse design with its transpose kept (CSR both), for the repeated
    products of the Newton steps."""

    def __init__(self, D):
        self.D, self.T = D, D.T.tocsr()
        self.row_of = np.repeat(np.arange(D.shape[0]), np.diff(D.indptr))
        self.shape = D.shape

    def __matmul__(self, x):
        return self.D @ x

    def gram(self, v):
        """``D' diag(v) D``, dense."""
        Dv = self.D.copy()
        Dv.data = Dv.data * v[self.row_of]
        return (self.T @ Dv).toarray()

    def leverages(self, H_inv):
        """``d_i' H_inv d_i`` of every row."""
        return np.asarray(self.D.multiply(self.D @ H_inv).sum(axis=1)).ravel()


class _PatternDesign:
    """The binary design ``[z, 1, S, S zs]`` (``zs = z / z_scale``) of
    indicator rows ``S`` that take few distinct patterns: row ``i`` is
    ``u_p + z_i g_p`` for its pattern ``p`` (``u_p = [0, 1, s_p, 0]``,
    ``g_p = [1, 0, 0, s_p / z_scale]``), so every product needs per-pattern
    sums of the rows (``np.bincount``) and the small pattern matrix. The
    Hessian costs O(n + U m^2) for U patterns and m indicators, instead of
    O(n r^2) sparse (r indicators a row) or O(n m^2) dense: a survey of
    four segment columns (51 states) has 784 patterns in 10,000 rows, and
    its map's ridge path took 0.3 s sparse, a tenth of that by patterns."""

    #: the patterns' share of the rows beyond which the per-pattern sums
    #: save little over the rows themselves
    MAX_SHARE = 0.25

    def __init__(self, z, P, pid, z_scale):
        self.z = z[:, 0]
        self.zs = self.z / z_scale
        self.P, self.pid, self.z_scale = P, pid, z_scale
        self.U, self.m = P.shape
        self.shape = (self.z.shape[0], 2 + 2 * self.m)
        self._pairs()

    def _pairs(self):
        """The nonzero entries of every pattern's ``u u'``, ``u g'``,
        ``g u'`` and ``g g'`` (a pattern of r indicators has r + 1 nonzeros
        in ``u`` and in ``g``): their flat positions in the Hessian and the
        factors of ``g``, for the Hessian and the leverages as sums over
        them (``np.bincount``), not products with the dense pattern matrix."""
        U, m, p = self.U, self.m, 2 + 2 * self.m
        # the nonzeros of P in row order (a flat scan: np.nonzero of a 2-D
        # array is several times slower)
        rows, cols = np.divmod(np.flatnonzero(self.P.ravel() != 0), m)
        # per pattern its slots: 0 (the intercept of u, the logit of g), then
        # 1 + each of its indicators, increasing
        slot_pat = np.r_[np.arange(U), rows]
        slot = np.r_[np.zeros(U, dtype=np.int64), 1 + cols]
        order = np.argsort(slot_pat, kind="stable")
        slot = slot[order]
        count = np.bincount(slot_pat, minlength=U)
        start = np.r_[0, np.cumsum(count)[:-1]]
        size = count * count
        pat = np.repeat(np.arange(U), size)
        k = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size)
        i, j = np.divmod(k, count[pat])
        first = start[pat]
        a = slot[first + i]
        b = slot[first + j]
        # the u u' and g g' blocks are symmetric: their upper triangles
        # (slots increase within a pattern, so i <= j is a <= b); the u g'
        # block whole (the g u' block is its transpose: u's and g's columns
        # are disjoint)
        upper = i <= j
        a_up, b_up = a[upper], b[upper]
        inv = 1.0 / self.z_scale
        self._pat, self._pat_up = pat, pat[upper]
        self._uu = np.where(a_up == 0, 1, 1 + a_up) * p + np.where(
            b_up == 0, 1, 1 + b_up
        )
        self._gg = np.where(a_up == 0, 0, 1 + m + a_up) * p + np.where(
            b_up == 0, 0, 1 + m + b_up
        )
        self._ug = np.where(a == 0, 1, 1 + a) * p + np.where(b == 0, 0, 1 + m + b)
        self._gb = np.where(b == 0, 1.0, inv)
        self._ga_up = np.where(a_up == 0, 1.0, inv)
        self._gb_up = np.where(b_up == 0, 1.0, inv)
        # an entry off the diagonal of a symmetric block stands for two
        self._twice_up = np.where(a_up == b_up, 1.0, 2.0)
        self._gram_pat = np.r_[self._pat_up, pat, self._pat_up]
        self._gram_index = np.r_[self._uu, self._ug, self._gg]
        self._n_upper = self._pat_up.shape[0]

    #: the last design built, by weak references to its ``z`` and ``S``: a
    #: fit builds the design of the same rows for its ridge path, its refit
    #: and its leave-one-out margins
    _last = None

    @classmethod
    def of(cls, z, S, z_scale):
        """The design by patterns, or None when ``S`` is not 0/1 indicators,
        is sparse, or has too many distinct rows."""
        last = cls._last
        if last is not None and last[0]() is z and last[1]() is S:
            if last[2] == z_scale:
                return last[3]
        design = cls._build(z, S, z_scale)
        try:
            cls._last = (weakref.ref(z), weakref.ref(S), z_scale, design)
        except TypeError:  # not weakly referenceable: no cache
            cls._last = None
        return design

    @classmethod
    def _build(cls, z, S, z_scale):
        n, m = S.shape
        if sparse.issparse(S) or m == 0 or z.shape[1] != 1 or n < 64:
            return None
        ones = S == 1
        # 0/1 indicators only: every nonzero (NaN included) is a 1
        if np.count_nonzero(ones) != np.count_nonzero(S):
            return None
        first, pid = _distinct_rows(np.packbits(ones, axis=1))
        if first.shape[0] > cls.MAX_SHARE * n:
            return None
        return cls(z, ones[first].astype(np.float64), pid, z_scale)

    def _sums(self, v):
        return np.bincount(self.pid, weights=v, minlength=self.U)

    def __matmul__(self, theta):
        m = self.m
        c, d = theta[2 : 2 + m], theta[2 + m :]
        return (
            theta[0] * self.z
            + theta[1]
            + (self.P @ c)[self.pid]
            + (self.P @ d)[self.pid] * self.zs
        )

    @property
    def T(self):
        return _Transposed(self)

    def rmatvec(self, r):
        return np.concatenate(
            [
                [np.dot(r, self.z), r.sum()],
                self.P.T @ self._sums(r),
                self.P.T @ self._sums(r * self.zs),
            ]
        )

    def gram(self, v):
        """``D' diag(v) D``, dense: ``sum_p A_p u u' + B_p (u g' + g u') +
        C_p g g'`` with ``A, B, C`` the pattern's sums of ``v``, ``v z`` and
        ``v z^2``."""
        p = 2 + 2 * self.m
        vz = v * self.z
        A, B, C = self._sums(v), self._sums(vz), self._sums(vz * self.z)
        pat, n_up = self._gram_pat, self._n_upper
        values = np.concatenate(
            [
                A[pat[:n_up]],
                B[pat[n_up:-n_up]] * self._gb,
                C[pat[-n_up:]] * self._ga_up * self._gb_up,
            ]
        )
        # the upper triangles and the u g' block, plus their transpose; the
        # diagonal, doubled, halved (exact in floating point)
        H = np.bincount(self._gram_index, weights=values, minlength=p * p)
        H = H.reshape(p, p)
        H = H + H.T
        H[np.diag_indices_from(H)] *= 0.5
        return H

    def leverages(self, H_inv):
        """``d_i' H_inv d_i`` of every row (``H_inv`` symmetric): ``u'Hu +
        2 z_i u'Hg + z_i^2 g'Hg``, three sums per pattern over its nonzeros."""
        flat, up, U = H_inv.ravel(), self._pat_up, self.U
        twice = self._twice_up  # H_inv is symmetric: an upper entry twice
        q_uu = np.bincount(up, weights=flat[self._uu] * twice, minlength=U)
        q_ug = np.bincount(self._pat, weights=flat[self._ug] * self._gb, minlength=U)
        q_gg = np.bincount(
            up,
            weights=flat[self._gg] * self._ga_up * self._gb_up * twice,
            minlength=U,
        )
        z, pid = self.z, self.pid
        return q_uu[pid] + z * (2.0 * q_ug[pid] + z * q_gg[pid])


def _distinct_rows(packed):
    """``(first, inverse)`` of the distinct rows of a uint8 matrix, as
    ``np.unique`` of its rows as bytes gives them (the same order: by
    bytes): the rows read as big-endian 64-bit words, whose numeric order
    is the bytes' order, and sorted by ``np.lexsort``, several times faster
    than sorting opaque byte strings."""
    n, width = packed.shape
    words = -(-width // 8)
    padded = np.zeros((n, 8 * words), dtype=np.uint8)
    padded[:, :width] = packed
    keys = padded.view(">u8").astype(np.uint64)
    order = np.lexsort(keys.T[::-1])
    ranked = keys[order]
    new = np.r_[True, np.any(ranked[1:] != ranked[:-1], axis=1)]
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


class _Transposed:
    def __init__(self, design):
        self.design = design

    def __matmul__(self, r):
        return self.design.rmatvec(r)


def _weighted_gram(D, v):
    """``D' diag(v) D`` as a dense array."""
    if isinstance(D, _SparseDesign | _PatternDesign):
        return D.gram(v)
    return (D * v[:, None]).T @ D


class _Solution:
    """A binary fit's quantities at the point it returned, for the
    leave-one-out step (the Hessian's Cholesky factor, None when it had
    none) and for a fit of the next ridge strength started there (the data
    term's loss, gradient and Hessian: the penalty alone changes)."""

    def __init__(self, e, p, factor, loss, grad, gram):
        self.e, self.p, self.factor = e, p, factor
        self.loss, self.grad, self.gram = loss, grad, gram


def _newton_binary(D, S, y, w, lam, theta0, max_iter, tol, start=None):
    """Penalised Newton (IRLS) with step halving: a handful of iterations,
    each one pass over the rows (few columns, so the Hessian is small).
    Stops where the Newton decrement ``grad' H^-1 grad / 2`` (the decrease
    the next full step would bring, and near the minimum the gap to it) is
    within ``tol``: the point returned is then the one whose Hessian was
    just factored, returned with it as a :class:`_Solution` (None
    otherwise). ``start``: the :class:`_Solution` of another strength at
    ``theta0``, whose data term is not computed again."""
    m = S.shape[1]
    pen = np.r_[0.0, 0.0, np.full(2 * m, lam)]
    yf = y.astype(np.float64)

    def data_loss(e):
        return np.dot(w, np.logaddexp(0.0, e) - yf * e)

    def loss_of(theta):
        e = D @ theta
        return float(data_loss(e) + 0.5 * np.dot(pen, theta**2)), e

    theta = theta0.copy()
    if start is None:
        e = D @ theta
        d_loss = data_loss(e)
    else:
        e, d_loss = start.e, start.loss
    loss = float(d_loss + 0.5 * np.dot(pen, theta**2))
    for _ in range(max_iter):
        if start is None:
            p = expit(e)  # the margins of theta, kept from its loss
            d_grad = D.T @ (w * (p - yf))
            gram = _weighted_gram(D, w * p * (1 - p))
        else:
            p, d_grad, gram, start = start.p, start.grad, start.gram, None
        grad = d_grad + pen * theta
        H = gram.copy()
        H[np.diag_indices_from(H)] += pen + 1e-12
        factor, info = lapack.dpotrf(H, lower=False, clean=False)
        if info == 0:
            step, _ = lapack.dpotrs(factor, grad, lower=False)
        else:
            factor = None
            try:
                step = np.linalg.solve(H, grad)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(H, grad, rcond=None)[0]
        tiny = 0.5 * np.dot(grad, step) <= tol * max(1.0, abs(loss))
        if tiny or np.max(np.abs(grad)) < 1e-10:
            return theta, _Solution(e, p, factor, d_loss, d_grad, gram)
        t = 1.0
        while True:
            new = theta - t * step
            new_e = D @ new
            new_d_loss = data_loss(new_e)
            new_loss = float(new_d_loss + 0.5 * np.dot(pen, new**2))
            if new_loss <= loss or t < 1e-6:
                break
            t /= 2
        stalled = abs(loss - new_loss) <= tol * max(1.0, abs(loss))
        theta, loss, e, d_loss = new, new_loss, new_e, new_d_loss
        if stalled:  # a step the line search cut to nothing
            break
    return theta, None


def _z_scale(z, w):
    mean = np.average(z, axis=0, weights=w)
    z_scale = float(np.sqrt(np.mean(np.average((z - mean) ** 2, axis=0, weights=w))))
    return z_scale if z_scale > 0 else 1.0


def fit_logistic(
    z,
    S,
    y,
    w,
    lam,
    *,
    theta0=None,
    max_iter=200,
    tol=1e-10,
    design=None,
    return_state=False,
    start=None,
):
    """Minimise the penalised loss; ``z`` (n, K) logits (K = 1: binary with
    the margin), ``y`` class indices (0/1 for K = 1), ``w`` weights summing
    to 1; ``design``: the binary map's columns of these rows and weights,
    when the caller already built them. Returns ``(LogisticMap, theta)``;
    with ``return_state`` a third item, the binary fit's state at its
    solution for :func:`alo_logits` (None when it has none); ``start``: such
    a state of another strength on the same rows and design, at
    ``theta0``."""
    K = z.shape[1]
    m = S.shape[1]
    binary = K == 1
    S = S if binary else sparse.csr_matrix(S)
    z_scale = _z_scale(z, w)
    if theta0 is None:
        theta0 = np.zeros(1 + K + 2 * m * K)
        theta0[0] = 1.0
    if binary:
        D = _design(z, S, z_scale) if design is None else design
        theta, state = _newton_binary(
            D, S, y, w, lam, theta0, max_iter, tol, start=start
        )
        a, b, c, d = _unpack(theta, K, m)
        fitted = LogisticMap(a, b, c, d, z_scale, lam)
        return (fitted, theta, state) if return_state else (fitted, theta)
    res = minimize(
        _objective,
        theta0,
        args=(z, S, y.astype(np.float64) if binary else y, w, lam, z_scale, binary),
        jac=True,
        method="L-BFGS-B",
        # the mean log-loss to 1e-9 relative: far below any difference the
        # choice of a map could see, and half the iterations of 1e-10
        options={"maxiter": 5 * max_iter, "gtol": 1e-6, "ftol": max(tol, 1e-9)},
    )
    a, b, c, d = _unpack(res.x, K, m)
    fitted = LogisticMap(a, b, c, d, z_scale, lam)
    return (fitted, res.x, None) if return_state else (fitted, res.x)


def log_loss_of(eta, y, w, binary, *, total=None):
    """Weighted mean log-loss of corrected logits (``total``: ``w.sum()``,
    when the caller has it)."""
    total = w.sum() if total is None else total
    if binary:  # -log sigmoid(+-e) = log(1 + exp(e)) - y e: one logarithm a row
        e = eta[:, 0]
        return float(np.dot(w, np.logaddexp(0.0, e) - y * e) / total)
    logp = log_softmax(eta, axis=1)
    return float(-np.dot(w, logp[np.arange(len(y)), y]) / total)


#: rows beyond which the ridge strength is chosen on a random subset of this
#: many rows and carried to all of them at the same prior strength
#: (``alpha * n`` kept, the penalty being per unit of *mean* log-loss)
ALPHA_ROWS = 20_000


def alo_losses(z, S, y, w, fitted, *, design=None, state=None):
    """Per-row approximate leave-one-out log-losses of a fitted binary map,
    from :func:`alo_logits`."""
    e_loo = alo_logits(z, S, y, w, fitted, design=design, state=state)
    return row_losses(e_loo, y)


def row_losses(e, y):
    """Per-row log-losses of binary margins."""
    return np.logaddexp(0.0, e) - y.astype(np.float64) * e


def alo_logits(z, S, y, w, fitted, *, design=None, state=None):
    """Per-row approximate leave-one-out margins of a fitted binary map
    (Rad & Maleki 2020): one Newton step from the full fit removes row ``i``,
    ``eta_i + h_i w_i (p_i - y_i) / (1 - h_i w_i p_i (1 - p_i))`` with
    ``h_i = d_i' H^-1 d_i`` (``H`` the penalised Hessian at the fit), so the
    ridge strength is chosen, and the map scored against other maps, from
    one fit per strength instead of one per fold and strength (the error of
    the step is O(1/n) per row for a smooth penalised loss). ``w`` are the
    fit's weights (summing to 1); ``state``: the fit's margins,
    probabilities and Hessian factor at its solution (``fit_logistic(...,
    return_state=True)``), not computed again."""
    D = _design(z, S, fitted.z_scale) if design is None else design
    H_inv = None
    if state is not None and state.factor is not None:
        e, p = state.e, state.p
        v = p * (1 - p)
        H_inv = _inverse_of_factor(state.factor)
    if H_inv is None:
        m = S.shape[1]
        theta = np.concatenate(
            [[fitted.a], fitted.b, fitted.c.ravel(), fitted.d.ravel()]
        )
        pen = np.r_[0.0, 0.0, np.full(2 * m, fitted.lam)]
        e = D @ theta
        p = expit(e)
        v = p * (1 - p)
        H = _weighted_gram(D, w * v)
        H[np.diag_indices_from(H)] += pen + 1e-12
        # h_i = d_i' H^-1 d_i through the small inverse and one product with
        # the rows: a matrix product is several times faster than a solve
        # with n right-hand sides
        H_inv = _inverse(H)
    if isinstance(D, _SparseDesign | _PatternDesign):
        h = D.leverages(H_inv)
    else:
        h = np.einsum("ij,ij->i", D @ H_inv, D)
    yf = y.astype(np.float64)
    lev = np.clip(h * w * v, 0.0, 0.99)
    return e + h * w * (p - yf) / (1.0 - lev)


def _inverse(H):
    """The inverse of a symmetric Hessian: by its Cholesky factor (half the
    time of a general inverse), by a general inverse when it is not positive
    definite to working precision, by a pseudo-inverse when singular."""
    factor, info = lapack.dpotrf(H, lower=False, clean=False)
    if info == 0:
        inv = _inverse_of_factor(factor)
        if inv is not None:
            return inv
    try:
        return np.linalg.inv(H)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(H)


def _inverse_of_factor(factor):
    """The symmetric inverse from an upper Cholesky factor (None when
    LAPACK refuses it)."""
    inv, info = lapack.dpotri(factor, lower=False)
    if info != 0:
        return None
    return np.triu(inv) + np.triu(inv, 1).T


def choose_alpha(z, S, y, w, alphas, cv, random_state, *, return_fit=False):
    """The ridge strength of lowest inner cross-validated log-loss, and the
    mean fold losses of every strength (two classes: the approximate
    leave-one-out log-loss of :func:`alo_losses`, one fit per strength).
    With ``return_fit``, a third item, for the caller to keep instead of
    fitting the chosen strength again (two classes; else None): ``(map,
    per-row approximate leave-one-out logits)`` of the chosen strength fitted
    on all the rows, or, when a subset was drawn, ``(None, its parameters on
    the subset)``, a warm start for the fit on all rows."""
    n = y.shape[0]
    scale = 1.0
    if n > ALPHA_ROWS:
        rng = check_random_state(random_state)
        rows = np.sort(rng.choice(n, ALPHA_ROWS, replace=False))
        z, S, y, w = z[rows], S[rows], y[rows], w[rows]
        scale = ALPHA_ROWS / n
    binary = z.shape[1] == 1
    if binary:
        wn = w / w.sum()
        # one design for every strength: same rows, same logit scale
        D = _design(z, S, _z_scale(z, wn))
        mean, theta, fits = np.full(len(alphas), np.nan), None, {}
        state = None
        for i, lam in enumerate(alphas):
            # each strength starts from the last one's solution, whose data
            # term (loss, gradient, Hessian) is the same there
            fitted, theta, state = fit_logistic(
                z,
                S,
                y,
                wn,
                lam,
                theta0=theta,
                design=D,
                return_state=True,
                start=state,
            )
            e_loo = alo_logits(z, S, y, wn, fitted, design=D, state=state)
            mean[i] = np.dot(wn, row_losses(e_loo, y))
            fits[i] = (fitted, e_loo) if scale == 1.0 else (None, theta)
            if _past_the_best(mean, i):
                break
        best = int(np.nanargmin(mean))
        if not return_fit:
            return alphas[best] * scale, mean
        return alphas[best] * scale, mean, fits[best]
    splits = _splits(cv, y, random_state, None)
    mean = np.full(len(alphas), np.nan)
    thetas = [None] * len(splits)  # each fold warm-starts from its last fit
    for i, lam in enumerate(alphas):
        losses = np.zeros(len(splits))
        for f, (train, test) in enumerate(splits):
            wt = w[train] / w[train].sum()
            fitted, thetas[f] = fit_logistic(
                z[train], S[train], y[train], wt, lam, theta0=thetas[f]
            )
            eta = fitted.logits(z[test], S[test])
            losses[f] = log_loss_of(eta, y[test], w[test], binary)
        mean[i] = losses.mean()
        if _past_the_best(mean, i):
            break
    alpha = alphas[int(np.nanargmin(mean))] * scale
    return (alpha, mean, None) if return_fit else (alpha, mean)


def _past_the_best(mean, i):
    """The loss rose from the previous (larger) strength: the held-out loss
    of a ridge path is unimodal in practice, smaller penalties overfit more,
    and they cost the most iterations."""
    return i >= 1 and mean[i] > mean[i - 1]
