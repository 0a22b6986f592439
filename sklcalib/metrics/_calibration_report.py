"""``calibration_report``: every metric of the package from one validation,
returned as numbers; the verdict in words and the table are its text form."""

import warnings

import numpy as np
from scipy.special import ndtri

from sklcalib._utils._binning import calibration_gaps, error_from_stats, top_label
from sklcalib._utils._cumulative import cumulative_statistics
from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._metric_display import REPORT_ROWS
from sklcalib._utils._resampling import stream_seeds
from sklcalib._utils._score_columns import score_columns
from sklcalib._utils._scores import mean_standard_error, row_scores, weighted_mean
from sklcalib._utils._validation import (
    any_dask,
    check_confidence_level,
    check_n_bins,
    check_prob_values,
    check_targets,
    reject_dask,
)

from ._accumulator import stream_statistics
from ._debiased import debiased_square_error
from ._intervals import INTERVAL_METRICS, validated_interval
from ._kernel import validated_skce
from ._multicalibration import multicalibration_audit
from ._smooth import smooth_ece_fixed_point
from ._statistics import classwise_statistics
from ._sweep import sweep_error
from .binning import _bin_statistics

S99_THRESHOLD = 0.99
#: report keys that get an interval of their population value: the metrics
#: of calibration_error_interval (the smooth ECE, the sweep and the SKCE have
#: none yet)
CI_METRICS = INTERVAL_METRICS
#: what a report on dask arrays lacks, and why
DASK_MISSING = (
    "adaptive_ece",
    "smooth_ece",
    "s99_fraction",
    "s99_accuracy",
    "debiased_ece",
    "ece_sweep",
    "skce",
    "cumulative_kuiper",
    "cumulative_ks",
    "calibration_pvalue",
    "confidence_gap_ci",
    "verdict",
    *(f"{key}_ci" for key in CI_METRICS),
)
#: share of the ECE that must be of one sign for the verdict to name that
#: direction: ``|confidence_gap| >= ece / 2``, i.e. three quarters of it
DIRECTION_SHARE = 0.75


@fill_doc
class CalibrationReport(dict):
    """The result of :func:`calibration_report`: a dict of numbers.

    The keys are those listed by :func:`calibration_report`. ``str(report)``
    (what ``print`` shows) is the table of ``sklcalib report``, opened by the
    verdict in words, :attr:`verdict`. The verdict is no longer a key:
    ``report["verdict"]`` still returns it, with a ``FutureWarning``.

    Attributes
    ----------
    verdict : str or None
        The conclusion in words, read from the report's own rows (None
        without intervals).
    confidence_level : float or None
        The level of the intervals (None: the report has none).
    unavailable : tuple of str
        The keys a report of dask arrays cannot hold; asking for one raises a
        ``KeyError`` that says why.
    audit : MulticalibrationAudit or None
        The segment audit of a report asked with ``segments`` (its verdict
        and worst segments open the text form), else None.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import calibration_report
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=300)
    >>> y = (rng.uniform(size=(300, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> report = calibration_report(y, p, random_state=0)  # y drawn from p
    >>> report.verdict
    'no evidence of miscalibration (p = 0.31, n = 300); ECE 6.9 % [0.0, 9.0] at 95%'
    >>> round(report["ece"], 3), report["n_samples"]
    (0.069, 300)
    """

    #: the level of the intervals (None: the report has none)
    confidence_level = None
    #: keys this report cannot hold (dask input), each raising a KeyError
    #: that says why
    unavailable = ()
    #: the segment audit (a report asked with ``segments``), else None
    audit = None

    def __missing__(self, key):
        if key == "verdict" and "calibration_pvalue" in self:
            warnings.warn(
                'report["verdict"] is deprecated: the report holds numbers; '
                "read the verdict as report.verdict (print(report) shows it "
                "above the table). The key will be removed in a future release.",
                FutureWarning,
                stacklevel=2,
            )
            return self.verdict
        if key in self.unavailable:
            raise KeyError(
                f"{key!r} is not available on dask input: it needs all samples "
                "at once (equal-mass bins, a sort, or resampling); compute it "
                "with calibration_report on an in-memory sample."
            )
        raise KeyError(key)

    @property
    def verdict(self):
        """The conclusion in words, read from the report's own rows.

        None when the report has no intervals (``confidence_level=None``).
        """
        if "calibration_pvalue" not in self or self.confidence_level is None:
            return None
        return verdict(self, self.confidence_level)

    def __str__(self):
        return format_report(self)


