"""The post-hoc calibration runs as tables: ``boosting.csv`` and the section of
``results.md`` on calibrators of tabular models.

The rows are those of :func:`sklcalib.benchmark.tabular.run_boosting`: one per
(dataset, base model, calibrator, seed), the raw model's row named
:data:`~sklcalib.benchmark.tabular.RAW`.
"""

import csv
import math

import numpy as np

from sklcalib._utils._docstrings import fill_doc as _fill_doc
from sklcalib._utils._metric_display import DISPLAY
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.tabular import RAW

__all__ = [
    "CHANCE_RULE",
    "auto_check",
    "boosting_markdown",
    "boosting_summary",
    "calibrator_scores",
    "chance_cells",
    "write_boosting_csv",
]

_HEADLINE = ("ece", "nll", "brier")


_COLUMNS = ["dataset", "model", "calibrator", "seed", "n_train", *METRICS]
_CHANGE = ["nll_change", "nll_change_low", "nll_change_high", "nll_change_se"]
_PRIOR = ["prior_nll", "nll_vs_prior", "nll_vs_prior_se"]

#: the rule of the ⚠ mark of the post-hoc tables, in words
CHANCE_RULE = (
    "⚠: the test log-loss is not below the prior's (the training split's class "
    "frequencies predicted for every test row, the forecast of a model that "
    "learnt nothing): the 95 % interval of the mean per-row log-loss "
    "difference to it, over the seeds, does not lie below 0. A model marked "
    "so is not worth calibrating, and a calibrator marked so only brings it "
    "back to the prior"
)


def write_boosting_csv(rows, path):
    """Write ``boosting.csv``: one line per dataset x model x seed x calibrator."""
    cols = [*_COLUMNS, *_CHANGE, *_PRIOR, "fit_seconds"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    c: repr(v) if isinstance(v, float) else v
                    for c in cols
                    for v in [row.get(c, math.nan)]
                }
            )


def _stats(rows):
    """``(dataset, model, calibrator) -> {metric: (mean, std)}`` over seeds,
    plus the pooled relative log-loss change and its interval."""
    groups = {}
    for row in rows:
        key = (row["dataset"], row.get("model", "hgb"), row["calibrator"])
        groups.setdefault(key, []).append(row)
    out = {}
    for key, group in groups.items():
        out[key] = {}
        for metric in (*METRICS, "n_train"):
            values = np.array([r[metric] for r in group], dtype=float)
            std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
            out[key][metric] = (float(np.mean(values)), std)
        out[key]["n_seeds"] = len(group)
        if all("nll_change" in r for r in group):
            # the mean of the seeds' changes; the seeds' test sets are drawn
            # independently, so their standard errors add in quadrature
            change = float(np.mean([r["nll_change"] for r in group]))
            se = math.sqrt(sum(r["nll_change_se"] ** 2 for r in group)) / len(group)
            out[key]["nll_change"] = (change, change - 1.96 * se, change + 1.96 * se)
        if all(math.isfinite(r.get("nll_vs_prior", math.nan)) for r in group):
            diff = float(np.mean([r["nll_vs_prior"] for r in group]))
            se = math.sqrt(sum(r["nll_vs_prior_se"] ** 2 for r in group)) / len(group)
            out[key]["nll_vs_prior"] = (diff, diff - 1.96 * se, diff + 1.96 * se)
            out[key]["prior_nll"] = float(np.mean([r["prior_nll"] for r in group]))
    return out


def _at_chance(cell):
    """Whether a cell's test log-loss is not below the prior's (the 95 %
    interval of the mean difference to it does not lie below 0); False for
    rows without the prior (a csv of an earlier version)."""
    vs_prior = cell.get("nll_vs_prior") if cell else None
    return vs_prior is not None and vs_prior[2] >= 0


