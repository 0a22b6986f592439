"""Single-model beds whose population calibration errors are known by
construction: the family every interval of a calibration error is measured
on (``bench_interval_coverage.py``), and the material of paired beds.

A bed is a law of the model's probability vectors and of the label given
them. ``bed.sample(rng, n)`` draws ``(y, p)`` (``p`` 1-D for binary beds,
(n, K) otherwise); ``bed.truth(metric, n_bins=15, norm="l1")`` is the
population value of ``calibration_error_interval``'s metric, computed on a
quadrature of the bed's latent variable (never from a sample):

* **binary** (:class:`BinaryBed`): a latent ``z ~ N(mu, sd^2)``, the label
  ``y ~ Bernoulli(sigmoid(z))``, the prediction ``p = sigmoid(slope * z +
  shift)``: calibrated for slope 1 and shift 0, over-confident for a slope
  above 1, and any prevalence through ``mu`` (``BinaryBed.with_prevalence``);
* **top label with a tail** (:class:`TopLabelBed`): K classes; the
  confidence ``c = c0 + (1 - c0) sigmoid(l)``, ``l ~ N(loc, scale^2)``
  (``scale=0``: every row at the same confidence), is the probability of a
  class drawn uniformly; the other classes share ``1 - c`` in fixed
  proportions ``t_j`` (a flat or a geometric tail) assigned by a random
  rotation; the label is the top class with probability ``a = c0 + (1 - c0)
  sigmoid(acc_slope * l + acc_shift)``, else tail class ``j`` with
  probability ``t_j``. Calibrated (every column too) for ``acc_slope=1,
  acc_shift=0``; a sharp over-confident network has its confidence near 0.99
  and its accuracy near 0.92. Every column has the same law (the top class
  and the rotation are uniform), a mixture of the top role and the K - 1
  tail roles, which makes the classwise errors of 100 classes exact sums.

The population values: ECE, adaptive ECE and classwise ECE
``sum_b P(B = b) |E[o - c | B = b]|`` (``norm="l2"``: the root of
``sum_b P(B = b) E[o - c | B = b]^2``) at uniform bins (equal-mass bins at
the population quantiles for the adaptive ECE), averaged over the columns
for the classwise error (their L1 or L2 errors); the debiased L2 error the
same L2 error at the population quantiles of its score
(``mode="classwise"``: averaged over the columns under the root); NLL and
Brier the expected per-row score (the Brier score of a 1-D binary ``p``
counts both columns, as sklcalib's does).
``check_truths`` compares them once with plug-ins on millions of rows.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_expit, logit, ndtri

#: quadrature nodes of a bed's latent variable (+- 10 sd)
N_NODES = 200_001
METRICS = (
    "ece",
    "adaptive_ece",
    "classwise_ece",
    "debiased_ece",
    "nll",
    "brier",
)


class _Population:
    """A bed's law as weighted quadrature nodes: per node its weight, the
    top-label confidence and accuracy, the expected NLL and Brier score, and
    per column the roles ``(share, score, truth)`` whose mixture is the
    column's law (``n_same`` columns share the first law)."""

    def __init__(self, weight, conf, acc, nll, brier, columns, n_same=1):
        self.weight = weight
        self.conf = conf
        self.acc = acc
        self.nll = nll
        self.brier = brier
        self.columns = columns
        self.n_same = n_same


def _uniform_sums(score, gap, weight, n_bins):
    # right-closed bins, as sklcalib's: (edges[b], edges[b + 1]], 0 in bin 0
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, score, side="left") - 1, 0, n_bins - 1)
    mass = np.bincount(idx, weights=weight, minlength=n_bins)
    gaps = np.bincount(idx, weights=weight * gap, minlength=n_bins)
    return mass, gaps


def _quantile_sums(score, gap, weight, n_bins):
    """Bins at the population quantiles of ``score``: a node belongs to the
    bin of the middle of its mass."""
    order = np.argsort(score, kind="stable")
    w = weight[order]
    middle = np.cumsum(w) - 0.5 * w
    idx = np.minimum((middle / w.sum() * n_bins).astype(np.intp), n_bins - 1)
    mass = np.bincount(idx, weights=w, minlength=n_bins)
    gaps = np.bincount(idx, weights=w * gap[order], minlength=n_bins)
    return mass, gaps


def _binned(mass, gaps, norm):
    if norm == "l1":
        return float(np.abs(gaps).sum() / mass.sum())
    used = mass > 0
    return float(np.sum(gaps[used] ** 2 / mass[used]) / mass.sum())


