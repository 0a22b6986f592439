"""numba is an acceleration, never a requirement: without it every path gives
the same numbers through numpy; with it, results do not depend on the number
of threads, and numba's non-thread-safe "workqueue" layer does not abort a
process whose threads call the metrics concurrently.

The checks run in child processes (numba reads its threading settings at
import, and "numba absent" means an import that fails), the compiled side of
a comparison in the test's own process where its settings are the child's."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sklcalib._utils._optional import DISABLE_NUMBA_ENV, is_installed


def _run_child(code, env_extra=None, args=(), timeout=600):
    env = {k: v for k, v in os.environ.items() if k != DISABLE_NUMBA_ENV}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_the_environment_variable_hides_numba(monkeypatch):
    monkeypatch.setenv(DISABLE_NUMBA_ENV, "1")
    assert not is_installed("numba")
    monkeypatch.setenv(DISABLE_NUMBA_ENV, "0")
    assert is_installed("numba") == (
        __import__("importlib.util").util.find_spec("numba") is not None
    )


# Above the sizes that crashed without numba (issue: calibration_test from
# about 6 000 rows with 3 classes, bootstrap_interval("ece") from 17 000 rows).
_UNCERTAINTY = """
import json
import numpy as np
from sklcalib.metrics import bootstrap_interval, calibration_test
from sklcalib._utils import _resampling
assert 1000 * 8000 * 3 > _resampling._COMPILED_MIN_WORK
assert 1000 * 20000 > _resampling._COMPILED_MIN_WORK
rng = np.random.default_rng(0)
p = rng.dirichlet(np.ones(3), size=8000)
y = rng.integers(0, 3, 8000)
test = calibration_test(y, p, metric="classwise_ece", random_state=0)
p2 = rng.dirichlet(np.ones(3), size=20000)
y2 = rng.integers(0, 3, 20000)
ci = bootstrap_interval("ece", y2, p2, random_state=0)
RESULT = json.dumps({
    "test": [test.statistic, test.pvalue, test.null_distribution.tolist()],
    "ci": [ci.estimate, ci.low, ci.high, ci.bootstrap_distribution.tolist()],
})
"""
# the same in a child where every "import numba" fails, as when absent
_UNCERTAINTY_BLOCKED = (
    """
import sys
sys.modules["numba"] = None
"""
    + _UNCERTAINTY
    + """
print(RESULT)
print("numba" in sys.modules and sys.modules["numba"] is not None)
"""
)


@pytest.mark.slow
def test_uncertainty_without_numba_gives_the_compiled_numbers(monkeypatch):
    pytest.importorskip("numba")
    out = _run_child(_UNCERTAINTY_BLOCKED)
    assert out.returncode == 0, out.stderr[-3000:]
    blocked, imported = out.stdout.strip().splitlines()[-2:]
    assert imported == "False"
    # the compiled numbers in this process, on one thread as in a child
    # (NUMBA_NUM_THREADS is tests/conftest.py's), with the choice of path spied
    from sklcalib._utils import _resampling

    monkeypatch.delenv(DISABLE_NUMBA_ENV, raising=False)
    chosen = []
    choose = _resampling._compiled
    monkeypatch.setattr(
        _resampling, "_compiled", lambda work: chosen.append(choose(work)) or chosen[-1]
    )
    namespace = {}
    exec(_UNCERTAINTY, namespace)
    assert chosen and all(chosen)  # the compiled kernels did run
    assert json.loads(blocked) == json.loads(namespace["RESULT"])  # the same bits


_WORKQUEUE = """
import threading
import numba
import numpy as np
from sklcalib.metrics import expected_calibration_error
rng = np.random.default_rng(0)
n = 1 << 19  # 2**21 probabilities: above the fused kernel's 2**20
p = rng.dirichlet(np.ones(4), size=n)
y = rng.integers(0, 4, n)
reference = expected_calibration_error(y, p)
assert numba.threading_layer() == "workqueue"
results = []
def work():
    for _ in range(4):
        results.append(expected_calibration_error(y, p))
threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert results == [reference] * 8, results
print("ok")
"""


@pytest.mark.slow
def test_two_threads_under_the_workqueue_layer_do_not_abort():
    pytest.importorskip("numba")
    out = _run_child(
        _WORKQUEUE, {"NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    )
    # before the lock: exit 134, "Concurrent access has been detected"
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


# The fused kernels in one child with a two-thread numba pool (NUMBA_NUM_THREADS
# is read at import), so the comparison runs whatever the cores of this
# machine: the metrics' binned statistics over several chunks per thread and
# temperature scaling's NLL derivatives, each at one and two threads.
_THREAD_COUNTS = """
import json, numba, numpy as np
from sklcalib.calibration._temperature_fused import nll_derivatives
from sklcalib.metrics._fused import chunk_rows, fused_uniform_statistics
n, k = 200_000, 10
assert n > 4 * chunk_rows(k)  # several chunks per thread
rng = np.random.default_rng(4)
p = rng.dirichlet(np.full(k, 0.3), size=n).astype(np.float32)
p /= p.sum(axis=1, keepdims=True, dtype=np.float32)
y = rng.integers(0, k, n)
w = rng.random(n)
rng = np.random.default_rng(3)
logits = rng.normal(scale=3.0, size=(100_000, 10))
y_logits = rng.integers(0, 10, 100_000)
bits = {"statistics": [], "temperature": []}
for threads in (1, 2):
    numba.set_num_threads(threads)
    bits["statistics"].append(
        [a.tobytes().hex() for a in fused_uniform_statistics(p, y, 15, w)]
    )
    bits["temperature"].append(
        np.array(nll_derivatives(logits, y_logits, 0.7)).tobytes().hex()
    )
# the same bits, not just close
print(json.dumps({kernel: one == two for kernel, (one, two) in bits.items()}))
"""


def test_fused_kernels_do_not_depend_on_the_thread_count():
    pytest.importorskip("numba")
    out = _run_child(_THREAD_COUNTS, {"NUMBA_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr[-3000:]
    same = json.loads(out.stdout.strip().splitlines()[-1])
    assert same == {"statistics": True, "temperature": True}


def test_temperature_kernel_matches_the_numpy_reference():
    pytest.importorskip("numba")
    from sklcalib.calibration._temperature_nll import nll_derivatives

    rng = np.random.default_rng(5)
    logits = rng.normal(scale=2.0, size=(3000, 7))
    y = rng.integers(0, 7, 3000)
    fused = nll_derivatives(logits, y, fused=True)(1.3)
    reference = nll_derivatives(logits, y, fused=False)(1.3)
    np.testing.assert_allclose(fused[:3], reference[:3], rtol=1e-11, atol=1e-13)
