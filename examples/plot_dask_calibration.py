"""
Calibration past one machine: Dask arrays
=========================================

An evaluation set of a hundred million predictions does not fit in the memory
of a laptop, but its expected calibration error (ECE), its reliability diagram
and a temperature fitted on it need only a few numbers per bin. sklcalib
computes them chunk by chunk on the active `Dask <https://www.dask.org>`_
scheduler: every row block is validated and reduced to a small
:class:`~sklcalib.metrics.CalibrationAccumulator` on a worker, and the client
merges those. The probabilities never travel to the client and, here, are
never stored at all: each block is generated when a worker needs it.

This example runs on a scaled-down array so that the documentation builds in
seconds; set the environment variable ``SKLCALIB_EXAMPLE_ROWS=100000000`` to
run it on 1e8 rows x 10 classes (4 GB of float32 probabilities) with two
workers of 3 GiB each.
"""

# %%
# A local cluster and a lazily generated evaluation set
# -----------------------------------------------------
# A model's logits ``z`` for 10 classes: the true labels are drawn from
# ``softmax(z / 2)``, so the model (which predicts ``softmax(z)``) is
# over-confident and its best temperature is about 2. Every block is generated
# from its own seed: the same block always holds the same numbers.
import os
import resource

import dask
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster
from scipy.special import softmax

from sklcalib.calibration import TemperatureScaler
from sklcalib.metrics import calibration_report, expected_calibration_error
from sklcalib.plotting import ReliabilityDisplay

N_ROWS = int(float(os.environ.get("SKLCALIB_EXAMPLE_ROWS", 200_000)))
N_CLASSES = 10
CHUNK_ROWS = min(1_000_000, max(N_ROWS // 8, 1))
LABELS = np.arange(N_CLASSES)


def logits_block(block_id=None):
    rows = min(CHUNK_ROWS, N_ROWS - block_id[0] * CHUNK_ROWS)
    rng = np.random.default_rng([0, block_id[0]])
    return (3.0 * rng.standard_normal((rows, N_CLASSES))).astype(np.float32)


def labels_block(z, block_id=None):
    # inverse-CDF sampling of y ~ softmax(z / 2), row by row
    rng = np.random.default_rng([1, block_id[0]])
    cdf = np.cumsum(softmax(z / 2.0, axis=1), axis=1)
    return np.minimum((rng.random((z.shape[0], 1)) > cdf).sum(axis=1), N_CLASSES - 1)


def probabilities_block(z):
    return softmax(z, axis=1).astype(np.float32)


n_blocks = -(-N_ROWS // CHUNK_ROWS)
row_chunks = tuple(min(CHUNK_ROWS, N_ROWS - i * CHUNK_ROWS) for i in range(n_blocks))
z = da.map_blocks(
    logits_block,
    chunks=(row_chunks, (N_CLASSES,)),
    dtype=np.float32,
    meta=np.empty((0, N_CLASSES), np.float32),
)
y = da.map_blocks(labels_block, z, drop_axis=1, dtype=np.int64)
y_prob = da.map_blocks(probabilities_block, z, dtype=np.float32)
y_prob

# %%
# Two worker processes of at most 3 GiB each. ``fork`` starts the workers from
# this process without re-running the script (in a script of your own, create
# the cluster under ``if __name__ == "__main__":`` and keep Dask's default).
dask.config.set({"distributed.worker.multiprocessing-method": "fork"})
cluster = LocalCluster(
    n_workers=2,
    threads_per_worker=1,
    memory_limit="3GiB",
    dashboard_address=None,
    scheduler_kwargs={"dashboard_address": ":0"},  # a free port, not 8787
)
client = Client(cluster)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


at_start = client.run(peak_rss_mib)

# %%
# ECE and the other streamable metrics
# ------------------------------------
# The uniform-bin metrics take dask arrays and return a float. Passing
# ``labels`` spares a pass over ``y`` to find them. The report of a dask input
# holds the metrics that stream (equal-mass bins and the smooth ECE need every
# sample at once: compute them on an in-memory sample).
ece = expected_calibration_error(y, y_prob, labels=LABELS)
report = calibration_report(y, y_prob, labels=LABELS)
print(f"{N_ROWS:.0e} rows in {n_blocks} blocks: ECE = {ece:.4f}")
for key in ("ece", "mce", "classwise_ece", "nll", "brier", "accuracy"):
    print(f"  {key:>14}: {report[key]:.4f}")

# %%
# A reliability diagram, also computed block by block
# ---------------------------------------------------
fig, ax = plt.subplots(figsize=(5, 5))
ReliabilityDisplay.from_predictions(y, y_prob, labels=LABELS, ax=ax, name="model")
ax.set_title("Over-confident: below the diagonal")
plt.show()

# %%
# Temperature scaling on the whole set
# ------------------------------------
# Each safeguarded Newton step on ``1 / T`` is one pass summing the NLL and its
# derivatives over the blocks; the fitted temperature equals the in-memory one
# (to about 1e-9). ``predict_proba`` of a dask array is lazy: the calibrated
# probabilities are computed block by block when the ECE asks for them.
scaler = TemperatureScaler().fit(z, y)
calibrated = scaler.predict_proba(z)
ece_after = expected_calibration_error(y, calibrated, labels=LABELS)
print(f"T = {scaler.temperature_:.4f}; ECE {ece:.4f} -> {ece_after:.4f}")

# %%
# The memory each worker used
# ---------------------------
# The peak resident memory of each worker process, against what it held at
# start-up: a few blocks at a time, whatever the number of rows.
peak = client.run(peak_rss_mib)
for address, mib in peak.items():
    print(
        f"worker {address}: peak {mib:.0f} MiB (at start {at_start[address]:.0f} MiB)"
    )

client.close()
cluster.close()
