"""NetClassifier's training loop for in-memory data.

skorch's epoch, training step and batch iterator, written again for what
:class:`sklcalib.NetClassifier` trains on almost always: arrays or tensors in
memory. Batches are taken by indexing whole tensors (one gather per batch,
the same rows, order and random draws as skorch's ``DataLoader``), only the
callbacks that act per batch are called, the training step skips the objects
and notifications nothing listens to, and validation and prediction run under
``torch.inference_mode`` in large chunks. Anything else (a dataset, iterator,
step or ``notify`` of the user's) takes skorch's own path.

:class:`FastLoop` is the mixin that carries it; :data:`SKORCH_PRIVATE_NAMES`
lists every private name of skorch that it and ``NetClassifier`` rely on,
each checked by ``tests/test_private_apis.py``, so that a skorch release that
changes one fails a test that names it.
"""

import functools
import math
import numbers

import numpy as np

from sklcalib._utils._optional import extra_imports

with extra_imports("sklcalib.net"):
    import torch
    from skorch import NeuralNet, NeuralNetClassifier
    from skorch.callbacks import Callback, EpochScoring, PassthroughScoring, PrintLog
    from skorch.dataset import Dataset as SkorchDataset
    from skorch.utils import TeeGenerator, to_device

from sklcalib.callbacks import FiniteLossCheck, _ValidationBatches
from sklcalib.losses import CalibrationLoss

#: the private names of skorch that NetClassifier and this loop rely on, where
#: skorch offers no public way (the comment at each use says why)
SKORCH_PRIVATE_NAMES = (
    # the names of the initialized components, to set their training mode
    # and to find the optimizer
    "NeuralNet._modules",
    "NeuralNet._criteria",
    "NeuralNet._optimizers",
    # the training mode of every component at once
    "NeuralNet._set_training",
    # the optimizer's zero_grad and step, through which skorch's train_step
    # goes (a subclass may override them: the loop then calls them too)
    "NeuralNet._zero_grad_optimizer",
    "NeuralNet._step_optimizer",
    # the default callbacks, replaced by NetClassifier's
    "NeuralNet._default_callbacks",
    # skorch >= 1.4 routes fit_params of partial_fit as for fit
    "NeuralNet.partial_fit(_routing_method=)",
    # a private attribute of the net that get_params must not list
    "NeuralNet._params_to_validate",
    # PassthroughScoring's record of the best score
    "PassthroughScoring._is_best_score",
    # whether ValidSplit's cv is a fraction (seeded copy of the default split)
    "ValidSplit._is_float",
)

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


def _rows(tensor, index):
    # a slice is a view; an index tensor is gathered by index_select, the
    # same rows as tensor[index] at a third of its cost (about 11 µs less a
    # batch for X and y: indexing with a tensor goes through Python's
    # general indexing machinery)
    if isinstance(index, slice):
        return tensor[index]
    return tensor.index_select(0, index)


class TensorBatches:
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
            return _rows(self.y, index)
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
            yield _rows(self.X, index), self._targets(index)
        if self.shuffle:
            # RandomSampler's last draw, an empty tail permutation
            torch.randperm(n, generator=generator)


class EpochTable(PrintLog):
    """skorch's PrintLog, which builds no table when it would print nothing.

    PrintLog formats the epoch's table every epoch and then drops it when
    ``verbose=0`` and its sink is ``print``; on a small data set that costs
    as much as a few training steps per epoch.
    """

    def on_epoch_end(self, net, **kwargs):
        if self.sink is print and not net.verbose:
            return
        super().on_epoch_end(net, **kwargs)


class BatchAverage(PassthroughScoring):
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


class JoinedScoring(EpochScoring):
    """skorch's EpochScoring, which joins the cached batches once per epoch.

    With caching, EpochScoring converts the targets batch by batch and the
    scorer's prediction converts the outputs batch by batch; joined first,
    each is one conversion. The same rows in the same order: the same score.
    """

    def get_test_data(self, dataset_train, dataset_valid, use_caching):
        """Return ``(X_test, y_test, y_pred)`` as skorch does, the cached
        outputs joined into one tensor (see skorch's ``EpochScoring``)."""
        preds, trues = self.y_preds_, self.y_trues_
        if not (
            use_caching
            and preds
            and len(trues) == len(preds)
            and all(isinstance(t, torch.Tensor) for t in (*preds, *trues))
        ):
            return super().get_test_data(dataset_train, dataset_valid, use_caching)
        dataset = dataset_train if self.on_train else dataset_valid
        y_test = self.target_extractor(torch.cat(trues))
        return dataset, y_test, [torch.cat(preds)]


