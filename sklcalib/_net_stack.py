"""Several :class:`sklcalib.NetClassifier` fits of one shape in one stacked pass.

The benchmark trains, for a dataset and seed, one net per criterion: the same
MLP shape, the same initial weights and the same batches, only the criterion
differs. On these small networks a training step is mostly per-call overhead,
paid once per net. :func:`fit_stacked` trains such nets together: each layer's
weights of all the nets are stacked into one tensor, the forward and backward
passes of the MLP are one batched matrix product per layer for all of them,
Adam updates the stacked tensors in one fused call, and each net's own
criterion is called on its own slice of the stacked logits, as its own fit
calls it.

The result is each net's own fit to the last bit, not to rounding: every
number a net's fit computes is computed by the same operation on the same
values.

- The batched products are checked, once per batch size and shape, to give
  exactly the per-net products (outputs and gradients); a size where they do
  not (tiny batches, or a narrow first layer, take another kernel) runs the
  per-net products inside the stacked pass, for the first layer only where
  that is enough.
- Fused Adam is elementwise, but its vectorised body and its scalar tail may
  round differently: a parameter is stacked only when each net's part is a
  multiple of 16 elements, so that every element takes the same path as in
  its own net's step; the others stay one tensor per net.
- Only one torch thread: a parallel split of a stacked tensor would differ.

Everything around the steps is each net's own machinery: its seeds,
initialisation, label encoding, batches, epoch callbacks, validation pass,
early stopping and history. Whatever the stacked pass does not reproduce
exactly (a per-batch callback, another module or optimizer, dropout, a
device, data other than in-memory arrays) makes :func:`fit_stacked` fit the
nets one by one with their own ``fit``. A net that stops early leaves the
stack; the others go on.
"""

import math

from sklcalib._net_loop import (
    FiniteLossCheck,
    TensorBatches,
    loss_and_grad,
    overrides,
)
from sklcalib._utils._optional import extra_imports
from sklcalib.callbacks import _ValidationBatches

with extra_imports("sklcalib.net"):
    import torch
    from skorch import NeuralNet

__all__ = ["fit_stacked"]

#: the per-batch hooks a stacked pass honours on training batches: the
#: finite-loss check (called on a NaN or infinite loss, as the fast loop
#: does) and the validation collectors, which ignore training batches
_TRAINING_BATCH_END = (FiniteLossCheck.on_batch_end, _ValidationBatches.on_batch_end)

#: a stacked parameter's part per net must be a multiple of this many
#: elements: a multiple of every CPU vector width of float32 (AVX2 8,
#: AVX-512 16), so that fused Adam takes its vectorised path for each
#: element whether the part is alone or stacked
_ADAM_LANES = 16


def fit_stacked(nets, X, y):
    """Fit ``nets`` on ``(X, y)``, each as its own ``fit(X, y)`` would.

    Parameters
    ----------
    nets : list of NetClassifier
        Nets of one MLP shape, optimizer and schedule; criteria, seeds and
        callbacks may differ.
    X : array-like of shape (n_samples, n_features)
        Training data, as ``fit`` takes it.
    y : array-like of shape (n_samples,)
        Labels.

    Returns
    -------
    stacked : bool
        Whether the nets were trained in the stacked pass (False: each by
        its own ``fit``). The nets are fitted either way; after the stacked
        pass their optimizers hold no state (the stacked Adam held it).
    """
    nets = list(nets)
    if len(nets) < 2 or torch.get_num_threads() != 1:
        for net in nets:
            net.fit(X, y)
        return False
    with torch.random.fork_rng(devices=[]):
        setups = [_begin(net, X, y) for net in nets]
        plan = _plan(nets, setups)
        if plan is None:
            for net in nets:
                net.fit(X, y)
            return False
        _train(nets, setups, plan)
    return True


