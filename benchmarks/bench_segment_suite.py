"""The segment suite's tables for the docs, and the targets checked per seed.

Runs :func:`sklcalib.benchmark.segments.run_segments` (the rows of
``sklcalib benchmark --suite segments``) on every table and seed, one thread
(BLAS and LightGBM), every contender timed (CPU time) back to back on the same rows,
and writes an rst include with:

- the summary: per table and base model, means over seeds (log-loss, paired
  difference to the best global calibrator with its combined 95 % interval,
  the audit's worst-segment statistic and family-wise p-value, mcgrad's
  ``mce_sigma``, fit time and its ratio to MCGrad's, predict time);
- per seed, against MCGrad where the base model did not see the segments
  (binary tables): the excess of the worst-segment statistic (mcgrad's
  ``mce_sigma``) and of the test log-loss over MCGrad's;
- per seed, do no harm where the base model saw the segments: the test
  log-loss in excess of the best global calibrator's;
- per seed, the multiclass table: the worst-segment top-label statistic's
  reduction and the log-loss change against the best global calibrator.

Run: ``python benchmarks/bench_segment_suite.py [--seeds 3] [--tables cps,hi]
[--repeats 3] [--quick] [--out docs/user_guide/segment_suite_table.txt]``
(``--quick``: 2 000 rows a part, the suite's ``--quick``).
"""

import argparse
import logging
import os
import sys

import numpy as np

TARGET_SEGMENT = (
    "segment logistic",
    "segment auto",
    "segment boosting",
    "segment blend",
)


def _by(rows, **keys):
    return [r for r in rows if all(r[k] == v for k, v in keys.items())]


def _seed_table(rows, base, metric, reference, names, fmt, title):
    """Per seed: ``metric`` of each of ``names`` minus the reference's."""
    lines = [title, ""]
    tables = list(dict.fromkeys(r["table"] for r in rows))
    head = f"{'table':<9} {'seed':>4} " + " ".join(f"{n:>18}" for n in names)
    lines += [head, "-" * len(head)]
    worst = {n: -np.inf for n in names}
    for t in tables:
        mine = _by(rows, table=t, base=base)
        if not _by(mine, calibrator=reference):
            continue
        for seed in sorted({r["seed"] for r in mine}):
            ref = _by(mine, seed=seed, calibrator=reference)[0][metric]
            cells = []
            for n in names:
                got = _by(mine, seed=seed, calibrator=n)
                d = got[0][metric] - ref if got else float("nan")
                worst[n] = max(worst[n], d) if d == d else worst[n]
                cells.append(f"{format(d, fmt):>18}")
            lines.append(f"{t:<9} {seed:>4} " + " ".join(cells))
    lines.append(
        f"{'largest':<14} " + " ".join(f"{format(worst[n], fmt):>18}" for n in names)
    )
    return lines


