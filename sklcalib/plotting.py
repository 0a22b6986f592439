"""Reliability diagrams in the style of scikit-learn's ``CalibrationDisplay``,
and the binning-free plot of cumulative differences.

:class:`ReliabilityDisplay` does for multiclass problems what
``sklearn.calibration.CalibrationDisplay`` does for binary ones (it is not a
subclass; the API follows it): the top-label diagram (confidence
against accuracy) or the diagram of one class, with per-bin Clopper–Pearson
intervals (and optionally a bootstrap band), the gap to the diagonal and a
histogram of the confidences. All its numbers come from
:func:`sklcalib.metrics.bin_statistics`.

:class:`CumulativeDisplay` plots the cumulative differences of outcomes and
probabilities against the share of rows sorted by score (Arrieta-Ibarra,
Gujral, Tannen, Tygert & Xu, 2022), the plot behind
:func:`sklcalib.metrics.cumulative_calibration_test`: no bins, a ±σ band
under calibration, and slopes that read as miscalibration.
"""

import numpy as np
from scipy.stats import beta

from ._utils._binning import (
    bin_index,
    error_from_stats,
    quantile_groups,
    top_label,
)
from ._utils._brownian import brownian_sf
from ._utils._cumulative import cumulative_path, scaled
from ._utils._docstrings import fill_doc
from ._utils._optional import import_optional
from ._utils._resampling import bootstrap_sums, stream_seeds
from ._utils._score_columns import MODES, resolve_mode
from ._utils._scores import as_columns
from ._utils._validation import (
    STRATEGIES,
    any_dask,
    check_confidence_level,
    check_n_bins,
    check_n_resamples,
    check_option,
    check_prob_values,
    check_scalar,
    check_targets,
    is_dask_array,
    reject_dask,
)
from .metrics import CalibrationAccumulator, bin_statistics

__all__ = ["CumulativeDisplay", "ReliabilityDisplay", "share_histogram_axis"]

KINDS = ("top-label", "classwise")
BANDS = ("bootstrap",)


def bootstrap_band(
    bin_index, correct, confidence, n_bins, confidence_level, n_resamples, random_state
):
    """Per-bin percentile bootstrap interval of the accuracy, rows resampled
    jointly with their bins fixed (as the bootstrap of the ECE does).

    A resample in which a bin is empty says nothing about its accuracy; the
    quantiles are taken over the resamples that fill the bin. Returns
    ``(low, high)`` over all ``n_bins`` bins (NaN where no resample fills it).
    """
    codes = (2 * bin_index + correct).astype(np.int32)[:, None]
    values = np.asarray(confidence, dtype=np.float64)[:, None, None]
    seeds = stream_seeds(random_state, n_resamples)
    sums = bootstrap_sums(codes, values, 2 * n_bins, seeds)[..., 0]
    sums = sums.reshape(n_resamples, n_bins, 2)
    counts = sums.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(counts > 0, sums[..., 1] / counts, np.nan)
    alpha = (1.0 - confidence_level) / 2.0
    low = np.full(n_bins, np.nan)
    high = np.full(n_bins, np.nan)
    filled = np.any(counts > 0, axis=0)
    if filled.any():
        low[filled], high[filled] = np.nanquantile(
            accuracy[:, filled], [alpha, 1.0 - alpha], axis=0
        )
    return low, high


def clopper_pearson(successes, trials, confidence_level=0.95):
    """Exact (Clopper–Pearson) binomial confidence interval, vectorised.

    The beta-quantile form of the interval, as
    ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")`` computes it
    one bin at a time.
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    alpha = 1.0 - confidence_level
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return low, high


def _estimator_predictions(estimator, X, name, kwargs):
    """The keyword arguments of ``from_predictions`` for a fitted classifier
    on ``X``: its probabilities, its classes as ``labels`` and its class name
    as the default legend name, with the caller's other ``kwargs``."""
    if not hasattr(estimator, "predict_proba"):
        raise ValueError(
            f"estimator must have predict_proba; {type(estimator).__name__} has not."
        )
    if "labels" in kwargs:
        raise ValueError("labels are taken from estimator.classes_.")
    return {
        "y_prob": estimator.predict_proba(X),
        "labels": estimator.classes_,
        "name": type(estimator).__name__ if name is None else name,
        **kwargs,
    }


