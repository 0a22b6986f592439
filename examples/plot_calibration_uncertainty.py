"""
How sure is this number? Calibration error with intervals, a test and a comparison
===================================================================================

The same classifier evaluated on 300 and on 30 000 test rows. On 300 rows the
plug-in ECE is inflated by label noise and has a wide interval; the debiased
estimators (Kumar et al.'s debiased L2 error, the ECE-sweep, the kernel
calibration error SKCE) are not inflated. A consistency-resampling test says
whether the model is calibrated at all, and a paired bootstrap says whether
one model is better calibrated than another on the same rows. See
:ref:`uncertainty` for the formulas.
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
    calibration_test,
    compare_calibration,
    debiased_calibration_error,
    ece_sweep,
    expected_calibration_error,
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
# Four estimators, two test-set sizes
# -----------------------------------
# Each estimator with its 90 % percentile bootstrap interval. The ECE on 300
# rows is about twice its value on 30 000 rows: that difference is bias, not
# a worse model. The debiased estimators agree across sizes; the SKCE is
# unbiased and so can be slightly negative. (The bootstrap of the ECE
# reuses per-bin sums and is fast; the other estimators are recomputed on
# every resample, so we take fewer resamples.)
estimators = {
    "plug-in ECE": ("ece", expected_calibration_error, 1000),
    "debiased L2": ("debiased_ece", debiased_calibration_error, 200),
    "ECE-sweep": ("ece_sweep", ece_sweep, 200),
}
sizes = [300, 30_000]
results = {}
for n in sizes:
    for label, (name, _, n_resamples) in estimators.items():
        results[label, n] = bootstrap_interval(
            name,
            y_test[:n],
            p_model[:n],
            n_resamples=n_resamples,
            confidence_level=0.9,
            random_state=0,
        )
    results["SKCE", n] = kernel_calibration_error(y_test[:n], p_model[:n])

print(f"{'estimator':14s}" + "".join(f"{f'n = {n}':>30s}" for n in sizes))
for label in estimators:
    cells = ""
    for n in sizes:
        ci = results[label, n]
        cells += f"{ci.estimate:12.4f} [{ci.low:.4f}, {ci.high:.4f}]"
    print(f"{label:14s}{cells}")
print(f"{'SKCE':14s}" + "".join(f"{results['SKCE', n]:12.5f}{'':18s}" for n in sizes))

fig, ax = plt.subplots(figsize=(7, 3.5))
for offset, n in zip((-0.1, 0.1), sizes, strict=True):
    for i, label in enumerate(estimators):
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
ax.set_xticks(range(len(estimators)), list(estimators))
ax.set_ylabel("calibration error (90 % interval)")
ax.set_title("Same model, two test-set sizes")
ax.legend()
fig.tight_layout()

# %%
# Is the model calibrated?
# ------------------------
# The consistency-resampling test draws labels from the model's own
# probabilities 1000 times and places the observed ECE in that null
# distribution. The logistic regression passes; its sharpened copy fails even
# on 300 rows.
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
# (``C=0.05``), is slightly under-confident. On the same 300 rows, the
# paired bootstrap of the difference of the ECEs tells whether the gap
# between the two models is more than noise; on 30 000 rows the same
# question has a sharp answer.
p_regularised = LogisticRegression(C=0.05).fit(X_train, y_train).predict_proba(X_test)
for n in sizes:
    res = compare_calibration(
        y_test[:n], p_model[:n], p_regularised[:n], n_resamples=1000, random_state=0
    )
    print(
        f"n = {n:6d}: ECE(model) - ECE(regularised) = {res.difference:+.4f}, "
        f"95 % interval [{res.low:+.4f}, {res.high:+.4f}], p = {res.pvalue:.3f}"
    )
