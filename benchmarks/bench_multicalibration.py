"""Size, power, coverage and speed of the segment audit.

The bed: ``n`` rows with seven categorical columns of five equally likely
levels each (independent of the scores), the scores ``p = sigmoid(z)``,
``z ~ N(-1, 1)``, and an eighth column ``flag``, 1 on a random 5 % of the
rows. Audited up to depth 2 with ``min_rows=30``: 1 + (35 + 2) + (21 x 25 +
7 x 5 x 2) = 633 segments at n = 10^4 and 10^5 (the smallest, ``flag = 1``
with a level of another column, hold about 1 % of the rows).

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
  simulated once (4,000 draws), and the simulations, drawn by the audit's
  own kernel from the shifted probabilities, compare their maximum with that
  law's critical value: the rejection rate of the audit with many
  resamples. The global cumulative test (all rows as one segment, its
  Brownian p-value) is shown beside it, on the same draws.
- Coverage: with ``delta = 0.05`` (probability scale) on the flagged rows,
  how often the pointwise 95 % interval of a segment's gap covers its true
  gap (mean of ``true p - p`` over the segment; averaged over segments), and
  how often the worst segment's interval (simultaneous, its critical value
  from 4,000 null draws on the fixed design) covers the worst segment's true
  gap; the intervals are those the audit computes (``gap_interval``).
- Speed: the audit with its family-wise p-value (1,000 null draws) against
  mcgrad 0.1.5's unadjusted ``MulticalibrationError`` on the same data and
  segments (its ``mce_pvalue``), one thread, interleaved repeats; the numpy
  path (numba disabled) too.

Run::

    python benchmarks/bench_multicalibration.py [--sims 1000] [--power-sims 200]
        [--size-resamples 1000] [--parts speed size power coverage]

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
from scipy.special import expit, ndtri  # noqa: E402

from sklcalib._utils._brownian import brownian_range_sf  # noqa: E402
from sklcalib._utils._optional import DISABLE_NUMBA_ENV  # noqa: E402
from sklcalib._utils._resampling import stream_seeds  # noqa: E402
from sklcalib._utils._segment_audit import (  # noqa: E402
    _extremes,
    _layout,
    _order_statistic,
    _segment_sums,
    binary_draws,
    gap_interval,
    simulate_maxima,
)
from sklcalib._utils._segments import build_segments  # noqa: E402
from sklcalib.metrics import multicalibration_audit  # noqa: E402

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


def size(sims, n=10**4, mcgrad_sims=50, resamples=1000, seed=1, progress=0):
    """Rejection rates on calibrated labels; ``seed`` picks the stream of the
    simulations (parts run apart add up: their counts are printed), and
    ``progress`` prints the running counts every that many simulations."""
    frame, _, _ = design(n, 0)
    rng = np.random.default_rng(seed)
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
            y,
            p,
            frame,
            max_depth=2,
            min_rows=30,
            n_resamples=resamples,
            random_state=1_000_000 * seed + sim,
            labels=[0, 1],
        )
        ours += audit.pvalue <= ALPHA
        unadjusted += audit.table["pvalue_unadjusted"].min() <= ALPHA
        if have_mcgrad and sim < mcgrad_sims:
            pvalue, mcgrad_segments = _mcgrad_pvalue(frame, y, p)
            theirs += pvalue <= ALPHA
            n_theirs += 1
        if progress and (sim + 1) % progress == 0:
            print(
                f"seed {seed}: {sim + 1} simulations, family-wise {ours}, "
                f"unadjusted minimum {unadjusted}, mcgrad {theirs} of {n_theirs}",
                flush=True,
            )
    elapsed = time.perf_counter() - started
    print(
        f"Size at the 5 % level: calibrated labels, n = {n:,}, "
        f"{audit.n_segments} segments (mcgrad: {mcgrad_segments}), {sims} "
        f"simulations, {resamples} null draws each ({elapsed / sims:.2f} s each):"
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


def _critical(maxima):
    """The value the maximum must exceed for a p-value <= ALPHA."""
    return _order_statistic(np.sort(maxima), ALPHA)


#: the shifts of the power table: on the probability scale as the issue's
#: 0.02-0.10; on the logit scale larger ones (a logit shift of 0.1 moves a
#: probability of 0.27, the bed's mean, by only 0.02)
DELTAS = {
    "probability": (0.02, 0.04, 0.06, 0.08, 0.1),
    "logit": (0.1, 0.25, 0.5, 0.75, 1.0),
}


def power(sims, sizes=(10**4, 10**5)):
    """Rejection rates of the audit and of the global test on the fixed design
    of each n: the draws of the simulations are those of the audit's own
    kernel, from the shifted probabilities instead of the model's."""
    rows = []
    for n in sizes:
        frame, z, flag = design(n, 2)
        p = expit(z)
        segset = build_segments(frame, n, max_depth=2, min_rows=30)
        every = build_segments({"all": np.ones(n, dtype=bool)}, n, min_rows=1)
        null, _ = simulate_maxima(
            [p], None, segset, binary_draws(p), stream_seeds(0, 4000)
        )
        critical = _critical(null)
        for scale, deltas in DELTAS.items():
            for delta in deltas:
                _, true = _shifted(z, flag, delta, scale)
                seeds = stream_seeds(int(1000 * delta) + n, sims)
                audit_max, _ = simulate_maxima(
                    [p], None, segset, binary_draws(true), seeds
                )
                global_t, _ = simulate_maxima(
                    [p], None, every, binary_draws(true), seeds
                )
                audit_hits = int(np.sum(audit_max > critical))
                global_hits = int(np.sum(brownian_range_sf(global_t) <= ALPHA))
                rows.append((n, scale, delta, audit_hits, global_hits))
                print(
                    rows[-1], segset.n_segments, f"critical {critical:.3f}", flush=True
                )
    print()
    print(
        f"Power at the 5 % level: the 5 % of rows with flag = 1 shifted by delta, "
        f"{sims} simulations per cell (null maximum from 4,000 draws):"
    )
    print()
    print(".. csv-table::")
    print(
        '   :header: "scale", "delta", '
        + ", ".join(f'"audit, n = {n:,}", "global test, n = {n:,}"' for n in sizes)
    )
    print()
    for scale, deltas in DELTAS.items():
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


