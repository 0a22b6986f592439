"""The benchmark's net runs as tables: ``results.csv`` and ``results.md``.

The rows of :func:`sklcalib.benchmark.runner.run_one` are aggregated over the
seeds; the markdown report lays out test ECE before and after temperature
scaling in the layout of Table 1 of Tao et al. (2023), with intervals of the
population error and paired-comparison marks. The figures are
:mod:`sklcalib.benchmark.figures`.

Plain ``csv`` and numpy rather than pandas: pandas is not a dependency of the
package, and the command must run on a bare ``pip install sklcalib``.
"""

import csv
import math
from collections import defaultdict

import numpy as np

from sklcalib import calibration
from sklcalib._utils._docstrings import fill_doc as _fill_doc
from sklcalib._utils._metric_display import DISPLAY
from sklcalib.benchmark import _paired
from sklcalib.benchmark.chance import CHANCE_RULE
from sklcalib.benchmark.chance import runs_at_chance as _runs_at_chance
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.runner import derive_seed as _derive_seed

__all__ = [
    "aggregate",
    "chance_counts",
    "curvature_correlation",
    "markdown_report",
    "read_csv",
    "row_columns",
    "significance_marks",
    "write_csv",
]

# metrics shown in percent in the tables, and their column labels: those of
# the metric registry, and the classification error
_PERCENT = {key for key, shown in DISPLAY.items() if shown.percent} | {"error"}
_LABELS = {key: shown.short for key, shown in DISPLAY.items()} | {"error": "Error"}


def row_columns():
    """Column order of ``results.csv``."""
    cols = ["dataset", "loss", "seed", "epochs", "temperature"]
    for key in METRICS:
        cols += [f"{key}_pre", f"{key}_post"]
    cols += ["ece_pre_low", "ece_pre_high", "ece_post_low", "ece_post_high"]
    cols += ["ece_interval_level"]
    cols += ["train_error", "chance_error", "n_test"]
    cols += ["prior_nll", "nll_post_vs_prior", "nll_post_vs_prior_se"]
    cols += ["epochs_trained", "best_epoch"]
    return [*cols, "hessian_trace", "hessian_trace_se", "train_seconds"]


def write_csv(rows, path):
    """Write one line per run, in the column order of :func:`row_columns`."""
    cols = row_columns()
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: _fmt_csv(row.get(c, math.nan)) for c in cols})


def _fmt_csv(value):
    # repr of a float round-trips exactly, so a re-read csv equals the run.
    return repr(value) if isinstance(value, float) else value


