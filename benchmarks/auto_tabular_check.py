"""``calibrator="auto"`` on real tabular sets against no calibration and the
hindsight-best single calibrator (issue 20's targets), with the tabular
benchmark's own functions.

For each dataset and seed, ``run_boosting`` fits HistGradientBoosting and
logistic regression, then every calibrator and ``auto`` on the validation
split through ``CalibratedClassifier(FrozenEstimator(model), ...)``; each
line prints auto's relative change of the test log-loss against no
calibration with its 95 % paired interval, and ``auto_check`` says in how
many (dataset, model) cells auto is significantly worse than no calibration
and how far its geometric-mean log-loss lies above the best single
calibrator chosen with hindsight.

Run: ``python benchmarks/auto_tabular_check.py credit default titanic
wa_churn mlc_churn cells hpc`` (two seeds; about 2-3 minutes on one core).
"""

import json
import sys
import time
import warnings

from sklcalib.benchmark.boosting_tables import auto_check
from sklcalib.benchmark.tabular import available_calibrators, run_boosting


def main(datasets, seeds=(0, 1)):
    # the netcal beta adapter is slow and optional; the native beta is kept
    calibrators = [c for c in available_calibrators() if c != "beta"]
    rows = []
    start = time.time()
    for ds in datasets:
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows += run_boosting(
                    ds, seed, calibrators=calibrators, models=("hgb", "logreg")
                )
        auto = [r for r in rows if r["dataset"] == ds and r["calibrator"] == "auto"]
        cells = [
            (
                r["model"],
                r["seed"],
                round(r["nll_change"], 4),
                round(r["nll_change_low"], 4),
                round(r["nll_change_high"], 4),
            )
            for r in auto
        ]
        print(ds, cells, flush=True)
    print(json.dumps(auto_check(rows), default=str))
    print("seconds", round(time.time() - start))


if __name__ == "__main__":
    main(sys.argv[1:])
