"""
The theory behind focal-type losses, computed
=============================================

Three claims from the papers sklcalib is built from, checked numerically with
:mod:`sklcalib.diagnostics`:

1. Focal loss scales the cross-entropy gradient by g(p, γ): it *enlarges* the
   gradient of samples whose true-class probability p is below a threshold p0 and
   *shrinks* it above (Mukhoti et al. 2020, Proposition 1, Figure 4a); the γ that
   puts the threshold at p0 has a closed form through the Lambert W function
   (Proposition 2).
2. Dual focal loss reduces the region where the risk minimiser is
   under-confident, compared to focal loss (Tao et al. 2023, Section 4,
   Figure 1).
3. Focal loss lowers the curvature of the loss surface (Kimura & Naganuma): we
   measure the trace of the Hessian of the training loss of small networks
   trained with increasing γ.
"""

# %%
# The gradient ratio g(p, γ)
# --------------------------
# g(p, γ) = (1 − p)^γ − γ·p·(1 − p)^(γ−1)·log p. Where g > 1 focal loss pushes
# harder than cross-entropy (γ = 0, g ≡ 1), where g < 1 it regularises. The
# larger γ, the earlier and steeper the fall: for γ ≥ 7 the gradient nearly
# vanishes from p ≈ 0.5 on, which is why Mukhoti et al. do not simply take γ
# large.
import matplotlib.pyplot as plt
import numpy as np

from sklcalib.diagnostics import focal_gradient_ratio, gamma_for_threshold

p = np.linspace(0, 1, 501)
fig, ax = plt.subplots(figsize=(6, 4))
for gamma in [0, 1, 2, 3, 4, 5, 7]:
    ax.plot(p, focal_gradient_ratio(p, gamma), label=f"γ = {gamma}")
ax.axhline(1, color="k", lw=0.8, ls="--")
ax.set(xlabel="p (probability of the true class)", ylabel="g(p, γ)")
ax.set_title("Focal over cross-entropy gradient (Mukhoti et al., Fig. 4a)")
ax.legend(ncol=2)
plt.show()

# %%
# The γ for a threshold, by the Lambert W function
# ------------------------------------------------
# Proposition 2 gives γ*(p0), the smallest positive γ with g(p, γ) ≤ 1 for every
# p ≥ p0, through the lower branch W₋₁ of the Lambert W function. γ*(0.2) ≈ 4.85 is the
# γ = 5 that the sample-dependent focal loss FLSD-53 uses below p = 0.2. From
# p0 = 0.5 on, γ* = 0: every γ already shrinks the gradient there.
p0 = np.linspace(0.02, 0.7, 300)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(p0, gamma_for_threshold(p0))
ax.plot([0.2], [gamma_for_threshold(0.2)], "o", label="FLSD-53: γ*(0.2) ≈ 4.85")
ax.set(xlabel="threshold p0", ylabel="γ*(p0)", yscale="log", ylim=(0.05, 50))
ax.set_title("γ* by the Lambert W function (Proposition 2)")
ax.legend()
plt.show()

print(f"gamma*(0.2) = {gamma_for_threshold(0.2):.4f}")
print(f"g(0.2, gamma*(0.2)) = {focal_gradient_ratio(0.2, gamma_for_threshold(0.2))}")

# %%
# Over- and under-confidence of focal and dual focal loss
# -------------------------------------------------------
# The risk minimiser q* of focal-type losses satisfies η_i ∝ q*_i / φ(q*_i),
# where η is the true class posterior. For dual focal loss with dual
# probability C, φ(v) = (1 − v + C)^γ − γ(1 − v + C)^(γ−1)·v·log v (C = 0 is focal
# loss, and then φ = g). φ rises to a maximum at v^m and falls after it: the
# minimiser is over-confident on (0, v^m] and under-confident from where φ
# comes back down to 1. With C > 0, φ starts at (1 + C)^γ > 1, and that point
# v^uc moves right: a smaller under-confident region (Lemma 1, Figure 1 of Tao
# et al., γ = 1, C = 0.3).
from sklcalib.diagnostics import dual_focal_phi, dual_focal_regions

