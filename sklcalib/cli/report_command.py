"""``sklcalib report PATH``: the calibration verdict on predictions in a file.

Predictions of any model (gradient boosting, a network, an LLM classifier) are
read from a file, and :func:`sklcalib.metrics.calibration_report` is printed as
a compact table (``--json``: as JSON). ``--plot FILE.png`` writes the
reliability diagram; ``--calibrate NAME --fit-on FILE`` fits a post-hoc
calibrator on the predictions in one file and reports on another before and
after it (without ``--fit-on``: on a seeded, stratified split of the one file).

The files are read by :func:`sklcalib.io.read_predictions` (the layouts are
described there); a bad file, a missing optional dependency or a file that
cannot be written gives a one-line error on stderr and exit status 2, never a
traceback.
"""

import dataclasses
import json
import math
import sys
import textwrap
import warnings

import numpy as np

import sklcalib.calibration as calibration
from sklcalib._utils._memory import (
    PEAK_FACTOR,
    PEAK_FACTOR_SELECTION,
    PEAK_FIXED,
    data_limit,
    human_size,
    memory_budget,
    parse_size,
)
from sklcalib._utils._metric_display import REPORT_ROWS
from sklcalib._utils._optional import is_installed
from sklcalib.cli import _arguments as arguments
from sklcalib.io import (
    InputFileError,
    Predictions,
    default_max_bytes,
    read_predictions,
)
from sklcalib.metrics import bin_statistics, calibration_report
from sklcalib.plotting import ReliabilityDisplay, share_histogram_axis

__all__ = ["add_report_parser", "available_calibrators", "run_report"]


#: rows of the table: report key, label, shown in percent (the rows of the
#: report's own text form)
TABLE_ROWS = REPORT_ROWS


# ----------------------------------------------------------------------------
# computing
# ----------------------------------------------------------------------------
#: ``--confidence-level`` values that turn the intervals off
NO_INTERVALS = "none"


def _report(pred, args):
    kwargs = {
        "n_bins": args.n_bins,
        "labels": np.arange(len(pred.classes)),
        "random_state": 0,  # the same file gives the same intervals
    }
    if args.confidence_level == NO_INTERVALS:
        kwargs["confidence_level"] = None
    elif args.confidence_level is not None:
        kwargs["confidence_level"] = args.confidence_level
    segments = _segment_table(pred)
    if segments is not None:
        kwargs["segments"] = segments
    return calibration_report(pred.y, pred.proba, **kwargs)


def available_calibrators():
    """The ``--calibrate`` names this installation can fit: those of
    :func:`sklcalib.calibration.available_calibrators`, and ``"auto"``."""

    return [*calibration.available_calibrators(), "auto"]


def _calibrate(name, fit_pred, pred):
    """Fit ``name`` on ``fit_pred``; return (calibrator, calibrated proba of pred)."""

    if fit_pred.classes != pred.classes:
        raise InputFileError(
            f"{fit_pred.path} has the classes {', '.join(fit_pred.classes)}, "
            f"{pred.path} {', '.join(pred.classes)}: they must be the same columns"
        )
    spec = None if name == "auto" else calibration.CALIBRATORS[name]
    if spec is not None and not spec.applies_to(len(pred.classes)):
        raise InputFileError(
            f"{pred.path}: --calibrate {name} is for binary problems, this file "
            f"has {len(pred.classes)} classes; use temperature, vector or matrix"
        )
    missing = sorted(set(range(len(pred.classes))) - set(fit_pred.y.tolist()))
    if missing:
        raise InputFileError(
            f"{fit_pred.path}: no sample of class(es) "
            f"{', '.join(pred.classes[k] for k in missing)}; the calibrator "
            "needs every class in the file it is fitted on"
        )

    def scores(p):
        return p.logits if spec is None or spec.input == "logits" else p.proba

    if name == "auto":
        selection = calibration.select_calibrator(
            scores(fit_pred), fit_pred.y, response="logits"
        )
        proba = selection.predict_proba(scores(pred))
        return selection, np.asarray(proba, dtype=float), []
    calibrator = spec.estimator()
    # the calibrator's own warnings (too few rows for its flexibility, worse
    # than the raw scores on its cross-validated calibration data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", calibration.CalibrationWarning)
        calibration.check_calibrator(
            calibrator, scores(fit_pred), fit_pred.y, response=spec.input
        )
    notes = [
        str(w.message)
        for w in caught
        if issubclass(w.category, calibration.CalibrationWarning)
    ]
    calibrator.fit(scores(fit_pred), fit_pred.y)
    proba = np.asarray(calibrator.predict_proba(scores(pred)), dtype=float)
    return calibrator, proba, notes


