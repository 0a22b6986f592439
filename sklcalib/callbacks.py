"""skorch callbacks for calibration-aware training.

- :class:`GammaSchedule`: the focal γ on a schedule of epochs (FLS-531, FLS-532).
- :class:`AdaFocalUpdater`: the per-epoch AdaFocal γ update from validation bins.
- :class:`CalibrationScoring`: a calibration metric in the history every epoch.
- ``CurvatureLogger`` (defined in :mod:`sklcalib.diagnostics`, re-exported here).
- :class:`TemperatureEarlyStopping`: early stopping on the validation log-loss
  after temperature scaling, restoring the best epoch's weights.
- :class:`FiniteLossCheck`: stop the fit when the training loss is NaN or
  infinite (one of :class:`~sklcalib.NetClassifier`'s default callbacks).

They work with :class:`sklcalib.NetClassifier`, whose internal datasets hold
``label_encoder_``-encoded int64 targets.
"""

import copy
import inspect
import numbers

import numpy as np
from scipy.special import softmax

from sklcalib._utils._optional import extra_imports
from sklcalib._utils._solvers import bracketed_newton
from sklcalib._utils._validation import check_n_bins, check_option, check_scalar
from sklcalib.metrics import get_scorer

with extra_imports("sklcalib.callbacks"):
    from skorch.callbacks import Callback, EpochScoring
    from skorch.utils import data_from_dataset, to_numpy

    # the Hessian diagnostics' callback, offered here with the others
    from sklcalib.diagnostics import CurvatureLogger

__all__ = [
    "FLS531",
    "FLS532",
    "AdaFocalUpdater",
    "CalibrationScoring",
    "CurvatureLogger",
    "FiniteLossCheck",
    "GammaSchedule",
    "TemperatureEarlyStopping",
]

#: γ schedule of Mukhoti et al. (2020): 5 for epochs 0-99, 3 up to 249, then 1;
#: (epoch, γ) pairs in a tuple, so that the default of every GammaSchedule
#: cannot be changed in place
FLS531 = ((0, 5.0), (100, 3.0), (250, 1.0))
#: the same with γ = 2 from epoch 250
FLS532 = ((0, 5.0), (100, 3.0), (250, 2.0))


def _current_epoch(net):
    # the net's own on_epoch_begin has already opened the new epoch
    return len(net.history) - 1


