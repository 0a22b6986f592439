"""The segment audit: is the model calibrated in every segment, with a
false-alarm rate that is what it says whatever the number of segments."""

from typing import NamedTuple

import numpy as np

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._score_columns import MODES, score_columns
from sklcalib._utils._scores import as_columns
from sklcalib._utils._segment_audit import audit_core, binary_draws, classwise_draws
from sklcalib._utils._segments import build_segments
from sklcalib._utils._validation import (
    check_confidence_level,
    check_n_resamples,
    check_option,
    check_prob_values,
    check_targets,
    reject_dask,
)

from ._cumulative import STATISTICS

#: the columns of :attr:`MulticalibrationAudit.table`, in order ("class"
#: only for classwise audits)
TABLE_COLUMNS = (
    "segment",
    "depth",
    "class",
    "n_rows",
    "weight",
    "mean_prob",
    "outcome_rate",
    "gap",
    "gap_low",
    "gap_high",
    "statistic",
    "sigma",
    "scaled_statistic",
    "pvalue",
    "pvalue_unadjusted",
)


@fill_doc
class SegmentRow(NamedTuple):
    """One audited segment (and class, for a classwise audit).

    Parameters
    ----------
    segment : str
        The segment's description (``"all rows"``, ``"region=north"``,
        ``"region=north & age=(31, 45]"``, or the name of a given mask).
    depth : int
        The number of columns combined (-1 for a given mask).
    class_label : object
        The class of the column audited (classwise audits), else None.
    n_rows : int
        Rows in the segment (rows of weight 0 are no rows).
    weight : float
        The segment's total weight (``n_rows`` without weights).
    mean_prob, outcome_rate : float
        The weighted means of the score and of the outcome.
    gap : float
        ``outcome_rate - mean_prob``: the calibration-in-the-large error;
        positive where the model underestimates.
    gap_low, gap_high : float
        The gap's interval at the audit's confidence level (pointwise: not
        adjusted for the number of segments).
    statistic : float
        The cumulative calibration error of the segment (probability units).
    sigma : float
        Its standard deviation under calibration.
    scaled_statistic : float
        ``statistic / sigma``.
    pvalue : float
        Adjusted for the number of segments: the share of simulated
        calibrated outcomes whose maximum over all segments reaches this
        segment's scaled statistic.
    pvalue_unadjusted : float
        The Brownian limit law of this segment alone.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> from sklcalib.metrics import multicalibration_audit
    >>> p, y = make_binary_scores(600)
    >>> group = [0, 1] * 300
    >>> audit = multicalibration_audit(y, p, group, n_resamples=50, random_state=0)
    >>> row = audit.worst_segments(1)[0]
    >>> row.segment in ("all rows", "x0=0", "x0=1"), row.n_rows >= 30
    (True, True)
    """

    segment: str
    depth: int
    class_label: object
    n_rows: int
    weight: float
    mean_prob: float
    outcome_rate: float
    gap: float
    gap_low: float
    gap_high: float
    statistic: float
    sigma: float
    scaled_statistic: float
    pvalue: float
    pvalue_unadjusted: float


