"""How tables show the metrics of the registry: one label and one percent flag
per metric, for the benchmark tables, the tabular report and ``sklcalib
report`` (in ``_utils`` so that those packages may import it; the registry of
the functions is ``sklcalib.metrics._registry.METRICS``, with the same keys);
and the rows of :func:`~sklcalib.metrics.calibration_report`'s table
(:data:`REPORT_ROWS`). Every L2 quantity says so in its label.
"""

from typing import NamedTuple


class MetricDisplay(NamedTuple):
    """How the tables show a metric."""

    #: column label of the benchmark tables
    short: str
    #: row label of ``sklcalib report``
    long: str
    #: a proportion, shown in percent (the papers' convention for the ECEs)
    percent: bool

    def label(self, *, long=False):
        """The label, with " (%)" for a metric shown in percent."""
        text = self.long if long else self.short
        return f"{text} (%)" if self.percent else text


#: the display of every metric of the registry (tests/test_metric_tables.py
#: checks that the keys are those of ``METRICS``)
DISPLAY = {
    "ece": MetricDisplay("ECE", "ECE", True),
    "adaptive_ece": MetricDisplay("AdaECE", "adaptive ECE", True),
    "classwise_ece": MetricDisplay("CwECE", "classwise ECE", True),
    "mce": MetricDisplay("MCE", "MCE", True),
    "smooth_ece": MetricDisplay("smECE", "smooth ECE", True),
    "debiased_ece": MetricDisplay("dECE", "debiased L2 ECE", True),
    "ece_sweep": MetricDisplay("ECE-sweep", "ECE-sweep", True),
    "kernel_calibration_error": MetricDisplay("SKCE", "SKCE", False),
    "cumulative_kuiper": MetricDisplay("Kuiper", "cumulative error, Kuiper", True),
    "cumulative_ks": MetricDisplay("KS", "cumulative error, KS", True),
    "nll": MetricDisplay("NLL", "NLL", False),
    "brier": MetricDisplay("Brier", "Brier", False),
}


def _row(key, metric=None):
    shown = DISPLAY[metric or key]
    return (key, shown.label(long=True), shown.percent)


#: the rows of a calibration report's table: report key, label, shown in
#: percent (the text form of ``calibration_report`` and ``sklcalib report``)
REPORT_ROWS = (
    ("accuracy", "accuracy (%)", True),
    ("ece", "ECE (%)", True),
    ("ece_over", "  over-confident part (%)", True),
    ("ece_under", "  under-confident part (%)", True),
    ("confidence_gap", "mean confidence - accuracy (%)", True),
    ("ece_l2", "ECE, L2 norm (%)", True),
    *map(_row, ("adaptive_ece", "classwise_ece", "mce", "smooth_ece")),
    *map(_row, ("debiased_ece", "ece_sweep", "cumulative_kuiper", "cumulative_ks")),
    _row("skce", "kernel_calibration_error"),
    _row("nll"),
    _row("brier"),
    ("s99_fraction", "confidence >= 0.99 (% of samples)", True),
    ("s99_accuracy", "  their accuracy (%)", True),
)
