"""Speed of the benchmark leaders against probmetrics 1.3.

For each calibrator, ours and probmetrics' are fitted on the same data, back
to back in each repeat (interleaved, alternating which goes first, so machine
load hits both alike), after one untimed warm-up fit each (numba caches,
torch's first call). The table gives the median fit seconds of each, the
median of the per-repeat ratios (probmetrics / ours) with their min-max
spread, the median CPU seconds of each (on a loaded machine the wall time
grows, the CPU time of a one-thread call does not), and the largest
difference of the predicted probabilities on the calibration scores (where
probmetrics' spline leaves [0, 1] ours is clipped: the spline row compares
the values inside [1e-6, 1 - 1e-6]).

=========  ===============================  ============================================
name       ours                             probmetrics 1.3
=========  ===============================  ============================================
sms        ``SMSCalibrator()`` on logits    ``SMSCalibrator()`` on ``softmax(logits)``
svs        ``SVSCalibrator()``              ``SVSCalibrator()``
quadratic  ``QuadraticScaler(0, 0)``        ``BinaryLogisticCalibrator("quadratic")``
beta       ``BetaScaler()``                 ``BinaryLogisticCalibrator("beta")``
spline     ``SplineCalibrator()``           ``CDFSplineCalibrator()``
=========  ===============================  ============================================

Besides the comparison (at ``--n-compare`` rows: probmetrics' SMS takes
minutes at 1e5 rows), the targets are timed on ours alone: SMS on
``--n-sms`` x ``--k`` logits (target 2 s) and the spline on ``--n-spline``
binary scores (target 0.2 s), median of ``--repeats``.

Run::

    python benchmarks/bench_leaders.py [--n-compare 10000] [--k 10]
        [--n-sms 100000] [--n-spline 100000] [--repeats 5] [--threads 1]

Thread settings: ``--threads`` caps the BLAS/OpenMP pools (threadpoolctl) and
torch's intra-op threads for both libraries alike (default 1: one core each);
the settings are printed with the results.
"""

import argparse
import os
import statistics
import time
import warnings

import numpy as np
from scipy.special import expit, softmax

from sklcalib.calibration import (
    BetaScaler,
    QuadraticScaler,
    SMSCalibrator,
    SplineCalibrator,
    SVSCalibrator,
)


