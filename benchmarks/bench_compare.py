"""Size, power and interval coverage of ``compare_calibration`` (top-label
ECE, 15 bins) and the size of ``calibration_test``, by Monte Carlo on the
paired-model beds of ``_pair_beds.py`` (population ECEs exact).

Every cell draws ``--reps`` test sets of ``n`` rows from a bed's score law
(both models scoring the same rows), runs ``compare_calibration(y, A, B,
n_resamples=--swaps, random_state=rep)`` (``--swaps``: the paired resamples
of the bootstrap-t, the swaps of the older swap test) and counts: the rejections at 5 %
(p-value <= 0.05; on a null bed this is the size, on the others the power),
how often the interval holds the true difference of population ECEs, and its
mean width. ``--part test`` runs ``calibration_test`` (ECE, 15 bins) on the
calibrated models of the beds (labels drawn from the truth): its size.
``--part moments`` takes the test's power apart (no resampling, the same
draws): per cell the mean and standard deviation of the gap-corrected
difference it standardises and of the plug-in difference, the mean
delta-method standard error, and each model's mean plug-in ECE, zero-gap
bias and gap-corrected ECE (the statistic is the difference of the last).

    python benchmarks/bench_compare.py [--reps 200] [--swaps 199] [--seeds 0 1]
        [--sizes 500 2000] [--jobs 2] [--beds 0 5 7]
    python benchmarks/bench_compare.py --part test --reps 200
    python benchmarks/bench_compare.py --part moments --reps 2000 --beds 11 12 13

``--merge NEW.csv PREVIOUS.csv EARLIER.csv`` prints the user guide's rows:
this version's table beside the earlier versions' rejection rates:
PREVIOUS the version whose gaps were shrunk bin by bin
(``benchmarks/compare_binwise.csv``, 2000 replications per cell, 499
resamples), EARLIER holding the columns ``bed``, ``n``, ``rejected at 5 %``
(the bootstrap-t drawn from the rows as they are) and ``swap test
rejected`` (``benchmarks/compare_earlier.csv``, 400 replications per cell;
each version run with the library of its time first on ``PYTHONPATH``).
``--seeds`` pools ``--reps`` replications per seed (the user guide's table:
``--reps 300 --seeds 0 1 --swaps 199 --sizes 500`` then ``--reps 100
--seeds 0 1 2 3 --swaps 199 --sizes 2000``, 600 and 400 replications per
cell, about 4 and 6.5 CPU-minutes; the previous table's ``--reps 1000
--swaps 499 --seeds 0 1 --chunks 2`` took 1.3 h of one core).
``tests/test_metrics_compare_beds.py`` is the seeded fast variant.

Prints a csv table (one row per bed and n) to stdout. To measure another
version of the library on the same beds, put it first on ``PYTHONPATH``.
"""

import argparse
import os
import sys
import time
from multiprocessing import get_context

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pair_beds as beds

from sklcalib.metrics import calibration_test, compare_calibration

SHARP_T = 0.5  # 10-class net: confidence 0.994, accuracy 0.919, 98 % in one bin


def _prevalence():
    return beds.prevalence_offset(0.02, np.sqrt(2.0) * beds.S)


#: (label, factory): the null beds (equal population ECEs) first
COMPARISON_BEDS = [
    ("indep 1.0 | 1.0 (both calibrated)", lambda: beds.indep(1.0, 1.0, null=True)),
    ("indep 1.5 | 1.5 (both over-confident)", lambda: beds.indep(1.5, 1.5, null=True)),
    (
        "indep 1/2 | 1.0 (calibrated, blunt vs sharp)",
        lambda: beds.indep("1/2", 1.0, null=True),
    ),
    (
        "indep 1/2 | full (calibrated, bluntest vs sharpest)",
        lambda: beds.indep("1/2", "full", null=True),
    ),
    (
        "indep c1.5 | 1.5 (constant vs sharp, equal ECE)",
        lambda: beds.indep("c1.5", 1.5, null=True),
    ),
    ("indep opposite 1.5 | under", lambda: beds.indep_opposite(1.5)),
    ("indep opposite, 2 % prevalence", lambda: beds.indep_opposite(1.5, _prevalence())),
    ("same scores, two temperatures, opposite", lambda: beds.same_base(1.5)),
    ("corr 1.5 | 1.5 (correlated views)", lambda: beds.correlated(1.5, 1.5)),
    ("sharp 10-class net, T = 0.5 | under-confident T", lambda: beds.net(SHARP_T)),
    ("two sharp 10-class nets, T = 0.5", lambda: beds.net_pair(SHARP_T)),
    ("indep 1.0 | 1.5 (real difference)", lambda: beds.indep(1.0, 1.5)),
    (
        "same scores 1.0 | 1.5 (correlated, real difference)",
        lambda: beds.same_base(1.0, 1.5),
    ),
    ("corr 1.0 | 1.5 (correlated, real difference)", lambda: beds.correlated(1.0, 1.5)),
    ("sharp net T = 0.5 | calibrated T = 1", lambda: beds.net(SHARP_T, 1.0)),
]

