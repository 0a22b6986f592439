"""Fit and predict time of SegmentCalibrator against MCGrad at a given number
of calibration rows, interleaved (each repeat times every contender back to
back), on the survey-like data of ``bench_segment_calibration.py``.

Prints, per contender, the median fit and predict CPU time (the process's)
and the median ratio
to MCGrad's (with its min-max over the repeats). Thread settings: ``--threads``
(default 1) for BLAS (threadpoolctl) and LightGBM alike.

Run: ``python benchmarks/bench_segment_calibration_speed.py --rows 150000
[--repeats 2] [--threads 1]``
"""

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_segment_calibration import DEMOGRAPHICS, make_survey_like


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    from mcgrad.methods import MCGrad
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    from sklcalib.calibration import SegmentCalibrator

    n_base = 20_000
    x, demo, y = make_survey_like(n_base + args.rows, 0)
    model = LogisticRegression().fit(x[:n_base], y[:n_base])
    z = model.decision_function(x[n_base:])
    d = demo.iloc[n_base:].reset_index(drop=True)
    yc = y[n_base:]
    cats, nums = DEMOGRAPHICS[:5], ["income"]

    def ours(method):
        def fit():
            cal = SegmentCalibrator(method=method, n_jobs=args.threads)
            cal.fit(z, yc, segments=d)
            return lambda: cal.predict_proba(z, segments=d)

        return fit

    def mcgrad():
        df = d.copy()
        df["score"], df["label"] = 1 / (1 + np.exp(-z)), yc
        params = dict(
            MCGrad.DEFAULT_HYPERPARAMS["lightgbm_params"], num_threads=args.threads
        )
        m = MCGrad(lightgbm_params=params)
        m.fit(
            df,
            "score",
            "label",
            categorical_feature_column_names=cats,
            numerical_feature_column_names=nums,
        )
        return lambda: m.predict(
            df,
            "score",
            categorical_feature_column_names=cats,
            numerical_feature_column_names=nums,
        )

    contenders = {
        "segment logistic": ours("logistic"),
        "segment boosting": ours("boosting"),
        "segment auto": ours("auto"),
        "MCGrad": mcgrad,
    }
    fit_t = {k: [] for k in contenders}
    pred_t = {k: [] for k in contenders}
    with threadpool_limits(args.threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(args.repeats):
            for name, fit in contenders.items():
                t0 = time.process_time()
                predict = fit()
                t1 = time.process_time()
                predict()
                t2 = time.process_time()
                fit_t[name].append(t1 - t0)
                pred_t[name].append(t2 - t1)
    print(
        f"{args.rows} calibration rows, {args.repeats} interleaved repeats, "
        f"{args.threads} thread(s)"
    )
    head = f"{'calibrator':<18} {'fit (s)':>8} {'fit / MCGrad':>22}"
    print(f"{head} {'predict / MCGrad':>22}")
    for name in contenders:
        fr = [a / b for a, b in zip(fit_t[name], fit_t["MCGrad"], strict=True)]
        pr = [a / b for a, b in zip(pred_t[name], pred_t["MCGrad"], strict=True)]
        print(
            f"{name:<18} {statistics.median(fit_t[name]):>8.2f} "
            f"{statistics.median(fr):>8.3f} [{min(fr):.3f}, {max(fr):.3f}] "
            f"{statistics.median(pr):>8.3f} [{min(pr):.3f}, {max(pr):.3f}]"
        )


if __name__ == "__main__":
    main()
