"""One benchmark run: train a net with one criterion on one dataset with one seed.

:func:`run_one` is a pure, module-level function of plain arguments so that it
pickles and can be shipped to joblib (loky) or Dask workers. Everything random
in a run is seeded from the run's identity, never from the order in which runs
execute, so a grid gives the same numbers sequentially, with ``n_jobs=2`` or on
a Dask cluster.
"""

import copy
import time
import zlib
from functools import lru_cache

import numpy as np
from scipy.special import softmax

from sklcalib import calibration, datasets, diagnostics, metrics
from sklcalib._utils._binning import top_label as _top_label
from sklcalib._utils._scores import row_scores as _row_scores
from sklcalib._utils._scores import weighted_mean as _weighted_mean
from sklcalib._utils._validation import check_prob_values as _check_prob_values
from sklcalib._utils._validation import check_scalar as _check_scalar
from sklcalib._utils._validation import check_targets as _check_targets
from sklcalib.benchmark.chance import majority_class_error as _majority_class_error

__all__ = [
    "DEFAULT_LOSSES",
    "METRICS",
    "PATIENCE",
    "derive_seed",
    "run_group",
    "run_one",
    "subsample_train",
]

#: the criteria the benchmark compares by default (registry names)
DEFAULT_LOSSES = (
    "ce",
    "focal",
    "flsd53",
    "dual_focal",
    "fcl",
    "brier",
    "mmce",
    "label_smoothing",
    "mbls",
    "mdca",
)

#: keys of :func:`sklcalib.metrics.calibration_report` reported before and after
#: temperature scaling (csv columns ``<key>_pre`` and ``<key>_post``)
METRICS = (
    "ece",
    "adaptive_ece",
    "classwise_ece",
    "mce",
    "smooth_ece",
    "nll",
    "brier",
    "error",
)

# Criteria that learn from the validation split while training (AdaFocal).
_NEEDS_VALIDATION = ("adafocal", "adadualfocal")

#: epochs without a lower validation log-loss after temperature scaling
#: (:class:`sklcalib.callbacks.TemperatureEarlyStopping`) after which a net on a
#: real tabular set stops (and takes back its best epoch's weights); its epochs
#: are its budget. Trained for the whole budget, the nets memorise the noise
#: of these sets until they are worse than predicting the class frequencies
#: (lending_club, 30 epochs, seed 0: cross-entropy's test log-loss 0.29 after
#: temperature scaling against the prior's 0.205, error 7.5 % against the
#: majority class's 5.2 %); stopped: 0.18-0.19 after 11-22 epochs. The
#: synthetic and bundled sets keep their whole budget: long enough for
#: cross-entropy to fit the training labels hard, the over-confident regime
#: the papers study, and far above chance.
PATIENCE = 10


def derive_seed(dataset, seed):
    """Seed of the network's weights and batch order for ``(dataset, seed)``.

    Every loss gets the same seed for a given dataset and seed, so the losses
    are compared from the same initial weights and the same batch order (a
    paired comparison); the seed depends on nothing but the run's identity.

    Parameters
    ----------
    dataset : str
        Dataset name.
    seed : int
        Benchmark seed.

    Returns
    -------
    seed : int
        A seed in ``[0, 2**31)``.

    Examples
    --------
    >>> from sklcalib.benchmark.runner import derive_seed
    >>> derive_seed("moons", 0) == derive_seed("moons", 0)
    True
    >>> derive_seed("moons", 0) == derive_seed("moons", 1)
    False
    """
    # crc32, not hash(): str hashes are salted per process (PYTHONHASHSEED).
    return zlib.crc32(f"{dataset}:{int(seed)}".encode()) % (2**31)


#: the Hessian trace is measured on at most this many training rows (the
#: first rows of the shuffled training split): on the large tabular sets a
#: pass over every row costs more than the training (MMCE's kernel is
#: quadratic in the rows); the synthetic and bundled sets have fewer rows.
_HESSIAN_MAX_ROWS = 2000


