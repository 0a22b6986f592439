"""
Reliability diagrams: top-label and per class
=============================================

A reliability diagram bins the test samples by the confidence of the model
and plots, per bin, the observed accuracy against the mean confidence. A
calibrated model lies on the diagonal; points below it are over-confident.
:class:`~sklcalib.plotting.ReliabilityDisplay` draws it for multiclass
models, in the style of scikit-learn's
:class:`~sklearn.calibration.CalibrationDisplay`:

* ``kind="top-label"``: the confidence of the predicted class against the
  accuracy, the diagram behind the expected calibration error (ECE);
* ``kind="classwise"``: the predicted probability of one class against the
  frequency of that class, the diagram behind the classwise ECE.

Each bin carries a Clopper–Pearson interval for its accuracy (a bin of 5
samples says little), the shaded gap between accuracy and confidence, and a
histogram of how many samples it holds.

We compare Gaussian naive Bayes, which multiplies per-pixel likelihoods as if
the pixels were independent and is notoriously over-confident, with a
logistic regression, on scikit-learn's bundled handwritten digits.
"""

# %%
# Two classifiers on the digits
# -----------------------------
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklcalib.metrics import calibration_report
from sklcalib.plotting import ReliabilityDisplay, share_histogram_axis

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, stratify=y, random_state=0
)
models = {
    "Gaussian naive Bayes": GaussianNB().fit(X_train, y_train),
    "Logistic regression": make_pipeline(
        StandardScaler(), LogisticRegression(max_iter=2000)
    ).fit(X_train, y_train),
}

# %%
# The numbers first: :func:`~sklcalib.metrics.calibration_report` computes
# every metric from one validation of the predictions. Naive Bayes is wrong
# on about one test digit in five yet puts a confidence of at least 0.99 on
# most of them (``s99_fraction``).
keys = ["accuracy", "ece", "adaptive_ece", "classwise_ece", "mce", "smooth_ece"]
keys += ["nll", "s99_fraction", "s99_accuracy"]
reports = {
    name: calibration_report(y_test, model.predict_proba(X_test))
    for name, model in models.items()
}
print(f"{'':14s}" + "".join(f"{name:>22s}" for name in reports))
for key in keys:
    row = "".join(f"{report[key]:22.3f}" for report in reports.values())
    print(f"{key:14s}{row}")

# %%
# Top-label diagrams, and the diagram of one class
# ------------------------------------------------
# The top-label diagram of naive Bayes has nearly all samples in the last bin,
# with an accuracy well below its confidence; the logistic regression stays
# close to the diagonal. The classwise diagram of the digit 8, which naive
# Bayes predicts almost twice as often as it occurs (its classwise error is
# the largest of the ten), shows where the over-confidence comes from: when
# it gives an 8 a probability near 1, the digit is an 8 only about half the
# time.
fig, axes = plt.subplots(1, 3, figsize=(14, 4.4))
top_label = []
for ax, (name, model) in zip(axes[:2], models.items(), strict=True):
    short = "".join(word[0] for word in name.split()).upper()  # GNB, LR
    top_label.append(
        ReliabilityDisplay.from_estimator(
            model, X_test, y_test, n_bins=10, ax=ax, name=short
        )
    )
    ax.set_title(f"{name}: top label")
share_histogram_axis(top_label)  # the two models' histograms on one scale
ReliabilityDisplay.from_estimator(
    models["Gaussian naive Bayes"],
    X_test,
    y_test,
    n_bins=5,
    kind="classwise",
    class_index=8,
    ax=axes[2],
    name="GNB",
)
axes[2].set_title("Gaussian naive Bayes: class 8")
fig.tight_layout()

# The documentation and the README show this figure: save it under
# docs/_static of the repository, found upwards from this script (or from the
# working directory where __file__ is not set).
try:
    here = Path(__file__).resolve().parent
except NameError:
    here = Path.cwd().resolve()
root = next(
    (d for d in (here, *here.parents) if (d / "docs" / "conf.py").exists()), here
)
static = root / "docs" / "_static"
static.mkdir(parents=True, exist_ok=True)
fig.savefig(static / "reliability_diagram.png", dpi=100)

# %%
# Equal-mass bins and every class at once
# ---------------------------------------
# With ``strategy="quantile"`` each bin holds the same number of samples (the
# bins of the adaptive ECE), so no bin rests on a handful of points; drawing
# every class on one axis, without the histogram, compares the classes.
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.6))
ReliabilityDisplay.from_estimator(
    models["Gaussian naive Bayes"],
    X_test,
    y_test,
    n_bins=10,
    strategy="quantile",
    ax=ax0,
    name="GNB",
)
ax0.set_title("Gaussian naive Bayes: equal-mass bins")
model = models["Logistic regression"]
for k in range(10):
    display = ReliabilityDisplay.from_estimator(
        model,
        X_test,
        y_test,
        n_bins=5,
        kind="classwise",
        class_index=k,
        ax=ax1,
        name=f"class {k}",
        show_histogram=False,
        show_gap=False,
        ref_line=k == 0,
    )
    display.errorbar_.remove()  # ten sets of intervals would hide the curves
ax1.set(title="Logistic regression: every class", xlabel="Predicted probability")
ax1.set_ylabel("Observed frequency")
ax1.legend(loc="upper left", fontsize="x-small", ncol=2)
fig.tight_layout()
plt.show()
