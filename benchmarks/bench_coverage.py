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

For every cell: the coverage of the nominal interval of
``calibration_error_interval`` and of the percentile ``bootstrap_interval``
(200 resamples), their mean widths, and the time per interval; for the
comparison, the rejection rate at 5 % of ``compare_calibration``; with
``--part bootstrap_se``, the percentile bootstrap's ``standard_error`` of the
ECE against the estimator's true standard error; with ``--part sweep_bias``,
the share of the 15-bin plug-in ECE's bias that ECE-sweep removes; with
``--part bootstrap_methods``, how often the percentile, basic and BCa
bootstrap intervals of a calibrated model's ECE contain its true error 0.
Run::

    python benchmarks/bench_coverage.py [--reps 400] [--seed 0] [--part all]
        [--metrics ece,debiased_ece,classwise_ece]

(single-threaded BLAS). Measured on 2 cores shared with other jobs (load
average 3-4): ``--part coverage --reps 200 --percentile-every 5`` and
``--part comparison --reps 300`` about a minute each, ``--part bootstrap_se
--reps 400`` 25 s, ``--part sweep_bias --reps 1000`` 6 s, ``--part
bootstrap_methods --reps 200`` 3 min (the BCa jackknife); ``--part all`` with
its 400 replications takes the sum, scaled.
"""

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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
    s = 1.5
    v = np.sqrt(1.0 + s * s)
    x1 = rng.normal(0.0, s, size=n)
    x2 = rng.normal(0.0, s, size=n)
    y = (rng.uniform(size=n) < ndtr(x1 + x2)).astype(int)
    return y, ndtr(k_a * x1 / v), ndtr(k_b * x2 / v)


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


def rejection_rate(n, k_a, k_b, reps, seed, metric="ece"):
    """(rejection rate at 5 %, coverage of the difference of population
    errors, mean interval width, seconds per comparison)."""
    from sklcalib.metrics import compare_calibration

    rng = np.random.default_rng(seed)
    truth = comparison_truth(k_a) - comparison_truth(k_b)
    rejected = covered = width = elapsed = 0.0
    for r in range(reps):
        y, a, b = comparison_bed(rng, n, k_a, k_b)
        t0 = time.perf_counter()
        res = compare_calibration(y, a, b, metric=metric, random_state=r)
        elapsed += time.perf_counter() - t0
        rejected += res.pvalue < 0.05
        covered += res.low <= truth <= res.high
        width += res.high - res.low
    return rejected / reps, covered / reps, width / reps, elapsed / reps


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


def comparison_table(reps, seed):
    rows = []
    for n in (500, 2000):
        for k_a, k_b in ((1.0, 1.0), (1.5, 1.5), (1.0, 1.5)):
            rows.append((n, k_a, k_b, rejection_rate(n, k_a, k_b, reps, seed)))
    return rows


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
    if args.part in ("all", "comparison"):
        print(
            f"compare_calibration (ECE), rejection rate at 5 %, "
            f"{args.reps} replications"
        )
        print()
        print(
            "| n | k_a | k_b | rejection rate | coverage of the difference "
            "| width | ms / comparison |"
        )
        print("|---|---|---|---|---|---|---|")
        for n, k_a, k_b, (rate, cov, width, sec) in comparison_table(
            args.reps, args.seed
        ):
            print(
                f"| {n} | {k_a} | {k_b} | {rate:.1%} | {cov:.1%} | {width:.4f} "
                f"| {1000 * sec:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