def _fitted_parameters(calibrator):
    """Scalar fitted parameters worth printing (e.g. the temperature)."""
    if _is_selection(calibrator):  # --calibrate auto: the chosen one's
        calibrator = calibrator.best_estimator_
        if calibrator is None:
            return {}
    out = {}
    for key, value in vars(calibrator).items():
        if key.endswith("_") and not key.startswith("_") and key != "n_features_in_":
            if isinstance(value, int | float | np.floating) and not isinstance(
                value, bool
            ):
                out[key] = float(value)
    return out


def _is_selection(calibrator):
    """Whether the fitted object is ``--calibrate auto``'s selection."""
    return isinstance(calibrator, calibration.CalibratorSearchCV)


def selection_rows(cv_results):
    """The candidates of ``--calibrate auto`` against the best, one dict each.

    For each candidate evaluated: its mean fold log-loss, the mean and the
    standard error (``sd / sqrt(folds)``) of its paired fold differences to
    the candidate of lowest mean log-loss, whether that difference is within
    one standard error, and its parameters per class: the selection takes the
    candidate with the fewest parameters among those within one standard error
    of the best (and keeps passthrough unless that candidate also beats it by
    more than one standard error of the per-row differences, which ``reason_``
    states), so the table shows the numbers the choice was made from.
    """
    r = cv_results
    folds = sorted(
        (k for k in r if k.startswith("split") and k.endswith("_log_loss")),
        key=lambda k: int(k[len("split") : -len("_log_loss")]),
    )
    losses = np.array([[r[k][i] for k in folds] for i in range(len(r["candidate"]))])
    means = np.array(r["mean_log_loss"], dtype=float)
    evaluated = np.isfinite(means)
    # (none when the set was too small to cross-validate any candidate)
    best = int(np.nanargmin(means)) if evaluated.any() else -1
    rows = []
    for i, name in enumerate(r["candidate"]):
        row = {
            "candidate": name,
            "n_parameters": r["n_parameters"][i],
            "status": r["status"][i],
            "mean_log_loss": float(means[i]),
            "vs_best": math.nan,
            "vs_best_se": math.nan,
            "within_one_se": bool(r["within_one_se"][i]),
            "best": i == best,
        }
        if evaluated[i]:
            d = losses[i] - losses[best]
            row["vs_best"] = float(d.mean())
            row["vs_best_se"] = float(d.std(ddof=1) / math.sqrt(len(d)))
        rows.append(row)
    order = sorted(
        range(len(rows)),
        key=lambda i: (not evaluated[i], rows[i]["mean_log_loss"], i),
    )
    return [rows[i] for i in order]


def format_selection(cv_results):
    """``selection_rows`` as a plain-text table."""
    rows = selection_rows(cv_results)
    lines = [
        f"{'candidate':<16}{'params':>7}{'log-loss':>10}{'vs best':>19}"
        f"{'within 1 SE':>13}  status"
    ]
    for row in rows:
        name = row["candidate"][:15]
        status = row["status"].split(":")[0]  # the reason is in the JSON
        if math.isnan(row["mean_log_loss"]):
            lines.append(f"{name:<16}{'':49}  {status}")
            continue
        params = row["n_parameters"]
        params = f"{params:g}" if isinstance(params, int | float) else str(params)
        diff = (
            "best"
            if row["best"]
            else f"{row['vs_best']:+.4f} ± {row['vs_best_se']:.4f}"
        )
        within = "yes" if row["within_one_se"] else "no"
        lines.append(
            f"{name:<16}{params:>7}{row['mean_log_loss']:>10.4f}{diff:>19}"
            f"{within:>13}  {status}"
        )
    return "\n".join(lines)


def mce_bin_count(y, proba, n_bins):
    """Rows in the bin where the maximum calibration error is attained.

    A near-empty bin can give a large MCE from a handful of rows; its count
    says how much to trust it. Uniform top-label bins, as the report's MCE.
    """

    top = np.argmax(proba, axis=1)
    conf = proba[np.arange(len(top)), top]
    stats = bin_statistics(conf, top == y, n_bins=n_bins, strategy="uniform")
    filled = stats.counts > 0
    gaps = np.zeros_like(stats.counts)
    gaps[filled] = (
        np.abs(stats.sum_confidence[filled] - stats.sum_correct[filled])
        / stats.counts[filled]
    )
    return int(stats.counts[int(np.argmax(gaps))])


