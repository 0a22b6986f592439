"""Why a cell of the coverage table covers less than 95 %: the path's
direction or the simulated law itself.

``calibration_error_interval`` keeps a population error when the observed
statistic ``T`` lies within the central 95 % of its simulated law at the
point of the path ``pbar + s * g`` (``g`` the shrunk gaps) whose error it is.
The interval covers the truth exactly when ``T`` lies within the law at the
path point of the *true* error. Two things can put ``T`` outside it more
often than 5 %:

- the **direction**: ``g`` is estimated from the same rows as ``T``, so the
  path point of the true error is not the true configuration of cell
  accuracies; where the statistic's spread depends on how the error is
  shared between well-measured and sparse cells, a test set whose sparse
  cells saw few positives also puts the path's error in the quiet cells,
  and its law is too narrow just when ``T`` is low;
- the **law**: given the cells' true accuracies (the mean of every row's
  true probability in the cell, known on a bed) the simulation itself may
  misjudge the statistic's spread or skew (the cells' row counts are taken
  as given, not resampled).

Per cell and replication this script places ``T`` in both laws (the
coverage table's replications, the interval's own simulated draws and
quantile rule) and reports how often it falls below the 2.5 % and above the
97.5 % quantile of each: the interval misses the truth as often as ``T``
falls outside the path's law (above its 97.5 % quantile: the interval lies
above the truth). A law at the true accuracies that holds
``T`` 95 % of the time while the path's does not points at the direction.

Run (single-threaded BLAS, ``nice``)::

    python benchmarks/bench_interval_direction.py --reps 1000 \\
        --csv docs/_static/interval_coverage/direction.csv

``tests/test_metrics_interval_beds.py`` runs a seeded fast variant.
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _beds
import bench_interval_coverage as coverage

#: (bed, n, error label of bench_interval_coverage.SPECS): the binned cells
#: below 93 % in the coverage table, and controls that cover
CELLS = (
    ("rare_under", 10_000, "classwise_ece_l2"),
    ("rare_under", 100_000, "classwise_ece_l2"),
    ("rare_under", 100_000, "ece"),
    ("logistic_over", 300, "ece"),
    ("flat_under", 300, "classwise_ece_l2"),
    ("logistic_under", 100_000, "classwise_ece"),
    ("logistic_over", 1000, "ece"),
    ("rare_under", 1000, "classwise_ece_l2"),
)
LEVEL = coverage.LEVEL


def _true_accuracies(metric, y_idx, p, q, n_bins):
    """Per kept cell (as ``_binned_cells`` keeps them) the mean over its rows
    of their true probability of the cell's outcome: the top label's for a
    top-label error, class ``k``'s in the cells of column ``k``."""
    from sklcalib._utils._binning import bin_index, quantile_groups, top_label
    from sklcalib._utils._binning import uniform_edges as _edges
    from sklcalib._utils._scores import as_columns

    columns = as_columns(p)
    truth = as_columns(q)
    if metric in ("ece", "adaptive_ece"):
        conf, _ = top_label(p, y_idx)
        conf = conf.astype(np.float64)
        # the top label's true probability (top_label's argmax, first of ties)
        right = truth[np.arange(truth.shape[0]), np.argmax(columns, axis=1)]
        if metric == "ece":
            idx = bin_index(conf, _edges(n_bins))
        else:
            idx = quantile_groups(conf, n_bins)[0]
        parts = [(idx, right)]
    else:
        classes = [1] if columns.shape[1] == 2 else range(columns.shape[1])
        edges = _edges(n_bins)
        parts = [(bin_index(columns[:, k], edges), truth[:, k]) for k in classes]
    out = []
    for idx, right in parts:
        rows = np.bincount(idx, minlength=n_bins)
        sums = np.bincount(idx, weights=right, minlength=n_bins)
        out.append(sums[rows > 0] / rows[rows > 0])
    return np.concatenate(out)


def _side(law, observed, alpha):
    """-1 when ``observed`` lies below the law's central ``1 - alpha``
    range, +1 above it, 0 within: the interval's own rule (the k-th smallest
    and largest of the draws, ``k = floor(alpha / 2 (draws + 1))``)."""
    b = law.shape[0]
    k = max(int(np.floor(alpha / 2.0 * (b + 1))), 1)
    if observed < np.partition(law, k - 1)[k - 1]:
        return -1.0
    if observed > np.partition(law, b - k)[b - k]:
        return 1.0
    return 0.0