def read_csv(path):
    """Read ``results.csv`` back into a list of dicts with numbers parsed."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for key, value in row.items():
            if key in ("dataset", "loss"):
                continue
            value = float(value)
            integer = key in (
                "seed",
                "epochs",
                "n_test",
                "epochs_trained",
                "best_epoch",
            )
            # an older csv's missing column is NaN, not an integer
            row[key] = int(value) if integer and math.isfinite(value) else value
    return rows


def aggregate(rows):
    """Mean and standard deviation over seeds of every numeric column.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`sklcalib.benchmark.runner.run_one`.

    Returns
    -------
    stats : dict
        ``(dataset, loss) -> {column: (mean, std, n_seeds)}``; ``std`` is the
        sample standard deviation (``ddof=1``) and NaN for a single seed.
    """
    groups = defaultdict(list)
    for row in rows:
        groups[row["dataset"], row["loss"]].append(row)
    numeric = [c for c in row_columns() if c not in ("dataset", "loss", "seed")]
    stats = {}
    for key, group in groups.items():
        stats[key] = {}
        for col in numeric:
            # rows of an older csv may lack a column: NaN, not a KeyError
            values = np.array([r.get(col, math.nan) for r in group], dtype=float)
            std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
            stats[key][col] = (float(np.mean(values)), std, len(values))
    return stats


def _cell(mean, std, scale=1.0, digits=2):
    if math.isnan(mean):
        return "–"
    text = f"{mean * scale:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std * scale:.{digits}f}"
    return text


def _ordered(values, order):
    seen = list(dict.fromkeys(values))
    return [v for v in order if v in seen] + [v for v in seen if v not in order]


@_fill_doc
def markdown_report(rows, *, datasets=None, losses=None, settings=None):
    """The benchmark's markdown report.

    First a table in the layout of Table 1 of Tao et al. (2023): one line per
    dataset, for each loss the test ECE (%) before temperature scaling and after
    it with the optimal temperature in parentheses (means over seeds), each
    with the interval and marks of :func:`significance_marks`, and in bold the
    lowest of its line when the paired comparison finds it lower than every
    other eligible cell. Cells with a run whose test error is at or near
    chance (:mod:`sklcalib.benchmark.chance`) carry ⚠ and are left out
    of the bold marks: a collapsed net can have a small ECE; so are post-T
    cells whose temperature sits at an end of the grid (⊣). Those runs are
    listed in a section of their own. Then one table per dataset with mean ± std over
    seeds of every metric before and after temperature scaling, the error, and
    the Hessian trace of the training loss at the end of training.

    %(benchmark_rows_parameters)s
    settings : str, optional
        A line describing the run, printed under the title.

    Returns
    -------
    text : str
    """
    stats = aggregate(rows)
    datasets = _ordered([r["dataset"] for r in rows], datasets or [])
    losses = _ordered([r["loss"] for r in rows], losses or [])
    seeds = sorted({r["seed"] for r in rows})
    chance = chance_counts(rows)
    lines = ["# sklcalib benchmark", ""]
    if settings:
        lines += [settings, ""]
    lines += [
        f"Test-split metrics, mean ± std over {len(seeds)} seed(s) "
        f"({', '.join(map(str, seeds))}). ECE-type metrics and error in %. "
        "T: temperature chosen on the validation split by grid search "
        "(0.1..10.0) on 15-bin ECE. Hessian trace: Hutchinson estimate of the "
        "trace of the Hessian of each net's own training loss on the training "
        "split (at most 2000 rows) at the end of training (a measure of curvature, "
        "Kimura & Naganuma).",
        "",
        "## ECE before and after temperature scaling",
        "",
        "Layout of Table 1 of Tao et al. (2023): ECE (%) pre T | post T "
        "(optimal T); means over seeds. Bold: the lowest of its line only "
        "when it is lower than every other cell of the line by the paired "
        "comparison below (no bold without the test probabilities, e.g. from "
        "a csv), among the cells without ⚠ (⚠k/n: k of the n seeds at or near "
        "chance, see below) and, post T, without ⊣ (⊣k/n: k of the n seeds "
        "chose a temperature at an end of the grid, so the optimum was not "
        "in it).",
        "",
    ]
    edges = _edge_counts(rows)
    excluded_post = set(chance) | set(edges)
    # every comparison of the table at once: each seed's row draws are shared
    _comparisons(rows, _wanted_pairs(rows, "ce", set(chance), excluded_post), 0.05)
    marks = significance_marks(rows)
    brackets, level = _brackets(rows)
    if brackets:
        lines += [
            f"Brackets: an at least {100 * level:.0f} % interval of the mean over "
            "seeds of the population ECE (the error the 15-bin ECE estimates, which on "
            "a few hundred test rows sits below the plug-in value: a "
            "calibrated model's plug-in ECE is above 0): per seed "
            "sklcalib.metrics.calibration_error_interval at level "
            "1 - 0.05/S (S seeds), the ends averaged over the seeds (a union "
            "bound, valid however the seeds depend on each other).",
            "",
        ]
    if _test_groups(rows) is not None:
        lines += [
            "▼/▲: lower/higher ECE than ce on the same test rows (same pre/post "
            "T), †/‡: post T lower/higher than pre T, no mark: not "
            "distinguishable. Paired bootstrap-t test (compare_calibration's) "
            "combined over the seeds (the mean of the per-seed differences of "
            "gap-corrected ECEs over its standard error, against independent "
            f"per-seed paired resamples, {_paired.RESAMPLES} resamples), "
            "two-sided at 5 %; a mark also needs the bootstrap-t "
            "interval of the mean difference of population ECEs to exclude 0 "
            "(marks and intervals agree).",
            "",
        ]
    header = ["Dataset"]
    for loss in losses:
        header += [f"{loss} pre T", f"{loss} post T"]
    lines += [_md_row(header), _md_row(["---"] * len(header))]
    best_pre_of = _best_losses(rows, "pre", excluded=chance)
    best_post_of = _best_losses(rows, "post", excluded=excluded_post)
    for ds in datasets:
        cells = [ds]
        for loss in losses:
            if (ds, loss) not in stats:
                cells += ["", ""]
                continue
            s = stats[ds, loss]
            pre = f"{100 * s['ece_pre'][0]:.2f}"
            post = f"{100 * s['ece_post'][0]:.2f}({s['temperature'][0]:.1f})"
            extra = marks.get((ds, loss), {})
            if (ds, loss) in chance:
                mark = _chance_mark(chance[ds, loss], s["ece_pre"][2])
                cells += [
                    pre + extra.get("pre", "") + mark,
                    post + extra.get("post", "") + mark,
                ]
                continue
            if (ds, loss) in edges:
                post += f" ⊣{edges[ds, loss]}/{s['ece_pre'][2]}"
            cells += [
                (f"**{pre}**" if best_pre_of.get(ds) == loss else pre)
                + extra.get("pre", ""),
                (f"**{post}**" if best_post_of.get(ds) == loss else post)
                + extra.get("post", ""),
            ]
        lines.append(_md_row(cells))

    for ds in datasets:
        lines += ["", f"## {ds}", ""]
        header = ["Loss", "ECE pre", "ECE post (T)"]
        for key in METRICS:
            if key in ("ece", "error"):
                continue
            header += [f"{_LABELS[key]} pre", f"{_LABELS[key]} post"]
        header += ["Error", "Hessian trace"]
        lines += [_md_row(header), _md_row(["---"] * len(header))]
        for loss in losses:
            if (ds, loss) not in stats:
                continue
            s = stats[ds, loss]
            cells = [
                loss,
                _cell(*s["ece_pre"][:2], 100),
                f"{_cell(*s['ece_post'][:2], 100)} ({s['temperature'][0]:.1f})",
            ]
            for key in METRICS:
                if key in ("ece", "error"):
                    continue
                scale = 100 if key in _PERCENT else 1
                digits = 2 if key in _PERCENT else 3
                cells += [
                    _cell(*s[f"{key}_pre"][:2], scale, digits),
                    _cell(*s[f"{key}_post"][:2], scale, digits),
                ]
            error = _cell(*s["error_pre"][:2], 100)
            if (ds, loss) in chance:
                error += _chance_mark(chance[ds, loss], s["error_pre"][2])
            cells += [error, _cell(*s["hessian_trace"][:2], 1, 1)]
            lines.append(_md_row(cells))
        # a collapsed net's curvature says nothing about calibration
        learnt = [loss for loss in losses if (ds, loss) not in chance]
        rho = curvature_correlation(stats, ds, learnt)
        if rho is not None:
            lines += [
                "",
                f"Curvature vs calibration: Spearman rank correlation between the "
                f"Hessian trace and ECE pre T across the {rho[1]} losses "
                "(runs at or near chance left out): "
                f"ρ = {rho[0]:.2f} (Kimura & Naganuma: lower curvature goes with "
                "better calibration, i.e. ρ > 0).",
            ]
    lines += ["", *_chance_section(rows)]
    return "\n".join(lines) + "\n"


def _grid_edges():
    grid = calibration.DEFAULT_GRID
    return float(np.min(grid)), float(np.max(grid))


def _edge_counts(rows):
    """``(dataset, loss) -> number of seeds whose temperature sits at an end
    of the search grid`` (flagged only): the grid did not contain the
    optimum, so the post-T numbers are not those of a tuned temperature."""
    low, high = _grid_edges()
    counts = defaultdict(int)
    for row in rows:
        t = row.get("temperature")
        if t is not None and np.isfinite(t) and (t <= low or t >= high):
            counts[row["dataset"], row["loss"]] += 1
    return dict(counts)


def _test_groups(rows):
    """``(dataset, seed) -> (y_test, {(loss, when): proba})`` for the runs of
    a dataset and seed that score the same test rows, or None when a row
    carries no probabilities (e.g. read back from a csv)."""
    groups = {}
    for row in rows:
        if any(k not in row for k in ("y_test", "proba_pre", "proba_post")):
            return None
        key = row["dataset"], row["seed"]
        y, probas = groups.setdefault(key, (row["y_test"], {}))
        if not np.array_equal(y, row["y_test"]):
            continue  # not paired with the first run of its group: no marks
        probas[row["loss"], "pre"] = row["proba_pre"]
        probas[row["loss"], "post"] = row["proba_post"]
    return groups


# The comparisons of the last rows seen: markdown_report and the terminal
# summary ask for the same ones. Keyed by the rows' identity; the arrays are
# pinned so that their ids cannot be reused while the entry lives.
_MEMO = {"key": None, "pinned": None, "results": {}}


def _comparisons(rows, wanted, alpha):
    """``{(dataset, a, b): Comparison}`` for the ``wanted`` pairs ``(dataset,
    (loss, when), (loss, when))``: the paired bootstrap-t test of the two
    runs' test ECEs, combined over the seeds where both ran (see
    :mod:`sklcalib.benchmark._paired`); empty when the rows carry no
    probabilities. Every run of a dataset and seed is resampled with the
    same row draws, so each run's resampled bin sums are computed once."""
    groups = _test_groups(rows)
    if groups is None:
        return {}
    arrays = ("y_test", "proba_pre", "proba_post")
    key = (
        alpha,
        *(
            (r["dataset"], r["loss"], r["seed"], *(id(r[a]) for a in arrays))
            for r in rows
        ),
    )
    if _MEMO["key"] != key:
        pinned = [r[a] for r in rows for a in arrays]
        _MEMO.update(key=key, pinned=pinned, results={})
    results = _MEMO["results"]
    missing = [w for w in wanted if w not in results]
    needed = defaultdict(set)  # dataset -> runs
    for ds, a, b in missing:
        needed[ds] |= {a, b}
    per_seed = defaultdict(list)
    for (ds, seed), (y, probas) in sorted(groups.items()):
        if not needed.get(ds):
            continue
        y_idx = _paired.encode(y, next(iter(probas.values())))
        runs = {
            k: _paired.run_residuals(y_idx, probas[k])
            for k in sorted(needed[ds])
            if k in probas
        }
        if len(runs) < 2:
            continue
        # the seed's pairs together: they share the row draws
        mine = [w for w in missing if w[0] == ds and w[1] in runs and w[2] in runs]
        found = _paired.group_resamples(
            runs, [w[1:] for w in mine], _paired.RESAMPLES, _derive_seed(ds, seed)
        )
        for w in mine:
            per_seed[w].append(found[w[1:]])
    for w, pieces in per_seed.items():
        results[w] = _paired.combine(pieces, 1.0 - alpha)
    return {w: results[w] for w in wanted if w in results}