# ----------------------------------------------------------------------------
# printing
# ----------------------------------------------------------------------------
#: the terminal output stays within this many columns
WIDTH = 100


def _number(value, percent):
    if percent:
        return f"{100.0 * float(value):.2f}"
    value = float(value)
    # three significant digits: an SKCE of 2.3e-05 is not "0.0000"
    return f"{value:.4f}" if abs(value) >= 0.01 or value == 0 else f"{value:.3g}"


def _cell(report, key, percent):
    value = report.get(key)
    if value is None:
        return "-"
    text = _number(value, percent)
    interval = report.get(f"{key}_ci")  # with intervals
    if interval is not None:
        low, high = interval
        text += f" [{_number(low, percent)}, {_number(high, percent)}]"
    if key == "mce" and "mce_bin_count" in report:
        text += f" (bin of {report['mce_bin_count']})"
    return text


def format_table(reports):
    """The reports as a plain-text table: a line per metric, a column per report.

    Parameters
    ----------
    reports : dict
        ``column title -> calibration_report dict``. Keys a report lacks are
        skipped; ``"<key>_ci"`` intervals, where present, follow the value.

    Returns
    -------
    text : str
    """
    titles = list(reports)
    rows = [
        (label, [_cell(reports[t], key, pct) for t in titles])
        for key, label, pct in TABLE_ROWS
        if any(key in reports[t] for t in titles)
    ]
    first = max(len("metric"), *(len(label) for label, _ in rows))
    widths = [
        max(len(t), *(len(cells[i]) for _, cells in rows)) for i, t in enumerate(titles)
    ]
    lines = [
        "metric".ljust(first)
        + "".join(f"  {t:>{w}}" for t, w in zip(titles, widths, strict=True))
    ]
    for label, cells in rows:
        lines.append(
            label.ljust(first)
            + "".join(f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True))
        )
    return "\n".join(lines)


def _fill(text, indent=""):
    """One logical line wrapped to the terminal width."""
    return textwrap.fill(
        text, WIDTH, subsequent_indent=indent or "  ", break_on_hyphens=False
    )


def _segment_lines(reports):
    """The segment audit of each report: its verdict and worst segments."""
    lines = []
    for title, report in reports.items():
        if "segment_verdict" not in report:
            continue
        label = "segments" if len(reports) == 1 else f"segments ({title})"
        lines.append(_fill(f"{label}: {report['segment_verdict']}"))
        for row in report["worst_segments"]:
            gap, low, high = (100 * row[k] for k in ("gap", "gap_low", "gap_high"))
            lines.append(
                _fill(
                    f"  {row['segment']}: n = {row['n_rows']}, gap {gap:+.1f} % "
                    f"[{low:+.1f}, {high:+.1f}], adjusted p = {row['pvalue']:.2g}",
                    "      ",
                )
            )
    return lines


def _verdict_lines(reports):
    lines = []
    for title, report in reports.items():
        # the report's verdict is its text form, not a key
        verdict = report.get("verdict") or getattr(report, "verdict", None)
        if verdict:
            label = "verdict" if len(reports) == 1 else f"verdict ({title})"
            lines.append(_fill(f"{label}: {' '.join(str(verdict).split())}"))
    return lines


def _json_ready(value):
    if isinstance(value, dict):
        out = {str(k): _json_ready(v) for k, v in value.items()}
        verdict = getattr(value, "verdict", None)  # a CalibrationReport's words
        if isinstance(verdict, str):
            out["verdict"] = verdict
        return out
    if isinstance(value, list | tuple | np.ndarray):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


# ----------------------------------------------------------------------------
# the figure
# ----------------------------------------------------------------------------
def plot_target(path):
    """The file ``--plot PATH`` writes and its format, or InputFileError.

    A path without a suffix gets ``.png`` (and the printed path says so); an
    unknown suffix is refused. Neither the given path nor the written one may
    be anything but a regular file or absent: a figure is never written over,
    or beside, a device, a pipe or a folder.
    """
    import os
    import stat
    from pathlib import Path

    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(path)
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if not suffix:
        target, fmt = path.with_name(path.name + ".png"), "png"
    elif suffix in formats:
        target, fmt = path, suffix
    else:
        raise InputFileError(
            f"--plot {path}: unknown image type '.{suffix}'; give a file ending "
            f"in .png, .pdf or .svg (or one of {', '.join(sorted(formats))})"
        )
    for candidate in dict.fromkeys([path, target]):
        try:
            mode = os.stat(candidate).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputFileError(f"--plot {candidate}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise InputFileError(
                f"--plot {candidate}: {what}; give the path of an image file to write"
            )
    return target, fmt


