"""Coverage and width of ``calibration_error_interval`` on the bed family of
``_beds.py`` (population errors known by construction), against an oracle.

Every replication draws one test set of ``n`` rows from a bed and computes
the nominal 95 % interval of every metric on it. Per cell (bed, n, metric,
bins): the **coverage** (share of replications whose interval holds the
population value), the **median width**, and the median width of the
**oracle**: the interval that knows the estimator's sampling law, ``[T -
q(1 - alpha/2), T - q(alpha/2)]`` with ``q`` the quantiles of ``T - truth``
over the replications (clipped at 0, and, like the interval, stretched to
hold the estimate ``T``), and the ratio of the two medians.

Tables (``--table``):

- ``main``: every bed at n = 36, 100, 300, 1000, 10^4, 10^5 (the 100-class
  beds up to 10^4), 15 bins, the seven errors (ECE, adaptive ECE, classwise
  L1 and L2, debiased L2, NLL, Brier);
- ``bins``: 10 and 30 bins for the binned errors on the sharp net and the
  binary beds;
- ``share``: the sharp net with 86 %, 96 %, 99 % and 100 % of its rows in
  the top bin, ECE, adaptive ECE and debiased L2.

Run (single-threaded BLAS; ``nice``; ``--jobs`` processes)::

    nice python benchmarks/bench_interval_coverage.py --table main --reps 400
    nice python benchmarks/bench_interval_coverage.py --table bins --reps 400
    nice python benchmarks/bench_interval_coverage.py --table share --reps 400

``--csv FILE`` also writes the rows (as they come: a run stopped early keeps
its cells); ``--beds``/``--sizes``/``--errors`` select a subset (a cell's
draws depend on its bed, ``n`` and ``--seed`` only, so a run split by beds,
sizes or errors gives the same cells); ``--render MAIN.csv[,MORE.csv]
BINS.csv[,MORE.csv] SHARE.csv FOLDER`` (each a list of files, in tiers
separated by ``;`` where a cell's code changed since: see :func:`_merged`)
writes the user guide's tables and the
words on them (``docs/_static/interval_coverage``) from the runs' csv files:
among them every cell's one-sided binomial test against 95 % (one by one and
with Holm's correction), and how many wide cells stay wider than 1.35 times
the oracle once the oracle's own narrowing and noise at the cell's number of
replications (a normal law's, :func:`oracle_noise`) are taken into account.
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _beds

#: (label, metric, metric parameters) of the main table
SPECS = (
    ("ece", "ece", {}),
    ("adaptive_ece", "adaptive_ece", {}),
    ("classwise_ece", "classwise_ece", {}),
    ("classwise_ece_l2", "classwise_ece", {"norm": "l2"}),
    ("debiased_ece", "debiased_ece", {}),
    ("nll", "nll", {}),
    ("brier", "brier", {}),
)
BINNED = SPECS[:5]
SIZES = (36, 100, 300, 1000, 10_000, 100_000)
LEVEL = 0.95


def _truth(bed, metric, params):
    if metric in ("nll", "brier"):
        return bed.truth(metric)
    return bed.truth(
        metric, n_bins=params.get("n_bins", 15), norm=params.get("norm", "l1")
    )


def run_cell(bed, n, specs, reps, seed, interval=None):
    """One (bed, n): every spec's rows of estimates and bounds over ``reps``
    replications. Returns ``{label: dict}`` with the cell's figures."""
    if interval is None:
        from sklcalib.metrics import calibration_error_interval as interval
    rng = np.random.default_rng([seed, n, sum(map(ord, bed.name))])
    est = np.empty((len(specs), reps))
    low = np.empty_like(est)
    high = np.empty_like(est)
    raw = np.full_like(est, np.nan)  # the debiased error's unclipped square
    seconds = np.zeros(len(specs))
    for r in range(reps):
        y, p = bed.sample(rng, n)
        # a small test set may miss a class: name every column's label
        labels = {"labels": np.arange(bed.n_classes)}
        for j, (_, metric, params) in enumerate(specs):
            t0 = time.process_time()
            ci = interval(y, p, metric=metric, random_state=r, **params, **labels)
            seconds[j] += time.process_time() - t0
            est[j, r], low[j, r], high[j, r] = ci.estimate, ci.low, ci.high
            if metric == "debiased_ece":
                raw[j, r] = _debiased_square(y, p, bed.n_classes, params)
    out = {}
    for j, (label, metric, params) in enumerate(specs):
        truth = _truth(bed, metric, params)
        if metric == "debiased_ece":
            out[label] = summarise(truth, est[j], low[j], high[j], square=raw[j])
        else:
            out[label] = summarise(truth, est[j], low[j], high[j])
        out[label]["ms"] = 1000.0 * seconds[j] / reps
    return out


