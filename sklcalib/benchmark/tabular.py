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
import importlib
import importlib.util
import math
import time

import numpy as np

from sklcalib.benchmark.runner import METRICS, derive_seed, subsample_train

__all__ = [
    "CALIBRATORS",
    "available_calibrators",
    "boosting_markdown",
    "boosting_summary",
    "make_calibrator",
    "plot_boosting_reliability",
    "run_boosting",
    "write_boosting_csv",
]

#: benchmark name -> (class in :mod:`sklcalib.calibration`, keyword arguments,
#: optional package it needs). A calibrator joins the tabular benchmark with one
#: line here; :class:`~sklcalib.calibration.CalibratedClassifier` gives it the
#: booster's decision scores or probabilities, whichever it takes.
CALIBRATORS = {
    "temperature": ("TemperatureScaler", {}, None),
    "isotonic": ("IsotonicCalibrator", {}, None),
    "histogram": ("HistogramBinningCalibrator", {}, None),
    "beta": ("BetaCalibrator", {}, "netcal"),
    "dirichlet": ("DirichletCalibrator", {}, None),
    "ets": ("EnsembleTemperatureScaler", {}, None),
    "scaling_binning": ("ScalingBinningCalibrator", {}, None),
    "venn_abers": ("VennAbersCalibrator", {}, None),
}

#: the raw booster's row in the tables
RAW = "none"

_HEADLINE = ("ece", "nll", "brier")
_LABELS = {"ece": "ECE (%)", "nll": "NLL", "brier": "Brier"}


def available_calibrators():
    """Names of :data:`CALIBRATORS` that this installation can run.

    A name is left out when its class is not in :mod:`sklcalib.calibration`
    (a calibrator of a later version) or the package it needs is missing.

    Returns
    -------
    names : list of str

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import available_calibrators
    >>> available_calibrators()[:3]
    ['temperature', 'isotonic', 'histogram']
    """
    calibration = importlib.import_module("sklcalib.calibration")
    return [
        name
        for name, (cls, _, needs) in CALIBRATORS.items()
        if hasattr(calibration, cls)
        and (needs is None or importlib.util.find_spec(needs) is not None)
    ]


def make_calibrator(name):
    """A fresh calibrator for a name of :data:`CALIBRATORS`."""
    cls, kwargs, _ = CALIBRATORS[name]
    calibration = importlib.import_module("sklcalib.calibration")
    return getattr(calibration, cls)(**kwargs)


