"""Speed of the sklcalib criteria relative to torch.nn.CrossEntropyLoss.

Two tables, both on one thread (``torch.set_num_threads(1)``, the thread's CPU
time: robust on a shared machine), every contender timed in the same run as
cross-entropy, interleaved (each repeat times every case back to back):

1. **per call** (``--calls``): forward plus backward of the criterion alone on
   float32 logits of two shapes: 4096 x 100 (a GPU-sized batch, where memory
   traffic rules) and 128 x 10 (a tabular batch, where the per-call overhead
   rules; timed in blocks of 20 calls). The ratio is that of the fastest
   repeats (stable within a few % on a loaded machine); the median of the
   per-repeat ratios is given beside it. MMCE is quadratic in the batch: its
   row compares it with its floor, cross-entropy plus a plain O(N²)
   evaluation of the same kernel (its matrix, the quadratic form and the
   matrix-vector product of its gradient, without autograd), timed with a
   cross-entropy of their own in a loop apart (its N x N matrices would
   evict the caches before the other cases' calls);
2. **per epoch** (``--epochs``): seconds per epoch of ``NetClassifier`` (MLP
   64-64, batch 128, Adam, the default 20 % validation split predicted every
   epoch) on a 20 000 x 50, 10-class problem. Each repeat runs, for every
   criterion in a shuffled order, one epoch of a plain torch loop doing the same
   work (:class:`PlainLoop`), one epoch of the cross-entropy net and one of the
   criterion's net (``partial_fit``; an epoch is timed from ``on_epoch_begin``
   to ``on_epoch_end``), and takes their ratios; the table gives the median
   ratio and the spread (10th-90th percentile) of the per-repeat ratios.

The targets are those of the issue that asked for them (the ``target`` column;
``ok`` says whether the measured ratio meets it).

Run::

    python benchmarks/bench_losses.py                 # both tables
    python benchmarks/bench_losses.py --calls --repeats 61
    python benchmarks/bench_losses.py --calls --only mbls,mdca   # CE and these
    python benchmarks/bench_losses.py --epochs --epoch-repeats 7
    python benchmarks/bench_losses.py --out docs/_static/losses   # CSV files
    python benchmarks/bench_losses.py --calls --device cuda       # on a GPU
    python benchmarks/bench_losses.py --kernel-comparison --epoch-repeats 9

``--out`` writes ``calls.csv``, ``epochs.csv`` and ``README.txt`` (the command,
the settings, whether the compiled kernels ran, and the load average before
and after); the tables of the losses guide are those files. With numba
installed (the ``fast`` extra) the fused nodes compute batches of at most
``MAX_ENTRIES`` logits (128 x 10, the epochs' batches; not 4096 x 100) in
compiled kernels, and the larger ones (4096 x 100) of MbLS, MDCA and the focal
family in compiled passes around torch's ``exp``; ``--torch-kernels`` times their
torch operations instead (:func:`sklcalib.losses.torch_kernels`), what an
install without numba runs;
``--kernel-comparison`` times the epochs both ways, interleaved.
``--device`` moves the per-call table to another torch
device (``cuda``), timed by the wall clock between device synchronisations
(its thread CPU time would only measure the kernel launches); the per-epoch
table stays on the CPU.
"""

import argparse
import contextlib
import csv
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from sklcalib.losses import (
    AdaDualFocalLoss,
    AdaFocalLoss,
    BrierLoss,
    DualFocalLoss,
    FocalCalibrationLoss,
    FocalLoss,
    InverseFocalLoss,
    LabelSmoothingLoss,
    MbLSLoss,
    MDCALoss,
    MMCELoss,
    SampleDependentFocalLoss,
    torch_kernels,
)

SHAPES = ((4096, 100), (128, 10))
#: calls per timed block on the small shape (a call there is tens of µs)
SMALL_BLOCK = 20


def _adafocal_mixed():
    # AdaFocal after updates that gave some bins a negative γ (inverse focal):
    # the per-sample sign path
    loss = AdaFocalLoss()
    with torch.no_grad():
        loss.gammas.copy_(torch.linspace(-1.0, 3.0, loss.n_bins, dtype=torch.float64))
    return loss