def _check_class_index(class_index, n_classes):
    """The column a ``"classwise"`` view shows: ``class_index``, checked, or
    the positive class (1) of a binary problem when it is None."""
    if class_index is None and n_classes == 2:
        return 1
    if (
        class_index is None
        or isinstance(class_index, bool)
        or not isinstance(class_index, (int, np.integer))
        or not 0 <= class_index < n_classes
    ):
        raise ValueError(
            "class_index must be a column index in [0, "
            f"{n_classes}) for kind='classwise', got {class_index!r}."
        )
    return int(class_index)


def _class_column(p, y_idx, classes, class_index):
    """The scores, outcomes and label of the class a ``"classwise"`` view
    shows (see :func:`_check_class_index`)."""
    columns = as_columns(p)
    class_index = _check_class_index(class_index, columns.shape[1])
    return columns[:, class_index], y_idx == class_index, classes[class_index]


def _streamed_stats(y_true, y_prob, n_bins, strategy, labels, kind, class_index):
    """Uniform-bin statistics of dask inputs, block by block on the active
    Dask scheduler (the metrics' accumulator)."""
    if strategy != "uniform":
        reject_dask(
            "equal-mass (quantile) bins need a global sort of all the samples",
            "Use strategy='uniform', or plot an in-memory sample.",
            y_prob=y_prob,
            y_true=y_true,
        )

    if labels is None:
        from sklcalib._utils._dask import unique_values

        labels = unique_values(y_true) if is_dask_array(y_true) else np.unique(y_true)
    acc = CalibrationAccumulator(n_bins, labels=labels).update(y_true, y_prob)
    if kind == "top-label":
        return acc.top_label_statistics(), None
    n_classes = acc.labels_.shape[0]
    class_index = _check_class_index(class_index, n_classes)
    return acc.classwise_statistics()[class_index], acc.labels_[class_index]


