"""Gradient boosting on the real tabular sets, raw and after post-hoc calibrators.

Tabular practitioners mostly calibrate boosted trees, not networks. For each
(dataset, seed), :func:`run_boosting` fits scikit-learn's
``HistGradientBoostingClassifier`` on the training split, fits every chosen
post-hoc calibrator on its scores on the validation split, and measures the
test split raw and after each calibrator. The ``report`` helpers of this
module turn the rows into ``boosting.csv``, the markdown tables of
``results.md`` and a reliability figure per dataset.

The seeds vary the train / validation / test split (``random_state=seed``) and
the booster's seed, so the spread over seeds shows how much the numbers move
with the draw of a test set of this size.
"""

import csv
import importlib.util
import math
import time

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.utils.metaestimators import available_if

from sklcalib import calibration, metrics, plotting
from sklcalib._utils._metric_display import DISPLAY
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.runner import derive_seed as _derive_seed
from sklcalib.benchmark.runner import subsample_train as _subsample_train
from sklcalib.datasets import load_dataset as _load_dataset

__all__ = [
    "CALIBRATORS",
    "MODELS",
    "RAW",
    "auto_check",
    "available_calibrators",
    "available_models",
    "boosting_markdown",
    "boosting_summary",
    "calibrator_scores",
    "make_calibrator",
    "make_model",
    "plot_boosting_reliability",
    "run_boosting",
    "write_boosting_csv",
]

#: the post-hoc calibrators the benchmark runs by default: names of
#: :data:`sklcalib.calibration.CALIBRATORS` (any other name of that registry
#: may be asked for) and ``"auto"``, the cross-validated choice among them,
#: "none" included. :class:`~sklcalib.calibration.CalibratedClassifier` gives
#: each the booster's decision scores or probabilities, whichever it takes.
CALIBRATORS = (
    "temperature",
    "isotonic",
    "histogram",
    "beta_netcal",
    "dirichlet",
    "ets",
    "scaling_binning",
    "venn_abers",
    # the leaders of public calibration benchmarks
    "sms",
    "svs",
    "quadratic",
    "beta",
    "spline",
    "auto",
)

#: base model name -> (constructor in this module, optional package it needs)
MODELS = {
    "hgb": ("_make_hgb", None),
    "logreg": ("_make_logreg", None),
    "net": ("_make_net", "skorch"),
    "lightgbm": ("_make_lightgbm", "lightgbm"),
}

#: the raw booster's row in the tables
RAW = "none"

_HEADLINE = ("ece", "nll", "brier")


def available_calibrators():
    """Names of :data:`CALIBRATORS` that this installation can run.

    A name is left out when the optional package its calibrator needs (netcal)
    is missing.

    Returns
    -------
    names : list of str

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import available_calibrators
    >>> available_calibrators()[:3]
    ['temperature', 'isotonic', 'histogram']
    """
    installed = set(calibration.available_calibrators())
    return [n for n in CALIBRATORS if n == "auto" or n in installed]


def available_models():
    """Names of :data:`MODELS` whose packages this installation has.

    Returns
    -------
    names : list of str

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import available_models
    >>> available_models()[:2]
    ['hgb', 'logreg']
    """
    return [
        name
        for name, (_, needs) in MODELS.items()
        if needs is None or importlib.util.find_spec(needs) is not None
    ]


def make_calibrator(name):
    """A fresh calibrator for a name of :data:`sklcalib.calibration.CALIBRATORS`,
    or ``"auto"`` (CalibratedClassifier's own cross-validated choice)."""
    if name == "auto":
        return name
    return calibration.get_calibrator(name)


def _make_hgb(data, seed, net_epochs):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=seed)


def _make_logreg(data, seed, net_epochs):
    from sklearn.linear_model import LogisticRegression

    # the features are standardised by the loaders; a cap on the iterations
    # that the one-hot encoded sets need
    return LogisticRegression(max_iter=2000)


def _make_net(data, seed, net_epochs):
    # torch and skorch (the "torch" extra) load with the net: only when asked
    from sklcalib.net import NetClassifier

    return NetClassifier(
        criterion="ce",
        max_epochs=net_epochs,
        train_split=None,
        random_state=seed,
        verbose=0,
    )


def _make_lightgbm(data, seed, net_epochs):
    import lightgbm

    return lightgbm.LGBMClassifier(random_state=seed, n_jobs=1, verbose=-1)


def make_model(name, data, seed, *, net_epochs=100):
    """A fresh, unfitted base model for a name of :data:`MODELS`."""
    return globals()[MODELS[name][0]](data, seed, net_epochs)


