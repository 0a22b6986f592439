"""Curvature of a fitted skorch net's training loss (torch and skorch).

Hutchinson's estimator of the Hessian trace, power iteration for the top
eigenvalue, both on exact Hessian-vector products, and a skorch callback that
records the trace during training (Kimura & Naganuma's curvature claim).
"""

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._optional import extra_imports
from sklcalib._utils._validation import check_scalar

with extra_imports("sklcalib.diagnostics (curvature)"):
    import torch
    from skorch.callbacks import Callback
    from skorch.dataset import Dataset as SkorchDataset

# ---------------------------------------------------------------------------
# curvature of a fitted net's training loss
# ---------------------------------------------------------------------------


def _check_positive_int(value, name, minimum=1):
    return check_scalar(value, name, integer=True, low=minimum)


def _full_batch(net, dataset):
    """The whole ``dataset`` as one batch, collated as the net's iterators do.

    Full batch because the training loss need not be a mean of per-batch losses
    (MMCE is a kernel over pairs of samples).
    """
    kwargs = net.get_params_for("iterator_valid")
    iterator = net.iterator_valid
    whole = _whole_arrays(dataset) if iterator is torch.utils.data.DataLoader else None
    if whole is not None and not kwargs:
        return whole
    kwargs["batch_size"] = len(dataset)
    kwargs["shuffle"] = False
    if isinstance(iterator, type) and issubclass(iterator, torch.utils.data.DataLoader):
        # a DataLoader draws a base seed from torch's global generator even when
        # it does not shuffle: a local one keeps a CurvatureLogger from changing
        # the training it observes (dropout masks, shuffling)
        kwargs.setdefault("generator", torch.Generator())
    return next(iter(iterator(dataset, **kwargs)))


def _whole_arrays(dataset):
    """``(X, y)`` as tensors for a plain skorch dataset of a float array and
    a 1-d integer or float array, else None: what a DataLoader collates
    from its rows (the same values and dtypes), without indexing and
    collating them one by one (2 000 rows: 8 ms of a 60 ms Hessian trace)."""
    if type(dataset) is not SkorchDataset:
        return None
    X, y = dataset.X, dataset.y
    if not (
        type(X) is np.ndarray
        and X.ndim == 2
        and X.dtype.kind == "f"
        and type(y) is np.ndarray
        and y.ndim == 1
        and y.dtype.kind in "if"
        and len(y) == len(X)
    ):
        return None
    return torch.as_tensor(X), torch.as_tensor(y)


def _dataset_from_arrays(net, X, y):
    """A skorch dataset of (X, y) with y encoded as the net's criterion expects."""
    net.check_is_fitted(["module_", "criterion_"])
    if hasattr(X, "to_numpy") and not isinstance(X, dict):
        X = X.to_numpy()
    if isinstance(X, np.ndarray) or isinstance(X, list):
        X = np.asarray(X)
        if X.dtype.kind in "fiub":
            # the dtype of the parameters: float64 input -> float32 for the usual
            # float32 module, as NetClassifier does at fit
            param = next(iter(net.module_.parameters()), None)
            dtype = torch.float32 if param is None else param.dtype
            X = X.astype(torch.empty(0, dtype=dtype).numpy().dtype, copy=False)
        if X.dtype.kind == "f" and not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity")
    if y is None:
        raise ValueError("y is required: the Hessian is that of the training loss")
    y = np.asarray(y)
    n_X = len(X) if not isinstance(X, dict) else len(next(iter(X.values())))
    if n_X == 0:
        raise ValueError("X is empty")
    if len(y) != n_X:
        raise ValueError(f"X and y have different lengths: {n_X} and {len(y)}")
    encoder = getattr(net, "label_encoder_", None)
    if encoder is not None:
        unknown = ~np.isin(y, encoder.classes_)
        if unknown.any():
            raise ValueError(
                f"y contains labels not in the net's classes_: {np.unique(y[unknown])}"
            )
        y = encoder.transform(y)
    return net.get_dataset(X, y)