@fill_doc
class MulticalibrationAudit:
    """Result of :func:`multicalibration_audit`.

    Built by :func:`multicalibration_audit`; the parameters are stored as
    attributes of the same names.

    Parameters
    ----------
    table : dict of str to ndarray
        One entry per audited segment (and class), in the order audited;
        ``pandas.DataFrame(audit.table)`` loads it (see :meth:`to_frame`).
        The columns are the fields of :class:`SegmentRow` (``class`` for
        classwise audits, in place of ``class_label``).
    pvalue : float
        The family-wise p-value of "the model is calibrated in every audited
        segment": ``(1 + #{null maximum >= statistic}) / (1 + n_resamples)``.
    statistic : float
        The maximum over segments of the scaled cumulative statistic.
    null_distribution : ndarray of shape (n_resamples,)
        The sorted null maxima.
    null_quantile : float
        The value a segment's scaled statistic must exceed for its adjusted
        p-value to be at most ``1 - confidence_level`` (an order statistic
        of the null maxima, the quantile at ``confidence_level``).
    worst_interval : tuple of float
        An interval for the worst segment's gap, valid although the segment
        was chosen as the worst: simultaneous over all segments (its
        critical value is the null quantile of the largest gap z over
        segments).
    n_segments : int
        The segments audited.
    n_dropped : int
        Segments left out for having fewer than ``min_rows`` rows.
    n_candidates : int
        The non-empty segments looked at (``n_segments + n_dropped``).
    kind : str
        The statistic, ``"kuiper"`` or ``"ks"``.
    mode : str
        The score, ``"binary"``, ``"top_label"`` or ``"classwise"``.
    confidence_level : float
        The level of the intervals and of ``null_quantile``.

    Attributes
    ----------
    worst : SegmentRow
        The segment (and class) with the largest scaled statistic.
    n_resamples : int
        The number of null draws.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import multicalibration_audit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p
    >>> group = rng.integers(0, 3, size=1000)
    >>> audit = multicalibration_audit(y, p, group, n_resamples=99, random_state=0)
    >>> audit.n_segments, audit.n_resamples
    (4, 99)
    >>> bool(audit.pvalue > 0.05)
    True
    """

    def __init__(
        self,
        *,
        table,
        pvalue,
        statistic,
        null_distribution,
        null_quantile,
        worst_interval,
        n_segments,
        n_dropped,
        n_candidates,
        kind,
        mode,
        confidence_level,
    ):
        self.table = table
        self.pvalue = pvalue
        self.statistic = statistic
        self.null_distribution = null_distribution
        self.null_quantile = null_quantile
        self.worst_interval = worst_interval
        self.n_segments = n_segments
        self.n_dropped = n_dropped
        self.n_candidates = n_candidates
        self.kind = kind
        self.mode = mode
        self.confidence_level = confidence_level
        self.n_resamples = int(np.shape(null_distribution)[0])
        self.worst = self._row(int(np.argmax(table["scaled_statistic"])))

    def _row(self, i):
        t = self.table
        return SegmentRow(
            str(t["segment"][i]),
            int(t["depth"][i]),
            t["class"][i] if "class" in t else None,
            int(t["n_rows"][i]),
            *(float(t[k][i]) for k in TABLE_COLUMNS[4:]),
        )

    def worst_segments(self, k=5):
        """Return the ``k`` worst segments.

        Parameters
        ----------
        k : int, default=5
            How many.

        Returns
        -------
        rows : list of SegmentRow
            The rows of the table with the largest scaled statistic, worst
            first.
        """
        order = np.argsort(-self.table["scaled_statistic"], kind="stable")
        return [self._row(i) for i in order[:k]]

    def to_frame(self):
        """Return the table as a ``pandas.DataFrame`` (pandas needed).

        Returns
        -------
        frame : pandas.DataFrame
            One row per audited segment (and class), in the order audited.
        """
        import pandas as pd

        return pd.DataFrame(self.table)

    def verdict(self):
        """Return the audit's conclusion in words.

        Returns
        -------
        verdict : str
            The family-wise verdict at ``1 - confidence_level``, with the worst
            segment and its gap's interval (valid after selection), e.g.
            "miscalibrated in at least one of 15 segments (family-wise p =
            0.022); worst: student=No, gap +1.9 points [+0.1, +5.2]".
        """
        alpha = 1.0 - self.confidence_level
        p = self.pvalue
        p_text = f"family-wise p = {p:.2g}"
        worst = self.worst
        name = worst.segment + (
            f" [class {worst.class_label}]" if worst.class_label is not None else ""
        )
        low, high = self.worst_interval
        gap = (
            f"worst: {name}, gap {100 * worst.gap:+.1f} points "
            f"[{100 * low:+.1f}, {100 * high:+.1f}] at {self.confidence_level:.0%} "
            "after selection"
        )
        if p <= alpha:
            return (
                f"miscalibrated in at least one of {self.n_segments} segments "
                f"({p_text}); {gap}"
            )
        return f"no segment of {self.n_segments} shown miscalibrated ({p_text}); {gap}"

    def summary(self, k=5):
        """Return the verdict and the ``k`` worst segments as lines of text.

        Parameters
        ----------
        k : int, default=5
            How many segments to list.

        Returns
        -------
        lines : list of str
            The family-wise verdict first, then the worst segments.
        """
        lines = [
            f"multicalibration audit ({self.kind}, {self.mode}): {self.verdict()}",
            f"  {self.n_segments} segments audited ({self.n_dropped} below "
            f"min_rows left out), {self.n_resamples} null draws; max scaled "
            f"statistic {self.statistic:.3f}, null {self.confidence_level:g} "
            f"quantile {self.null_quantile:.3f}",
            "  worst segments (gap = outcome rate - mean probability, "
            "pointwise interval):",
        ]
        for row in self.worst_segments(k):
            name = row.segment + (
                f" [class {row.class_label}]" if row.class_label is not None else ""
            )
            lines.append(
                f"    {name}: n={row.n_rows}, gap {row.gap:+.4f} "
                f"[{row.gap_low:+.4f}, {row.gap_high:+.4f}], "
                f"scaled {row.scaled_statistic:.2f}, adjusted p {row.pvalue:.4g}"
            )
        return lines

    def report_entries(self, k=5):
        """Return the audit as the entries of a calibration report.

        Parameters
        ----------
        k : int, default=5
            How many of the worst segments to include.

        Returns
        -------
        entries : dict
            ``"segment_verdict"`` (:meth:`verdict`),
            ``"multicalibration_pvalue"``, ``"multicalibration_statistic"``,
            ``"multicalibration_null_quantile"``, ``"n_segments"``,
            ``"n_segments_dropped"``, ``"worst_segment"``,
            ``"worst_segment_gap"``, ``"worst_segment_gap_ci"`` and
            ``"worst_segments"`` (a list of dicts of numbers and names,
            worst first): plain Python values, ready for JSON.
        """
        worst = self.worst
        return {
            "segment_verdict": self.verdict(),
            "multicalibration_pvalue": float(self.pvalue),
            "multicalibration_statistic": float(self.statistic),
            "multicalibration_null_quantile": float(self.null_quantile),
            "n_segments": int(self.n_segments),
            "n_segments_dropped": int(self.n_dropped),
            "worst_segment": worst.segment,
            "worst_segment_gap": worst.gap,
            "worst_segment_gap_ci": tuple(float(v) for v in self.worst_interval),
            "worst_segments": [
                {
                    key: (value.item() if hasattr(value, "item") else value)
                    for key, value in row._asdict().items()
                }
                for row in self.worst_segments(k)
            ],
        }

    def __repr__(self):
        return (
            f"MulticalibrationAudit(pvalue={self.pvalue:.4g}, "
            f"statistic={self.statistic:.4g}, n_segments={self.n_segments}, "
            f"worst={self.worst.segment!r}, gap={self.worst.gap:+.4g})"
        )

    def __str__(self):
        return "\n".join(self.summary())


