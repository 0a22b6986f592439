"""How tables show the metrics of the registry: one label and one percent flag
per metric, for the benchmark tables, the tabular report and ``sklcalib
report`` (in ``_utils`` so that those packages may import it; the registry of
the functions is ``sklcalib.metrics._registry.METRICS``, with the same keys).
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
    "debiased_ece": MetricDisplay("dECE", "debiased ECE", True),
    "ece_sweep": MetricDisplay("ECE-sweep", "ECE-sweep", True),
    "kernel_calibration_error": MetricDisplay("SKCE", "SKCE", False),
    "nll": MetricDisplay("NLL", "NLL", False),
    "brier": MetricDisplay("Brier", "Brier", False),
}
