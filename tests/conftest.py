"""Shared test configuration.

Plots use the non-interactive Agg backend, torch runs on one thread so that
pytest-xdist workers do not oversubscribe the two cores of CI, and hypothesis
uses a CI profile with no deadline (timings on shared machines are noisy).
"""

import os
import sys

# the non-interactive backend, set before matplotlib (an optional extra; the
# core-only CI run has none) is first imported
os.environ["MPLBACKEND"] = "Agg"

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


def pytest_configure(config):
    # One intra-op thread per test process: CI has two cores and pytest-xdist
    # already runs two processes; more threads only fight over the cores (the
    # tiny nets of the tests run 10x slower oversubscribed). torch is the
    # optional "torch" extra: the core-only CI run has none.
    try:
        import torch
    except ModuleNotFoundError:
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    """A tiny 3-class problem (200 x 5) for the net and callback tests; a test
    module may override it with its own ``data``."""
    from sklearn.datasets import make_classification

    return make_classification(
        n_samples=200,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    if "matplotlib.pyplot" in sys.modules:  # only tests that plotted
        sys.modules["matplotlib.pyplot"].close("all")