def _result(core, segset, classes, class_index, kind, mode, level):
    """The :class:`MulticalibrationAudit` of an :class:`AuditCore`."""
    n_col = core.gap.shape[1]
    table = {
        "segment": np.repeat(np.array(segset.names, dtype=object), n_col),
        "depth": np.repeat(segset.depths, n_col),
    }
    if mode == "classwise":
        labels = np.array([classes[k] for k in class_index], dtype=object)
        table["class"] = np.tile(
            np.array(
                [v.item() if hasattr(v, "item") else v for v in labels], dtype=object
            ),
            segset.n_segments,
        )
    table["n_rows"] = np.repeat(core.n_rows, n_col)
    table["weight"] = np.repeat(core.weight, n_col)
    for key in TABLE_COLUMNS[5:]:
        table[key] = getattr(core, key).ravel()
    return MulticalibrationAudit(
        table=table,
        pvalue=core.pvalue_family,
        statistic=float(core.scaled_statistic[core.worst]),
        null_distribution=core.null_maximum,
        null_quantile=core.null_quantile,
        worst_interval=core.worst_interval,
        n_segments=segset.n_segments,
        n_dropped=segset.n_dropped,
        n_candidates=segset.n_candidates,
        kind=kind,
        mode=mode,
        confidence_level=level,
    )


