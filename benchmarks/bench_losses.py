"""Speed of the sklcalib criteria relative to torch.nn.CrossEntropyLoss.

Two parts:

1. the criterion alone: forward plus backward on float32 logits (default 4096 x
   100), every criterion timed in the same run as ``torch.nn.CrossEntropyLoss``;
   the table gives the median over many repeats after a warm-up and the ratio to
   cross-entropy. Targets: focal <= 1.2x, FLSD <= 1.3x, FCL <= 1.5x, dual focal
   <= 2.0x;
2. ``--epochs``: what users feel, seconds per epoch of ``NetClassifier`` (MLP
   64-64, batch 128, Adam, the default 20 % validation split predicted every
   epoch) on a 20 000 x 50, 10-class problem, against a plain torch loop that
   does the same work (:class:`PlainLoop`) and each criterion against
   ``"ce"``, with one and with two threads (``--epoch-threads``). Each repeat
   runs, for every criterion in a shuffled order, one plain-loop epoch, one
   epoch of the cross-entropy net and one of the criterion's net
   (``partial_fit``; an epoch is timed from ``on_epoch_begin`` to
   ``on_epoch_end``, so the per-call input validation and split, done once per
   ``fit``, are left out), and takes their ratios: the epochs of a ratio run
   back to back, under the same machine load (on a shared machine a slow spell
   then inflates both); the table gives the median ratio and its spread (the
   10th-90th percentile of the per-repeat ratios).
   Targets: cross-entropy within 1.2x of the plain loop; the focal family
   within 1.2x of cross-entropy per epoch, dual focal within 1.3x, MMCE
   (quadratic in the batch) within 2x.

Run::

    python benchmarks/bench_losses.py [--threads 1] [--n 4096] [--k 100]
    python benchmarks/bench_losses.py --epochs [--epoch-repeats 7]
"""

import argparse
import statistics
import time
import warnings

import numpy as np
import torch

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
)

# name, criterion, target ratio to cross-entropy (None: no target)
CASES = [
    ("cross-entropy (torch)", torch.nn.CrossEntropyLoss(), None),
    ("focal γ=3", FocalLoss(gamma=3.0), 1.2),
    ("FLSD-53", SampleDependentFocalLoss(), 1.3),
    ("FLSD-532", SampleDependentFocalLoss(2.0, ((0.2, 5.0), (0.5, 3.0))), 1.3),
    ("FLSD lambert", SampleDependentFocalLoss(thresholds="lambert"), 1.3),
    ("FCL γ=2 λ=1", FocalCalibrationLoss(), 1.5),
    ("dual focal γ=5", DualFocalLoss(), 2.0),
    ("dual focal ('mean', 3)", DualFocalLoss(dual=("mean", 3)), None),
    ("dual focal mean_all", DualFocalLoss(dual="mean_all"), None),
    ("inverse focal", InverseFocalLoss(), None),
    ("Brier", BrierLoss(), None),
    ("label smoothing", LabelSmoothingLoss(), None),
    ("AdaFocal", AdaFocalLoss(), None),
    ("AdaDualFocal", AdaDualFocalLoss(), None),
    ("MbLS", MbLSLoss(), None),
    ("MDCA", MDCALoss(), None),
]


def run_table(cases, n, k, args, clock):
    """Median time per case and median of its per-repeat ratio to the first case.

    Every repeat times all cases back to back (after a common warm-up), so a
    ratio compares runs made under the same machine load; the reported ratio is
    the median over repeats of time(case) / time(cross-entropy).
    """
    gen = torch.Generator().manual_seed(0)
    logits = (3 * torch.randn(n, k, generator=gen)).requires_grad_()
    target = torch.randint(0, k, (n,), generator=gen)

    def step(criterion):
        logits.grad = None
        criterion(logits, target).backward()

    for _, criterion, _ in cases:
        for _ in range(args.warmup):
            step(criterion)
    times = {name: [] for name, _, _ in cases}
    for _ in range(args.repeats):
        for name, criterion, _ in cases:
            start = clock()
            step(criterion)
            times[name].append(clock() - start)
    ref = times[cases[0][0]]
    best = {name: statistics.median(t) for name, t in times.items()}
    ratios = {
        name: statistics.median(a / b for a, b in zip(t, ref, strict=True))
        for name, t in times.items()
    }
    return best, ratios


def print_table(title, cases, best, ratios):
    print(title)
    header = f"{'criterion':<26} {'ms':>8} {'x CE':>7} {'target':>7}  ok"
    print(header)
    print("-" * len(header))
    failed = []
    for name, _, target_ratio in cases:
        ratio = ratios[name]
        tgt = "" if target_ratio is None else f"{target_ratio:.1f}"
        ok = "" if target_ratio is None else ("yes" if ratio <= target_ratio else "NO")
        if ok == "NO":
            failed.append(name)
        print(f"{name:<26} {best[name] * 1e3:8.3f} {ratio:7.2f} {tgt:>7}  {ok}")
    print()
    return failed


# registry name, criterion__ parameters, target ratio per epoch (None: no target)
EPOCH_CASES = [
    ("ce", {}, None),
    ("focal", {}, 1.2),
    ("flsd53", {}, 1.2),
    ("flsd53", {"gamma": 2.0, "thresholds": ((0.2, 5.0), (0.5, 3.0))}, 1.2),
    ("fcl", {}, 1.2),
    ("inverse_focal", {}, 1.2),
    ("adafocal", {}, 1.2),
    ("dual_focal", {}, 1.3),
    ("adadualfocal", {}, 1.3),
    ("brier", {}, None),
    ("label_smoothing", {}, None),
    ("mmce", {}, 2.0),
    ("mbls", {}, None),
    ("mdca", {}, None),
]