class DaskReport(CalibrationReport):
    """The report of dask arrays: a dict of the streamable metrics whose
    missing keys say why they are missing. ``report["smooth_ece"]`` raises a
    ``KeyError`` that names the reason (the metric needs all samples at
    once); ``report.unavailable`` lists those keys."""

    unavailable = DASK_MISSING


def _percent(value):
    return f"{100 * value:.1f}"


def direction(report):
    """ "over-confident", "under-confident" or None, from the report's rows:
    a direction is named when the interval of ``"confidence_gap"`` (mean
    confidence minus accuracy) excludes 0 on that side and at least three
    quarters of the ECE is of that sign (``|confidence_gap| >= ece / 2``,
    as ``ece = over + under`` and ``confidence_gap = over - under``)."""
    ci = report.get("confidence_gap_ci")
    if ci is None:
        return None
    gap, ece = report["confidence_gap"], report["ece"]
    enough = abs(gap) >= (2 * DIRECTION_SHARE - 1) * ece
    if ci[0] > 0 and enough:
        return "over-confident"
    if ci[1] < 0 and enough:
        return "under-confident"
    return None


def verdict(report, confidence_level):
    """The report's conclusion in words, from its own rows.

    "no evidence of miscalibration (p = 0.41, n = 500); ECE 2.6 % [0.0, 4.6]
    at 95%" when the consistency test does not reject; "weak evidence ..."
    when it rejects while the ECE's interval still reaches 0 (so that the
    words never contradict the interval printed beside them); otherwise
    "over-confident: ECE 4.1 % [2.9, 5.3] at 95% (p < 0.001, n = 500); ..."
    when :func:`direction` names one, and "miscalibrated in both directions:
    ..." when it does not, followed by the over- and under-confident parts
    of the ECE (and, for a direction, the mean confidence minus accuracy
    with its interval): the words follow from the rows shown beside them.
    """
    p, n = report["calibration_pvalue"], report["n_samples"]
    # two significant digits: 0.051 is not rounded down to the level 0.05
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
    low, high = report["ece_ci"]
    ece = (
        f"ECE {_percent(report['ece'])} % [{_percent(low)}, {_percent(high)}]"
        f" at {confidence_level:.0%}"
    )
    if p >= 1.0 - confidence_level:
        return f"no evidence of miscalibration ({p_text}, n = {n}); {ece}"
    if low <= 0.0:
        return f"weak evidence of miscalibration ({p_text}, n = {n}); {ece}"
    parts = (
        f"over-confident part {_percent(report['ece_over'])} %, "
        f"under-confident part {_percent(report['ece_under'])} %"
    )
    kind = direction(report)
    if kind is None:
        return f"miscalibrated in both directions: {ece} ({p_text}, n = {n}); {parts}"
    g_low, g_high = report["confidence_gap_ci"]
    gap = (
        f"mean confidence - accuracy {_percent(report['confidence_gap'])} % "
        f"[{_percent(g_low)}, {_percent(g_high)}]"
    )
    return f"{kind}: {ece} ({p_text}, n = {n}); {parts}; {gap}"


def _cell(report, key, percent):
    value = report[key]
    if value is None:
        return "n/a"

    def shown(v):
        return f"{100.0 * v:.2f}" if percent else f"{v:.4g}"

    text = shown(value)
    ci = report.get(f"{key}_ci")
    if ci is not None:
        text += f" [{shown(ci[0])}, {shown(ci[1])}]"
    return text


def _segment_lines(report):
    """The segment audit's verdict and worst segments (first in the text)."""
    if "segment_verdict" not in report:
        return []
    lines = [f"segments: {report['segment_verdict']}"]
    for row in report["worst_segments"]:
        name = row["segment"]
        if row.get("class_label") is not None:
            name += f" [class {row['class_label']}]"
        gap, low, high = (100 * row[k] for k in ("gap", "gap_low", "gap_high"))
        lines.append(
            f"  {name}: n = {row['n_rows']}, gap {gap:+.1f} % "
            f"[{low:+.1f}, {high:+.1f}], adjusted p = {row['pvalue']:.2g}"
        )
    return lines


def format_report(report):
    """The report as text: the verdict (where there is one), then a line per
    row of :data:`~sklcalib._utils._metric_display.REPORT_ROWS` it holds,
    values in percent where the row says so, intervals in brackets."""
    rows = [
        (label, _cell(report, key, pct))
        for key, label, pct in REPORT_ROWS
        if key in report
    ]
    width = max(len(label) for label, _ in rows)
    lines = _segment_lines(report)
    lines += [] if report.verdict is None else [report.verdict]
    lines += [f"{label.ljust(width)}  {cell}" for label, cell in rows]
    lines.append(f"{'samples'.ljust(width)}  {report['n_samples']}")
    return "\n".join(lines)