def _begin(net, X, y):
    # what fit does before the first epoch: validate and encode, draw the
    # seeds, initialize (seeded), notify on_train_begin, split, iterators
    net._check_training_params()
    X32, y_enc = net._validate_fit_data(X, y, reset=True)
    net._draw_seeds()
    setup = {"X": X32, "y": y_enc}

    def begin():
        net.initialize()
        net.notify("on_train_begin", X=X32, y=y_enc)
        net.check_data(X32, y_enc)
        net.check_training_readiness()
        train, valid = net.get_split_datasets(X32, y_enc)
        setup["kwargs"] = {"dataset_train": train, "dataset_valid": valid}
        setup["train"] = net.get_iterator(train, training=True)
        setup["valid"] = None if valid is None else net.get_iterator(valid)

    net._seeded_call(begin)
    return setup


def _layers(module):
    # the MLP as [("linear", Linear) | ("relu", None)], or None
    from sklcalib.net import MLP

    if type(module) is not MLP or type(module.layers) is not torch.nn.Sequential:
        return None
    out = []
    for layer in module.layers:
        if type(layer) is torch.nn.Linear and layer.bias is not None:
            out.append(("linear", layer))
        elif type(layer) is torch.nn.ReLU and not layer.inplace:
            out.append(("relu", None))
        else:
            return None
    return out


def _plan(nets, setups):
    """The stacked pass's plan (per-net loss functions, layers, optimizer
    settings), or None when a net's fit is not one it reproduces exactly."""
    first = nets[0]
    shapes = None
    hyper = None
    losses = []
    for net, setup in zip(nets, setups, strict=True):
        it = setup["train"]
        layers = _layers(net.module_)
        if (
            layers is None
            or not isinstance(it, TensorBatches)
            or not it.shuffle
            or it.drop_last
            or it.y is None
            or it.batch_size != setups[0]["train"].batch_size
            or len(it.X) != len(setups[0]["train"].X)
            or net.max_epochs != first.max_epochs
            or overrides(net, NeuralNet, "notify")
            or overrides(net, NeuralNet, "train_step")
            or overrides(net, NeuralNet, "train_step_single")
            or net._single_step_optimizer() is None
            or type(net.optimizer_) is not torch.optim.Adam
            or len(net.optimizer_.param_groups) != 1
            or net._batch_hooks("on_batch_begin", True)
            or net._batch_hooks("on_grad_computed", True)
            or any(
                h.__func__ not in _TRAINING_BATCH_END
                for h in net._batch_hooks("on_batch_end", True)
            )
        ):
            return None
        forward, loss_of = net._lean_calls()
        if forward is not net.module_:
            return None
        params = [
            p for _, layer in layers if layer is not None for p in layer.parameters()
        ]
        if any(p.dtype != torch.float32 or p.device.type != "cpu" for p in params):
            return None
        group = {
            k: v for k, v in net.optimizer_.param_groups[0].items() if k != "params"
        }
        owned = [id(p) for p in net.optimizer_.param_groups[0]["params"]]
        if (
            owned != [id(p) for p in net.module_.parameters()]
            or group.get("differentiable")
            or group.get("capturable")
        ):
            return None
        layer_shapes = [
            (kind, None if layer is None else tuple(layer.weight.shape))
            for kind, layer in layers
        ]
        if shapes is None:
            shapes, hyper = layer_shapes, group
        elif layer_shapes != shapes or group != hyper:
            return None
        losses.append(loss_of)
    # the same rows and order for every net: one batch stream serves all
    same_data = all(
        torch.equal(s["train"].X, setups[0]["train"].X)
        and torch.equal(s["train"].y, setups[0]["train"].y)
        for s in setups[1:]
    )
    shared = same_data and all(
        net._fit_seeds_ is not None and net._fit_seeds_[1] == first._fit_seeds_[1]
        for net in nets
    )
    return {"losses": losses, "hyper": hyper, "shared": shared}


