"""Segment calibration: worst-segment error, log-loss and fit time of no
calibration, the best global calibrator, SegmentCalibrator (logistic,
boosting, auto) and MCGrad (when installed) on a synthetic survey-like data
set whose base model did not see the demographic columns.

The data: n rows with three numeric features the model sees and six
demographic columns it does not (region, sex, age band, education, race,
income band); the true log-odds add to the features' effect an intercept per
level of each demographic column, a slope factor per region and an age x
education interaction. The base model is a logistic regression on the three
features fitted on its own rows; its scores on the calibration rows fit the
calibrators, and every figure is measured on separate test rows:

- ``mce_sigma``: the worst-segment statistic (mcgrad's
  ``MulticalibrationError.mce_sigma`` when mcgrad is installed, segments of
  up to two demographic columns, sigma scale), and the audit's
  (:func:`sklcalib.metrics.multicalibration_audit`) maximum scaled statistic
  with its null 95 % quantile;
- ``log_loss`` on the test rows;
- ``vs MCGrad (worst seed)``: the largest excess over MCGrad on one seed of
  ``mce_sigma`` and of the log-loss (negative: better on every seed);
- ``fit_s``: the fit's CPU time (the process's: a busy machine barely
  moves it, where wall times doubled); every repeat times every contender back to back
  (interleaved) and the table gives the median, and the median ratio to
  MCGrad's with the spread (min-max) over the repeats.

Thread settings: ``--threads`` (default 1) sets OMP/OpenBLAS/MKL through
threadpoolctl, LightGBM's ``num_threads`` for SegmentCalibrator and MCGrad
alike.

Run: ``python benchmarks/bench_segment_calibration.py [--n 45000] [--seeds 3]
[--repeats 3] [--threads 1] [--out docs/user_guide/segment_calibration_table.txt]``
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

REGIONS = ["northeast", "midwest", "south", "west"]
EDUCATION = ["none", "hs", "some_college", "bachelor", "graduate"]
RACE = ["white", "black", "asian", "hispanic", "other"]
AGE = ["18-24", "25-34", "35-44", "45-54", "55-64", "65+"]
DEMOGRAPHICS = ["region", "sex", "age", "education", "race", "income"]


def make_survey_like(n, seed):
    """(features, demographics DataFrame, y): see the module docstring."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    region = rng.choice(4, size=n, p=[0.18, 0.21, 0.38, 0.23])
    sex = rng.integers(0, 2, size=n)
    age = rng.choice(6, size=n, p=[0.12, 0.18, 0.17, 0.17, 0.17, 0.19])
    edu = rng.choice(5, size=n, p=[0.1, 0.28, 0.28, 0.21, 0.13])
    race = rng.choice(5, size=n, p=[0.6, 0.12, 0.06, 0.17, 0.05])
    income = np.exp(rng.normal(10.8, 0.7, size=n) + 0.15 * edu)
    signal = x @ np.array([1.0, -0.7, 0.5])
    slope = np.array([0.8, 1.0, 1.25, 0.9])[region]
    logit = (
        slope * signal
        - 0.6
        + np.array([0.0, 0.15, -0.2, 0.25])[region]
        + 0.2 * sex
        + np.array([-0.5, -0.2, 0.0, 0.15, 0.3, 0.4])[age]
        + np.array([-0.4, -0.2, 0.0, 0.2, 0.35])[edu]
        + np.array([0.0, -0.15, 0.2, -0.1, 0.05])[race]
        + 0.25 * ((age >= 4) & (edu >= 3))
        + 0.1 * (np.log(income) - 10.8)
    )
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    demo = pd.DataFrame(
        {
            "region": np.array(REGIONS, dtype=object)[region],
            "sex": np.where(sex == 1, "female", "male").astype(object),
            "age": np.array(AGE, dtype=object)[age],
            "education": np.array(EDUCATION, dtype=object)[edu],
            "race": np.array(RACE, dtype=object)[race],
            "income": income,
        }
    )
    return x, demo, y


def split(n, seed):
    """Rows of the base model (20 %), the calibration (40 %) and the test (40 %)."""
    order = np.random.default_rng(seed + 1000).permutation(n)
    a, b = int(0.2 * n), int(0.6 * n)
    return order[:a], order[a:b], order[b:]


def mcgrad_sigma(y, p, demo):
    """mcgrad's worst-segment statistic (sigma scale), or NaN without mcgrad."""
    try:
        from mcgrad.metrics import MulticalibrationError
    except ImportError:
        return float("nan")
    df = demo.copy()
    df["label"], df["score"] = y, p
    mce = MulticalibrationError(
        df,
        label_column="label",
        score_column="score",
        categorical_segment_columns=DEMOGRAPHICS[:5],
        numerical_segment_columns=["income"],
    )
    return float(mce.mce_sigma)


