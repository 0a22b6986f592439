"""Monte Carlo of ``select_calibrator``'s choices on models with a known answer.

Labels are drawn from a model's own probabilities (binary: logits N(0, 2²);
four classes: logits N(0, 1.5²) per class), so the raw scores are calibrated;
the over-confident case multiplies those logits by 2.5, so temperature scaling
with T = 2.5 is the truth. For each calibration-set size and seed the default
candidates are compared with the default rule (one standard error of the
paired fold differences) and with ``rule="best"``; the table gives how often
each keeps "passthrough" (calibrated) or chooses a scaling method with the
right shape (over-confident), and the mean excess test log-loss of the chosen
calibrator over the truth on 20 000 fresh rows.

Run: ``python benchmarks/auto_selection_montecarlo.py [n_seeds]`` (single
thread; 10 to 20 minutes for 40 seeds on one core of a shared machine; the
output of that run is committed beside this script as
``auto_selection_montecarlo.md``).
"""

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy.special import softmax

from sklcalib.calibration import select_calibrator


def _draw(n, k, rng):
    scale = 2.0 if k == 2 else 1.5
    if k == 2:
        logit = rng.normal(0.0, scale, size=n)
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
        return logit, y
    z = rng.normal(0.0, scale, size=(n, k))
    p = softmax(z, axis=1)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    return z, y


def _nll(proba, y):
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-300, 1))))


def main(n_seeds=40):
    print(
        "| classes | truth | n | rule | keeps none | temperature | other | "
        "excess test NLL | which other |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for k in (2, 4):
        for truth, factor in (("calibrated", 1.0), ("over-confident", 2.5)):
            for n in (300, 1000, 3000):
                for rule in ("one_se", "best"):
                    counts = {"passthrough": 0, "temperature": 0, "other": 0}
                    others = {}
                    excess = []
                    for seed in range(n_seeds):
                        rng = np.random.default_rng(seed)
                        z, y = _draw(n, k, rng)
                        zt, yt = _draw(20_000, k, rng)
                        sel = select_calibrator(
                            factor * z, y, response="logits", rule=rule
                        )
                        key = sel.name if sel.name in counts else "other"
                        others[sel.name] = others.get(sel.name, 0) + (key == "other")
                        counts[key] += 1
                        p_true = (
                            softmax(np.column_stack([0 * zt, zt]), axis=1)
                            if k == 2
                            else softmax(zt, axis=1)
                        )
                        excess.append(
                            _nll(sel.predict_proba(factor * zt), yt) - _nll(p_true, yt)
                        )
                    print(
                        f"| {k} | {truth} | {n} | {rule} | "
                        f"{counts['passthrough']}/{n_seeds} | "
                        f"{counts['temperature']}/{n_seeds} | "
                        f"{counts['other']}/{n_seeds} | "
                        f"{np.mean(excess):.4f} | "
                        + ", ".join(f"{k} {v}" for k, v in others.items() if v)
                        + " |",
                        flush=True,
                    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