class _Stack:
    """The stacked parameters of the active nets and their Adam."""

    def __init__(self, nets, hyper):
        self.hyper = hyper
        self.kinds = [kind for kind, _ in _layers(nets[0].module_)]
        # per Linear: [weight, bias], each a stacked leaf (M, ...) or a list
        # of per-net leaves
        self.params = []
        for i, kind in enumerate(self.kinds):
            if kind != "linear":
                continue
            entry = []
            for name in ("weight", "bias"):
                parts = [getattr(_layers(net.module_)[i][1], name) for net in nets]
                if parts[0].numel() % _ADAM_LANES == 0:
                    entry.append(
                        torch.stack([p.detach() for p in parts]).requires_grad_()
                    )
                else:
                    entry.append([p.detach().clone().requires_grad_() for p in parts])
            self.params.append(entry)
        self.optimizer = torch.optim.Adam(self.leaves(), **hyper)
        self.exact = {}
        self.lean = _lean_adam(hyper)
        # step's lists of the optimizer's state (rebuilt after keep)
        self.lists = None

    def leaves(self):
        """The stack's leaf tensors, in Adam's order (built once per set of
        parameters: every step reads them twice)."""
        cached = self.__dict__.get("_leaves")
        if cached is None or cached[0] is not self.params:
            out = []
            for entry in self.params:
                for p in entry:
                    out.extend(p if isinstance(p, list) else [p])
            cached = self._leaves = (self.params, out)
        return cached[1]

    def forward(self, x, batched=None):
        """Every net's logits (a list) from the stacked MLP on ``x`` (n, d),
        every net's input, or (M, n, d).

        ``batched``: one flag per Linear layer, whether that layer runs as one
        batched product for every net (else one product per net); None: the
        plan :meth:`_batched_layers` found exact at this shape. A batched last
        layer is :class:`_LastLinear`: one product for every net, whose
        backward takes each net's logits' gradient in the layout its
        criterion gave it (the fused criteria's are column-major below 16
        classes, torch's cross-entropy's row-major), as each net's own step
        does."""
        m = len(self)
        if batched is None:
            batched = self._batched_layers(x.shape, x.ndim == 3)
        last = max(i for i, kind in enumerate(self.kinds) if kind == "linear")
        z = x if x.ndim == 3 else x.expand(m, *x.shape)
        linear = iter(zip(self.params, batched, strict=True))
        for i, kind in enumerate(self.kinds):
            if kind == "relu":
                z = torch.relu(z)
                continue
            entry, together = next(linear)
            if i == last and together:
                w, b = (p if not isinstance(p, list) else torch.stack(p) for p in entry)
                return list(_LastLinear.apply(z, w, b))
            if i == last:
                # each net's part: the per-net leaves, or the stacked
                # leaf's slices (one unbind: each net's gradient as it is)
                w, b = (p if isinstance(p, list) else p.unbind(0) for p in entry)
                return [
                    torch.nn.functional.linear(zj, wj, bj)
                    for zj, wj, bj in zip(z.unbind(0), w, b, strict=True)
                ]
            w, b = (p if not isinstance(p, list) else torch.stack(p) for p in entry)
            if together:
                z = torch.baddbmm(b.unsqueeze(1), z, w.transpose(1, 2))
            else:
                z = torch.stack(
                    [torch.nn.functional.linear(z[j], w[j], b[j]) for j in range(m)]
                )
        raise ValueError("the MLP has no final Linear layer")

    def _batched_layers(self, shape, own):
        # which layers may run batched and give the per-net products bit for
        # bit at this batch shape: kernels are chosen by shape and layout, not
        # by value. Every layer batched, else all but the first (a narrow
        # input, such as 6 features, can take another kernel in the batched
        # product than in the net's own), else none. ``own``: a (M, n, d)
        # input, one slice per net
        n, d = shape[-2:]
        key = (n, d, len(self), own)
        if key not in self.exact:
            n_linear = len(self.params)
            plans = [(True,) * n_linear]
            if n_linear > 1:
                plans.append((False,) + (True,) * (n_linear - 1))
            alone = (False,) * n_linear
            self.exact[key] = next(
                (plan for plan in plans if self._same_as(plan, alone, n, d, own)),
                alone,
            )
        return self.exact[key]

    def _same_as(self, plan, reference, n, d, own):
        # whether forward and backward with ``plan`` give ``reference``'s
        # outputs and gradients to the last bit, on seeded random values
        gen = torch.Generator().manual_seed(0)
        x = torch.randn((len(self), n, d) if own else (n, d), generator=gen)
        with torch.random.fork_rng(devices=[]):
            out = []
            for batched in (plan, reference):
                leaves = self.leaves()
                saved = [p.grad for p in leaves]
                for p in leaves:
                    p.grad = None
                z = torch.stack(self.forward(x, batched=batched))
                z.backward(torch.randn(z.shape, generator=gen.manual_seed(1)))
                out.append([z.detach(), *[p.grad for p in leaves]])
                for p, g in zip(leaves, saved, strict=True):
                    p.grad = g
        return all(torch.equal(a, b) for a, b in zip(*out, strict=True))

    def step(self):
        """Adam's step on the stacked leaves.

        With fused Adam on the CPU (the benchmark's), the two kernel calls
        that ``optimizer.step()`` makes, on the same lists and state: the
        state's step counters counted up, then ``torch._fused_adam_`` over
        every leaf. The same kernels on the same tensors give the same
        numbers; what is left out is the Python around them (hooks, the
        profiler's record, the compiler's graph breaks, the regrouping of
        the lists), about a tenth of a stacked step of ten small nets. The
        state lives in the optimizer, as its own step keeps it (the stack's
        ``keep`` reads it), its step counters as views of one tensor: one
        addition counts them all up (``_foreach_add_`` over a dozen 0-d
        tensors costs as much as the Adam kernel). Any other setting takes
        ``optimizer.step()``.
        """
        leaves = self.leaves()
        if self.lean is None or any(p.grad is None for p in leaves):
            self.optimizer.step()
            return
        if self.lists is None:
            self.lists = self._adam_lists(leaves)
        counter, avgs, squares, maxima, steps = self.lists
        hyper = self.hyper
        beta1, beta2 = hyper["betas"]
        with torch.no_grad():
            counter.add_(1)
            torch._fused_adam_(
                leaves,
                [p.grad for p in leaves],
                avgs,
                squares,
                maxima,
                steps,
                amsgrad=hyper["amsgrad"],
                lr=hyper["lr"],
                beta1=beta1,
                beta2=beta2,
                weight_decay=hyper["weight_decay"],
                eps=hyper["eps"],
                maximize=hyper["maximize"],
                grad_scale=None,
                found_inf=None,
            )

    def _adam_lists(self, leaves):
        # the optimizer's state of every leaf (Adam's lazy initialisation, as
        # its _init_group, where there is none yet) and the step counters
        # moved into one tensor, each leaf's "step" a view of its element
        state, amsgrad = self.optimizer.state, self.hyper["amsgrad"]
        avgs, squares, maxima, steps = [], [], [], []
        for p in leaves:
            entry = state[p]
            if not entry:
                entry["step"] = torch.zeros((), dtype=torch.float32)
                entry["exp_avg"] = torch.zeros_like(
                    p, memory_format=torch.preserve_format
                )
                entry["exp_avg_sq"] = torch.zeros_like(
                    p, memory_format=torch.preserve_format
                )
                if amsgrad:
                    entry["max_exp_avg_sq"] = torch.zeros_like(
                        p, memory_format=torch.preserve_format
                    )
            avgs.append(entry["exp_avg"])
            squares.append(entry["exp_avg_sq"])
            if amsgrad:
                maxima.append(entry["max_exp_avg_sq"])
            steps.append(entry["step"])
        counter = torch.stack(steps)
        steps = list(counter.unbind(0))
        for p, view in zip(leaves, steps, strict=True):
            state[p]["step"] = view
        return counter, avgs, squares, maxima, steps

    def __len__(self):
        entry = self.params[0][0]
        return len(entry) if isinstance(entry, list) else entry.shape[0]

    def write_back(self, nets):
        """Copy each net's slice into its module's parameters (one foreach
        copy for all of them where torch has it: sixty small copies per
        epoch otherwise). The pairs are listed once per set of nets and
        parameters: the stacked leaves are updated in place, so their
        slices stay theirs."""
        key = (self.params, [id(net.module_) for net in nets])
        cached = self.__dict__.get("_copies")
        if cached is None or cached[0][0] is not key[0] or cached[0][1] != key[1]:
            linears = [
                [layer for kind, layer in _layers(net.module_) if kind == "linear"]
                for net in nets
            ]
            pairs = ([], [])
            for i, entry in enumerate(self.params):
                for name, p in zip(("weight", "bias"), entry, strict=True):
                    parts = p if isinstance(p, list) else p.detach().unbind(0)
                    for layers, part in zip(linears, parts, strict=True):
                        pairs[0].append(getattr(layers[i], name))
                        pairs[1].append(part)
            cached = self._copies = (key, pairs)
        targets, sources = cached[1]
        with torch.no_grad():
            if hasattr(torch, "_foreach_copy_"):
                torch._foreach_copy_(targets, sources)
            else:
                for target, source in zip(targets, sources, strict=True):
                    target.copy_(source)

    def keep(self, keep):
        """Drop the nets not in ``keep`` (indices) from the stack, with
        their part of Adam's state."""
        index = torch.as_tensor(keep, dtype=torch.int64)
        old = self.optimizer
        mapping = {}
        params = []
        for entry in self.params:
            new_entry = []
            for p in entry:
                if isinstance(p, list):
                    kept = [p[j] for j in keep]
                    mapping.update({id(q): (q, None) for q in kept})
                    new_entry.append(kept)
                else:
                    q = p.detach().index_select(0, index).requires_grad_()
                    mapping[id(q)] = (p, index)
                    new_entry.append(q)
            params.append(new_entry)
        self.params = params
        self.optimizer = torch.optim.Adam(self.leaves(), **self.hyper)
        self.lists = None
        for q in self.leaves():
            source, rows = mapping[id(q)]
            state = old.state.get(source)
            if not state:
                continue
            self.optimizer.state[q] = {
                k: (
                    v.index_select(0, rows).clone()
                    if rows is not None and torch.is_tensor(v) and v.ndim > 0
                    else (v.clone() if torch.is_tensor(v) else v)
                )
                for k, v in state.items()
            }