def _multiclass(n, k, seed=0):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, k)) + rng.normal(size=k)
    truth = softmax(z / 2.0, axis=1)
    y = (truth.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y


def _binary(n, seed=0):
    rng = np.random.default_rng(seed)
    s = 2.0 * rng.normal(size=n)
    y = (rng.random(n) < expit(0.3 + 0.7 * s - 0.08 * s * s)).astype(int)
    p = expit(s).astype(np.float32).astype(np.float64)  # float32, as probmetrics
    return s, p, y


def _cases(n, k):
    from probmetrics import calibrators as pm

    z, y = _multiclass(n, k)
    P = softmax(z, axis=1)
    s, p, yb = _binary(n)
    P2 = np.column_stack([1 - p, p])
    return {
        "sms": (
            lambda: SMSCalibrator().fit(z, y).predict_proba(z),
            lambda: pm.SMSCalibrator().fit(P, y).predict_proba(P),
            None,
        ),
        "svs": (
            lambda: SVSCalibrator().fit(z, y).predict_proba(z),
            lambda: pm.SVSCalibrator().fit(P, y).predict_proba(P),
            None,
        ),
        "quadratic": (
            lambda: QuadraticScaler(0.0, 0.0).fit(s, yb).predict_proba(s),
            lambda: (
                pm.BinaryLogisticCalibrator(type="quadratic")
                .fit(P2, yb)
                .predict_proba(P2)
            ),
            None,
        ),
        "beta": (
            lambda: BetaScaler().fit(p, yb).predict_proba(p),
            lambda: (
                pm.BinaryLogisticCalibrator(type="beta").fit(P2, yb).predict_proba(P2)
            ),
            None,
        ),
        "spline": (
            lambda: SplineCalibrator().fit(p, yb).predict_proba(p),
            lambda: pm.CDFSplineCalibrator().fit(P2, yb).predict_proba(P2),
            (1e-6, 1 - 1e-6),
        ),
    }


def _timed(fn):
    """(wall seconds, output); the CPU seconds of the call go to _CPU."""
    cpu = time.process_time()
    start = time.perf_counter()
    out = fn()
    _CPU.append(time.process_time() - cpu)
    return time.perf_counter() - start, out


#: CPU seconds of the timed calls, in order (a shared machine's load inflates
#: wall time; CPU time of a one-thread call is what the call itself costs)
_CPU = []


def compare(n, k, repeats):
    rows = []
    for name, (ours, theirs, inside) in _cases(n, k).items():
        ours(), theirs()  # warm-up
        ours_t, theirs_t, ratios, diff = [], [], [], 0.0
        ours_cpu, theirs_cpu = [], []
        for r in range(repeats):
            swap = r % 2 == 1
            first, second = (theirs, ours) if swap else (ours, theirs)
            t1, o1 = _timed(first)
            t2, o2 = _timed(second)
            c1, c2 = _CPU[-2:]
            ours_cpu.append(c2 if swap else c1)
            theirs_cpu.append(c1 if swap else c2)
            (to, oo), (tt, ot) = ((t2, o2), (t1, o1)) if swap else ((t1, o1), (t2, o2))
            ours_t.append(to)
            theirs_t.append(tt)
            ratios.append(tt / to)
            keep = (
                np.ones(len(ot), dtype=bool)
                if inside is None
                else np.all((ot > inside[0]) & (ot < inside[1]), axis=1)
            )
            diff = max(diff, float(np.max(np.abs(oo - ot)[keep])))
        rows.append(
            (
                name,
                statistics.median(ours_t),
                statistics.median(theirs_t),
                statistics.median(ratios),
                min(ratios),
                max(ratios),
                diff,
                statistics.median(ours_cpu),
                statistics.median(theirs_cpu),
            )
        )
    return rows


def targets(n_sms, k, n_spline, repeats):
    z, y = _multiclass(n_sms, k, seed=1)
    _, p, yb = _binary(n_spline, seed=1)
    SMSCalibrator().fit(z[:1000], y[:1000])  # warm-up (numba cache of TS)
    out = {}
    for name, fn in (
        (f"SMSCalibrator fit, {n_sms} x {k} logits", lambda: SMSCalibrator().fit(z, y)),
        (
            f"SplineCalibrator fit, {n_spline} binary scores",
            lambda: SplineCalibrator().fit(p, yb),
        ),
    ):
        del _CPU[:]
        times = [_timed(fn)[0] for _ in range(repeats)]
        cpu = statistics.median(_CPU)
        out[name] = (statistics.median(times), min(times), max(times), cpu)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-compare", type=int, default=10000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--n-sms", type=int, default=100000)
    parser.add_argument("--n-spline", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")  # probmetrics' deprecation chatter
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    print(
        f"threads: BLAS/OpenMP capped at {args.threads} (threadpoolctl), torch "
        f"{torch.get_num_threads()}; environment {env}; {os.cpu_count()} CPUs"
    )
    with threadpool_limits(limits=args.threads):
        rows = compare(args.n_compare, args.k, args.repeats)
        goals = targets(args.n_sms, args.k, args.n_spline, args.repeats)
    print(
        f"\nours vs probmetrics 1.3 ({args.n_compare} rows; multiclass K={args.k}), "
        f"{args.repeats} interleaved repeats"
    )
    print(
        f"{'name':<10} {'ours (s)':>9} {'theirs (s)':>11} {'ratio':>8} "
        f"{'spread':>13} {'max |diff|':>11} {'CPU ours':>9} {'CPU theirs':>11}"
    )
    for name, ours, theirs, ratio, low, high, diff, c_ours, c_theirs in rows:
        print(
            f"{name:<10} {ours:>9.4f} {theirs:>11.4f} {ratio:>7.1f}x "
            f"{f'[{low:.1f}, {high:.1f}]':>13} {diff:>11.1e} {c_ours:>9.4f} "
            f"{c_theirs:>11.4f}"
        )
    print("\ntargets (ours alone): wall seconds median [min, max], CPU seconds")
    for name, (median, low, high, cpu) in goals.items():
        print(f"{name:<45} {median:.3f} [{low:.3f}, {high:.3f}]  CPU {cpu:.3f}")


if __name__ == "__main__":
    main()