@fill_doc
def multicalibration_audit(
    y_true,
    y_prob,
    segments,
    *,
    max_depth=2,
    max_levels=5,
    min_rows=30,
    statistic="kuiper",
    mode="auto",
    labels=None,
    sample_weight=None,
    confidence_level=0.95,
    n_resamples=1000,
    random_state=None,
):
    """Audit the calibration of a model in every segment of the data.

    A model can be calibrated on average and off by several points inside a
    region, a device type or an age band. The audit computes, in every
    segment, the calibration-in-the-large gap (outcome rate minus mean
    probability) with its interval and the cumulative calibration statistic
    of :func:`cumulative_calibration_test` in units of its standard
    deviation, and answers "is the model calibrated in every segment?" with
    a p-value whose false-alarm rate is its level however many segments
    there are and however they overlap: the statistic is the maximum over
    segments, and its null law is simulated conditionally on the scores
    (outcomes redrawn from the model's own probabilities, every segment
    recomputed on each draw). Per-segment p-values are adjusted by the same
    law (single-step maxT). An unadjusted minimum of per-segment p-values
    (mcgrad's ``MulticalibrationError.mce_pvalue``) raises false alarms on a
    calibrated model nearly every time once there are hundreds of segments.

    Parameters
    ----------
    %(labels_and_cumulative_probabilities)s
    segments : DataFrame, array-like or dict
        Columns to build the segments from: a pandas DataFrame or Series, a
        numpy structured array (its fields are the columns), or an array of
        shape (n_samples, n_columns) or (n_samples,), numeric or
        categorical. Every combination of levels of up to ``max_depth``
        columns is a segment (depth 0: all rows): a numeric column with more
        than ``max_levels`` distinct values is cut into ``max_levels``
        quantile bins, another column keeps its ``max_levels - 1`` most
        frequent levels and collapses the rest into ``"other"``, and missing
        values are a level ``"missing"`` of their own (as mcgrad builds its
        segments). Or the segments themselves, audited as given: a dict of
        name to boolean mask of shape (n_samples,), or a 2-D boolean array
        of shape (n_samples, n_segments) whose columns are the masks.
    max_depth : int, default=2
        The most columns combined into one segment.
    max_levels : int, default=5
        The most levels (quantile bins) per column, besides ``"missing"``.
    min_rows : int, default=30
        Segments with fewer rows are left out (and counted in
        ``n_dropped``).
    statistic : {"kuiper", "ks"}, default="kuiper"
        The cumulative statistic, see :func:`cumulative_calibration_error`.
    mode : {"auto", "top_label", "classwise"}, default="auto"
        Which score: the positive class's probability (binary), the
        top-label confidence (multiclass), or every class's column
        (``"classwise"``: one row per segment and class, and the maximum runs
        over both).
    %(column_labels)s
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights: weighted sums, variances from the squared weights.
        Rows of weight 0 are no rows (not counted in the segments' sizes nor
        in their quantile bins).
    confidence_level : float, default=0.95
        The level of the intervals and of the null quantile.
    n_resamples : int, default=1000
        Draws of calibrated outcomes for the null law of the maximum.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the draws.

    Returns
    -------
    audit : MulticalibrationAudit
        ``pvalue`` (family-wise), ``statistic`` (the maximum), ``n_segments``,
        ``worst``, ``worst_interval``, ``null_quantile``, ``table``.

    See Also
    --------
    cumulative_calibration_test : The test on all rows at once.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.metrics import multicalibration_audit
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> region = rng.choice(["north", "south", "east", "west"], size=n)
    >>> p = rng.uniform(0.05, 0.95, size=n)
    >>> true_p = np.where(region == "west", np.clip(p + 0.12, 0, 1), p)
    >>> y = rng.uniform(size=n) < true_p
    >>> audit = multicalibration_audit(y, p, region, n_resamples=200, random_state=0)
    >>> audit.worst.segment, bool(audit.pvalue < 0.01)
    ('x0=west', True)
    >>> low, high = audit.worst_interval
    >>> bool(low < 0.12 < high)
    True
    """
    reject_dask(
        "the audit sorts the rows of every segment by their score",
        "Compute it on in-memory arrays (y_true.compute(), y_prob.compute()) "
        "or on an in-memory sample of the rows.",
        y_true=y_true,
        y_prob=y_prob,
        sample_weight=sample_weight,
    )
    check_option(statistic, "statistic", STATISTICS)
    check_option(mode, "mode", MODES)
    level = check_confidence_level(confidence_level)
    n_resamples = check_n_resamples(n_resamples)
    y_idx, p, classes, w = check_targets(
        y_true, y_prob, labels, sample_weight, keep_zero_weight=True
    )
    p = check_prob_values(p)
    keep = None
    if w is not None and not np.all(w > 0):
        keep = w > 0
        y_idx, p, w = y_idx[keep], p[keep], w[keep]
    segset = build_segments(
        segments,
        keep.shape[0] if keep is not None else y_idx.shape[0],
        max_depth=max_depth,
        max_levels=max_levels,
        min_rows=min_rows,
        keep=keep,
    )
    if segset.n_segments == 0:
        raise ValueError(
            f"No segment has at least min_rows={min_rows} rows "
            f"({segset.n_dropped} left out): lower min_rows or pass coarser "
            "segments."
        )
    resolved, columns, class_index = score_columns(p, y_idx, mode)
    if resolved == "classwise":
        draws = classwise_draws(as_columns(p))
    else:
        draws = binary_draws(columns[0][1])
    core = audit_core(
        columns,
        w,
        segset,
        draws=draws,
        statistic=statistic,
        n_resamples=n_resamples,
        confidence_level=level,
        random_state=random_state,
    )
    return _result(core, segset, classes, class_index, statistic, resolved, level)