class _LastLinear(torch.autograd.Function):
    """The nets' last Linear layers in one node: ``apply(z, weight, bias)``
    with the stacked inputs (M, n, h), weights (M, k, h) and biases (M, k)
    gives each net's logits (n, k).

    Forward, one batched product (the stack's check compares it with the
    per-net ones). Backward, each net's logits' gradient arrives as its
    criterion made it, column- or row-major, and the weights' and inputs'
    gradients are batched products over the gradients' transposes stacked,
    the biases' each net's column sums in its own layout: what each net's
    own ``addmm`` backward computes, in two products instead of twenty and
    one node instead of thirty. Whether they agree to the last bit is
    checked once per shape and set of layouts (:func:`_last_exact`); where
    they do not, the backward is each net's own, by autograd.
    """

    @staticmethod
    def forward(ctx, z, weight, bias):
        ctx.save_for_backward(z, weight, bias)
        return torch.baddbmm(bias.unsqueeze(1), z, weight.transpose(1, 2)).unbind(0)

    @staticmethod
    def backward(ctx, *grads):
        z, weight, bias = ctx.saved_tensors
        if _last_exact(z, weight, bias, grads):
            return _last_batched(z, weight, grads)
        return _last_per_net(z, weight, bias, grads)


def _last_batched(z, weight, grads):
    # grads (n, k) each -> (M, k, n): its transposes, each row-major
    g_t = torch.stack([g.t() for g in grads])
    grad_z = torch.bmm(g_t.transpose(1, 2), weight)
    grad_w = torch.bmm(g_t, z)
    grad_b = torch.stack([g.sum(0) for g in grads])
    return grad_z, grad_w, grad_b


