"""Helpers several test modules share (a module, not a conftest fixture, so
that each test module imports what it uses by name)."""

import atexit
import contextlib
import shutil
import tempfile
import warnings

import numpy as np


def import_probmetrics_calibrators():
    """``probmetrics.calibrators`` (the reference implementations of the
    leader tests), imported without the DeprecationWarning of its dependency
    pytorch-minimize (torchmin 0.1 calls ``torch.jit.script`` at import, which
    torch deprecates): not ours to fix, and not news to the tests.

    Its SAGA kernels are cached by numba in this process's own folder: they
    take a kernel as an argument, and numba (0.68 here) cannot read back an on-disk
    index written by another process for such signatures (a new
    specialisation then fails with "underlying object has vanished"), which
    xdist's workers and earlier runs leave behind."""
    from numba.core import config

    shared_folder = config.CACHE_DIR
    config.CACHE_DIR = tempfile.mkdtemp(prefix="probmetrics-numba-")
    atexit.register(shutil.rmtree, config.CACHE_DIR, ignore_errors=True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", "`torch.jit.script` is deprecated", DeprecationWarning
            )
            from probmetrics import calibrators
    finally:
        config.CACHE_DIR = shared_folder
    return calibrators


def small_net(**params):
    """A small, seeded NetClassifier (16 hidden units, 4 epochs) for tests
    that need a net, not a good one; ``params`` override the defaults."""
    from sklcalib.net import NetClassifier  # torch is an optional extra

    defaults = {"module__hidden_units": (16,), "max_epochs": 4, "random_state": 0}
    return NetClassifier(**{**defaults, **params})


@contextlib.contextmanager
def local_dask_client(*, processes, **client_params):
    """A two-worker, one-thread-each dask ``LocalCluster`` and its client,
    closed on exit; ``processes=True`` starts worker processes."""
    import distributed  # the dask extra

    # worker processes listen on the loopback interface; an in-process
    # cluster needs no address
    where = {"host": "127.0.0.1"} if processes else {}
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=processes,
        dashboard_address=None,
        # the scheduler's HTTP routes still listen, on 8787 by default: a free
        # port instead, or clusters of concurrent tests (xdist workers, other
        # runs on the machine) warn "Port 8787 is already in use"
        scheduler_kwargs={"dashboard_address": ":0"},
        **where,
    )
    client = distributed.Client(cluster, **client_params)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def draw_targets(data, logits):
    """Draw, with hypothesis's ``data``, one class index per row of the numpy
    ``logits`` (N, K); return logits and targets as torch tensors."""
    import torch  # the torch extra
    from hypothesis import strategies as st

    n, k = logits.shape
    y = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return torch.from_numpy(logits), torch.from_numpy(y)


def assert_weights_are_repeated_rows(calibrator, X, y, *, atol=0.0, rtol=0.0, seed=1):
    """Fit clones of ``calibrator`` with integer weights in 0..3 and on the
    rows repeated as often: the probabilities on ``X`` agree (``atol``,
    ``rtol``), and differ from the unweighted fit's (the weights matter).
    Returns the weighted and the repeated fits."""
    from sklearn.base import clone

    w = np.random.default_rng(seed).integers(0, 4, size=len(y))
    weighted = clone(calibrator).fit(X, y, sample_weight=w)
    repeated = clone(calibrator).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), rtol=rtol, atol=atol
    )
    plain = clone(calibrator).fit(X, y)
    assert not np.allclose(plain.predict_proba(X), weighted.predict_proba(X))
    return weighted, repeated


#: why scikit-learn's weight-equivalence check fails on SplineCalibrator
SPLINE_GRID = (
    "integer weights are repeated rows up to the spline's O(1/n) rank grid (a "
    "repeated row is a tie spread over its ranks, the weighted row one point "
    "at their middle), which on the check's 15 rows exceeds its tolerance; "
    "test_leaders_spline.py bounds the gap (5e-3 on 300 rows, 3e-4 on 3000)"
)
