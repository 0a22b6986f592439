"""
Post-hoc calibration of an over-confident model
===============================================

A model that is right 70% of the time but says 95% is over-confident. Post-hoc
calibrators fix that after training: they are fitted on the scores of the
model on held-out data and map them to probabilities that mean what they say.
sklcalib's calibrators are scikit-learn classifiers whose input is those
scores:

* logit calibrators take ``decision_function``: temperature scaling (one
  scalar T), vector and matrix scaling (an affine map of the logits);
* ensemble temperature scaling mixes the temperature-scaled softmax with
  the original one and the uniform distribution;
* probability calibrators take ``predict_proba``: histogram binning,
  isotonic regression, scaling-binning and Venn–ABERS (one-vs-rest),
  Dirichlet calibration (a linear map of the log-probabilities), and BBQ,
  ENIR and beta calibration through netcal (when it is installed).

We train an almost unregularised logistic regression on overlapping classes,
multiply its logits by 3 (an over-confident network behaves the same way),
and compare the calibrators' reliability diagrams and test ECE.
"""

# %%
# An over-confident model and three splits
# ----------------------------------------
import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import softmax
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from sklcalib.calibration import (
    BBQCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    ENIRCalibrator,
    EnsembleTemperatureScaler,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScaler,
    ScalingBinningCalibrator,
    TemperatureScaler,
    VectorScaler,
    VennAbersCalibrator,
)
from sklcalib.metrics import expected_calibration_error
from sklcalib.plotting import ReliabilityDisplay

X, y = make_classification(
    n_samples=6000,
    n_features=20,
    n_informative=8,
    n_classes=3,
    n_clusters_per_class=1,
    class_sep=0.7,
    flip_y=0.0,
    random_state=0,
)
X_train, y_train = X[:2000], y[:2000]
X_cal, y_cal = X[2000:4000], y[2000:4000]
X_test, y_test = X[4000:], y[4000:]

model = LogisticRegression(C=1e4, max_iter=5000).fit(X_train, y_train)
cal_logits = 3.0 * model.decision_function(X_cal)
test_logits = 3.0 * model.decision_function(X_test)
uncalibrated = softmax(test_logits, axis=1)
print(f"test accuracy {np.mean(uncalibrated.argmax(1) == y_test):.3f}")
print(f"uncalibrated ECE {expected_calibration_error(y_test, uncalibrated):.4f}")

# %%
# Fit every calibrator on the calibration split
# ---------------------------------------------
# Logit calibrators get the logits, probability calibrators the softmax.
# Each one is fitted on the calibration split only and judged on the test
# split. The netcal adapters need the optional extra
# ``pip install "sklcalib[netcal]"``.
logit_calibrators = {
    "temperature": TemperatureScaler(),
    "vector scaling": VectorScaler(),
    "matrix scaling": MatrixScaler(reg=1e-3),
    "ensemble temperature": EnsembleTemperatureScaler(),
}
probability_calibrators = {
    "histogram binning": HistogramBinningCalibrator(n_bins=15),
    "isotonic": IsotonicCalibrator(),
    "Dirichlet": DirichletCalibrator(),
    "scaling-binning": ScalingBinningCalibrator(n_bins=10),
    "Venn-ABERS": VennAbersCalibrator(),
}
if importlib.util.find_spec("netcal") is not None:
    probability_calibrators.update(
        {"BBQ": BBQCalibrator(), "ENIR": ENIRCalibrator(), "beta": BetaCalibrator()}
    )

test_proba = {"uncalibrated": uncalibrated}
for name, calibrator in logit_calibrators.items():
    calibrator.fit(cal_logits, y_cal)
    test_proba[name] = calibrator.predict_proba(test_logits)
for name, calibrator in probability_calibrators.items():
    calibrator.fit(softmax(cal_logits, axis=1), y_cal)
    test_proba[name] = calibrator.predict_proba(uncalibrated)

print(f"fitted temperature: {logit_calibrators['temperature'].temperature_:.3f}")
print(f"{'method':20s} {'ECE':>7s} {'NLL':>7s}")
for name, proba in test_proba.items():
    ece = expected_calibration_error(y_test, proba)
    nll = -np.mean(np.log(np.maximum(proba[np.arange(len(y_test)), y_test], 1e-12)))
    print(f"{name:20s} {ece:7.4f} {nll:7.4f}")

# %%
# Reliability diagrams
# --------------------
# Below the diagonal is over-confident. Temperature scaling divides every
# logit by the same T ~ 3 and lands on the diagonal; the binning methods
# reach it too, with the step-shaped maps that are their nature.
fig, axes = plt.subplots(3, 3, figsize=(12, 11), sharex=True, sharey=True)
shown = ["uncalibrated", "temperature", "matrix scaling"]
shown += ["histogram binning", "isotonic", "Dirichlet"]
shown += [
    "scaling-binning",
    "Venn-ABERS",
    "BBQ" if "BBQ" in test_proba else "ensemble temperature",
]
for ax, name in zip(axes.ravel(), shown, strict=True):
    ReliabilityDisplay.from_predictions(
        y_test, test_proba[name], n_bins=15, ax=ax, name=name, show_histogram=False
    )
    ax.set_title(name)
fig.tight_layout()
plt.show()

# %%
# Venn–ABERS intervals
# --------------------
# Venn–ABERS gives, for each score, an interval ``[p0, p1]`` (isotonic fits
# with the test point labelled 0 and 1) that narrows where the calibration
# data are dense; ``predict_proba`` merges it into one probability.
venn_abers = probability_calibrators["Venn-ABERS"]
p0, p1 = venn_abers.predict_interval(uncalibrated)
width = p1 - p0
print(
    f"Venn-ABERS interval width per class: median {np.median(width):.4f}, "
    f"95th percentile {np.quantile(width, 0.95):.4f}"
)