def subsample_train(data, max_train, random_state=0):
    """The dataset with at most ``max_train`` training rows (stratified, seeded).

    The validation and test splits are kept whole. Returns ``data`` itself
    when it has no more rows than that, a shallow copy otherwise.
    """
    n = len(data.y_train)
    if max_train is None or n <= max_train:
        return data
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(
        np.arange(n),
        train_size=max_train,
        stratify=data.y_train,
        random_state=random_state,
    )
    keep = np.sort(keep)
    out = copy.copy(data)
    out.X_train, out.y_train = data.X_train[keep], data.y_train[keep]
    return out


@lru_cache(maxsize=8)
def _dataset(name, max_train=None):

    # The split is fixed (random_state=0) for every seed: seeds vary the
    # network, as in the papers' fixed CIFAR splits.
    return subsample_train(datasets.load_dataset(name, random_state=0), max_train)


@lru_cache(maxsize=1)
def _fused_adam():
    """Whether this torch has Adam's fused implementation on the CPU (2.4+)."""
    import torch

    try:
        torch.optim.Adam([torch.zeros(1, requires_grad=True)], fused=True)
    except (RuntimeError, TypeError, ValueError):
        return False
    return True


def _build_net(loss, data, *, seed, epochs, batch_size, lr, hidden_units, patience):
    # torch and skorch (the "torch" extra) load with the net: only when run
    from sklcalib.net import NetClassifier

    kwargs = {}
    if patience is not None or loss in _NEEDS_VALIDATION:
        from skorch.dataset import Dataset
        from skorch.helper import predefined_split

        # the dataset's own validation split: for early stopping, and for
        # AdaFocal's γ, which it updates from it during training
        # (NetClassifier adds the AdaFocalUpdater itself)
        kwargs["train_split"] = predefined_split(Dataset(data.X_val, data.y_val))
    else:
        kwargs["train_split"] = None
    if patience is not None:
        from sklcalib.callbacks import TemperatureEarlyStopping  # torch extra

        # on the validation log-loss after temperature scaling, what the run
        # measures after its own temperature: a criterion's own validation
        # loss can keep improving while that log-loss worsens (MMCE on
        # lending_club: stopped on its own loss, every seed's test log-loss
        # after scaling above the prior's); the best epoch's weights
        stopper = TemperatureEarlyStopping(patience=patience)  # silent: verbose=0
        kwargs["callbacks"] = [("early_stopping", stopper)]
    if _fused_adam():
        # Adam's update in one kernel: the same algorithm as the default
        # per-tensor loop, a third less time per step on these small nets;
        # rounding differs in the last bits, so seeded numbers differ from
        # those of the loop implementation
        kwargs["optimizer__fused"] = True
    return NetClassifier(
        criterion=loss,
        module__hidden_units=tuple(hidden_units),
        max_epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        random_state=seed,
        verbose=0,
        **kwargs,
    )


def _split_metrics(y_true, proba):
    """The values of :data:`METRICS` that
    :func:`sklcalib.metrics.calibration_report` gives, computed alone.

    The report's other entries (the SKCE over all pairs of rows above all)
    cost several times these on the larger test splits, and the benchmark
    records none of them. The same functions and validation as the report's:
    the same numbers, to the last bit.
    """
    y_idx, p, _, _ = _check_targets(y_true, proba)
    p = _check_prob_values(p)
    _, correct = _top_label(p, y_idx)
    nll, brier = _row_scores(p, y_idx)
    values = {
        name: float(function(y_true, proba, n_bins=15))
        for name, function in (
            ("ece", metrics.expected_calibration_error),
            ("adaptive_ece", metrics.adaptive_calibration_error),
            ("classwise_ece", metrics.classwise_calibration_error),
            ("mce", metrics.maximum_calibration_error),
        )
    }
    values["smooth_ece"] = float(metrics.smooth_calibration_error(y_true, proba))
    values["nll"] = _weighted_mean(nll)
    values["brier"] = _weighted_mean(brier)
    values["error"] = 1.0 - _weighted_mean(correct)
    return values