def _column(roles, weight):
    """One column's law: scores, gaps and weights of its roles stacked."""
    score = np.concatenate([s for _, s, _ in roles])
    gap = np.concatenate([q - s for _, s, q in roles])
    w = np.concatenate([share * weight for share, _, _ in roles])
    return score, gap, w


@dataclass(frozen=True)
class _Bed:
    name: str
    description: str = field(default="", compare=False)

    def truth(self, metric, *, n_bins=15, norm="l1", mode="top_label"):
        """Population value of ``metric`` (see the module docstring)."""
        return _truth(self, metric, n_bins, norm, mode)

    @cached_property
    def population(self):
        return self._population()

    def top_bin_share(self, n_bins=15):
        """Share of the rows whose top-label confidence is in the top bin."""
        pop = self.population
        return float(np.dot(pop.weight, pop.conf > 1.0 - 1.0 / n_bins))


def _truth(bed, metric, n_bins, norm, mode):
    key = (metric, n_bins, norm, mode)
    cache = bed.__dict__.setdefault("_truths", {})
    if key not in cache:
        cache[key] = _compute_truth(bed.population, metric, n_bins, norm, mode)
    return cache[key]


def _compute_truth(pop, metric, n_bins, norm, mode):
    w = pop.weight
    if metric == "nll":
        return float(np.dot(w, pop.nll))
    if metric == "brier":
        return float(np.dot(w, pop.brier))
    gap = pop.acc - pop.conf
    if metric == "ece":
        value = _binned(*_uniform_sums(pop.conf, gap, w, n_bins), norm)
    elif metric == "adaptive_ece":
        value = _binned(*_quantile_sums(pop.conf, gap, w, n_bins), norm)
    elif metric == "debiased_ece" and mode == "top_label":
        return float(np.sqrt(_binned(*_quantile_sums(pop.conf, gap, w, n_bins), "l2")))
    elif metric in ("classwise_ece", "debiased_ece"):
        sums = _quantile_sums if metric == "debiased_ece" else _uniform_sums
        kind = "l2" if metric == "debiased_ece" else norm
        per_column = [_binned(*sums(*_column(c, w), n_bins), kind) for c in pop.columns]
        counts = [pop.n_same] + [1] * (len(per_column) - 1)
        if metric == "classwise_ece" and kind == "l2":
            # the classwise error averages the columns' L2 errors; the
            # debiased one roots the average of the columns' squares
            per_column = np.sqrt(per_column)
        value = float(np.average(per_column, weights=counts))
        return float(np.sqrt(value)) if metric == "debiased_ece" else value
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return float(np.sqrt(value)) if norm == "l2" else value


def _normal_nodes(mu, sd, n_nodes=N_NODES):
    if sd == 0:
        return np.array([float(mu)]), np.ones(1)
    z = np.linspace(mu - 10.0 * sd, mu + 10.0 * sd, n_nodes)
    w = np.exp(-0.5 * ((z - mu) / sd) ** 2)
    return z, w / w.sum()


@dataclass(frozen=True)
class BinaryBed(_Bed):
    """Latent ``z ~ N(mu, sd^2)``, ``y ~ Bernoulli(sigmoid(z))``, prediction
    ``sigmoid(slope * z + shift)`` (1-D, the probability of class 1)."""

    mu: float = 0.0
    sd: float = 1.0
    slope: float = 1.0
    shift: float = 0.0
    n_classes = 2

    @classmethod
    def with_prevalence(cls, name, prevalence, sd, *, description="", **kw):
        """The bed whose ``P(y = 1)`` is ``prevalence``."""
        z, w = _normal_nodes(0.0, sd)

        def excess(mu):
            return float(np.dot(w, expit(z + mu))) - prevalence

        mu = brentq(excess, -30.0, 30.0, xtol=1e-12)
        return cls(name, description, mu=mu, sd=sd, **kw)

    def sample(self, rng, n, with_truth=False):
        """``(y, p)``, and with ``with_truth`` every row's true probability
        of class 1 as a third element."""
        z = rng.normal(self.mu, self.sd, size=n)
        r = expit(z)
        y = (rng.uniform(size=n) < r).astype(np.intp)
        p = expit(self.slope * z + self.shift)
        return (y, p, r) if with_truth else (y, p)

    def _population(self):
        z, w = _normal_nodes(self.mu, self.sd)
        r = expit(z)
        a = self.slope * z + self.shift
        p = expit(a)
        positive = p > 0.5  # sklcalib's top label of [1 - p, p]
        conf = np.where(positive, p, 1.0 - p)
        acc = np.where(positive, r, 1.0 - r)
        eps = np.finfo(np.float64).eps
        nll = -(
            r * np.maximum(log_expit(a), np.log(eps))
            + (1 - r) * np.maximum(log_expit(-a), np.log(eps))
        )
        brier = 2.0 * ((p - r) ** 2 + r * (1.0 - r))
        columns = [[(1.0, 1.0 - p, 1.0 - r)], [(1.0, p, r)]]
        return _Population(w, conf, acc, nll, brier, columns)


