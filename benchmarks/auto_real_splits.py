"""``calibrator="auto"`` with and without its do-no-harm step, on real splits.

The splits and base models of ``sklcalib benchmark --suite tabular`` (the
same datasets, seeds, epochs and model seeds, through the benchmark's own
functions): each model is fitted on the training split, then
``CalibratedClassifier(FrozenEstimator(model), "auto")`` on the validation
split. The selection's table holds both rules: the simplest candidate
within one standard error of the best fold log-loss (``within_one_se``,
``n_parameters``: the rule before the do-no-harm step), and the choice
(after it: that candidate must also beat the raw scores by more than one
standard error of the per-row paired differences of the held-out
log-losses, ``delta_log_loss_rows``/``delta_se_rows``). Every candidate the
selection evaluated is refitted on the whole validation split and scored
on the test split, so each line gives the test log-loss of both choices
against the raw model's.

Output: one line per (dataset, model, seed) where the two rules differ,
then per rule the largest test excess over the raw model (the target: at
most 0.01 nats), the mean test change, and how often the raw scores were
kept. The committed run is ``benchmarks/auto_real_splits.txt``.

Run: ``python benchmarks/auto_real_splits.py [--seeds 3] [--models
hgb,logreg,net,lightgbm] [DATASET ...]`` (default: the tabular suite's sets
but diamonds, whose validation split of 10 788 rows the step does not
change; about 70 CPU-seconds, single-threaded).
"""

import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from sklearn.frozen import FrozenEstimator
from threadpoolctl import threadpool_limits

from sklcalib.benchmark.runner import derive_seed
from sklcalib.benchmark.tabular import available_models, make_model
from sklcalib.calibration import CalibratedClassifier
from sklcalib.cli.benchmark_command import DEFAULT_EPOCHS
from sklcalib.datasets import load_dataset

DATASETS = (
    "hpc",
    "cells",
    "credit",
    "lending_club",
    "default",
    "mlc_churn",
    "wa_churn",
    "caravan",
    "titanic",
)


def _nll(y, proba):
    proba = np.asarray(proba, dtype=np.float64)
    p = proba[np.arange(len(y)), y]
    return float(np.mean(-np.log(np.clip(p, np.finfo(np.float64).eps, 1.0))))


def _before(r):
    """The simplest candidate within one standard error (the rule without
    the do-no-harm step)."""
    within = [i for i, w in enumerate(r["within_one_se"]) if w]
    return r["candidate"][min(within, key=lambda i: (r["n_parameters"][i], i))]


def split_result(dataset, model_name, seed):
    """Test log-loss of the raw model and of both rules' choices."""
    data = load_dataset(dataset, random_state=seed)
    model_seed = (
        derive_seed(dataset, seed)
        if model_name == "hgb"
        else derive_seed(f"{dataset}/{model_name}", seed)
    )
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_model(
            model_name, data, model_seed, net_epochs=DEFAULT_EPOCHS.get(dataset, 300)
        ).fit(data.X_train, data.y_train)
        frozen = FrozenEstimator(model)
        raw = _nll(data.y_test, model.predict_proba(data.X_test))
        auto = CalibratedClassifier(frozen, "auto", check_calibration=False)
        auto.fit(data.X_val, data.y_val)
        r = auto.cv_results_
        before, after = _before(r), auto.selected_calibrator_

        def test_nll(name):
            if name == "passthrough":
                return raw
            fitted = CalibratedClassifier(frozen, name, check_calibration=False)
            fitted.fit(data.X_val, data.y_val)
            return _nll(data.y_test, fitted.predict_proba(data.X_test))

        i = r["candidate"].index(before)
        return {
            "split": f"{dataset}/{model_name}/{seed}",
            "n_val": len(data.y_val),
            "raw": raw,
            "before": before,
            "after": after,
            "nll_before": test_nll(before),
            "nll_after": test_nll(after),
            "fold_t": -r["delta_log_loss"][i] / r["delta_se"][i]
            if before != "passthrough"
            else float("nan"),
            "row_t": -r["delta_log_loss_rows"][i] / r["delta_se_rows"][i]
            if before != "passthrough"
            else float("nan"),
        }


def main(datasets, models, seeds):
    start = time.process_time()
    rows = [split_result(d, m, s) for d in datasets for s in seeds for m in models]
    print(
        "split | validation rows | before the step | after | test excess over "
        "raw before | after | gain over raw in fold SEs | in row SEs"
    )
    for r in rows:
        if r["before"] != r["after"]:
            print(
                f"{r['split']} | {r['n_val']} | {r['before']} | {r['after']} | "
                f"{r['nll_before'] - r['raw']:+.4f} | {r['nll_after'] - r['raw']:+.4f}"
                f" | {r['fold_t']:.2f} | {r['row_t']:.2f}"
            )
    for rule in ("before", "after"):
        excess = np.array([r[f"nll_{rule}"] - r["raw"] for r in rows])
        worst = int(np.argmax(excess))
        kept = sum(r[rule] == "passthrough" for r in rows)
        print(
            f"{rule} the step: largest test excess over raw {excess[worst]:+.4f} "
            f"({rows[worst]['split']}, {rows[worst][rule]}); mean change "
            f"{excess.mean():+.5f} nats; raw scores kept in {kept} of {len(rows)}"
        )
    print(f"CPU seconds {time.process_time() - start:.0f}")


if __name__ == "__main__":
    args = sys.argv[1:]
    n_seeds, models = 3, None
    if "--seeds" in args:
        i = args.index("--seeds")
        n_seeds = int(args[i + 1])
        del args[i : i + 2]
    if "--models" in args:
        i = args.index("--models")
        models = args[i + 1].split(",")
        del args[i : i + 2]
    models = models or [
        m for m in ("hgb", "logreg", "net", "lightgbm") if m in available_models()
    ]
    main(args or DATASETS, models, tuple(range(n_seeds)))