def _is_batching_error(error):
    """True for vmap's "cannot batch this operation" errors, nothing else.

    ``is_grads_batched`` runs the double backward under vmap, which raises a
    plain RuntimeError ("Batching rule not implemented for ...", "vmap: ...")
    where an operation has no batching rule. Out-of-memory errors are
    RuntimeErrors too (``torch.OutOfMemoryError``, ``torch.cuda``'s before
    torch 2.5, or the CPU allocator's "can't allocate memory"): falling back
    to the loop would hide them.
    """
    # torch.OutOfMemoryError is torch >= 2.5; before, torch.cuda's (>= 1.13)
    out_of_memory = getattr(torch, "OutOfMemoryError", None)
    if isinstance(error, out_of_memory or torch.cuda.OutOfMemoryError):
        return False
    message = str(error).lower()
    if "out of memory" in message or "allocate" in message:
        return False
    return "vmap" in message or "batching" in message or "batched" in message


class _HessianOperator:
    """Hessian-vector products of a net's loss on one batch, w.r.t. its parameters.

    The gradient graph is built once (double backward) and reused by every product.
    Use as a context manager: the module and criterion are put in eval mode (no
    dropout, frozen batch-norm statistics) and restored on exit.
    """

    def __init__(self, net, Xi, yi):
        self.net = net
        self.Xi = Xi
        self.yi = yi

    def __enter__(self):
        mods = [m for m in (self.net.module_, self.net.criterion_)]
        mods = [m for m in mods if isinstance(m, torch.nn.Module)]
        self._modes = [(sub, sub.training) for m in mods for sub in m.modules()]
        for m in mods:
            m.eval()
        try:
            self.params = [p for p in self.net.module_.parameters() if p.requires_grad]
            if not self.params:
                raise ValueError("the net's module_ has no trainable parameters")
            self.dtype = self.params[0].dtype
            self.device = self.params[0].device
            self.n_params = sum(p.numel() for p in self.params)
            with torch.enable_grad():
                y_pred = self.net.infer(self.Xi)
                loss = self.net.get_loss(y_pred, self.yi, X=self.Xi, training=False)
                if loss.ndim != 0:
                    raise ValueError(
                        "the criterion must return a scalar loss (reduction 'mean' "
                        f"or 'sum'), got shape {tuple(loss.shape)}"
                    )
                self.loss = loss.detach()
                self.grads = torch.autograd.grad(
                    loss, self.params, create_graph=True, allow_unused=True
                )
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(self, *exc):
        self.grads = None  # free the graph
        self._restore()
        return False

    def _restore(self):
        for sub, mode in self._modes:
            sub.training = mode

    def matvec(self, vec):
        """H @ vec for a flat vector ``vec`` of length ``n_params``."""
        vec = torch.as_tensor(vec, dtype=self.dtype, device=self.device)
        return self.matmat(vec[None, :], batched=False)[0]

    def matmat(self, vecs, batched=True):
        """H @ v for each row v of ``vecs``, shape (k, n_params).

        With ``batched`` the k products run as one vectorised double backward
        (``is_grads_batched``, i.e. vmap), an order of magnitude faster for small
        nets than k backward passes; operations vmap does not support fall back to
        the loop.
        """
        vecs = torch.as_tensor(vecs, dtype=self.dtype, device=self.device)
        k = vecs.shape[0]
        chunks = torch.split(vecs, [p.numel() for p in self.params], dim=1)
        live = [
            i
            for i, g in enumerate(self.grads)
            if g is not None and g.requires_grad  # else that block of H is 0
        ]
        out = [
            torch.zeros((k, *p.shape), dtype=self.dtype, device=self.device)
            for p in self.params
        ]
        if live:
            outputs = [self.grads[i] for i in live]
            if batched and k > 1:
                try:
                    hv = torch.autograd.grad(
                        outputs,
                        self.params,
                        grad_outputs=[
                            chunks[i].reshape(k, *self.params[i].shape) for i in live
                        ],
                        retain_graph=True,
                        allow_unused=True,
                        is_grads_batched=True,
                    )
                    for i, h in enumerate(hv):
                        if h is not None:
                            out[i] = h
                    return torch.cat([o.reshape(k, -1) for o in out], dim=1).detach()
                except RuntimeError as error:
                    # an operation vmap cannot batch: loop instead; anything
                    # else (out of memory above all) is the caller's to see
                    if not _is_batching_error(error):
                        raise
            for row in range(k):
                hv = torch.autograd.grad(
                    outputs,
                    self.params,
                    grad_outputs=[chunks[i][row].view_as(self.params[i]) for i in live],
                    retain_graph=True,
                    allow_unused=True,
                )
                for i, h in enumerate(hv):
                    if h is not None:
                        out[i][row] = h
        return torch.cat([o.reshape(k, -1) for o in out], dim=1).detach()


