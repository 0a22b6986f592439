"""Speed of ``kernel_calibration_error`` and of ``ece_sweep`` at scale.

Each repeat times, back to back on the same data:

- the SKCE's default on ``--n`` binary rows (1-D positive-class scores: the
  exact U-statistic by sorted running sums, O(n log n)) against the tiled
  quadratic estimator on ``--quadratic-n`` of them (O(n^2); its time per
  pair is scaled up to ``--n`` rows as ``t * (n / m)^2``);
- the SKCE's default on ``--n`` x ``--k`` float32 rows (the block estimator
  above 10 000 rows) and the linear estimator;
- ``ece_sweep`` on ``--n`` perfect predictions (the sweep's worst case: every
  number of groups up to n is monotonic) and on calibrated ones.

Also checks the binary fast path against the quadratic estimator on the
``--quadratic-n`` rows (both exact: they agree to rounding). Thread settings
are printed; BLAS runs on one thread inside the SKCE. Run::

    python benchmarks/bench_kernel.py [--n 1000000] [--k 10] [--repeats 3]
"""

import argparse
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info

from sklcalib.metrics import ece_sweep, kernel_calibration_error
from sklcalib.metrics._kernel import median_bandwidth


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--quadratic-n", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"cpus={os.cpu_count()} blas="
        f"{[(i['internal_api'], i['num_threads']) for i in threadpool_info()]}"
    )
    rng = np.random.default_rng(0)
    s = rng.uniform(size=args.n)
    y = (rng.uniform(size=args.n) < s**1.2).astype(int)
    z = rng.normal(size=(args.n, args.k)) * 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
    p /= p.sum(axis=1, keepdims=True, dtype=np.float32)
    yk = np.minimum(
        (rng.uniform(size=(args.n, 1)) > p.cumsum(axis=1)).sum(1), args.k - 1
    )
    m = args.quadratic_n
    two = np.column_stack([1 - s[:m], s[:m]])
    nu = median_bandwidth(s[:m])
    fast_m = kernel_calibration_error(y[:m], s[:m], bandwidth=nu, labels=[0, 1])
    quad_m = kernel_calibration_error(
        y[:m], two, bandwidth=nu, estimator="block", block_size=m
    )
    print(f"binary exact vs quadratic on {m} rows: {fast_m:.12g} vs {quad_m:.12g}")
    rows = {
        key: []
        for key in (
            "binary",
            "quadratic*",
            "block",
            "linear",
            "sweep_perfect",
            "sweep_calibrated",
        )
    }
    for _ in range(args.repeats):
        rows["binary"].append(
            timed(lambda: kernel_calibration_error(y, s, labels=[0, 1]))[0]
        )
        t, _ = timed(
            lambda: kernel_calibration_error(
                y[:m], two, bandwidth=nu, estimator="block", block_size=m
            )
        )
        rows["quadratic*"].append(t * (args.n / m) ** 2)
        rows["block"].append(timed(lambda: kernel_calibration_error(yk, p))[0])
        rows["linear"].append(
            timed(lambda: kernel_calibration_error(yk, p, estimator="linear"))[0]
        )
        rows["sweep_perfect"].append(
            timed(lambda: ece_sweep(np.ones(args.n, int), 0.5 + s / 2, labels=[0, 1]))[
                0
            ]
        )
        rows["sweep_calibrated"].append(
            timed(lambda: ece_sweep(y, s, labels=[0, 1]))[0]
        )
    print(f"n={args.n} k={args.k} repeats={args.repeats}")
    for key, times in rows.items():
        print(
            f"{key:18s} median {statistics.median(times):10.3f} s "
            f"(range {min(times):.3f}-{max(times):.3f})"
        )
    print("quadratic*: the quadratic estimator's time on --quadratic-n rows, scaled")


if __name__ == "__main__":
    main()
