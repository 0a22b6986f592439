"""The network estimator: a skorch classifier that is a scikit-learn citizen.

:class:`NetClassifier` wraps :class:`skorch.NeuralNetClassifier` with what a
tabular user expects from a scikit-learn classifier: labels of any type,
numpy or pandas input, validated input, softmax probabilities for every
criterion, scikit-learn's ``decision_function`` (the logit margin for binary
problems) beside ``predict_logits`` (all logit columns), a fit that stops with
an error instead of training on a non-finite loss, and a ``random_state`` that
makes a fit reproducible. :class:`MLP` is the default module; its input and output
sizes are filled in from the data at ``fit``.
"""

import inspect
import math
import numbers

import numpy as np
from scipy.special import softmax
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from sklcalib._utils._optional import extra_imports
from sklcalib._utils._validation import check_scalar

with extra_imports("sklcalib.net"):
    import torch
    from skorch import NeuralNet, NeuralNetClassifier
    from skorch.callbacks import (
        Callback,
        EpochScoring,
        EpochTimer,
        PassthroughScoring,
        PrintLog,
    )
    from skorch.dataset import Dataset as SkorchDataset
    from skorch.dataset import ValidSplit
    from skorch.utils import TeeGenerator, is_dataset, to_device, to_numpy

# the criteria and callbacks need torch and skorch too (the same extra)
from sklcalib.callbacks import AdaFocalUpdater, FiniteLossCheck
from sklcalib.losses import CRITERIA, CalibrationLoss, get_criterion

__all__ = ["MLP", "NetClassifier"]


class MLP(torch.nn.Module):
    """A fully connected network that returns logits.

    ``Linear -> activation -> Dropout`` for each hidden layer, then a final
    ``Linear`` to ``n_classes`` outputs without any nonlinearity: the criteria
    of :mod:`sklcalib.losses` and :class:`NetClassifier` expect logits.

    Parameters
    ----------
    hidden_units : int or sequence of int, default=(64, 64)
        Width of each hidden layer; ``()`` gives multinomial logistic
        regression.
    dropout : float, default=0.0
        Dropout probability after each hidden layer, in [0, 1).
    activation : class or instance of torch.nn.Module, default=torch.nn.ReLU
        Nonlinearity after each hidden layer; a class is instantiated without
        arguments once per layer.
    n_features : int, default=None
        Number of input features. :class:`NetClassifier` sets it from the
        data at ``fit``; set it yourself when using the module on its own.
    n_classes : int, default=None
        Number of outputs (classes). Set from the data like ``n_features``.

    Examples
    --------
    >>> import torch
    >>> from sklcalib.net import MLP
    >>> module = MLP(hidden_units=(8,), n_features=4, n_classes=3)
    >>> module(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """

    def __init__(
        self,
        hidden_units=(64, 64),
        dropout=0.0,
        activation=torch.nn.ReLU,
        n_features=None,
        n_classes=None,
    ):
        super().__init__()
        n_features = _check_positive_int(n_features, "n_features")
        n_classes = _check_positive_int(n_classes, "n_classes")
        if isinstance(hidden_units, numbers.Integral):
            hidden_units = (hidden_units,)
        hidden_units = tuple(
            _check_positive_int(h, "hidden_units") for h in hidden_units
        )
        if not (isinstance(dropout, numbers.Real) and 0.0 <= dropout < 1.0):
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}.")

        layers = []
        width = n_features
        for units in hidden_units:
            layers.append(torch.nn.Linear(width, units))
            layers.append(activation() if isinstance(activation, type) else activation)
            if dropout > 0:
                layers.append(torch.nn.Dropout(dropout))
            width = units
        layers.append(torch.nn.Linear(width, n_classes))
        self.layers = torch.nn.Sequential(*layers)

    def forward(self, X):
        """Return the logits of a batch.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, n_features)
            The inputs.

        Returns
        -------
        logits : torch.Tensor of shape (n_samples, n_classes)
            The output of the last ``Linear`` layer, without nonlinearity.
        """
        return self.layers(X)


def _takes_encoded_batches(criterion):
    """Whether the training loop may call a criterion's ``_loss`` on its own
    batches (skipping ``forward``'s input check): a sklcalib criterion whose
    ``forward`` is the base class's and that no forward hook observes."""
    from torch.nn.modules import module as torch_module

    return (
        isinstance(criterion, CalibrationLoss)
        and type(criterion).forward is CalibrationLoss.forward
        and not criterion._forward_hooks
        and not criterion._forward_pre_hooks
        and not getattr(torch_module, "_global_forward_hooks", True)
        and not getattr(torch_module, "_global_forward_pre_hooks", True)
    )


def _check_positive_int(value, name):
    if value is None:
        raise ValueError(
            f"{name} must be given: NetClassifier infers it from the data at fit; "
            f"when using the module directly pass {name} (or module__{name})."
        )
    return check_scalar(value, name, integer=True, low=1)


def _encoded_accuracy(net, X, y):
    """Accuracy against the net's encoded (0..K-1) targets.

    skorch's callbacks see the targets of the internal datasets, which hold
    ``label_encoder_``-encoded integers, so the default ``"accuracy"`` scorer
    (which compares them with ``predict``, i.e. the original labels) would be
    wrong for string labels.
    """
    logits = net.predict_logits(X)
    return float(np.mean(np.argmax(logits, axis=1) == np.asarray(y)))


def _resolve_criterion(criterion):
    if isinstance(criterion, str):
        return get_criterion(criterion)
    return criterion


def _needs_adafocal_updater(criterion):
    # AdaFocal-type criteria adapt only through their update_from_validation
    if isinstance(criterion, str):
        # an unknown name is reported by initialize_criterion, not here
        criterion = CRITERIA.get(criterion)
    return callable(getattr(criterion, "update_from_validation", None))