class ReliabilityDisplay:
    """Reliability diagram (calibration curve) of a multiclass classifier.

    Build it with :meth:`from_estimator` or :meth:`from_predictions`; the
    constructor only stores precomputed per-bin arrays. The per-bin arrays hold
    the non-empty bins only, as ``CalibrationDisplay`` does.

    Parameters
    ----------
    prob_true : ndarray of shape (n_nonempty_bins,)
        Observed frequency of the event (accuracy for the top label) per bin.
    prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean predicted probability (confidence) per bin.
    counts : ndarray of shape (n_nonempty_bins,)
        Number of samples per bin.
    ci_low, ci_high : ndarray of shape (n_nonempty_bins,)
        Clopper–Pearson confidence interval of ``prob_true``.
    edges : ndarray of shape (n_bins + 1,)
        Bin edges (see :class:`~sklcalib.metrics.BinStatistics`).
    nonempty : ndarray of shape (n_bins,), dtype=bool, default=None
        Which bins the per-bin arrays describe; None means all of them.
    calibration_error : float, default=None
        ECE shown in the legend.
    estimator_name : str, default=None
        Name of the curve in the legend.
    kind : {"top-label", "classwise"}, default="top-label"
        What the diagram shows (axis labels).
    class_label : object, default=None
        The class of a ``"classwise"`` diagram.
    band_low, band_high : ndarray of shape (n_nonempty_bins,), default=None
        Bootstrap band of ``prob_true`` (drawn as a shaded band), or None.

    Attributes
    ----------
    bin_stats : BinStatistics
        All bins, empty ones included (set by the ``from_*`` constructors).
    line_ : matplotlib Line2D
        The calibration curve.
    errorbar_ : matplotlib LineCollection
        The confidence intervals.
    band_ : matplotlib PolyCollection or None
        The bootstrap band, if any.
    gap_ : matplotlib BarContainer or None
        Bars from the observed frequency to the mean confidence of each bin.
    hist_ax_ : matplotlib Axes or None
        Twin axis of the confidence histogram.
    hist_ : matplotlib BarContainer or None
        The histogram (fraction of samples per bin).
    ax_ : matplotlib Axes
        Axes with the diagram.
    figure_ : matplotlib Figure
        Figure containing the diagram.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklcalib.plotting import ReliabilityDisplay
    >>> X, y = load_iris(return_X_y=True)
    >>> model = GaussianNB().fit(X, y)
    >>> display = ReliabilityDisplay.from_estimator(model, X, y, n_bins=5)
    >>> float(display.counts.sum())
    150.0
    >>> bool((display.ci_low <= display.prob_true).all())
    True
    """

    def __init__(
        self,
        prob_true,
        prob_pred,
        counts,
        ci_low,
        ci_high,
        edges,
        *,
        nonempty=None,
        calibration_error=None,
        estimator_name=None,
        kind="top-label",
        class_label=None,
        band_low=None,
        band_high=None,
    ):
        self.band_low = band_low
        self.band_high = band_high
        self.prob_true = prob_true
        self.prob_pred = prob_pred
        self.counts = counts
        self.ci_low = ci_low
        self.ci_high = ci_high
        self.edges = edges
        self.nonempty = nonempty
        self.calibration_error = calibration_error
        self.estimator_name = estimator_name
        self.kind = kind
        self.class_label = class_label

    @fill_doc
    def plot(
        self, *, ax=None, name=None, show_histogram=True, show_gap=True, ref_line=True
    ):
        """Draw the diagram.

        Parameters
        ----------
        %(display_plot_axes)s
        show_histogram : bool, default=True
            Draw the fraction of samples per bin on a twin axis.
        show_gap : bool, default=True
            Shade the gap between accuracy and confidence of each bin.
        ref_line : bool, default=True
            Draw the diagonal of perfect calibration.

        Returns
        -------
        display : ReliabilityDisplay
            ``self``, with the matplotlib artists stored.
        """
        plt = import_optional("matplotlib.pyplot", "ReliabilityDisplay.plot")

        if ax is None:
            _, ax = plt.subplots()
        name = self.estimator_name if name is None else name
        label = "" if name is None else name
        if self.calibration_error is not None:
            # say which ECE: a binary diagram may show P(class 1) or the top label
            which = (
                "top-label ECE"
                if self.kind == "top-label"
                else f"ECE of class {self.class_label}"
            )
            ece = f"{which} = {self.calibration_error:.3f}"
            label = f"{label} ({ece})" if label else ece

        self.hist_ax_ = self.hist_ = None
        if show_histogram:
            # a twin axis keeps the histogram's scale apart from the [0, 1] curve
            self.hist_ax_ = ax.twinx()
            widths = np.diff(self.edges)
            fractions = self.counts / self.counts.sum()
            mask = self._nonempty_mask()
            self.hist_ = self.hist_ax_.bar(
                self.edges[:-1][mask],
                fractions,
                width=widths[mask],
                align="edge",
                color="tab:gray",
                alpha=0.25,
                edgecolor="tab:gray",
                label="Samples per bin",
            )
            _scale_histogram(self.hist_ax_, float(fractions.max()))
            self.hist_ax_.set_ylabel("Fraction of samples")
            ax.set_zorder(self.hist_ax_.get_zorder() + 1)
            ax.patch.set_visible(False)

        if ref_line:
            ax.plot([0, 1], [0, 1], "k:", label="Perfectly calibrated")
        self.gap_ = None
        if show_gap:
            mask = self._nonempty_mask()
            self.gap_ = ax.bar(
                self.edges[:-1][mask],
                self.prob_pred - self.prob_true,
                bottom=self.prob_true,
                width=np.diff(self.edges)[mask],
                align="edge",
                color="tab:red",
                alpha=0.25,
                label="Gap",
            )
        (self.line_,) = ax.plot(self.prob_pred, self.prob_true, "s-", label=label)
        self.band_ = None
        if self.band_low is not None:
            self.band_ = ax.fill_between(
                self.prob_pred,
                self.band_low,
                self.band_high,
                color=self.line_.get_color(),
                alpha=0.2,
                label="Bootstrap band",
            )
        self.errorbar_ = ax.vlines(
            self.prob_pred,
            self.ci_low,
            self.ci_high,
            color=self.line_.get_color(),
            alpha=0.8,
        )
        if self.kind == "top-label":
            xlabel, ylabel = "Confidence (top-label probability)", "Accuracy"
        else:
            xlabel = f"Predicted probability of class {self.class_label}"
            ylabel = f"Frequency of class {self.class_label}"
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=xlabel, ylabel=ylabel)
        ax.legend(loc="upper left")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    def _nonempty_mask(self):
        """Which of the ``len(edges) - 1`` bins the per-bin arrays cover."""
        if self.nonempty is None:
            return np.ones(len(self.edges) - 1, dtype=bool)
        return np.asarray(self.nonempty, dtype=bool)

    @classmethod
    @fill_doc
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        n_bins=15,
        strategy="uniform",
        labels=None,
        kind="top-label",
        class_index=None,
        ax=None,
        name=None,
        show_histogram=True,
        show_gap=True,
        confidence_level=0.95,
        ref_line=True,
        band=None,
        n_resamples=1000,
        random_state=None,
    ):
        """Reliability diagram from true labels and predicted probabilities.

        Parameters
        ----------
        %(labels_and_ece_probabilities)s
        n_bins : int, default=15
            Number of bins.
        strategy : {"uniform", "quantile"}, default="uniform"
            Binning strategy, as in :func:`~sklcalib.metrics.bin_statistics`.
        %(column_labels)s
        kind : {"top-label", "classwise"}, default="top-label"
            ``"top-label"``: confidence of the predicted class against
            accuracy. ``"classwise"``: probability of class ``class_index``
            against the frequency of that class.
        class_index : int, default=None
            Column of ``y_prob`` shown by a ``"classwise"`` diagram; for a binary
            problem it defaults to the positive class (1).
        ax : matplotlib Axes, default=None
            Axes to draw on.
        name : str, default=None
            Legend name of the curve.
        show_histogram : bool, default=True
            Draw the fraction of samples per bin on a twin axis.
        show_gap : bool, default=True
            Shade the gap between accuracy and confidence.
        confidence_level : float, default=0.95
            Level of the per-bin Clopper–Pearson intervals (and of the band).
        ref_line : bool, default=True
            Draw the diagonal of perfect calibration.
        band : {"bootstrap"} or None, default=None
            ``"bootstrap"`` adds a shaded band: per bin, the percentile
            bootstrap interval of the observed frequency, rows resampled
            jointly with their bins kept (the resampling behind
            :func:`~sklcalib.metrics.bootstrap_interval` of the ECE). Where
            the Clopper–Pearson bars treat each bin's count as fixed, the band
            also lets the number of samples per bin vary.
        n_resamples : int, default=1000
            Bootstrap resamples of the band.
        random_state : int, RandomState instance, Generator or None, default=None
            Seeds the band's resamples.

        Returns
        -------
        display : ReliabilityDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np
        >>> from sklcalib.plotting import ReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> y_prob = rng.dirichlet(np.ones(3), size=200)
        >>> y_true = rng.integers(0, 3, size=200)
        >>> display = ReliabilityDisplay.from_predictions(
        ...     y_true, y_prob, kind="classwise", class_index=2, n_bins=5
        ... )
        >>> display.prob_pred.shape == display.prob_true.shape
        True
        >>> display = ReliabilityDisplay.from_predictions(
        ...     y_true, y_prob, n_bins=5, band="bootstrap", random_state=0
        ... )
        >>> bool((display.band_low <= display.band_high).all())
        True
        """
        n_bins = check_n_bins(n_bins)
        check_option(strategy, "strategy", STRATEGIES)
        check_option(kind, "kind", KINDS)
        confidence_level = check_confidence_level(confidence_level)
        if band is not None:
            check_option(band, "band", BANDS)
            n_resamples = check_n_resamples(n_resamples)
        class_label = None
        if kind == "top-label" and class_index is not None:
            raise ValueError("class_index is only used with kind='classwise'.")
        if any_dask(y_true, y_prob):
            stats, class_label = _streamed_stats(
                y_true, y_prob, n_bins, strategy, labels, kind, class_index
            )
            display = cls._from_stats(
                stats, confidence_level, name=name, kind=kind, class_label=class_label
            )
            return display.plot(
                ax=ax,
                show_histogram=show_histogram,
                show_gap=show_gap,
                ref_line=ref_line,
            )
        y_idx, p, classes, _ = check_targets(y_true, y_prob, labels)
        p = check_prob_values(p)
        if kind == "top-label":
            conf, correct = top_label(p, y_idx)
        else:
            conf, correct, class_label = _class_column(p, y_idx, classes, class_index)
        stats = bin_statistics(conf, correct, n_bins=n_bins, strategy=strategy)
        display = cls._from_stats(
            stats, confidence_level, name=name, kind=kind, class_label=class_label
        )
        if band is not None:
            low, high = bootstrap_band(
                _bin_index(conf, stats, strategy),
                np.asarray(correct, dtype=np.intp),
                conf,
                n_bins,
                confidence_level,
                int(n_resamples),
                random_state,
            )
            display.band_low = low[stats.nonempty]
            display.band_high = high[stats.nonempty]
        return display.plot(
            ax=ax,
            show_histogram=show_histogram,
            show_gap=show_gap,
            ref_line=ref_line,
        )

    @classmethod
    @fill_doc
    def from_estimator(cls, estimator, X, y, *, name=None, **kwargs):
        """Reliability diagram of a fitted classifier on ``X, y``.

        Parameters
        ----------
        %(display_from_estimator_parameters)s

        Returns
        -------
        display : ReliabilityDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from sklearn.datasets import load_wine
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from sklcalib.plotting import ReliabilityDisplay
        >>> X, y = load_wine(return_X_y=True)
        >>> model = GaussianNB().fit(X, y)
        >>> display = ReliabilityDisplay.from_estimator(model, X, y)
        >>> display.line_.get_label().startswith("GaussianNB (top-label ECE = ")
        True
        """
        return cls.from_predictions(
            y, **_estimator_predictions(estimator, X, name, kwargs)
        )

    @classmethod
    def _from_stats(cls, stats, confidence_level, **kwargs):
        mask = stats.nonempty
        counts = stats.counts[mask]
        successes = stats.sum_correct[mask]
        ci_low, ci_high = clopper_pearson(successes, counts, confidence_level)
        display = cls(
            prob_true=successes / counts,
            prob_pred=stats.sum_confidence[mask] / counts,
            counts=counts,
            ci_low=ci_low,
            ci_high=ci_high,
            edges=stats.edges,
            nonempty=mask,
            calibration_error=error_from_stats(stats, "l1"),
            estimator_name=kwargs.pop("name"),
            **kwargs,
        )
        display.bin_stats = stats
        return display


