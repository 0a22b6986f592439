"""What the default harm check costs in ``CalibratedClassifier.fit``.

The harm check (``check_calibration``) warns when an explicitly chosen
calibrator makes the probabilities worse on its own calibration data. In
ensemble mode (the default for an estimator that is not frozen) the check
reuses the fitted pairs: on each held-out part, the calibrators of the other
parts, averaged, are scored against the raw scores, so it fits nothing more.
With a frozen estimator (one calibrator on all the data) ``True`` needs
``cv`` fold fits of the calibrator; the default ``"auto"`` skips them where
they cannot warn (a scaling calibrator whose in-sample log-loss plus twice
its predicted optimism is within the rule's margin), so temperature scaling
of a frozen model on 5000 rows costs no pass over the scores more (its
solver's passes give both log-losses), isotonic regression still its fold
fits (by a kernel that sorts each column once for all folds).

Each repeat times the fit with the check and without it back to back (the order
alternating), on the same data; the table gives the median ratio and its
spread (first and third quartiles) over the repeats, of the wall-clock time
and of the process's CPU time (single-threaded, so the CPU time is the work
done; on a shared machine it is the steadier of the two). Bed:
``make_classification``
with 20 features and three classes, ``LogisticRegression`` as the estimator,
``cv=5``. Run (one BLAS/OpenMP thread)::

    python benchmarks/bench_harm_check.py [--repeats 15] [--rows 5000]
"""

import argparse
import os
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import (
    CalibratedClassifier,
    IsotonicCalibrator,
    TemperatureScaler,
)


def _time(model, X, y):
    """(wall-clock, CPU) seconds of one fit."""
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return np.array([time.perf_counter() - start, time.process_time() - cpu])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rows", type=int, default=5000)
    args = parser.parse_args(argv)
    X, y = make_classification(
        n_samples=args.rows,
        n_features=20,
        n_informative=10,
        n_classes=3,
        random_state=0,
    )
    frozen = FrozenEstimator(LogisticRegression(max_iter=1000).fit(X, y))
    lr = LogisticRegression(max_iter=1000)
    beds = {
        "ensemble, temperature": (lr, TemperatureScaler, "auto"),
        "ensemble, isotonic": (lr, IsotonicCalibrator, "auto"),
        'frozen, temperature, "auto"': (frozen, TemperatureScaler, "auto"),
        "frozen, temperature, True": (frozen, TemperatureScaler, True),
        'frozen, isotonic, "auto"': (frozen, IsotonicCalibrator, "auto"),
        "frozen, isotonic, True": (frozen, IsotonicCalibrator, True),
    }
    print(
        "| mode, calibrator, check | wall-clock ratio (median) | quartiles "
        "| CPU-time ratio (median) | quartiles |"
    )
    print("|---|---|---|---|---|")
    for name, (estimator, calibrator, check) in beds.items():
        ratios = []
        for r in range(args.repeats):
            times = {}
            order = (check, False) if r % 2 == 0 else (False, check)
            for c in order:
                model = CalibratedClassifier(
                    estimator, calibrator(), check_calibration=c
                )
                times[c] = _time(model, X, y)
            ratios.append(times[check] / times[False])
        cells = []
        for q1, med, q3 in np.percentile(ratios, [25, 50, 75], axis=0).T:
            cells += [f"{med:.2f}", f"{q1:.2f}-{q3:.2f}"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