def _debiased_square(y, p, n_classes, params):
    """The debiased error's square before clipping (top label)."""
    from sklcalib._utils._binning import top_label
    from sklcalib._utils._validation import check_targets
    from sklcalib.metrics._debiased import debiased_square_error

    y_idx, q, _, _ = check_targets(y, p, np.arange(n_classes), None)
    conf, correct = top_label(q, y_idx)
    return debiased_square_error(conf, correct, params.get("n_bins", 15), None)


def summarise(truth, est, low, high, level=LEVEL, square=None):
    """Coverage, median width, the oracle's median width and their ratio.

    The oracle knows the estimator's law: ``[T - q(1 - alpha/2), T -
    q(alpha/2)]`` with ``q`` the quantiles of ``T - truth`` over the
    replications, clipped at 0 and stretched to hold the estimate, as the
    interval is. For the debiased error it is built on the unbiased square
    (``square``, before clipping) and rooted."""
    alpha = 1.0 - level
    if square is not None:
        q_lo, q_hi = np.quantile(square - truth**2, [alpha / 2.0, 1.0 - alpha / 2.0])
        o_low = np.sqrt(np.maximum(square - q_hi, 0.0))
        o_high = np.sqrt(np.maximum(square - q_lo, 0.0))
    else:
        q_lo, q_hi = np.quantile(est - truth, [alpha / 2.0, 1.0 - alpha / 2.0])
        o_low = np.maximum(est - q_hi, 0.0)
        o_high = np.maximum(est - q_lo, 0.0)
    o_width = np.maximum(o_high, est) - np.minimum(o_low, est)
    width = high - low
    oracle = float(np.median(o_width))
    return {
        "truth": truth,
        "coverage": float(np.mean((low <= truth + 1e-12) & (truth <= high + 1e-12))),
        "miss_low": float(np.mean(low > truth + 1e-12)),
        "width": float(np.median(width)),
        "oracle": oracle,
        "ratio": float(np.median(width)) / oracle if oracle > 0 else float("nan"),
        "reps": est.shape[0],
    }


def main_cells(beds, sizes):
    for bed in beds:
        for n in sizes:
            if bed.n_classes >= 100 and n > 10_000:
                continue
            yield bed, n, SPECS


def bins_cells(beds, sizes):
    for bed in beds:
        for n in sizes:
            for n_bins in (10, 30):
                specs = tuple(
                    (f"{label}_{n_bins}", metric, {**params, "n_bins": n_bins})
                    for label, metric, params in BINNED
                )
                yield bed, n, specs


def share_cells(sizes):
    for share in (0.86, 0.96, 0.99, 1.0 - 1e-6):
        bed = _beds.sharp_net(share, name=f"sharp_net_{min(share, 1.0):.2f}", n_bins=15)
        for n in sizes:
            yield bed, n, (SPECS[0], SPECS[1], SPECS[4])


def _work(args):
    bed, n, specs, reps, seed = args
    return bed.name, n, run_cell(bed, n, specs, reps, seed)


def run(cells, reps, seed, jobs=1):
    tasks = [(bed, n, specs, reps, seed) for bed, n, specs in cells]
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            yield from pool.map(_work, tasks)
    else:
        yield from map(_work, tasks)


HEADER = (
    "| bed | n | error | truth | coverage | low misses | median width "
    "| oracle width | ratio | ms |"
)


def format_row(name, n, label, row):
    return (
        f"| {name} | {n} | {label} | {row['truth']:.4f} | {row['coverage']:.1%} "
        f"| {row['miss_low']:.1%} | {row['width']:.4f} | {row['oracle']:.4f} "
        f"| {row['ratio']:.2f} | {row['ms']:.1f} |"
    )


