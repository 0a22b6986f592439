"""Size, power, coverage and speed of the segment audit.

The bed: ``n`` rows with seven categorical columns of five equally likely
levels each (independent of the scores), the scores ``p = sigmoid(z)``,
``z ~ N(-1, 1)``, and an eighth column ``flag``, 1 on a random 5 % of the
rows. Audited up to depth 2 with ``min_rows=30``: 1 + 42 + 28 x 25 + ... =
667 segments at n = 10^4 (every cell has about 400 rows or more).

- Size: labels drawn from ``p`` (calibrated in every segment). How often the
  audit's family-wise p-value is <= 0.05 (``n_resamples=1000``), against the
  unadjusted minimum of the per-segment p-values (what mcgrad's
  ``MulticalibrationError.mce_pvalue`` reports; both from the same segment
  statistics, equal to mcgrad's), and mcgrad's own ``mce_pvalue`` on the
  same data and segments for the first simulations when mcgrad is installed.
- Power: the rows with ``flag = 1`` get outcome probability ``p + delta``
  (probability scale, clipped to [0, 1]) or ``sigmoid(z + delta)`` (logit
  scale). The design (columns and scores) is fixed per n, so the null law of
  the maximum, which depends on the scores and the segments only, is
  simulated once (4,000 draws) and every simulation compares its maximum
  with that law's 95 % quantile: the rejection rate of the audit with many
  resamples. The global cumulative test (all rows, no segments) is shown
  beside it.
- Coverage: with ``delta = 0.05`` (probability scale) on the flagged rows,
  how often the pointwise 95 % interval of a segment's gap covers its true
  gap (mean of ``true p - p`` over the segment; averaged over segments), and
  how often the worst segment's interval (simultaneous) covers the worst
  segment's true gap.
- Speed: the audit with its family-wise p-value (1,000 null draws) against
  mcgrad 0.1.5's unadjusted ``MulticalibrationError`` on the same data and
  segments (its ``mce_pvalue``), one thread, interleaved repeats; the numpy
  path (numba disabled) too.

Run::

    python benchmarks/bench_multicalibration.py [--sims 1000] [--power-sims 200]

(the size part takes about 1 s per simulation on one idle core with numba).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.special import expit  # noqa: E402

from sklcalib._utils._optional import DISABLE_NUMBA_ENV  # noqa: E402
from sklcalib._utils._segment_audit import audit_core, binary_draws  # noqa: E402
from sklcalib._utils._segments import build_segments  # noqa: E402
from sklcalib.metrics import (  # noqa: E402
    cumulative_calibration_test,
    multicalibration_audit,
)

ALPHA = 0.05


def design(n, seed):
    """The bed's columns (DataFrame), logits and flag."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 5, n).astype(str) for j in range(7)})
    flag = rng.uniform(size=n) < 0.05
    frame["flag"] = np.where(flag, "1", "0")
    z = rng.normal(-1.0, 1.0, n)
    return frame, z, flag


def _band(k, n):
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def _mcgrad_pvalue(frame, y, p):
    from mcgrad.metrics import MulticalibrationError

    df = frame.copy()
    df["label"], df["score"] = y, p
    mce = MulticalibrationError(
        df,
        label_column="label",
        score_column="score",
        categorical_segment_columns=list(frame.columns),
        max_depth=2,
        max_values_per_segment_feature=5,
        min_samples_per_segment=30,
        max_n_segments=None,
        precision_dtype="float64",
    )
    return float(mce.mce_pvalue), int(mce.total_number_segments)