def _is_adafocal_updater(callback):
    if isinstance(callback, tuple | list) and len(callback) == 2:
        callback = callback[1]
    if isinstance(callback, type):
        return issubclass(callback, AdaFocalUpdater)
    return isinstance(callback, AdaFocalUpdater)


def _accepts(callable_, name):
    try:
        parameters = inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters


# ----------------------------------------------------------------------
# the fast path: batches of in-memory tensors
# ----------------------------------------------------------------------
#: DataLoader arguments the in-memory batches honour
_LOADER_ARGS = frozenset({"batch_size", "shuffle", "generator", "drop_last"})
#: DataLoader arguments that may be given with their default value only
_LOADER_DEFAULTS = {
    "num_workers": 0,
    "pin_memory": False,
    "timeout": 0,
    "persistent_workers": False,
    "collate_fn": None,
    "sampler": None,
    "batch_sampler": None,
    "worker_init_fn": None,
    "prefetch_factor": None,
    "pin_memory_device": "",
}
#: prediction and the validation forward pass run in chunks of at least this
#: many rows (a larger ``iterator_valid__batch_size`` or ``batch_size`` wins)
_INFERENCE_ROWS = 1024


def _as_tensor(array):
    """A CPU tensor sharing ``array``'s memory where possible, or None.

    Only what ``default_collate`` would turn into the same tensor row by row:
    strided tensors, numeric or boolean numpy arrays of native byte order.
    """
    if isinstance(array, torch.Tensor):
        if array.layout != torch.strided or array.ndim == 0:
            return None
        return array
    if not isinstance(array, np.ndarray) or array.ndim == 0:
        return None
    if array.dtype.kind not in "biuf" or not array.dtype.isnative:
        return None
    if not array.flags.writeable:  # torch would warn about sharing it
        array = array.copy()
    try:
        return torch.from_numpy(np.ascontiguousarray(array))
    except TypeError:  # a dtype torch lacks (uint16 on an old torch, ...)
        return None


def _in_memory_tensors(dataset):
    """``(X, y)`` tensors of a plain skorch dataset (or a Subset of one).

    Returns None for any other dataset: a user's Dataset, a skorch Dataset
    subclass (its ``transform`` may do anything per row), dict or list
    inputs, sparse matrices, DataFrames. ``y`` is None when the dataset has
    no targets.
    """
    indices = None
    if type(dataset) is torch.utils.data.Subset:
        indices, dataset = dataset.indices, dataset.dataset
    if type(dataset) is not SkorchDataset:
        return None
    X = _as_tensor(dataset.X)
    if X is None:
        return None
    y = None
    if dataset.y is not None:
        y = _as_tensor(dataset.y)
        if y is None or len(y) != len(X):
            return None
    if indices is not None:
        # one gather per fit, not one per sample and epoch
        index = torch.as_tensor(np.asarray(indices, dtype=np.int64))
        X = X.index_select(0, index)
        y = None if y is None else y.index_select(0, index)
    return X, y


class _TensorBatches:
    """Mini-batches of in-memory tensors: one gather (or slice) per batch.

    Yields ``(X_batch, y_batch)`` exactly as ``torch.utils.data.DataLoader``
    over a skorch ``Dataset`` does (same rows, same order, same dtypes), and
    draws from ``generator`` exactly as the DataLoader does on every pass (a
    worker base seed, then ``RandomSampler``'s permutation and its empty tail),
    so that a seeded fit gives the same numbers on either path. Without targets
    the batch holds skorch's placeholder, zeros of shape (n, 1).
    """

    def __init__(
        self, X, y, batch_size, shuffle=False, generator=None, drop_last=False
    ):
        self.X = X
        self.y = y
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.generator = generator
        self.drop_last = bool(drop_last)

    def __len__(self):
        n, size = len(self.X), self.batch_size
        return n // size if self.drop_last else -(-n // size)

    def _targets(self, index):
        if self.y is not None:
            return self.y[index]
        n = len(range(len(self.X))[index]) if isinstance(index, slice) else len(index)
        return torch.zeros(n, 1)

    def __iter__(self):
        n, size, generator = len(self.X), self.batch_size, self.generator
        # what DataLoader.__iter__ draws first, on every pass
        torch.empty((), dtype=torch.int64).random_(generator=generator)
        if self.shuffle:
            if generator is None:
                # RandomSampler without a generator seeds one from the global
                seed = int(torch.empty((), dtype=torch.int64).random_().item())
                generator = torch.Generator().manual_seed(seed)
            order = torch.randperm(n, generator=generator)
        stop = n - size + 1 if self.drop_last else n
        for start in range(0, max(stop, 0), size):
            if self.shuffle:
                index = order[start : start + size]
            else:  # a view: no copy at all
                index = slice(start, start + size)
            yield self.X[index], self._targets(index)
        if self.shuffle:
            # RandomSampler's last draw, an empty tail permutation
            torch.randperm(n, generator=generator)


class _EpochTable(PrintLog):
    """skorch's PrintLog, which builds no table when it would print nothing.

    PrintLog formats the epoch's table every epoch and then drops it when
    ``verbose=0`` and its sink is ``print``; on a small data set that costs
    as much as a few training steps per epoch.
    """

    def on_epoch_end(self, net, **kwargs):
        if self.sink is print and not net.verbose:
            return
        super().on_epoch_end(net, **kwargs)