gamma, C = 1.0, 0.3
v = np.linspace(0, 1, 501)
focal, dual = dual_focal_regions(0.0, gamma), dual_focal_regions(C, gamma)

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(v, dual_focal_phi(v, 0.0, gamma), label="focal loss (C = 0)")
ax.plot(v, dual_focal_phi(v, C, gamma), label=f"dual focal loss (C = {C})")
ax.axhline(1, color="k", lw=0.8, ls="--")
ax.axvspan(0, dual.v_max, color="tab:red", alpha=0.1, label="over-confident")
ax.axvspan(focal.v_uc, 1, color="tab:blue", alpha=0.08, label="under-confident, FL")
ax.axvspan(dual.v_uc, 1, color="tab:blue", alpha=0.2, label="under-confident, DFL")
for name, x in [("$v^m$", dual.v_max), ("$v'$", focal.v_uc), ("$v^{uc}$", dual.v_uc)]:
    ax.annotate(name, (x, 0.02), ha="center")
ax.set(xlabel="$q_m^*$", ylabel="φ", ylim=(0, 1.6))
ax.set_title("φ of focal and dual focal loss (Tao et al., Fig. 1)")
ax.legend(loc="upper right", fontsize="small")
plt.show()

print(f"under-confident region: focal [{focal.v_uc:.3f}, 1), dual [{dual.v_uc:.3f}, 1)")

# %%
# Curvature of the training loss against γ
# ----------------------------------------
# We train the same network on the same noisy synthetic task with focal loss
# for several γ (γ = 0 is cross-entropy). The training set is small (400
# samples) so that the network can memorise it, as the deep networks of the
# papers memorise CIFAR: that is where cross-entropy becomes over-confident.
# For each net we estimate the trace of the Hessian of its training loss with
# Hutchinson's estimator (Rademacher probes, with its standard error) and its
# largest eigenvalue by power iteration. Kimura & Naganuma predict that the
# curvature falls as γ grows, and that lower curvature goes with better
# calibration, which the test-set ECE lets us compare.
import torch

from sklcalib import NetClassifier, expected_calibration_error
from sklcalib.datasets import load_classification
from sklcalib.diagnostics import hessian_trace, top_hessian_eigenvalue

torch.set_num_threads(1)  # nets this small train fastest on one thread

data = load_classification(random_state=0)
X_train, y_train = data.X_train[:400], data.y_train[:400]
gammas = [0.0, 1.0, 2.0, 3.0, 5.0]
traces, errors, top, ece = [], [], [], []
for gamma in gammas:
    net = NetClassifier(
        criterion="focal",
        criterion__gamma=gamma,
        module__hidden_units=(64,),
        max_epochs=60,
        lr=1e-2,
        batch_size=64,
        train_split=None,
        random_state=0,
    ).fit(X_train, y_train)
    trace, se = hessian_trace(
        net, X_train, y_train, n_samples=50, random_state=0, return_std=True
    )
    traces.append(trace)
    errors.append(se)
    top.append(top_hessian_eigenvalue(net, X_train, y_train, random_state=0))
    ece.append(expected_calibration_error(data.y_test, net.predict_proba(data.X_test)))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
ax1.errorbar(
    gammas,
    traces,
    yerr=2 * np.array(errors),
    marker="o",
    capsize=3,
    label="trace (±2 s.e.)",
)
ax1.plot(gammas, top, "s--", label="largest eigenvalue")
ax1.set(xlabel="γ", ylabel="Hessian of the training loss", yscale="log")
ax1.set_title("Curvature against γ")
ax1.legend()
ax2.plot(gammas, ece, "o-", color="tab:green")
ax2.set(xlabel="γ", ylabel="test ECE (15 bins)")
ax2.set_title("Calibration against γ")
fig.tight_layout()
plt.show()

for row in zip(gammas, traces, errors, top, ece, strict=True):
    print(
        "gamma={:.0f}  trace={:7.3f} ± {:.3f}  top eigenvalue={:7.3f}  "
        "ECE={:.4f}".format(*row)
    )