def _last_per_net(z, weight, bias, grads):
    # each net's own Linear backward (addmm's), by autograd
    out = []
    with torch.enable_grad():
        for parts in zip(
            z.unbind(0), weight.unbind(0), bias.unbind(0), grads, strict=True
        ):
            *inputs, g = [t.detach() for t in parts]
            inputs = [t.requires_grad_() for t in inputs]
            value = torch.nn.functional.linear(*inputs)
            out.append(torch.autograd.grad(value, inputs, g))
    return tuple(torch.stack(parts) for parts in zip(*out, strict=True))


#: (shapes, dtype, the gradients' strides) -> whether _last_batched gives
#: _last_per_net's numbers to the last bit
_LAST_EXACT = {}


def _last_exact(z, weight, bias, grads):
    """Whether the batched backward of :class:`_LastLinear` is each net's own
    for these shapes and layouts, tried once on seeded random values: kernels
    are chosen by shape and layout, not by value."""
    if not all(g.is_contiguous() or g.t().is_contiguous() for g in grads):
        return False  # another layout: a view of something larger
    key = (
        tuple(z.shape),
        tuple(z.stride()),
        tuple(weight.shape),
        z.dtype,
        tuple(g.stride() for g in grads),
    )
    exact = _LAST_EXACT.get(key)
    if exact is None:
        gen = torch.Generator().manual_seed(0)

        def like(t):
            values = torch.randn(t.shape, generator=gen, dtype=t.dtype)
            out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
            return out.copy_(values)

        args = [like(t) for t in (z, weight, bias)]
        seeds = [like(g) for g in grads]
        batched = _last_batched(args[0], args[1], seeds)
        own = _last_per_net(*args, seeds)
        exact = all(torch.equal(a, b) for a, b in zip(batched, own, strict=True))
        _LAST_EXACT[key] = exact
    return exact