@fill_doc
def calibration_report(
    y_true,
    y_prob,
    *,
    n_bins=15,
    labels=None,
    sample_weight=None,
    confidence_level=0.95,
    n_resamples="deprecated",
    random_state=None,
    segments=None,
):
    """All calibration metrics of a set of predictions, validated once.

    The inputs are validated once and every metric is computed from the
    validated arrays, so the report costs no more than its metrics called one
    by one. The result is a dict of numbers; ``print(report)`` shows them as
    a table, opened by the verdict in words (:attr:`CalibrationReport.verdict`).

    Parameters
    ----------
    y_true, y_prob : array-like
        The labels (n_samples,) and the predicted probabilities (n_samples,
        n_classes) or (n_samples,) of
        :func:`~sklcalib.metrics.expected_calibration_error`, checked once
        for every metric of the report.
    n_bins : int, default=15
        Number of bins of the binned metrics.
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights; every entry is a weighted mean. A row of weight 0 is
        no row (it moves no equal-mass bin edge, no bandwidth, and is not
        counted in ``"n_samples"``); rescaling every weight by one factor
        changes nothing.
    confidence_level : float or None, default=0.95
        With a level in (0, 1) (the default), the report adds
        ``"<key>_ci": (low, high)``, intervals of the *population* value
        (:func:`~sklcalib.metrics.calibration_error_interval`: they cover the
        model's error, hold the estimate, and are simulated per bin, so they
        cost milliseconds at any size) for ``"ece"``, ``"adaptive_ece"``,
        ``"classwise_ece"``, ``"debiased_ece"``, ``"nll"`` and ``"brier"``
        (None for ``"nll"`` and ``"brier"`` on fewer than two rows with
        positive weight: a mean of one row has no standard error);
        ``"calibration_pvalue"``, the p-value of the consistency test of the
        ECE (the test whose acceptance puts 0 in the ECE's interval);
        ``"confidence_gap_ci"``, the normal interval of the mean confidence
        minus the accuracy; and the verdict in words
        (:attr:`CalibrationReport.verdict`). ``None`` turns them off.
    n_resamples : int
        Deprecated and ignored (the intervals simulate their own draws per
        bin); passing it warns. It will be removed in a future release.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the intervals' simulation (and the segment audit's).
    segments : DataFrame, array-like or dict, default=None
        With segments (columns to build them from, or boolean masks, as
        :func:`~sklcalib.metrics.multicalibration_audit` takes them), the
        report opens with the segment audit: is the model calibrated in
        every segment, at the family-wise level ``1 - confidence_level``
        (0.05 without intervals), and which segments are worst. The audit
        runs with its defaults; call
        :func:`~sklcalib.metrics.multicalibration_audit` for its options.

    Returns
    -------
    report : CalibrationReport
        A dict of numbers (``s99_accuracy`` may be None) under the keys

        - ``"ece"``: top-label ECE, uniform bins, L1;
        - ``"ece_l2"``: the same with the L2 norm;
        - ``"ece_over"``, ``"ece_under"``: the over- and under-confidence parts
          of the ECE, ``sum_b (n_b/N) max(conf_b - acc_b, 0)`` and
          ``sum_b (n_b/N) max(acc_b - conf_b, 0)``; they add up to ``"ece"``;
        - ``"confidence_gap"``: the mean confidence minus the accuracy (the
          signed gap; it equals ``ece_over - ece_under``), positive for an
          over-confident model;
        - ``"adaptive_ece"``: equal-mass bins (AdaECE);
        - ``"classwise_ece"``: mean over the columns of the per-class ECE;
        - ``"mce"``: maximum calibration error (uniform bins);
        - ``"smooth_ece"``: smooth ECE (relplot's smECE);
        - ``"nll"``: negative log-likelihood of the true class, probabilities
          clipped at the machine epsilon of the dtype as ``log_loss`` does;
        - ``"brier"``: ``sum_k (p_k - [y = k])^2`` averaged over samples (the
          multiclass Brier score; a 1-D binary input counts two columns, so it is
          twice scikit-learn's binary ``brier_score_loss``);
        - ``"accuracy"`` and ``"error"`` (= 1 - accuracy) of the top label;
        - ``"s99_fraction"``: fraction of samples with confidence >= 0.99;
        - ``"s99_accuracy"``: the accuracy on those samples, None if there are
          none (Mukhoti et al., 2020, Table 6);
        - ``"debiased_ece"``: Kumar et al.'s debiased **L2** error, the root
          of a mean squared gap (not comparable with the L1 ``"ece"``)
          (:func:`~sklcalib.metrics.debiased_calibration_error`, top label);
        - ``"ece_sweep"``: the monotonic-sweep ECE
          (:func:`~sklcalib.metrics.ece_sweep`);
        - ``"skce"``: the squared kernel calibration error
          (:func:`~sklcalib.metrics.kernel_calibration_error`) with its
          default ``estimator="auto"``: the unbiased estimator (exact in
          O(n log n) for binary problems, up to 10 000 rows otherwise) and
          the block estimator beyond; None for fewer than two rows with
          positive weight;
        - ``"n_samples"``: the number of samples of positive weight (an int);
        - ``"cumulative_kuiper"``, ``"cumulative_ks"``: the cumulative
          calibration errors (:func:`~sklcalib.metrics.cumulative_calibration_error`;
          the positive class's probability of a binary problem, the top
          label otherwise);
        - with ``confidence_level``: ``"<key>_ci"``, ``"calibration_pvalue"``
          and ``"confidence_gap_ci"``;
        - with ``segments``, first: the entries of
          :meth:`MulticalibrationAudit.report_entries
          <sklcalib.metrics.MulticalibrationAudit.report_entries>`
          (``"segment_verdict"``, ``"multicalibration_pvalue"``,
          ``"n_segments"``, ``"worst_segment"``, ``"worst_segment_gap"``,
          ``"worst_segment_gap_ci"``, ``"worst_segments"``, ...); the audit
          itself is :attr:`CalibrationReport.audit`.

        The verdict in words is :attr:`CalibrationReport.verdict`
        (``report["verdict"]`` still works, with a ``FutureWarning``), and
        ``str(report)`` the table that ``sklcalib report`` prints.

        With dask arrays, the report is computed chunk by chunk (see
        :class:`~sklcalib.metrics.CalibrationAccumulator`) and holds the
        keys that stream: ``"ece"``, ``"ece_l2"``, ``"ece_over"``,
        ``"ece_under"``, ``"classwise_ece"``, ``"mce"``, ``"nll"``,
        ``"brier"``, ``"accuracy"``, ``"error"`` and ``"n_samples"``. The
        others (equal-mass, smooth, S99, sweep, SKCE, the intervals, the test
        and the verdict) need all samples at once: asking for one, e.g.
        ``report["smooth_ece"]``, raises a ``KeyError`` that says so, and
        ``report.unavailable`` lists them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import calibration_report
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    >>> report = calibration_report([0, 1, 1, 1], y_prob, n_bins=5)
    >>> report["ece"], report["accuracy"]
    (0.25, 0.75)
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, size=1000)
    >>> y = rng.uniform(size=1000) < p**3  # over-confident
    >>> report = calibration_report(y, p, random_state=0)
    >>> print(report)  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    over-confident: ECE 26.0 % [23.3, 28.6] at 95% (p < 0.001, n = 1000); ...
    accuracy (%)             49.90
    ECE (%)                  25.99 [23.33, 28.61]
    ...
    """
    n_bins = check_n_bins(n_bins)
    if not (isinstance(n_resamples, str) and n_resamples == "deprecated"):
        warnings.warn(
            "n_resamples is deprecated and has no effect: the intervals simulate "
            "their own draws per bin. Stop passing it; it will be removed in a "
            "future release.",
            FutureWarning,
            stacklevel=2,
        )
    if confidence_level is not None:
        confidence_level = check_confidence_level(confidence_level)
    if any_dask(y_true, y_prob, sample_weight):
        if segments is not None:
            reject_dask(
                "the segment audit sorts the rows of every segment by score",
                "Compute the report with segments on in-memory arrays "
                "(y_true.compute(), y_prob.compute()), or without segments.",
                y_true=y_true,
                y_prob=y_prob,
                sample_weight=sample_weight,
            )
        values = stream_statistics(
            y_true,
            y_prob,
            n_bins=n_bins,
            labels=labels,
            sample_weight=sample_weight,
        ).compute()
        values["confidence_gap"] = values["ece_over"] - values["ece_under"]
        return DaskReport(values)
    # the one validation: every metric below reads these arrays
    y_idx, p, classes, w = check_targets(y_true, y_prob, labels, sample_weight)
    p = check_prob_values(p)
    values, top = _metrics(y_idx, p, w, n_bins)
    audit = None
    if segments is not None:  # its verdict and worst segments come first
        audit = multicalibration_audit(
            y_true,
            y_prob,
            segments,
            labels=classes,
            sample_weight=sample_weight,
            confidence_level=0.95 if confidence_level is None else confidence_level,
            random_state=random_state,
        )
        values = {**audit.report_entries(), **values}
    report = CalibrationReport(values)
    report.audit = audit
    if confidence_level is not None:
        report.confidence_level = confidence_level
        report.update(
            _intervals(report, y_idx, p, w, top, n_bins, confidence_level, random_state)
        )
        gap_terms = top[0].astype(np.float64) - top[1]
        report["confidence_gap_ci"] = _mean_interval(gap_terms, w, confidence_level)
    return report