def _plot(path, fmt, pred, proba_after, title_after):
    from matplotlib.figure import Figure

    # the file is named once, in the figure's title; the panels say what
    # differs between them (before and after a calibrator)
    panels = [("before" if proba_after is not None else "predictions", pred.proba)]
    if proba_after is not None:
        panels.append((title_after, proba_after))
    fig = Figure(figsize=(4.6 * len(panels), 4.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False).ravel()
    displays = []
    for ax, (title, proba) in zip(axes, panels, strict=True):
        displays.append(
            ReliabilityDisplay.from_predictions(pred.y, proba, ax=ax, name=title)
        )
        if proba_after is not None:
            ax.set_title(title)
        ax.legend(loc="upper left", fontsize=7)
    share_histogram_axis(displays)  # before and after on one histogram scale
    fig.suptitle(f"{pred.path.name}: reliability diagram")
    try:
        fig.savefig(path, format=fmt, dpi=100)
    except (OSError, ValueError) as exc:
        raise InputFileError(
            f"--plot {path}: cannot write the figure ({exc})"
        ) from None
    return fig


# ----------------------------------------------------------------------------
# the subcommand
# ----------------------------------------------------------------------------
def _confidence_level(text):
    import argparse

    if text.strip().lower() in (NO_INTERVALS, "off", "0"):
        return NO_INTERVALS
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be in (0, 1) or 'none', got {text}"
        ) from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1) or 'none', got {text}")
    return value


def _max_bytes(text):
    import argparse

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_report_parser(subparsers, summary):
    """Add the ``report`` subcommand to the ``sklcalib`` parser, listed there
    with the one line ``summary``."""
    import argparse

    parser = subparsers.add_parser(
        "report",
        help=summary,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n\n".join(
            textwrap.fill(paragraph, 79)
            for paragraph in (
                "Print the calibration report (ECE and its variants, NLL, Brier, "
                "accuracy) of the predictions in PATH.",
                "csv/parquet: a column y_true with each row's class and one column "
                "per class (headed by the class name) with its probability, or its "
                "logit with --logits. npz: arrays y_true and y_prob (or logits), "
                "(n, K) or (n,) for a binary problem's positive class, optionally "
                "classes (the K names); integer y_true holds column indices, "
                "string y_true class names. "
                "npy: a structured array laid out like a table, or an (n, K + 1) "
                "array: the true class index, then the K scores. Other names: "
                "--y-true and --scores. Probabilities written with a few decimals "
                "are accepted and renormalised, with a note. Arrays of Python "
                "objects are refused "
                "(allow_pickle=False: unpickling can run arbitrary code). "
                "The same reader in Python: sklcalib.io.read_predictions.",
                "Example: sklcalib report test.csv --calibrate temperature "
                "--fit-on val.csv --plot reliability.png; without --fit-on the "
                "calibrator is fitted on a seeded, stratified half of PATH and the "
                "report is on the other half.",
            )
        ),
    )
    parser.add_argument("path", metavar="PATH", help="predictions to report on")
    parser.add_argument(
        "--logits",
        action="store_true",
        help="the class columns hold logits (softmax gives the probabilities)",
    )
    parser.add_argument(
        "--y-true",
        default="y_true",
        metavar="NAME",
        help="the column (csv, parquet, structured npy) or array (npz) of the "
        "true classes (default: y_true)",
    )
    parser.add_argument(
        "--scores",
        metavar="NAMES",
        help="the class columns of a table, comma separated, in the classes' "
        "order (default: every column but --y-true); the array of the scores in "
        "an npz (default: y_prob, else logits)",
    )
    parser.add_argument(
        "--segments",
        metavar="COLS",
        help="audit the calibration in every segment built from these columns "
        "of a csv or parquet table, comma separated (region, device, age, ...; "
        "combinations of up to two columns, numeric ones cut into 5 quantile "
        "bins): the family-wise verdict and the worst segments come first; the "
        "columns are not class columns",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the report as JSON instead"
    )
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="write the reliability diagram to FILE.png (.pdf, .svg: those "
        "formats; no suffix: FILE.png)",
    )
    parser.add_argument(
        "--calibrate",
        metavar="NAME",
        help="fit this post-hoc calibrator on --fit-on (or on a split of PATH) "
        "and report before/after: " + ", ".join(available_calibrators()),
    )
    parser.add_argument(
        "--fit-on",
        metavar="FILE",
        help="held-out predictions (same layout and classes) to fit --calibrate "
        "on; without it, --calibrate is fitted on --fit-fraction of PATH's rows "
        "and the report is on the others",
    )
    parser.add_argument(
        "--fit-fraction",
        type=arguments.fraction,
        metavar="F",
        help="without --fit-on: the share of PATH's rows --calibrate is fitted "
        "on, a split stratified by class (default: 0.5)",
    )
    parser.add_argument(
        "--split-seed",
        type=arguments.seed,
        metavar="N",
        help="without --fit-on: the seed of that split (default: 0)",
    )
    parser.add_argument(
        "--n-bins",
        type=arguments.positive_int,
        default=15,
        help="bins of the binned metrics (15)",
    )
    parser.add_argument(
        "--confidence-level",
        type=_confidence_level,
        metavar="LEVEL",
        help="level of the intervals (e.g. 0.9); 'none' turns them off "
        "(default: calibration_report's own)",
    )
    parser.add_argument(
        "--no-intervals",
        dest="confidence_level",
        action="store_const",
        const=NO_INTERVALS,
        help="no intervals (the same as --confidence-level none)",
    )
    parser.add_argument(
        "--max-bytes",
        type=_max_bytes,
        metavar="SIZE",
        help="refuse a file whose scores would take more memory than SIZE in "
        "float64 (e.g. 500M, 2G), read from the file's header or zip directory "
        "before anything is decompressed (default: what this process may still "
        "allocate, physical memory, ulimit -v and -d and its cgroup's limit "
        f"included, less the report's fixed needs, divided by {PEAK_FACTOR} for "
        f"its peak per byte of data: {default_max_bytes() / 2**30:.1f}G here)",
    )
    parser.set_defaults(handler=run_report, command_parser=parser)
    return parser