def overrides(obj, base, name):
    """Whether ``obj``'s class overrides method ``name`` of ``base``."""
    return getattr(type(obj), name, None) is not getattr(base, name)


def _zero_grad(optimizer):
    # torch's zero_grad(set_to_none=True) without its profiling context, which
    # costs twenty times the loop (about 10 µs a step); an optimizer class
    # with a zero_grad of its own keeps it
    if type(optimizer).zero_grad is not torch.optim.Optimizer.zero_grad:
        optimizer.zero_grad()
        return
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = None


def _slice_output(output, index):
    if isinstance(output, tuple):
        return tuple(o[index] for o in output)
    return output[index]


def loss_and_grad(loss_of, y_pred, y_true, X):
    """``(loss, grad)`` of a training batch: ``loss_of``'s loss and, where
    the criterion computed it without an autograd node
    (:meth:`CalibrationLoss._value_and_grad`), the gradient to send back
    from ``y_pred`` (``y_pred.backward(grad)``: the same gradients as
    ``loss.backward()``); else None, and ``loss.backward()`` does it."""
    eager = getattr(loss_of, "value_and_grad", None)
    if eager is None:
        return loss_of(y_pred, y_true, X, True), None
    return eager(y_pred, y_true, X)


def takes_encoded_batches(criterion):
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