# name, criterion, target ratio to cross-entropy at 4096 x 100 (None: no target)
CASES = [
    ("cross-entropy (torch)", lambda: torch.nn.CrossEntropyLoss(), None),
    ("focal γ=3", lambda: FocalLoss(gamma=3.0), 1.10),
    ("inverse focal γ=2", lambda: InverseFocalLoss(), 1.10),
    ("FLSD-53", lambda: SampleDependentFocalLoss(), 1.15),
    (
        "FLSD-532",
        lambda: SampleDependentFocalLoss(2.0, ((0.2, 5.0), (0.5, 3.0))),
        1.15,
    ),
    ("FLSD lambert", lambda: SampleDependentFocalLoss(thresholds="lambert"), 1.15),
    ("FCL γ=2 λ=1", lambda: FocalCalibrationLoss(), 1.15),
    ("dual focal γ=5", lambda: DualFocalLoss(), 1.35),
    ("AdaFocal", lambda: AdaFocalLoss(), 1.2),
    ("AdaFocal, mixed signs", _adafocal_mixed, 1.2),
    ("AdaDualFocal", lambda: AdaDualFocalLoss(), 1.4),
    ("MbLS", lambda: MbLSLoss(), 1.15),
    ("MDCA", lambda: MDCALoss(), 1.15),
    ("MDCA γ=1", lambda: MDCALoss(gamma=1.0), 1.15),
    ("Brier", lambda: BrierLoss(), None),
    ("label smoothing", lambda: LabelSmoothingLoss(), None),
    ("dual focal ('mean', 3)", lambda: DualFocalLoss(dual=("mean", 3)), None),
    ("MMCE λ=2", lambda: MMCELoss(), None),
]
# the ratio of the fastest repeats at 4096 x 100: target in the 'target' column
MMCE_FLOOR_TARGET = 1.2


def mmce_floor(logits, target, bandwidth=0.4):
    """Cross-entropy's forward and backward plus a plain O(N²) evaluation of
    MMCE's kernel: the least any MMCE criterion computes (its value needs the
    N x N kernel matrix and ``w·Kw``; its gradient one more N x N pass, the
    kernel times the signs of the differences, and a matrix-vector product)."""
    F.cross_entropy(logits, target).backward()
    with torch.no_grad():
        conf = torch.softmax(logits, 1).amax(1)
        w = conf - 0.5
        diff = conf.unsqueeze(1) - conf.unsqueeze(0)
        kernel = torch.abs(diff).div_(-bandwidth).exp_()
        w @ (kernel @ w)
        (kernel * diff.sign()) @ w