def _best_candidates(rows, when, excluded):
    """``dataset -> (lowest, others)``: the eligible loss of lowest mean ECE
    (``when`` = "pre" or "post") and the other eligible losses."""
    means = defaultdict(dict)
    for (ds, loss), s in aggregate(rows).items():
        if (ds, loss) not in excluded:
            means[ds][loss] = s[f"ece_{when}"][0]
    out = {}
    for ds, by_loss in means.items():
        lowest = min(by_loss, key=by_loss.get)
        others = [loss for loss in by_loss if loss != lowest]
        if others:
            out[ds] = lowest, others
    return out


def _wanted_pairs(rows, baseline, excluded_pre, excluded_post):
    """Every comparison the Table-1 marks need: each loss against
    ``baseline`` (pre and post T), post T against pre T, and the lowest
    eligible loss of a line against the other eligible ones."""
    wanted = set()
    keys = {(r["dataset"], r["loss"]) for r in rows}
    for ds, loss in keys:
        wanted.add((ds, (loss, "post"), (loss, "pre")))
        if loss != baseline and (ds, baseline) in keys:
            for when in ("pre", "post"):
                wanted.add((ds, (loss, when), (baseline, when)))
    for when, excluded in (("pre", excluded_pre), ("post", excluded_post)):
        for ds, (lowest, others) in _best_candidates(rows, when, excluded).items():
            wanted |= {(ds, (lowest, when), (o, when)) for o in others}
    return wanted


