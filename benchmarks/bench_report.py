"""Wall time of ``sklcalib report`` with its default settings, process start
included, as a user runs it.

For every size in ``--n`` (by default both sizes of the goals below), writes
``n`` x ``--k`` softmax probabilities (float32 by default, as most
models emit them; ``--dtype float64`` otherwise) with labels drawn from them
to an ``.npz`` file in a temporary folder, then times, per repeat:

- ``python -c "import sklcalib.cli.main"`` (interpreter and import cost);
- ``python -m sklcalib report FILE`` (the whole command, default settings);
  both as wall time and as the child's CPU time (user + system), which on a
  shared machine is the better estimate of an idle machine's wall time;
- with ``--profile``, once: ``calibration_report`` in-process under cProfile,
  printing the functions with the largest own time (the hot spots).

Reported: median and range over the repeats, and the load average before and
after (on a shared machine wall times are rough). Goals (issue 19): 1e5 x 10
within 10 s wall on 2 cores (3 s is the real goal), 1e6 x 10 within 60 s.
Thread settings are those of the environment (printed). About 40 s with the
defaults on 2 idle cores. Run::

    python benchmarks/bench_report.py [--n 100000 1000000] [--k 10] [--repeats 3]
        [--profile] [-- extra report options, e.g. --no-intervals]
"""

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_file(path, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = (p / p.sum(axis=1, keepdims=True)).astype(dtype)
    y = np.minimum((rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
    np.savez(path, y_true=y, y_prob=p)
    return y, p


def wall(cmd):
    """Wall seconds, CPU seconds (user + system of the child) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, out.stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("extra", nargs="*", help="options passed to the report")
    args = parser.parse_args(argv)
    env_threads = {
        key: os.environ.get(key)
        for key in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    print(f"cpus={os.cpu_count()} threads={env_threads} python={sys.executable}")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for n in args.n:
        run_size(args, n)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def run_size(args, n):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.npz"
        y, p = make_file(path, n, args.k, args.dtype)
        report = [sys.executable, "-m", "sklcalib", "report", str(path), *args.extra]
        runs = {
            "import wall": [],
            "import cpu": [],
            "report wall": [],
            "report cpu": [],
        }
        for _ in range(args.repeats):
            elapsed, cpu, _ = wall([sys.executable, "-c", "import sklcalib.cli.main"])
            runs["import wall"].append(elapsed)
            runs["import cpu"].append(cpu)
            elapsed, cpu, stdout = wall(report)
            runs["report wall"].append(elapsed)
            runs["report cpu"].append(cpu)
        print(stdout)
        # on a shared machine the wall time includes waiting for a core; the
        # CPU time (user + system) is what an idle machine would take, about
        for name, times in runs.items():
            print(
                f"{name:12s} median {statistics.median(times):7.2f} s "
                f"(range {min(times):.2f}-{max(times):.2f}) "
                f"n={n} k={args.k} {args.dtype} {' '.join(args.extra)}"
            )
        if args.profile:
            from sklcalib.metrics import calibration_report

            profiler = cProfile.Profile()
            profiler.enable()
            calibration_report(y, p)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