def contenders(threads):
    from sklcalib.calibration import SegmentCalibrator, select_calibrator

    def none(z, y, demo):
        return lambda z2, d2: 1 / (1 + np.exp(-z2))

    def best_global(z, y, demo):
        search = select_calibrator(z, y, response="logits")
        return lambda z2, d2: search.predict_proba(z2)[:, 1]

    def segment(method, backend="auto"):
        def fit(z, y, demo):
            cal = SegmentCalibrator(method=method, backend=backend, n_jobs=threads)
            cal.fit(z, y, segments=demo)
            return lambda z2, d2: cal.predict_proba(z2, segments=d2)[:, 1]

        return fit

    out = {
        "none": none,
        "best global": best_global,
        "segment logistic": segment("logistic"),
        "segment boosting (sklearn)": segment("boosting", "sklearn"),
        "segment boosting (lightgbm)": segment("boosting", "lightgbm"),
        "segment auto": segment("auto"),
    }
    try:
        from mcgrad.methods import MCGrad
    except ImportError:
        print("mcgrad absent: its rows are left out", file=sys.stderr)
        return out

    def mcgrad(z, y, demo):
        df = demo.copy()
        df["score"], df["label"] = 1 / (1 + np.exp(-z)), y
        params = dict(
            MCGrad.DEFAULT_HYPERPARAMS["lightgbm_params"], num_threads=threads
        )
        model = MCGrad(lightgbm_params=params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(
                df,
                "score",
                "label",
                categorical_feature_column_names=DEMOGRAPHICS[:5],
                numerical_feature_column_names=["income"],
            )

        def predict(z2, d2):
            df2 = d2.copy()
            df2["score"] = 1 / (1 + np.exp(-z2))
            return model.predict(
                df2,
                "score",
                categorical_feature_column_names=DEMOGRAPHICS[:5],
                numerical_feature_column_names=["income"],
            )

        return predict

    out["MCGrad"] = mcgrad
    return out


def run(n, seeds, repeats, threads):
    from sklearn.linear_model import LogisticRegression

    from sklcalib.metrics import multicalibration_audit

    fits = contenders(threads)
    rows = {
        name: {"sigma": [], "audit": [], "ll": [], "t": [], "ratio": []}
        for name in fits
    }
    null_q = []
    for seed in range(seeds):
        x, demo, y = make_survey_like(n, seed)
        base, cal, test = split(n, seed)
        model = LogisticRegression().fit(x[base], y[base])
        z_cal = model.decision_function(x[cal])
        z_test = model.decision_function(x[test])
        d_cal = demo.iloc[cal].reset_index(drop=True)
        d_test = demo.iloc[test].reset_index(drop=True)
        times = {name: [] for name in fits}
        predictors = {}
        for _ in range(repeats):  # interleaved: every contender each repeat
            for name, fit in fits.items():
                t0 = time.process_time()
                predictors[name] = fit(z_cal, y[cal], d_cal)
                times[name].append(time.process_time() - t0)
        for name, predict in predictors.items():
            p = np.clip(predict(z_test, d_test), 1e-12, 1 - 1e-12)
            yt = y[test]
            ll = float(-np.mean(yt * np.log(p) + (1 - yt) * np.log(1 - p)))
            audit = multicalibration_audit(
                yt, p, d_test, n_resamples=200, random_state=seed
            )
            r = rows[name]
            r["sigma"].append(mcgrad_sigma(yt, p, d_test))
            r["audit"].append(audit.statistic)
            r["ll"].append(ll)
            r["t"].append(statistics.median(times[name]))
            if "MCGrad" in times:
                r["ratio"].extend(
                    a / b for a, b in zip(times[name], times["MCGrad"], strict=True)
                )
            if name == "none":
                null_q.append(audit.null_quantile)
    return rows, null_q


def table(rows, null_q, n, seeds, repeats, threads):
    head = (
        f"{'calibrator':<28} {'mce_sigma':>10} {'audit max':>10} "
        f"{'log-loss':>9} {'vs MCGrad (worst seed)':>23} {'fit (s)':>8} "
        f"{'fit / MCGrad':>20}"
    )
    ref = rows.get("MCGrad")
    lines = [
        f"n = {n} rows (40 % calibration, 40 % test), {seeds} seeds, "
        f"{repeats} interleaved timing repeats, {threads} thread(s); "
        f"audit null 95 % quantile {np.mean(null_q):.2f}",
        "",
        head,
        "-" * len(head),
    ]
    for name, r in rows.items():
        ratio = ""
        if r["ratio"]:
            ratio = (
                f"{statistics.median(r['ratio']):.3f} "
                f"[{min(r['ratio']):.3f}, {max(r['ratio']):.3f}]"
            )
        worst = ""
        if ref is not None:  # the largest excess over MCGrad on one seed
            d_sigma = max(np.subtract(r["sigma"], ref["sigma"]))
            d_ll = max(np.subtract(r["ll"], ref["ll"]))
            worst = f"{d_sigma:+.2f} / {d_ll:+.4f}"
        lines.append(
            f"{name:<28} {np.mean(r['sigma']):>10.2f} {np.mean(r['audit']):>10.2f} "
            f"{np.mean(r['ll']):>9.4f} {worst:>23} {np.median(r['t']):>8.3f} "
            f"{ratio:>20}"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=45000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))
    from threadpoolctl import threadpool_limits

    with threadpool_limits(args.threads):
        rows, null_q = run(args.n, args.seeds, args.repeats, args.threads)
    text = table(rows, null_q, args.n, args.seeds, args.repeats, args.threads)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(
                "::\n\n" + "\n".join("    " + line for line in text.splitlines()) + "\n"
            )


if __name__ == "__main__":
    main()
