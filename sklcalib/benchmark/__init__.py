"""The seed-paper style calibration benchmark behind the ``sklcalib`` command.

``cli`` parses the command line, ``runner`` trains and evaluates one
(dataset, loss, seed) run, ``report`` writes the csv, the markdown tables and
the reliability diagrams; ``tabular`` fits gradient boosting and the post-hoc
calibrators on the real tabular sets and reports them.
"""

from sklcalib.benchmark.cli import main
from sklcalib.benchmark.runner import DEFAULT_LOSSES, METRICS, run_one

__all__ = ["DEFAULT_LOSSES", "METRICS", "main", "run_one"]
