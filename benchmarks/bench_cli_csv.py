"""Memory and time of ``sklcalib report``'s csv reader against reading the
file into Python strings with the ``csv`` module (the earlier reader).

A csv of ``--rows`` x ``--classes`` softmax probabilities (written with
``repr``, 17 significant digits) is read in a fresh child process per
contender, so that each one's peak resident memory (``ru_maxrss``) is its own:
``typed``: :func:`sklcalib.io.read_predictions` (numpy's streaming
``loadtxt`` into float64, labels mapped to column indices as they are read);
``strings``: ``list(csv.reader(f))`` and a float64 conversion per column, as
the earlier reader did. Each repeat runs both back to back, alternating which
goes first; the table gives the median seconds and peak memory of each, and
the median of the per-repeat ratios (strings / typed) with their spread.
A child's baseline (the interpreter with numpy and sklcalib imported, nothing
read) is subtracted from its peak.

Run::

    python benchmarks/bench_cli_csv.py [--rows 300000] [--classes 10] [--repeats 3]

Thread settings: the reading is single-threaded in both contenders.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r"""
import csv, resource, sys, time
import numpy as np
import sklcalib.io as readers
kind, path = sys.argv[1], sys.argv[2]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if kind == "typed":
    scores = readers.read_predictions(path).scores
elif kind == "strings":
    with open(path, newline="") as fh:
        table = list(csv.reader(fh))
    header, body = table[0], table[1:]
    scores = np.column_stack(
        [np.asarray([float(r[j]) for r in body]) for j in range(1, len(header))]
    )
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(seconds, (peak - base) * 1024, scores.shape[0])
"""


def _write(path, rows, classes, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(rows, classes)) * 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, classes, size=rows)
    with open(path, "w") as fh:
        fh.write("y_true," + ",".join(f"c{k}" for k in range(classes)) + "\n")
        for k, row in zip(y, p, strict=True):
            fh.write(f"c{k}," + ",".join(repr(float(v)) for v in row) + "\n")


def _child(kind, path):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, memory, rows = out.stdout.split()
    return float(seconds), float(memory), int(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preds.csv"
        _write(path, args.rows, args.classes)
        size = path.stat().st_size
        results = {"typed": [], "strings": []}
        for r in range(args.repeats):
            order = ["typed", "strings"] if r % 2 == 0 else ["strings", "typed"]
            for kind in order:
                results[kind].append(_child(kind, path))
    print(
        f"csv of {args.rows} rows x {args.classes} classes: "
        f"{size / 2**20:.1f} MiB on disk; {args.repeats} repeats"
    )
    print(f"{'reader':<8} {'seconds':>8} {'peak MiB':>9} {'x file':>7}")
    for kind, runs in results.items():
        seconds = statistics.median(s for s, _, _ in runs)
        memory = statistics.median(m for _, m, _ in runs)
        print(f"{kind:<8} {seconds:8.2f} {memory / 2**20:9.1f} {memory / size:7.2f}")
    for i, what in ((0, "time"), (1, "memory")):
        ratios = [
            s[i] / t[i]
            for s, t in zip(results["strings"], results["typed"], strict=True)
        ]
        print(
            f"strings / typed, {what}: median {statistics.median(ratios):.2f} "
            f"(range {min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