def run_boosting(
    dataset,
    seed,
    *,
    calibrators=("temperature", "isotonic", "histogram"),
    max_train=None,
    return_proba=False,
):
    """Fit HistGradientBoostingClassifier and each calibrator; test metrics.

    The booster (scikit-learn's defaults, ``random_state`` from
    :func:`~sklcalib.benchmark.runner.derive_seed`) is fitted on the training
    split of ``load_dataset(dataset, random_state=seed)``; each calibrator is
    fitted on the validation split through
    ``CalibratedClassifier(FrozenEstimator(booster), calibrator)``. BLAS and
    OpenMP run on one thread, so parallel runs do not oversubscribe the cores.

    Parameters
    ----------
    dataset : str
        A name of :func:`sklcalib.datasets.list_datasets`.
    seed : int
        Seed of the split and of the booster.
    calibrators : sequence of str
        Names of :data:`CALIBRATORS`.
    max_train : int, default=None
        Fit the booster on at most this many training rows (a stratified
        subsample); validation and test splits are whole.
    return_proba : bool, default=False
        Also return the test labels and probabilities (keys ``"y_test"``,
        ``"proba"``) for reliability diagrams.

    Returns
    -------
    rows : list of dict
        One row for the raw booster (``calibrator="none"``) and one per
        calibrator: ``dataset``, ``model``, ``calibrator``, ``seed``,
        ``n_train``, each of :data:`~sklcalib.benchmark.runner.METRICS` on the
        test split, ``fit_seconds``.

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import run_boosting
    >>> rows = run_boosting("breast_cancer", 0, calibrators=["temperature"])
    >>> [r["calibrator"] for r in rows]
    ['none', 'temperature']
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.frozen import FrozenEstimator
    from threadpoolctl import threadpool_limits

    from sklcalib.calibration import CalibratedClassifier
    from sklcalib.datasets import load_dataset
    from sklcalib.metrics import calibration_report

    data = subsample_train(load_dataset(dataset, random_state=seed), max_train)
    rows = []

    def add(name, proba, seconds):
        report = calibration_report(data.y_test, proba)
        row = {
            "dataset": dataset,
            "model": "hgb",
            "calibrator": name,
            "seed": int(seed),
            "n_train": len(data.y_train),
            **{key: float(report[key]) for key in METRICS},
            "fit_seconds": seconds,
        }
        if return_proba:
            row["y_test"] = data.y_test
            row["proba"] = proba
        rows.append(row)

    with threadpool_limits(1):
        start = time.perf_counter()
        booster = HistGradientBoostingClassifier(
            random_state=derive_seed(dataset, seed)
        ).fit(data.X_train, data.y_train)
        add(RAW, booster.predict_proba(data.X_test), time.perf_counter() - start)
        frozen = FrozenEstimator(booster)
        for name in calibrators:
            start = time.perf_counter()
            model = CalibratedClassifier(frozen, make_calibrator(name))
            model.fit(data.X_val, data.y_val)
            proba = np.asarray(model.predict_proba(data.X_test), dtype=np.float64)
            add(name, proba, time.perf_counter() - start)
    return rows


_COLUMNS = ["dataset", "model", "calibrator", "seed", "n_train", *METRICS]


def write_boosting_csv(rows, path):
    """Write ``boosting.csv``: one line per dataset x seed x calibrator."""
    cols = [*_COLUMNS, "fit_seconds"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {c: repr(row[c]) if isinstance(row[c], float) else row[c] for c in cols}
            )


def _stats(rows):
    """``(dataset, calibrator) -> {metric: (mean, std)}`` over seeds."""
    groups = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["calibrator"]), []).append(row)
    out = {}
    for key, group in groups.items():
        out[key] = {}
        for metric in (*METRICS, "n_train"):
            values = np.array([r[metric] for r in group], dtype=float)
            std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
            out[key][metric] = (float(np.mean(values)), std)
        out[key]["n_seeds"] = len(group)
    return out


def _order(rows, key):
    return list(dict.fromkeys(r[key] for r in rows))


def _cell(mean, std, scale, digits, bold):
    text = f"{mean * scale:.{digits}f}"
    if not math.isnan(std):
        text += f" ± {std * scale:.{digits}f}"
    return f"**{text}**" if bold else text


def _metric_table(stats, datasets, calibrators, metric, *, with_std=True):
    scale, digits = (100, 2) if metric == "ece" else (1, 4)
    header = ["Dataset", *(("raw" if c == RAW else c) for c in calibrators)]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] * len(header)) + " |",
    ]
    for ds in datasets:
        present = [c for c in calibrators if (ds, c) in stats]
        # bold: the lowest mean, compared at the precision shown
        best = min(round(stats[ds, c][metric][0] * scale, digits) for c in present)
        cells = [ds]
        for c in calibrators:
            if (ds, c) not in stats:
                cells.append("")
                continue
            mean, std = stats[ds, c][metric]
            bold = round(mean * scale, digits) == best
            cells.append(
                _cell(mean, std if with_std else math.nan, scale, digits, bold)
            )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def boosting_markdown(rows, *, settings=None):
    """The gradient-boosting section of ``results.md``.

    One table per metric (test ECE in %, NLL, Brier): a line per dataset, a
    column for the raw booster and for each calibrator, mean ± standard
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
    calibrators = _order(rows, "calibrator")
    seeds = sorted({r["seed"] for r in rows})
    n_train = ", ".join(f"{ds} {int(stats[ds, RAW]['n_train'][0])}" for ds in datasets)
    lines = [
        "## Gradient boosting: raw and post-hoc calibrated",
        "",
        "scikit-learn's `HistGradientBoostingClassifier` (default settings) fitted "
        "on the training split; each calibrator fitted on the validation split "
        "(temperature: on the booster's decision scores, the others on its "
        "probabilities); test-split metrics, mean ± std over "
        f"{len(seeds)} seed(s) ({', '.join(map(str, seeds))}); each seed draws "
        "its own 60/20/20 split and booster seed. ECE: 15 equal-width bins, "
        "top-label; NLL: mean negative log-likelihood; Brier: the multiclass "
        "score, summed over the classes (twice the binary Brier score). "
        f"Training rows: {n_train}. Lowest mean per line in bold.",
        "",
    ]
    if settings:
        lines += [settings, ""]
    for metric in _HEADLINE:
        lines += [f"### Test {_LABELS[metric]}", ""]
        lines += _metric_table(stats, datasets, calibrators, metric)
        lines.append("")
    lines += ["### Other metrics (means over seeds)", ""]
    header = [
        "Dataset",
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
        for c in calibrators:
            if (ds, c) not in stats:
                continue
            s = stats[ds, c]
            cells = [ds, "raw" if c == RAW else c]
            cells += [
                f"{100 * s[m][0]:.2f}"
                for m in ("error", "adaptive_ece", "classwise_ece", "smooth_ece")
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def boosting_summary(rows):
    """A terminal-sized summary: the test ECE table (means over seeds)."""
    stats = _stats(rows)
    lines = [
        "Gradient boosting, test ECE (%) raw and after each calibrator "
        "(means over seeds; full tables in results.md):"
    ]
    lines += _metric_table(
        stats,
        _order(rows, "dataset"),
        _order(rows, "calibrator"),
        "ece",
        with_std=False,
    )
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

    from sklcalib.plotting import ReliabilityDisplay

    first = {}
    for row in rows:
        if row["dataset"] == dataset and "proba" in row:
            first.setdefault(row["calibrator"], row)
    names = [c for c in (calibrators or first) if c in first]
    n_cols = min(4, len(names))
    n_rows = math.ceil(len(names) / n_cols)
    fig = Figure(figsize=(3.4 * n_cols, 3.3 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    for ax, name in zip(axes, names, strict=False):
        row = first[name]
        binary = row["proba"].shape[1] == 2
        ReliabilityDisplay.from_predictions(
            row["y_test"],
            row["proba"],
            kind="classwise" if binary else "top-label",
            ax=ax,
            name="HGB" if name == RAW else f"HGB + {name}",
        )
        ax.set_title("raw" if name == RAW else name)
        ax.legend(loc="upper left", fontsize=7)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    what = "P(class 1)" if first[names[0]]["proba"].shape[1] == 2 else "top-label"
    fig.suptitle(f"{dataset}: gradient boosting, {what} reliability (test)")
    fig.savefig(path, dpi=dpi)