def size(sims, n=10**4, mcgrad_sims=50):
    frame, _, _ = design(n, 0)
    rng = np.random.default_rng(1)
    ours = unadjusted = 0
    theirs, n_theirs, mcgrad_segments = 0, 0, None
    try:
        import mcgrad  # noqa: F401

        have_mcgrad = True
    except ImportError:
        have_mcgrad = False
    started = time.perf_counter()
    for sim in range(sims):
        p = expit(rng.normal(-1.0, 1.0, n))
        y = (rng.uniform(size=n) < p).astype(int)
        audit = multicalibration_audit(
            y, p, frame, max_depth=2, min_rows=30, random_state=sim, labels=[0, 1]
        )
        ours += audit.pvalue <= ALPHA
        unadjusted += audit.table["pvalue_unadjusted"].min() <= ALPHA
        if have_mcgrad and sim < mcgrad_sims:
            pvalue, mcgrad_segments = _mcgrad_pvalue(frame, y, p)
            theirs += pvalue <= ALPHA
            n_theirs += 1
    elapsed = time.perf_counter() - started
    print(
        f"Size at the 5 % level: calibrated labels, n = {n:,}, "
        f"{audit.n_segments} segments (mcgrad: {mcgrad_segments}), {sims} "
        f"simulations ({elapsed / sims:.2f} s each):"
    )
    print()
    print(".. csv-table::")
    print('   :header: "test", "rejected", "95 % band"')
    print()
    for name, k, m in (
        ("multicalibration_audit, family-wise p-value", ours, sims),
        ("minimum of unadjusted per-segment p-values", unadjusted, sims),
        ("mcgrad 0.1.5 MulticalibrationError.mce_pvalue", theirs, n_theirs),
    ):
        if m:
            low, high = _band(k, m)
            print(
                f'   "{name}", "{100 * k / m:.1f} % of {m}", "{low:.1f}-{high:.1f} %"'
            )
    print(flush=True)


def _shifted(z, flag, delta, scale):
    p = expit(z)
    if scale == "probability":
        true = np.where(flag, np.clip(p + delta, 0.0, 1.0), p)
    else:
        true = np.where(flag, expit(z + delta), p)
    return p, true


def power(sims, sizes=(10**4, 10**5), deltas=(0.02, 0.04, 0.06, 0.08, 0.1)):
    rows = []
    for n in sizes:
        frame, z, flag = design(n, 2)
        p = expit(z)
        segset = build_segments(frame, n, max_depth=2, min_rows=30)
        # the null law of the maximum depends on p and the segments only
        null = audit_core(
            [(np.zeros(n, dtype=bool), p)],
            None,
            segset,
            draws=binary_draws(p),
            n_resamples=4000,
            random_state=0,
        ).null_maximum
        critical = np.quantile(null, 1 - ALPHA, method="higher")
        rng = np.random.default_rng(3)
        for scale in ("probability", "logit"):
            for delta in deltas:
                _, true = _shifted(z, flag, delta, scale)
                audit_hits = global_hits = 0
                for _ in range(sims):
                    y = rng.uniform(size=n) < true
                    observed = audit_core(
                        [(y, p)],
                        None,
                        segset,
                        draws=binary_draws(p),
                        n_resamples=1,
                        random_state=0,
                    ).scaled_statistic.max()
                    audit_hits += observed > critical
                    global_hits += cumulative_calibration_test(y, p).pvalue <= ALPHA
                rows.append(
                    (n, scale, delta, audit_hits, global_hits, segset.n_segments)
                )
                print(rows[-1], flush=True)
    print()
    print(
        f"Power at the 5 % level: the 5 % of rows with flag = 1 shifted by delta, "
        f"{sims} simulations per cell:"
    )
    print()
    print(".. csv-table::")
    print(
        '   :header: "scale", "delta", '
        + ", ".join(f'"audit, n = {n:,}", "global test, n = {n:,}"' for n in sizes)
    )
    print()
    for scale in ("probability", "logit"):
        for delta in deltas:
            cells = []
            for n in sizes:
                (row,) = [r for r in rows if r[:3] == (n, scale, delta)]
                cells += [
                    f"{100 * row[3] / sims:.0f} %",
                    f"{100 * row[4] / sims:.0f} %",
                ]
            print(f'   "{scale}", "{delta:g}", ' + ", ".join(f'"{c}"' for c in cells))
    print(flush=True)


