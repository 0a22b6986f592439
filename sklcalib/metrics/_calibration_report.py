"""``calibration_report``: every metric of the package from one validation."""

import numpy as np

from sklcalib._utils._binning import calibration_gaps, error_from_stats
from sklcalib._utils._resampling import stream_seeds
from sklcalib._utils._scores import row_scores, weighted_mean
from sklcalib._utils._validation import any_dask, check_n_bins

from ._accumulator import stream_statistics
from ._bootstrap import check_confidence_level, check_n_resamples
from ._calibration_error import top_label_inputs
from ._debiased import debiased_calibration_error
from ._intervals import INTERVAL_METRICS, interval_and_pvalue
from ._kernel import kernel_calibration_error
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
    "calibration_pvalue",
    "verdict",
    *(f"{key}_ci" for key in CI_METRICS),
)


class DaskReport(dict):
    """The report of dask arrays: a dict of the streamable metrics whose
    missing keys say why they are missing. ``report["smooth_ece"]`` raises a
    ``KeyError`` that names the reason (the metric needs all samples at
    once); ``report.unavailable`` lists those keys."""

    unavailable = DASK_MISSING

    def __missing__(self, key):
        if key in DASK_MISSING:
            raise KeyError(
                f"{key!r} is not available on dask input: it needs all samples "
                "at once (equal-mass bins, a sort, or resampling); compute it "
                "with calibration_report on an in-memory sample."
            )
        raise KeyError(key)


def verdict(report, confidence_level):
    """The report's conclusion in words, from its calibration test and ECE
    interval: "no evidence of miscalibration (p = 0.41, n = 500)" or
    "over-confident: ECE 4.1 % [2.9, 5.3] (p < 0.001, n = 500)".

    Miscalibration is asserted only when the test rejects *and* the ECE
    interval excludes 0; a test that rejects while the interval still reaches
    0 is reported as weak evidence, so that the words never contradict the
    interval printed beside them.
    """
    p, n = report["calibration_pvalue"], report["n_samples"]
    # two significant digits: 0.051 is not rounded down to the level 0.05
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
    low, high = report["ece_ci"]
    ece = (
        f"ECE {100 * report['ece']:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"
        f" at {confidence_level:.0%}"
    )
    if p >= 1.0 - confidence_level:
        return f"no evidence of miscalibration ({p_text}, n = {n}); {ece}"
    if low <= 0.0:
        return f"weak evidence of miscalibration ({p_text}, n = {n}); {ece}"
    if report["ece_over"] >= report["ece_under"]:
        kind = "over-confident"
    else:
        kind = "under-confident"
    return f"{kind}: {ece} ({p_text}, n = {n})"


