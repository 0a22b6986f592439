"""Helpers of the ``sklcalib report`` tests: run the command in-process, write
labels and scores as a CSV file, draw labels from a known model."""

import numpy as np
from scipy.special import softmax

from sklcalib.cli import main


def run_report(capsys, *argv):
    """``sklcalib report ARGV...`` in-process: ``(status, stdout, stderr)``."""
    status = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def write_csv(path, y, scores, classes):
    """A CSV with a ``y_true`` column of class names and one score column per
    class, in ``classes``' order; returns ``path``."""
    lines = [",".join(["y_true", *classes])]
    lines += [
        ",".join([classes[k], *(repr(float(v)) for v in row)])
        for k, row in zip(y, scores, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def draw_labels(n, seed, n_classes=3):
    """``(y, z)``: logits ``z = 1.5 N(0, 1)`` and labels drawn from
    ``softmax(z)``, so that ``softmax(t z)`` is miscalibrated by a temperature
    of ``t``."""
    rng = np.random.default_rng(seed)
    z = 1.5 * rng.normal(size=(n, n_classes))
    p = softmax(z, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return y, z
