"""End to end: the losses' defaults train sensible models (slow)."""

import numpy as np
import pytest
from sklearn.datasets import make_moons

from sklcalib import NetClassifier


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_mmce_trains_on_binary_moons(seed):
    # With Kumar et al.'s single normalisation and λ = 2, MMCE_w overwhelms the
    # cross-entropy on binary problems and the net stays at chance (test errors
    # 0.52-0.57 on these seeds); the default, the papers' baseline (Mukhoti et
    # al.'s normalisation), reaches about 0.05-0.06
    X, y = make_moons(1500, noise=0.25, random_state=seed)
    X = X.astype(np.float32)
    net = NetClassifier(criterion="mmce", max_epochs=100, random_state=seed)
    net.fit(X[:1000], y[:1000])
    error = np.mean(net.predict(X[1000:]) != y[1000:])
    assert error < 0.2, f"test error {error:.3f}, chance is 0.5"