class _CheckedCallback(Callback):
    """A callback that checks the net it is given, and resets its own state,
    when a fit begins (``_begin``)."""

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Check the net and the parameters, and reset the state, for a fit.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        X : array-like, default=None
            The training data passed to ``fit`` (unused).
        y : array-like, default=None
            The training targets passed to ``fit`` (unused).
        **kwargs : dict
            Further arguments of skorch's hook (unused).

        Raises
        ------
        ValueError
            When the net lacks what the callback needs (its class says what:
            a criterion with a ``gamma``, a validation split, an AdaFocal
            criterion) or a parameter is invalid.
        """
        self._begin(net)

    def _begin(self, net):
        # a subclass's checks and its per-fit state
        pass


class GammaSchedule(_CheckedCallback):
    """Set the criterion's focal γ from a schedule of epochs.

    At the start of every epoch, ``net.criterion_.gamma`` is set to the value
    of the largest scheduled epoch not after the current one (epochs count
    from 0); before the first scheduled epoch the criterion keeps its own γ.
    The γ used is recorded in the history under ``"gamma"``.

    Parameters
    ----------
    schedule : dict of {int: float} or sequence of (int, float), default=FLS531
        Epoch (≥ 0) → γ (≥ 0), as a dict or as (epoch, γ) pairs.
        ``{0: 5, 100: 3, 250: 1}`` is FLS-531 of Mukhoti et al.;
        ``{0: 5, 100: 3, 250: 2}`` is FLS-532 (:data:`FLS531`,
        :data:`FLS532`, read-only tuples of pairs).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> from sklcalib.callbacks import GammaSchedule
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> net = NetClassifier(criterion="focal", max_epochs=4, random_state=0,
    ...                     module__hidden_units=(8,),
    ...                     callbacks=[GammaSchedule({0: 5.0, 2: 1.0})])
    >>> net.fit(X, y).history[:, "gamma"]
    [5.0, 5.0, 1.0, 1.0]
    """

    def __init__(self, schedule=FLS531):
        self.schedule = schedule

    def initialize(self):
        """Check the schedule and store it sorted by epoch.

        Returns
        -------
        self : GammaSchedule
            The callback, with ``epochs_`` and ``gammas_`` set.

        Raises
        ------
        ValueError
            When the schedule is not a non-empty dict (or sequence of pairs)
            of epochs (integers >= 0) to γ (finite numbers >= 0).
        """
        schedule = self.schedule  # read only: the default is a module constant
        pairs = None
        if isinstance(schedule, dict):
            pairs = list(schedule.items())
        elif isinstance(schedule, list | tuple) and all(
            isinstance(p, list | tuple) and len(p) == 2 for p in schedule
        ):
            pairs = [tuple(p) for p in schedule]
        if not pairs:
            raise ValueError(
                "schedule must be a non-empty dict {epoch: gamma} or sequence of "
                f"(epoch, gamma) pairs, got {schedule!r}."
            )
        checked = {}
        for epoch, gamma in pairs:
            if (
                isinstance(epoch, bool)
                or not isinstance(epoch, numbers.Integral)
                or epoch < 0
            ):
                raise ValueError(
                    f"schedule keys must be epochs, integers >= 0; got {epoch!r}."
                )
            if (
                isinstance(gamma, bool)
                or not isinstance(gamma, numbers.Real)
                or not np.isfinite(gamma)
                or gamma < 0
            ):
                raise ValueError(
                    "schedule values must be gammas, finite numbers >= 0; got "
                    f"{gamma!r} at epoch {epoch}."
                )
            checked[int(epoch)] = float(gamma)
        self.epochs_ = np.array(sorted(checked))
        self.gammas_ = np.array([checked[e] for e in self.epochs_])
        return self

    def _begin(self, net):
        if not hasattr(net.criterion_, "gamma"):
            raise ValueError(
                "GammaSchedule needs a criterion with a 'gamma' attribute, got "
                f"{type(net.criterion_).__name__}."
            )

    def gamma_at(self, epoch):
        """Return the scheduled γ at ``epoch`` (None before the first key).

        Parameters
        ----------
        epoch : int
            An epoch, counted from 0.

        Returns
        -------
        gamma : float or None
            The γ of the largest scheduled epoch not after ``epoch``, None when
            ``epoch`` comes before every scheduled epoch.
        """
        index = np.searchsorted(self.epochs_, epoch, side="right") - 1
        return None if index < 0 else float(self.gammas_[index])

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        """Set the criterion's γ for the epoch that starts and record it.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        dataset_train : torch.utils.data.Dataset, default=None
            The training split (unused).
        dataset_valid : torch.utils.data.Dataset, default=None
            The validation split (unused).
        **kwargs : dict
            Further arguments of skorch's hook (unused).
        """
        gamma = self.gamma_at(_current_epoch(net))
        if gamma is not None:
            net.criterion_.gamma = gamma
        net.history.record("gamma", float(net.criterion_.gamma))


def _dataset_targets(dataset):
    _, y = data_from_dataset(dataset)
    return np.asarray(to_numpy(y), dtype=np.int64)


class _ValidationBatches(_CheckedCallback):
    """A callback that keeps the logits and targets of the validation batches.

    The epoch's own validation loop gives them: predicting the split again
    would cost a second forward pass over it every epoch.
    """

    def on_epoch_begin(self, net, **kwargs):
        """Start collecting the epoch's validation outputs.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        **kwargs : dict
            Further arguments of skorch's hook (unused).
        """
        self.batches_ = []

    def on_batch_end(self, net, batch=None, training=None, y_pred=None, **kwargs):
        """Keep the logits and targets of a validation batch.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        batch : tuple of (X, y), default=None
            The batch; its targets are kept.
        training : bool, default=None
            Whether the batch is a training batch (ignored then).
        y_pred : torch.Tensor, default=None
            The module's output (logits) on the batch, in evaluation mode for
            a validation batch.
        **kwargs : dict
            Further arguments of skorch's hook (unused).
        """
        if training or y_pred is None or not isinstance(batch, (tuple, list)):
            return
        y_pred = y_pred[0] if isinstance(y_pred, tuple) else y_pred
        self.batches_.append((to_numpy(y_pred), to_numpy(batch[1])))

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        """Act on the epoch's validation outputs, as the class says.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        dataset_train : torch.utils.data.Dataset, default=None
            The training split (unused).
        dataset_valid : torch.utils.data.Dataset, default=None
            The validation split, whose outputs (kept from the epoch's own
            validation loop) and targets the callback reads.
        **kwargs : dict
            Further arguments of skorch's hook (unused).

        Raises
        ------
        ValueError
            When there is no validation split (or, stopping early, its logits
            are not finite).
        KeyboardInterrupt
            To stop training early (skorch's way; ``fit`` catches it).
        """
        if dataset_valid is None:
            raise ValueError(
                f"{type(self).__name__} got no validation data: set train_split, "
                "not None."
            )
        self._validation_end(net, dataset_valid)

    def _collected_validation(self, dataset_valid):
        # (float64 logits, int64 targets) of the batches kept, or None when
        # they do not cover the split (no batches seen: a custom loop)
        batches = getattr(self, "batches_", None)
        if batches:
            logits = np.concatenate([b[0] for b in batches]).astype(np.float64)
            y_true = np.concatenate([b[1] for b in batches]).astype(np.int64)
            if len(y_true) == len(dataset_valid):
                return logits, y_true
        return None


class AdaFocalUpdater(_ValidationBatches):
    """Update AdaFocal's per-bin γ once an epoch from the validation split.

    At the end of every epoch the callback takes the softmax probabilities of
    the net's validation split and calls
    ``net.criterion_.update_from_validation(y_prob, y_true)``, where the
    criterion (:class:`sklcalib.losses.AdaFocalLoss` or
    :class:`~sklcalib.losses.AdaDualFocalLoss`) bins the validation top-1
    confidence and applies its own update: AdaFocal's signed γ with the switch
    to inverse focal, or AdaDualFocal's γ >= 0 (Tao et al.'s rule). The γ of
    each bin after the update is recorded in the history under
    ``"adafocal_gammas"``.

    The probabilities are those of the epoch's own validation loop: the
    callback keeps the logits of every validation batch and applies the float64
    softmax of :meth:`~sklcalib.NetClassifier.predict_proba`, which gives the
    same numbers as ``net.predict_proba(dataset_valid)`` (same batches, same
    evaluation mode) without a second pass over the validation split.

    Needs a validation split (``train_split`` not None).
    :class:`~sklcalib.NetClassifier` adds one automatically, named
    ``"adafocal_updater"``, when its criterion is ``"adafocal"`` or
    ``"adadualfocal"`` (or any criterion with an ``update_from_validation``
    method) and ``callbacks`` holds no ``AdaFocalUpdater`` already.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> from sklcalib.callbacks import AdaFocalUpdater
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> net = NetClassifier(criterion="adafocal", max_epochs=2, random_state=0,
    ...                     module__hidden_units=(8,),
    ...                     callbacks=[AdaFocalUpdater()]).fit(X, y)
    >>> len(net.history[-1, "adafocal_gammas"])
    15
    """

    def _begin(self, net):
        if not net.train_split:
            raise ValueError(
                "AdaFocalUpdater (added automatically for criterion='adafocal' "
                "or 'adadualfocal') needs the validation split: set train_split "
                "(e.g. NetClassifier's default ValidSplit(0.2, stratified=True)), "
                "not None."
            )
        if not callable(getattr(net.criterion_, "update_from_validation", None)):
            raise ValueError(
                "AdaFocalUpdater needs an AdaFocal criterion (criterion='adafocal' "
                "or 'adadualfocal') with an update_from_validation method, got "
                f"{type(net.criterion_).__name__}."
            )

    def _validation_predictions(self, net, dataset_valid):
        collected = self._collected_validation(dataset_valid)
        if collected is not None and np.isfinite(collected[0]).all():
            return softmax(collected[0], axis=1), collected[1]
        # no batches seen (a custom loop), or non-finite logits: predict_proba
        # gives the same numbers, or the error that explains the non-finite ones
        return net.predict_proba(dataset_valid), _dataset_targets(dataset_valid)

    def _validation_end(self, net, dataset_valid):
        # the criterion's per-bin γ from the validation split
        y_prob, y_true = self._validation_predictions(net, dataset_valid)
        self.batches_ = []
        gammas = net.criterion_.update_from_validation(y_prob, y_true)
        if gammas is not None:  # the new per-bin γ, as sklcalib's criteria return
            gammas = np.asarray(to_numpy(gammas)).tolist()
            net.history.record("adafocal_gammas", gammas)


# the calibration errors CalibrationScoring can log, from the metrics' registry
_METRICS = ("ece", "adaptive_ece", "classwise_ece", "mce", "smooth_ece")


def _resolve_metric(scoring):
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        key = scoring.removeprefix("neg_")
        if key in _METRICS:
            return get_scorer(f"neg_{key}")._score_func
    raise ValueError(
        f"scoring must be one of {sorted(_METRICS)} or a callable "
        f"metric(y_true, y_prob), got {scoring!r}."
    )


class _CalibrationMetric:
    """``(net, X, y) -> metric`` on encoded targets, as skorch scoring wants.

    A class rather than a closure so the callback stays picklable.
    """

    def __init__(self, metric, n_bins):
        self.metric = metric
        self.n_bins = n_bins

    def __call__(self, net, X, y):
        y_prob = net.predict_proba(X)
        kwargs = {}
        try:
            parameters = inspect.signature(self.metric).parameters
        except (TypeError, ValueError):
            parameters = {}
        if "labels" in parameters:
            # the targets are encoded: all columns are classes 0..K-1 even if
            # a split misses one
            kwargs["labels"] = np.arange(y_prob.shape[1])
        if "n_bins" in parameters:
            kwargs["n_bins"] = self.n_bins
        return float(self.metric(np.asarray(y), y_prob, **kwargs))


class CalibrationScoring(EpochScoring):
    """Record a calibration metric of the net every epoch.

    A :class:`skorch.callbacks.EpochScoring` that evaluates a metric of
    :mod:`sklcalib.metrics` on the softmax probabilities of the validation
    split (or of the training split) at the end of every epoch and records
    it in the history, e.g. ``net.history[:, "valid_ece"]``.

    Parameters
    ----------
    scoring : str or callable, default="ece"
        ``"ece"``, ``"adaptive_ece"``, ``"classwise_ece"``, ``"mce"`` or
        ``"smooth_ece"`` (a ``"neg_"`` prefix is accepted and ignored: the
        recorded value is the metric itself, lower is better), or a callable
        ``metric(y_true, y_prob)``.
    on_train : bool, default=False
        Score the training split instead of the validation split. The
        training split is re-predicted at the end of the epoch (not the
        predictions made while the weights were still moving).
    name : str or None, default=None
        History key; default ``"valid_<scoring>"`` or ``"train_<scoring>"``.
    n_bins : int, default=15
        Number of bins, for metrics that take ``n_bins``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> from sklcalib.callbacks import CalibrationScoring
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> net = NetClassifier(max_epochs=3, random_state=0, module__hidden_units=(8,),
    ...                     callbacks=[CalibrationScoring("ece")]).fit(X, y)
    >>> len(net.history[:, "valid_ece"])
    3
    """

    def __init__(self, scoring="ece", on_train=False, name=None, n_bins=15):
        self.n_bins = n_bins
        super().__init__(
            scoring=scoring,
            lower_is_better=True,
            on_train=on_train,
            name=name,
            use_caching=not on_train,  # derived again at initialize
        )

    def _get_param_names(self):
        # skorch lists every attribute; EpochScoring's others are fixed here
        return ["scoring", "on_train", "name", "n_bins"]

    def _derive_use_caching(self):
        # from on_train whenever it may have changed (set_params): training-
        # split predictions cached during the epoch come from moving weights
        # (and dropout), so the training split is re-predicted instead
        self.use_caching = not self.on_train

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        """Fix the caching mode and the history key, then start as skorch does.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        X : array-like, default=None
            The training data passed to ``fit``.
        y : array-like, default=None
            The training targets passed to ``fit``.
        **kwargs : dict
            Further arguments of skorch's hook.
        """
        self._derive_use_caching()
        self.name_ = self._get_name()
        super().on_train_begin(net, X, y, **kwargs)

    def get_test_data(self, dataset_train, dataset_valid, use_caching):
        """Return the data to score: the split's dataset itself when not caching.

        With caching, skorch's cached validation predictions are scored.
        Otherwise the chosen split is re-predicted from its dataset, which
        :class:`~sklcalib.NetClassifier` predicts on without re-validating it.

        Parameters
        ----------
        dataset_train : torch.utils.data.Dataset
            The training split.
        dataset_valid : torch.utils.data.Dataset or None
            The validation split.
        use_caching : bool
            Whether the predictions made during the epoch are reused.

        Returns
        -------
        X_test : torch.utils.data.Dataset or None
            The split to score (None when it is absent).
        y_test : ndarray of shape (n_samples,) or None
            Its encoded targets.
        y_pred : list
            The cached prediction batches with caching, else empty.
        """
        if use_caching:
            return super().get_test_data(dataset_train, dataset_valid, use_caching)
        dataset = dataset_train if self.on_train else dataset_valid
        if dataset is None:
            return None, None, []
        # the dataset itself, not its arrays: NetClassifier predicts on its
        # internal datasets without re-validating them
        return dataset, _dataset_targets(dataset), []

    def _get_name(self):
        if self.name is not None:
            return self.name
        prefix = "train" if self.on_train else "valid"
        if isinstance(self.scoring, str):
            return f"{prefix}_{self.scoring.removeprefix('neg_')}"
        return f"{prefix}_{getattr(self.scoring, '__name__', 'calibration')}"

    def initialize(self):
        """Check ``n_bins``, resolve the metric and reset the best score.

        Returns
        -------
        self : CalibrationScoring
            The callback, with ``scoring_`` and ``name_`` set.

        Raises
        ------
        ValueError
            When ``n_bins`` is not a valid number of bins (an integer >= 1,
            within sklcalib's limit) or ``scoring`` names no known metric.
        """
        check_n_bins(self.n_bins)
        metric = _resolve_metric(self.scoring)
        self._derive_use_caching()
        self.best_score_ = np.inf
        self.scoring_ = _CalibrationMetric(metric, self.n_bins)
        self.name_ = self._get_name()
        self._initialize_cache()
        return self


class FiniteLossCheck(_CheckedCallback):
    """Stop the fit with an error when the loss is NaN or infinite.

    After every training and validation batch the loss is checked; a NaN or
    infinite loss means the weights are (or are about to be) unusable, and
    every later epoch and prediction would be NaN too. The error names the
    split, the epoch and the batch (both counted from 1) and what usually
    helps: a lower learning rate, standardised features, gradient clipping.

    :class:`~sklcalib.NetClassifier` adds it to its default callbacks under
    the name ``"finite_loss"``; ``callbacks__finite_loss=None`` switches it
    off. With a plain skorch net, pass it in ``callbacks``.

    Examples
    --------
    >>> import torch
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> net = NetClassifier(lr=1e3, optimizer=torch.optim.SGD, max_epochs=5,
    ...                     random_state=0)
    >>> try:
    ...     net.fit(X * 1e3, y)
    ... except RuntimeError as error:
    ...     print(str(error)[:46])
    The validation loss is nan at epoch 2, batch 1
    """

    def _begin(self, net):
        # epochs of this fit, counted from 1 also after partial_fit
        self.first_epoch_ = len(net.history)

    def on_batch_end(self, net, batch=None, training=None, loss=None, **kwargs):
        """Raise when the loss of the batch is NaN or infinite.

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        batch : tuple, default=None
            The batch (unused).
        training : bool, default=None
            Whether the batch is a training batch (else a validation batch).
        loss : torch.Tensor or float, default=None
            The loss of the batch; None is not checked.
        **kwargs : dict
            Further arguments of skorch's hook (unused).

        Raises
        ------
        RuntimeError
            When the loss is NaN or infinite, naming the split, the epoch and
            the batch.
        """
        if loss is None:
            return
        value = float(loss.detach()) if hasattr(loss, "detach") else float(loss)
        if np.isfinite(value):
            return
        epoch = len(net.history) - getattr(self, "first_epoch_", 0)
        # the batches of both splits are counted in one list
        n_batch = len(net.history[-1, "batches"])
        if not training:
            n_batch -= net.history[-1].get("train_batch_count", 0)
        split = "training" if training else "validation"
        lr = getattr(net, "lr", None)
        raise RuntimeError(
            f"The {split} loss is {value} at epoch {epoch}, batch {n_batch} of "
            "this fit: training diverged and the weights are no longer usable. "
            f"Try a lower learning rate (lr={lr!r} now), standardised features "
            "(e.g. sklearn.preprocessing.StandardScaler in a pipeline), or "
            "gradient clipping (callbacks=[skorch.callbacks."
            "GradientNormClipping(1.0)])."
        )


class TemperatureEarlyStopping(_ValidationBatches):
    """Early stopping on the validation log-loss after temperature scaling.

    At the end of every epoch the callback fits one temperature T on the
    validation logits (minimising their negative log-likelihood, as
    :class:`sklcalib.calibration.TemperatureScaler` does: a one-dimensional
    convex problem, solved by a few Newton steps) and scores the epoch by the
    validation log-loss of ``softmax(logits / T)``. Training stops when that
    score has not improved for ``patience`` epochs, and at the end of
    training (stopped or not) the weights of the best epoch are restored.

    It stops on what will be used when the net is temperature-scaled
    afterwards ("refine, then calibrate"): the raw validation loss also
    counts the net's over- or under-confidence, which one temperature
    repairs, so it can stop too early (cross-entropy nets that grow
    over-confident while their ranking still improves) or keep weights whose
    raw loss is good only because the training loss held the confidence down
    (focal losses). The User Guide (:ref:`temperature_early_stopping`) shows
    where the two choices differ.

    Every epoch records in the history ``name`` (the post-temperature
    validation log-loss), ``"valid_temperature"`` (its T) and
    ``"<name>_best"`` (whether the epoch improved on the best score).

    Parameters
    ----------
    patience : int, default=5
        Number of epochs without improvement after which training stops.
    threshold : float, default=1e-4
        Improvements smaller than this are ignored: relative to the best score
        with ``threshold_mode="rel"``, absolute with ``"abs"`` (skorch's
        :class:`~skorch.callbacks.EarlyStopping` semantics).
    threshold_mode : {"rel", "abs"}, default="rel"
        How ``threshold`` is applied.
    load_best : bool, default=True
        Restore the module's weights of the best epoch when training ends.
    name : str, default="valid_temp_nll"
        History key of the post-temperature validation log-loss.
    sink : callable, default=print
        Where the stopping and restoring messages go (only when the net is
        verbose, if ``print``).

    Attributes
    ----------
    best_score_ : float
        The best post-temperature validation log-loss of the current fit.
    best_epoch_ : int
        The history's epoch number of that score (counted from 1, as
        ``net.history[:, "epoch"]``).
    best_temperature_ : float
        The temperature fitted at that epoch: ``softmax(logits / T)`` with it
        gives the recorded score on the validation split.
    misses_ : int
        Epochs since the last improvement.

    See Also
    --------
    skorch.callbacks.EarlyStopping : Early stopping on a recorded score.
    sklcalib.calibration.TemperatureScaler : The temperature fit.

    Notes
    -----
    The validation logits are those of the epoch's own validation loop (no
    second forward pass). Needs a validation split (``train_split`` not
    None). Only the module's weights are restored, not the optimiser's state
    (as skorch's ``EarlyStopping(load_best=True)``). The temperature is fitted
    on the same validation split that picks the epoch, so the recorded score
    is optimistic; report the test log-loss of a temperature fitted on
    held-out data.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> from sklcalib.callbacks import TemperatureEarlyStopping
    >>> X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    >>> stop = TemperatureEarlyStopping(patience=3)
    >>> net = NetClassifier(max_epochs=30, random_state=0, module__hidden_units=(16,),
    ...                     callbacks=[stop]).fit(X, y)
    >>> scores = net.history[:, "valid_temp_nll"]
    >>> bool(min(scores) == stop.best_score_)
    True
    >>> len(scores) <= 30 and stop.best_temperature_ > 0
    True
    """

    def __init__(
        self,
        patience=5,
        threshold=1e-4,
        threshold_mode="rel",
        load_best=True,
        name="valid_temp_nll",
        sink=print,
    ):
        self.patience = patience
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.load_best = load_best
        self.name = name
        self.sink = sink

    def __getstate__(self):
        # the snapshot is a copy of weights the net pickles anyway
        state = self.__dict__.copy()
        state["best_weights_"] = None
        state["batches_"] = []
        return state

    def _check_params(self):
        check_scalar(self.patience, "patience", integer=True, low=1)
        check_scalar(self.threshold, "threshold", low=0.0)
        check_option(self.threshold_mode, "threshold_mode", ("rel", "abs"))
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}.")

    def _begin(self, net):
        self._check_params()
        if not net.train_split:
            raise ValueError(
                "TemperatureEarlyStopping needs the validation split: set "
                "train_split (e.g. NetClassifier's default ValidSplit), not None."
            )
        self.misses_ = 0
        self.best_score_ = np.inf
        self.best_epoch_ = 0
        self.best_temperature_ = np.nan
        self.last_temperature_ = 1.0
        self.best_weights_ = None
        self.threshold_score_ = np.inf
        self.batches_ = []

    def _validation_logits(self, net, dataset_valid):
        collected = self._collected_validation(dataset_valid)
        if collected is not None:
            return collected
        # no batches seen (a custom loop): predict the split again
        if hasattr(net, "predict_logits"):
            logits = net.predict_logits(dataset_valid)
        else:
            logits = to_numpy(net.forward(dataset_valid, training=False))
        return np.asarray(logits, np.float64), _dataset_targets(dataset_valid)

    def _validation_end(self, net, dataset_valid):
        # the epoch's score after temperature scaling; a stop when it stalls
        logits, y_true = self._validation_logits(net, dataset_valid)
        self.batches_ = []
        # warm start from the last epoch's temperature
        temperature, score = _temperature_scaled_log_loss(
            logits, y_true, getattr(self, "last_temperature_", 1.0)
        )
        self.last_temperature_ = temperature
        improved = score < self.threshold_score_
        if improved:
            self.misses_ = 0
            self.best_score_ = score
            self.best_temperature_ = float(temperature)
            self.best_epoch_ = net.history[-1, "epoch"]
            if self.threshold_mode == "rel":
                change = self.threshold * score
            else:
                change = self.threshold
            self.threshold_score_ = score - change
            if self.load_best:
                self.best_weights_ = copy.deepcopy(net.module_.state_dict())
        else:
            self.misses_ += 1
        net.history.record(self.name, score)
        net.history.record("valid_temperature", temperature)
        net.history.record(f"{self.name}_best", bool(improved))
        if self.misses_ >= self.patience:
            self._sink(
                f"Stopping since {self.name} has not improved in the last "
                f"{self.patience} epochs.",
                net.verbose,
            )
            raise KeyboardInterrupt

    def on_train_end(self, net, **kwargs):
        """Restore the best epoch's weights (when ``load_best``).

        Parameters
        ----------
        net : NetClassifier or skorch.NeuralNet
            The net being fitted.
        **kwargs : dict
            Further arguments of skorch's hook (unused).
        """
        weights = getattr(self, "best_weights_", None)
        if not self.load_best or weights is None:
            return
        if self.best_epoch_ != net.history[-1, "epoch"]:
            net.module_.load_state_dict(weights)
            self._sink(
                f"Restoring best model from epoch {self.best_epoch_}.", net.verbose
            )

    def _sink(self, text, verbose):
        # as skorch's EarlyStopping: print only for a verbose net, any other
        # sink always
        if self.sink is not print or verbose:
            self.sink(text)


#: range of the fitted temperature, TemperatureScaler's
_TEMPERATURE_BOUNDS = (1e-4, 1e4)


def _temperature_scaled_log_loss(logits, y_true, start=1.0):
    """(T, mean NLL of softmax(logits / T)) with T fitted on these rows by NLL.

    The minimum of TemperatureScaler's objective, found by the same
    safeguarded Halley/Newton iteration on beta = 1 / T from ``start`` (the
    last epoch's T: a step or two), directly on the logits: the scaler's
    input checks cost more than its fit every epoch. The classes lie along
    the rows of a (K, N) copy, so the sums over the classes are K - 1
    additions of rows (a short last axis is numpy's slow case). A class
    absent from these rows changes nothing: the NLL reads every column.
    """
    z = np.array(np.asarray(logits, dtype=np.float64).T, order="C")
    y_true = np.asarray(y_true, dtype=np.int64)
    z -= z.max(axis=0)  # exp(beta * z) <= 1: no overflow
    z_true = z[y_true, np.arange(len(y_true))]
    buffer = np.empty_like(z)

    def derivatives(beta):
        # NLL(beta) and three derivatives: moments of z under softmax(beta z)
        np.multiply(z, beta, out=buffer)
        np.exp(buffer, out=buffer)
        s0 = buffer.sum(axis=0)
        np.multiply(buffer, z, out=buffer)
        s1 = buffer.sum(axis=0)
        np.multiply(buffer, z, out=buffer)
        s2 = buffer.sum(axis=0)
        np.multiply(buffer, z, out=buffer)
        s3 = buffer.sum(axis=0)
        mean, second = s1 / s0, s2 / s0
        # the cube as products: z <= 0 makes every mean negative, and numpy's
        # power of a negative base takes libm's scalar pow (10 788 rows: 7 ms,
        # against 0.02 ms; the same value to an ulp)
        mean_sq = mean * mean
        return (
            None,
            np.mean(mean - z_true),
            np.mean(np.maximum(second - mean_sq, 0.0)),
            np.mean(s3 / s0 - 3 * mean * second + 2 * mean_sq * mean),
        )

    lo, hi = 1.0 / _TEMPERATURE_BOUNDS[1], 1.0 / _TEMPERATURE_BOUNDS[0]
    start = start if np.isfinite(start) and start > 0 else 1.0
    beta = min(max(bracketed_newton(derivatives, 1.0 / start, lo, hi, 100), lo), hi)
    np.multiply(z, beta, out=buffer)
    np.exp(buffer, out=buffer)
    score = np.mean(np.log(buffer.sum(axis=0)) - beta * z_true)
    return 1.0 / beta, float(score)
