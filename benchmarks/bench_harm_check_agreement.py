"""Whether ``check_calibration="auto"`` warns exactly when the full check does.

With a frozen estimator (or ``ensemble=False``) the harm check refits the
calibrator on ``cv`` folds. ``"auto"`` (the default) skips those refits for a
smooth parametric calibrator when the fit on all rows, scored on those rows,
plus twice the optimism Akaike's argument predicts for its parameters, stays
within the rule's 1 % margin: the refits could not have warned. This script
measures that claim: on each bed, every replication fits
``CalibratedClassifier(FrozenEstimator(model), calibrator)`` with
``check_calibration=True`` and ``"auto"`` on the same fresh calibration rows
and compares whether each warned "makes the probabilities worse".

Beds: ``X ~ N(0, I_5)``, ``K`` classes drawn from a multinomial logistic model;
the frozen model is that model's own probabilities (calibrated), the same
logits times 3 (over-confident) or times 0.3 (under-confident). Calibrators:
temperature, vector, Dirichlet and matrix scaling (and Platt on two classes),
on 100 to 5000 calibration rows. Run (one thread, a few minutes)::

    python benchmarks/bench_harm_check_agreement.py [--reps 20]
"""

import argparse
import os
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.frozen import FrozenEstimator

import sklcalib.calibration._meta as meta
from sklcalib.calibration import (
    CalibratedClassifier,
    CalibrationWarning,
    DirichletCalibrator,
    MatrixScaler,
    PlattScaler,
    TemperatureScaler,
    VectorScaler,
)


class LogitModel(ClassifierMixin, BaseEstimator):
    """A fixed multinomial logistic model ``softmax(scale * X @ coef)``."""

    def __init__(self, coef=None, scale=1.0):
        self.coef = coef
        self.scale = scale

    def fit(self, X, y):
        self.classes_ = np.arange(self.coef.shape[1])
        return self

    def decision_function(self, X):
        z = self.scale * (np.asarray(X) @ self.coef)
        return z[:, 1] - z[:, 0] if z.shape[1] == 2 else z

    def predict_proba(self, X):
        return softmax(self.scale * (np.asarray(X) @ self.coef), axis=1)


def draw(n, coef, rng):
    X = rng.normal(size=(n, coef.shape[0]))
    p = softmax(X @ coef, axis=1)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return X, np.minimum(y, coef.shape[1] - 1)


def warned(model, calibrator, check, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CalibratedClassifier(model, calibrator, check_calibration=check).fit(X, y)
    return any(
        issubclass(w.category, CalibrationWarning)
        and "makes the probabilities worse" in str(w.message)
        for w in caught
    )


def run_bed(n_classes, scale, calibrator, n, reps, seed=0):
    """(fits, warned by the full check, disagreements, refits skipped)."""
    rng = np.random.default_rng([seed, n_classes, n, int(100 * scale)])
    coef = rng.normal(scale=1.0, size=(5, n_classes))
    model = FrozenEstimator(LogitModel(coef, scale).fit(None, None))
    full = disagree = skipped = 0
    calls = []
    original = meta.harm_check

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    for _ in range(reps):
        X, y = draw(n, coef, rng)
        if len(np.unique(y)) < n_classes:
            continue
        a = warned(model, calibrator, True, X, y)
        meta.harm_check, calls[:] = counting, []
        try:
            b = warned(model, calibrator, "auto", X, y)
        finally:
            meta.harm_check = original
        full += a
        disagree += a != b
        skipped += not calls
    return reps, full, disagree, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 5000])
    args = parser.parse_args(argv)
    print(
        "| classes, model | calibrator | rows | fits | full check warned "
        "| auto disagreed | auto skipped the refits |"
    )
    print("|---|---|---|---|---|---|---|")
    totals = np.zeros(4, dtype=int)
    for n_classes in (2, 4):
        cals = [TemperatureScaler, VectorScaler, DirichletCalibrator, MatrixScaler]
        if n_classes == 2:
            cals = [TemperatureScaler, PlattScaler, DirichletCalibrator]
        for scale, what in ((1.0, "calibrated"), (3.0, "over"), (0.3, "under")):
            for cal in cals:
                for n in args.sizes:
                    row = run_bed(n_classes, scale, cal(), n, args.reps)
                    totals += row
                    print(
                        f"| {n_classes}, {what} | {cal.__name__} | {n} | "
                        + " | ".join(str(v) for v in row)
                        + " |",
                        flush=True,
                    )
    print(f"| all | | | {' | '.join(str(v) for v in totals)} |")


if __name__ == "__main__":
    main()
