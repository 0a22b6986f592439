"""The benchmark's figures: reliability diagrams of the nets and of the
post-hoc calibrators, and calibration against curvature.

A bare ``Figure`` (no pyplot): no GUI backend and no global figure state, so
the command works headless and leaks no figures.
"""

import math

import numpy as np

from sklcalib import plotting
from sklcalib._utils._optional import import_optional as _import_optional
from sklcalib.benchmark.tables import _ordered
from sklcalib.benchmark.tables import aggregate as _aggregate
from sklcalib.benchmark.tables import chance_counts as _chance_counts
from sklcalib.benchmark.tabular import RAW

__all__ = ["plot_boosting_reliability", "plot_curvature", "plot_reliability"]


def plot_curvature(rows, path, *, datasets=None, losses=None, n_cols=3):
    """Save a figure of ECE pre T against the Hessian trace, a panel per dataset.

    One point per loss (means over seeds), a colour and marker per loss named
    in the figure's legend, on a grid of at most ``n_cols`` panels per line.
    Horizontal bars: the Hutchinson standard error of the mean trace (the
    per-seed standard errors combined); vertical bars: the standard deviation
    of the ECE over seeds. Losses with a run at or near chance are drawn
    hollow. A panel with a trace at or
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

    stats = _aggregate(rows)
    chance = _chance_counts(rows)
    datasets = _ordered([r["dataset"] for r in rows], datasets or [])
    losses = _ordered([r["loss"] for r in rows], losses or [])
    n_cols = max(1, min(n_cols, len(datasets)))
    n_rows = math.ceil(len(datasets) / n_cols)
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(4.2 * n_cols, 3.4 * n_rows + 0.8), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()

    def style(loss):
        # one colour and marker per loss in every panel, named once in the
        # figure's legend (labels beside the points ran into each other)
        i = losses.index(loss)
        return f"C{i % 10}", "osD^v<>"[(i // 10) % 7]

    for ax, ds in zip(axes, datasets, strict=False):
        points = _curvature_points(rows, stats, ds, losses)
        for loss, x, x_se, y, y_sd in points:
            color, marker = style(loss)
            ax.errorbar(
                x,
                y,
                xerr=None if math.isnan(x_se) else x_se,
                yerr=None if math.isnan(y_sd) else y_sd,
                fmt=marker,
                ms=5,
                mfc="none" if (ds, loss) in chance else color,
                color=color,
                capsize=2,
                lw=1,
            )
        _curvature_axis(ax, [p[1] for p in points])
        ax.set_title(ds)
        ax.set_ylabel("test ECE pre T (%)")
    for ax in axes[len(datasets) :]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], color=style(loss)[0], marker=style(loss)[1], ls="", label=loss)
        for loss in losses
    ]
    if chance:
        handles.append(
            Line2D(
                [],
                [],
                color="0.3",
                marker="o",
                mfc="none",
                ls="",
                label="hollow: a seed at or near chance",
            )
        )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(len(handles), 6),
        fontsize=8,
        frameon=False,
    )
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
    fig, axes = _panel_grid(Figure, n_rows, n_cols)
    displays = []
    for ax, (_, y_true, y_prob) in zip(axes, panels, strict=False):
        displays.append(
            plotting.ReliabilityDisplay.from_predictions(y_true, y_prob, ax=ax)
        )
    _tidy_grid(fig, displays, [loss for loss, _, _ in panels], n_cols)
    _suptitle(fig, f"{dataset}: reliability before temperature scaling (test)")
    fig.savefig(path, dpi=90)
    return fig


# The margins of a grid of reliability panels, in inches: what matplotlib's
# constrained layout finds for them (tick labels and the accuracy label on the
# left, the histogram's ticks and label on the right, panel titles, the figure
# title, and the confidence label and legend below), fixed. Constrained layout
# costs an extra draw of every tick of every panel: about half of the CPU time
# of a dozen-panel figure.
_LEFT, _RIGHT, _TOP, _BOTTOM = 0.56, 0.66, 0.50, 0.78
_COL_GAP, _ROW_GAP = 0.81, 0.53


def _panel_grid(Figure, n_rows, n_cols):
    """A figure of ``n_rows`` x ``n_cols`` reliability panels laid out with the
    fixed margins above, and its axes (flat)."""
    width, height = 3.6 * n_cols, 3.3 * n_rows + 0.6
    fig = Figure(figsize=(width, height))
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    panel_w = (width - _LEFT - _RIGHT - (n_cols - 1) * _COL_GAP) / n_cols
    panel_h = (height - _TOP - _BOTTOM - (n_rows - 1) * _ROW_GAP) / n_rows
    fig.subplots_adjust(
        left=_LEFT / width,
        right=1 - _RIGHT / width,
        bottom=_BOTTOM / height,
        top=1 - _TOP / height,
        wspace=_COL_GAP / panel_w,
        hspace=_ROW_GAP / panel_h,
    )
    return fig, axes


def _suptitle(fig, text):
    """The figure's title, 0.02 in from its top edge (above the panel titles
    that the fixed top margin leaves room for)."""
    fig.suptitle(text, y=1 - 0.02 / fig.get_figheight(), va="top")


def _tidy_grid(fig, displays, names, n_cols):
    """Lay out a grid of reliability diagrams so that nothing overlaps.

    Each panel's title names it with its ECE (no legend inside a panel, where
    it covered the curve and ran into the next panel); one legend for the
    figure, under the grid; the accuracy axis labelled on the first column,
    the histogram's on the last panel of each line, the confidence axis on
    the lowest panel of each column; the histograms on one scale; the unused
    axes hidden.
    """
    plotting.share_histogram_axis(displays)  # panels side by side: one scale
    axes = list(fig.axes)
    n = len(displays)
    n_rows = math.ceil(n / n_cols)
    for i, (display, name) in enumerate(zip(displays, names, strict=True)):
        row, col = divmod(i, n_cols)
        ax = display.ax_
        ece = display.calibration_error
        ax.set_title(f"{name}: ECE {100 * ece:.2f} %" if ece is not None else name)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        if col != 0:
            ax.set_ylabel("")
        last_in_row = col == n_cols - 1 or i == n - 1
        if display.hist_ax_ is not None and not last_in_row:
            display.hist_ax_.set_ylabel("")
        lowest_in_column = row == n_rows - 1 or i + n_cols >= n
        if not lowest_in_column:
            ax.set_xlabel("")
    used = {d.ax_ for d in displays} | {d.hist_ax_ for d in displays}
    for ax in axes:
        if ax not in used:
            ax.set_visible(False)
    handles, labels = displays[0].ax_.get_legend_handles_labels()
    if displays[0].hist_ is not None:
        handles.append(displays[0].hist_)
        labels.append("share of the samples (right axis)")
    keep = [(h, lab) for h, lab in zip(handles, labels, strict=True) if lab]
    # the curve's own label names the model: here it is the bins' accuracy
    keep = [
        (h, "accuracy per bin (95 % interval)" if h is displays[0].line_ else lab)
        for h, lab in keep
    ]
    fig.legend(
        [h for h, _ in keep],
        [lab for _, lab in keep],
        loc="outside lower center",
        ncols=len(keep),
        fontsize=8,
        frameon=False,
    )


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
    fig, axes = _panel_grid(Figure, n_rows, n_cols)
    displays = []
    for ax, name in zip(axes, names, strict=False):
        row = first[name]
        binary = row["proba"].shape[1] == 2
        display = plotting.ReliabilityDisplay.from_predictions(
            row["y_test"],
            row["proba"],
            kind="classwise" if binary else "top-label",
            ax=ax,
        )
        displays.append(display)
    _tidy_grid(fig, displays, ["raw" if n == RAW else n for n in names], n_cols)
    what = "P(class 1)" if first[names[0]]["proba"].shape[1] == 2 else "top-label"
    _suptitle(fig, f"{dataset}: gradient boosting, {what} reliability (test)")
    fig.savefig(path, dpi=dpi)
    return fig