class FastLoop:
    """The mixin of :class:`sklcalib.NetClassifier` that carries the loop.

    Placed before ``NeuralNetClassifier`` in the bases: its
    ``run_single_epoch`` and ``forward_iter`` take the fast path for
    :class:`TensorBatches` and hand everything else to skorch's.
    """

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
        return TensorBatches(
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
        hooks = [getattr(self, name)] if overrides(self, NeuralNet, name) else []
        for _, callback in self.callbacks_:
            if callback is None or not overrides(callback, Callback, name):
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
            not isinstance(iterator, TensorBatches)
            or (not training and (iterator.shuffle or iterator.drop_last))
            or overrides(self, NeuralNet, "notify")
            or getattr(step_fn, "__func__", None) is not getattr(NeuralNet, step_name)
            or (training and overrides(self, NeuralNet, "train_step_single"))
        ):
            super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
            return
        begin = self._batch_hooks("on_batch_begin", training)
        end = self._batch_hooks("on_batch_end", training)
        # FiniteLossCheck acts only on a NaN or infinite loss: the float the
        # history records is checked here, and the callback called on one
        checks = [h for h in end if h.__func__ is FiniteLossCheck.on_batch_end]
        end = [h for h in end if h not in checks]
        # the validation collectors (early stopping on the temperature-scaled
        # loss, AdaFocal) keep each batch's logits and targets to join them
        # at the epoch's end: handed a whole chunk of batches at once, they
        # join the same rows in the same order, with a call and two copies
        # per chunk instead of per batch
        collectors = []
        if not training and not begin:
            collectors = [
                h
                for h in end
                if getattr(h, "__func__", None) is _ValidationBatches.on_batch_end
            ]
            end = [h for h in end if h not in collectors]
        own_begin = not overrides(self, NeuralNet, "on_batch_begin")
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
                iterator,
                forward,
                loss_of,
                bool(begin),
                *(
                    (None, None)
                    if begin or forward is not self.module_
                    else (self._rows_of(), self._batch_losses_of())
                ),
                **fit_params,
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
                step, chunk = batch[2], batch[3]
                batch = batch[:2]
                if chunk is not None:
                    for hook in collectors:
                        hook(self, batch=chunk[:2], training=False, y_pred=chunk[2])
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
            and not overrides(self, NeuralNet, "infer")
            and not overrides(self, NeuralNetClassifier, "get_loss")
            # NeuralNetClassifier.get_loss takes the log of the output first
            and not isinstance(self.criterion_, torch.nn.NLLLoss)
            and isinstance(self.module_, torch.nn.Module)
        ):
            criterion = self.criterion_
            encoder = getattr(self, "label_encoder_", None)
            if encoder is None or not takes_encoded_batches(criterion):

                def loss_of(y_pred, y_true, X, training):
                    return criterion(y_pred, y_true)

                return self.module_, loss_of

            # the targets are the label encoder's, int64 in [0, n_classes): a
            # batch whose logits have that many columns needs no input check
            n_classes = len(encoder.classes_)

            def encoded(y_pred, y_true):
                return (
                    y_pred.ndim == 2
                    and y_pred.shape[1] >= n_classes
                    and y_pred.is_floating_point()
                    and y_true.dtype == torch.int64
                    and y_true.shape == y_pred.shape[:1]
                )

            def loss_of(y_pred, y_true, X, training):
                if encoded(y_pred, y_true):
                    return criterion._loss(y_pred, y_true)
                return criterion(y_pred, y_true)

            def value_and_grad(y_pred, y_true, X):
                if encoded(y_pred, y_true):
                    return criterion._value_and_grad(y_pred, y_true)
                return criterion(y_pred, y_true), None

            loss_of.value_and_grad = value_and_grad
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
            or overrides(self, NeuralNet, "_step_optimizer")
            or overrides(self, NeuralNet, "_zero_grad_optimizer")
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
                _zero_grad(optimizer)
            y_pred = forward(Xi, **fit_params)
            loss, grad = loss_and_grad(loss_of, y_pred, yi, Xi)
            if grad is None:
                loss.backward()
            else:
                y_pred.backward(grad)
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

    def _rows_of(self):
        # (logits, targets) -> the per-row losses whose mean over a batch is
        # the criterion's loss of that batch, for a criterion whose rows do
        # not depend on each other and whose reduction is the mean; else None
        criterion = self.criterion_
        if getattr(self, "label_encoder_", None) is None:
            return None
        if takes_encoded_batches(criterion):
            if criterion.rowwise and criterion.reduction == "mean":
                return criterion._rows
            return None
        if (
            type(criterion) is torch.nn.CrossEntropyLoss
            and criterion.reduction == "mean"
            and criterion.weight is None
            and criterion.ignore_index < 0  # the encoded targets are >= 0
        ):
            smoothing = criterion.label_smoothing

            def rows_of(logits, target):
                return torch.nn.functional.cross_entropy(
                    logits, target, reduction="none", label_smoothing=smoothing
                )

            return rows_of
        return None

    def _batch_losses_of(self):
        # (logits, targets, size) -> the loss of each batch of ``size`` rows,
        # for a sklcalib criterion whose batch term couples the rows (MDCA,
        # MMCE) and has a batched form; else None
        criterion = self.criterion_
        if (
            getattr(self, "label_encoder_", None) is not None
            and takes_encoded_batches(criterion)
            and criterion.batched
            and criterion.reduction in ("mean", "sum")
        ):
            return criterion._batch_losses
        return None

    def _validation_batches(
        self, batches, forward, loss_of, per_batch, rows_of, batches_of, **fit_params
    ):
        # (X, y, step, chunk) per validation batch, ``chunk`` the (X, y,
        # output) of the whole chunk at its first batch, else None: the
        # module's output predicted in large chunks under inference_mode
        # (one batch at a time when a
        # callback acts before each batch), the loss per batch as skorch
        # takes it, without autograd; with ``rows_of`` (a criterion of
        # independent rows, reduced by the mean) the rows' losses of a whole
        # chunk in one call, each batch's loss their mean over its rows; with
        # ``batches_of`` (a criterion with a batch term) the losses of a whole
        # chunk's batches in one call
        X, size = batches.X, batches.batch_size
        chunk = size if per_batch else -(-self._inference_rows(size) // size) * size
        batched = rows_of is None and batches_of is not None
        if batched:
            rows_of = functools.partial(batches_of, size=size)
        n_classes = len(self.label_encoder_.classes_) if rows_of else 0
        for start in range(0, len(X), chunk):
            rows = slice(start, start + chunk)
            losses = None
            with torch.inference_mode():
                output = forward(X[rows], **fit_params)
                if rows_of is not None:
                    y_chunk = batches._targets(rows)
                    if (
                        isinstance(output, torch.Tensor)
                        and output.ndim == 2
                        and output.shape[1] == n_classes
                        and output.is_floating_point()
                        and y_chunk.dtype == torch.int64
                        and y_chunk.shape == output.shape[:1]
                    ):
                        losses = rows_of(output, y_chunk)
            whole = (X[rows], batches._targets(rows), output)
            for offset in range(0, min(chunk, len(X) - start), size):
                rows = slice(start + offset, start + offset + size)
                Xi, yi = X[rows], batches._targets(rows)
                batch = slice(offset, offset + size)
                y_pred = _slice_output(output, batch)
                if losses is not None:
                    # a batch's loss: its rows' mean, or its entry
                    loss = losses[offset // size] if batched else losses[batch].mean()
                else:
                    with torch.no_grad():
                        loss = loss_of(y_pred, yi, Xi, False)
                yield Xi, yi, {"loss": loss, "y_pred": y_pred}, whole
                whole = None

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
            or not isinstance(iterator, TensorBatches)
            or iterator.shuffle
            or iterator.drop_last
            or overrides(self, NeuralNet, "evaluation_step")
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
