"""``calibrator="auto"`` on real tabular sets against no calibration and the
hindsight-best single calibrator (issue 20's targets), with the tabular
benchmark's own functions.

For each dataset and seed, ``run_boosting`` fits HistGradientBoosting and
logistic regression, then every calibrator and ``auto`` on the validation
split through ``CalibratedClassifier(FrozenEstimator(model), ...)``; each
line prints auto's relative change of the test log-loss against no
calibration with its 95 % paired interval and its absolute excess over no
calibration (nats), and ``auto_check`` says in how many (dataset, model)
cells auto is significantly worse than no calibration and how far its
geometric-mean log-loss lies above the best single calibrator chosen with
hindsight. The last line gives the largest absolute excess of auto's test
log-loss over no calibration on any split (the target: at most 0.01, wine's
36 calibration rows included).

Run: ``python benchmarks/auto_tabular_check.py wine breast_cancer digits
credit default titanic wa_churn mlc_churn cells hpc [--seeds 5]`` (about 2
minutes for two seeds, 44-105 s on a loaded 2-core machine).
"""

import json
import sys
import time
import warnings

from sklcalib.benchmark.boosting_tables import auto_check
from sklcalib.benchmark.tabular import available_calibrators, run_boosting


def main(datasets, seeds=(0, 1)):
    worst = (-float("inf"), None)
    # the netcal beta adapter is slow and optional; the native beta is kept
    calibrators = [c for c in available_calibrators() if c != "beta_netcal"]
    rows = []
    start = time.time()
    for ds in datasets:
        for seed in seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows += run_boosting(
                    ds, seed, calibrators=calibrators, models=("hgb", "logreg")
                )
        raw = {
            (r["model"], r["seed"]): r["nll"]
            for r in rows
            if r["dataset"] == ds and r["calibrator"] == "none"
        }
        auto = [r for r in rows if r["dataset"] == ds and r["calibrator"] == "auto"]
        cells = []
        for r in auto:
            excess = r["nll"] - raw[(r["model"], r["seed"])]
            worst = max(worst, (excess, (ds, r["model"], r["seed"])))
            cells.append(
                (
                    r["model"],
                    r["seed"],
                    round(r["nll_change"], 4),
                    round(r["nll_change_low"], 4),
                    round(r["nll_change_high"], 4),
                    round(excess, 4),
                )
            )
        print(ds, cells, flush=True)
    print(json.dumps(auto_check(rows), default=str))
    print("largest excess of auto's test log-loss over none:", worst)
    print("seconds", round(time.time() - start))


if __name__ == "__main__":
    args = sys.argv[1:]
    n_seeds = 2
    if "--seeds" in args:
        i = args.index("--seeds")
        n_seeds = int(args[i + 1])
        del args[i : i + 2]
    main(args, seeds=tuple(range(n_seeds)))