def _epoch_label(name, params):
    return name if not params else f"{name} (FLSD-532)"


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
    for name, params, _ in EPOCH_CASES:
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

    Each repeat takes the criteria in a shuffled order and runs, for each, a
    plain-loop epoch, a cross-entropy NetClassifier epoch and the criterion's
    epoch, back to back: each ratio compares epochs run under the same machine
    load. Returns ``times`` (repeats x (1 + cases): column 0 the plain loop),
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


def _spread(values):
    lo, hi = np.percentile(values, [10, 90])
    return f"{lo:5.2f}-{hi:<5.2f}"


def print_epoch_table(title, times, x_ce, x_plain):
    print(title)
    header = (
        f"{'case':<26} {'s/epoch':>8} {'x plain':>7} {'p10-p90':>11} "
        f"{'x CE':>5} {'p10-p90':>11} {'target':>12}  ok"
    )
    print(header)
    print("-" * len(header))
    print(f"{'plain torch loop':<26} {np.median(times[:, 0]):8.3f} {1.0:7.2f}")
    failed = []
    for i, (name, params, target) in enumerate(EPOCH_CASES):
        label = _epoch_label(name, params)
        if i == 0:
            # the fast path's target: cross-entropy within 1.2x of plain torch
            ratio, tgt, target = float(np.median(x_plain[:, 0])), "1.2 x plain", 1.2
            x_ce_text = f"{1.0:5.2f} {'':>11}"
        else:
            ratio = float(np.median(x_ce[:, i]))
            tgt = "" if target is None else f"{target:.1f} x CE"
            x_ce_text = f"{ratio:5.2f} {_spread(x_ce[:, i])}"
        ok = "" if target is None else ("yes" if ratio <= target else "NO")
        if ok == "NO":
            failed.append(label)
        print(
            f"{label:<26} {np.median(times[:, 1 + i]):8.3f} "
            f"{np.median(x_plain[:, i]):7.2f} {_spread(x_plain[:, i])} "
            f"{x_ce_text} {tgt:>12}  {ok}"
        )
    print()
    return failed


def main_epochs(args):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=20_000,
        n_features=50,
        n_informative=30,
        n_classes=10,
        random_state=0,
    )
    X = X.astype(np.float32)
    failed = []
    for threads in args.epoch_threads:
        torch.set_num_threads(threads)
        # on a shared machine the CPU time of the process is far less noisy than
        # the wall clock (data loading runs in the main thread: num_workers=0);
        # with one thread it is the thread's own time
        if args.clock == "wall":
            clock, clock_name = time.perf_counter, "wall clock"
        elif threads == 1:
            clock, clock_name = time.thread_time, "thread CPU time"
        else:
            clock, clock_name = time.process_time, "process CPU time"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times, x_ce, x_plain = run_epochs(X, y, args.epoch_repeats, clock)
        failed += print_epoch_table(
            f"seconds per epoch, 20000 x 50, 10 classes, MLP 64-64, batch 128, "
            f"Adam, 20 % validation split predicted every epoch; torch "
            f"{torch.__version__}, torch.set_num_threads({threads}); medians of "
            f"{args.epoch_repeats} repeats, p10-p90 the spread of the per-repeat "
            f"ratios (x plain: to a plain-loop epoch, x CE: to a cross-entropy "
            f"NetClassifier epoch, each run just before); NetClassifier epochs "
            f"timed from on_epoch_begin to on_epoch_end; {clock_name}",
            times,
            x_ce,
            x_plain,
        )
    if failed:
        print("over target:", ", ".join(dict.fromkeys(failed)))
    else:
        print("all targets met")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--mmce-n", type=int, default=256, help="batch for MMCE")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--clock",
        choices=("thread", "wall"),
        default="thread",
        help="thread: CPU time of this thread (robust on a shared machine, valid "
        "with --threads 1); wall: perf_counter",
    )
    parser.add_argument(
        "--epochs",
        action="store_true",
        help="time epochs of NetClassifier instead of the criteria alone",
    )
    parser.add_argument("--epoch-repeats", type=int, default=7)
    parser.add_argument(
        "--epoch-threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="torch.set_num_threads values of the epoch tables",
    )
    args = parser.parse_args(argv)
    if args.epochs:
        # --clock thread (the default) means CPU time for the epoch tables
        return main_epochs(args)
    torch.set_num_threads(args.threads)
    if args.clock == "thread" and args.threads != 1:
        parser.error("--clock thread measures one thread: use --threads 1")
    clock = time.thread_time if args.clock == "thread" else time.perf_counter

    common = (
        f"torch {torch.__version__}, torch.set_num_threads({args.threads}), "
        f"{args.clock} clock, medians of {args.repeats} interleaved repeats "
        f"after {args.warmup} warm-up"
    )
    best, ratios = run_table(CASES, args.n, args.k, args, clock)
    failed = print_table(
        f"forward+backward, {args.n} x {args.k} float32 logits; {common}",
        CASES,
        best,
        ratios,
    )
    mmce_cases = [CASES[0], ("MMCE λ=2 (O(N²))", MMCELoss(), None)]
    best, ratios = run_table(mmce_cases, args.mmce_n, args.k, args, clock)
    print_table(
        f"MMCE is quadratic in the batch: {args.mmce_n} x {args.k}",
        mmce_cases,
        best,
        ratios,
    )
    if failed:
        print("over target:", ", ".join(failed))
    else:
        print("all targets met")


if __name__ == "__main__":
    main()