def _row_log_loss(y, proba):
    """Per-row negative log-likelihood, clipped as the library's NLL is."""
    proba = np.asarray(proba, dtype=np.float64)
    p_true = proba[np.arange(len(y)), y]
    return -np.log(np.clip(p_true, np.finfo(np.float64).eps, 1.0))


def _paired_change(losses, raw_losses):
    """Relative change of the mean test log-loss against raw, with its 95 %
    normal interval from the per-row paired differences (the test rows' sampling
    error; the fitted model and calibrator are held fixed)."""
    diff = losses - raw_losses
    base = float(np.mean(raw_losses))
    se = float(np.std(diff, ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
    mean = float(np.mean(diff))
    return mean / base, (mean - 1.96 * se) / base, (mean + 1.96 * se) / base, se / base


def run_boosting(
    dataset,
    seed,
    *,
    calibrators=("temperature", "isotonic", "histogram"),
    models=("hgb",),
    max_train=None,
    net_epochs=100,
    return_proba=False,
):
    """Fit each base model and each calibrator on one split; test metrics.

    Each base model (``"hgb"``: scikit-learn's ``HistGradientBoostingClassifier``
    with its defaults; ``"logreg"``: ``LogisticRegression``; ``"net"``: a
    cross-entropy :class:`~sklcalib.net.NetClassifier`; ``"lightgbm"`` when
    installed; seeds from :func:`~sklcalib.benchmark.runner.derive_seed`) is
    fitted on the training split of ``load_dataset(dataset, random_state=seed)``;
    each calibrator is fitted on the validation split through
    ``CalibratedClassifier(FrozenEstimator(model), calibrator)``; a binary-only
    calibrator (its ``multi_class`` tag off) is left out on a multiclass set,
    so that its cells stay empty. BLAS and
    OpenMP run on one thread, so parallel runs do not oversubscribe the cores.

    Parameters
    ----------
    dataset : str
        A name of :func:`sklcalib.datasets.list_datasets`.
    seed : int
        Seed of the split and of the models.
    calibrators : sequence of str
        Names of :data:`sklcalib.calibration.CALIBRATORS` or ``"auto"``.
    models : sequence of str, default=("hgb",)
        Names of :data:`MODELS`.
    max_train : int, default=None
        Fit the models on at most this many training rows (a stratified
        subsample); validation and test splits are whole.
    net_epochs : int, default=100
        Training epochs of the ``"net"`` model.
    return_proba : bool, default=False
        Also return the test labels and probabilities (keys ``"y_test"``,
        ``"proba"``) for reliability diagrams.

    Returns
    -------
    rows : list of dict
        Per model, one row for the raw model (``calibrator="none"``) and one
        per calibrator: ``dataset``, ``model``, ``calibrator``, ``seed``,
        ``n_train``, each of :data:`~sklcalib.benchmark.runner.METRICS` on the
        test split, ``fit_seconds``, and the test log-loss relative to the raw
        model's (``nll_change``, a fraction; negative is better) with the 95 %
        interval of the per-row paired differences (``nll_change_low``,
        ``nll_change_high``, ``nll_change_se``).

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import run_boosting
    >>> rows = run_boosting("breast_cancer", 0, calibrators=["temperature"])
    >>> [r["calibrator"] for r in rows]
    ['none', 'temperature']
    >>> rows[0]["nll_change"]
    0.0
    """
    from threadpoolctl import threadpool_limits

    data = _subsample_train(_load_dataset(dataset, random_state=seed), max_train)
    rows = []

    def add(model_name, name, proba, seconds, raw_losses):
        report = metrics.calibration_report(data.y_test, proba, confidence_level=None)
        losses = _row_log_loss(data.y_test, proba)
        change, low, high, se = _paired_change(losses, raw_losses)
        row = {
            "dataset": dataset,
            "model": model_name,
            "calibrator": name,
            "seed": int(seed),
            "n_train": len(data.y_train),
            **{key: float(report[key]) for key in METRICS},
            "nll_change": change,
            "nll_change_low": low,
            "nll_change_high": high,
            "nll_change_se": se,
            "fit_seconds": seconds,
        }
        if return_proba:
            row["y_test"] = data.y_test
            row["proba"] = proba
        rows.append(row)
        return losses

    with threadpool_limits(1):
        for model_name in models:
            start = time.perf_counter()
            model = make_model(
                model_name,
                data,
                _derive_seed(f"{dataset}/{model_name}", seed)
                if model_name != "hgb"
                else _derive_seed(dataset, seed),
                net_epochs=net_epochs,
            ).fit(data.X_train, data.y_train)
            # kept in the model's dtype (float32 for the net): the metrics hold
            # each dtype to its own round-off
            raw = np.asarray(model.predict_proba(data.X_test))
            raw_losses = _row_log_loss(data.y_test, raw)
            add(model_name, RAW, raw, time.perf_counter() - start, raw_losses)
            frozen = _FrozenWithScores(model, {id(data.X_test): raw})
            for name in calibrators:
                if data.n_classes > 2 and not _handles_multiclass(name):
                    continue  # a binary method (quadratic, beta): no row, no cell
                calibrator = make_calibrator(name)
                start = time.perf_counter()
                # no harm check: it refits the calibrator cv more times (the
                # timing column would count them) and the table already says
                # whether a calibrator helped on the test split
                calibrated = calibration.CalibratedClassifier(
                    frozen, calibrator, check_calibration=False
                )
                calibrated.fit(data.X_val, data.y_val)
                proba = np.asarray(calibrated.predict_proba(data.X_test))
                add(model_name, name, proba, time.perf_counter() - start, raw_losses)
    return rows


class _FrozenWithScores(FrozenEstimator):
    """A ``FrozenEstimator`` that asks its model for the scores of an array once.

    Every calibrator of the table fits on the same validation array and
    predicts the same test array: computed once, a boosted model's scores are
    not recomputed for each of a dozen calibrators (on diamonds one call costs
    more than most calibrators' fits). Keyed by the array object (each entry
    keeps it alive, so its id is not reused); every call gets its own copy.
    ``known`` holds scores already computed, ``{id(X): predict_proba(X)}``.
    """

    def __init__(self, estimator, known=None):
        super().__init__(estimator)
        self.known = known

    def _scores(self, method, X):
        memo = self.__dict__.setdefault("_memo", {})
        key = (method, id(X))
        if key not in memo:
            if method == "predict_proba" and (self.known or {}).get(id(X)) is not None:
                memo[key] = (X, self.known[id(X)])
            else:
                memo[key] = (X, getattr(self.estimator, method)(X))
        held, scores = memo[key]
        if held is not X:  # an id reused by another object: not ours
            scores = getattr(self.estimator, method)(X)
        return np.array(scores, copy=True)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        """The model's ``predict_proba(X)``, computed once per array."""
        return self._scores("predict_proba", X)

    @available_if(lambda self: hasattr(self.estimator, "decision_function"))
    def decision_function(self, X):
        """The model's ``decision_function(X)``, computed once per array."""
        return self._scores("decision_function", X)


def _handles_multiclass(name):
    """Whether a calibrator name (or ``"auto"``) fits more than two classes."""
    return name == "auto" or calibration.calibrator_spec(name).applies_to(3)


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
    >>> from sklcalib.benchmark.tabular import calibrator_scores, run_boosting
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
    >>> from sklcalib.benchmark.tabular import auto_check
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


def plot_boosting_reliability(dataset, rows, path, *, calibrators=None, dpi=90):
    """Save a reliability figure of the booster on one dataset, a panel per model.

    Binary sets show the positive class's probability against its frequency
    (the classwise diagram of class 1: on rare positives the top-label
    diagram only shows the majority class); multiclass sets the top-label
    confidence against accuracy.

    Parameters
    ----------
    dataset : str
        Dataset name.
    rows : list of dict
        Rows of :func:`run_boosting` with ``return_proba=True`` (the first row
        per calibrator is drawn).
    path : str or path-like
        PNG file to write.
    calibrators : list of str, optional
        Panels to draw (default: every calibrator of the rows, raw first).
    dpi : int, default=90
        Resolution of the PNG.
    """
    from matplotlib.figure import Figure

    first = {}
    for row in rows:
        # the gradient-boosting model's panels (the models tabular users
        # calibrate most)
        if row["dataset"] == dataset and "proba" in row and row["model"] == "hgb":
            first.setdefault(row["calibrator"], row)
    names = [c for c in (calibrators or first) if c in first]
    n_cols = min(4, len(names))
    n_rows = math.ceil(len(names) / n_cols)
    fig = Figure(figsize=(3.4 * n_cols, 3.3 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    displays = []
    for ax, name in zip(axes, names, strict=False):
        row = first[name]
        binary = row["proba"].shape[1] == 2
        display = plotting.ReliabilityDisplay.from_predictions(
            row["y_test"],
            row["proba"],
            kind="classwise" if binary else "top-label",
            ax=ax,
            name="HGB" if name == RAW else f"HGB + {name}",
        )
        displays.append(display)
        ax.set_title("raw" if name == RAW else name)
        ax.legend(loc="upper left", fontsize=7)
    plotting.share_histogram_axis(displays)  # panels side by side: one histogram scale
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    what = "P(class 1)" if first[names[0]]["proba"].shape[1] == 2 else "top-label"
    fig.suptitle(f"{dataset}: gradient boosting, {what} reliability (test)")
    fig.savefig(path, dpi=dpi)
