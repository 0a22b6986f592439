"""Speed of the Venn–ABERS and Dirichlet calibrators.

Venn–ABERS: ``VennAbersCalibrator().fit(p_cal, y_cal).predict_interval(p_test)``
against the ``venn-abers`` package's ``VennAbers().fit(...).predict_proba(...)``
on the same binary data (``--n-cal`` calibration and ``--n-test`` test
probabilities, labels drawn from ``p**1.5``; ``--decimals`` rounds the scores to
create ties). Both get one untimed warm-up call (sklcalib's numba kernel, used
from 2 000 distinct calibration scores on, loads from its disk cache). Each
repeat times both back to back (interleaved, alternating which goes first),
so machine load hits both alike; the table gives the
median seconds, the median of the per-repeat ratios and their spread, and the
largest difference of the outputs (p0, p1).

Dirichlet: ``DirichletCalibrator().fit`` on ``--n-dirichlet`` x ``--k``
over-confident probabilities, median of the repeats.

Run::

    python benchmarks/bench_calibrators.py [--n-cal 10000] [--n-test 100000]
        [--repeats 7] [--decimals N]

Thread settings: the numpy/BLAS thread count is whatever the environment sets
(OMP_NUM_THREADS etc.); it is printed with the results.
"""

import argparse
import os
import statistics
import time

import numpy as np
from scipy.special import softmax

from sklcalib.calibration import DirichletCalibrator, VennAbersCalibrator


def _venn_abers_package(p_cal, y_cal, p_test):
    from venn_abers import VennAbers

    model = VennAbers().fit(np.column_stack([1 - p_cal, p_cal]), y_cal)
    _, interval = model.predict_proba(np.column_stack([1 - p_test, p_test]))
    return interval[:, 0], interval[:, 1]


def _sklcalib(p_cal, y_cal, p_test):
    return VennAbersCalibrator().fit(p_cal, y_cal).predict_interval(p_test)


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def bench_venn_abers(n_cal, n_test, repeats, decimals):
    rng = np.random.default_rng(0)
    p_cal = rng.uniform(size=n_cal)
    p_test = rng.uniform(size=n_test)
    if decimals is not None:
        p_cal, p_test = np.round(p_cal, decimals), np.round(p_test, decimals)
    y_cal = (rng.uniform(size=n_cal) < p_cal**1.5).astype(int)
    # warm-up: numba loads (or compiles) its cached kernel on the first call
    _sklcalib(p_cal, y_cal, p_test[:10])
    _venn_abers_package(p_cal, y_cal, p_test[:10])
    ours_t, theirs_t, ratios, diff = [], [], [], 0.0
    for r in range(repeats):
        order = [_sklcalib, _venn_abers_package][:: 1 if r % 2 == 0 else -1]
        times = {}
        outs = {}
        for fn in order:
            times[fn], outs[fn] = _timed(fn, p_cal, y_cal, p_test)
        ours_t.append(times[_sklcalib])
        theirs_t.append(times[_venn_abers_package])
        ratios.append(times[_venn_abers_package] / times[_sklcalib])
        diff = max(
            diff,
            *(
                float(np.max(np.abs(a - b)))
                for a, b in zip(outs[_sklcalib], outs[_venn_abers_package], strict=True)
            ),
        )
    print(
        f"Venn-ABERS {n_cal} calibration x {n_test} test "
        f"(decimals={decimals}), {repeats} interleaved repeats"
    )
    print(f"  sklcalib VennAbersCalibrator  median {statistics.median(ours_t):.3f} s")
    print(f"  venn-abers VennAbers          median {statistics.median(theirs_t):.3f} s")
    print(
        f"  ratio venn-abers / sklcalib   median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}); "
        f"max |difference| of (p0, p1) {diff:.1e}"
    )


def bench_dirichlet(n, k, repeats):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(n, k))
    y = np.array([rng.choice(k, p=q) for q in softmax(logits, axis=1)])
    proba = softmax(3 * logits, axis=1)
    times = [_timed(DirichletCalibrator().fit, proba, y)[0] for _ in range(repeats)]
    print(
        f"DirichletCalibrator().fit on {n} x {k}: "
        f"median {statistics.median(times):.3f} s "
        f"(min {min(times):.3f}, max {max(times):.3f})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cal", type=int, default=10_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--n-dirichlet", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--decimals", type=int, default=None)
    args = parser.parse_args()
    threads = {
        name: os.environ.get(name, "unset")
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    print(f"threads: {threads}; os.cpu_count() = {os.cpu_count()}")
    bench_venn_abers(args.n_cal, args.n_test, args.repeats, args.decimals)
    bench_dirichlet(args.n_dirichlet, args.k, args.repeats)


if __name__ == "__main__":
    main()