class _BatchAverage(PassthroughScoring):
    """skorch's PassthroughScoring, reading the epoch's batches directly.

    The same batch-size-weighted mean of the per-batch values, recorded
    under the same keys; skorch's history query (and, without a validation
    split, the KeyError it catches every epoch) cost more than the average.
    """

    def on_epoch_end(self, net, **kwargs):
        history = net.history
        size_key = "train_batch_size" if self.on_train else "valid_batch_size"
        pairs = [
            (batch[size_key], batch[self.name])
            for batch in history[-1]["batches"]
            if self.name in batch and size_key in batch
        ]
        if not pairs:  # no validation split, or no batches
            return
        weights, scores = zip(*pairs, strict=True)
        score = np.average(scores, weights=weights)
        is_best = self._is_best_score(score)
        if is_best:
            self.best_score_ = score
        history.record(self.name, score)
        if is_best is not None:
            history.record(self.name + "_best", bool(is_best))


def _overrides(obj, base, name):
    """Whether ``obj``'s class overrides method ``name`` of ``base``."""
    return getattr(type(obj), name, None) is not getattr(base, name)


def _slice_output(output, index):
    if isinstance(output, tuple):
        return tuple(o[index] for o in output)
    return output[index]


class NetClassifier(NeuralNetClassifier):
    """A skorch neural-network classifier with scikit-learn semantics.

    A :class:`skorch.NeuralNetClassifier` whose module returns logits, with
    defaults a tabular user can rely on and the contract of a scikit-learn
    classifier: ``classes_`` of any label type, ``predict_proba`` that is the
    softmax of the logits for every criterion, ``decision_function`` shaped as
    scikit-learn's (the logit margin for binary problems), ``predict_logits``
    for all the logits, validated input and a reproducible ``random_state``.

    Parameters
    ----------
    module : class or instance of torch.nn.Module, default=MLP
        The network; it must return logits of shape (n_samples, n_classes).
        When ``module`` is a class whose constructor takes ``n_features``
        and/or ``n_classes``, they are set from the data at ``fit`` unless
        given as ``module__n_features`` / ``module__n_classes``. Other module
        arguments route as in skorch, e.g. ``module__hidden_units=(32,)``.
    criterion : class, instance or str, default=torch.nn.CrossEntropyLoss
        The training loss, taking logits. A string is a name of the
        :func:`sklcalib.losses.get_criterion` registry (``"focal"``,
        ``"flsd53"``, ``"dual_focal"``, ``"fcl"``, ``"ce"``, ...), resolved at
        ``initialize``. Its arguments route as in skorch:
        ``criterion__gamma=3.0``, ``criterion__lam=1.0``; they can be set with
        ``set_params`` and searched by ``GridSearchCV``
        (``netclassifier__criterion__gamma`` inside a pipeline). A criterion
        that adapts from the validation split (``"adafocal"``,
        ``"adadualfocal"``) gets an
        :class:`~sklcalib.callbacks.AdaFocalUpdater` automatically, under the
        name ``"adafocal_updater"``, unless ``callbacks`` holds one already.
    optimizer : class, default=torch.optim.Adam
        The optimizer; its arguments route as ``optimizer__weight_decay``.
    lr : float, default=1e-3
        Learning rate, a finite number >= 0 (0 leaves the weights unchanged).
    max_epochs : int, default=50
        Number of passes over the training data, >= 1.
    batch_size : int, default=128
        Mini-batch size for training and validation (-1: the whole data);
        prediction runs in chunks of at least 1024 rows unless
        ``iterator_valid__batch_size`` is given. ``lr``, ``max_epochs`` and
        ``batch_size`` are checked at ``fit`` (a ``ValueError`` naming the
        one that is wrong).
    train_split : callable or None, default=ValidSplit(0.2, stratified=True)
        The internal validation split: a stratified 20 % of the data, used
        for ``valid_loss``, ``valid_acc`` and by
        :class:`sklcalib.callbacks.CalibrationScoring` and
        :class:`sklcalib.callbacks.AdaFocalUpdater`. ``None`` trains on all
        the data. Its shuffling is seeded from ``random_state``.
    classes : array-like or None, default=None
        The class labels; ``None`` takes the sorted unique labels of ``y``.
    random_state : int, RandomState instance or None, default=None
        Seeds everything random in ``fit``: the weight initialisation and
        dropout on the CPU (torch's CPU generator, seeded inside a forked RNG
        so the caller's torch state is left untouched; the CUDA and MPS
        generators are neither seeded nor changed), the shuffling of the
        training batches (a local ``torch.Generator``) and the validation
        split. An int gives the same fit every time, in joblib worker
        processes too; ``None`` uses the global random state.
    verbose : int, default=0
        Verbosity of skorch: 0 prints nothing, 1 prints the epoch table.
    **kwargs
        Any other skorch parameter (``callbacks``, ``device``,
        ``iterator_train__...``, ``module__...``, ...). Training batches are
        shuffled, ``iterator_train__shuffle=True``, unless set otherwise:
        skorch does not shuffle by default, which visibly hurts accuracy and
        calibration on data stored in class order. Besides skorch's default
        callbacks, ``"valid_acc"`` records the validation accuracy and
        ``"finite_loss"`` (:class:`~sklcalib.callbacks.FiniteLossCheck`)
        stops the fit with an error when the training loss becomes NaN or
        infinite; ``callbacks__finite_loss=None`` switches it off.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels; columns of ``predict_proba`` follow this order.
    label_encoder_ : sklearn.preprocessing.LabelEncoder
        Maps labels to the int64 targets the criterion sees:
        ``net.label_encoder_.transform(y)``.
    n_features_in_ : int
        Number of features seen at ``fit``.
    feature_names_in_ : ndarray of str
        Column names, when ``fit`` got a DataFrame with string column names.
    module_, criterion_, optimizer_, history_ :
        skorch's initialized components and training history.

    Notes
    -----
    ``predict_proba`` ignores skorch's ``predict_nonlinearity``: it always
    applies a float64 softmax to the module's output, so rows sum to one to
    float64 precision. skorch itself returns the raw module output for
    criteria other than ``CrossEntropyLoss``/``NLLLoss``, which silently gives
    logits where probabilities are expected.

    **Speed.** For data in memory (what ``fit`` validates into a float32
    array) the training batches are taken by indexing whole tensors, one
    gather per batch, instead of a ``DataLoader`` fetching and collating row
    by row; the batches, their order and the random draws are those of the
    ``DataLoader``, so a seeded fit gives the same weights bit for bit either
    way. The loop calls only the callbacks that act per batch (skorch's
    defaults act per epoch) and the validation split and ``predict*`` run
    under ``torch.inference_mode`` in large chunks. Anything else — a
    ``dataset`` or ``iterator_*`` class of your own, ``iterator_*``
    arguments other than ``batch_size``, ``shuffle``, ``generator`` and
    ``drop_last``, a subclass that overrides ``notify`` or a step method —
    takes skorch's general path. An epoch then costs about what a plain torch
    loop costs (``benchmarks/bench_losses.py --epochs``). On the CPU,
    ``optimizer__fused=True`` (torch >= 2.4) makes Adam's step itself faster
    still, with rounding that differs in the last bits.

    ``decision_function`` follows scikit-learn: shape (n_samples,) for a
    binary problem, the logit margin ``z1 - z0`` (positive favours
    ``classes_[1]``), so that scikit-learn's ``roc_auc`` scorer and
    ``CalibratedClassifierCV`` work; (n_samples, n_classes) otherwise.
    ``predict_logits`` always returns all ``n_classes`` logit columns, what
    logit calibrators such as vector or matrix scaling take.

    Predictions never hold NaN silently: ``predict_logits``,
    ``decision_function``, ``predict_proba`` and ``predict`` raise when the
    network's output is not finite (a ``RuntimeError`` for weights that
    diverged, a ``ValueError`` for inputs so large that float32 overflows).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklcalib import NetClassifier
    >>> X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    >>> net = NetClassifier(module__hidden_units=(16,), max_epochs=5,
    ...                     random_state=0).fit(X, y)
    >>> net.predict_proba(X[:3]).shape
    (3, 2)
    >>> net.decision_function(X[:3]).shape  # binary: the logit margin
    (3,)
    >>> net.predict_logits(X[:3]).shape
    (3, 2)
    >>> net.classes_
    array([0, 1])
    """

    def __init__(
        self,
        module=MLP,
        *,
        criterion=torch.nn.CrossEntropyLoss,
        optimizer=torch.optim.Adam,
        lr=1e-3,
        max_epochs=50,
        batch_size=128,
        train_split=ValidSplit(0.2, stratified=True),  # noqa: B008 (never mutated)
        classes=None,
        random_state=None,
        verbose=0,
        **kwargs,
    ):
        kwargs.setdefault("iterator_train__shuffle", True)
        super().__init__(
            module,
            criterion=criterion,
            optimizer=optimizer,
            lr=lr,
            max_epochs=max_epochs,
            batch_size=batch_size,
            train_split=train_split,
            classes=classes,
            verbose=verbose,
            **kwargs,
        )
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.target_tags.required = True
        tags.classifier_tags.multi_class = True
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags

    def _get_param_names(self):
        # skorch lists every public-looking attribute, which leaks its private
        # ``_params_to_validate`` into get_params and clone
        return [name for name in super()._get_param_names() if not name.startswith("_")]

    @property
    def _default_callbacks(self):
        # skorch's defaults, with an accuracy that compares encoded targets
        callbacks = [
            ("epoch_timer", EpochTimer()),
            ("train_loss", _BatchAverage(name="train_loss", on_train=True)),
            ("valid_loss", _BatchAverage(name="valid_loss")),
            (
                "valid_acc",
                EpochScoring(
                    _encoded_accuracy, name="valid_acc", lower_is_better=False
                ),
            ),
            ("finite_loss", FiniteLossCheck()),
        ]
        if _needs_adafocal_updater(self.criterion):
            # without it AdaFocal's γ never moves from its start; one the
            # user gave (any name) replaces this one rather than doubling it
            if not any(_is_adafocal_updater(cb) for cb in self.callbacks or []):
                callbacks.append(("adafocal_updater", AdaFocalUpdater()))
        # the 15 per-bin γ of AdaFocal are history, not a column of the table
        callbacks.append(("print_log", _EpochTable(keys_ignored=["adafocal_gammas"])))
        return callbacks

    @property
    def classes_(self):
        """The class labels; columns of ``predict_proba`` follow this order.

        The ``classes`` parameter if given, otherwise the sorted unique labels
        of ``y`` at the first ``fit`` (or ``partial_fit``). Raises
        ``AttributeError`` before then.
        """
        try:
            return self.label_encoder_.classes_
        except AttributeError:
            raise AttributeError(
                f"This {type(self).__name__} is not fitted yet: it has no "
                "attribute 'classes_'."
            ) from None

    # ------------------------------------------------------------------
    # initialization: criterion by name, module sizes from the data
    # ------------------------------------------------------------------
    def initialize_criterion(self):
        """Initialize ``criterion_``, resolving a registry name first.

        A string ``criterion`` is looked up in
        :func:`sklcalib.losses.get_criterion`'s registry, then the criterion is
        instantiated with the ``criterion__*`` parameters, as in skorch.

        Returns
        -------
        self : NetClassifier
            The net, with ``criterion_`` set.
        """
        kwargs = self.get_params_for("criterion")
        criterion = _resolve_criterion(self.criterion)
        self.criterion_ = self.initialized_instance(criterion, kwargs)
        return self

    def initialize_module(self):
        """Initialize ``module_``; ``n_features``/``n_classes`` come from fit.

        When ``module`` is a class whose constructor accepts ``n_features``
        and/or ``n_classes``, they are taken from the data seen by ``fit``
        (``n_features_in_``, the number of ``classes_``) unless given as
        ``module__n_features`` / ``module__n_classes``.

        Returns
        -------
        self : NetClassifier
            The net, with ``module_`` set.
        """
        kwargs = self.get_params_for("module")
        if not isinstance(self.module, torch.nn.Module):
            inferred = {}
            if _accepts(self.module, "n_features") and hasattr(self, "n_features_in_"):
                inferred["n_features"] = int(self.n_features_in_)
            if _accepts(self.module, "n_classes") and hasattr(self, "label_encoder_"):
                inferred["n_classes"] = len(self.label_encoder_.classes_)
            kwargs = {**inferred, **kwargs}
        self.module_ = self.initialized_instance(self.module, kwargs)
        return self

    # ------------------------------------------------------------------
    # input validation
    # ------------------------------------------------------------------
    def _validate_X(self, X, reset):
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=(np.float64, np.float32),
            ensure_all_finite=True,
        )
        with np.errstate(over="ignore"):  # reported below, naming X
            X32 = np.asarray(X, dtype=np.float32)
        if not np.isfinite(X32).all():
            raise ValueError(
                "Input X has values too large in magnitude for float32 "
                f"(|x| > {np.finfo(np.float32).max:.3g})."
            )
        return X32

    def _check_training_params(self):
        # skorch trains for range(max_epochs) and hands batch_size and lr on
        # unchecked: max_epochs=-3 would return an untrained net
        check_scalar(self.max_epochs, "max_epochs", integer=True, low=1)
        if self.batch_size != -1 or isinstance(self.batch_size, bool):
            try:
                check_scalar(self.batch_size, "batch_size", integer=True, low=1)
            except ValueError:
                raise ValueError(
                    "batch_size must be a positive integer or -1 (the whole "
                    f"data), got {self.batch_size!r}."
                ) from None
        # lr=0 is allowed: a fit that does not move the weights
        check_scalar(self.lr, "lr", low=0.0)

    def _validate_fit_data(self, X, y, reset, classes=None):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        y = column_or_1d(y, warn=True)
        X = self._validate_X(X, reset=reset)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y has {y.shape[0]} samples but X has {X.shape[0]}: "
                "they must have the same length."
            )
        check_classification_targets(y)
        if reset:
            encoder = LabelEncoder()
            if classes is None:
                classes = self.classes
            if classes is not None and len(classes):
                encoder.fit(np.asarray(classes))
            else:
                encoder.fit(y)
            n_classes = len(encoder.classes_)
            if n_classes < 2:
                raise ValueError(
                    f"y has 1 class ({encoder.classes_[0]!r}); a classifier "
                    "needs at least 2 classes."
                )
            self.label_encoder_ = encoder
        unknown = np.setdiff1d(np.unique(y), self.label_encoder_.classes_)
        if unknown.size:
            raise ValueError(
                f"y contains labels not in classes_: {unknown.tolist()[:10]}."
            )
        return X, self.label_encoder_.transform(y).astype(np.int64)

    def _validate_predict_X(self, X):
        self.check_is_fitted()
        if is_dataset(X):
            # skorch's own callbacks pass its internal (already validated)
            # datasets
            return X
        return self._validate_X(X, reset=False)

    # ------------------------------------------------------------------
    # seeding
    # ------------------------------------------------------------------
    def _draw_seeds(self):
        if self.random_state is None:
            self._fit_seeds_ = None
            return
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=3)
        # torch (init, dropout), batch shuffling, validation split
        self._fit_seeds_ = tuple(int(s) for s in seeds)

    def _seeded_call(self, method, *args, **kwargs):
        seeds = getattr(self, "_fit_seeds_", None)
        if seeds is None:
            return method(*args, **kwargs)
        # fork: seed the weight init and dropout without touching the
        # caller's global torch state. Only the CPU generator: fork_rng with
        # devices=[] restores only that one, and torch.manual_seed would also
        # reseed (and leave changed) the CUDA and MPS generators
        with torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(seeds[0])
            return method(*args, **kwargs)

    def get_split_datasets(self, X, y=None, **fit_params):
        """Split into training and validation datasets, seeded by random_state.

        skorch's split, except that the default float ``ValidSplit`` (without a
        ``random_state`` of its own) is replaced by a copy seeded from
        ``random_state``, so that a seeded fit draws the same validation set.

        Parameters
        ----------
        X : array-like or torch.utils.data.Dataset
            The input data, as skorch's ``get_dataset`` takes it.
        y : array-like or None, default=None
            The (encoded) targets.
        **fit_params : dict
            Passed to the ``train_split`` callable.

        Returns
        -------
        dataset_train : torch.utils.data.Dataset
            The training data (all of it when ``train_split`` is None).
        dataset_valid : torch.utils.data.Dataset or None
            The validation data, None when ``train_split`` is None.
        """
        dataset = self.get_dataset(X, y)
        split = self.train_split
        if not split:
            return dataset, None
        seeds = getattr(self, "_fit_seeds_", None)
        if (
            seeds is not None
            and isinstance(split, ValidSplit)
            and split.random_state is None
            and split._is_float(split.cv)
        ):
            # a seeded copy: the user's (possibly shared default) splitter
            # is left unchanged
            split = ValidSplit(
                split.cv, stratified=split.stratified, random_state=seeds[2]
            )
        if y is None:
            return split(dataset, **fit_params)
        return split(dataset, y, **fit_params)

    def get_iterator(self, dataset, training=False):
        """Return the data loader; training batches shuffle with a local seed.

        A ``DataLoader`` iterator gets a local ``torch.Generator`` (seeded from
        ``random_state`` for training) unless ``iterator_*__generator`` is
        given, so that neither fit nor predict draws from torch's global random
        state. ``batch_size=-1`` means the whole dataset.

        Parameters
        ----------
        dataset : torch.utils.data.Dataset
            The data to iterate over.
        training : bool, default=False
            Whether to build the training iterator (``iterator_train__*``
            parameters) or the validation/prediction one (``iterator_valid__*``).

        Returns
        -------
        iterator : torch.utils.data.DataLoader
            An instance of ``iterator_train`` or ``iterator_valid`` over
            ``dataset``.
        """
        seeds = getattr(self, "_fit_seeds_", None)
        kwargs = self.get_params_for("iterator_train" if training else "iterator_valid")
        iterator = self.iterator_train if training else self.iterator_valid
        is_loader = isinstance(iterator, type) and issubclass(
            iterator, torch.utils.data.DataLoader
        )
        if is_loader and "generator" not in kwargs:
            # DataLoader draws from torch's global generator on every pass,
            # even unshuffled: a local one keeps fit and predict off the
            # caller's random state
            generator = torch.Generator()
            if training and seeds is not None:
                generator.manual_seed(seeds[1])
            elif training:
                generator.manual_seed(int(torch.randint(2**62, ()).item()))
            kwargs["generator"] = generator
        kwargs.setdefault("batch_size", self.batch_size)
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        if is_loader and iterator is torch.utils.data.DataLoader:
            batches = self._tensor_batches(dataset, kwargs)
            if batches is not None:
                return batches
        return iterator(dataset, **kwargs)

    def _tensor_batches(self, dataset, kwargs):
        # the fast path: plain skorch datasets of arrays or tensors, and a
        # DataLoader asked for nothing but batch size, shuffling, generator
        # and drop_last; anything else keeps the DataLoader
        size = kwargs["batch_size"]
        if (
            isinstance(size, bool)
            or not isinstance(size, numbers.Integral)
            or size < 1
            or any(
                key not in _LOADER_ARGS
                and (key not in _LOADER_DEFAULTS or value != _LOADER_DEFAULTS[key])
                for key, value in kwargs.items()
            )
        ):
            return None
        tensors = _in_memory_tensors(dataset)
        if tensors is None:
            return None
        return _TensorBatches(
            *tensors,
            batch_size=int(size),
            shuffle=kwargs.get("shuffle", False),
            generator=kwargs.get("generator"),
            drop_last=kwargs.get("drop_last", False),
        )

    def _inference_rows(self, batch_size):
        # rows per forward pass for prediction and validation: large chunks
        # (per-call overhead dominates a small network), unless the user set
        # iterator_valid__batch_size
        if "batch_size" in self.get_params_for("iterator_valid"):
            return batch_size
        return max(batch_size, _INFERENCE_ROWS)

    def _batch_hooks(self, name, training):
        # the callbacks (and the net itself, when a subclass overrides it)
        # that do something on this per-batch event: the others are not called
        hooks = [getattr(self, name)] if _overrides(self, NeuralNet, name) else []
        for _, callback in self.callbacks_:
            if callback is None or not _overrides(callback, Callback, name):
                continue
            if (
                name == "on_batch_end"
                and getattr(type(callback), name) is EpochScoring.on_batch_end
                and bool(callback.on_train) != training
            ):
                # EpochScoring caches the outputs of its own split only
                continue
            hooks.append(getattr(callback, name))
        return hooks

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """Run one training or validation pass over the batches.

        skorch's loop (the same callbacks, history entries and steps), with
        less work per batch for in-memory data: only the callbacks that
        implement a per-batch method are called, the training mode is set
        once per pass unless a per-batch callback may have changed it, and
        the validation split is predicted under ``torch.inference_mode`` in
        large chunks before its loss is taken batch by batch. Any other
        iterator, or a subclass that overrides ``notify`` or a step method,
        gets skorch's loop unchanged.

        Parameters
        ----------
        iterator : iterable of batches or None
            The training or validation batches; None skips the pass.
        training : bool
            Whether this is the training pass.
        prefix : str
            ``"train"`` or ``"valid"``: the history keys' prefix.
        step_fn : callable
            ``train_step`` or ``validation_step``.
        **fit_params : dict
            Passed to the module's ``forward``.

        Returns
        -------
        None
            As skorch's ``run_single_epoch``: the pass's losses and batch
            counts go to the history.
        """
        step_name = "train_step" if training else "validation_step"
        if (
            not isinstance(iterator, _TensorBatches)
            or (not training and (iterator.shuffle or iterator.drop_last))
            or _overrides(self, NeuralNet, "notify")
            or getattr(step_fn, "__func__", None) is not getattr(NeuralNet, step_name)
            or (training and _overrides(self, NeuralNet, "train_step_single"))
        ):
            super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
            return
        begin = self._batch_hooks("on_batch_begin", training)
        end = self._batch_hooks("on_batch_end", training)
        # FiniteLossCheck acts only on a NaN or infinite loss: the float the
        # history records is checked here, and the callback called on one
        checks = [h for h in end if h.__func__ is FiniteLossCheck.on_batch_end]
        end = [h for h in end if h not in checks]
        own_begin = not _overrides(self, NeuralNet, "on_batch_begin")
        forward, loss_of = self._lean_calls()
        if training:
            grad_hooks = self._batch_hooks("on_grad_computed", training)
            modes = [
                module
                for module in (
                    getattr(self, name + "_") for name in self._modules + self._criteria
                )
                if isinstance(module, torch.nn.Module)
            ]
            optimizer = self._single_step_optimizer()
            batches = iter(iterator)
        else:
            batches = self._validation_batches(
                iterator, forward, loss_of, bool(begin), **fit_params
            )
        loss_key, size_key = prefix + "_loss", prefix + "_batch_size"
        epoch_batches = self.history[-1]["batches"]
        count = 0
        self._set_training(training)
        for batch in batches:
            if own_begin:  # NeuralNet.on_batch_begin: history.new_batch()
                entry = {}
                epoch_batches.append(entry)
            for hook in begin:
                hook(self, batch=batch, training=training)
            if not own_begin:
                entry = epoch_batches[-1]
            if training:
                if (begin or end) and not all(module.training for module in modes):
                    # a callback predicted (evaluation mode) since the last step
                    self._set_training(True)
                step = self._train_step_fast(
                    batch, forward, loss_of, optimizer, grad_hooks, **fit_params
                )
            else:
                step = batch[2]
                batch = batch[:2]
            value = step["loss"].item()
            entry[loss_key] = value
            entry[size_key] = len(batch[0])
            if checks and not math.isfinite(value):
                for hook in checks:
                    hook(self, batch=batch, training=training, **step)
            for hook in end:
                hook(self, batch=batch, training=training, **step)
            count += 1
        self.history.record(prefix + "_batch_count", count)

    def _lean_calls(self):
        # (forward, loss_of) of the fast loop: the module and the criterion
        # called directly where infer and get_loss would only hand over
        # tensors already on the device, else those methods
        try:
            on_cpu = self.device is None or torch.device(self.device).type == "cpu"
        except (TypeError, RuntimeError):
            on_cpu = False
        if (
            on_cpu
            and not _overrides(self, NeuralNet, "infer")
            and not _overrides(self, NeuralNetClassifier, "get_loss")
            # NeuralNetClassifier.get_loss takes the log of the output first
            and not isinstance(self.criterion_, torch.nn.NLLLoss)
            and isinstance(self.module_, torch.nn.Module)
        ):
            criterion = self.criterion_
            encoder = getattr(self, "label_encoder_", None)
            if encoder is None or not _takes_encoded_batches(criterion):

                def loss_of(y_pred, y_true, X, training):
                    return criterion(y_pred, y_true)

                return self.module_, loss_of

            # the targets are the label encoder's, int64 in [0, n_classes): a
            # batch whose logits have that many columns needs no input check
            n_classes = len(encoder.classes_)

            def loss_of(y_pred, y_true, X, training):
                if (
                    y_pred.ndim == 2
                    and y_pred.shape[1] >= n_classes
                    and y_pred.is_floating_point()
                    and y_true.dtype == torch.int64
                    and y_true.shape == y_pred.shape[:1]
                ):
                    return criterion._loss(y_pred, y_true)
                return criterion(y_pred, y_true)

            return self.module_, loss_of

        def loss_of(y_pred, y_true, X, training):
            return self.get_loss(y_pred, y_true, X=X, training=training)

        return self.infer, loss_of

    def _single_step_optimizer(self):
        # the optimizer when it is the only one and one of torch's that call
        # a step closure once, right away (all but LBFGS); else None: the
        # closure as skorch hands it
        if (
            len(self._optimizers) != 1
            or _overrides(self, NeuralNet, "_step_optimizer")
            or _overrides(self, NeuralNet, "_zero_grad_optimizer")
        ):
            return None
        optimizer = getattr(self, self._optimizers[0] + "_")
        if not type(optimizer).__module__.startswith("torch.optim.") or isinstance(
            optimizer, torch.optim.LBFGS
        ):
            return None
        return optimizer

    def _train_step_fast(
        self, batch, forward, loss_of, optimizer, grad_hooks, **fit_params
    ):
        # skorch's train_step (optimizer.step with a closure, the first
        # evaluation's loss and output returned), without the per-batch
        # objects and notifications that nothing listens to
        Xi, yi = batch
        first = []

        def closure():
            if optimizer is None:
                self._zero_grad_optimizer()
            else:
                optimizer.zero_grad()
            y_pred = forward(Xi, **fit_params)
            loss = loss_of(y_pred, yi, Xi, True)
            loss.backward()
            for hook in grad_hooks:
                hook(
                    self,
                    named_parameters=TeeGenerator(self.get_all_learnable_params()),
                    batch=batch,
                    training=True,
                )
            if not first:
                first.append({"loss": loss, "y_pred": y_pred})
            return loss

        if optimizer is None:
            self._step_optimizer(closure)
        else:
            # the closure would be called once, right away, inside step
            closure()
            optimizer.step()
        return first[0]

    def _validation_batches(self, batches, forward, loss_of, per_batch, **fit_params):
        # (X, y, step) per validation batch: the module's output predicted
        # in large chunks under inference_mode (one batch at a time when a
        # callback acts before each batch), the loss per batch as skorch
        # takes it, without autograd
        X, size = batches.X, batches.batch_size
        chunk = size if per_batch else -(-self._inference_rows(size) // size) * size
        for start in range(0, len(X), chunk):
            with torch.inference_mode():
                output = forward(X[start : start + chunk], **fit_params)
            for offset in range(0, min(chunk, len(X) - start), size):
                rows = slice(start + offset, start + offset + size)
                Xi, yi = X[rows], batches._targets(rows)
                y_pred = _slice_output(output, slice(offset, offset + size))
                with torch.no_grad():
                    loss = loss_of(y_pred, yi, Xi, False)
                yield Xi, yi, {"loss": loss, "y_pred": y_pred}

    def forward_iter(self, X, training=False, device="cpu"):
        """Yield the module's outputs batch by batch, as skorch does.

        For in-memory data, prediction (``training=False``) runs under
        ``torch.inference_mode`` in chunks of at least 1024 rows
        (``iterator_valid__batch_size`` when given); anything else takes
        skorch's path.

        Parameters
        ----------
        X : array-like or torch.utils.data.Dataset
            The input data, as skorch's ``forward_iter`` takes it.
        training : bool, default=False
            Whether to run the module in training mode.
        device : str, default="cpu"
            Where the yielded outputs are stored.

        Yields
        ------
        output : torch.Tensor or tuple of torch.Tensor
            The module's output on one chunk of rows.
        """
        dataset = self.get_dataset(X)
        iterator = self.get_iterator(dataset, training=training)
        if (
            training
            or not isinstance(iterator, _TensorBatches)
            or iterator.shuffle
            or iterator.drop_last
            or _overrides(self, NeuralNet, "evaluation_step")
        ):
            for batch in iterator:
                yield to_device(self.evaluation_step(batch, training=training), device)
            return
        self.check_is_fitted()
        X = iterator.X
        chunk = self._inference_rows(iterator.batch_size)
        for start in range(0, len(X), chunk):
            # the inference mode is left before yielding: the caller's code
            # between two chunks runs in its own mode
            with torch.inference_mode():
                self._set_training(False)
                output = self.infer(X[start : start + chunk])
            yield to_device(output, device)

    # ------------------------------------------------------------------
    # fitting
    # ------------------------------------------------------------------
    def fit(self, X, y, **fit_params):
        """Validate and encode the data, (re)initialize and train the net.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (numpy array or pandas DataFrame); cast to float32.
        y : array-like of shape (n_samples,)
            Labels of any type scikit-learn accepts.
        **fit_params : dict
            Passed to skorch (the module's ``forward`` and ``train_split``).

        Returns
        -------
        self : NetClassifier
            The fitted net.
        """
        self._check_training_params()
        reset = not (self.warm_start and self.initialized_)
        X, y_encoded = self._validate_fit_data(X, y, reset=reset)
        self._draw_seeds()

        def _fit():
            if reset:
                self.initialize()
            # NeuralNet.partial_fit: the data is validated already.
            # _routing_method (private, skorch >= 1.4) makes skorch route
            # fit_params as for fit(); there is no public way to say so.
            # tests/test_private_apis.py fails loudly if skorch drops it.
            super(NetClassifier, self).partial_fit(
                X, y_encoded, _routing_method="fit", **fit_params
            )

        self._seeded_call(_fit)
        return self

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Train for ``max_epochs`` more epochs without re-initializing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (numpy array or pandas DataFrame); cast to float32.
        y : array-like of shape (n_samples,)
            Labels of any type scikit-learn accepts.
        classes : array-like, default=None
            All the labels, needed on the first call when ``y`` lacks some
            (otherwise the ``classes`` parameter or ``y`` is used).
        **fit_params : dict
            Passed to skorch.

        Returns
        -------
        self : NetClassifier
            The net, trained further.
        """
        self._check_training_params()
        first = not self.initialized_ or not hasattr(self, "label_encoder_")
        X, y_encoded = self._validate_fit_data(X, y, reset=first, classes=classes)
        self._draw_seeds()

        def _partial_fit():
            if first:
                self.initialize()
            super(NetClassifier, self).partial_fit(X, y_encoded, **fit_params)

        self._seeded_call(_partial_fit)
        return self

    # ------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------
    def predict_logits(self, X):
        """Return the logits of the module, all ``n_classes`` columns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data, with the features seen at ``fit``.

        Returns
        -------
        logits : ndarray of shape (n_samples, n_classes), float32
            Columns follow ``classes_`` (two columns for binary problems).

        Raises
        ------
        RuntimeError
            When the network's weights are not finite (a diverged fit), so
            its outputs are NaN or infinite.
        ValueError
            When finite weights give NaN or infinite outputs: float32
            overflows inside the network (unscaled inputs, or huge weights).
        """
        X = self._validate_predict_X(X)
        outputs = []
        for out in self.forward_iter(X, training=False):
            out = out[0] if isinstance(out, tuple) else out
            outputs.append(to_numpy(out))
        logits = np.concatenate(outputs, axis=0)
        finite = np.isfinite(logits).all(axis=1)
        if not finite.all():
            # never hand NaN on to predict_proba, scorers or calibrators
            message = (
                f"The network's output (logits) is NaN or infinite for "
                f"{int(np.sum(~finite))} of {len(logits)} samples"
            )
            if all(bool(torch.isfinite(p).all()) for p in self.module_.parameters()):
                raise ValueError(
                    f"{message} of X: float32 overflows inside the network. "
                    "Scale the features (e.g. with "
                    "sklearn.preprocessing.StandardScaler); if the weights are "
                    "huge, refit with a lower learning rate or gradient clipping."
                )
            raise RuntimeError(
                f"{message}: the network's weights are NaN or infinite, its "
                "training diverged. Refit with a lower learning rate "
                f"(lr={self.lr!r} now), scaled features or gradient clipping "
                "(callbacks=[skorch.callbacks.GradientNormClipping(1.0)])."
            )
        return logits

    def decision_function(self, X):
        """Return the decision scores, shaped as in scikit-learn.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data, with the features seen at ``fit``.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes), float32
            For a binary problem the logit margin ``z1 - z0`` (positive
            favours ``classes_[1]``; ``sigmoid`` of it is
            ``predict_proba(X)[:, 1]``), otherwise the logits, whose columns
            follow ``classes_``. :meth:`predict_logits` gives all the
            logit columns in both cases.
        """
        logits = self.predict_logits(X)
        if logits.shape[1] == 2:
            return logits[:, 1] - logits[:, 0]
        return logits

    def predict_proba(self, X):
        """Return softmax probabilities, whatever the criterion.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data, with the features seen at ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
            ``softmax(predict_logits(X))`` computed in float64, so every
            row sums to one to float64 precision; columns follow ``classes_``.
        """
        logits = self.predict_logits(X).astype(np.float64)
        return softmax(logits, axis=1)

    def predict(self, X):
        """Return the most probable label of ``classes_`` for each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data, with the features seen at ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The label of ``classes_`` with the largest logit (equivalently the
            largest probability) for each sample.
        """
        logits = self.predict_logits(X)  # raises NotFittedError first
        return self.classes_[np.argmax(logits, axis=1)]
