"""Aggregate benchmark rows into a csv, a markdown report and reliability diagrams.

Plain ``csv`` and numpy rather than pandas: pandas is not a dependency of the
package, and the command must run on a bare ``pip install sklcalib``.
"""

import csv
import math
from collections import defaultdict

import numpy as np

from sklcalib import calibration, plotting
from sklcalib._utils._metric_display import DISPLAY
from sklcalib._utils._optional import import_optional as _import_optional
from sklcalib.benchmark.chance import CHANCE_RULE
from sklcalib.benchmark.chance import runs_at_chance as _runs_at_chance
from sklcalib.benchmark.runner import BOOTSTRAP_RESAMPLES, METRICS

__all__ = [
    "aggregate",
    "chance_counts",
    "curvature_correlation",
    "markdown_report",
    "plot_curvature",
    "plot_reliability",
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
    cols += ["train_error", "chance_error", "n_test"]
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
            integer = key in ("seed", "epochs", "n_test")
            row[key] = int(value) if integer else float(value)
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


def markdown_report(rows, *, datasets=None, losses=None, settings=None):
    """The benchmark's markdown report.

    First a table in the layout of Table 1 of Tao et al. (2023): one line per
    dataset, for each loss the test ECE (%) before temperature scaling and after
    it with the optimal temperature in brackets (means over seeds; the lowest
    of each line in bold). Cells with a run whose test error is at or near
    chance (:mod:`sklcalib.benchmark.chance`) carry a dagger and are left out
    of the bold marks: a collapsed net can have a small ECE. Those runs are
    listed in a section of their own. Then one table per dataset with mean ± std over
    seeds of every metric before and after temperature scaling, the error, and
    the Hessian trace of the training loss at the end of training.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`sklcalib.benchmark.runner.run_one`.
    datasets, losses : list of str, optional
        Display order; default: order of first appearance.
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
        "comparison at 5 % (below; no bold without resamples, e.g. from a "
        "csv), among the cells without ⚠ (⚠k/n: k of the n seeds at or near "
        "chance, see below) and, post T, without ⊣ (⊣k/n: k of the n seeds "
        "chose a temperature at an end of the grid, so the optimum was not "
        "in it).",
        "",
    ]
    marks = significance_marks(rows)
    if marks:
        lines += [
            "Brackets: 95 % basic bootstrap interval of the mean ECE over seeds "
            "(test rows resampled); it corrects for the ECE's upward bias on few "
            "rows, so it can lie below the plug-in value. "
            "▼/▲: significantly lower/higher ECE than ce on the same test rows "
            "(same pre/post T), †/‡: post T significantly lower/higher than "
            "pre T; paired bootstrap at 5 %: per seed, the difference of the two "
            "ECEs on the same resampled rows, averaged over the seeds resample "
            f"by resample ({BOOTSTRAP_RESAMPLES} resamples), two-sided.",
            "",
        ]
    header = ["Dataset"]
    for loss in losses:
        header += [f"{loss} pre T", f"{loss} post T"]
    lines += [_md_row(header), _md_row(["---"] * len(header))]
    edges = _edge_counts(rows)
    best_pre_of = _best_losses(rows, "pre", excluded=chance)
    best_post_of = _best_losses(rows, "post", excluded=set(chance) | set(edges))
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


def _paired_pvalue(resampled):
    """Two-sided bootstrap p-value of "no difference" (as
    :func:`sklcalib.metrics.compare_calibration`)."""
    tail = min(np.count_nonzero(resampled <= 0), np.count_nonzero(resampled >= 0))
    return min(1.0, 2.0 * (tail + 1) / (resampled.shape[0] + 1))


def _pooled(runs, when, reference=None, reference_when=None):
    """Mean over seeds of ECE (or of its paired difference to ``reference``),
    observed and resample by resample."""
    seeds = sorted(runs if reference is None else set(runs) & set(reference))
    obs = [runs[s][f"ece_{when}"] for s in seeds]
    boot = [runs[s][f"ece_{when}_bootstrap"] for s in seeds]
    if reference is not None:
        obs = [
            o - reference[s][f"ece_{reference_when}"]
            for o, s in zip(obs, seeds, strict=True)
        ]
        boot = [
            b - reference[s][f"ece_{reference_when}_bootstrap"]
            for b, s in zip(boot, seeds, strict=True)
        ]
    return float(np.mean(obs)), np.mean(boot, axis=0)


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


def _best_losses(rows, when, *, excluded=(), alpha=0.05):
    """``dataset -> loss`` whose mean ECE (``when`` = "pre" or "post") is
    lower than that of *every* other eligible loss by the paired comparison at
    ``alpha`` (per seed, the difference of two ECEs on the same resampled
    rows, averaged over seeds resample by resample; two-sided bootstrap
    p-value): a loss is only called the best when the data say so. Datasets
    with no such loss, and rows without resamples (read from a csv), give no
    entry. ``excluded``: ``(dataset, loss)`` pairs that are never the best
    (runs at or near chance, temperatures at the grid's edge)."""
    runs = defaultdict(dict)
    for row in rows:
        if f"ece_{when}_bootstrap" not in row:
            return {}
        runs[row["dataset"], row["loss"]][row["seed"]] = row
    by_dataset = defaultdict(list)
    for ds, loss in runs:
        if (ds, loss) not in excluded:
            by_dataset[ds].append(loss)
    best = {}
    for ds, losses in by_dataset.items():
        means = {loss: _pooled(runs[ds, loss], when)[0] for loss in losses}
        lowest = min(means, key=means.get)
        others = [loss for loss in losses if loss != lowest]
        if not others:
            continue
        better = True
        for other in others:
            common = set(runs[ds, lowest]) & set(runs[ds, other])
            if not common:
                better = False
                break
            diff, diff_boot = _pooled(runs[ds, lowest], when, runs[ds, other], when)
            if not (diff < 0 and _paired_pvalue(diff_boot) < alpha):
                better = False
                break
        if better:
            best[ds] = lowest
    return best


def significance_marks(rows, *, baseline="ce", alpha=0.05):
    """Interval and significance marks of the Table-1 ECE cells.

    For every (dataset, loss): the 95 % basic bootstrap interval of the mean
    ECE over seeds (the b-th bootstrap resample of every seed averaged; the
    percentile interval reflected about the mean; its lower end can fall
    below 0, which says the data cannot tell that ECE from 0), ▼/▲ when
    the loss's ECE is significantly lower/higher than ``baseline``'s on the
    same test rows, and †/‡ on the post-T cell when the post-T ECE is
    significantly lower/higher than the pre-T ECE. Paired: the runs of one
    dataset and seed share the resampled rows (see
    :func:`~sklcalib.benchmark.runner.run_one`), so the per-seed difference
    of two ECEs is computed resample by resample and averaged over seeds;
    two-sided bootstrap p-values at ``alpha``.

    Returns
    -------
    marks : dict
        ``(dataset, loss) -> {"pre": str, "post": str}`` suffixes; empty when
        the rows carry no bootstrap distributions (e.g. read from a csv).
    """
    runs = defaultdict(dict)
    for row in rows:
        if "ece_pre_bootstrap" not in row or "ece_post_bootstrap" not in row:
            return {}
        runs[row["dataset"], row["loss"]][row["seed"]] = row
    marks = {}
    for (ds, loss), by_seed in runs.items():
        cell = {}
        base = runs.get((ds, baseline))
        for when in ("pre", "post"):
            mean, mean_boot = _pooled(by_seed, when)
            # basic interval: the resampled ECE sits above the ECE by its
            # bias; reflecting the percentile interval about the mean undoes it
            q_low, q_high = np.quantile(mean_boot, [0.025, 0.975])
            # not clipped at 0: a lower end below 0 says the data cannot
            # tell this ECE from a calibrated model's
            low, high = 2 * mean - q_high, 2 * mean - q_low
            text = f" [{100 * low:.2f}, {100 * high:.2f}]"
            if base is not None and loss != baseline and set(base) & set(by_seed):
                diff, diff_boot = _pooled(by_seed, when, base, when)
                if _paired_pvalue(diff_boot) < alpha:
                    text += "▼" if diff < 0 else "▲"
            cell[when] = text
        diff, diff_boot = _pooled(by_seed, "post", by_seed, "pre")
        if _paired_pvalue(diff_boot) < alpha:
            cell["post"] += "†" if diff < 0 else "‡"
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


def plot_curvature(rows, path, *, datasets=None, losses=None, n_cols=3):
    """Save a figure of ECE pre T against the Hessian trace, a panel per dataset.

    One point per loss (means over seeds), labelled with the loss name, on a
    grid of at most ``n_cols`` panels per line. Horizontal bars: the Hutchinson
    standard error of the mean trace (the per-seed standard errors combined);
    vertical bars: the standard deviation of the ECE over seeds. Losses with a
    run at or near chance are drawn hollow and grey. A panel with a trace at or
    below zero uses a symmetric-log axis (linear around 0) and says so: a
    negative trace means the training loss is not at a local minimum there
    (or, within its error bar, estimation noise). Positive traces spanning
    more than two decades use a log axis.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`sklcalib.benchmark.runner.run_one`.
    path : str or path-like
        PNG file to write.
    datasets, losses : list of str, optional
        Display order; default: order of first appearance.
    n_cols : int, default=3
        Panels per line of the grid.

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure written (no pyplot state is kept).
    """
    Figure = _import_optional("matplotlib.figure", "sklcalib benchmark").Figure

    stats = aggregate(rows)
    chance = chance_counts(rows)
    datasets = _ordered([r["dataset"] for r in rows], datasets or [])
    losses = _ordered([r["loss"] for r in rows], losses or [])
    n_cols = max(1, min(n_cols, len(datasets)))
    n_rows = math.ceil(len(datasets) / n_cols)
    fig = Figure(figsize=(4.4 * n_cols, 3.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax, ds in zip(axes, datasets, strict=False):
        points = _curvature_points(rows, stats, ds, losses)
        for loss, x, x_se, y, y_sd in points:
            collapsed = (ds, loss) in chance
            # one colour per loss in every panel
            color = "0.55" if collapsed else f"C{losses.index(loss) % 10}"
            ax.errorbar(
                x,
                y,
                xerr=None if math.isnan(x_se) else x_se,
                yerr=None if math.isnan(y_sd) else y_sd,
                fmt="o",
                ms=5,
                mfc="none" if collapsed else None,
                color=color,
                capsize=2,
                lw=1,
            )
            label = f"{loss} (at chance)" if collapsed else loss
            ax.annotate(
                label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
        _curvature_axis(ax, [p[1] for p in points])
        ax.set_title(ds)
        ax.set_ylabel("test ECE pre T (%)")
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    fig.suptitle(
        "Curvature at the end of training vs calibration (bars: Hutchinson "
        "standard error, ECE std over seeds)",
        fontsize=10,
    )
    fig.savefig(path, dpi=90)
    return fig


def _curvature_points(rows, stats, dataset, losses):
    """``(loss, trace, trace_se, ece_pct, ece_sd_pct)`` with a finite trace."""
    points = []
    for loss in losses:
        if (dataset, loss) not in stats:
            continue
        s = stats[dataset, loss]
        x = s["hessian_trace"][0]
        if not math.isfinite(x):
            continue
        # standard error of a mean of independent estimates
        ses = np.array(
            [
                r.get("hessian_trace_se", math.nan)
                for r in rows
                if r["dataset"] == dataset and r["loss"] == loss
            ],
            dtype=float,
        )
        x_se = float(np.sqrt(np.sum(ses**2)) / len(ses))
        points.append((loss, x, x_se, 100 * s["ece_pre"][0], 100 * s["ece_pre"][1]))
    return points


def _curvature_axis(ax, traces):
    """Linear, log or symlog x axis for these traces (see plot_curvature)."""
    traces = np.asarray(traces, dtype=float)
    label = "Hessian trace of the training loss"
    if traces.size == 0:
        ax.text(0.5, 0.5, "no Hessian trace", ha="center", transform=ax.transAxes)
    elif np.any(traces <= 0):
        nonzero = np.abs(traces[traces != 0])
        # a power of ten, so the linear region ends on a labelled tick, and at
        # most three decades below the largest |trace|, so the ticks stay apart
        decades = np.floor(np.log10(nonzero)) if nonzero.size else np.zeros(1)
        linthresh = 10.0 ** max(decades.min(), decades.max() - 2)
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.axvline(0.0, color="0.7", lw=0.8, zorder=0)
        label += (
            f"\n(symlog: linear within ±{linthresh:g}; < 0: not at a local minimum)"
        )
    elif traces.max() / traces.min() > 100:
        ax.set_xscale("log")
    ax.set_xlabel(label, fontsize=9)


def _md_row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def plot_reliability(dataset, panels, path, *, n_cols=4):
    """Save one figure with a reliability diagram per loss (before scaling).

    Parameters
    ----------
    dataset : str
        Dataset name, for the title.
    panels : list of (loss, y_true, y_prob)
        One panel per entry.
    path : str or path-like
        PNG file to write.
    """
    # A bare Figure (no pyplot): no GUI backend and no global figure state,
    # so the command works headless and leaks no figures.
    Figure = _import_optional("matplotlib.figure", "sklcalib benchmark").Figure

    n_cols = min(n_cols, len(panels))
    n_rows = math.ceil(len(panels) / n_cols)
    fig = Figure(figsize=(3.9 * n_cols, 3.7 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    displays = []
    for ax, (loss, y_true, y_prob) in zip(axes, panels, strict=False):
        displays.append(
            plotting.ReliabilityDisplay.from_predictions(
                y_true, y_prob, ax=ax, name=loss
            )
        )
        ax.set_title(loss)
        ax.legend(loc="upper left", fontsize=7)
    plotting.share_histogram_axis(displays)  # panels side by side: one histogram scale
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(f"{dataset}: reliability before temperature scaling (test)")
    fig.savefig(path, dpi=90)
