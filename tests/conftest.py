"""Shared test configuration.

Plots use the non-interactive Agg backend, torch runs on one thread so that
pytest-xdist workers do not oversubscribe the two cores of CI, and hypothesis
uses a CI profile with no deadline (timings on shared machines are noisy) and,
under CI, fixed examples.
"""

import os
import sys

# the non-interactive backend, set before matplotlib (an optional extra; the
# core-only CI run has none) is first imported
os.environ["MPLBACKEND"] = "Agg"
# One BLAS and OpenMP thread per test process, read when OpenBLAS and the
# OpenMP runtime load (child processes inherit it): pytest-xdist already runs
# one process per core, and oversubscribed OpenBLAS threads spin waiting for
# a core (the leaders' tests took twice the CPU time). A test that wants more
# threads sets them itself (threadpoolctl; numba in a child process with its
# own NUMBA_NUM_THREADS); a value set outside the suite wins. Numba's pool
# too: under the OpenMP threading layer its launch sets the process-wide
# libgomp to its thread count, and scikit-learn's OpenMP code (the boosting
# benchmark's HistGradientBoosting) then ran later tests of that worker on
# two spinning threads (29 CPU-s instead of 13 for test_accumulator.py and
# one boosting test under load).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import pytest
from hypothesis import HealthCheck, settings

# Under CI (CI=true) hypothesis draws the same examples on every run, so that
# a merge is judged on its code and not on a lucky draw; local runs keep
# exploring (a draw found the round-off in ece_sweep's monotonicity check).
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("CI", "").lower() in ("1", "true"),
)
settings.load_profile("ci")


# --- the suite does not warn ------------------------------------------------
# pytest's summary lists failures, errors and skips only (-rfEs); a warning a
# test provokes on purpose is asserted with pytest.warns or filtered at that
# test by message and category (@pytest.mark.filterwarnings). Any other warning
# fails the run, listed under "warnings that fail the run", so that the
# warnings summary stays empty. --allow-warnings turns the check off (e.g. to
# see what a dependency's new release deprecates before filtering it).
_WARNINGS = []


def pytest_addoption(parser):
    parser.addoption(
        "--allow-warnings",
        action="store_true",
        help="do not fail the run when a test warns (tests/conftest.py)",
    )


def pytest_warning_recorded(warning_message, when, nodeid, location):
    # with pytest-xdist the controller receives every worker's warnings too
    _WARNINGS.append(
        f"{nodeid or when}: {warning_message.category.__name__}: "
        f"{str(warning_message.message)[:120]}"
    )


def _checks_warnings(config):
    return not hasattr(config, "workerinput") and not config.getoption(
        "allow_warnings", False
    )


def pytest_sessionfinish(session, exitstatus):
    if _WARNINGS and _checks_warnings(session.config) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not (_WARNINGS and _checks_warnings(config)):
        return
    terminalreporter.section("warnings that fail the run", sep="=", red=True)
    for line in _WARNINGS[:50]:
        terminalreporter.line(line)
    terminalreporter.line(
        f"{len(_WARNINGS)} warning(s): assert the expected ones with pytest.warns "
        "or filter them at the test that provokes them (by message and "
        "category); --allow-warnings lets them pass"
    )


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


# --- the longest test starts first ---------------------------------------------
# The docs build (html, every gallery example, then the user guide's code) is
# a few times longer than any other test. pytest-xdist hands out the tests in
# collection order, so collected mid-run it may start when the other worker is
# nearly done and end alone; first, it runs beside the rest of the suite.
RUN_FIRST = ("tests/test_docs.py::test_site_builds_and_its_examples_and_user_guide",)


def pytest_collection_modifyitems(config, items):
    first = [item for item in items if item.nodeid.startswith(RUN_FIRST)]
    if first:
        items[:] = first + [item for item in items if item not in first]


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