def _data(n, k, seed=0, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(n, k, generator=gen)
    target = torch.randint(0, k, (n,), generator=gen)
    return logits.to(device).requires_grad_(), target.to(device)


def device_clock(device):
    """The clock of the per-call table: the thread's CPU time on the CPU, the
    wall clock after a synchronisation elsewhere (queued kernels finished)."""
    if torch.device(device).type == "cpu":
        return time.thread_time
    synchronize = torch.accelerator.synchronize

    def clock():
        synchronize()
        return time.perf_counter()

    return clock


#: the quadratic case: timed in a loop of its own (see :func:`time_calls`)
MMCE_NAME = "MMCE λ=2"
#: keys of that loop's cross-entropy and floor in the times of time_calls
MMCE_CE, MMCE_FLOOR = "cross-entropy (MMCE loop)", "MMCE floor"


def time_calls(n, k, repeats, warmup, clock, block, device="cpu", cases=CASES):
    """Fastest and per-repeat times of every case (and MMCE's floor) on
    ``n x k`` logits, every case timed back to back with cross-entropy in
    every repeat, in a shuffled order.

    MMCE, its floor and a cross-entropy of their own run in a second
    interleaved loop: their N x N matrices (4096 x 4096 floats) evict the
    caches, so that the call timed right after them (cross-entropy, first of
    the next repeat) read 25-70 % slower than warm and every other ratio low.
    """
    logits, target = _data(n, k, device=device)
    steps = {name: make().to(device) for name, make, _ in cases}

    def step(criterion):
        def run():
            for _ in range(block):
                logits.grad = None
                criterion(logits, target).backward()

        return run

    def floor():
        for _ in range(block):
            logits.grad = None
            mmce_floor(logits, target)

    runs = {name: step(criterion) for name, criterion in steps.items()}
    loops = [runs]
    if MMCE_NAME in runs:
        ce = runs[CASES[0][0]]
        loops.append({MMCE_CE: ce, MMCE_NAME: runs.pop(MMCE_NAME), MMCE_FLOOR: floor})
    times = {}
    for loop in loops:
        for run in loop.values():
            for _ in range(warmup):
                run()
        loop_times = {name: [] for name in loop}
        # a new order every repeat: the first call after the last case's
        # would otherwise always be cross-entropy's
        names = list(loop)
        order = np.random.default_rng(0)
        for _ in range(repeats):
            for name in order.permutation(names):
                start = clock()
                loop[name]()
                loop_times[name].append((clock() - start) / block)
        times.update(loop_times)
    return times


def call_rows(times_by_shape, cases=CASES):
    """The per-call table: one row per case (MMCE twice: against cross-entropy
    and against its floor, both timed in MMCE's loop), both shapes."""
    big = "{}x{}".format(*SHAPES[0])
    entries = [(name, "CE", target) for name, _, target in cases]
    if any(name == MMCE_NAME for name, _, _ in cases):
        entries.append((MMCE_NAME, "CE + O(N²) kernel", MMCE_FLOOR_TARGET))
    rows = []
    for name, ref_name, target in entries:
        row = {"criterion": name, "against": ref_name}
        for (n, k), times in times_by_shape.items():
            if ref_name != "CE":
                ref = times[MMCE_FLOOR]
            else:
                ref = times[MMCE_CE if name == MMCE_NAME else CASES[0][0]]
            per_repeat = [a / b for a, b in zip(times[name], ref, strict=True)]
            shape = f"{n}x{k}"
            row[f"{shape} µs"] = f"{min(times[name]) * 1e6:.1f}"
            row[f"{shape} ratio"] = f"{min(times[name]) / min(ref):.2f}"
            row[f"{shape} median ratio"] = f"{statistics.median(per_repeat):.2f}"
        row["target"] = "" if target is None else f"{target:.2f}"
        ratio = float(row[f"{big} ratio"])
        row["ok"] = "" if target is None else ("yes" if ratio <= target else "NO")
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# epochs
# ---------------------------------------------------------------------------

# label, registry name, criterion__ parameters, target ratio per epoch
EPOCH_CASES = [
    ("ce", "ce", {}, None),
    ("focal", "focal", {}, 1.10),
    ("inverse_focal", "inverse_focal", {}, 1.10),
    ("flsd53", "flsd53", {}, 1.10),
    (
        "FLSD-532",
        "flsd53",
        {"gamma": 2.0, "thresholds": ((0.2, 5.0), (0.5, 3.0))},
        1.10,
    ),
    ("fcl", "fcl", {}, 1.10),
    ("brier", "brier", {}, 1.10),
    ("adafocal", "adafocal", {}, 1.10),
    ("dual_focal", "dual_focal", {}, 1.2),
    ("adadualfocal", "adadualfocal", {}, 1.2),
    ("mbls", "mbls", {}, 1.10),
    ("mdca", "mdca", {}, 1.10),
    ("mmce", "mmce", {}, 1.4),
    ("label_smoothing", "label_smoothing", {}, None),
]
#: cross-entropy's epoch against the plain loop's
CE_PLAIN_TARGET = 1.2


class PlainLoop:
    """The reference: a plain torch training loop, the work a NetClassifier
    epoch does written by hand.

    The same MLP (50 -> 64 -> 64 -> 10, ReLU), Adam (lr 1e-3), batches of 128
    rows shuffled by a seeded ``torch.randperm`` and taken by indexing whole
    tensors, the training loss read every batch (``loss.item()``, as any loop
    that logs it), then the stratified 20 % validation split predicted in one
    pass under ``torch.inference_mode`` for its loss and accuracy.
    """

    def __init__(self, X, y, seed=0):
        from sklearn.model_selection import train_test_split

        X_train, X_valid, y_train, y_valid = train_test_split(
            X, y, test_size=0.2, stratify=y, random_state=seed
        )
        self.X_train, self.y_train = map(torch.from_numpy, (X_train, y_train))
        self.X_valid, self.y_valid = map(torch.from_numpy, (X_valid, y_valid))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            n_features, n_classes = X.shape[1], int(y.max()) + 1
            self.model = torch.nn.Sequential(
                torch.nn.Linear(n_features, 64),
                torch.nn.ReLU(),
                torch.nn.Linear(64, 64),
                torch.nn.ReLU(),
                torch.nn.Linear(64, n_classes),
            )
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.criterion = torch.nn.CrossEntropyLoss()
        self.generator = torch.Generator().manual_seed(seed)

    def epoch(self):
        model, optimizer, criterion = self.model, self.optimizer, self.criterion
        X, y = self.X_train, self.y_train
        model.train()
        order = torch.randperm(len(X), generator=self.generator)
        total = 0.0
        for start in range(0, len(X), 128):
            index = order[start : start + 128]
            optimizer.zero_grad()
            loss = criterion(model(X[index]), y[index])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
        model.eval()
        with torch.inference_mode():
            logits = model(self.X_valid)
            valid_loss = criterion(logits, self.y_valid).item()
            valid_acc = (logits.argmax(1) == self.y_valid).float().mean().item()
        return total / len(X), valid_loss, valid_acc


def _device_name(device):
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(device)
    return torch.device(device).type


def _epoch_clock(clock):
    from skorch.callbacks import Callback

    class EpochClock(Callback):
        """The clock from the start to the end of each epoch (the epoch work
        of the default callbacks but PrintLog included: they run before this
        one; PrintLog prints nothing at verbose=0)."""

        def on_epoch_begin(self, net, **kwargs):
            self.start_ = clock()

        def on_epoch_end(self, net, **kwargs):
            self.last_ = clock() - self.start_

    return EpochClock()


def _epoch_nets(X, y, clock):
    from sklcalib import NetClassifier

    nets = []
    for _, name, params, _ in EPOCH_CASES:
        kwargs = {f"criterion__{k}": v for k, v in params.items()}
        # AdaFocal / AdaDualFocal: NetClassifier adds the AdaFocalUpdater
        net = NetClassifier(
            criterion=name,
            max_epochs=1,
            batch_size=128,
            module__hidden_units=(64, 64),
            random_state=0,
            callbacks=[("epoch_clock", _epoch_clock(clock))],
            **kwargs,
        )
        net.fit(X, y)  # initialisation and a first (warm-up) epoch
        nets.append(net)
    return nets


def _net_epoch(net, X, y):
    net.partial_fit(X, y)
    return dict(net.callbacks_)["epoch_clock"].last_


def _timed(clock, function):
    start = clock()
    function()
    return clock() - start


def run_epochs(X, y, repeats, clock, seed=0):
    """Seconds per epoch of the plain loop and of every case, with each case's
    ratios to the plain-loop epoch and to the cross-entropy epoch run just
    before it.

    Returns ``times`` (repeats x (1 + cases): column 0 the plain loop),
    ``x_ce`` and ``x_plain`` (per-repeat ratios of each case; for
    cross-entropy, the median over the repeat's pairs).
    """
    plain = PlainLoop(X, y, seed=seed)
    plain.epoch()  # warm-up
    nets = _epoch_nets(X, y, clock)
    order = np.random.default_rng(seed)
    n_cases = len(nets)
    times = np.empty((repeats, 1 + n_cases))
    x_ce = np.ones((repeats, n_cases))
    x_plain = np.ones((repeats, n_cases))
    for r in range(repeats):
        plain_times, ce_times, ce_x_plain = [], [], []
        for i in order.permutation(np.arange(1, n_cases)):
            t_plain = _timed(clock, plain.epoch)
            t_ce = _net_epoch(nets[0], X, y)
            t_case = _net_epoch(nets[i], X, y)
            plain_times.append(t_plain)
            ce_times.append(t_ce)
            ce_x_plain.append(t_ce / t_plain)
            times[r, 1 + i] = t_case
            x_ce[r, i] = t_case / t_ce
            x_plain[r, i] = t_case / t_plain
        times[r, 0] = np.median(plain_times)
        times[r, 1] = np.median(ce_times)
        x_plain[r, 0] = np.median(ce_x_plain)
    return times, x_ce, x_plain


def run_kernel_comparison(X, y, repeats, clock, seed=0):
    """Per-epoch ratios to the cross-entropy epoch of every case with its
    compiled kernels and with its torch operations (``torch_kernels``), each
    repeat timing, per case in a shuffled order, a cross-entropy epoch and the
    two nets' epochs (their order alternating between repeats).

    Returns rows: case, medians and p10-p90 of both ratios and of their
    per-repeat quotient (compiled / torch operations).
    """
    nets = _epoch_nets(X, y, clock)
    with torch_kernels():
        torch_nets = _epoch_nets(X, y, clock)[1:]
    order = np.random.default_rng(seed)
    n_cases = len(nets) - 1
    ratios = np.empty((3, repeats, n_cases))  # compiled, torch, quotient
    for r in range(repeats):
        for i in order.permutation(n_cases):
            t_ce = _net_epoch(nets[0], X, y)
            pair = [None, None]
            for which in (0, 1) if r % 2 else (1, 0):
                with torch_kernels() if which else contextlib.nullcontext():
                    net = torch_nets[i] if which else nets[1 + i]
                    pair[which] = _net_epoch(net, X, y)
            ratios[:, r, i] = pair[0] / t_ce, pair[1] / t_ce, pair[0] / pair[1]
    rows = []
    for i, (label, _, _, _) in enumerate(EPOCH_CASES[1:]):
        row = {"criterion": label}
        for k, name in enumerate(("compiled x CE", "torch ops x CE", "compiled/torch")):
            row[name] = f"{np.median(ratios[k, :, i]):.2f}"
            row[f"{name} p10-p90"] = _spread(ratios[k, :, i])
        rows.append(row)
    return rows


def _spread(values):
    lo, hi = np.percentile(values, [10, 90])
    return f"{lo:.2f}-{hi:.2f}"


def epoch_rows(times, x_ce, x_plain):
    rows = [
        {
            "criterion": "plain torch loop",
            "s/epoch": f"{np.median(times[:, 0]):.3f}",
            "x plain": "1",
            "x plain p10-p90": "",
            "x CE": "",
            "x CE p10-p90": "",
            "target": "",
            "ok": "",
        }
    ]
    for i, (label, _, _, target) in enumerate(EPOCH_CASES):
        row = {
            "criterion": label,
            "s/epoch": f"{np.median(times[:, 1 + i]):.3f}",
            "x plain": f"{np.median(x_plain[:, i]):.2f}",
            "x plain p10-p90": _spread(x_plain[:, i]),
        }
        if i == 0:
            ratio, target = float(np.median(x_plain[:, 0])), CE_PLAIN_TARGET
            row.update({"x CE": "1", "x CE p10-p90": ""})
            row["target"] = f"{target:.2f} x plain"
        else:
            ratio = float(np.median(x_ce[:, i]))
            row.update({"x CE": f"{ratio:.2f}", "x CE p10-p90": _spread(x_ce[:, i])})
            row["target"] = "" if target is None else f"{target:.2f}"
        row["ok"] = "" if target is None else ("yes" if ratio <= target else "NO")
        rows.append(row)
    return rows


def epoch_data():
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=20_000,
        n_features=50,
        n_informative=30,
        n_classes=10,
        random_state=0,
    )
    return X.astype(np.float32), y


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------


