"""
Undoing class weights: prior correction of boosted trees
========================================================

Boosted trees trained with ``class_weight="balanced"`` (or LightGBM's and
XGBoost's ``scale_pos_weight``, or on a subsampled majority class) learn the
posteriors of a *re-weighted* population: the rare class looks as common as
the others, and every probability of it is inflated. The shift is known
exactly: training under the class prior :math:`\\pi^{train}` instead of the
true :math:`\\pi` multiplies each class's probability by
:math:`\\pi_k^{train} / \\pi_k` before renormalisation (Bayes' rule), so
:class:`~sklcalib.calibration.PriorCorrection` undoes it with
:math:`p_k \\cdot \\pi_k / \\pi_k^{train}`, renormalised (Saerens, Latinne &
Decaestecker, 2002). No labels are needed beyond the training frequencies;
when the deployment prior itself is unknown, ``target_prior="em"`` estimates
it from the unlabelled scores.

We train a histogram gradient boosting model (and LightGBM, when it is
installed) with balanced class weights on an imbalanced problem, then compare
the test log-loss, Brier score and ECE before and after the correction, and
after ``calibrator="auto"`` on top of it.
"""

# %%
# An imbalanced problem and a class-weighted booster
# --------------------------------------------------
import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.model_selection import train_test_split

from sklcalib.calibration import CalibratedClassifier, PriorCorrection
from sklcalib.metrics import expected_calibration_error

X, y = make_classification(
    n_samples=24_000,
    n_features=12,
    n_informative=6,
    weights=[0.92, 0.08],
    flip_y=0.02,
    class_sep=0.8,
    random_state=0,
)
X_train, X_rest, y_train, y_rest = train_test_split(
    X, y, train_size=0.5, stratify=y, random_state=0
)
X_val, X_test, y_val, y_test = train_test_split(
    X_rest, y_rest, train_size=0.4, stratify=y_rest, random_state=0
)
print(f"positive rate: {y_train.mean():.3f} (train), {y_test.mean():.3f} (test)")

models = {
    "HistGradientBoosting": HistGradientBoostingClassifier(
        class_weight="balanced", max_iter=100, random_state=0
    )
}
if importlib.util.find_spec("lightgbm") is not None:
    import lightgbm

    # one thread: on 12 000 rows LightGBM's threads spin waiting for each
    # other more than they work (on two busy cores, 16 times the CPU time of
    # one thread)
    models["LightGBM"] = lightgbm.LGBMClassifier(
        class_weight="balanced", n_estimators=100, n_jobs=1, verbose=-1, random_state=0
    )
else:
    print("LightGBM is not installed: only HistGradientBoosting is shown")


def scores(proba):
    return (
        log_loss(y_test, proba),
        brier_score_loss(y_test, proba[:, 1]),
        100 * expected_calibration_error(y_test, proba),
    )


# %%
# The correction from the class weights
# -------------------------------------
# ``from_class_weight("balanced", y_train)`` says that training saw a uniform
# prior while the data have the training frequencies; the correction needs
# nothing else. ``calibrator="auto"`` then decides, by cross-validated
# log-loss on the validation split, whether a calibrator on top of the
# corrected scores helps; it keeps the corrected scores unless one does by
# more than the fold-to-fold noise.
rows = []
curves = {}
for name, model in models.items():
    model.fit(X_train, y_train)
    raw = model.predict_proba(X_test)
    correction = PriorCorrection.from_class_weight("balanced", y_train)
    corrected = correction.fit(model.predict_proba(X_val), y_val).predict_proba(
        model.predict_proba(X_test)
    )
    auto = CalibratedClassifier(
        FrozenEstimator(model),
        "auto",
        prior=PriorCorrection.from_class_weight("balanced", y_train),
    ).fit(X_val, y_val)
    calibrated = auto.predict_proba(X_test)
    rows += [
        (name, "balanced weights", *scores(raw)),
        (name, "+ prior correction", *scores(corrected)),
        (
            "",
            f"+ auto ({auto.selected_calibrator_})",
            *scores(auto.predict_proba(X_test)),
        ),
    ]
    curves[name] = (raw, corrected)

print(f"{'model':<22}{'probabilities':<30}{'log-loss':>9}{'Brier':>8}{'ECE %':>7}")
for model_name, what, ll, brier, ece in rows:
    print(f"{model_name:<22}{what:<30}{ll:9.4f}{brier:8.4f}{ece:7.2f}")

# %%
# Reliability of the positive class
# ---------------------------------
# The weighted model's probabilities of the rare class lie far above the
# observed frequencies; after the correction they sit on the diagonal.
fig, ax = plt.subplots(figsize=(5, 5))
raw, corrected = curves["HistGradientBoosting"]
for proba, label in ((raw, "balanced weights"), (corrected, "prior-corrected")):
    frac, mean = calibration_curve(y_test, proba[:, 1], n_bins=12, strategy="quantile")
    ax.plot(mean, frac, "o-", label=label)
ax.plot([0, 1], [0, 1], "k:", label="perfect")
ax.set_xlabel("predicted P(positive)")
ax.set_ylabel("observed frequency")
ax.set_title("HistGradientBoosting, class_weight='balanced'")
ax.legend()
plt.show()

# %%
# An unknown deployment prior, estimated by EM
# --------------------------------------------
# At deployment the positive rate may differ from the training data's. Keep
# the positives of the test split and a third of its negatives (a positive
# rate about three times the training one) and let EM estimate the new prior
# from the unlabelled probabilities alone. EM trusts the posteriors it is
# given, so it starts from the *calibrated* model (the prior correction and
# the calibrator chosen by ``auto`` above), whose prior is the validation
# split's class frequencies.
rng = np.random.default_rng(0)
keep = (y_test == 1) | (rng.uniform(size=len(y_test)) < 1 / 3)
deploy = auto.predict_proba(X_test[keep])  # the last model of the loop
val_prior = np.bincount(y_val) / len(y_val)
em = PriorCorrection(train_prior=val_prior, target_prior="em").fit(deploy)
shifted = y_test[keep]
print(
    f"true positive rate {shifted.mean():.3f}, EM estimate "
    f"{em.target_prior_[1]:.3f} ({em.n_iter_} iterations)"
)
print(
    f"log-loss on the shifted data: calibrated for the old prior "
    f"{log_loss(shifted, deploy):.4f}, corrected to the EM prior "
    f"{log_loss(shifted, em.predict_proba(deploy)):.4f}"
)