def _operator_for(net, X, y):
    Xi, yi = _full_batch(net, _dataset_from_arrays(net, X, y))
    return _HessianOperator(net, Xi, yi)


# Rademacher probes per vectorised batch of Hessian-vector products: bounds the
# memory of the batched double backward to that many copies of the graph
_PROBE_BATCH = 32

#: from this many rows on, the probes' products run one by one: vectorised,
#: each operation of the double backward pays vmap's batching of its
#: operands, which outweighs the per-call overhead it saves once the batch
#: is large (MLP 64-64, 8 probes, one CPU thread: 3.3 against 6.4 ms on 50
#: rows, even at 200, 1.5-2x slower from 1 000 rows; MMCE on 2 000 rows
#: 2.1 against 0.9 s)
_VMAP_ROWS = 512


def _batch_rows(yi):
    """Rows of the batch (its targets' length; 0 where that is unknown)."""
    try:
        return len(yi)
    except TypeError:
        return 0


def _hutchinson(op, n_samples, rng):
    """Per-probe quadratic forms zᵀHz with Rademacher z, summed in float64."""
    quads = []
    batched = _batch_rows(op.yi) < _VMAP_ROWS
    for start in range(0, n_samples, _PROBE_BATCH):
        k = min(_PROBE_BATCH, n_samples - start)
        Z = rng.randint(0, 2, size=(k, op.n_params)).astype(np.float64) * 2.0 - 1.0
        HZ = op.matmat(Z, batched=batched).double().cpu().numpy()
        quads.append(np.einsum("ij,ij->i", Z, HZ))
    return np.concatenate(quads)


@fill_doc
def hessian_trace(net, X, y, n_samples=100, random_state=None, return_std=False):
    """Hutchinson estimate of the trace of the Hessian of a net's training loss.

    The Hessian is that of the loss the net trains on, ``net.get_loss`` of
    ``net.infer(X)`` against ``y`` (i.e. ``net.criterion_`` on the logits, with the
    criterion's own reduction, ``"mean"`` by default), on all of ``(X, y)`` as one
    batch, with respect to the trainable parameters of ``net.module_``. Hutchinson's
    estimator averages zᵀHz over Rademacher vectors z (entries ±1), which is
    unbiased for tr(H) with the smallest variance among i.i.d. probes; each Hzᵢ is
    a Hessian-vector product by double backward. The module is put in eval mode
    (dropout off) during the computation and restored afterwards.

    The trace is the sum of the curvatures along all parameter directions; Kimura &
    Naganuma relate a lower curvature of the loss surface to better calibration,
    and show that focal loss lowers it.

    Parameters
    ----------
    %(curvature_inputs)s
    n_samples : int, default=100
        Number of Rademacher probes.
    random_state : int, RandomState instance or None, default=None
        Seeds the probes.
    return_std : bool, default=False
        Also return the standard error of the estimate (sample standard
        deviation of zᵀHz over √n_samples; needs ``n_samples >= 2``).

    Returns
    -------
    trace : float
        Estimate of tr(H).
    std_error : float
        Its standard error, only if ``return_std=True``.

    Examples
    --------
    %(curvature_example_net)s
    >>> from sklcalib.diagnostics import hessian_trace
    >>> trace, se = hessian_trace(net, X, y, n_samples=50, random_state=0,
    ...                           return_std=True)
    >>> bool(trace > 0 and se < trace)
    True
    """
    n_samples = _check_positive_int(n_samples, "n_samples", 2 if return_std else 1)
    rng = check_random_state(random_state)
    with _operator_for(net, X, y) as op:
        quads = _hutchinson(op, n_samples, rng)
    trace = float(quads.mean())
    if return_std:
        return trace, float(quads.std(ddof=1) / math.sqrt(n_samples))
    return trace


