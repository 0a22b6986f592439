"""How often the calibration-harm warning fires for a calibrator that does
little harm, and whether the fits it fires on are the worse ones.

Bed: ``X ~ N(0, I_5)``, ``y ~ Bernoulli(sigmoid(X @ beta))`` with ``beta =
(1, -0.5, 0.5, 0, 0.25)``: a logistic regression is well specified, hence
calibrated, and temperature scaling can do little harm. Each replication fits
``CalibratedClassifier(LogisticRegression(), TemperatureScaler(),
check_calibration=True)`` on ``n`` fresh rows (ensemble mode: five pairs, each
calibrator fitted on a fifth of the rows) and records whether a
:class:`~sklcalib.calibration.CalibrationWarning` said the calibrator "makes
the probabilities worse", and the fitted model's log-loss on 20 000 fresh rows
minus that of the uncalibrated logistic regression fitted on the same ``n``
rows (``calibrator="passthrough"``): the harm the warning is about. The rule
under test is ``sklcalib.calibration._select.harm_message``. Run::

    python benchmarks/bench_harm_warning.py [--reps 200] [--sizes 300 1000 3000]

(a few minutes with the defaults on one core).
"""

import argparse
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from sklcalib.calibration import (
    CalibratedClassifier,
    CalibrationWarning,
    TemperatureScaler,
)

BETA = np.array([1.0, -0.5, 0.5, 0.0, 0.25])


def _draw(n, rng):
    X = rng.normal(size=(n, BETA.shape[0]))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ BETA))).astype(int)
    return X, y


def warns_worse(seed, n):
    """Whether one fit on ``n`` rows of the bed warns "makes ... worse", and
    its excess test log-loss over the uncalibrated model."""
    rng = np.random.default_rng(seed)
    X, y = _draw(n, rng)
    X_test, y_test = _draw(20_000, rng)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = CalibratedClassifier(
            LogisticRegression(), TemperatureScaler(), check_calibration=True
        ).fit(X, y)
    raw = CalibratedClassifier(LogisticRegression(), "passthrough").fit(X, y)
    excess = log_loss(y_test, fitted.predict_proba(X_test)) - log_loss(
        y_test, raw.predict_proba(X_test)
    )
    warned = any(
        issubclass(w.category, CalibrationWarning) and "worse" in str(w.message)
        for w in caught
    )
    return warned, excess


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000])
    args = parser.parse_args(argv)
    print(
        "| rows | fits that warned 'worse' | excess test log-loss: warned | "
        "not warned | fits worse than raw by > 1 % |"
    )
    print("|---|---|---|---|---|")
    for n in args.sizes:
        runs = [warns_worse(seed, n) for seed in range(args.reps)]
        warned = np.array([w for w, _ in runs])
        excess = np.array([e for _, e in runs])

        def mean(mask, excess=excess):
            return f"{excess[mask].mean():+.4f}" if mask.any() else "-"

        worse = np.mean(excess > 0.01 * 0.58)  # the raw log-loss is about 0.58
        print(
            f"| {n} | {warned.mean():.1%} of {args.reps} | {mean(warned)} | "
            f"{mean(~warned)} | {worse:.1%} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
