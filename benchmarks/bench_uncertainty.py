"""Speed of the uncertainty estimators: bootstrap, consistency test and SKCE.

On the same data (1e5 x 10 float32 by default), each repeat times back to back:

- ``sklcalib.metrics.bootstrap_interval("ece", ...)`` with ``--resamples``
  resamples (the resampling engine: per-bin sums of the rows drawn, no
  recomputation of the ECE);
- ``scipy.stats.bootstrap`` with ``sklcalib.metrics.expected_calibration_error``
  as the statistic (rows resampled through an index, ``vectorized=False``), on
  ``--scipy-resamples`` resamples: the ratio is per resample;
- the authors' package of Kumar et al. (``uncertainty-calibration``): the
  bootstrap of ``get_calibration_error_uncertainties`` (their
  ``bootstrap_uncertainty`` over ``get_calibration_error``), on
  ``--kumar-resamples`` resamples: the ratio is per resample (their statistic
  is their own binned L2 error, ours the ECE: both are binned errors of the
  whole table);
- ``sklcalib.metrics.calibration_test`` with ``--resamples`` label draws;
- ``sklcalib.metrics.kernel_calibration_error`` (unbiased) on ``--skce-n``
  rows.

Reported: the median time of every contender and the median and range of the
per-repeat ratios. Run::

    python benchmarks/bench_uncertainty.py [--n 100000] [--k 10] [--repeats 5]
"""

import argparse
import os
import statistics
import time

import numpy as np


def make_data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = rng.uniform(size=(n, 1))
    y = np.minimum((u > p.cumsum(axis=1)).sum(axis=1), k - 1)
    return p.astype(np.float32), y


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--scipy-resamples", type=int, default=50)
    parser.add_argument("--kumar-resamples", type=int, default=3)
    parser.add_argument("--skce-n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import calibration as kumar
    import numba
    import scipy.stats

    from sklcalib.metrics import (
        bootstrap_interval,
        calibration_test,
        expected_calibration_error,
        kernel_calibration_error,
    )

    p, y = make_data(args.n, args.k)
    p_skce, y_skce = make_data(args.skce_n, args.k, seed=1)
    index = np.arange(args.n)
    pairs = list(zip(p, y, strict=True))

    def kumar_functional(data):
        probs, labels = zip(*data, strict=True)
        return kumar.get_calibration_error(
            probs, labels, p=2, debias=False, mode="top-label"
        )

    contenders = {
        "sklcalib bootstrap": lambda: bootstrap_interval(
            "ece", y, p, n_resamples=args.resamples, random_state=0
        ),
        "scipy.stats.bootstrap": lambda: scipy.stats.bootstrap(
            (index,),
            lambda i: expected_calibration_error(y[i], p[i]),
            vectorized=False,
            n_resamples=args.scipy_resamples,
            method="percentile",
            random_state=0,
        ),
        "authors' bootstrap": lambda: kumar.bootstrap_uncertainty(
            pairs, kumar_functional, num_samples=args.kumar_resamples
        ),
        "sklcalib calibration_test": lambda: calibration_test(
            y, p, n_resamples=args.resamples, random_state=0
        ),
        "sklcalib SKCE unbiased": lambda: kernel_calibration_error(y_skce, p_skce),
    }
    per_resample = {
        "sklcalib bootstrap": args.resamples,
        "scipy.stats.bootstrap": args.scipy_resamples,
        # their bootstrap also evaluates the statistic on the data twice
        "authors' bootstrap": args.kumar_resamples + 2,
        "sklcalib calibration_test": args.resamples,
        "sklcalib SKCE unbiased": 1,
    }
    for fn in contenders.values():  # warm-up: numba compilation, caches
        fn()
    times = {name: [] for name in contenders}
    for _ in range(args.repeats):  # interleaved: every contender in each repeat
        for name, fn in contenders.items():
            times[name].append(timed(fn) / per_resample[name])

    print(
        f"n={args.n} k={args.k} float32, {args.repeats} repeats, numba threads "
        f"{numba.get_num_threads()}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs"
    )
    for name, ts in times.items():
        unit = "s" if name.endswith("unbiased") else "ms/resample"
        scale = 1.0 if unit == "s" else 1e3
        print(f"  {name:28s} {statistics.median(ts) * scale:10.3f} {unit}")
    ours = np.array(times["sklcalib bootstrap"])
    for name in ("scipy.stats.bootstrap", "authors' bootstrap"):
        ratio = np.array(times[name]) / ours
        print(
            f"  per resample, {name} / sklcalib bootstrap: median "
            f"{np.median(ratio):.0f}x (range {ratio.min():.0f}x-{ratio.max():.0f}x)"
        )
    test = np.array(times["sklcalib calibration_test"])
    ratio = test / ours
    print(
        f"  calibration_test / bootstrap: median {np.median(ratio):.2f}x "
        f"(range {ratio.min():.2f}x-{ratio.max():.2f}x)"
    )


if __name__ == "__main__":
    main()
