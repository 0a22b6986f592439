"""The post-hoc calibration runs as tables: ``boosting.csv`` and the section of
``results.md`` on calibrators of tabular models.

The rows are those of :func:`sklcalib.benchmark.tabular.run_boosting`: one per
(dataset, base model, calibrator, seed), the raw model's row named
:data:`~sklcalib.benchmark.tabular.RAW`.
"""

import csv
import math

import numpy as np

from sklcalib._utils._metric_display import DISPLAY
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.tabular import RAW

__all__ = [
    "auto_check",
    "boosting_markdown",
    "boosting_summary",
    "calibrator_scores",
    "write_boosting_csv",
]

_HEADLINE = ("ece", "nll", "brier")


_COLUMNS = ["dataset", "model", "calibrator", "seed", "n_train", *METRICS]
_CHANGE = ["nll_change", "nll_change_low", "nll_change_high", "nll_change_se"]


def write_boosting_csv(rows, path):
    """Write ``boosting.csv``: one line per dataset x model x seed x calibrator."""
    cols = [*_COLUMNS, *_CHANGE, "fit_seconds"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {c: repr(row[c]) if isinstance(row[c], float) else row[c] for c in cols}
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
    return out


def _order(rows, key):
    return list(dict.fromkeys(r.get(key, "hgb") for r in rows))


def _cell(mean, std, scale, digits, bold):
    text = f"{mean * scale:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std * scale:.{digits}f}"
    return f"**{text}**" if bold else text


def _metric_table(stats, datasets, model, calibrators, metric, *, with_std=True):
    scale, digits = (100, 2) if metric == "ece" else (1, 4)
    header = ["Dataset", *(("raw" if c == RAW else c) for c in calibrators)]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        present = [c for c in calibrators if (ds, model, c) in stats]
        if not present:
            continue
        # bold: the lowest mean, compared at the precision shown
        best = min(
            round(stats[ds, model, c][metric][0] * scale, digits) for c in present
        )
        cells = [ds]
        for c in calibrators:
            if (ds, model, c) not in stats:
                cells.append("")
                continue
            mean, std = stats[ds, model, c][metric]
            bold = round(mean * scale, digits) == best
            cells.append(
                _cell(mean, std if with_std else math.nan, scale, digits, bold)
            )
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
    header = ["Dataset", "raw NLL", *shown]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        if (ds, model, RAW) not in stats:
            continue
        cells = [ds, f"{stats[ds, model, RAW]['nll'][0]:.4f}"]
        for c in shown:
            s = stats.get((ds, model, c))
            change = s.get("nll_change") if s else None
            cells.append(_change_cell(*change) if change else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


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

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`run_boosting`.

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
    cells = {}
    for (ds, model, c), s in stats.items():
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
    significant improvement; ▲: above 0, significantly worse), and the win
    rates across datasets (:func:`calibrator_scores`); then, per base model,
    one table per metric (test ECE in %, NLL, Brier): mean ± standard
    deviation over seeds, the lowest mean of each line in bold.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`run_boosting`.
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
        "distinguishable from no calibration on this test set.",
        "",
    ]
    if settings:
        lines += [settings, ""]
    for model in models:
        lines += [f"### {model}: test log-loss change (%)", ""]
        lines += _change_table(stats, datasets, model, calibrators)
        lines.append("")
    lines += [
        "### Across datasets and models",
        "",
        "Per calibrator, over the (dataset, model) cells: how often its "
        "interval says better or worse than no calibration, how often its mean "
        "log-loss is lower (wins), its mean relative change, its mean rank "
        "among the calibrators and the raw model, and its mean excess log-loss "
        "over the best of each cell chosen with hindsight.",
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
            f"{n_train}. Lowest mean per line in bold.",
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


def boosting_summary(rows):
    """A terminal-sized summary: the calibrators' scores across the cells."""
    lines = [
        "Post-hoc calibrators on tabular models: test log-loss against no "
        "calibration, across (dataset, model) cells (tables in results.md):"
    ]
    lines += _scores_table(rows)
    lines += _auto_lines(rows)
    return "\n".join(lines) + "\n"
