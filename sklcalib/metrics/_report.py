"""``calibration_report``: every metric of the package from one validation."""

import numpy as np

from sklcalib._utils._binning import _bin_statistics, calibration_gaps, error_from_stats
from sklcalib._utils._resampling import stream_seeds
from sklcalib._utils._validation import any_dask, check_n_bins

from ._accumulator import stream_statistics
from ._bootstrap import bootstrap_interval, check_confidence_level, check_n_resamples
from ._calibration_error import top_label_inputs
from ._debiased import debiased_calibration_error
from ._kernel import kernel_calibration_error
from ._smooth import smooth_ece_fixed_point
from ._statistics import classwise_statistics, score_terms
from ._sweep import sweep_error

S99_THRESHOLD = 0.99
#: report keys that get a bootstrap interval, and the metric behind each
CI_METRICS = {
    "ece": "ece",
    "adaptive_ece": "adaptive_ece",
    "classwise_ece": "classwise_ece",
    "smooth_ece": "smooth_ece",
    "debiased_ece": "debiased_ece",
    "nll": "nll",
    "brier": "brier",
}


def _weighted_mean(values, w):
    return float(np.mean(values) if w is None else np.dot(values, w) / w.sum())


def calibration_report(
    y_true,
    y_prob,
    *,
    n_bins=15,
    labels=None,
    sample_weight=None,
    confidence_level=None,
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
    confidence_level : float or None, default=None
        With a level in (0, 1), the report adds ``"<key>_ci": (low, high)``,
        percentile bootstrap intervals (rows resampled jointly, see
        :func:`~sklcalib.metrics.bootstrap_interval`) for ``"ece"``,
        ``"adaptive_ece"``, ``"classwise_ece"``, ``"smooth_ece"``,
        ``"debiased_ece"``, ``"nll"`` and ``"brier"``.
    n_resamples : int, default=1000
        Bootstrap resamples per interval.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the bootstrap (every interval uses the same resampled rows).

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
          the block estimator beyond; None for a single row;
        - ``"n_samples"``: the number of samples (an int);
        - with ``confidence_level``: ``"<key>_ci"`` as above.

        With dask arrays, the report is computed chunk by chunk (see
        :class:`~sklcalib.metrics.CalibrationAccumulator`) and holds only the
        keys that stream: ``"ece"``, ``"ece_l2"``, ``"ece_over"``,
        ``"ece_under"``, ``"classwise_ece"``, ``"mce"``, ``"nll"``,
        ``"brier"``, ``"accuracy"``, ``"error"`` and ``"n_samples"``; the
        equal-mass, smooth and S99 entries need all samples at once (compute
        them on an in-memory sample).

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
        if confidence_level is not None:
            raise ValueError(
                "confidence_level needs the samples in memory (the bootstrap "
                "resamples rows); compute the intervals on an in-memory sample."
            )
        return stream_statistics(
            y_true, y_prob, n_bins=n_bins, labels=labels, sample_weight=sample_weight
        ).compute()
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
    nll, brier = score_terms(p, y_idx)
    n = y_idx.shape[0]

    confident = conf >= S99_THRESHOLD
    accuracy = _weighted_mean(correct, w)
    s99_fraction = _weighted_mean(confident, w)
    if confident.any():
        w99 = None if w is None else w[confident]
        s99_accuracy = (
            _weighted_mean(correct[confident], w99)
            if w99 is None or w99.sum() > 0
            else None
        )
    else:
        s99_accuracy = None
    smooth, _ = smooth_ece_fixed_point(conf, correct, w)
    fixed = {"labels": labels, "sample_weight": sample_weight}
    skce = None
    if n >= 2:
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
        "nll": _weighted_mean(nll, w),
        "brier": max(_weighted_mean(brier, w), 0.0),
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
        # one seed for all: every interval sees the same resampled rows
        seed = int(stream_seeds(random_state, 1)[0] % 2**32)
        for key, metric in CI_METRICS.items():
            binned = (
                {} if metric in ("smooth_ece", "nll", "brier") else {"n_bins": n_bins}
            )
            ci = bootstrap_interval(
                metric,
                y_true,
                y_prob,
                n_resamples=n_resamples,
                confidence_level=confidence_level,
                random_state=seed,
                **binned,
                **fixed,
            )
            report[f"{key}_ci"] = (ci.low, ci.high)
    return report
