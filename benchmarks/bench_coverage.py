"""Coverage, width and speed of the calibration-error intervals, and size and
power of the paired comparison, on data whose truth is known.

Beds (the truth is computed by quadrature, not estimated):

- **binary top label**: true logit ``a ~ N(0.5, 2^2)``, ``y ~ Bernoulli(sigmoid(a))``,
  prediction ``sigmoid(a / tau)``, ``tau`` in {1, 0.85, 0.7}: the true L1
  error is 0, 0.0239, 0.0509 (the top-label gap has one sign everywhere, so
  every top-label binning's population ECE is the L1 error); the debiased L2
  error's truth is at its 15 population equal-mass bins, the classwise
  error's at its uniform bins;
- **10 classes, calibrated**: logits ``N(0, 2^2)`` per class, labels drawn
  from the softmax itself: every population error is 0;
- **paired comparison**: ``x1, x2 ~ N(0, 1.5^2)``, ``y ~ Bernoulli(Phi(x1 +
  x2))``, ``A = Phi(k_a x1 / v)``, ``B = Phi(k_b x2 / v)``, ``v = sqrt(1 +
  1.5^2)``: A and B are calibrated for ``k = 1`` and equally miscalibrated
  for equal ``k``; ``k_a = 1`` against ``k_b = 1.5`` is a real difference.
  Pairs equally calibrated but of different sharpness: the constant 1/2,
  ``Phi(x1 / v)`` and ``Phi(x1 + x2)`` (all three calibrated), and a
  constant with the population ECE of ``Phi(1.5 x / v)`` against it.

For every cell: the coverage of the nominal interval of
``calibration_error_interval`` and of the percentile ``bootstrap_interval``
(200 resamples), their mean widths, and the time per interval; for the
comparison, the rejection rate at 5 % of ``compare_calibration`` and of the
swap test of the raw plug-in difference (the test before the debiasing); with
``--part bootstrap_se``, the percentile bootstrap's ``standard_error`` of the
ECE against the estimator's true standard error; with ``--part sweep_bias``,
the share of the 15-bin plug-in ECE's bias that ECE-sweep removes; with
``--part bootstrap_methods``, how often the percentile, basic and BCa
bootstrap intervals of a calibrated model's ECE contain its true error 0.

``--part benchmark-marks``: the ``sklcalib benchmark`` table's brackets and
marks on the paired-comparison bed with 3 seeds = 3 independent test sets of
``n`` rows: the size and power of the combined swap test (the mean of the
per-seed ECE differences, each ECE debiased at zero gaps, against the mean of
independent per-seed swaps, 499 swaps), how often a mark is given (the test
rejects at 5 % *and* the interval of the mean difference of population ECEs
excludes 0), that interval's coverage, and the old paired-bootstrap rule's
mark rate (200 resamples); then the coverage of the bracket (per seed
``calibration_error_interval`` at ``1 - 0.05 / 3``, ends averaged) and of the
old basic-bootstrap bracket. ``--part benchmark-cost``: rows shaped like the
default run (its 9 datasets' test sizes and classes, 10 losses, 3 seeds), the
number and CPU time of the report's comparisons, and the workers' CPU time for
the intervals against the bootstraps they replace. Run::

    python benchmarks/bench_coverage.py [--reps 400] [--seed 0] [--part all]
        [--metrics ece,debiased_ece,classwise_ece]
    python benchmarks/bench_coverage.py --part benchmark-marks --reps 300
    python benchmarks/bench_coverage.py --part benchmark-cost

(single-threaded BLAS). Measured on 2 cores shared with other jobs (load
average 3-4): ``--part coverage --reps 200 --percentile-every 5`` and
``--part comparison --reps 300`` about a minute each, ``--part bootstrap_se
--reps 400`` 25 s, ``--part sweep_bias --reps 1000`` 6 s, ``--part
bootstrap_methods --reps 200`` 3 min (the BCa jackknife); ``--part all`` with
its 400 replications takes the sum, scaled.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path

import numpy as np
from scipy.special import expit, ndtr

MU, SD = 0.5, 2.0
TAUS = (1.0, 0.85, 0.7)


def binary_bed(rng, n, tau):
    """(y, p): 1-D probabilities of class 1 and labels drawn from the truth."""
    a = rng.normal(MU, SD, size=n)
    y = (rng.uniform(size=n) < expit(a)).astype(int)
    return y, expit(a / tau)


def multiclass_bed(rng, n, k=10):
    z = rng.normal(0.0, 2.0, size=(n, k))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.uniform(size=(n, 1))
    y = np.minimum((u > p.cumsum(axis=1)).sum(axis=1), k - 1)
    return y, p


def _grid(n_grid=400_001):
    a = np.linspace(MU - 12 * SD, MU + 12 * SD, n_grid)
    w = np.exp(-0.5 * ((a - MU) / SD) ** 2)
    return a, w / w.sum()


def truth(metric, tau, n_bins=15):
    """Population value of ``metric`` on the binary bed, by quadrature."""
    a, w = _grid()
    if metric in ("ece", "adaptive_ece"):
        # top label: conf = sigmoid(|a| / tau), accuracy sigmoid(|a|)
        return float(np.dot(w, np.abs(expit(np.abs(a) / tau) - expit(np.abs(a)))))
    if metric == "debiased_ece":
        conf = expit(np.abs(a) / tau)
        gap = expit(np.abs(a)) - conf
        order = np.argsort(conf, kind="stable")
        cum = np.cumsum(w[order])
        group = np.minimum((cum * n_bins).astype(int), n_bins - 1)
        mass = np.bincount(group, weights=w[order], minlength=n_bins)
        mean_gap = np.bincount(group, weights=(w * gap)[order], minlength=n_bins)
        return float(np.sqrt(np.sum(mean_gap**2 / mass)))
    if metric == "classwise_ece":
        s = expit(a / tau)
        gap = expit(a) - s
        edges = np.linspace(0, 1, n_bins + 1)
        total = 0.0
        for score, g in ((s, gap), (1.0 - s, -gap)):
            idx = np.clip(np.searchsorted(edges, score, side="left") - 1, 0, n_bins - 1)
            mean_gap = np.bincount(idx, weights=w * g, minlength=n_bins)
            total += np.abs(mean_gap).sum()
        return float(total / 2.0)
    raise ValueError(metric)


def comparison_bed(rng, n, k_a, k_b):
    """``(y, A, B)`` of the paired-comparison bed. ``k_a``, ``k_b``: a number
    ``k`` is ``Phi(k x / v)`` (of ``x1`` for A, ``x2`` for B), ``"1/2"`` the
    constant 1/2 (calibrated: ``P(y = 1) = 1/2``), ``"full"`` ``Phi(x1 +
    x2)`` (the truth itself: calibrated and as sharp as possible), ``"c<k>"``
    the constant ``1/2 + ECE(Phi(k x / v))``: one bin, miscalibrated, with
    the same population ECE as ``Phi(k x / v)``."""
    s = 1.5
    v = np.sqrt(1.0 + s * s)
    x1 = rng.normal(0.0, s, size=n)
    x2 = rng.normal(0.0, s, size=n)
    y = (rng.uniform(size=n) < ndtr(x1 + x2)).astype(int)
    return y, _pair_model(k_a, x1, x2, v), _pair_model(k_b, x2, x1, v)


def _pair_model(k, x, other, v):
    if k == "1/2":
        return np.full_like(x, 0.5)
    if k == "full":
        return ndtr(x + other)
    if isinstance(k, str) and k.startswith("c"):
        return np.full_like(x, 0.5 + comparison_truth(float(k[1:])))
    return ndtr(float(k) * x / v)


def _pair_truth(k):
    if k in ("1/2", "full"):
        return 0.0
    if isinstance(k, str) and k.startswith("c"):
        return comparison_truth(float(k[1:]))
    return comparison_truth(float(k))


def coverage_cell(metric, bed, n, tau, reps, seed, percentile=True, every=1):
    """Coverage of one cell; the percentile bootstrap (slow: it recomputes or
    resamples rows) on every ``every``-th replication only."""
    from sklcalib.metrics import bootstrap_interval, calibration_error_interval

    rng = np.random.default_rng(seed)
    true = 0.0 if bed == "multiclass" else truth(metric, tau)
    hit = width = hit_p = width_p = 0.0
    n_pct = 0
    elapsed = 0.0
    for r in range(reps):
        y, p = (
            multiclass_bed(rng, n) if bed == "multiclass" else binary_bed(rng, n, tau)
        )
        t0 = time.perf_counter()
        ci = calibration_error_interval(y, p, metric=metric, random_state=r)
        elapsed += time.perf_counter() - t0
        hit += ci.low <= true <= ci.high
        width += ci.high - ci.low
        if percentile and r % every == 0:
            b = bootstrap_interval(metric, y, p, n_resamples=200, random_state=r)
            hit_p += b.low <= true <= b.high
            width_p += b.high - b.low
            n_pct += 1
    return {
        "metric": metric,
        "bed": bed,
        "n": n,
        "tau": tau,
        "truth": true,
        "coverage": hit / reps,
        "width": width / reps,
        "pct_coverage": hit_p / n_pct if n_pct else float("nan"),
        "pct_width": width_p / n_pct if n_pct else float("nan"),
        "seconds": elapsed / reps,
    }


def bootstrap_se_cell(bed, n, tau, reps, seed, n_resamples=200):
    """The percentile bootstrap's ``standard_error`` of the plug-in ECE
    against the estimator's true standard error (its standard deviation over
    the replications): (true SE, mean bootstrap SE, their ratio - 1)."""
    from sklcalib.metrics import bootstrap_interval

    rng = np.random.default_rng(seed)
    estimates, ses = [], []
    for r in range(reps):
        y, p = (
            multiclass_bed(rng, n) if bed == "multiclass" else binary_bed(rng, n, tau)
        )
        b = bootstrap_interval("ece", y, p, n_resamples=n_resamples, random_state=r)
        estimates.append(b.estimate)
        ses.append(b.standard_error)
    true_se = float(np.std(estimates, ddof=1))
    boot_se = float(np.mean(ses))
    return true_se, boot_se, boot_se / true_se - 1.0


def bootstrap_methods_cell(n, reps, seed, methods=("percentile", "basic", "bca")):
    """Share of ``reps`` calibrated binary beds (truth 0) whose nominal 95 %
    ``bootstrap_interval("ece")`` (1000 resamples) contains 0, per method;
    BCa's refusals (every resample above the estimate) count as misses and
    are counted apart."""
    from sklcalib.metrics import bootstrap_interval

    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(methods, 0)
    refused = 0
    for r in range(reps):
        y, p = binary_bed(rng, n, 1.0)
        for method in methods:
            try:
                b = bootstrap_interval("ece", y, p, method=method, random_state=r)
            except ValueError:
                refused += 1
                continue
            hits[method] += b.low <= 0.0 <= b.high
    return {m: h / reps for m, h in hits.items()}, refused


def sweep_bias_cell(n, tau, reps, seed):
    """Mean bias of the 15-bin plug-in ECE and of ECE-sweep on the binary bed
    (truth by quadrature), and the share of the plug-in's bias the sweep
    removes: (truth, plug-in bias, sweep bias, share removed)."""
    from sklcalib.metrics import ece_sweep, expected_calibration_error

    rng = np.random.default_rng(seed)
    true = truth("ece", tau)
    plug = sweep = 0.0
    for _ in range(reps):
        y, p = binary_bed(rng, n, tau)
        plug += expected_calibration_error(y, p) - true
        sweep += ece_sweep(y, p) - true
    plug, sweep = plug / reps, sweep / reps
    return true, plug, sweep, 1.0 - sweep / plug


def comparison_truth(k):
    """Population ECE of ``Phi(k x / v)`` on the comparison bed: the score
    is ``Phi(k z)`` with ``z = x / v ~ N(0, (1.5 / v)^2)`` and the truth
    ``Phi(z)``; the top-label gap has one sign, so every binning's ECE is
    the L1 error."""
    sd = 1.5 / np.sqrt(1.0 + 1.5**2)
    z = np.linspace(-12 * sd, 12 * sd, 400_001)
    w = np.exp(-0.5 * (z / sd) ** 2)
    w /= w.sum()
    return float(np.dot(w, np.abs(ndtr(k * z) - ndtr(z))))


def rejection_rate(n, k_a, k_b, reps, seed, metric="ece", with_raw=False):
    """(rejection rate at 5 %, coverage of the difference of population
    errors, mean interval width, seconds per comparison), and with
    ``with_raw`` the rejection rate of the swap test of the raw plug-in
    difference (the test before the debiasing)."""
    from sklcalib.metrics import compare_calibration

    rng = np.random.default_rng(seed)
    truth = _pair_truth(k_a) - _pair_truth(k_b)
    rejected = covered = width = elapsed = raw = 0.0
    for r in range(reps):
        y, a, b = comparison_bed(rng, n, k_a, k_b)
        t0 = time.perf_counter()
        res = compare_calibration(y, a, b, metric=metric, random_state=r)
        elapsed += time.perf_counter() - t0
        rejected += res.pvalue < 0.05
        covered += res.low <= truth <= res.high
        width += res.high - res.low
        if with_raw:
            raw += _raw_swap_pvalue(y, a, b, metric, r) < 0.05
    out = (rejected / reps, covered / reps, width / reps, elapsed / reps)
    return (*out, raw / reps) if with_raw else out


def _raw_swap_pvalue(y, a, b, metric, seed, n_resamples=1000):
    """The swap test of the plug-in difference itself (compare_calibration's
    before the debiasing): the same swaps, the raw difference."""
    from sklcalib._utils._resampling import stream_seeds
    from sklcalib.metrics import expected_calibration_error as ece
    from sklcalib.metrics._bootstrap import swap_differences

    rng = np.random.default_rng(stream_seeds(seed, 1)[0])
    null = swap_differences(metric, y, a, b, n_resamples, rng, {})
    diff = ece(y, a) - ece(y, b)
    hits = np.count_nonzero(np.abs(null) >= abs(diff) - 1e-12)
    return (1.0 + hits) / (1.0 + n_resamples)


METRICS = ("ece", "debiased_ece", "classwise_ece")


def coverage_table(reps, seed, percentile=True, metrics=METRICS, every=1):
    for metric in metrics:
        for tau in TAUS:
            for n in (200, 2000):
                yield coverage_cell(
                    metric, "binary", n, tau, reps, seed, percentile, every
                )
        yield coverage_cell(
            metric, "multiclass", 1000, 1.0, reps, seed, percentile, every
        )


#: (A, B) of the comparison table: equally calibrated and exchangeable (equal
#: k), equally calibrated of different sharpness (1/2, 1.0, full), equally
#: miscalibrated of different sharpness (c1.5: a constant with the ECE of
#: k = 1.5), and a real difference (1.0 against 1.5)
COMPARISON_CELLS = (
    (1.0, 1.0),
    (1.5, 1.5),
    ("1/2", 1.0),
    (1.0, "full"),
    ("1/2", "full"),
    ("c1.5", 1.5),
    (1.0, 1.5),
)


def comparison_table(reps, seed):
    for n in (500, 2000):
        for k_a, k_b in COMPARISON_CELLS:
            yield n, k_a, k_b, rejection_rate(n, k_a, k_b, reps, seed, with_raw=True)


def timing_table(repeats=5, n=10_000, k=10):
    """Median seconds per interval at ``n`` rows and ``k`` classes."""
    from sklcalib.metrics import calibration_error_interval

    y, p = multiclass_bed(np.random.default_rng(0), n, k)
    out = {}
    for metric in ("ece", "adaptive_ece", "classwise_ece", "debiased_ece", "nll"):
        calibration_error_interval(y, p, metric=metric, random_state=0)  # warm
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            calibration_error_interval(y, p, metric=metric, random_state=r)
            times.append(time.perf_counter() - t0)
        out[metric] = (float(np.median(times)), min(times), max(times))
    return out


# ---------------------------------------------------------------------------
# the benchmark's Table-1 brackets and marks
# ---------------------------------------------------------------------------
#: (label, A, B) on the comparison bed; "1/2": always 1/2, calibrated and blunt
MARK_CELLS = (
    ("1.0", "1.0"),
    ("1.5", "1.5"),
    ("1.0", "1.5"),
    ("1.0", "2.5"),
    ("1/2", "1.0"),
)


def _marks_bed(rng, n):
    """``(y, z1, z2)`` of the comparison bed, ``z = x / v``."""
    s = 1.5
    v = np.sqrt(1.0 + s * s)
    x1 = rng.normal(0.0, s, size=n)
    x2 = rng.normal(0.0, s, size=n)
    y = (rng.uniform(size=n) < ndtr(x1 + x2)).astype(int)
    return y, x1 / v, x2 / v


def _model(label, z1):
    if label == "1/2":
        return np.full_like(z1, 0.5)
    return ndtr(float(label) * z1)


def _model_truth(label):
    return 0.0 if label == "1/2" else comparison_truth(float(label))


def _old_mark(ys, pa, pb, rep, n_resamples=200):
    """The old rule: per seed the paired bootstrap of the two ECEs on the same
    resampled rows, averaged over seeds, two-sided bootstrap p-value < 5 %."""
    from sklcalib.metrics import bootstrap_interval

    diffs = []
    for s, (y, a, b) in enumerate(zip(ys, pa, pb, strict=True)):
        da = bootstrap_interval(
            "ece", y, a, n_resamples=n_resamples, random_state=rep * 7 + s
        )
        db = bootstrap_interval(
            "ece", y, b, n_resamples=n_resamples, random_state=rep * 7 + s
        )
        diffs.append(da.bootstrap_distribution - db.bootstrap_distribution)
    mean = np.mean(diffs, axis=0)
    tail = min(np.count_nonzero(mean <= 0), np.count_nonzero(mean >= 0))
    return min(1.0, 2.0 * (tail + 1) / (n_resamples + 1)) < 0.05


def benchmark_mark_cell(n, a_label, b_label, reps, seed, n_seeds=3):
    """Rates over ``reps`` of the combined test's rejection, the mark, the
    interval's coverage of the mean difference of population ECEs, its
    width, the old rule's mark, and ms per comparison."""
    from sklcalib.benchmark._paired import RESAMPLES, compare_over_seeds

    rng = np.random.default_rng(seed)
    truth = _model_truth(a_label) - _model_truth(b_label)
    counts = np.zeros(5)
    elapsed = 0.0
    for r in range(reps):
        ys, pa, pb = [], [], []
        for _ in range(n_seeds):
            y, z1, z2 = _marks_bed(rng, n)
            ys.append(y)
            pa.append(_model(a_label, z1))
            pb.append(_model(b_label, z2))
        t0 = time.process_time()
        c = compare_over_seeds(
            ys,
            pa,
            pb,
            n_resamples=RESAMPLES,
            seeds=[r * n_seeds + s for s in range(n_seeds)],
        )
        elapsed += time.process_time() - t0
        counts += [
            c.pvalue <= 0.05,
            c.verdict(0.05) != 0,
            c.low <= truth <= c.high,
            c.high - c.low,
            _old_mark(ys, pa, pb, r),
        ]
    return (*(counts / reps), 1000 * elapsed / reps)