#: calibrated models: (label, factory of a law whose model A is calibrated)
TEST_BEDS = [
    ("indep 1.0", lambda: beds.indep(1.0, 1.0)),
    ("indep full", lambda: beds.indep("full", "full")),
    ("indep 1.0, 2 % prevalence", lambda: beds.indep(1.0, 1.0, _prevalence())),
    ("same scores 1.0", lambda: beds.same_base(1.0, 1.0)),
    ("10-class net T = 1", lambda: beds.net(1.0, 1.0)),
]

_LAWS = {}


def _law(table, i):
    key = (table, i)
    if key not in _LAWS:
        _LAWS[key] = (COMPARISON_BEDS if table == "cmp" else TEST_BEDS)[i][1]()
    return _LAWS[key]


def comparison_cell(i, n, reps, swaps, seed):
    """``(rejections, covered, mean width, s per call)`` of bed ``i`` at ``n``."""
    law = _law("cmp", i)
    rng = np.random.default_rng([seed, i, n])
    rejected = covered = 0
    width = 0.0
    start = time.process_time()
    for rep in range(reps):
        y, a, b = law.draw(rng, n)
        res = compare_calibration(y, a, b, n_resamples=swaps, random_state=rep)
        rejected += res.pvalue <= 0.05
        covered += res.low <= law.difference <= res.high
        width += res.high - res.low
    cost = (time.process_time() - start) / reps
    return rejected / reps, covered / reps, width / reps, cost


def test_cell(i, n, reps, resamples, seed):
    """Rejection rate at 5 % of ``calibration_test`` on bed ``i``'s model A."""
    law = _law("test", i)
    rng = np.random.default_rng([seed, 100 + i, n])
    rejected = 0
    for rep in range(reps):
        y, a, _ = law.draw(rng, n)
        res = calibration_test(y, a, n_resamples=resamples, random_state=rep)
        rejected += res.pvalue <= 0.05
    return rejected / reps


def moments_cell(i, n, reps, seed):
    """Why the test rejects as often as it does: over ``reps`` test sets of
    bed ``i`` (the comparison cell's draws), the mean and standard deviation
    of the gap-corrected difference the test standardises and of the plug-in
    difference, the mean delta-method standard error, and each model's mean
    plug-in ECE and zero-gap bias. No resampling: the statistic on the rows
    as they are."""
    from sklcalib._utils._binning import top_label
    from sklcalib._utils._swap import (
        ece_and_bias,
        gap_corrected,
        observed_statistic,
        top_label_rows,
    )
    from sklcalib._utils._validation import check_targets

    law = _law("cmp", i)
    rng = np.random.default_rng([seed, i, n])
    out = np.empty((reps, 9))
    for rep in range(reps):
        y, a, b = law.draw(rng, n)
        y_idx, pa, _, _ = check_targets(y, a, None, None)
        pb = check_targets(y, b, None)[1]
        ra = top_label_rows(*top_label(pa, y_idx), 15)
        rb = top_label_rows(*top_label(pb, y_idx), 15)
        stat, var = observed_statistic(ra, rb)
        ea, ba = ece_and_bias(ra.sums, ra.total, 15)
        eb, bb = ece_and_bias(rb.sums, rb.total, 15)
        ca = ea - gap_corrected(ra.sums, ra.total, 15)[2]
        cb = eb - gap_corrected(rb.sums, rb.total, 15)[2]
        out[rep] = stat, np.sqrt(var), ea - eb, ea, ba, ca, eb, bb, cb
    return out


