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
import numbers

import numpy as np
from scipy.special import softmax
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from sklcalib._utils._optional import extra_imports
from sklcalib._utils._validation import as_numpy, check_scalar

with extra_imports("sklcalib.net"):
    import torch
    from skorch import NeuralNetClassifier
    from skorch.callbacks import EpochTimer
    from skorch.dataset import ValidSplit
    from skorch.utils import is_dataset, to_numpy

# the loop, the criteria and the callbacks need torch and skorch too (the
# same extra)
from sklcalib._net_loop import BatchAverage, EpochTable, FastLoop, JoinedScoring
from sklcalib.callbacks import AdaFocalUpdater, FiniteLossCheck
from sklcalib.losses import CRITERIA, get_criterion

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


class NetClassifier(FastLoop, NeuralNetClassifier):
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
            ("train_loss", BatchAverage(name="train_loss", on_train=True)),
            ("valid_loss", BatchAverage(name="valid_loss")),
            (
                "valid_acc",
                JoinedScoring(
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
        callbacks.append(("print_log", EpochTable(keys_ignored=["adafocal_gammas"])))
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
        # a torch tensor (one that requires grad, or on a GPU, included) as
        # the array it holds: the net trains on a float32 copy either way
        X = validate_data(
            self,
            as_numpy(X),
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
        y = column_or_1d(as_numpy(y), warn=True)
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
                encoder.fit(np.asarray(as_numpy(classes)))
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

    def score(self, X, y, sample_weight=None):
        """Return the mean accuracy on ``X`` against ``y``.

        scikit-learn's ``ClassifierMixin.score``; torch tensors (those that
        require grad, or live on a GPU, included) are taken as the arrays
        they hold, as ``fit`` takes them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data, with the features seen at ``fit``.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            Accuracy of ``predict(X)`` against ``y``.
        """
        return super().score(X, as_numpy(y), sample_weight=as_numpy(sample_weight))

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