def _check_options(args, parser):
    """Usage errors (exit 2 through argparse) and the extras the options need."""
    from sklcalib._utils._optional import EXTRAS

    if args.calibrate is None:
        for given, option in (
            (args.fit_on, "--fit-on"),
            (args.fit_fraction, "--fit-fraction"),
            (args.split_seed, "--split-seed"),
        ):
            if given is not None:
                parser.error(f"{option} goes with --calibrate NAME")
    elif args.fit_on is not None and (
        args.fit_fraction is not None or args.split_seed is not None
    ):
        parser.error(
            "--fit-fraction and --split-seed split PATH when there is no "
            "--fit-on; with --fit-on the calibrator is fitted on that file"
        )
    if args.calibrate is not None and args.calibrate != "auto":
        try:
            # an alias ("sigmoid") or an earlier version's name ("beta_native")
            # becomes the registry's name
            args.calibrate = calibration.calibrator_spec(args.calibrate).name
        except ValueError:
            parser.error(
                f"--calibrate: unknown calibrator {args.calibrate!r}; valid names "
                f"are {', '.join(available_calibrators())}"
            )
        module = calibration.CALIBRATORS[args.calibrate].requires
        if module is not None and not is_installed(module):
            raise InputFileError(
                f"--calibrate {args.calibrate} needs the optional dependency "
                f'{module}: pip install "sklcalib[{EXTRAS.get(module, module)}]"'
            )
    if args.plot and not is_installed("matplotlib"):
        raise InputFileError(
            "--plot needs the optional dependency matplotlib: "
            'pip install "sklcalib[plot]"'
        )


def _segment_names(args):
    """The ``--segments`` columns, or None."""
    if getattr(args, "segments", None) is None:
        return None
    names = [n.strip() for n in args.segments.split(",") if n.strip()]
    if not names:
        raise InputFileError("--segments: give one or more column names")
    return names


def _segment_table(pred):
    """The segment columns as a structured array (named fields), or None."""
    if not pred.segments:
        return None
    names = list(pred.segments)
    return np.rec.fromarrays([pred.segments[c] for c in names], names=names)