def sides(bed, n, label, reps, seed=0):
    """Per replication where the observed statistic lies in its simulated
    law at the path point of the true error and at the cells' true
    accuracies (:func:`_side`; NaN where the path does not reach the
    truth): two arrays."""
    from sklcalib._utils._resampling import stream_seeds
    from sklcalib._utils._validation import check_prob_values, check_targets
    from sklcalib.metrics import _cells, _intervals

    spec = next(s for s in coverage.SPECS if s[0] == label)
    _, metric, params = spec
    if metric not in ("ece", "adaptive_ece", "classwise_ece"):
        raise ValueError(f"label must be a binned plug-in error, got {label!r}.")
    kind = params.get("norm", "l1")
    stat_kind = _cells.STATISTIC_OF[kind]
    n_bins = params.get("n_bins", 15)
    truth = coverage._truth(bed, metric, params)
    alpha = 1.0 - LEVEL
    rng = np.random.default_rng([seed, n, sum(map(ord, bed.name))])
    path, true = np.full(reps, np.nan), np.full(reps, np.nan)
    for r in range(reps):
        y, p, q = bed.sample(rng, n, with_truth=True)
        y_idx, pp, _, w = check_targets(y, p, np.arange(bed.n_classes), None)
        pp = check_prob_values(pp)
        if q.ndim == 1:
            q = np.stack([1.0 - q, q], axis=1)
        cells = _cells._binned_cells(metric, y_idx, pp, w, n_bins)
        # the interval's own draws (the coverage table's random_state=r)
        n_cells = cells.n.shape[0]
        n_draws = int(
            min(
                _intervals.N_DRAWS,
                max(_intervals._MIN_DRAWS, _intervals._DRAW_BUDGET // n_cells),
            )
        )
        rng_r = np.random.default_rng(stream_seeds(r, 1)[0])
        draws = _cells.CellDraws(cells.n, rng_r, n_draws)
        observed = float(_cells._statistic(cells, cells.ybar, stat_kind))
        mu = _true_accuracies(metric, y_idx, pp, q, n_bins)
        law = _cells._statistic(cells, draws.means(mu), stat_kind)
        true[r] = _side(law, observed, alpha)
        g = _cells._shrunk_gaps(cells)
        s = _path_point(cells, g, truth, kind)
        if np.isfinite(s):
            law = _cells._statistic(cells, draws.means(cells.pbar + s * g), stat_kind)
            path[r] = _side(law, observed, alpha)
    return path, true


def _path_point(cells, g, truth, kind):
    """The ``s >= 0`` whose configuration ``pbar + s g`` has the population
    error ``truth`` (NaN when the path's half does not reach it)."""
    from scipy.optimize import brentq

    from sklcalib.metrics import _cells

    def excess(s):
        return _cells._truth(cells, cells.pbar + s * g, kind) - truth

    if not np.any(np.abs(g) > 1e-12) or excess(0.0) > 0:
        return float("nan")
    top = 1.0
    while excess(top) < 0:
        top *= 2.0
        if top > 1e6:
            return float("nan")
    return float(brentq(excess, 0.0, top, xtol=1e-10))


def direction_row(bed, n, label, reps, seed=0):
    """One cell's figures: how often ``T`` falls below the 2.5 % / above the
    97.5 % quantile of each law."""
    path, true = sides(bed, n, label, reps, seed)
    reached = np.isfinite(path)
    return {
        "bed": bed.name,
        "n": n,
        "error": label,
        "path below": float(np.mean(path[reached] < 0)),
        "path above": float(np.mean(path[reached] > 0)),
        "true below": float(np.mean(true < 0)),
        "true above": float(np.mean(true > 0)),
        "unreached": int(np.sum(~reached)),
        "reps": reps,
    }


COLUMNS = (
    "bed",
    "n",
    "error",
    "path below",
    "path above",
    "true below",
    "true above",
    "unreached",
    "reps",
)


def _format(row):
    return [
        f"{row[k]:.1%}" if isinstance(row[k], float) else str(row[k]) for k in COLUMNS
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--csv", default=None, help="write the table there too")
    args = parser.parse_args(argv)
    family = _beds.family()
    rows = []
    print(",".join(COLUMNS))
    for name, n, label in CELLS:
        row = _format(direction_row(family[name], n, label, args.reps, args.seed))
        rows.append(row)
        print(",".join(row), flush=True)
    if args.csv:
        coverage._write(args.csv, COLUMNS, rows)


if __name__ == "__main__":
    main()