def _scale_histogram(hist_ax, top):
    # the bars use the bottom third of the axes; ticks only up to the top
    top = max(top, 1e-12)
    hist_ax.set_ylim(0, 3 * top)
    hist_ax.set_yticks(np.linspace(0, top, 3))
    hist_ax.yaxis.set_major_formatter("{x:.0%}")


def share_histogram_axis(displays):
    """Put the histograms of diagrams shown side by side on one scale.

    Each diagram scales its histogram to its own fullest bin, so that two
    panels side by side would draw 40 % and 10 % as bars of the same height.
    This sets every histogram axis to the fullest bin over all ``displays``.

    Parameters
    ----------
    displays : iterable of ReliabilityDisplay
        Plotted displays; those drawn without a histogram are left alone.

    Returns
    -------
    top : float
        The common top of the histogram scale (a fraction of the samples), or
        0.0 when no display has a histogram.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from sklcalib.plotting import ReliabilityDisplay, share_histogram_axis
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=300)
    >>> y = rng.integers(0, 3, size=300)
    >>> fig, axes = plt.subplots(1, 2)
    >>> a = ReliabilityDisplay.from_predictions(y, p, ax=axes[0])
    >>> b = ReliabilityDisplay.from_predictions(y, np.full((300, 3), 1 / 3), ax=axes[1])
    >>> top = share_histogram_axis([a, b])
    >>> a.hist_ax_.get_ylim() == b.hist_ax_.get_ylim()
    True
    >>> plt.close(fig)
    """
    with_hist = [d for d in displays if getattr(d, "hist_ax_", None) is not None]
    if not with_hist:
        return 0.0
    top = max(float(d.counts.max() / d.counts.sum()) for d in with_hist)
    for d in with_hist:
        _scale_histogram(d.hist_ax_, top)
    return top