def benchmark_bracket_cell(n, label, reps, seed, n_seeds=3):
    """Coverage and width of the bracket and of the old basic bracket of
    the mean over seeds of the population ECE of one model."""
    from sklcalib.metrics import bootstrap_interval, calibration_error_interval

    rng = np.random.default_rng(seed)
    truth = _model_truth(label)
    counts = np.zeros(4)
    for r in range(reps):
        lows, highs, boots, ests = [], [], [], []
        for _ in range(n_seeds):
            y, z1, _z2 = _marks_bed(rng, n)
            p = _model(label, z1)
            ci = calibration_error_interval(
                y, p, confidence_level=1.0 - 0.05 / n_seeds, random_state=r
            )
            lows.append(ci.low)
            highs.append(ci.high)
            ests.append(ci.estimate)
            b = bootstrap_interval("ece", y, p, n_resamples=200, random_state=r)
            boots.append(b.bootstrap_distribution)
        low, high = np.mean(lows), np.mean(highs)
        mean, boot = np.mean(ests), np.mean(boots, axis=0)
        q_low, q_high = np.quantile(boot, [0.025, 0.975])
        old_low, old_high = 2 * mean - q_high, 2 * mean - q_low
        counts += [
            low <= truth <= high,
            high - low,
            old_low <= truth <= old_high,
            old_high - old_low,
        ]
    return counts / reps