def _against_prior(data, proba):
    """The test log-loss of the training split's class frequencies, and the
    mean per-row test log-loss difference of ``proba`` (the temperature-scaled
    probabilities) to it with its standard error, as the boosting tables
    compare their raw models with the prior."""
    tiny = np.finfo(np.float64).eps
    prior = np.bincount(data.y_train, minlength=proba.shape[1]) / len(data.y_train)
    rows = np.arange(len(data.y_test))
    prior_losses = -np.log(np.clip(prior[data.y_test], tiny, 1.0))
    losses = -np.log(np.clip(proba[rows, data.y_test], tiny, 1.0))
    diff = losses - prior_losses
    return {
        "prior_nll": float(np.mean(prior_losses)),
        "nll_post_vs_prior": float(np.mean(diff)),
        "nll_post_vs_prior_se": float(np.std(diff, ddof=1) / np.sqrt(len(diff))),
    }


def run_one(
    dataset,
    loss,
    seed,
    *,
    epochs,
    batch_size=128,
    lr=1e-3,
    hidden_units=(64, 64),
    hessian_samples=8,
    interval_level=0.95,
    max_train=None,
    torch_threads=None,
    patience="auto",
):
    """Train, temperature-scale and evaluate one (dataset, loss, seed) run.

    The network is trained on the training split for ``epochs`` epochs (on
    the real tabular sets, at most: it stops once its validation log-loss after
    temperature scaling has not decreased for ``patience`` epochs and keeps
    its best epoch's weights); the temperature is chosen on the validation
    split by the papers' grid search on 15-bin ECE
    (``TemperatureScaler(objective="ece")``), and every metric is measured on
    the test split before and after temperature scaling. Everything random is
    seeded from ``(dataset, seed)`` through local generators (the network's
    ``random_state``, the Hessian probes', the interval's): the caller's
    global random state (torch's included) is neither read nor changed.

    Parameters
    ----------
    dataset : str
        A name of :func:`sklcalib.datasets.list_datasets`.
    loss : str
        A criterion registry name (:data:`sklcalib.losses.CRITERIA`).
    seed : int
        Benchmark seed; the network seed is :func:`derive_seed`.
    epochs : int
        Training epochs at most: the budget.
    batch_size : int, default=128
        Mini-batch size.
    lr : float, default=1e-3
        Adam learning rate. Adam runs fused (``optimizer__fused=True``,
        torch's one-kernel implementation, on torch >= 2.4), which is faster
        than its default loop on these small networks and rounds differently
        in the last bits.
    hidden_units : tuple of int, default=(64, 64)
        Hidden layers of the MLP.
    hessian_samples : int, default=8
        Rademacher probes of the Hutchinson estimate of the Hessian trace of the
        training loss at the end of training, on at most
        :data:`_HESSIAN_MAX_ROWS` training rows; 0 skips it (NaN in the row).
    interval_level : float, default=0.95
        Confidence level of the per-run interval of the population test ECE
        (:func:`sklcalib.metrics.calibration_error_interval`, 15 bins). The
        report's bracket is the mean over the S seeds of these intervals'
        ends, which covers the mean over seeds of the population ECE with
        probability at least ``1 - S * (1 - interval_level)`` (a union
        bound, valid however the seeds depend on each other; they share the
        test split): ``sklcalib benchmark`` passes ``1 - 0.05 / S``, so
        that the bracket covers with probability at least 95 %.
    max_train : int, default=None
        Train on at most this many rows of the training split (a stratified
        subsample with a fixed seed, the same for every loss and seed); None
        uses them all. Validation and test splits are always whole.
    torch_threads : int, default=None
        Run torch on this many intra-op threads during the run and restore
        the previous setting afterwards. torch's setting is process-wide, so
        this is for a process that runs nothing else meanwhile, such as a
        benchmark worker: the ``sklcalib benchmark`` command passes 1, which
        keeps parallel runs from oversubscribing the cores and the
        floating-point reductions identical however the runs are scheduled.
        None leaves torch's setting alone.
    patience : int, None or "auto", default="auto"
        Epochs without a lower log-loss after temperature scaling on the
        validation split after which training stops and the best epoch's
        weights are taken back
        (:class:`~sklcalib.callbacks.TemperatureEarlyStopping`); None trains
        for the whole budget; ``"auto"``: :data:`PATIENCE` on the real tabular sets
        (:data:`sklcalib.datasets.TABULAR_DATASETS`), None on the others.

    Returns
    -------
    row : dict
        ``dataset``, ``loss``, ``seed``, ``epochs``, ``temperature``,
        ``<metric>_pre`` and ``<metric>_post`` for each of :data:`METRICS`,
        ``ece_pre_low``, ``ece_pre_high``, ``ece_post_low``, ``ece_post_high``
        (the interval of the population test ECE at ``interval_level``; it
        holds the ECE) and ``ece_interval_level``,
        ``train_error``, ``chance_error`` (the test error of always predicting
        the most frequent test class), ``n_test``, ``prior_nll`` (the test
        log-loss of the training split's class frequencies),
        ``nll_post_vs_prior`` (the mean per-row difference of the test
        log-loss after temperature scaling to it; negative is better) and its
        standard error ``nll_post_vs_prior_se``,
        ``epochs_trained`` and ``best_epoch`` (the epoch whose weights the net
        kept), ``hessian_trace`` and its
        Hutchinson standard error ``hessian_trace_se`` (NaN with fewer than 2
        probes), ``train_seconds``, and, for the report's paired comparisons
        and reliability diagrams (arrays, not written to the csv), the test
        labels ``y_test`` and probabilities before and after temperature
        scaling ``proba_pre``, ``proba_post``: every run of a dataset and
        seed scores the same test rows.
    """
    return run_group(
        dataset,
        [loss],
        seed,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        hidden_units=hidden_units,
        hessian_samples=hessian_samples,
        interval_level=interval_level,
        max_train=max_train,
        torch_threads=torch_threads,
        patience=patience,
    )[0]