MOMENTS = (
    "statistic mean",
    "statistic sd",
    "mean se",
    "plug-in difference mean",
    "plug-in difference sd",
    "A plug-in",
    "A zero-gap bias",
    "A gap-corrected",
    "B plug-in",
    "B zero-gap bias",
    "B gap-corrected",
)


def _moments(out):
    stat, se, diff, *per_model = out.T
    return (
        stat.mean(),
        stat.std(ddof=1),
        se.mean(),
        diff.mean(),
        diff.std(ddof=1),
        *(v.mean() for v in per_model),
    )


def _run(job):
    part, i, n, reps, swaps, seed = job
    if part == "cmp":
        return job, comparison_cell(i, n, reps, swaps, seed)
    if part == "moments":
        return job, moments_cell(i, n, reps, seed)
    return job, test_cell(i, n, reps, swaps, seed)


def merge(new_path, *older):
    """The guide's csv-table rows: this version's rejection, coverage and
    width beside the earlier versions' rejection, bed by bed. ``older``:
    the previous version's table (``compare_binwise.csv``, this script's
    columns), then the earliest two (``compare_earlier.csv``: ``rejected at
    5 %`` and ``swap test rejected``)."""
    import csv

    def read(path):
        with open(path) as f:
            return {(r["bed"], r["n"]): r for r in csv.DictReader(f)}

    new = read(new_path)
    tables = [read(path) for path in older]
    for key, row in new.items():
        before = [tables[0][key]["rejected at 5 %"]] if len(tables) > 1 else []
        last = tables[-1][key]
        cells = [
            row["bed"],
            row["n"],
            row["true difference"],
            row["rejected at 5 %"],
            *before,
            last["rejected at 5 %"],
            last["swap test rejected"],
            row["coverage"],
            row["mean width"],
        ]
        print("   " + ", ".join(f'"{c}"' for c in cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--part", choices=["comparison", "test", "moments"], default="comparison"
    )
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--swaps", type=int, default=199)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--beds", type=int, nargs="+", default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="pooled, each --reps"
    )
    parser.add_argument("--chunks", type=int, default=1, help="split each cell")
    parser.add_argument(
        "--merge", nargs="+", default=None, help="NEW.csv [PREVIOUS.csv] EARLIER.csv"
    )
    args = parser.parse_args(argv)
    if args.merge:
        merge(*args.merge)
        return
    part = {"comparison": "cmp", "test": "test", "moments": "moments"}[args.part]
    table = TEST_BEDS if part == "test" else COMPARISON_BEDS
    which = args.beds if args.beds is not None else range(len(table))
    for i in which:  # build the laws once, before the workers fork
        _law("test" if part == "test" else "cmp", i)
    per = -(-args.reps // args.chunks)
    jobs = [
        (part, i, n, per, args.swaps, seed * 1000 + c)
        for i in which
        for n in args.sizes
        for seed in args.seeds
        for c in range(args.chunks)
    ]
    pieces = args.chunks * len(args.seeds)
    if args.jobs > 1:
        pool = get_context("fork").Pool(args.jobs)
        results = pool.imap(_run, jobs)
    else:
        results = map(_run, jobs)
    if part == "cmp":
        print("bed,n,true difference,rejected at 5 %,coverage,mean width,s per call")
    elif part == "moments":
        print("bed,n,true difference," + ",".join(MOMENTS))
    else:
        print("model,n,rejected at 5 %")
    acc = {}
    for job, res in results:
        _, i, n, _, _, _ = job
        acc.setdefault((i, n), []).append(res)
        if len(acc[i, n]) < pieces:
            continue
        label = table[i][0]
        if part == "moments":
            figures = _moments(np.concatenate(acc[i, n]))
            print(
                f'"{label}",{n},{_law("cmp", i).difference:.4f},'
                + ",".join(f"{v:.4f}" for v in figures),
                flush=True,
            )
            continue
        mean = np.mean(np.asarray(acc[i, n], dtype=float), axis=0)
        if part == "cmp":
            law = _law(part, i)
            print(
                f'"{label}",{n},{law.difference:.4f},{100 * mean[0]:.1f}%,'
                f"{100 * mean[1]:.1f}%,{mean[2]:.4f},{mean[3]:.3f}",
                flush=True,
            )
        else:
            print(f'"{label}",{n},{100 * float(mean):.1f}%', flush=True)
    if args.jobs > 1:
        pool.close()
        pool.join()


if __name__ == "__main__":
    main()
