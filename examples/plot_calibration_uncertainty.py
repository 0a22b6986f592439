"""
How sure is this number? Calibration error with intervals, a test and a comparison
===================================================================================

The same classifier evaluated on 300 and on 30 000 test rows. On 300 rows the
plug-in ECE is inflated by label noise; the interval of the model's
*population* error (:func:`~sklcalib.metrics.calibration_error_interval`)
accounts for that, the percentile bootstrap does not. A consistency-resampling
test says whether the model is calibrated at all, and a paired swap test
whether one model is better calibrated than another on the same rows. See
:ref:`uncertainty` for the formulas. Every number quoted below is computed
here.
"""

# %%
# A model that is calibrated, and one that is not
# -----------------------------------------------
# Labels drawn from a multinomial logistic model: a logistic regression fitted
# on 2000 rows is then close to calibrated. Its probabilities sharpened by a
# temperature of 0.5 (``softmax(2 z)``) rank the classes identically but are
# over-confident.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklcalib.metrics import (
    bootstrap_interval,
    calibration_error_interval,
    calibration_test,
    compare_calibration,
    ece_sweep,
    kernel_calibration_error,
)

rng = np.random.default_rng(0)
X = rng.normal(size=(32_000, 5))
true_logits = X @ rng.normal(size=(5, 3))
true_p = np.exp(true_logits) / np.exp(true_logits).sum(axis=1, keepdims=True)
y = (rng.uniform(size=(32_000, 1)) > true_p.cumsum(axis=1)).sum(axis=1)
X_train, y_train, X_test, y_test = X[:2000], y[:2000], X[2000:], y[2000:]
model = LogisticRegression().fit(X_train, y_train)
logits = model.decision_function(X_test)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


p_model = softmax(logits)
p_sharp = softmax(2.0 * logits)

# %%
# Estimators and intervals, two test-set sizes
# --------------------------------------------
# For the plug-in ECE and Kumar et al.'s debiased L2 error, the 90 % interval
# of the population error; for the plug-in ECE also the 90 % percentile
# bootstrap, which covers the plug-in's own expectation at this size instead.
# The ECE-sweep and the (unbiased) SKCE are shown without an interval.
estimators = {
    "plug-in ECE": "ece",
    "debiased L2": "debiased_ece",
}
sizes = [300, 30_000]
results = {}
for n in sizes:
    for label, name in estimators.items():
        results[label, n] = calibration_error_interval(
            y_test[:n], p_model[:n], metric=name, confidence_level=0.9, random_state=0
        )
    results["bootstrap", n] = bootstrap_interval(
        "ece", y_test[:n], p_model[:n], confidence_level=0.9, random_state=0
    )
    results["ECE-sweep", n] = ece_sweep(y_test[:n], p_model[:n])
    results["SKCE", n] = kernel_calibration_error(y_test[:n], p_model[:n])

print(f"{'estimator':22s}" + "".join(f"{f'n = {n}':>30s}" for n in sizes))
for label in [*estimators, "bootstrap"]:
    cells = ""
    for n in sizes:
        ci = results[label, n]
        cells += f"{ci.estimate:12.4f} [{ci.low:.4f}, {ci.high:.4f}]"
    name = "ECE, bootstrap" if label == "bootstrap" else label
    print(f"{name:22s}{cells}")
for label in ("ECE-sweep", "SKCE"):
    print(f"{label:22s}" + "".join(f"{results[label, n]:12.5f}{'':18s}" for n in sizes))

small, large = (results["plug-in ECE", n] for n in sizes)
boot_small = results["bootstrap", 300]
print(
    f"\nThe plug-in ECE on 300 rows is {small.estimate / large.estimate:.1f} times "
    f"its value on 30 000 rows: the difference is bias, not a worse model. "
    f"The population error's interval on 300 rows, [{small.low:.4f}, "
    f"{small.high:.4f}], contains the 30 000-row estimate "
    f"({large.estimate:.4f}): "
    f"{small.low <= large.estimate <= small.high}; the percentile bootstrap's, "
    f"[{boot_small.low:.4f}, {boot_small.high:.4f}], does: "
    f"{boot_small.low <= large.estimate <= boot_small.high}."
)

fig, ax = plt.subplots(figsize=(7, 3.5))
shown = [*estimators, "bootstrap"]
for offset, n in zip((-0.1, 0.1), sizes, strict=True):
    for i, label in enumerate(shown):
        ci = results[label, n]
        ax.errorbar(
            i + offset,
            ci.estimate,
            yerr=[[ci.estimate - ci.low], [ci.high - ci.estimate]],
            fmt="o",
            color="C0" if n == 300 else "C1",
            capsize=4,
            label=f"n = {n}" if i == 0 else None,
        )
ax.set_xticks(
    range(len(shown)),
    ["plug-in ECE", "debiased L2", "ECE, percentile\nbootstrap"],
)
ax.set_ylabel("calibration error (90 % interval)")
ax.set_title("Same model, two test-set sizes")
ax.legend()
fig.tight_layout()

# %%
# Is the model calibrated?
# ------------------------
# The consistency-resampling test draws labels from the model's own
# probabilities 1000 times and places the observed ECE in that null
# distribution; the p-values are printed in the legends.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
for ax, (label, p) in zip(
    axes, {"model": p_model, "sharpened": p_sharp}.items(), strict=True
):
    test = calibration_test(y_test[:300], p[:300], n_resamples=1000, random_state=0)
    ax.hist(test.null_distribution, bins=30, color="0.7")
    ax.axvline(test.statistic, color="C3", label=f"observed, p = {test.pvalue:.3f}")
    ax.set_title(label)
    ax.set_xlabel("ECE under calibration (300 rows)")
    ax.legend()
fig.tight_layout()

# %%
# Which of two models is better calibrated?
# -----------------------------------------
# A second model, a logistic regression with strong L2 regularisation
# (``C=0.05``). On the same rows, the paired bootstrap-t of the difference of
# the ECEs tells whether the gap between the two models is more than noise,
# and the interval bounds the difference of their population errors.
p_regularised = LogisticRegression(C=0.05).fit(X_train, y_train).predict_proba(X_test)
for n in sizes:
    res = compare_calibration(
        y_test[:n], p_model[:n], p_regularised[:n], n_resamples=1000, random_state=0
    )
    print(
        f"n = {n:6d}: ECE(model) - ECE(regularised) = {res.difference:+.4f}, "
        f"95 % interval [{res.low:+.4f}, {res.high:+.4f}], p = {res.pvalue:.3f}"
    )
    verdict = "a difference" if res.pvalue < 0.05 else "no detectable difference"
    print(f"  at 5 %: {verdict}")