# ---------------------------------------------------------------------------
# the user guide's tables, from the csv files of the runs
# ---------------------------------------------------------------------------

#: the errors of the guide's tables, in their column order
COLUMNS = (
    "ece",
    "adaptive_ece",
    "classwise_ece",
    "classwise_ece_l2",
    "debiased_ece",
    "nll",
    "brier",
)


def _read(path):
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _write(path, header, rows):
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _merged(paths):
    """The rows of comma-separated csv files; a cell measured in several
    runs keeps its run with the most replications (on a tie, the file listed
    first). Groups of files separated by ``;`` are tiers: a cell of an
    earlier tier replaces the same cell of every later tier whatever their
    replications (the runs of a cell whose code changed since the later
    tiers were measured)."""
    best = {}
    for tier in paths.split(";"):
        mine = {}
        for path in tier.split(","):
            for r in _read(path):
                key = (r["bed"], r["n"], r["error"])
                if key not in mine or int(r["reps"]) > int(mine[key]["reps"]):
                    mine[key] = r
        for key, r in mine.items():
            best.setdefault(key, r)
    return list(best.values())


def render(main_csv, bins_csv, share_csv, out, filing_csv=None):
    """Write the guide's csv tables into the folder ``out``: the whole main
    table, per bed the smallest coverage over n (and all its replications
    pooled) and the median width ratio of every error, and the bins and
    share tables. ``filing_csv``, the run of the interval as it was when the
    width target was set (:data:`FILING`), tells which wide cells the
    target binds (:func:`summary`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    family = _beds.family()
    # the main table may come from several runs (parts of the beds, sizes or
    # errors, with fewer replications at large n): rows in the family's order
    rows = _merged(main_csv)
    order = {name: i for i, name in enumerate(family)}
    rows.sort(key=lambda r: (order[r["bed"]], int(r["n"]), COLUMNS.index(r["error"])))
    _write(
        out / "all_cells.csv",
        [
            "bed",
            "n",
            "error",
            "truth",
            "coverage",
            "median width",
            "oracle",
            "ratio",
            "replications",
        ],
        [
            [
                r["bed"],
                r["n"],
                r["error"],
                f"{float(r['truth']):.4f}",
                f"{float(r['coverage']):.1%}",
                f"{float(r['width']):.4f}",
                f"{float(r['oracle']):.4f}",
                f"{float(r['ratio']):.2f}",
                r["reps"],
            ]
            for r in rows
        ],
    )
    beds = list(dict.fromkeys(r["bed"] for r in rows))
    coverage, ratio = [], []
    for bed in beds:
        mine = [r for r in rows if r["bed"] == bed]
        sizes = sorted({int(r["n"]) for r in mine})
        head = [f"{bed} ({family[bed].description})", f"{sizes[0]}-{sizes[-1]}"]
        cov, rat = list(head), list(head)
        for error in COLUMNS:
            cells = [r for r in mine if r["error"] == error]
            if not cells:  # an error no run measured on this bed
                cov.append("-")
                rat.append("-")
                continue
            # the smallest cell, and in brackets all its replications pooled
            # (a cell of 20-100 replications has a standard error of 2-5 points)
            reps = np.array([float(r["reps"]) for r in cells])
            share = np.array([float(r["coverage"]) for r in cells])
            pooled = np.dot(share, reps) / reps.sum()
            cov.append(f"{share.min():.1%} ({pooled:.1%})")
            rat.append(f"{np.median([float(r['ratio']) for r in cells]):.2f}")
        coverage.append(cov)
        ratio.append(rat)
    header = ["bed", "n", *COLUMNS]
    _write(out / "coverage_by_bed.csv", header, coverage)
    _write(out / "ratio_by_bed.csv", header, ratio)
    for name, path, labels in (
        ("bins", bins_csv, None),
        ("share", share_csv, ("ece", "adaptive_ece", "debiased_ece")),
    ):
        table = _merged(path)
        table.sort(key=lambda r: (r["bed"], int(r["n"])))
        keys = list(dict.fromkeys((r["bed"], r["n"]) for r in table))
        present = {r["error"] for r in table}
        every = [f"{e[0]}_{k}" for k in (10, 30) for e in BINNED]
        errors = labels or [e for e in every if e in present]
        lines = []
        for bed, n in keys:
            line = [bed, n]
            for error in errors:
                cell = [
                    r
                    for r in table
                    if (r["bed"], r["n"], r["error"]) == (bed, n, error)
                ]
                if not cell:  # a cell the run did not reach
                    line.append("-")
                    continue
                # coverage (width over the oracle's, replications)
                line.append(
                    f"{float(cell[0]['coverage']):.1%} "
                    f"({float(cell[0]['ratio']):.2f}, {cell[0]['reps']})"
                )
            lines.append(line)
        _write(out / f"{name}.csv", ["bed", "n", *errors], lines)
    filing = _read(filing_csv) if filing_csv else None
    (out / "summary.txt").write_text(summary(rows, family, filing))


#: the coverage target of every cell, and the width target over the oracle
TARGET = 0.93
WIDE = 1.35


def _chance_below(reps, level=LEVEL, target=TARGET):
    """Probability that a cell of ``reps`` replications whose interval
    covers exactly ``level`` shows a coverage below ``target``."""
    from scipy.stats import binom

    return float(binom.cdf(np.ceil(target * reps) - 1, reps, level))


def _binomial_pvalues(cover, reps, level=LEVEL):
    """One-sided binomial p-values of every cell's coverage against
    ``level`` (small when the cell covers less), and the number of cells
    chance alone would give at ``p <= 0.05`` had every interval covered
    exactly ``level`` (the tests are discrete: below 0.05 per cell)."""
    from scipy.stats import binom

    hits = np.rint(cover * reps)
    pvalues = binom.cdf(hits, reps, level)
    # the largest k whose cdf is <= 0.05: that cdf is the cell's chance
    chance = 0.0
    for r in reps:
        k = np.arange(r + 1)
        cdf = binom.cdf(k, r, level)
        chance += float(cdf[cdf <= 0.05].max()) if np.any(cdf <= 0.05) else 0.0
    return pvalues, chance


def _holm(pvalues, alpha=0.05):
    """Cells rejected by Holm's step-down procedure at family level
    ``alpha``."""
    order = np.argsort(pvalues)
    m = len(pvalues)
    out = np.zeros(m, dtype=bool)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (m - rank):
            break
        out[i] = True
    return out


def oracle_noise(reps, draws=20_000, seed=0):
    """Per number of replications ``R``: the mean, 2.5 % and 97.5 %
    quantiles of the oracle's width from ``R`` draws of a normal law over
    the law's own (2.5-97.5 % quantile range, linear interpolation). A
    cell's true width ratio is its measured ratio times this factor."""
    rng = np.random.default_rng(seed)
    span = 2.0 * 1.959963984540054
    out = {}
    for r in sorted(set(int(k) for k in reps)):
        x = rng.standard_normal((draws, r))
        q = np.quantile(x, [0.025, 0.975], axis=1)
        factor = (q[1] - q[0]) / span
        out[r] = (
            float(factor.mean()),
            float(np.quantile(factor, 0.025)),
            float(np.quantile(factor, 0.975)),
        )
    return out