def _best_losses(rows, when, *, excluded=(), alpha=0.05):
    """``dataset -> loss`` whose mean ECE (``when`` = "pre" or "post") is
    lower than that of *every* other eligible loss by the paired comparison
    at ``alpha`` (:func:`significance_marks`' test and interval, combined
    over seeds): a loss is only called the best when the data say so.
    Datasets with no such loss, and rows without probabilities (read from a
    csv), give no entry. ``excluded``: ``(dataset, loss)`` pairs that are
    never the best (runs at or near chance, temperatures at the grid's
    edge)."""
    candidates = _best_candidates(rows, when, set(excluded))
    wanted = {
        (ds, (lowest, when), (o, when))
        for ds, (lowest, others) in candidates.items()
        for o in others
    }
    found = _comparisons(rows, wanted, alpha)
    best = {}
    for ds, (lowest, others) in candidates.items():
        pairs = [found.get((ds, (lowest, when), (o, when))) for o in others]
        if all(c is not None and c.verdict(alpha) < 0 for c in pairs):
            best[ds] = lowest
    return best


def _brackets(rows):
    """``(dataset, loss) -> {when: (low, high)}``: the mean over seeds of the
    per-seed interval ends, and the least level they hold for the mean over
    seeds of the population ECE (``1 - S (1 - level)``, union bound), or
    ``({}, None)`` when the rows carry no interval level (an older csv)."""
    groups = defaultdict(list)
    for row in rows:
        groups[row["dataset"], row["loss"]].append(row)
    out, levels = {}, []
    for key, group in groups.items():
        level = np.array([r.get("ece_interval_level", math.nan) for r in group])
        if not np.all(np.isfinite(level)):
            return {}, None
        levels.append(1.0 - float(np.sum(1.0 - level)))
        cell = {}
        for when in ("pre", "post"):
            mean = float(np.mean([r[f"ece_{when}"] for r in group]))
            low = float(np.mean([r[f"ece_{when}_low"] for r in group]))
            high = float(np.mean([r[f"ece_{when}_high"] for r in group]))
            # each interval holds its seed's ECE, so the means hold the mean
            cell[when] = min(low, mean), max(high, mean)
        out[key] = cell
    if not levels or min(levels) <= 0.0:
        return {}, None
    return out, min(levels)