def _tail(n_classes, kind):
    if n_classes == 2:
        return np.ones(1)
    if kind == "flat":
        t = np.ones(n_classes - 1)
    else:  # geometric: each next class a fixed fraction of the previous
        t = float(kind) ** np.arange(n_classes - 1)
    return t / t.sum()


@dataclass(frozen=True)
class TopLabelBed(_Bed):
    """K classes: top-class confidence and accuracy on a logit-normal law,
    the rest of the mass on a fixed tail (see the module docstring)."""

    n_classes: int = 10
    loc: float = 2.0
    scale: float = 1.0
    acc_slope: float = 1.0
    acc_shift: float = 0.0
    tail: str = "flat"

    @classmethod
    def at_point(cls, name, n_classes, confidence, accuracy, *, description=""):
        """Every row at ``confidence``, right with probability ``accuracy``."""
        bed = cls(name, description, n_classes=n_classes, scale=0.0)
        c0 = bed.floor
        loc = float(logit((confidence - c0) / (1.0 - c0)))
        shift = float(logit((accuracy - c0) / (1.0 - c0)))
        return cls(
            name,
            description,
            n_classes=n_classes,
            loc=loc,
            scale=0.0,
            acc_slope=0.0,
            acc_shift=shift,
        )

    @property
    def floor(self):
        """The lowest confidence: where the top class equals the first of
        the tail (1/K for a flat tail)."""
        t1 = float(_tail(self.n_classes, self.tail)[0])
        return t1 / (1.0 + t1)

    def _conf_acc(self, latent):
        c0 = self.floor
        conf = c0 + (1.0 - c0) * expit(latent)
        acc = c0 + (1.0 - c0) * expit(self.acc_slope * latent + self.acc_shift)
        return conf, acc

    def sample(self, rng, n, with_truth=False):
        """``(y, p)``, and with ``with_truth`` every row's true label
        probabilities (n, K) as a third element."""
        k = self.n_classes
        t = _tail(k, self.tail)
        conf, acc = self._conf_acc(rng.normal(self.loc, self.scale, size=n))
        top = rng.integers(0, k, size=n)
        offset = rng.integers(0, k - 1, size=n) if k > 2 else np.zeros(n, np.intp)
        # tail slot j of a row is class (top + 1 + (j + offset) mod (K - 1)) mod K
        slots = (np.arange(k - 1)[None, :] + offset[:, None]) % (k - 1)
        classes = (top[:, None] + 1 + slots) % k
        p = np.empty((n, k))
        rows = np.arange(n)[:, None]
        p[rows, classes] = (1.0 - conf)[:, None] * t[None, :]
        p[np.arange(n), top] = conf
        right = rng.uniform(size=n) < acc
        slot = np.minimum(
            (rng.uniform(size=(n, 1)) > np.cumsum(t)[None, :]).sum(axis=1), k - 2
        )
        y = np.where(right, top, classes[np.arange(n), slot])
        if not with_truth:
            return y, p
        q = np.empty((n, k))
        q[rows, classes] = (1.0 - acc)[:, None] * t[None, :]
        q[np.arange(n), top] = acc
        return y, p, q

    def _population(self):
        k = self.n_classes
        t = _tail(k, self.tail)
        latent, w = _normal_nodes(self.loc, self.scale)
        conf, acc = self._conf_acc(latent)
        tail_p = (1.0 - conf)[None, :] * t[:, None]  # (K - 1, nodes)
        tail_q = (1.0 - acc)[None, :] * t[:, None]
        nll = -(acc * np.log(conf) + np.sum(tail_q * np.log(tail_p), axis=0))
        sq = float(np.sum(t * t))
        brier = (
            conf**2
            + (1.0 - conf) ** 2 * sq
            - 2.0 * (acc * conf + (1.0 - acc) * (1.0 - conf) * sq)
            + 1.0
        )
        roles = [(1.0 / k, conf, acc)]
        roles += [(1.0 / k, tail_p[j], tail_q[j]) for j in range(k - 1)]
        return _Population(w, conf, acc, nll, brier, [roles], n_same=k)


# ---------------------------------------------------------------------------
# the family
# ---------------------------------------------------------------------------