def _bin_index(conf, stats, strategy):
    """Bin of every sample, as :func:`~sklcalib.metrics.bin_statistics` bins."""
    conf64 = np.asarray(conf, dtype=np.float64)
    if strategy == "uniform":
        return bin_index(conf64, stats.edges)
    return quantile_groups(conf64, stats.edges.shape[0] - 1)[0]


class CumulativeDisplay:
    """Cumulative differences of outcomes and probabilities (no bins).

    Sort the rows by their score ``p`` and plot
    ``C_k = sum_{i <= k} w_i (y_i - p_i) / sum_i w_i`` against the share of
    the rows (by weight) up to row ``k`` (Arrieta-Ibarra, Gujral, Tannen,
    Tygert & Xu, 2022). A calibrated model's path wanders inside its ±σ band
    (the standard deviation of ``C_k`` under calibration, which grows from 0
    like a Brownian motion's). The slope of the path is the miscalibration:
    the secant between two points is the mean of ``y - p`` over the rows
    between them, so a path rising by 0.01 over 20 % of the rows says the
    model underestimates those rows by 0.01 / 0.2 = 5 points. The top axis
    gives the score at each share of the rows. Build it with
    :meth:`from_predictions` or :meth:`from_estimator`.

    Parameters
    ----------
    fraction : ndarray of shape (m,)
        Share of the total weight up to the end of each group of tied scores.
    cumulative : ndarray of shape (m,)
        ``C`` at those ends.
    scores : ndarray of shape (m,)
        The score of each group.
    sd : ndarray of shape (m,)
        The standard deviation of ``C`` there under calibration.
    statistic : float, default=None
        The Kuiper statistic (range of ``C``, with the starting 0).
    pvalue : float, default=None
        Its p-value (see :func:`~sklcalib.metrics.cumulative_calibration_test`).
    estimator_name : str, default=None
        Name of the path in the legend.
    mode : str, default="binary"
        ``"binary"``, ``"top_label"`` or ``"classwise"`` (axis labels).
    class_label : object, default=None
        The class of a ``"classwise"`` plot.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The path.
    band_ : matplotlib PolyCollection or None
        The ±σ band.
    secant_ : matplotlib Line2D or None
        The secant over the score range asked for, if any.
    top_ax_ : matplotlib secondary Axes
        The top axis, the score at every fifth of the rows.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklcalib.plotting import CumulativeDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < np.where(p > 0.5, p - 0.1, p)
    >>> display = CumulativeDisplay.from_predictions(y, p, secant=(0.5, 1.0))
    >>> round(display.slope(0.5, 1.0), 2)  # overestimated by about 0.1 there
    -0.1
    >>> bool(display.pvalue < 0.01)
    True
    """

    def __init__(
        self,
        fraction,
        cumulative,
        scores,
        sd,
        *,
        statistic=None,
        pvalue=None,
        estimator_name=None,
        mode="binary",
        class_label=None,
    ):
        self.fraction = fraction
        self.cumulative = cumulative
        self.scores = scores
        self.sd = sd
        self.statistic = statistic
        self.pvalue = pvalue
        self.estimator_name = estimator_name
        self.mode = mode
        self.class_label = class_label

    def _at(self, score):
        """``(fraction, C)`` after every row with a score <= ``score``."""
        k = int(np.searchsorted(self.scores, score, side="right"))
        if k == 0:
            return 0.0, 0.0
        return float(self.fraction[k - 1]), float(self.cumulative[k - 1])

    def slope(self, low, high):
        """Return the mean miscalibration over a score range.

        The mean of ``y - p`` (weighted) over the rows with a score in
        ``(low, high]``: the slope of the path's secant between those scores.

        Parameters
        ----------
        low, high : float
            The score range, ``low < high``.

        Returns
        -------
        slope : float
            Positive where the model underestimates the outcome.
        """
        low = check_scalar(low, "low")
        high = check_scalar(high, "high")
        if not low < high:
            raise ValueError(f"low must be below high, got low={low}, high={high}.")
        f0, c0 = self._at(low)
        f1, c1 = self._at(high)
        if f1 <= f0:
            raise ValueError(
                f"No row has a score in ({low}, {high}]: the slope is undefined."
            )
        return (c1 - c0) / (f1 - f0)

    @fill_doc
    def plot(self, *, ax=None, name=None, secant=None, show_band=True):
        """Draw the plot.

        Parameters
        ----------
        %(display_plot_axes)s
        secant : tuple of float, default=None
            A score range ``(low, high)``: draw the secant of the path over
            the rows with a score in it, labelled with its slope (the mean
            miscalibration there, see :meth:`slope`).
        show_band : bool, default=True
            Shade ±σ around 0, the standard deviation of the path under
            calibration.

        Returns
        -------
        display : CumulativeDisplay
            ``self``, with the matplotlib artists stored.
        """
        plt = import_optional("matplotlib.pyplot", "CumulativeDisplay.plot")
        if ax is None:
            _, ax = plt.subplots()
        name = self.estimator_name if name is None else name
        label = "" if name is None else name
        if self.statistic is not None:
            text = f"Kuiper = {self.statistic:.4f}"
            if self.pvalue is not None:
                text += f", p = {self.pvalue:.3g}"
            label = f"{label} ({text})" if label else text
        x = np.concatenate([[0.0], self.fraction])
        y = np.concatenate([[0.0], self.cumulative])
        self.band_ = None
        if show_band:
            sd = np.concatenate([[0.0], self.sd])
            self.band_ = ax.fill_between(
                x, -sd, sd, color="tab:gray", alpha=0.25, label="±σ under calibration"
            )
        ax.axhline(0.0, color="k", linestyle=":", linewidth=1)
        (self.line_,) = ax.plot(x, y, "-", label=label)
        self.secant_ = None
        if secant is not None:
            low, high = secant
            value = self.slope(low, high)
            f0, c0 = self._at(low)
            f1, c1 = self._at(high)
            (self.secant_,) = ax.plot(
                [f0, f1],
                [c0, c1],
                "o--",
                color="tab:red",
                label=f"slope over scores ({low:g}, {high:g}] = {value:+.3f}",
            )
        if self.mode == "top_label":
            what = "confidence"
        elif self.mode == "classwise":
            what = f"probability of class {self.class_label}"
        else:
            what = "predicted probability"
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"Share of rows, sorted by {what}")
        ax.set_ylabel("Cumulative (outcome - probability)")
        # the top axis reads the score at evenly spaced shares of the rows
        ticks = np.linspace(0.0, 1.0, 6)
        at = np.interp(ticks, x, np.concatenate([[self.scores[0]], self.scores]))
        top = ax.secondary_xaxis("top")
        top.set_xticks(ticks, labels=[f"{v:.3g}" for v in at])
        top.set_xlabel(what.capitalize())
        self.top_ax_ = top
        ax.legend(loc="best")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @classmethod
    @fill_doc
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        mode="auto",
        class_index=None,
        labels=None,
        sample_weight=None,
        ax=None,
        name=None,
        secant=None,
        show_band=True,
    ):
        """Cumulative plot from true labels and predicted probabilities.

        Parameters
        ----------
        %(labels_and_cumulative_probabilities)s
            Dask arrays are refused (the rows are sorted together).
        mode : {"auto", "top_label", "classwise"}, default="auto"
            The positive class's probability (binary) or the top-label
            confidence (multiclass), or the column ``class_index``.
        class_index : int, default=None
            The column of a ``"classwise"`` plot; the positive class (1) by
            default for a binary problem.
        %(column_labels)s
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        name : str, default=None
            Legend name.
        secant : tuple of float, default=None
            Score range of a secant to draw, see :meth:`plot`.
        show_band : bool, default=True
            Shade the ±σ band.

        Returns
        -------
        display : CumulativeDisplay
        """
        check_option(mode, "mode", MODES)
        reject_dask(
            "the cumulative plot sorts all the rows by their score",
            "Plot an in-memory sample of the rows (y_prob[idx].compute()).",
            y_true=y_true,
            y_prob=y_prob,
            sample_weight=sample_weight,
        )
        y_idx, p, classes, w = check_targets(y_true, y_prob, labels, sample_weight)
        p = check_prob_values(p)
        n_classes = 2 if p.ndim == 1 else p.shape[1]
        resolved = resolve_mode(mode, n_classes)
        if resolved != "classwise" and class_index is not None:
            raise ValueError("class_index is only used with mode='classwise'.")
        class_label = None
        if resolved == "binary":
            score = p if p.ndim == 1 else p[:, 1]
            outcome = y_idx == 1
        elif resolved == "top_label":
            score, outcome = top_label(p, y_idx)
        else:
            score, outcome, class_label = _class_column(p, y_idx, classes, class_index)
        score = np.ascontiguousarray(score)
        path = cumulative_path(outcome, score, w)
        kuiper = max(float(path.value.max()), 0.0) - min(float(path.value.min()), 0.0)
        display = cls(
            path.fraction,
            path.value,
            path.score,
            path.sd,
            statistic=kuiper,
            pvalue=brownian_sf(scaled(kuiper, path.sigma), "kuiper"),
            estimator_name=name,
            mode=resolved,
            class_label=class_label,
        )
        return display.plot(ax=ax, secant=secant, show_band=show_band)

    @classmethod
    @fill_doc
    def from_estimator(cls, estimator, X, y, *, name=None, **kwargs):
        """Cumulative plot of a fitted classifier on ``X, y``.

        Parameters
        ----------
        %(display_from_estimator_parameters)s

        Returns
        -------
        display : CumulativeDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from sklcalib.plotting import CumulativeDisplay
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> model = GaussianNB().fit(X, y)
        >>> display = CumulativeDisplay.from_estimator(model, X, y)
        >>> display.line_.get_label().startswith("GaussianNB (Kuiper = ")
        True
        """
        return cls.from_predictions(
            y, **_estimator_predictions(estimator, X, name, kwargs)
        )
