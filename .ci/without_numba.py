"""CI stage: the uncertainty API and ``sklcalib report --confidence-level``
in an environment without numba (the README's install has no ``fast`` extra),
above the sizes whose compiled paths used to be the only ones. Exits non-zero
on any failure. Run with a Python that cannot import numba."""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from sklcalib._utils._optional import is_installed
from sklcalib.metrics import (
    bootstrap_interval,
    calibration_error_interval,
    calibration_report,
    calibration_test,
    compare_calibration,
    kernel_calibration_error,
    multicalibration_audit,
)

# CI runs it where numba is absent; SKLCALIB_DISABLE_NUMBA=1 simulates that
assert not is_installed("numba"), "run this without numba"
rng = np.random.default_rng(0)
p = rng.dirichlet(np.ones(3), size=8000)
y = rng.integers(0, 3, 8000)
print(calibration_test(y, p, random_state=0).pvalue)
print(compare_calibration(y, p, p**2 / (p**2).sum(1, keepdims=True)).pvalue)
p = rng.dirichlet(np.ones(10), size=3000)
y = rng.integers(0, 10, 3000)
report = calibration_report(y, p, confidence_level=0.95, random_state=0)
assert report["ece_ci"][0] <= report["ece_ci"][1]
n = 20000
p = rng.dirichlet(np.ones(3), size=n)
y = rng.integers(0, 3, n)
ci = bootstrap_interval("ece", y, p, random_state=0)
print(ci.estimate, ci.low, ci.high)
print(calibration_error_interval(y, p, random_state=0))
print(compare_calibration(y, p, p**2 / (p**2).sum(1, keepdims=True)).pvalue)
# the report command crashed from about 6 000 rows: well above that, 10 classes
p = rng.dirichlet(np.ones(10), size=30000)
y = rng.integers(0, 10, 30000)
p1 = rng.uniform(size=10**6)
print(kernel_calibration_error(rng.uniform(size=10**6) < p1, p1))
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "predictions.npz"
    np.savez(path, y_true=y, y_prob=p)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sklcalib",
            "report",
            str(path),
            "--confidence-level",
            "0.95",
        ],
        capture_output=True,
        text=True,
    )
    print(out.stdout)
    assert out.returncode == 0, out.stderr
# the segment audit's simulated maxima have a compiled kernel too: 30 000
# rows, two segment columns, also through the report
n = 30000
q = rng.uniform(0.02, 0.98, n)
t = (rng.uniform(size=n) < q).astype(int)
segments = np.column_stack([rng.integers(0, 5, n), rng.integers(0, 3, n)])
print(multicalibration_audit(t, q, segments=segments, random_state=0))
report = calibration_report(t, q, segments=segments, random_state=0)
assert report["ece"] >= 0
print("without numba: ok")