def significance_marks(rows, *, baseline="ce", alpha=0.05):
    """Interval and significance marks of the Table-1 ECE cells.

    For every (dataset, loss) and pre/post T:

    - the bracket: an interval of the mean over seeds of the *population*
      test ECE (15 bins), the mean over the seeds of the ends of each seed's
      :func:`~sklcalib.metrics.calibration_error_interval` (``ece_*_low``,
      ``ece_*_high`` of the rows, at ``ece_interval_level``). If every seed's
      interval covers its seed's error, the mean of the lower (upper) ends is
      below (above) the mean of the errors, so the bracket covers with
      probability at least ``1 - S (1 - level)`` for S seeds, whatever the
      dependence between the seeds (they share the test split): the command
      runs every seed at ``1 - 0.05 / S``, a bracket of at least 95 %. It
      holds the mean ECE shown;
    - ▼/▲ when the loss's ECE is lower/higher than ``baseline``'s on the
      same test rows (same pre/post T), †/‡ on the post-T cell when the
      post-T ECE is lower/higher than the pre-T ECE. Each is the paired
      bootstrap-t test of :func:`sklcalib.metrics.compare_calibration`
      (:mod:`sklcalib.benchmark._paired`) combined over the seeds (the mean
      of the per-seed differences of gap-corrected ECEs, every seed's rows
      resampled independently; the runs of a dataset and seed share the
      test rows), two-sided at ``alpha``, with its bootstrap-t
      interval of the mean difference of population ECEs: a mark needs the
      test to reject *and* that interval to exclude 0, so a mark says that
      the population errors differ, not only the plug-in values.

    Returns
    -------
    marks : dict
        ``(dataset, loss) -> {"pre": str, "post": str}`` suffixes; the
        brackets only when the rows carry no probabilities (e.g. read from a
        csv), empty when they carry no interval level either (a csv of an
        older version, whose intervals were of the plug-in).
    """
    brackets, _ = _brackets(rows)
    keys = list(dict.fromkeys((r["dataset"], r["loss"]) for r in rows))
    wanted = set()
    for ds, loss in keys:
        wanted.add((ds, (loss, "post"), (loss, "pre")))
        if loss != baseline and (ds, baseline) in keys:
            wanted |= {(ds, (loss, w), (baseline, w)) for w in ("pre", "post")}
    found = _comparisons(rows, wanted, alpha)
    if not brackets and not found:
        return {}
    marks = {}
    for ds, loss in keys:
        cell = {}
        for when in ("pre", "post"):
            text = ""
            if (ds, loss) in brackets:
                low, high = brackets[ds, loss][when]
                text = f" [{100 * low:.2f}, {100 * high:.2f}]"
            c = found.get((ds, (loss, when), (baseline, when)))
            if c is not None:
                text += {-1: "▼", 1: "▲", 0: ""}[c.verdict(alpha)]
            cell[when] = text
        c = found.get((ds, (loss, "post"), (loss, "pre")))
        if c is not None:
            cell["post"] += {-1: "†", 1: "‡", 0: ""}[c.verdict(alpha)]
        marks[ds, loss] = cell
    return marks