@_fill_doc
def chance_cells(rows):
    """``(dataset, model)`` cells whose raw model is at chance (the ⚠ rule,
    :data:`CHANCE_RULE`): no better than predicting the class frequencies.

    %(boosting_rows_parameter)s

    Returns
    -------
    cells : list of tuple
        ``(dataset, model)``, in the rows' order.

    Examples
    --------
    >>> from sklcalib.benchmark.boosting_tables import chance_cells
    >>> row = {"dataset": "d", "model": "hgb", "calibrator": "none", "seed": 0,
    ...        "n_train": 10, "nll_vs_prior": 0.01, "nll_vs_prior_se": 0.01,
    ...        "prior_nll": 0.2}
    >>> from sklcalib.benchmark.runner import METRICS
    >>> row.update(dict.fromkeys(METRICS, 0.0))
    >>> chance_cells([row])
    [('d', 'hgb')]
    """
    stats = _stats(rows)
    return [
        (ds, model)
        for ds, model, c in stats
        if c == RAW and _at_chance(stats[ds, model, c])
    ]


def _order(rows, key):
    return list(dict.fromkeys(r.get(key, "hgb") for r in rows))


def _cell(mean, std, scale, digits):
    text = f"{mean * scale:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std * scale:.{digits}f}"
    return text