def _read(path, args):
    """Read a file with the options' layout; the reader's warnings (rows
    renormalised, ...) become notes of the report."""
    names = None
    if args.scores is not None:
        names = [n.strip() for n in args.scores.split(",") if n.strip()]
        if len(names) == 1 and str(path).lower().endswith(".npz"):
            names = names[0]  # an archive's one array of scores
    limit = _limit(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            pred = read_predictions(
                path,
                logits=args.logits,
                y_true=args.y_true,
                scores=names,
                max_bytes=limit.max_bytes,
                segments=_segment_names(args),
            )
        except InputFileError as exc:
            if args.max_bytes is None and str(exc).endswith("refused before reading"):
                # the reader saw a number: say where the default comes from
                raise InputFileError(
                    str(exc).replace(
                        "(max_bytes, --max-bytes)", f"({limit.explanation})"
                    )
                ) from None
            raise
    notes = []
    for w in caught:
        if issubclass(w.category, UserWarning):  # what the reader tells the user
            notes.append(f"{pred.path}: {' '.join(str(w.message).split())}")
        else:  # a library's deprecation: through the usual filters
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return pred, notes


def _limit(args):
    """The memory a file's scores may take: ``--max-bytes``, or what this
    process may still allocate over the report's peak per byte of data (two
    files share it with ``--fit-on``)."""
    if args.max_bytes is not None:
        return data_limit(args.max_bytes)
    files = 2 if args.fit_on is not None else 1
    return data_limit(peak_factor=PEAK_FACTOR * files)


def _check_selection_memory(args, fit_pred):
    """Refuse ``--calibrate auto`` before its fits when they would not fit in
    what this process may still allocate: its matrix-type candidates take
    memory in proportion to the rows times the square of the classes."""
    if args.calibrate != "auto" or args.max_bytes is not None:
        return
    budget = memory_budget()
    n, k = fit_pred.scores.shape
    need = PEAK_FIXED + PEAK_FACTOR_SELECTION * n * k * k * 8
    if budget is not None and need > budget.available:
        raise InputFileError(
            f"--calibrate auto on {n} rows of {k} classes would take about "
            f"{human_size(need)} of memory (its matrix-type candidates grow with "
            "the square of the classes), more than this process may still "
            f"allocate ({human_size(budget.available)}: {budget.reason}); fit on "
            "fewer rows (--fit-fraction) or name one calibrator"
        )


def _split(pred, fraction, seed):
    """(fit part, report part) of one file: a split stratified by class."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(pred.y))
    try:
        fit, rest = train_test_split(
            rows, train_size=fraction, stratify=pred.y, random_state=seed
        )
    except ValueError as exc:
        raise InputFileError(
            f"{pred.path}: its {len(rows)} rows cannot be split for --calibrate "
            f"({' '.join(str(exc).split()).rstrip('.')}); give held-out "
            "predictions with --fit-on"
        ) from None
    fit, rest = np.sort(fit), np.sort(rest)

    def part(rows):
        segments = pred.segments and {k: v[rows] for k, v in pred.segments.items()}
        return dataclasses.replace(
            pred, y=pred.y[rows], scores=pred.scores[rows], segments=segments
        )

    return part(fit), part(rest)


def run_report(args, parser):
    """Run ``sklcalib report``; 0 on success, 2 (message on stderr) on bad input."""
    try:
        _check_options(args, parser)
        plot = plot_target(args.plot) if args.plot else None
        pred, read_notes = _read(args.path, args)
        n_rows = len(pred.y)
        fit_pred = split = None
        if args.calibrate is not None:
            if args.fit_on is not None:
                fit_pred, more = _read(args.fit_on, args)
                read_notes += more
            else:
                split = {
                    "fit_fraction": 0.5
                    if args.fit_fraction is None
                    else args.fit_fraction,
                    "seed": 0 if args.split_seed is None else args.split_seed,
                }
                fit_pred, pred = _split(pred, split["fit_fraction"], split["seed"])
                split.update(n_fit=len(fit_pred.y), n_report=len(pred.y))
        if fit_pred is not None:
            _check_selection_memory(args, fit_pred)
        before = _report(pred, args)
        before["mce_bin_count"] = mce_bin_count(pred.y, pred.proba, args.n_bins)
        after = calibrator = None
        notes = []
        if args.calibrate is not None:
            calibrator, proba_after, notes = _calibrate(args.calibrate, fit_pred, pred)
            after = _report(
                Predictions(
                    pred.path,
                    pred.y,
                    proba_after,
                    pred.classes,
                    "probabilities",
                    segments=pred.segments,
                ),
                args,
            )
            after["mce_bin_count"] = mce_bin_count(pred.y, proba_after, args.n_bins)
        if plot is not None:
            _plot(
                plot[0],
                plot[1],
                pred,
                None if after is None else proba_after,
                _after_title(args.calibrate, calibrator),
            )
    except (ValueError, MemoryError) as exc:  # InputFileError, the metrics' checks
        message = " ".join(str(exc).split()) or "not enough memory"
        print(f"sklcalib report: error: {message}", file=sys.stderr)
        return 2

    if split is not None:
        fitted_on = (
            f"{split['n_fit']} rows of {args.path} (a stratified "
            f"{100 * split['fit_fraction']:g} % split, --split-seed {split['seed']}); "
            f"the report is on the other {split['n_report']} rows"
        )
    else:
        fitted_on = str(args.fit_on)

    if args.json:
        out = {
            "path": str(pred.path),
            "n_samples": n_rows,
            "classes": pred.classes,
            "input": pred.kind,
            "notes": read_notes,
            "report": before,
        }
        if after is not None:
            out["calibration"] = {
                "calibrator": args.calibrate,
                "fit_on": str(args.path if split else args.fit_on),
                "fitted": _fitted_parameters(calibrator),
                "report": after,
                "warnings": notes,
            }
            if split is not None:
                out["calibration"]["split"] = split
            if _is_selection(calibrator):  # --calibrate auto
                out["calibration"]["chosen"] = calibrator.best_candidate_
                out["calibration"]["reason"] = calibrator.reason_
                out["calibration"]["cv_results"] = calibrator.cv_results_
                out["calibration"]["candidates"] = selection_rows(
                    calibrator.cv_results_
                )
        if plot is not None:
            out["plot"] = str(plot[0])
        print(json.dumps(_json_ready(out), indent=2))
        return 0

    shown = ", ".join(pred.classes[:6]) + (", ..." if len(pred.classes) > 6 else "")
    what = f"{n_rows} samples, {len(pred.classes)} classes ({shown}), {pred.kind}"
    # a long path gets a line of its own, so that the rest fits the terminal
    first = f"{pred.path}: {what}"
    lines = [first] if len(first) <= WIDTH else [f"{pred.path}:", _fill("  " + what)]
    lines += [_fill(f"note: {note}") for note in read_notes]
    reports = (
        {"value": before}
        if after is None
        else {"before": before, _after_title(args.calibrate, calibrator): after}
    )
    lines += _segment_lines(reports)
    lines += _verdict_lines(reports)
    if after is not None:
        fitted = _fitted_parameters(calibrator)
        params = ", ".join(f"{k.rstrip('_')} {v:.3g}" for k, v in fitted.items())
        if _is_selection(calibrator):
            chosen = (
                "no calibration (passthrough)"
                if calibrator.best_estimator_ is None
                else calibrator.best_candidate_ + (f" ({params})" if params else "")
            )
            head = f"auto chose {chosen}; chosen and fitted on {fitted_on}"
        else:
            head = f"{args.calibrate} fitted on {fitted_on}" + (
                f" ({params})" if params else ""
            )
        lines.append(_fill(head))
    lines.append(format_table(reports))
    if after is not None and _is_selection(calibrator):
        lines.append(
            _fill(
                f"auto chose {calibrator.best_candidate_} by 5-fold cross-validated "
                "log-loss: of the candidates within one standard error of the best "
                "(their mean fold difference to it at most its standard error), the "
                "one with the fewest parameters per class; passthrough (no "
                "calibration) has none, and a calibrator replaces it only when it "
                "also beats it by more than one standard error of the per-row "
                f"differences of the held-out log-losses ({calibrator.reason_}):"
            )
        )
        lines.append(format_selection(calibrator.cv_results_))
    lines += [_fill(f"warning: {note}") for note in notes]
    if plot is not None:
        lines.append(_fill(f"reliability diagram: {plot[0]}"))
    print("\n".join(lines))
    return 0


def _after_title(name, calibrator):
    """The column title after calibration: auto names its choice."""
    if name is None:
        return None
    if _is_selection(calibrator):
        return f"after auto ({calibrator.best_candidate_})"
    return f"after {name}"