def chance_counts(rows):
    """``(dataset, loss) -> number of seeds at or near chance``, flagged only."""
    counts = defaultdict(int)
    for row in _runs_at_chance(rows):
        counts[row["dataset"], row["loss"]] += 1
    return dict(counts)


def _chance_section(rows):
    """Markdown lines listing the runs at or near chance, with the rule."""
    flagged = _runs_at_chance(rows)
    lines = ["## Runs at or near chance", ""]
    lines.append(
        f"A run is {CHANCE_RULE}. Such a net learnt (next to) nothing: its ECE "
        "can be small because its confidence is as low as its accuracy, so its "
        "cells carry ⚠ and are left out of the bold marks."
    )
    lines.append("")
    if not flagged:
        return [*lines, "None."]
    header = ["Dataset", "Loss", "Seed", "Error (%)", "Majority-class error (%)"]
    lines += [_md_row(header), _md_row(["---"] * len(header))]
    for r in flagged:
        lines.append(
            _md_row(
                [
                    r["dataset"],
                    r["loss"],
                    r["seed"],
                    f"{100 * r['error_pre']:.2f}",
                    f"{100 * r['chance_error']:.2f}",
                ]
            )
        )
    return lines


def _chance_mark(n_flagged, n_seeds):
    return f" ⚠{n_flagged}/{n_seeds}"


def curvature_correlation(stats, dataset, losses):
    """Spearman ρ between mean Hessian trace and mean ECE pre T across losses.

    Returns ``(rho, n_losses)``, or ``None`` with fewer than 3 losses with a
    finite trace (or constant values, where ρ is undefined).
    """
    from scipy.stats import spearmanr

    pairs = [
        (stats[dataset, loss]["hessian_trace"][0], stats[dataset, loss]["ece_pre"][0])
        for loss in losses
        if (dataset, loss) in stats
    ]
    pairs = [p for p in pairs if math.isfinite(p[0])]
    if len(pairs) < 3:
        return None
    x, y = np.array(pairs).T
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic), len(pairs)


def _md_row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"