def _metric_table(stats, datasets, model, calibrators, metric, *, with_std=True):
    scale, digits = (100, 2) if metric == "ece" else (1, 4)
    header = ["Dataset", *(("raw" if c == RAW else c) for c in calibrators)]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        if not any((ds, model, c) in stats for c in calibrators):
            continue
        # no bold: in results.md bold marks only a cell that a paired test
        # finds lower than every other of its line (the Table-1 layout)
        cells = [ds]
        for c in calibrators:
            if (ds, model, c) not in stats:
                cells.append("")
                continue
            mean, std = stats[ds, model, c][metric]
            text = _cell(mean, std if with_std else math.nan, scale, digits)
            cells.append(text + (" ⚠" if _at_chance(stats[ds, model, c]) else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _verdict(low, high):
    """``"better"``, ``"worse"`` or ``"tie"``: whether the interval of the
    log-loss change excludes 0."""
    if high < 0:
        return "better"
    if low > 0:
        return "worse"
    return "tie"


def _change_cell(change, low, high):
    mark = {"better": " ▼", "worse": " ▲", "tie": ""}[_verdict(low, high)]
    return f"{100 * change:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]{mark}"


def _change_table(stats, datasets, model, calibrators):
    shown = [c for c in calibrators if c != RAW]
    header = ["Dataset", "raw NLL", "prior NLL", *shown]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        if (ds, model, RAW) not in stats:
            continue
        raw = stats[ds, model, RAW]
        prior = raw.get("prior_nll")
        cells = [
            ds,
            f"{raw['nll'][0]:.4f}" + (" ⚠" if _at_chance(raw) else ""),
            "" if prior is None else f"{prior:.4f}",
        ]
        for c in shown:
            s = stats.get((ds, model, c))
            change = s.get("nll_change") if s else None
            text = _change_cell(*change) if change else ""
            cells.append(text + (" ⚠" if change and _at_chance(s) else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


@_fill_doc
def calibrator_scores(rows):
    """Win rates of each calibrator across the (dataset, model) cells.

    For each calibrator, over the cells where it ran: ``cells``; ``better``
    and ``worse``, the cells whose 95 % interval of the test log-loss change
    against the raw model lies below or above 0; ``wins``, the share of cells
    where its mean log-loss is below the raw model's; ``ratio``, the
    geometric mean over the cells of its test log-loss divided by the raw
    model's (below 1 is better; a geometric mean, so that a set whose raw
    log-loss is tiny does not dominate); ``mean_rank``, its mean rank by test
    log-loss among every calibrator and the raw model of the cell (1 is
    best); and ``gap_to_best``, the geometric mean of its log-loss over the
    lowest of each cell (raw included), minus 1.

    Cells whose raw model is at chance (:func:`chance_cells`) are left out:
    there a calibrator can at best bring the model back to the prior, which
    is no win.

    %(boosting_rows_parameter)s

    Returns
    -------
    scores : dict
        Calibrator name (``"none"`` for the raw model) -> dict of the above.

    Examples
    --------
    >>> from sklcalib.benchmark.boosting_tables import calibrator_scores
    >>> from sklcalib.benchmark.tabular import run_boosting
    >>> rows = run_boosting("breast_cancer", 0, calibrators=["temperature"])
    >>> sorted(calibrator_scores(rows)["temperature"])
    ['better', 'cells', 'gap_to_best', 'mean_rank', 'ratio', 'wins', 'worse']
    """
    stats = _stats(rows)
    at_chance = set(chance_cells(rows))
    cells = {}
    for (ds, model, c), s in stats.items():
        if (ds, model) not in at_chance:
            cells.setdefault((ds, model), {})[c] = s
    scores = {}
    for members in cells.values():
        nll = {c: s["nll"][0] for c, s in members.items()}
        best = min(nll.values())
        order = sorted(nll, key=nll.get)
        ranks = {c: order.index(c) + 1 for c in nll}
        for c, s in members.items():
            acc = scores.setdefault(
                c,
                {
                    "cells": 0,
                    "better": 0,
                    "worse": 0,
                    "wins": 0.0,
                    "ratios": [],
                    "ranks": [],
                    "gaps": [],
                },
            )
            acc["cells"] += 1
            change, low, high = s.get("nll_change", (0.0, 0.0, 0.0))
            verdict = _verdict(low, high) if c != RAW else "tie"
            acc["better"] += verdict == "better"
            acc["worse"] += verdict == "worse"
            acc["wins"] += change < 0
            acc["ratios"].append(math.log(nll[c] / nll[RAW]))
            acc["ranks"].append(ranks[c])
            acc["gaps"].append(math.log(nll[c] / best))
    return {
        c: {
            "cells": a["cells"],
            "better": a["better"],
            "worse": a["worse"],
            "wins": a["wins"] / a["cells"],
            "ratio": math.exp(float(np.mean(a["ratios"]))),
            "mean_rank": float(np.mean(a["ranks"])),
            "gap_to_best": math.exp(float(np.mean(a["gaps"]))) - 1.0,
        }
        for c, a in scores.items()
    }


def auto_check(rows):
    """How ``auto`` fares against no calibration and the hindsight best.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`run_boosting` that include the ``"auto"`` calibrator.

    Returns
    -------
    check : dict or None
        None when no row is ``"auto"``; else ``cells``, ``worse_cells`` (the
        (dataset, model) cells where auto's 95 % interval of the log-loss
        change lies above 0: significantly worse than no calibration), ``best``
        (the single calibrator, ``"auto"`` and raw excluded, with the lowest
        geometric-mean log-loss over the cells where auto ran, chosen with
        hindsight) and ``excess`` (auto's geometric-mean log-loss over that
        calibrator's on the same cells, minus 1).

    Examples
    --------
    >>> from sklcalib.benchmark.boosting_tables import auto_check
    >>> auto_check([]) is None
    True
    """
    stats = _stats(rows)
    auto_cells = [(ds, m) for ds, m, c in stats if c == "auto"]
    if not auto_cells:
        return None
    worse = [
        cell
        for cell in auto_cells
        if _verdict(*stats[(*cell, "auto")]["nll_change"][1:]) == "worse"
    ]
    candidates = {c for _, _, c in stats} - {"auto", RAW}
    log_ratio = {}
    for c in candidates:
        if all((*cell, c) in stats for cell in auto_cells):
            log_ratio[c] = np.mean(
                [
                    math.log(
                        stats[(*cell, "auto")]["nll"][0] / stats[(*cell, c)]["nll"][0]
                    )
                    for cell in auto_cells
                ]
            )
    if not log_ratio:
        return {
            "cells": len(auto_cells),
            "worse_cells": worse,
            "best": None,
            "excess": math.nan,
        }
    # auto over c is exp(mean log ratio): the best c has the largest ratio
    best = max(log_ratio, key=log_ratio.get)
    return {
        "cells": len(auto_cells),
        "worse_cells": worse,
        "best": best,
        "excess": math.exp(float(log_ratio[best])) - 1.0,
    }


def _auto_lines(rows):
    check = auto_check(rows)
    if check is None:
        return []
    worse = check["worse_cells"]
    text = (
        f"auto: significantly worse than no calibration in {len(worse)} of "
        f"{check['cells']} cells"
        + (": " + ", ".join(f"{ds}/{m}" for ds, m in worse) if worse else "")
    )
    if check["best"] is not None:
        text += (
            f"; its geometric-mean test log-loss is {100 * check['excess']:+.2f} % "
            f"against the best single calibrator chosen with hindsight "
            f"({check['best']})."
        )
    return [text]


def _scores_table(rows):
    scores = calibrator_scores(rows)
    header = [
        "Calibrator",
        "cells",
        "better than raw",
        "worse than raw",
        "wins",
        "NLL / raw NLL (geometric mean)",
        "mean rank",
        "excess NLL over each cell's best (%)",
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for c, s in sorted(scores.items(), key=lambda item: item[1]["mean_rank"]):
        lines.append(
            "| "
            + " | ".join(
                [
                    "raw (no calibration)" if c == RAW else c,
                    str(s["cells"]),
                    str(s["better"]),
                    str(s["worse"]),
                    f"{100 * s['wins']:.0f} %",
                    f"{s['ratio']:.3f}",
                    f"{s['mean_rank']:.2f}",
                    f"{100 * s['gap_to_best']:.2f}",
                ]
            )
            + " |"
        )
    return lines


def boosting_markdown(rows, *, settings=None):
    """The post-hoc calibration section of ``results.md``.

    First, per base model, the test log-loss of every calibrator relative to
    the raw model with its 95 % interval (▼: the interval is below 0, a
    significant improvement; ▲: above 0, significantly worse), beside the raw
    model's and the prior's test log-loss, ⚠ on the cells at chance
    (:data:`CHANCE_RULE`), and the win rates across datasets
    (:func:`calibrator_scores`, the cells at chance left out); then, per base
    model, one table per metric (test ECE in %, NLL, Brier): mean ± standard
    deviation over seeds. No bold here: in ``results.md`` bold marks only a
    cell that a paired test finds lower than every other of its line.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`~sklcalib.benchmark.tabular.run_boosting`.
    settings : str, optional
        A line describing the run.

    Returns
    -------
    text : str
    """
    stats = _stats(rows)
    datasets = _order(rows, "dataset")
    models = _order(rows, "model")
    calibrators = _order(rows, "calibrator")
    seeds = sorted({r["seed"] for r in rows})
    lines = [
        "## Post-hoc calibrators on tabular models",
        "",
        "Each base model (hgb: scikit-learn's `HistGradientBoostingClassifier`, "
        "logreg: `LogisticRegression`, net: a cross-entropy MLP; default "
        "settings) is fitted on the training split; each calibrator on the "
        "validation split (logit calibrators on the decision scores, the others "
        "on the probabilities); `auto` chooses by cross-validated log-loss on "
        "the validation split, no calibration included. Test-split metrics over "
        f"{len(seeds)} seed(s) ({', '.join(map(str, seeds))}); each seed draws "
        "its own 60/20/20 split and model seed.",
        "",
        "Test log-loss change against the raw model (%), mean over seeds, with "
        "the 95 % interval of the per-row paired differences (the test rows' "
        "sampling error, the fitted models held fixed): ▼ the interval lies "
        "below 0 (better than no calibration), ▲ above 0 (worse); no mark: not "
        "distinguishable from no calibration on this test set. " + CHANCE_RULE + ".",
        "",
    ]
    if settings:
        lines += [settings, ""]
    for model in models:
        lines += [f"### {model}: test log-loss change (%)", ""]
        lines += _change_table(stats, datasets, model, calibrators)
        lines.append("")
    at_chance = chance_cells(rows)
    lines += [
        "### Across datasets and models",
        "",
        "Per calibrator, over the (dataset, model) cells: how often its "
        "interval says better or worse than no calibration, how often its mean "
        "log-loss is lower (wins), its mean relative change, its mean rank "
        "among the calibrators and the raw model, and its mean excess log-loss "
        "over the best of each cell chosen with hindsight. "
        + (
            "Left out, their raw model at chance (⚠): "
            + ", ".join(f"{ds}/{m}" for ds, m in at_chance)
            + "."
            if at_chance
            else "No cell's raw model is at chance."
        ),
        "",
    ]
    lines += _scores_table(rows)
    lines.append("")
    auto_lines = _auto_lines(rows)
    if auto_lines:
        lines += [*auto_lines, ""]
    for model in models:
        n_train = ", ".join(
            f"{ds} {int(stats[ds, model, RAW]['n_train'][0])}"
            for ds in datasets
            if (ds, model, RAW) in stats
        )
        lines += [
            f"### {model}: ECE, NLL and Brier",
            "",
            "Mean ± std over seeds. ECE: 15 equal-width bins, top-label; NLL: "
            "mean negative log-likelihood; Brier: the multiclass score, summed "
            "over the classes (twice the binary Brier score). Training rows: "
            f"{n_train}. ⚠: at chance, as above.",
            "",
        ]
        for metric in _HEADLINE:
            lines += [f"Test {DISPLAY[metric].label()}", ""]
            lines += _metric_table(stats, datasets, model, calibrators, metric)
            lines.append("")
    lines += ["### Other metrics (means over seeds)", ""]
    header = [
        "Dataset",
        "Model",
        "Calibrator",
        "Error (%)",
        "AdaECE (%)",
        "CwECE (%)",
        "smECE (%)",
    ]
    lines += [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        for model in models:
            for c in calibrators:
                if (ds, model, c) not in stats:
                    continue
                s = stats[ds, model, c]
                cells = [ds, model, "raw" if c == RAW else c]
                cells += [
                    f"{100 * s[m][0]:.2f}"
                    for m in ("error", "adaptive_ece", "classwise_ece", "smooth_ece")
                ]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: at most this many (dataset, model) cells get a line of their own in the
#: terminal summary; more get the table across cells
_SUMMARY_CELLS = 6


@_fill_doc
def boosting_summary(rows):
    """A terminal-sized summary of the post-hoc calibration runs.

    Up to six (dataset, model) cells: one line each, the raw model's and the
    prior's test log-loss and the calibrator with the lowest mean log-loss,
    with its change against the raw model, its interval and marks (and
    ``auto``'s). More cells: the calibrators' scores across them
    (:func:`calibrator_scores`). Cells at chance carry ⚠.

    %(boosting_rows_parameter)s

    Returns
    -------
    text : str
        Markdown lines (a table), for the terminal after ``plain_text``.
    """
    stats = _stats(rows)
    cells = list(dict.fromkeys((ds, m) for ds, m, _ in stats))
    if len(cells) > _SUMMARY_CELLS:
        lines = [
            "Post-hoc calibrators: test log-loss against no calibration, "
            f"across {len(cells)} (dataset, model) cells (those at chance left "
            "out; tables in results.md):"
        ]
        return "\n".join([*lines, *_scores_table(rows), *_auto_lines(rows)]) + "\n"
    lines = [
        "Post-hoc calibrators: test log-loss change against no calibration, 95 %",
        "interval (▼ better, ▲ worse; ⚠ not below the prior's log-loss; tables "
        "in results.md):",
        "",
        "| Dataset | model | raw NLL | prior NLL | lowest | auto |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for ds, model in cells:
        raw = stats.get((ds, model, RAW))
        if raw is None:
            continue
        others = {
            c: st
            for (d, m, c), st in stats.items()
            if (d, m) == (ds, model) and c not in (RAW, "auto") and "nll_change" in st
        }
        best = min(others, key=lambda c: others[c]["nll"][0]) if others else None

        def change(st):
            text = _change_cell(*st["nll_change"])
            return text + (" ⚠" if _at_chance(st) else "")

        auto = stats.get((ds, model, "auto"))
        prior = raw.get("prior_nll")
        lines.append(
            "| "
            + " | ".join(
                [
                    ds,
                    model,
                    f"{raw['nll'][0]:.4f}" + (" ⚠" if _at_chance(raw) else ""),
                    "" if prior is None else f"{prior:.4f}",
                    "" if best is None else f"{best} {change(others[best])}",
                    "" if auto is None or "nll_change" not in auto else change(auto),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"
