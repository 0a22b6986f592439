"""The memory ``sklcalib report`` peaks at, per byte of the scores it reads.

The default ``--max-bytes`` (:func:`sklcalib.io.default_max_bytes`) is what
the process may still allocate, less ``PEAK_FIXED``, divided by
``PEAK_FACTOR``; ``--calibrate auto`` is refused before its fits when
``PEAK_FIXED + PEAK_FACTOR_SELECTION * n_fit * K**2 * 8`` bytes exceed that
(its matrix-type candidates grow with the square of the classes). This script
measures the peaks those constants must cover. Each case writes an .npz of
n x K float64 probabilities (labels drawn from them), runs the command once to
warm the compiled kernels and caches, then again under ``tracemalloc`` (numpy
reports its allocations to it), and prints the peak, the budget and their
ratio.

    python benchmarks/bench_report_memory.py            # the report alone
    python benchmarks/bench_report_memory.py --calibrate auto --sizes 20000x10 60000x10

Measured on 2026-11-28 (numpy 2, numba installed, one thread): the report with
intervals peaks at 93-105 MiB for binary files of 20 000-200 000 rows (fixed
tables) and at 4.3 times the scores plus 0-100 MiB otherwise (100 000 x 10: 32
MiB for 7.6 MiB; 20 000 x 300: 146 MiB for 46 MiB); --calibrate temperature
within the same bound; --calibrate auto (with a --fit-on file of the same size)
at 55 MiB for 20 000 x 10, 164 MiB for 60 000 x 10 and 387 MiB for 20 000 x 30:
below 128 MiB + 1.9 n K^2 float64.
"""

import argparse
import contextlib
import io
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.special import softmax

from sklcalib._utils._memory import PEAK_FACTOR, PEAK_FACTOR_SELECTION, PEAK_FIXED
from sklcalib.cli import main


def _file(folder, n, k, seed):
    rng = np.random.default_rng(seed)
    p = softmax(2 * rng.normal(size=(n, k)), axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1)
    path = Path(folder) / f"p_{n}_{k}_{seed}.npz"
    np.savez(path, y_true=y, y_prob=p)
    return path


def peak(n, k, extra, folder):
    """(peak bytes, scores' bytes) of one ``sklcalib report`` run."""
    path = _file(folder, n, k, 0)
    argv = ["report", str(path), *extra]
    data = n * k * 8
    if "--calibrate" in extra:
        argv += ["--fit-on", str(_file(folder, n, k, 1))]
        data *= 2
    with contextlib.redirect_stdout(io.StringIO()):
        main(argv)  # compiled kernels, caches
        tracemalloc.start()
        try:
            main(argv)
            return tracemalloc.get_traced_memory()[1], data
        finally:
            tracemalloc.stop()


def main_(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", nargs="+", default=["20000x2", "200000x2", "100000x10", "20000x300"]
    )
    parser.add_argument("--calibrate", default=None)
    args = parser.parse_args(argv)
    extra = ["--calibrate", args.calibrate] if args.calibrate else []
    print(f"{'n x K':>12} {'peak MiB':>9} {'budget MiB':>11} {'peak/budget':>12}")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            n, k = map(int, size.split("x"))
            top, data = peak(n, k, extra, folder)
            budget = PEAK_FIXED + (
                PEAK_FACTOR_SELECTION * n * k * k * 8
                if args.calibrate == "auto"
                else PEAK_FACTOR * data
            )
            print(
                f"{size:>12} {top / 2**20:9.1f} {budget / 2**20:11.1f} "
                f"{top / budget:12.2f}" + ("" if top <= budget else "  OVER BUDGET")
            )


if __name__ == "__main__":
    main_()