def coverage(sims, n=10**4, delta=0.05, block=50):
    """Coverage of the per-segment gap intervals (pointwise) and of the worst
    segment's interval (simultaneous), as the audit computes them, on the
    fixed design with the flagged rows shifted; the simultaneous critical
    value from 4,000 null draws."""
    frame, z, flag = design(n, 4)
    p, true = _shifted(z, flag, delta, "probability")
    segset = build_segments(frame, n, max_depth=2, min_rows=30)
    (layout,) = [_layout(p, segset)]
    size = segset.sizes().astype(float)
    true_gap = _segment_sums(true - p, segset) / size
    mean_prob = _segment_sums(p, segset) / size
    variance = _segment_sums(p * (1 - p), segset)
    slope = _segment_sums(1 - 2 * p, segset)
    _, null_gap = simulate_maxima(
        [p], None, segset, binary_draws(p), stream_seeds(0, 4000)
    )
    simultaneous = _critical(null_gap)
    z = float(ndtri(1 - ALPHA / 2))
    rng = np.random.default_rng(5)
    pointwise, worst_covered = [], 0
    for start in range(0, sims, block):
        m = min(block, sims - start)
        y = rng.uniform(size=(m, n)) < true
        high, low, last = _extremes(y - p, layout)
        t = (high - low) / np.sqrt(variance)
        gap = last / size
        lo, hi = gap_interval(gap, mean_prob, size, size, variance, slope, z)
        pointwise.extend(np.mean((lo <= true_gap) & (true_gap <= hi), axis=1))
        worst = np.argmax(t, axis=1)
        rows = np.arange(m)
        wlo, whi = gap_interval(
            gap[rows, worst],
            mean_prob[worst],
            size[worst],
            size[worst],
            variance[worst],
            slope[worst],
            simultaneous,
        )
        worst_covered += int(
            np.sum((wlo <= true_gap[worst]) & (true_gap[worst] <= whi))
        )
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
    parser.add_argument(
        "--size-resamples",
        type=int,
        default=1000,
        help="the audit's n_resamples in the size part (its rank p-value has "
        "size alpha for any number with (resamples + 1) * alpha whole)",
    )
    parser.add_argument("--mcgrad-sims", type=int, default=50)
    parser.add_argument("--size-seed", type=int, default=1)
    parser.add_argument("--progress", type=int, default=0)
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
        size(
            args.sims,
            mcgrad_sims=args.mcgrad_sims,
            resamples=args.size_resamples,
            seed=args.size_seed,
            progress=args.progress,
        )
    if "power" in args.parts:
        power(args.power_sims)
    if "coverage" in args.parts:
        coverage(args.coverage_sims)


if __name__ == "__main__":
    main()
