"""The seed-paper style calibration benchmark behind ``sklcalib benchmark``.

The command line is :mod:`sklcalib.cli`. Running, tables and figures apart:

- running: ``runner`` trains and evaluates one (dataset, loss, seed) net run;
  ``tabular`` fits gradient boosting (and the other base models) and the
  post-hoc calibrators on one split of a real tabular set; ``chance`` says
  which runs learnt nothing;
- tables: ``tables`` writes the net runs' ``results.csv`` and ``results.md``,
  ``boosting_tables`` the post-hoc runs' ``boosting.csv`` and their section of
  ``results.md``, ``summary`` the terminal summary;
- figures: ``figures`` draws the reliability diagrams and the curvature plot;
- ``outputs``: one folder per run.
"""

from sklcalib.benchmark.runner import DEFAULT_LOSSES, METRICS, run_one

__all__ = ["DEFAULT_LOSSES", "METRICS", "run_one"]
