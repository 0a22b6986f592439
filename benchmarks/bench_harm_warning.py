"""How often the calibration-harm warning fires for a calibrator that does
no harm.

Bed: ``X ~ N(0, I_5)``, ``y ~ Bernoulli(sigmoid(X @ beta))`` with ``beta =
(1, -0.5, 0.5, 0, 0.25)``: a logistic regression is well specified, hence
calibrated, and temperature scaling can do little harm. Each replication fits
``CalibratedClassifier(LogisticRegression(), TemperatureScaler(),
check_calibration=True)`` on ``n`` fresh rows and records whether a
:class:`~sklcalib.calibration.CalibrationWarning` said the calibrator "makes
the probabilities worse". The rule under test is in
``sklcalib.calibration._select.calibration_harm_warning``. Run::

    python benchmarks/bench_harm_warning.py [--reps 200] [--sizes 300 1000 3000]

(about 1 minute with the defaults on one core).
"""

import argparse
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import (
    CalibratedClassifier,
    CalibrationWarning,
    TemperatureScaler,
)

BETA = np.array([1.0, -0.5, 0.5, 0.0, 0.25])


def warns_worse(seed, n):
    """Whether one fit on ``n`` rows of the bed warns "makes ... worse"."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, BETA.shape[0]))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ BETA))).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CalibratedClassifier(
            LogisticRegression(), TemperatureScaler(), check_calibration=True
        ).fit(X, y)
    return any(
        issubclass(w.category, CalibrationWarning) and "worse" in str(w.message)
        for w in caught
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000])
    args = parser.parse_args(argv)
    print("| rows | fits that warned 'worse' |")
    print("|---|---|")
    for n in args.sizes:
        rate = np.mean([warns_worse(seed, n) for seed in range(args.reps)])
        print(f"| {n} | {rate:.1%} of {args.reps} |", flush=True)


if __name__ == "__main__":
    main()