def print_table(title, rows):
    print(title)
    keys = list(rows[0])
    widths = [max(len(k), *(len(str(r[k])) for r in rows)) for k in keys]
    print("  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  ".join(str(row[k]).ljust(w) for k, w in zip(keys, widths, strict=True))
        )
    print()


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def selected_cases(only):
    """Cross-entropy and the cases whose name contains one of the
    comma-separated, case-insensitive words of ``only`` (all cases if None)."""
    if only is None:
        return CASES
    words = [w.strip().lower() for w in only.split(",") if w.strip()]
    chosen = [c for c in CASES[1:] if any(w in c[0].lower() for w in words)]
    if not chosen:
        raise ValueError(f"--only {only!r} names no case")
    return [CASES[0], *chosen]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", action="store_true", help="the per-call table")
    parser.add_argument("--epochs", action="store_true", help="the per-epoch table")
    parser.add_argument("--repeats", type=int, default=61)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--epoch-repeats", type=int, default=7)
    parser.add_argument("--out", default=None, help="folder for the CSV files")
    parser.add_argument(
        "--only",
        default=None,
        help="per-call table: cross-entropy and the cases whose name contains "
        "one of these comma-separated words (e.g. 'mbls,mdca'), not all",
    )
    parser.add_argument(
        "--device", default="cpu", help="torch device of the per-call table"
    )
    parser.add_argument(
        "--torch-kernels",
        action="store_true",
        help="the fused nodes' torch operations, not their compiled kernels",
    )
    parser.add_argument(
        "--kernel-comparison",
        action="store_true",
        help="only the epochs with the compiled kernels against the torch "
        "operations, interleaved (printed, not written)",
    )
    args = parser.parse_args(argv)
    if args.kernel_comparison:
        torch.set_num_threads(1)
        X, y = epoch_data()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = run_kernel_comparison(X, y, args.epoch_repeats, time.thread_time)
        print_table(
            "seconds per epoch as in --epochs, ratio to the cross-entropy epoch "
            "with the fused nodes' compiled kernels and with their torch "
            f"operations; medians of {args.epoch_repeats} interleaved repeats, "
            "thread CPU time, torch.set_num_threads(1)",
            rows,
        )
        return
    with torch_kernels() if args.torch_kernels else contextlib.nullcontext():
        _run(args, argv)