def sharp_net(top_share=0.995, n_classes=10, name=None, n_bins=30):
    """A sharp over-confident network (a CIFAR net before calibration):
    confidence about 0.99, accuracy about 0.92; ``top_share`` of the rows
    have their confidence in the top of ``n_bins`` uniform bins (so at least
    as many in the top of fewer bins)."""
    scale = 0.6
    c0 = 1.0 / n_classes
    edge = float(logit((1.0 - 1.0 / n_bins - c0) / (1.0 - c0)))
    loc = edge + scale * float(ndtri(top_share))
    # accuracy 0.92 at the median confidence
    shift = float(logit((0.92 - c0) / (1.0 - c0))) - 0.5 * loc
    return TopLabelBed(
        name or f"sharp_net_{top_share:g}",
        f"{n_classes} classes, confidence ~0.99, accuracy ~0.92, "
        f"{top_share:.1%} of the rows in the top of {n_bins} bins",
        n_classes=n_classes,
        loc=loc,
        scale=scale,
        acc_slope=0.5,
        acc_shift=shift,
    )


def family():
    """The beds of the coverage tables, by name."""
    beds = [
        BinaryBed(
            "logistic",
            "binary, calibrated: z ~ N(0.5, 2^2), p = sigmoid(z)",
            mu=0.5,
            sd=2.0,
        ),
        BinaryBed(
            "logistic_over",
            "binary, over-confident: p = sigmoid(z / 0.7)",
            mu=0.5,
            sd=2.0,
            slope=1.0 / 0.7,
        ),
        BinaryBed(
            "logistic_under",
            "binary, under-confident: p = sigmoid(0.6 z)",
            mu=0.5,
            sd=2.0,
            slope=0.6,
        ),
        BinaryBed(
            "flat",
            "binary, flat and calibrated: z ~ N(0, 0.4^2), p = sigmoid(z)",
            mu=0.0,
            sd=0.4,
        ),
        BinaryBed(
            "flat_under",
            "binary, flat and under-confident: z ~ N(0, 1), p = sigmoid(z / 4)",
            mu=0.0,
            sd=1.0,
            slope=0.25,
        ),
        BinaryBed.with_prevalence(
            "rare",
            0.02,
            1.5,
            description="binary, 2 % prevalence, calibrated (sd 1.5)",
        ),
        BinaryBed.with_prevalence(
            "rare_under",
            0.02,
            1.5,
            shift=-1.0,
            description="binary, 2 % prevalence, predicted too low "
            "(p = sigmoid(z - 1))",
        ),
        TopLabelBed(
            "net_calibrated",
            "10 classes, calibrated, confidence spread over (0.1, 1)",
            n_classes=10,
            loc=1.0,
            scale=1.5,
        ),
        sharp_net(0.995, name="sharp_net"),
        TopLabelBed.at_point(
            "point_999",
            3,
            0.999,
            0.95,
            description="3 classes, every row at 0.999, right 95 % of the time",
        ),
        TopLabelBed(
            "many_classes",
            "100 classes, calibrated, geometric tail (ratio 0.9)",
            n_classes=100,
            loc=0.5,
            scale=1.5,
            tail="0.9",
        ),
        TopLabelBed(
            "many_classes_over",
            "100 classes, over-confident (accuracy at half the confidence's "
            "logit), geometric tail",
            n_classes=100,
            loc=0.5,
            scale=1.5,
            acc_slope=0.5,
            tail="0.9",
        ),
    ]
    return {bed.name: bed for bed in beds}


def check_truths(bed, n=2_000_000, seed=0, n_bins=15):
    """Plug-in of every metric on ``n`` rows drawn from ``bed`` beside its
    population value: ``{(metric, norm): (truth, plug-in)}``. The plug-in of
    a binned error is biased upwards by about its noise (the debiased
    error's square is unbiased); NLL and Brier are unbiased."""
    from sklcalib.metrics._registry import METRICS as FUNCTIONS

    rng = np.random.default_rng(seed)
    y, p = bed.sample(rng, n)
    out = {}
    for metric in METRICS:
        norms = (
            ("l1", "l2")
            if metric in ("ece", "adaptive_ece", "classwise_ece")
            else (None,)
        )
        for norm in norms:
            kw = {} if metric in ("nll", "brier") else {"n_bins": n_bins}
            if norm is not None:
                kw["norm"] = norm
            truth = bed.truth(metric, n_bins=n_bins, norm=norm or "l1")
            out[metric, norm] = (truth, float(FUNCTIONS[metric](y, p, **kw)))
    return out