def coverage(sims, n=10**4, delta=0.05):
    frame, z, flag = design(n, 4)
    p, true = _shifted(z, flag, delta, "probability")
    segset = build_segments(frame, n, max_depth=2, min_rows=30)
    true_gap = np.add.reduceat(
        (true - p)[segset.indices], segset.indptr[:-1]
    ) / np.diff(segset.indptr)
    rng = np.random.default_rng(5)
    pointwise, worst_covered = [], 0
    for sim in range(sims):
        y = (rng.uniform(size=n) < true).astype(int)
        audit = multicalibration_audit(
            y, p, frame, max_depth=2, min_rows=30, random_state=sim, labels=[0, 1]
        )
        t = audit.table
        pointwise.append(
            np.mean((t["gap_low"] <= true_gap) & (true_gap <= t["gap_high"]))
        )
        s = int(np.argmax(t["scaled_statistic"]))
        low, high = audit.worst_interval
        worst_covered += low <= true_gap[s] <= high
    print(
        f"Coverage with the flagged 5 % of rows shifted by {delta} (probability "
        f"scale), n = {n:,}, {segset.n_segments} segments, {sims} simulations:"
    )
    print()
    print(".. csv-table::")
    print('   :header: "interval", "nominal", "covers the true gap"')
    print()
    share = 100 * np.mean(pointwise)
    print(f'   "per-segment gap interval (pointwise)", "95 %", "{share:.1f} %"')
    low, high = _band(worst_covered, sims)
    print(
        f'   "worst segment\'s interval (simultaneous)", "95 %", '
        f'"{100 * worst_covered / sims:.1f} % ({low:.1f}-{high:.1f} %)"'
    )
    print(flush=True)


def speed(repeats, n=10**4):
    frame, z, _ = design(n, 6)
    p = expit(z)
    y = (np.random.default_rng(7).uniform(size=n) < p).astype(int)

    def ours():
        return multicalibration_audit(y, p, frame, random_state=0, labels=[0, 1])

    def ours_numpy():
        os.environ[DISABLE_NUMBA_ENV] = "1"
        try:
            return ours()
        finally:
            del os.environ[DISABLE_NUMBA_ENV]

    contenders = {
        "multicalibration_audit (numba)": ours,
        "same, numpy path": ours_numpy,
    }
    try:
        import mcgrad  # noqa: F401

        contenders["mcgrad MulticalibrationError"] = lambda: _mcgrad_pvalue(frame, y, p)
    except ImportError:
        pass
    for f in contenders.values():
        f()  # warm up (numba compiles once, cached)
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, f in contenders.items():
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    n_segments = ours().n_segments
    base = np.array(times[next(iter(contenders))])
    print(
        f"Speed: {n_segments} segments x {n:,} rows, family-wise p-value from "
        f"1,000 null draws, one thread, {repeats} interleaved repeats:"
    )
    print()
    print("| contender | median time | ratio to the audit (median, IQR) |")
    print("|---|---|---|")
    for name, t in times.items():
        ratio = np.array(t) / base
        q1, med, q3 = np.percentile(ratio, [25, 50, 75])
        print(f"| {name} | {np.median(t):.2f} s | {med:.2f} ({q1:.2f}-{q3:.2f}) |")
    print(flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--power-sims", type=int, default=200)
    parser.add_argument("--coverage-sims", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--parts", nargs="+", default=["speed", "size", "power", "coverage"]
    )
    args = parser.parse_args(argv)
    if "speed" in args.parts:
        speed(args.repeats)
    if "size" in args.parts:
        size(args.sims)
    if "power" in args.parts:
        power(args.power_sims)
    if "coverage" in args.parts:
        coverage(args.coverage_sims)


if __name__ == "__main__":
    main()