def _p(value):
    """A p-value as the words print it: three decimals, or two significant
    digits below 0.001 (a cell of 4000 replications reaches 1e-6)."""
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _wrap(text, width=79):
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) + "\n"


#: the commit whose interval the width target was set against ("where
#: coverage already holds today"): the parent of the path inversion
FILING = "b399409^"


def _filing_words(rows, wide, beyond, many, away, filing):
    """The words on the wide cells that the width target binds: those whose
    interval covered (``TARGET`` or more) when the target was set, measured
    by the interval of :data:`FILING` on the same replications (``filing``:
    its run's rows); those away from 0 wider than the target by more than
    the oracle's noise by name."""
    then = {(r["bed"], r["n"], r["error"]): r for r in filing}
    keys = [(r["bed"], r["n"], r["error"]) for r in rows]
    measured = np.array([k in then for k in keys])
    held = np.array(
        [k in then and float(then[k]["coverage"]) >= TARGET - 1e-9 for k in keys]
    )
    binds = wide & held
    lacking = int(np.sum(wide & ~measured))
    now_over_then = [
        float(r["width"]) / float(then[k]["width"])
        for r, k, b in zip(rows, keys, binds, strict=True)
        if b and float(then[k]["width"]) > 0
    ]
    listed = ", ".join(
        f"{r['bed']} {r['error']} at n = {r['n']}"
        for r, b in zip(rows, binds & beyond & away, strict=True)
        if b
    )

    def count(mask):
        return f"{int(np.sum(mask))} ({int(np.sum(mask & away))} away from 0)"

    return (
        f"Which wide cells the width target binds: it asks for {WIDE} times the "
        f"oracle where coverage already held when it was set. The interval of "
        f"then (commit {FILING}, the parent of the path inversion), run on the "
        f"same replications (seed 0; benchmarks/interval_coverage_runs/"
        f"filing.csv), covered {TARGET:.0%} or more in {count(binds)} of the "
        f"{int(wide.sum())} wide cells"
        + (f" ({lacking} not measured)" if lacking else "")
        + f"; {count(binds & many)} of them have at least 100 replications, and "
        f"{count(binds & beyond)} are wider than {WIDE} times the oracle by more "
        f"than its noise"
        + (f" (away from 0: {listed})" if listed else "")
        + (
            f". The median width of those it binds is {np.median(now_over_then):.2f}"
            f" times that of the interval of then on the same replications."
            if now_over_then
            else "."
        )
    )


