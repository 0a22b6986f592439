"""Paired-model beds: two models scoring the same rows, with the population
top-label ECE of each known exactly.

Every bed is a *discrete score law*: a finite set of equally likely atoms,
each with its true class probabilities ``q`` and the two models'
probabilities ``a`` and ``b``. A row is an atom drawn uniformly, its label a
draw from the atom's ``q``. The population ECE of a model at uniform bins is
then a finite sum, ``sum_b |sum_{atoms in b} w (acc - conf)|`` with ``acc``
the true probability of the predicted class: exact, not estimated, whatever
the number of classes or the dependence between the two models.

The beds (``BEDS``; ``null`` ones have equal population ECEs):

- ``indep``: ``x1, x2 ~ N(0, 1.5^2)``, ``y ~ Bernoulli(Phi(m + x1 + x2))``,
  A sees ``x1``, B sees ``x2`` (independent given nothing, correlated
  through ``y``). A model ``k`` is the probit temperature ``Phi(k
  Phi^-1(c))`` of the exactly calibrated ``c = P(y = 1 | x)`` (computed on
  the atoms' grid, so ``k = 1`` is calibrated on the discrete law itself);
  ``"1/2"`` the constant, ``"full"`` ``Phi(m + x1 + x2)``; ``m = 0`` is the
  balanced bed, ``m`` at 2 % prevalence the imbalanced one.
- ``same``: one latent ``x``, both models are temperatures of the same
  scores (the natural use: a model before and after a recalibration).
- ``corr``: A sees ``x1 + e_a``, B sees ``x1 + e_b`` (correlation 0.8 of
  what they see); atoms mirrored (``e_a <-> e_b``) so that equal ``k`` gives
  exactly equal population ECEs.
- ``net``: K-class "networks": logits ``z = alpha e_c + N(0, I)``, true
  probabilities ``softmax(z)``, a net ``softmax(z / T)``; ``T < 1`` is the
  sharp over-confident net (K = 10: confidence 0.99, accuracy 0.92, nearly
  every row in the top bin), ``T = 1`` calibrated; ``netpair``: two nets
  with their own logit noise, mirrored.

Opposite-direction pairs (one over-, one under-confident) take B's
temperature by bisection on the exact population ECE, to within 1e-5 of
A's; the tables print the true difference.
"""

from functools import lru_cache

import numpy as np
from scipy.special import ndtr, ndtri, softmax

from sklcalib._utils._binning import bin_index, top_label, uniform_edges

S = 1.5  # sd of each half of the indep bed's latent


class PairLaw:
    """A discrete score law of two models on the same rows (see module doc).

    ``q``, ``a``, ``b``: (M,) positive-class probabilities (binary) or
    (M, K); ``grid``: for the product beds, the two factor sizes (atom ``(i,
    j)`` is ``i * m2 + j``, drawn as two independent uniform indices)."""

    def __init__(self, name, q, a, b, null, what):
        self.name, self.null, self.what = name, null, what
        self.q, self.a, self.b = q, a, b
        self.m = q.shape[0]
        self.truth_a = population_ece(q, a)
        self.truth_b = population_ece(q, b)

    @property
    def difference(self):
        return self.truth_a - self.truth_b

    def draw(self, rng, n):
        """``(y, prob_a, prob_b)`` of ``n`` rows."""
        idx = rng.integers(self.m, size=n)
        q = self.q[idx]
        if q.ndim == 1:
            y = (rng.random(n) < q).astype(np.int64)
        else:
            u = rng.random((n, 1))
            y = np.minimum((u > np.cumsum(q, axis=1)).sum(axis=1), q.shape[1] - 1)
        return y, self.a[idx], self.b[idx]


