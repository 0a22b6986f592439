"""CPU time of the benchmark's nets trained together (stacked) and one by one.

``sklcalib benchmark`` trains the nets of one dataset and seed (one per loss)
in one stacked pass (:func:`sklcalib._net_stack.fit_stacked`), which gives
each net its own fit's weights to the last bit (tests/test_net_stack.py).
This script measures what it saves: for each dataset, the CPU seconds
(``time.process_time``, one torch thread) of fitting the default losses'
nets stacked and one by one, interleaved (each repeat times both, back to
back), and the median ratio over the repeats. CPU seconds rather than wall
time, so that a loaded machine still gives a meaningful ratio.

    python benchmarks/bench_stacked.py --datasets moons,digits --epochs 20 --repeats 3
"""

import argparse
import time

import numpy as np
import torch

from sklcalib._net_stack import fit_stacked
from sklcalib.benchmark.runner import (
    DEFAULT_LOSSES,
    PATIENCE,
    _build_net,
    _dataset,
    derive_seed,
)
from sklcalib.datasets import TABULAR_DATASETS


def _nets(dataset, data, epochs, losses):
    patience = PATIENCE if dataset in TABULAR_DATASETS else None
    return [
        _build_net(
            loss,
            data,
            seed=derive_seed(dataset, 0),
            epochs=epochs,
            batch_size=128,
            lr=1e-3,
            hidden_units=(64, 64),
            patience=patience,
        )
        for loss in losses
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="moons,blobs,digits,lending_club")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--losses", default=",".join(DEFAULT_LOSSES))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    losses = args.losses.split(",")
    print(f"{len(losses)} nets a dataset, {args.epochs} epochs, one torch thread")
    print("| dataset | stacked CPU-s | one by one CPU-s | ratio (median) |")
    print("|---|---|---|---|")
    for dataset in args.datasets.split(","):
        data = _dataset(dataset, {"diamonds": 5000}.get(dataset))
        # warm-up: first calls allocate and import
        fit_stacked(_nets(dataset, data, 1, losses[:2]), data.X_train, data.y_train)
        stacked, alone = [], []
        for _ in range(args.repeats):
            nets = _nets(dataset, data, args.epochs, losses)
            start = time.process_time()
            assert fit_stacked(nets, data.X_train, data.y_train)
            stacked.append(time.process_time() - start)
            nets = _nets(dataset, data, args.epochs, losses)
            start = time.process_time()
            for net in nets:
                net.fit(data.X_train, data.y_train)
            alone.append(time.process_time() - start)
        ratio = float(np.median(np.array(alone) / np.array(stacked)))
        print(
            f"| {dataset} | {np.median(stacked):.2f} | {np.median(alone):.2f} "
            f"| {ratio:.2f} |"
        )


if __name__ == "__main__":
    main()
