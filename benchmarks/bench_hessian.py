"""Speed and accuracy of the Hessian-trace estimate of a net's training loss.

Compares, on fitted ``NetClassifier`` MLPs of growing size:

- ``exact``: the full Hessian by ``torch.func.hessian`` (forward-over-reverse
  autodiff over the flattened parameters) and its trace, the reference;
- ``hutchinson``: :func:`sklcalib.diagnostics.hessian_trace` (Rademacher probes,
  Hessian-vector products by double backward, vectorised over probes);
- ``loop``: the same estimator with one backward pass per probe, the textbook
  implementation, to show what the vectorisation buys.

Prints one table: parameters, seconds per method, the speed ratios, and the
relative error of the estimate in units of its own standard error.

Run: ``python benchmarks/bench_hessian.py [--probes 100] [--threads 1]``
"""

import argparse
import time

import numpy as np
import torch
from sklearn.datasets import make_classification
from torch.func import functional_call, hessian

from sklcalib.diagnostics import hessian_trace
from sklcalib.diagnostics._curvature import _hutchinson, _operator_for
from sklcalib.net import NetClassifier

SIZES = [(8,), (32,), (64,), (32, 32)]
EXACT_MAX_PARAMS = 4000  # the dense Hessian grows with the square


def exact_trace(net, X, y):
    module, criterion = net.module_, net.criterion_
    names = [n for n, _ in module.named_parameters()]
    shapes = [p.shape for _, p in module.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(net.label_encoder_.transform(y))

    def loss(theta):
        chunks = torch.split(theta, [s.numel() for s in shapes])
        params = {n: c.view(s) for n, c, s in zip(names, chunks, shapes, strict=True)}
        return criterion(functional_call(module, params, (Xt,)), yt)

    module.eval()
    return torch.trace(hessian(loss)(flat)).item()


def timed(fn, repeat=3):
    best, value = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def loop_trace(net, X, y, n_probes):
    # the same estimator, one Hessian-vector product (backward pass) per probe
    rng = np.random.RandomState(0)
    with _operator_for(net, X, y) as op:
        op.matmat = lambda V, batched=False, _m=op.matmat: _m(V, batched=False)
        return float(_hutchinson(op, n_probes, rng).mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    X, y = make_classification(
        n_samples=args.samples,
        n_features=20,
        n_informative=8,
        n_classes=4,
        random_state=0,
    )
    print(
        f"Hessian trace of the training loss, {args.samples} samples, "
        f"{args.probes} probes, torch {torch.__version__}, {args.threads} thread(s)"
    )
    header = (
        f"{'hidden':>10} {'params':>7} {'exact s':>9} {'hutch s':>9} {'loop s':>9} "
        f"{'exact/hutch':>11} {'loop/hutch':>10} {'trace':>9} {'|err|/se':>8}"
    )
    print(header)
    print("-" * len(header))
    for hidden in SIZES:
        net = NetClassifier(
            criterion="focal",
            module__hidden_units=hidden,
            max_epochs=20,
            lr=1e-2,
            train_split=None,
            random_state=0,
        ).fit(X, y)
        n_params = sum(p.numel() for p in net.module_.parameters())
        t_hutch, (estimate, se) = timed(
            lambda net=net: hessian_trace(
                net, X, y, n_samples=args.probes, random_state=0, return_std=True
            )
        )
        t_loop, _ = timed(lambda net=net: loop_trace(net, X, y, args.probes))
        if n_params <= EXACT_MAX_PARAMS:
            t_exact, exact = timed(lambda net=net: exact_trace(net, X, y), repeat=1)
            exact_cols = f"{t_exact:9.3f}"
            ratio = f"{t_exact / t_hutch:11.1f}"
            err = f"{abs(estimate - exact) / se:8.2f}"
        else:
            exact_cols, ratio, err = f"{'-':>9}", f"{'-':>11}", f"{'-':>8}"
        print(
            f"{hidden!s:>10} {n_params:7d} {exact_cols} {t_hutch:9.3f} {t_loop:9.3f} "
            f"{ratio} {t_loop / t_hutch:10.1f} {estimate:9.3f} {err}"
        )


if __name__ == "__main__":
    main()
