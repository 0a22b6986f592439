"""The seed-paper style calibration benchmark behind ``sklcalib benchmark``.

The command line is :mod:`sklcalib.cli`; here ``runner`` trains and evaluates one
(dataset, loss, seed) run, ``report`` writes the csv, the markdown tables and
the reliability diagrams; ``tabular`` fits gradient boosting and the post-hoc
calibrators on the real tabular sets and reports them.
"""

from sklcalib.benchmark.runner import DEFAULT_LOSSES, METRICS, run_one

__all__ = ["DEFAULT_LOSSES", "METRICS", "run_one"]
