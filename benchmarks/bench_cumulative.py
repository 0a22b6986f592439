"""Size and speed of the cumulative calibration tests.

Size: how often :func:`sklcalib.metrics.cumulative_calibration_test` (Kuiper
and KS) and :func:`sklcalib.metrics.spiegelhalter_test` reject a calibrated
model at the 5 % level. Each simulation draws scores, then labels from the
scores themselves (calibrated by construction):

- binary, n = 1,000: ``p ~ U(0, 1)`` and ``p ~ Beta(0.5, 4)`` (rare events);
- top-label, K = 10, n = 5,000: rows ``~ Dirichlet(0.3, ..., 0.3)``, labels
  drawn from the rows;
- classwise, the same rows (Bonferroni over the 10 classes: at most 5 %).

Speed: the cumulative test on 10^6 binary rows against ``numpy.argsort`` of the
same scores (the floor of any route that sorts), one thread, interleaved:
each repeat times every contender back to back; the median ratio and its
interquartile range are printed, with mcgrad's ``ecce_pvalue`` and MAPIE's
``kuiper_p_value`` beside them when installed. Run::

    python benchmarks/bench_cumulative.py [--sims 2000] [--repeats 15]

(about 3 minutes with the defaults on one idle core).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from sklcalib.metrics import (  # noqa: E402
    cumulative_calibration_test,
    spiegelhalter_test,
)


def _band(k, n):
    """Wilson 95 % interval of a rate, in percent."""
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def _binary_bed(rng, n, kind):
    p = rng.uniform(size=n) if kind == "uniform" else rng.beta(0.5, 4.0, size=n)
    return (rng.uniform(size=n) < p).astype(int), p


def _multiclass_bed(rng, n, k):
    prob = rng.dirichlet(np.full(k, 0.3), size=n)
    u = rng.uniform(size=(n, 1))
    return (prob.cumsum(axis=1) < u * prob.sum(axis=1, keepdims=True)).sum(1).clip(
        max=k - 1
    ), prob


def size_table(sims, seed=0):
    rows = []
    rng = np.random.default_rng(seed)
    for kind in ("uniform", "beta"):
        counts = {"Kuiper": 0, "KS": 0, "Spiegelhalter": 0}
        for _ in range(sims):
            y, p = _binary_bed(rng, 1000, kind)
            res = cumulative_calibration_test(y, p, labels=[0, 1])
            counts["Kuiper"] += res.pvalue <= 0.05
            res = cumulative_calibration_test(y, p, statistic="ks", labels=[0, 1])
            counts["KS"] += res.pvalue <= 0.05
            counts["Spiegelhalter"] += (
                spiegelhalter_test(y, p, labels=[0, 1]).pvalue <= 0.05
            )
        bed = "p ~ U(0, 1)" if kind == "uniform" else "p ~ Beta(0.5, 4)"
        for test, k in counts.items():
            rows.append((f"binary, n = 1,000, {bed}", test, k))
    counts = {"Kuiper": 0, "KS": 0, "Kuiper classwise": 0}
    for _ in range(sims):
        y, prob = _multiclass_bed(rng, 5000, 10)
        labels = range(10)
        counts["Kuiper"] += (
            cumulative_calibration_test(y, prob, labels=labels).pvalue <= 0.05
        )
        counts["KS"] += (
            cumulative_calibration_test(y, prob, statistic="ks", labels=labels).pvalue
            <= 0.05
        )
        counts["Kuiper classwise"] += (
            cumulative_calibration_test(y, prob, mode="classwise", labels=labels).pvalue
            <= 0.05
        )
    for test, k in counts.items():
        rows.append(("top-label, K = 10, n = 5,000", test, k))
    print(f"Size at the 5 % level, {sims} simulations per row (Wilson 95 % band):")
    print()
    print(".. csv-table::")
    print('   :header: "bed", "test", "rejected", "95 % band"')
    print()
    for bed, test, k in rows:
        low, high = _band(k, sims)
        print(
            f'   "{bed}", "{test}", "{100 * k / sims:.1f} %", "{low:.1f}-{high:.1f} %"'
        )
    print(flush=True)


def speed(repeats, n=10**6, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    contenders = {
        "numpy.argsort": lambda: np.argsort(p),
        "cumulative_calibration_test": lambda: cumulative_calibration_test(y, p),
    }
    try:
        from mcgrad.metrics import ecce_pvalue

        contenders["mcgrad ecce_pvalue"] = lambda: ecce_pvalue(y, p)
    except ImportError:
        pass
    try:
        from mapie.metrics.calibration import kuiper_p_value

        contenders["MAPIE kuiper_p_value"] = lambda: kuiper_p_value(y, p)
    except ImportError:
        pass
    times = {name: [] for name in contenders}
    for f in contenders.values():  # warm up
        f()
    for _ in range(repeats):
        for name, f in contenders.items():
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    base = np.array(times["numpy.argsort"])
    print(f"Speed on {n:,} binary rows, one thread, {repeats} interleaved repeats:")
    print()
    print("| contender | median time | ratio to argsort (median, IQR) |")
    print("|---|---|---|")
    for name, t in times.items():
        ratio = np.array(t) / base
        q1, med, q3 = np.percentile(ratio, [25, 50, 75])
        print(
            f"| {name} | {1e3 * np.median(t):.1f} ms | {med:.2f} ({q1:.2f}-{q3:.2f}) |"
        )
    print(flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--skip-size", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_speed:
        speed(args.repeats)
    if not args.skip_size:
        size_table(args.sims)


if __name__ == "__main__":
    main()