def _lean_adam(hyper):
    """Whether :meth:`_Stack.step` may call fused Adam's kernel itself: fused
    on the CPU, plain floats for the rates, none of the settings whose step
    does more (capturable, differentiable, decoupled weight decay: AdamW),
    and a torch that has the kernel. None otherwise."""
    betas = hyper.get("betas")
    if (
        hyper.get("fused") is not True
        or hyper.get("capturable")
        or hyper.get("differentiable")
        or hyper.get("decoupled_weight_decay")
        or not hasattr(torch, "_fused_adam_")
        or not hasattr(torch, "_foreach_add_")
        or not isinstance(betas, tuple)
        or not all(
            type(v) is float for v in (hyper.get("lr"), hyper.get("eps"), *betas)
        )
        or type(hyper.get("weight_decay")) not in (int, float)
        or type(hyper.get("amsgrad")) is not bool
        or type(hyper.get("maximize")) is not bool
    ):
        return None
    return True


def _train(nets, setups, plan):
    stack = _Stack(nets, plan["hyper"])
    losses = plan["losses"]
    active = list(range(len(nets)))
    for _ in range(nets[0].max_epochs):
        for j in active:
            nets[j].notify("on_epoch_begin", **setups[j]["kwargs"])
            nets[j]._set_training(True)
        _train_epoch(nets, setups, stack, losses, active, plan["shared"])
        stack.write_back([nets[j] for j in active])
        stopped = []
        for j in active:
            net, setup = nets[j], setups[j]
            net.run_single_epoch(
                setup["valid"],
                training=False,
                prefix="valid",
                step_fn=net.validation_step,
            )
            try:
                net.notify("on_epoch_end", **setup["kwargs"])
            except KeyboardInterrupt:  # early stopping, as skorch's fit ends
                stopped.append(j)
        for j in stopped:
            nets[j].notify("on_train_end", X=setups[j]["X"], y=setups[j]["y"])
        if stopped:
            keep = [k for k, j in enumerate(active) if j not in stopped]
            active = [active[k] for k in keep]
            if not active:
                return
            stack.keep(keep)
    for j in active:
        nets[j].notify("on_train_end", X=setups[j]["X"], y=setups[j]["y"])