def _compiled_line(forced_off):
    """Whether the fused nodes' compiled kernels ran, for README.txt."""
    from sklcalib._utils._optional import is_installed
    from sklcalib.losses._dispatch import MAX_ENTRIES

    if forced_off:
        return "off (--torch-kernels): the fused nodes' torch operations"
    if not is_installed("numba"):
        return "off (numba not installed): the fused nodes' torch operations"
    import numba

    return (
        f"on (numba {numba.__version__}) for batches of at most {MAX_ENTRIES} "
        "logits: the 128x10 column and the epochs; at 4096x100 the compiled "
        "passes around torch's exp of MbLS, MDCA and the focal family, the "
        "other criteria's torch operations"
    )


def _run(args, argv):
    load_before = os.getloadavg()
    if not (args.calls or args.epochs):
        args.calls = args.epochs = True
    torch.set_num_threads(1)
    clock = time.thread_time
    settings = (
        f"torch {torch.__version__}, torch.set_num_threads(1), thread CPU time, "
        f"{platform.processor() or platform.machine()}"
    )
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    failed = []
    cases = selected_cases(args.only)
    if args.calls:
        times = {}
        call_clock = device_clock(args.device)
        for n, k in SHAPES:
            block = SMALL_BLOCK if n * k < 100_000 else 1
            times[n, k] = time_calls(
                n, k, args.repeats, args.warmup, call_clock, block, args.device, cases
            )
        rows = call_rows(times, cases)
        where = (
            settings
            if call_clock is clock
            else f"{args.device} ({_device_name(args.device)}), wall clock between "
            "synchronisations"
        )
        print_table(
            f"forward+backward per call, float32 logits; {where}; fastest of "
            f"{args.repeats} interleaved repeats (128x10: blocks of {SMALL_BLOCK} "
            "calls); x CE: ratio of the fastest repeats (median: of the "
            "per-repeat ratios); MMCE against its floor, cross-entropy plus a "
            "plain O(N²) evaluation of its kernel",
            rows,
        )
        failed += [r["criterion"] for r in rows if r["ok"] == "NO"]
        if out is not None:
            write_csv(out / "calls.csv", rows)
    if args.epochs:
        X, y = epoch_data()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times, x_ce, x_plain = run_epochs(X, y, args.epoch_repeats, clock)
        rows = epoch_rows(times, x_ce, x_plain)
        print_table(
            "seconds per epoch, 20000 x 50, 10 classes, MLP 64-64, batch 128, Adam, "
            f"20 % validation split predicted every epoch; {settings}; medians of "
            f"{args.epoch_repeats} interleaved repeats, p10-p90 the spread of the "
            "per-repeat ratios",
            rows,
        )
        failed += [r["criterion"] for r in rows if r["ok"] == "NO"]
        if out is not None:
            write_csv(out / "epochs.csv", rows)
    if out is not None:
        loads = " / ".join(
            ", ".join(f"{x:.1f}" for x in load)
            for load in (load_before, os.getloadavg())
        )
        (out / "README.txt").write_text(
            "Written by: python benchmarks/bench_losses.py "
            + " ".join(sys.argv[1:] if argv is None else argv)
            + f"\nSettings: {settings}; python {platform.python_version()}; "
            + f"{os.cpu_count()} cores, load average (1, 5, 15 min) before / "
            + f"after: {loads}\n"
            + f"Compiled kernels: {_compiled_line(args.torch_kernels)}\n",
            encoding="utf-8",
        )
    print("over target: " + ", ".join(failed) if failed else "all targets met")


if __name__ == "__main__":
    main()