def _metrics(y_idx, p, w, n_bins):
    """Every metric of validated inputs (``w`` without zero weights), and the
    top label's ``(confidence, correct)`` (the intervals' cells reuse it)."""
    conf, correct = top_label(p, y_idx)
    uniform = _bin_statistics(conf, correct, n_bins, "uniform", w)
    quantile = _bin_statistics(conf, correct, n_bins, "quantile", w)
    frac, gaps = calibration_gaps(uniform)
    classwise = np.mean(
        [
            error_from_stats(stats)
            for stats in classwise_statistics(p, y_idx, n_bins, "uniform", w)
        ]
    )
    nll, brier = row_scores(p, y_idx)
    n = y_idx.shape[0]
    confident = conf >= S99_THRESHOLD
    accuracy = weighted_mean(correct, w)
    s99_accuracy = None
    if confident.any():
        s99_accuracy = weighted_mean(
            correct[confident], None if w is None else w[confident]
        )
    debiased = np.sqrt(max(debiased_square_error(conf, correct, n_bins, w), 0.0))
    gap_terms = conf.astype(np.float64) - correct
    # the cumulative errors of the positive class (binary) or the top label,
    # both from one sort
    _, columns, _ = score_columns(p, y_idx, "auto")
    kuiper, ks, _ = cumulative_statistics(*columns[0], w)
    values = {
        "ece": error_from_stats(uniform, "l1"),
        "ece_l2": error_from_stats(uniform, "l2"),
        "ece_over": float(np.dot(frac, np.maximum(gaps, 0.0))),
        "ece_under": float(np.dot(frac, np.maximum(-gaps, 0.0))),
        "confidence_gap": weighted_mean(gap_terms, w),
        "adaptive_ece": error_from_stats(quantile, "l1"),
        "classwise_ece": float(classwise),
        "mce": error_from_stats(uniform, "max"),
        "smooth_ece": smooth_ece_fixed_point(conf, correct, w)[0],
        "nll": weighted_mean(nll, w),
        "brier": weighted_mean(brier, w),  # a mean of squares: no clamp needed
        "accuracy": accuracy,
        "error": 1.0 - accuracy,
        "s99_fraction": weighted_mean(confident, w),
        "s99_accuracy": s99_accuracy,
        "debiased_ece": float(debiased),
        "ece_sweep": sweep_error(conf, correct, w),
        # the SKCE averages over pairs of rows
        "skce": validated_skce(y_idx, p, w) if n >= 2 else None,
        "cumulative_kuiper": kuiper,
        "cumulative_ks": ks,
        "n_samples": int(n),
    }
    return values, (conf, correct)


def _intervals(report, y_idx, p, w, top, n_bins, level, random_state):
    """The intervals and the test's p-value, from the validated inputs and
    the report's own estimates (nothing validated or computed twice)."""
    seed = int(stream_seeds(random_state, 1)[0] % 2**32)
    out = {}
    rows = report["n_samples"]
    for key in CI_METRICS:
        if key in ("nll", "brier") and rows < 2:
            # a mean of fewer than two rows has no standard error
            out[f"{key}_ci"] = None
            continue
        ci, pvalue = validated_interval(
            key,
            y_idx,
            p,
            w,
            estimate=report[key],
            confidence_level=level,
            random_state=seed,
            n_bins=n_bins,
            top=top,
        )
        out[f"{key}_ci"] = (ci.low, ci.high)
        if key == "ece":
            out["calibration_pvalue"] = pvalue
    return out


def _mean_interval(terms, w, level):
    """Normal interval of the (weighted) mean of ``terms``; None for fewer
    than two rows."""
    if terms.shape[0] < 2:
        return None
    mean = weighted_mean(terms, w)
    half = float(ndtri(0.5 + level / 2.0)) * mean_standard_error(terms, w)
    return (mean - half, mean + half)