def summary(rows, family, filing=None):
    """The guide's words on the main table, from its rows (reStructuredText
    included by the guide): the coverage range, every cell below the target
    by name, how many covering cells are wider than the width target (and,
    with ``filing``, how many of those the target binds: see
    :func:`_filing_words`), the smallest coverage per error, and the cells
    not measured."""
    # as all_cells.csv rounds them: the words and the table agree
    cover = np.array([float(f"{float(r['coverage']):.1%}"[:-1]) for r in rows]) / 100
    reps = np.array([int(r["reps"]) for r in rows])
    ratio = np.array([float(f"{float(r['ratio']):.2f}") for r in rows])
    sizes = np.array([int(r["n"]) for r in rows])
    pooled = sum(float(r["coverage"]) * int(r["reps"]) for r in rows) / reps.sum()
    below = [r for r, c in zip(rows, cover, strict=True) if c < TARGET - 1e-9]
    chance = sum(_chance_below(int(k)) for k in reps)
    holding = cover >= TARGET - 1e-9
    wide = holding & (ratio > WIDE)
    parts = [
        f"**What the tables say.** The {len(rows)} cells of the main table "
        f"cover the truth in {100 * cover.min():.1f}-{100 * cover.max():.1f} % "
        f"of the replications ({reps.min()}-{reps.max()} per cell), "
        f"{100 * pooled:.1f} % of all {reps.sum()} intervals pooled. "
        f"{len(below)} {'cell falls' if len(below) == 1 else 'cells fall'} "
        f"below the {100 * TARGET:.0f} % target; had "
        f"every interval covered exactly {100 * LEVEL:.0f} %, {chance:.1f} cells "
        f"would have fallen below it by chance alone (a cell of 200 replications "
        f"at 95 % shows below 93 % with probability {_chance_below(200):.2f})."
    ]
    counts = dict(zip(*np.unique(reps, return_counts=True), strict=True))
    most = [r for r in rows if int(r["reps"]) >= 1000]
    parts.append(
        "Replications per cell: "
        + ", ".join(
            f"{int(k)} in {int(v)} cell{'s' if v > 1 else ''}"
            for k, v in sorted(counts.items())
        )
        + "."
        + (
            " The cells of 1000 or more: "
            + "; ".join(
                f"{r['bed']}, n = {r['n']}, {r['error']} ({r['reps']})" for r in most
            )
            + "."
            if most
            else ""
        )
    )
    if below:
        listed = "; ".join(
            f"{r['bed']}, n = {r['n']}, {r['error']}: "
            f"{float(r['coverage']):.1%} ({r['reps']} replications)"
            for r in below
        )
        parts.append(f"The cells below {100 * TARGET:.0f} %: {listed}.")
    pvalues, chance05 = _binomial_pvalues(cover, reps)
    flagged = [r for r, p in zip(rows, pvalues, strict=True) if p <= 0.05]
    holm = _holm(pvalues)
    parts.append(
        f"Tested cell by cell against 95 % (one-sided binomial test of its "
        f"replications), {len(flagged)} cells cover less at the 5 % level, "
        f"where chance alone gives {chance05:.1f} had every interval covered "
        f"exactly 95 %; {int(np.sum(pvalues <= 0.01))} at the 1 % level; "
        f"{int(holm.sum())} after Holm's correction for the {len(rows)} cells "
        f"(smallest p-value {_p(pvalues.min())}). "
        + (
            "Those at the 5 % level: "
            + "; ".join(
                f"{r['bed']}, n = {r['n']}, {r['error']} (p = {_p(p)})"
                for r, p in zip(rows, pvalues, strict=True)
                if p <= 0.05
            )
            + "."
            if flagged
            else ""
        )
    )
    smallest = []
    for error in COLUMNS:
        mine = [r for r in rows if r["error"] == error]
        if mine:
            low = min(mine, key=lambda r: float(r["coverage"]))
            smallest.append(
                f"{error} {float(low['coverage']):.1%} ({low['bed']}, n = {low['n']})"
            )
    parts.append("Smallest coverage per error: " + "; ".join(smallest) + ".")
    late = holding & (sizes >= 1000)
    medians = [
        f"{np.median(ratio[m]):.2f}" if m.any() else "-" for m in (holding, late)
    ]
    parts.append(
        f"Width: {int(wide.sum())} of the {int(holding.sum())} cells that cover "
        f"are wider than {WIDE} times the oracle (the median ratio of the "
        f"covering cells is {medians[0]}, {medians[1]} from n = 1000 on)."
    )
    away = np.array([float(r["truth"]) > 1e-4 for r in rows])
    kept = holding & away
    median_away = f"{np.median(ratio[kept]):.2f}" if kept.any() else "-"
    parts[-1] = parts[-1][:-1] + (
        f"; where the truth is away from 0 (above 10^-4), "
        f"{int(np.sum(wide & away))} of the {int(kept.sum())} covering cells "
        f"are (their median ratio {median_away})."
    )
    # the oracle of a cell of few replications is itself narrowed (by 16 %
    # with 20, 4 % with 100: bench_interval_width.py --oracle-bias)
    many = reps >= 100
    sure = kept & many
    late = sure & (sizes >= 1000)
    parts[-1] = parts[-1][:-1] + (
        f"; of the covering cells away from 0 with at least 100 replications, "
        f"{int(np.sum(wide & sure))} of {int(sure.sum())} are, "
        f"{int(np.sum(wide & late))} of {int(late.sum())} from n = 1000 on."
    )
    # the ratio's own noise: the oracle's width from R replications is
    # narrowed and noisy (bench_interval_width.py --oracle-bias)
    noise = oracle_noise(reps)
    mean_f = np.array([noise[int(k)][0] for k in reps])
    low_f = np.array([noise[int(k)][1] for k in reps])
    debiased = wide & (ratio * mean_f > WIDE)
    beyond = wide & (ratio * low_f > WIDE)
    parts.append(
        f"The oracle's width from a cell's R replications is itself an "
        f"estimate: from R draws of a normal law, its 2.5-97.5 % quantile "
        f"range is on average {noise[min(noise)][0]:.3f} of the law's at R = "
        f"{min(noise)} and {noise[max(noise)][0]:.3f} at R = {max(noise)}, and "
        f"lies between {noise[max(noise)][1]:.3f} and "
        f"{noise[max(noise)][2]:.3f} of it in 95 % of draws at R = "
        f"{max(noise)} ({noise[min(noise)][1]:.3f}-{noise[min(noise)][2]:.3f} "
        f"at R = {min(noise)}). Taking that mean narrowing out, "
        f"{int(debiased.sum())} of the {int(wide.sum())} wide cells stay wider "
        f"than {WIDE} times the oracle ({int(np.sum(debiased & away))} away "
        f"from 0); {int(beyond.sum())} are wider by more than the oracle's "
        f"noise (their ratio times the 2.5 % quantile above {WIDE}; "
        f"{int(np.sum(beyond & away))} away from 0, "
        f"{int(np.sum(beyond & away & (sizes >= 1000)))} of them from n = 1000 "
        f"on). The others' measured ratio above {WIDE} can be the oracle's "
        f"noise; the normal law is an approximation where the estimator's "
        f"law is skewed (small n)."
    )
    if beyond.any():
        by_n = {}
        for r, b in zip(rows, beyond & away, strict=True):
            if b:
                by_n.setdefault(int(r["n"]), []).append(f"{r['bed']} {r['error']}")
        parts.append(
            "Wider than the oracle's noise and away from 0: "
            + "; ".join(
                f"n = {n}: {len(v)} ({', '.join(v)})" for n, v in sorted(by_n.items())
            )
            + "."
        )
    if filing is not None:
        parts.append(_filing_words(rows, wide, beyond, many, away, filing))
    if wide.any():
        by_error = {
            e: int(np.sum(wide & np.array([r["error"] == e for r in rows])))
            for e in COLUMNS
        }
        parts.append(
            "The wider cells per error: "
            + ", ".join(f"{e} {k}" for e, k in by_error.items() if k)
            + "."
        )
    measured = {}
    for r in rows:
        measured.setdefault((r["bed"], int(r["n"])), set()).add(r["error"])
    missing, partial = {}, []
    for bed, n, specs in main_cells(family.values(), SIZES):
        errors = measured.get((bed.name, n))
        if errors is None:
            missing.setdefault(bed.name, []).append(str(n))
        elif len(errors) < len(specs):
            lacking = [label for label, _, _ in specs if label not in errors]
            partial.append(f"{', '.join(lacking)} of {bed.name} at n = {n}")
    missing = [f"{name} at n = {', '.join(ns)}" for name, ns in missing.items()]
    parts.append(
        "Every cell of the family was measured."
        if not (missing or partial)
        else "Not measured: " + "; ".join(missing + partial) + "."
    )
    return "\n".join(_wrap(p) for p in parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=("main", "bins", "share"), default="main")
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--beds", default=None, help="comma-separated bed names")
    parser.add_argument("--sizes", default=None, help="comma-separated n")
    parser.add_argument(
        "--errors",
        default=None,
        help="comma-separated errors of the table (its labels, e.g. ece,nll)",
    )
    parser.add_argument("--csv", default=None)
    parser.add_argument(
        "--render",
        nargs=4,
        metavar=("MAIN", "BINS", "SHARE", "OUT"),
        help="write the guide's tables from the three runs' csv files",
    )
    parser.add_argument(
        "--filing",
        default=None,
        help="with --render: the run of the interval of FILING on the wide cells",
    )
    args = parser.parse_args(argv)
    if args.render:
        render(*args.render, filing_csv=args.filing)
        return
    family = _beds.family()
    names = args.beds.split(",") if args.beds else list(family)
    beds = [family[name] for name in names]
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SIZES
    if args.table == "main":
        cells = main_cells(beds, sizes)
    elif args.table == "bins":
        default = ("sharp_net", "logistic", "logistic_over", "net_calibrated")
        chosen = beds if args.beds else [family[b] for b in default]
        cells = bins_cells(chosen, sizes if args.sizes else (100, 1000, 10_000))
    else:
        cells = share_cells(sizes if args.sizes else (100, 1000, 10_000))
    if args.errors:
        # a subset of the errors: the same replications, fewer intervals
        chosen = set(args.errors.split(","))
        cells = (
            (bed, n, tuple(s for s in specs if s[0] in chosen))
            for bed, n, specs in cells
        )
        cells = ((bed, n, specs) for bed, n, specs in cells if specs)
    print(
        f"calibration_error_interval, nominal 95 %, {args.reps} replications "
        f"per cell (seed {args.seed})"
    )
    print()
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|")
    writer = None
    with open(args.csv or os.devnull, "w", newline="") as f:
        for name, n, result in run(cells, args.reps, args.seed, args.jobs):
            for label, row in result.items():
                print(format_row(name, n, label, row), flush=True)
                row = {"bed": name, "n": n, "error": label, **row}
                if writer is None:
                    import csv

                    writer = csv.DictWriter(f, fieldnames=list(row))
                    writer.writeheader()
                # row by row: a long run stopped early keeps its cells
                writer.writerow(row)
                f.flush()


if __name__ == "__main__":
    main()