def run_group(
    dataset,
    losses,
    seed,
    *,
    epochs,
    batch_size=128,
    lr=1e-3,
    hidden_units=(64, 64),
    hessian_samples=8,
    interval_level=0.95,
    max_train=None,
    torch_threads=None,
    patience="auto",
):
    """:func:`run_one`'s rows for several criteria on one dataset and seed.

    The nets of one dataset and seed share their shape, initial weights and
    batches (:func:`derive_seed`), so they are trained together, in one
    stacked pass (:func:`sklcalib._net_stack.fit_stacked`) that gives every
    net its own fit's weights to the last bit; each is then evaluated as
    :func:`run_one` evaluates it. Every row equals :func:`run_one`'s for its
    criterion, except ``train_seconds``: the time of the stacked training
    divided among its nets. The parameters are :func:`run_one`'s; ``losses``
    is a list of criterion registry names. The stacked pass needs one torch
    thread (``torch_threads=1``, as ``sklcalib benchmark`` runs); otherwise
    the nets are fitted one by one.

    Returns
    -------
    rows : list of dict
        One :func:`run_one` row per criterion, in the order of ``losses``.

    Examples
    --------
    >>> from sklcalib.benchmark.runner import run_group
    >>> rows = run_group("wine", ["ce", "focal"], 0, epochs=2, hessian_samples=0,
    ...                  torch_threads=1)
    >>> [row["loss"] for row in rows]
    ['ce', 'focal']
    """
    import torch

    from sklcalib._net_stack import fit_stacked  # torch extra: only when run

    if torch_threads is not None:
        torch_threads = _check_scalar(
            torch_threads, "torch_threads", integer=True, low=1
        )
    interval_level = _check_scalar(
        interval_level, "interval_level", low=0.0, low_open=True
    )
    if interval_level >= 1.0:
        raise ValueError(f"interval_level must be < 1, got {interval_level!r}.")
    if isinstance(patience, str) and patience == "auto":
        patience = PATIENCE if dataset in datasets.TABULAR_DATASETS else None
    elif patience is not None:
        patience = _check_scalar(patience, "patience", integer=True, low=1)
    losses = list(losses)
    if not losses:
        raise ValueError("losses must name at least one criterion.")
    data = _dataset(dataset, max_train)
    net_seed = derive_seed(dataset, seed)
    n_threads = torch.get_num_threads()
    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
    try:
        # the net's random_state seeds its weights, dropout and batch order
        # in local generators: the global torch state is left alone
        nets = [
            _build_net(
                loss,
                data,
                seed=net_seed,
                epochs=epochs,
                batch_size=batch_size,
                lr=lr,
                hidden_units=hidden_units,
                patience=patience,
            )
            for loss in losses
        ]
        start = time.perf_counter()
        fit_stacked(nets, data.X_train, data.y_train)
        train_seconds = (time.perf_counter() - start) / len(nets)
        rows = [
            _evaluate(
                net,
                data,
                dataset,
                loss,
                seed,
                epochs=epochs,
                hessian_samples=hessian_samples,
                interval_level=interval_level,
                train_seconds=train_seconds,
            )
            for net, loss in zip(nets, losses, strict=True)
        ]
    finally:
        if torch_threads is not None:
            torch.set_num_threads(n_threads)
    return rows