def _power_iteration(op, n_iter, tol, rng, shift=0.0):
    """Dominant eigenvalue of H - shift·I by power iteration, and convergence."""
    v = rng.standard_normal(op.n_params)
    v /= np.linalg.norm(v)
    eig = np.nan
    for _ in range(n_iter):
        hv = op.matvec(v).double().cpu().numpy() - shift * v
        new = float(np.dot(v, hv))  # Rayleigh quotient, |v| = 1
        norm = float(np.linalg.norm(hv))
        if norm == 0.0:  # v lies in the null space: H - shift is 0 there
            return 0.0, True
        v = hv / norm
        if abs(new - eig) <= tol * max(abs(new), np.finfo(float).tiny):
            return new, True
        eig = new
    return eig, False


def _largest_eigenvalue(op, n_iter, tol, rng):
    """Largest algebraic eigenvalue of ``op``: power iteration, shifted if needed."""
    eig, converged = _power_iteration(op, n_iter, tol, rng)
    if converged and eig < 0:
        # the dominant eigenvalue is negative; H - eig·I is positive semi-definite
        # and its dominant eigenvalue is λ_max - eig
        shifted, converged = _power_iteration(op, n_iter, tol, rng, shift=eig)
        eig = shifted + eig
    return eig, converged


@fill_doc
def top_hessian_eigenvalue(net, X, y, n_iter=100, tol=1e-6, random_state=None):
    """Largest eigenvalue of the Hessian of a net's training loss.

    Power iteration on Hessian-vector products (see :func:`hessian_trace` for the
    loss, the data and the parameters). Power iteration converges to the
    eigenvalue of largest *magnitude*; away from a minimum that can be a negative
    one. In that case a second power iteration runs on H - λI (λ the negative
    eigenvalue found), whose dominant eigenvalue is λ_max - λ, so the returned
    value is always the largest (algebraic) eigenvalue λ_max, the "sharpness" of
    the loss surface.

    Parameters
    ----------
    %(curvature_inputs)s
    n_iter : int, default=100
        Maximum number of Hessian-vector products per power iteration.
    tol : float, default=1e-6
        Stop when the relative change of the Rayleigh quotient is below ``tol``.
        A :class:`~sklearn.exceptions.ConvergenceWarning` is raised if it is not
        reached within ``n_iter`` products.
    random_state : int, RandomState instance or None, default=None
        Seeds the starting vector.

    Returns
    -------
    eigenvalue : float
        Estimate of the largest eigenvalue of H.

    Examples
    --------
    %(curvature_example_net)s
    >>> from sklcalib.diagnostics import hessian_trace, top_hessian_eigenvalue
    >>> lam = top_hessian_eigenvalue(net, X, y, random_state=0)
    >>> bool(0 < lam <= hessian_trace(net, X, y, n_samples=200, random_state=0))
    True
    """
    n_iter = _check_positive_int(n_iter, "n_iter")
    tol = check_scalar(tol, "tol", low=0, low_open=True)
    rng = check_random_state(random_state)
    with _operator_for(net, X, y) as op:
        eig, converged = _largest_eigenvalue(op, n_iter, tol, rng)
    if not converged:
        warnings.warn(
            f"power iteration did not reach tol={tol} in n_iter={n_iter} "
            "Hessian-vector products; increase n_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    return float(eig)


# ---------------------------------------------------------------------------
# callback
# ---------------------------------------------------------------------------


class CurvatureLogger(Callback):
    """Record the Hessian trace of the training loss every few epochs.

    At the end of every ``every``-th epoch (and the first), Hutchinson's estimate of
    the trace of the Hessian of the loss (see :func:`hessian_trace`) on the
    training or validation split is written to the net's history under
    ``"hessian_trace"`` (and its standard error under ``"hessian_trace_std"``).
    Epochs in between get no entry. Each estimate costs ``n_samples``
    Hessian-vector products on the whole split.

    Parameters
    ----------
    every : int, default=10
        Log at epochs 1, 1 + every, 1 + 2·every, ... (1-based, as skorch counts).
    n_samples : int, default=20
        Rademacher probes per estimate.
    on : {"train", "valid"}, default="train"
        Which split to use; ``"valid"`` needs a ``train_split``.
    random_state : int, RandomState instance or None, default=0
        Seeds the probes. An int uses the same probes at every logged epoch, so
        that the logged values are comparable across epochs; a RandomState
        instance or None (NumPy's global state) draws fresh probes each time.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.datasets import make_classification
    >>> from skorch import NeuralNetClassifier
    >>> from sklcalib.diagnostics import CurvatureLogger
    >>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Linear(4, 2), criterion=torch.nn.CrossEntropyLoss,
    ...     max_epochs=3, train_split=None, verbose=0,
    ...     callbacks=[CurvatureLogger(every=2, n_samples=5)],
    ... ).fit(X.astype(np.float32), y)
    >>> [ "hessian_trace" in row for row in net.history]
    [True, False, True]
    """

    def __init__(self, every=10, n_samples=20, on="train", random_state=0):
        self.every = every
        self.n_samples = n_samples
        self.on = on
        self.random_state = random_state

    def initialize(self):
        """Check the parameters.

        Returns
        -------
        self : CurvatureLogger
            The callback.

        Raises
        ------
        ValueError
            When ``every`` is not an integer >= 1, ``n_samples`` not an integer
            >= 2 or ``on`` neither ``"train"`` nor ``"valid"``.
        """
        _check_positive_int(self.every, "every")
        _check_positive_int(self.n_samples, "n_samples", 2)
        if self.on not in ("train", "valid"):
            raise ValueError(f"on must be 'train' or 'valid', got {self.on!r}")
        return self

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        """Estimate the Hessian trace and record it, at a logged epoch.

        Parameters
        ----------
        net : skorch.NeuralNet
            The net being fitted.
        dataset_train : torch.utils.data.Dataset, default=None
            The training split (used with ``on="train"``).
        dataset_valid : torch.utils.data.Dataset, default=None
            The validation split (used with ``on="valid"``).
        **kwargs : dict
            Further arguments of skorch's hook (unused).

        Raises
        ------
        ValueError
            When the split to use is absent (``on="valid"`` without a
            ``train_split``).
        """
        epoch = len(net.history)
        if (epoch - 1) % self.every:
            return
        dataset = dataset_train if self.on == "train" else dataset_valid
        if dataset is None:
            raise ValueError(
                f"CurvatureLogger(on={self.on!r}) got no {self.on} data; "
                "on='valid' needs a train_split"
            )
        # a fresh generator from the same seed: the same probes every epoch
        rng = check_random_state(
            self.random_state
            if not isinstance(self.random_state, np.random.RandomState)
            else self.random_state.randint(np.iinfo(np.int32).max)
        )
        Xi, yi = _full_batch(net, dataset)
        with _HessianOperator(net, Xi, yi) as op:
            quads = _hutchinson(op, self.n_samples, rng)
        net.history.record("hessian_trace", float(quads.mean()))
        net.history.record(
            "hessian_trace_std",
            float(quads.std(ddof=1) / math.sqrt(self.n_samples)),
        )
