"""Does ``SegmentCalibrator(method="auto")`` do harm on small calibration sets?

Beds with a known answer, segments that carry no signal (three random
three-level columns), calibration sets of 36 to 1 000 rows and a test set of
20 000 rows drawn from the same law:

- ``calibrated``: logits N(0, 2), labels drawn from their own probabilities;
- ``rare``: the same at about 2 % prevalence (logits N(-4.2, 1));
- ``sharp``: logits at +-7 (probability 0.999) right 95 % of the time; on
  every other replication all calibration rows are right (a separable set,
  as a small validation split of a strong model gives).

For each cell it prints the replications, the fits that raised, how many
had a test log-loss more than 0.01 above passthrough, the largest and mean
excess, the predictions of exactly 0 or 1, and the methods ``auto`` chose.

Run: ``python benchmarks/bench_segment_small_sets.py --reps 40 --jobs 2 --out
docs/user_guide/segment_small_sets_table.txt`` (the segment calibration guide
includes that file).
"""

import argparse
import collections
import warnings

import numpy as np
from joblib import Parallel, delayed

from sklcalib.calibration import SegmentCalibrator

BEDS = ("calibrated", "rare", "sharp")
SIZES = (36, 100, 300, 1000)


def draw(bed, n, rng):
    """Logits, labels and noise segments of ``n`` rows of ``bed``."""
    segments = rng.integers(0, 3, size=(n, 3)).astype(float)
    if bed == "sharp":
        side = rng.integers(0, 2, n)
        logits = np.where(side == 1, 7.0, -7.0)
        y = np.where(rng.random(n) < 0.95, side, 1 - side)
    else:
        loc, scale = (0.0, 2.0) if bed == "calibrated" else (-4.2, 1.0)
        logits = rng.normal(loc, scale, n)
        y = (rng.random(n) < 1 / (1 + np.exp(-logits))).astype(int)
    return logits, y, segments


def _log_loss(y, p):
    return -np.mean(np.log(np.where(y == 1, p, 1 - p)))


def replicate(bed, n, rep, n_test=20_000):
    """One fit of ``auto``: (excess test log-loss, min p, max p, error, method)."""
    rng = np.random.default_rng([BEDS.index(bed), n, rep])
    z, y, seg = draw(bed, n, rng)
    if bed == "sharp" and rep % 2 == 0:
        y = (z > 0).astype(int)  # separable: every calibration row right
    elif y.min() == y.max():
        y[0] = 1 - y[0]  # a calibration set needs both classes
    z_test, y_test, seg_test = draw(bed, n_test, rng)
    passthrough = _log_loss(y_test, 1 / (1 + np.exp(-z_test)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = SegmentCalibrator(method="auto").fit(z, y, segments=seg)
        p = fitted.predict_proba(z_test, segments=seg_test)[:, 1]
    except Exception as exc:  # counted and shown, never hidden
        return np.nan, np.nan, np.nan, f"{type(exc).__name__}: {exc}"[:100], None
    return _log_loss(y_test, p) - passthrough, p.min(), p.max(), None, fitted.method_


def table(reps, jobs=1, sizes=SIZES):
    """Rows (bed, n, reps, errors, over 0.01, max, mean, exact 0/1, methods)."""
    cells = [(b, n) for b in BEDS for n in sizes]
    out = Parallel(n_jobs=jobs)(
        delayed(replicate)(b, n, r) for b, n in cells for r in range(reps)
    )
    rows = []
    for i, (bed, n) in enumerate(cells):
        res = out[i * reps : (i + 1) * reps]
        ok = [r for r in res if r[3] is None]
        excess = np.array([r[0] for r in ok])
        rows.append(
            {
                "bed": bed,
                "n": n,
                "reps": reps,
                "errors": [r[3] for r in res if r[3] is not None],
                "over_0.01": int((excess > 0.01).sum()),
                "max_excess": float(excess.max()) if ok else np.nan,
                "mean_excess": float(excess.mean()) if ok else np.nan,
                "exact_0_or_1": sum(r[1] <= 0 or r[2] >= 1 for r in ok),
                "methods": dict(collections.Counter(r[4] for r in ok)),
            }
        )
    return rows


def render(rows):
    """The rows as a markdown table (failed fits listed under their cell)."""
    lines = [
        "| bed | n | reps | errors | > +0.01 | max excess | mean excess "
        "| p = 0 or 1 | methods |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        methods = ", ".join(f"{k} {v}" for k, v in sorted(r["methods"].items()))
        lines.append(
            f"| {r['bed']} | {r['n']} | {r['reps']} | {len(r['errors'])} "
            f"| {r['over_0.01']} | {r['max_excess']:+.4f} "
            f"| {r['mean_excess']:+.5f} | {r['exact_0_or_1']} | {methods} |"
        )
        lines.extend(f"|   {err} |" for err in r["errors"][:2])
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    text = render(table(args.reps, args.jobs))
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