def calibration_report(
    y_true,
    y_prob,
    *,
    n_bins=15,
    labels=None,
    sample_weight=None,
    confidence_level=0.95,
    n_resamples=1000,
    random_state=None,
):
    """All calibration metrics of a set of predictions, validated once.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)
        Predicted probabilities, see
        :func:`~sklcalib.metrics.expected_calibration_error`.
    n_bins : int, default=15
        Number of bins of the binned metrics.
    labels : array-like of shape (n_classes,), default=None
        The label of every column of ``y_prob``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights; every entry is a weighted mean.
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
        ECE (the test whose acceptance puts 0 in the ECE's interval); and
        ``"verdict"``, the conclusion in words. ``None`` turns all three off.
    n_resamples : int, default=1000
        Kept for compatibility; the intervals simulate their own draws.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the intervals' simulation.

    Returns
    -------
    report : dict
        Float values (``s99_accuracy`` may be None) under the keys

        - ``"ece"``: top-label ECE, uniform bins, L1;
        - ``"ece_l2"``: the same with the L2 norm;
        - ``"ece_over"``, ``"ece_under"``: the over- and under-confidence parts
          of the ECE, ``sum_b (n_b/N) max(conf_b - acc_b, 0)`` and
          ``sum_b (n_b/N) max(acc_b - conf_b, 0)``; they add up to ``"ece"``;
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
        - ``"debiased_ece"``: Kumar et al.'s debiased L2 error
          (:func:`~sklcalib.metrics.debiased_calibration_error`, top label);
        - ``"ece_sweep"``: the monotonic-sweep ECE
          (:func:`~sklcalib.metrics.ece_sweep`);
        - ``"skce"``: the squared kernel calibration error
          (:func:`~sklcalib.metrics.kernel_calibration_error`) with its
          default ``estimator="auto"``: the unbiased estimator (exact in
          O(n log n) for binary problems, up to 10 000 rows otherwise) and
          the block estimator beyond; None for fewer than two rows with
          positive weight;
        - ``"n_samples"``: the number of samples (an int);
        - with ``confidence_level``: ``"<key>_ci"``, ``"calibration_pvalue"``
          and ``"verdict"`` (a str: "no evidence of miscalibration (p = 0.41,
          n = 500); ECE ..." or "over-confident: ECE 4.1 % [2.9, 5.3] at 95 %
          (p < 0.001, n = 500)").

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
    """
    n_bins = check_n_bins(n_bins)
    if confidence_level is not None:
        confidence_level = check_confidence_level(confidence_level)
        n_resamples = check_n_resamples(n_resamples)
    if any_dask(y_true, y_prob, sample_weight):
        return DaskReport(
            stream_statistics(
                y_true,
                y_prob,
                n_bins=n_bins,
                labels=labels,
                sample_weight=sample_weight,
            ).compute()
        )
    conf, correct, w, y_idx, p = top_label_inputs(y_true, y_prob, labels, sample_weight)
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
    s99_fraction = weighted_mean(confident, w)
    if confident.any():
        w99 = None if w is None else w[confident]
        s99_accuracy = (
            weighted_mean(correct[confident], w99)
            if w99 is None or w99.sum() > 0
            else None
        )
    else:
        s99_accuracy = None
    smooth, _ = smooth_ece_fixed_point(conf, correct, w)
    fixed = {"labels": labels, "sample_weight": sample_weight}
    skce = None
    # rows with positive weight: the SKCE averages over pairs of them
    rows = n if w is None else int(np.count_nonzero(w > 0))
    if rows >= 2:
        skce = kernel_calibration_error(y_true, y_prob, **fixed)
    report = {
        "ece": error_from_stats(uniform, "l1"),
        "ece_l2": error_from_stats(uniform, "l2"),
        "ece_over": float(np.dot(frac, np.maximum(gaps, 0.0))),
        "ece_under": float(np.dot(frac, np.maximum(-gaps, 0.0))),
        "adaptive_ece": error_from_stats(quantile, "l1"),
        "classwise_ece": float(classwise),
        "mce": error_from_stats(uniform, "max"),
        "smooth_ece": smooth,
        "nll": weighted_mean(nll, w),
        "brier": weighted_mean(brier, w),  # a mean of squares: no clamp needed
        "accuracy": accuracy,
        "error": 1.0 - accuracy,
        "s99_fraction": s99_fraction,
        "s99_accuracy": s99_accuracy,
        "debiased_ece": debiased_calibration_error(
            y_true, y_prob, n_bins=n_bins, **fixed
        ),
        "ece_sweep": sweep_error(conf, correct, w),
        "skce": skce,
        "n_samples": int(n),
    }
    if confidence_level is not None:
        seed = int(stream_seeds(random_state, 1)[0] % 2**32)
        for key in CI_METRICS:
            if key in ("nll", "brier") and rows < 2:
                # a mean of fewer than two rows has no standard error
                report[f"{key}_ci"] = None
                continue
            binned = {} if key in ("nll", "brier") else {"n_bins": n_bins}
            ci, pvalue = interval_and_pvalue(
                y_true,
                y_prob,
                metric=key,
                confidence_level=confidence_level,
                random_state=seed,
                **binned,
                **fixed,
            )
            report[f"{key}_ci"] = (ci.low, ci.high)
            if key == "ece":
                report["calibration_pvalue"] = pvalue
        report["verdict"] = verdict(report, confidence_level)
    return report