def population_ece(q, p, n_bins=15):
    """Exact population top-label ECE of ``p`` on the uniform atoms whose true
    class probabilities are ``q`` (bins as the metric's)."""
    q = np.asarray(q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if p.ndim == 1:
        conf, pred = top_label(p, np.ones(p.shape[0], dtype=np.intp))
        acc = np.where(pred, q, 1.0 - q)
    else:
        pred = np.argmax(p, axis=1)
        conf = p[np.arange(p.shape[0]), pred]
        acc = q[np.arange(q.shape[0]), pred]
    bins = bin_index(conf, uniform_edges(n_bins))
    gaps = np.bincount(bins, weights=acc - conf, minlength=n_bins)
    return float(np.abs(gaps).sum() / p.shape[0])


def _probit_temperature(c, k):
    """``Phi(k Phi^-1(c))``: a probit temperature of calibrated scores ``c``."""
    if k == 1.0:
        return c
    return ndtr(k * ndtri(np.clip(c, 1e-300, 1.0 - 1e-16)))


def _match(target, family, lo, hi, tol=1e-6):
    """The ``k`` in ``[lo, hi]`` whose model ``family(k)`` has population ECE
    ``target`` (bisection; the ECE must cross ``target`` on the interval)."""
    f_lo = population_ece(*family(lo)) - target
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        f_mid = population_ece(*family(mid)) - target
        if abs(f_mid) < tol:
            return mid
        if (f_mid > 0) == (f_lo > 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# --- the indep family: product grid, exact calibration maps ----------------


@lru_cache(maxsize=4)
def _indep_grid(offset, m=512):
    """Stratified grids of ``x1`` and ``x2`` and the exact ``P(y = 1 | x1)``
    on their product (atoms ``(i, j)``)."""
    x = S * ndtri((np.arange(m) + 0.5) / m)
    q = ndtr(offset + x[:, None] + x[None, :])  # (m, m): q[i, j]
    cal = q.mean(axis=1)  # P(y = 1 | x1 = x[i]) on the grid, exactly
    return q.reshape(-1), cal, m


def _indep_model(spec, cal, m, q, which):
    """A model of the indep family on the product atoms; ``which`` 0 sees
    ``x1`` (the row index), 1 sees ``x2`` (the column index)."""
    if spec == "full":
        return q.copy()
    if spec == "1/2":
        return np.full(m * m, 0.5)
    if isinstance(spec, str) and spec.startswith("c"):
        # a constant with the population ECE of model float(spec[1:])
        return np.full(m * m, 0.5 + _constant_shift(float(spec[1:])))
    score = _probit_temperature(cal, float(spec))
    return np.repeat(score, m) if which == 0 else np.tile(score, m)


@lru_cache(maxsize=8)
def _constant_shift(k):
    q, cal, m = _indep_grid(0.0)
    return population_ece(q, _indep_model(k, cal, m, q, 0))


def indep(a, b, offset=0.0, name=None, null=False):
    q, cal, m = _indep_grid(offset)
    pa = _indep_model(a, cal, m, q, 0)
    pb = _indep_model(b, cal, m, q, 1)
    law = PairLaw(name or f"indep {a} | {b}", q, pa, pb, null, "")
    return law


def indep_opposite(k_over=1.5, offset=0.0, name=None):
    """A over-confident (``k_over``), B under-confident, equal population ECE."""
    q, cal, m = _indep_grid(offset)
    target = population_ece(q, _indep_model(k_over, cal, m, q, 0))
    k_under = _match(target, lambda k: (q, _indep_model(k, cal, m, q, 1)), 0.05, 1.0)
    return PairLaw(
        name or f"indep opposite {k_over} | {k_under:.3f}",
        q,
        _indep_model(k_over, cal, m, q, 0),
        _indep_model(k_under, cal, m, q, 1),
        True,
        "",
    )


# --- one latent: the same base scores at two temperatures -----------------


@lru_cache(maxsize=4)
def _line(offset, sd, m=1 << 16):
    x = offset + sd * ndtri((np.arange(m) + 0.5) / m)
    return ndtr(x)  # the calibrated scores, exactly the truth


def same_base(k_a, k_b=None, offset=0.0, sd=S, name=None, m=1 << 16):
    """Two probit temperatures of the same calibrated scores; ``k_b`` None:
    B is under-confident with A's population ECE (A over-confident)."""
    q = _line(offset, sd, m)
    pa = _probit_temperature(q, k_a)
    if k_b is None:
        target = population_ece(q, pa)
        k_b = _match(target, lambda k: (q, _probit_temperature(q, k)), 0.02, 1.0)
        null = True
    else:
        null = False
    pb = _probit_temperature(q, k_b)
    return PairLaw(name or f"same {k_a} | {k_b:.3f}", q, pa, pb, null, "")


# --- correlated views ------------------------------------------------------


@lru_cache(maxsize=2)
def _corr_atoms(noise, m=1 << 16, seed=11):
    rng = np.random.default_rng(seed)
    h = m // 2
    x1 = rng.normal(0.0, S, h)
    x2 = rng.normal(0.0, S, h)
    ea = rng.normal(0.0, noise, h)
    eb = rng.normal(0.0, noise, h)
    # mirrored: (ea, eb) and (eb, ea) both atoms, so A and B are exchangeable
    x1, x2 = np.tile(x1, 2), np.tile(x2, 2)
    ea, eb = np.concatenate([ea, eb]), np.concatenate([eb, ea])
    q = ndtr(x1 + x2)
    # P(y = 1 | u = x1 + e) in the continuous law: the calibrated view
    lam = S * S / (S * S + noise * noise)
    scale = np.sqrt(1.0 + S * S + S * S * noise * noise / (S * S + noise * noise))
    return q, lam * (x1 + ea) / scale, lam * (x1 + eb) / scale


def correlated(k_a, k_b, noise=0.75, name=None):
    q, ua, ub = _corr_atoms(noise)
    pa, pb = ndtr(k_a * ua), ndtr(k_b * ub)
    return PairLaw(name or f"corr {k_a} | {k_b}", q, pa, pb, k_a == k_b, "")


# --- K-class nets ----------------------------------------------------------


@lru_cache(maxsize=4)
def _net_logits(k, alpha, m, seed, pair_noise):
    rng = np.random.default_rng(seed)
    h = m // 2
    c = rng.integers(k, size=h)
    z = rng.normal(size=(h, k))
    z[np.arange(h), c] += alpha
    if pair_noise == 0.0:
        z = np.concatenate([z, z])
        return z, z, z
    ea = rng.normal(0.0, pair_noise, (h, k))
    eb = rng.normal(0.0, pair_noise, (h, k))
    za, zb = np.concatenate([z + ea, z + eb]), np.concatenate([z + eb, z + ea])
    return np.concatenate([z, z]), za, zb


def net(t_a, t_b=None, k=10, alpha=None, m=None, name=None):
    """Two temperatures of one net (``t_b`` None: B under-confident with A's
    population ECE)."""
    alpha = alpha if alpha is not None else (5.5 if k <= 10 else 7.0)
    m = m or (1 << 15 if k <= 10 else 1 << 13)
    z, _, _ = _net_logits(k, alpha, m, 7, 0.0)
    q = softmax(z, axis=1)
    pa = softmax(z / t_a, axis=1)
    if t_b is None:
        target = population_ece(q, pa)
        t_b = _match(target, lambda t: (q, softmax(z / t, axis=1)), 1.0, 8.0)
        null = True
    else:
        null = t_a == t_b
    pb = softmax(z / t_b, axis=1)
    return PairLaw(name or f"net{k} T={t_a} | T={t_b:.3f}", q, pa, pb, null, "")


def net_pair(t, k=10, alpha=None, noise=0.5, m=None, name=None):
    """Two nets with their own logit noise, at the same temperature
    (exchangeable: equal population ECE)."""
    alpha = alpha if alpha is not None else (5.5 if k <= 10 else 7.0)
    m = m or (1 << 15 if k <= 10 else 1 << 13)
    z, za, zb = _net_logits(k, alpha, m, 8, noise)
    q = softmax(z, axis=1)
    return PairLaw(
        name or f"nets{k} T={t}",
        q,
        softmax(za / t, axis=1),
        softmax(zb / t, axis=1),
        True,
        "",
    )


def prevalence_offset(rate, sd_total):
    """Probit offset ``m`` with ``E[Phi(m + x)] = rate`` for ``x ~ N(0,
    sd_total^2)``."""
    return float(ndtri(rate) * np.sqrt(1.0 + sd_total**2))
