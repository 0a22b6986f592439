"""``calibration_report`` against the sum of its parts, and its validations.

The report validates its inputs once and computes every metric from the
validated arrays, so one call should cost no more than calling its metrics
one by one (each of which validates its own inputs). For every size, each
repeat times, back to back on the same data (interleaved, so that a shared
machine's load hits both alike):

- ``calibration_report(y, p, random_state=0)`` (intervals on, the default);
- the public functions that compute the same entries, one after the other:
  ``expected_calibration_error`` (L1, L2, max), ``adaptive_calibration_error``,
  ``classwise_calibration_error``, ``smooth_calibration_error``,
  ``debiased_calibration_error``, ``ece_sweep``, ``kernel_calibration_error``,
  the NLL and Brier score, and ``calibration_error_interval`` of the six
  metrics the report gives intervals for (the ECE's also gives the test's
  p-value).

Printed per size: the median of the per-repeat ratio report / parts, its
range, and the number of ``check_targets`` and ``check_prob_values`` calls
one report makes (counted by wrapping them wherever sklcalib imported them).
Thread settings: those of the environment (printed); run with
``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1`` for one thread. Run::

    python benchmarks/bench_report_parts.py [--sizes 1000x3 20000x10] [--repeats 7]
"""

import argparse
import importlib
import os
import statistics
import sys
import time

import numpy as np


def make_data(n, k, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.minimum((rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
    return y, p


def parts(y, p):
    from sklcalib import metrics

    try:
        from sklcalib.metrics._scoring_rules import (
            brier_score,
            negative_log_likelihood,
        )
    except ImportError:  # a sklcalib before the registry had its own module
        from sklcalib.metrics._plans import brier_score, negative_log_likelihood

    metrics.expected_calibration_error(y, p)
    metrics.expected_calibration_error(y, p, norm="l2")
    metrics.maximum_calibration_error(y, p)
    metrics.adaptive_calibration_error(y, p)
    metrics.classwise_calibration_error(y, p)
    metrics.smooth_calibration_error(y, p)
    metrics.debiased_calibration_error(y, p)
    metrics.ece_sweep(y, p)
    metrics.kernel_calibration_error(y, p)
    negative_log_likelihood(y, p)
    brier_score(y, p)
    for metric in ("ece", "adaptive_ece", "classwise_ece", "debiased_ece"):
        metrics.calibration_error_interval(y, p, metric=metric, random_state=0)
    for metric in ("nll", "brier"):
        metrics.calibration_error_interval(y, p, metric=metric, random_state=0)


def report(y, p):
    from sklcalib.metrics import calibration_report

    calibration_report(y, p, random_state=0)


def count_validations(y, p):
    """Calls of check_targets and check_prob_values in one report."""
    counts = {}
    patched = []
    for function_name in ("check_targets", "check_prob_values"):
        validation = importlib.import_module("sklcalib._utils._validation")
        original = getattr(validation, function_name)
        counts[function_name] = 0

        def counted(*args, _name=function_name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        for name, module in list(sys.modules.items()):
            found = getattr(module, function_name, None)
            if name.startswith("sklcalib") and found is original:
                patched.append((module, function_name, original))
                setattr(module, function_name, counted)
    try:
        report(y, p)
    finally:
        for module, function_name, original in patched:
            setattr(module, function_name, original)
    return counts


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1000x3", "20000x10"])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    threads = {
        key: os.environ.get(key)
        for key in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    print(f"cpus={os.cpu_count()} threads={threads}")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for size in args.sizes:
        n, k = (int(v) for v in size.split("x"))
        y, p = make_data(n, k)
        report(y, p), parts(y, p)  # warm-up: imports, compilation, caches
        ratios, report_times, part_times = [], [], []
        for _ in range(args.repeats):
            r, s = timed(report, y, p), timed(parts, y, p)
            ratios.append(r / s)
            report_times.append(r)
            part_times.append(s)
        counts = count_validations(y, p)
        print(
            f"{n} x {k}: report / parts = {statistics.median(ratios):.2f} "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}; median report "
            f"{statistics.median(report_times):.3f} s, parts "
            f"{statistics.median(part_times):.3f} s); validations per report: "
            f"check_targets {counts['check_targets']}, check_prob_values "
            f"{counts['check_prob_values']}"
        )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