def report(rows):
    from sklcalib.benchmark.segments import summary_table

    seeds = sorted({r["seed"] for r in rows})
    n_cal = sorted({r["n_cal"] for r in rows})
    lines = [
        f"{len(seeds)} seeds, at most {max(n_cal)} calibration rows and "
        f"{max(r['n_test'] for r in rows)} test rows a table, one thread; "
        "means over seeds (fit, predict: medians of CPU seconds)",
        "",
    ]
    head = (
        f"{'table':<9} {'base':<8} {'calibrator':<27} {'log-loss':>8} "
        f"{'d vs best global [95 %]':>27} {'worst seg':>9} {'p':>6} "
        f"{'mce_sigma':>9} {'fit s':>7} {'fit/MCGrad':>10} {'pred s':>7}"
    )
    lines += [head, "-" * len(head)]
    for r in summary_table(rows):
        ratio = "" if r["fit_ratio"] != r["fit_ratio"] else f"{r['fit_ratio']:.3f}"
        sigma = "" if r["mce_sigma"] != r["mce_sigma"] else f"{r['mce_sigma']:.2f}"
        lines.append(
            f"{r['table']:<9} {r['base']:<8} {r['calibrator']:<27} "
            f"{r['log_loss']:>8.4f} "
            f"{r['d_log_loss']:>+8.4f} [{r['d_low']:+.4f}, {r['d_high']:+.4f}] "
            f"{r['audit_stat']:>9.2f} {r['audit_pvalue']:>6.3f} {sigma:>9} "
            f"{r['fit_s']:>7.3f} {ratio:>10} {r['predict_s']:>7.4f}"
        )
    binary = [r for r in rows if r["n_classes"] == 2]
    lines.append("")
    lines += _seed_table(
        binary,
        "blind",
        "mce_sigma",
        "MCGrad",
        TARGET_SEGMENT,
        "+.2f",
        "Blind base model, per seed: mce_sigma minus MCGrad's",
    )
    lines.append("")
    lines += _seed_table(
        binary,
        "blind",
        "log_loss",
        "MCGrad",
        TARGET_SEGMENT,
        "+.4f",
        "Blind base model, per seed: test log-loss minus MCGrad's",
    )
    lines.append("")
    lines += _seed_table(
        rows,
        "sighted",
        "log_loss",
        "best global",
        ("segment auto", "segment auto (best global)", "segment logistic"),
        "+.5f",
        "Sighted base model (do no harm), per seed: test log-loss minus the best "
        "global calibrator's",
    )
    multi = [r for r in rows if r["n_classes"] > 2]
    if multi:
        lines += [
            "",
            "Multiclass, per seed: worst-segment top-label statistic "
            "(audit) and test log-loss, best global -> segment map",
            "",
        ]
        for r in _by(multi, calibrator="best global"):
            cells = []
            for n in (
                "segment logistic",
                "segment boosting",
                "segment blend",
                "segment auto",
            ):
                m = _by(
                    multi,
                    table=r["table"],
                    base=r["base"],
                    seed=r["seed"],
                    calibrator=n,
                )[0]
                red = 1 - m["audit_stat"] / r["audit_stat"]
                d_ll = m["log_loss"] - r["log_loss"]
                cells.append(
                    f"{n}: {r['audit_stat']:.2f} -> {m['audit_stat']:.2f} "
                    f"({100 * red:+.0f} %), log-loss {d_ll:+.4f}"
                )
            lines.append(
                f"{r['table']} {r['base']} seed {r['seed']}: " + "; ".join(cells)
            )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tables", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="interleaved timing repeats (every contender once a repeat; the "
        "medians are reported)",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--csv", default=None, help="write the rows to this file")
    parser.add_argument(
        "--from-csv",
        nargs="+",
        default=None,
        help="build the report from rows written by earlier runs (e.g. one "
        "run per table) instead of running",
    )
    args = parser.parse_args(argv)
    if args.from_csv:
        rows = [row for path in args.from_csv for row in read_rows(path)]
        return write(report(rows), args.out)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    logging.getLogger("mcgrad").setLevel(logging.ERROR)
    from sklcalib.benchmark import segments

    tables = args.tables.split(",") if args.tables else list(segments.SEGMENT_TABLES)
    rows = segments.run_segments(
        tables,
        list(range(args.seeds)),
        rows=segments.QUICK_ROWS if args.quick else segments.DEFAULT_ROWS,
        repeats=args.repeats,
    )
    if args.csv:
        segments.segment_rows_to_csv(rows, args.csv)
    return write(report(rows), args.out)


def read_rows(path):
    """Rows of a segments.csv, numbers parsed."""
    import csv

    from sklcalib.benchmark.segments import CSV_COLUMNS

    text = {"table", "base", "calibrator", "segments"}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for key in CSV_COLUMNS:
            if key in ("seed", "n_classes", "n_cal", "n_test"):
                row[key] = int(row[key])
            elif key not in text:
                row[key] = float(row[key])
    return rows


def write(text, out):
    print(text)
    if out:
        lines = "\n".join("    " + ln for ln in text.splitlines())
        with open(out, "w") as f:
            f.write("::\n\n" + lines + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