def benchmark_bracket_bed_cell(bed, n, reps, seed, n_seeds=3):
    """Coverage and mean width of the benchmark's bracket (the mean over
    ``n_seeds`` test sets of per-seed ``calibration_error_interval`` ends at
    level ``1 - 0.05 / n_seeds``) of the population ECE of a bed of
    ``benchmarks/_beds.py``, whose truth is known by quadrature: the sharp
    over-confident nets calibration exists for, and the tiny sets."""
    from sklcalib.metrics import calibration_error_interval

    rng = np.random.default_rng(seed)
    truth = bed.truth("ece")
    hits, widths = 0, 0.0
    for r in range(reps):
        lows, highs = [], []
        for _ in range(n_seeds):
            y, p = bed.sample(rng, n)
            ci = calibration_error_interval(
                y,
                p,
                labels=np.arange(p.shape[1]),  # a small split may lack a class
                confidence_level=1.0 - 0.05 / n_seeds,
                random_state=r,
            )
            lows.append(ci.low)
            highs.append(ci.high)
        low, high = np.mean(lows), np.mean(highs)
        hits += low <= truth <= high
        widths += high - low
    return truth, hits / reps, widths / reps


def benchmark_cost(repeats=3):
    """The report's comparisons on rows shaped like the default run."""
    from scipy.special import softmax

    from sklcalib.benchmark import tables as report
    from sklcalib.benchmark.runner import METRICS
    from sklcalib.metrics import (
        bootstrap_interval,
        calibration_error_interval,
        expected_calibration_error,
    )

    sizes = {
        "moons": (400, 2),
        "blobs": (400, 5),
        "classification": (400, 4),
        "classification_hard": (400, 6),
        "digits": (359, 10),
        "breast_cancer": (114, 2),
        "wine": (36, 3),
        "diamonds": (10788, 5),
        "lending_club": (1971, 2),
    }
    losses = [f"loss{i}" for i in range(9)]
    losses.insert(0, "ce")
    rng = np.random.default_rng(0)
    rows = []
    t_new = t_old = 0.0
    for ds, (n, k) in sizes.items():
        z = rng.normal(size=(n, k)) * 2.0
        p0 = softmax(z, axis=1)
        y = (rng.uniform(size=(n, 1)) > p0.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
        for i, loss in enumerate(losses):
            for seed in range(3):
                noisy = z + rng.normal(size=(n, k)) * 0.3
                pre = softmax(noisy * (1.0 + 0.1 * i), axis=1)
                post = softmax(noisy, axis=1)
                row = {"dataset": ds, "loss": loss, "seed": seed, "epochs": 1}
                row["temperature"] = 1.0 + 0.1 * i
                for key in METRICS:
                    row[f"{key}_pre"] = row[f"{key}_post"] = 0.1
                for when, p in (("pre", pre), ("post", post)):
                    row[f"ece_{when}"] = expected_calibration_error(y, p)
                    t0 = time.process_time()
                    ci = calibration_error_interval(
                        y, p, confidence_level=1 - 0.05 / 3, random_state=seed
                    )
                    t_new += time.process_time() - t0
                    t0 = time.process_time()
                    bootstrap_interval(
                        "ece", y, p, n_resamples=200, method="basic", random_state=seed
                    )
                    t_old += time.process_time() - t0
                    row[f"ece_{when}_low"], row[f"ece_{when}_high"] = ci.low, ci.high
                row.update(
                    ece_interval_level=1 - 0.05 / 3,
                    error_pre=0.1,
                    error_post=0.1,
                    train_error=0.0,
                    chance_error=0.5,
                    n_test=n,
                    hessian_trace=1.0,
                    hessian_trace_se=0.1,
                    train_seconds=1.0,
                    y_test=y,
                    proba_pre=pre,
                    proba_post=post,
                )
                rows.append(row)
    chance = report.chance_counts(rows)
    excluded_post = set(chance) | set(report._edge_counts(rows))
    wanted = report._wanted_pairs(rows, "ce", set(chance), excluded_post)
    times, whole = [], []
    for _ in range(repeats):
        report._MEMO["key"] = None
        t0 = time.process_time()
        report._comparisons(rows, wanted, 0.05)
        times.append(time.process_time() - t0)
        report._MEMO["key"] = None
        t0 = time.process_time()
        report.markdown_report(rows, losses=losses)
        whole.append(time.process_time() - t0)
    return {
        "runs": len(rows),
        "comparisons": len(wanted),
        "per_seed_comparisons": 3 * len(wanted),
        "comparisons_s": times,
        "markdown_report_s": whole,
        "intervals_s": t_new,
        "bootstraps_s": t_old,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--part",
        choices=(
            "all",
            "coverage",
            "comparison",
            "timing",
            "benchmark-marks",
            "benchmark-cost",
            "bootstrap_se",
            "sweep_bias",
            "bootstrap_methods",
        ),
        default="all",
    )
    parser.add_argument(
        "--percentile-every",
        type=int,
        default=1,
        help="run the (slow) percentile bootstrap on every k-th replication",
    )
    parser.add_argument(
        "--metrics", default=",".join(METRICS), help="comma-separated subset"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="benchmark-marks: run the marks' cells in 4 chunks of --reps / 4 "
        "(seeds --seed + 1000 k) in this many processes",
    )
    args = parser.parse_args(argv)
    if args.part in ("all", "coverage"):
        print(f"Coverage of nominal 95 % intervals, {args.reps} replications per cell")
        print()
        print(
            "| error | bed | n | truth | coverage | width "
            "| percentile bootstrap coverage | its width | ms / interval |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for row in coverage_table(
            args.reps,
            args.seed,
            metrics=args.metrics.split(","),
            every=args.percentile_every,
        ):
            bed = (
                "10 classes"
                if row["bed"] == "multiclass"
                else f"binary, tau = {row['tau']}"
            )
            print(
                f"| {row['metric']} | {bed} | {row['n']} | {row['truth']:.4f} "
                f"| {row['coverage']:.1%} | {row['width']:.4f} "
                f"| {row['pct_coverage']:.1%} | {row['pct_width']:.4f} "
                f"| {1000 * row['seconds']:.1f} |",
                flush=True,
            )
        print()
    if args.part in ("all", "timing"):
        print("Seconds per calibration_error_interval, 1e4 x 10, median [min, max]")
        print()
        print("| error | seconds |")
        print("|---|---|")
        for metric, (med, lo, hi) in timing_table().items():
            print(f"| {metric} | {med:.3f} [{lo:.3f}, {hi:.3f}] |", flush=True)
        print()
    if args.part in ("all", "bootstrap_se"):
        print(
            f"bootstrap_interval('ece').standard_error against the true SE, "
            f"{args.reps} replications per cell, 200 resamples"
        )
        print()
        print("| bed | n | true SE | mean bootstrap SE | overstatement |")
        print("|---|---|---|---|---|")
        cells = [("binary", n, tau) for tau in TAUS for n in (200, 2000)]
        for bed, n, tau in [*cells, ("multiclass", 1000, 1.0)]:
            true_se, boot_se, over = bootstrap_se_cell(
                bed, n, tau, args.reps, args.seed
            )
            name = "10 classes" if bed == "multiclass" else f"binary, tau = {tau}"
            print(
                f"| {name} | {n} | {true_se:.4f} | {boot_se:.4f} | {over:+.1%} |",
                flush=True,
            )
        print()
    if args.part in ("all", "sweep_bias"):
        print(
            f"Bias of the 15-bin plug-in ECE and of ECE-sweep, binary bed, "
            f"{args.reps} replications per cell"
        )
        print()
        print("| tau | n | truth | plug-in bias | sweep bias | share removed |")
        print("|---|---|---|---|---|---|")
        for tau in (1.0, 0.7):
            for n in (200, 1000, 5000):
                true, plug, sweep, removed = sweep_bias_cell(
                    n, tau, args.reps, args.seed
                )
                print(
                    f"| {tau} | {n} | {true:.4f} | {plug:+.4f} | {sweep:+.4f} "
                    f"| {removed:.0%} |",
                    flush=True,
                )
        print()
    if args.part in ("all", "bootstrap_methods"):
        print(
            f"bootstrap_interval('ece') of a calibrated binary model: share of "
            f"{args.reps} replications whose 95 % interval holds the truth 0"
        )
        print()
        print("| n | percentile | basic | bca | bca refused |")
        print("|---|---|---|---|---|")
        for n in (200, 1000, 5000):
            cover, refused = bootstrap_methods_cell(n, args.reps, args.seed)
            print(
                f"| {n} | {cover['percentile']:.1%} | {cover['basic']:.1%} "
                f"| {cover['bca']:.1%} | {refused} |",
                flush=True,
            )
        print()
    if args.part == "benchmark-marks":
        _print_benchmark_marks(args.reps, args.seed, args.jobs)
    if args.part == "benchmark-cost":
        _print_benchmark_cost()
    if args.part in ("all", "comparison"):
        print(
            f"compare_calibration (ECE), rejection rate at 5 %, "
            f"{args.reps} replications"
        )
        print()
        print(
            "| n | A | B | true difference | rejection rate | raw swap test "
            "| coverage of the difference | width | ms / comparison |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for n, k_a, k_b, (rate, cov, width, sec, raw) in comparison_table(
            args.reps, args.seed
        ):
            truth = _pair_truth(k_a) - _pair_truth(k_b)
            print(
                f"| {n} | {k_a} | {k_b} | {truth:.4f} | {rate:.1%} | {raw:.1%} "
                f"| {cov:.1%} "
                f"| {width:.4f} "
                f"| {1000 * sec:.0f} |",
                flush=True,
            )


def _mark_chunk(job):
    n, a_label, b_label, reps, seed = job
    return benchmark_mark_cell(n, a_label, b_label, reps, seed)


def _mark_rows(reps, seed, jobs):
    """Every marks cell's rates: one run of ``reps`` (``jobs`` = 1), or the
    mean of 4 chunks of ``reps / 4`` seeded ``seed + 1000 k``, in ``jobs``
    processes."""
    cells = [(n, a, b) for n in (400, 2000) for a, b in MARK_CELLS]
    if jobs <= 1:
        return [(cell, benchmark_mark_cell(*cell, reps, seed)) for cell in cells]
    from multiprocessing import get_context

    tasks = [(*cell, reps // 4, seed + 1000 * k) for cell in cells for k in range(4)]
    with get_context("fork").Pool(jobs) as pool:
        out = pool.map(_mark_chunk, tasks, chunksize=1)
    return [
        (cell, tuple(np.mean(out[4 * i : 4 * i + 4], axis=0)))
        for i, cell in enumerate(cells)
    ]


def _print_benchmark_marks(reps, seed, jobs=1):
    print(
        "sklcalib benchmark marks: 3 seeds = 3 independent test sets of n rows, "
        f"{reps} replications per cell"
    )
    print()
    print(
        "| n | A | B | test rejects at 5 % | marked | coverage of the mean "
        "difference | width | old bootstrap marked | ms / comparison |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (n, a_label, b_label), rates in _mark_rows(reps, seed, jobs):
        rej, mark, cov, width, old, ms = rates
        print(
            f"| {n} | {a_label} | {b_label} | {rej:.1%} | {mark:.1%} | "
            f"{cov:.1%} | {width:.4f} | {old:.1%} | {ms:.1f} |",
            flush=True,
        )
    print()
    print("Brackets of the mean over 3 seeds of the population ECE")
    print()
    print(
        "| n | model | truth | coverage | width | old basic bracket coverage "
        "| its width |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in (400, 2000):
        for label in ("1.0", "1.5", "1/2"):
            cov, width, old, old_width = benchmark_bracket_cell(n, label, reps, seed)
            print(
                f"| {n} | {label} | {_model_truth(label):.4f} | {cov:.1%} | "
                f"{width:.4f} | {old:.1%} | {old_width:.4f} |",
                flush=True,
            )
    print()
    _print_benchmark_bed_brackets(reps, seed)


def _print_benchmark_bed_brackets(reps, seed):
    """The same brackets on beds of benchmarks/_beds.py: sharp over-confident
    nets (nearly every row in the top bin) and the wine-sized test split."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _beds import sharp_net

    print("Brackets on sharp over-confident nets (3 seeds, truth by quadrature)")
    print()
    print("| bed | n | truth | coverage | width |")
    print("|---|---|---|---|---|")
    for bed in (sharp_net(0.99), sharp_net(0.999)):
        for n in (36, 400, 2000):
            truth, cov, width = benchmark_bracket_bed_cell(bed, n, reps, seed)
            print(
                f"| {bed.name} | {n} | {truth:.4f} | {cov:.1%} | {width:.4f} |",
                flush=True,
            )
    print()


def _print_benchmark_cost():
    out = benchmark_cost()
    print(
        f"Default-run shape: {out['runs']} runs, {out['comparisons']} comparisons "
        f"({out['per_seed_comparisons']} per-seed swap tests)"
    )
    print(
        "report's comparisons, CPU s per repeat: "
        + ", ".join(f"{t:.2f}" for t in out["comparisons_s"])
    )
    print(
        "whole markdown_report, CPU s per repeat: "
        + ", ".join(f"{t:.2f}" for t in out["markdown_report_s"])
    )
    print(
        f"workers: intervals {out['intervals_s']:.2f} CPU s in all, against "
        f"{out['bootstraps_s']:.2f} for the 200-resample bootstraps they replace"
    )


if __name__ == "__main__":
    main()