def _evaluate(
    net,
    data,
    dataset,
    loss,
    seed,
    *,
    epochs,
    hessian_samples,
    interval_level,
    train_seconds,
):
    """:func:`run_one`'s row of a fitted net."""
    net_seed = derive_seed(dataset, seed)
    logits_val = np.asarray(net.predict_logits(data.X_val), dtype=np.float64)
    logits_test = np.asarray(net.predict_logits(data.X_test), dtype=np.float64)
    # NetClassifier.predict_proba is this softmax; reuse the test forward pass
    proba_pre = softmax(logits_test, axis=1)
    scaler = calibration.TemperatureScaler(objective="ece").fit(logits_val, data.y_val)
    proba_post = np.asarray(scaler.predict_proba(logits_test), dtype=np.float64)
    # the interval of the ECE alone is computed below, at the level the
    # report's bracket needs
    pre = _split_metrics(data.y_test, proba_pre)
    post = _split_metrics(data.y_test, proba_post)
    intervals = {
        when: metrics.calibration_error_interval(
            data.y_test,
            proba,
            metric="ece",
            confidence_level=interval_level,
            random_state=derive_seed(dataset, seed),
        )
        for when, proba in (("pre", proba_pre), ("post", proba_post))
    }
    train_error = float(np.mean(net.predict(data.X_train) != data.y_train))

    if hessian_samples > 0:
        # the Hutchinson standard error needs two probes at least
        with_se = hessian_samples >= 2
        trace = diagnostics.hessian_trace(
            net,
            data.X_train[:_HESSIAN_MAX_ROWS],
            data.y_train[:_HESSIAN_MAX_ROWS],
            n_samples=hessian_samples,
            random_state=net_seed,
            return_std=with_se,
        )
        trace, trace_se = trace if with_se else (trace, float("nan"))
        trace, trace_se = float(trace), float(trace_se)
    else:
        trace = trace_se = float("nan")

    row = {
        "dataset": dataset,
        "loss": loss,
        "seed": int(seed),
        "epochs": int(epochs),
        "temperature": float(scaler.temperature_),
    }
    for key in METRICS:
        row[f"{key}_pre"] = float(pre[key])
        row[f"{key}_post"] = float(post[key])
    for when, ci in intervals.items():
        # the interval holds its estimate; the report's ECE is the same
        # binned error, computed by another kernel (equal to rounding)
        row[f"ece_{when}_low"] = min(float(ci.low), row[f"ece_{when}"])
        row[f"ece_{when}_high"] = max(float(ci.high), row[f"ece_{when}"])
    row["ece_interval_level"] = interval_level
    row["train_error"] = train_error
    # what always predicting the most frequent test class would err: the
    # reference of the at-chance flag (sklcalib.benchmark.chance)
    row["chance_error"] = _majority_class_error(data.y_test)
    row["n_test"] = len(data.y_test)
    row.update(_against_prior(data, proba_post))
    row["epochs_trained"] = len(net.history)
    stopper = dict(net.callbacks_).get("early_stopping")
    row["best_epoch"] = stopper.best_epoch_ if stopper else len(net.history)
    row["hessian_trace"] = trace
    row["hessian_trace_se"] = trace_se
    row["train_seconds"] = train_seconds
    # in memory only: the report's paired comparisons and reliability diagrams
    row["y_test"] = data.y_test
    row["proba_pre"] = proba_pre
    row["proba_post"] = proba_post
    return row