#: the autograd engine's entry point that ``torch.autograd.backward`` calls
#: after its checks of the roots and seeds (torch >= 2.3); None: backward()
_RUN_BACKWARD = getattr(torch.autograd.graph, "_engine_run_backward", None)


def _backward(roots, seeds):
    """``torch.autograd.backward(roots, seeds)``, a None seed being 1 for its
    scalar root: the same engine pass, without backward's Python checks of
    each root and seed (a tenth of a millisecond for ten roots, about 3 % of
    a stacked step of ten small nets). The seeds are the criteria's own
    gradients, each of its logits' shape and dtype, or None for a loss."""
    if _RUN_BACKWARD is None:
        torch.autograd.backward(roots, seeds)
        return
    seeds = tuple(
        torch.ones_like(root, memory_format=torch.preserve_format)
        if seed is None
        else seed
        for root, seed in zip(roots, seeds, strict=True)
    )
    _RUN_BACKWARD(
        tuple(roots),
        seeds,
        False,  # retain_graph
        False,  # create_graph
        (),  # inputs: every leaf
        allow_unreachable=True,
        accumulate_grad=True,
    )


def _train_epoch(nets, setups, stack, losses, active, shared):
    # one training pass of the active nets: what FastLoop.run_single_epoch
    # records per batch, with one stacked step for all of them. Shared
    # batches come from the first net's iterator, whether or not that net
    # is still in the stack: its generator has drawn every pass so far, as
    # each active net's own would have (another net's generator, never
    # drawn from, would start over at the first epoch's order)
    streams = (
        [iter(setups[0]["train"])]
        if shared
        else [iter(setups[j]["train"]) for j in active]
    )
    entries = [nets[j].history[-1]["batches"] for j in active]
    count = 0
    for batches in zip(*streams, strict=True):
        if shared:
            x = batches[0][0]
            ys = [batches[0][1]] * len(active)
        else:
            x = torch.stack([b[0] for b in batches])
            ys = [b[1] for b in batches]
        for p in stack.leaves():
            p.grad = None
        outputs = stack.forward(x)
        values, roots, seeds = [], [], []
        for k, (j, out, yi) in enumerate(zip(active, outputs, ys, strict=True)):
            value, grad = loss_and_grad(losses[j], out, yi, x if shared else x[k])
            values.append(value)
            # the logits' gradient where the criterion gave it, else the
            # loss seeded with 1
            roots.append(value if grad is None else out)
            seeds.append(grad)
        # the gradients of every net's loss in one pass, without the stack
        # and sum nodes
        _backward(roots, seeds)
        stack.step()
        size = len(ys[0])
        for k, (j, value) in enumerate(
            zip(active, torch.stack([v.detach() for v in values]).tolist(), strict=True)
        ):
            entries[k].append({"train_loss": value, "train_batch_size": size})
            if not math.isfinite(value):
                for hook in nets[j]._batch_hooks("on_batch_end", True):
                    hook(
                        nets[j],
                        batch=(x if shared else x[k], ys[k]),
                        training=True,
                        loss=values[k],
                        y_pred=outputs[k],
                    )
        count += 1
    for j in active:
        nets[j].history.record("train_batch_count", count)
