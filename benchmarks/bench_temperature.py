"""Speed of temperature scaling (NLL objective) on a large logit matrix.

Compares, in the same run and on the same float64 logits (200k x 100 by
default, labels drawn from softmax(z) and logits reported as 3 z, so T* ~ 3):

- ``sklcalib.calibration.TemperatureScaler().fit``: input validation,
  safeguarded Halley steps on 1/T from a subsample's optimum, the compiled
  one-pass kernel on the full logits;
- the same with the numpy reference kernel (``fused=False`` of the core
  function ``fit_temperature_nll``, no input validation);
- scikit-learn's ``CalibratedClassifierCV(FrozenEstimator(m),
  method="temperature")``, ``m`` a model whose ``decision_function`` returns
  the logits (what a user calls);
- scikit-learn's internal ``_TemperatureScaling().fit`` on the logits (the
  same bounded scalar search without the meta-estimator around it).

Every method gets one warm-up call (numba loads its cache or compiles) and
then the median of ``--repeats`` timed calls; the cold first call of
TemperatureScaler is reported too. The table gives seconds, the ratio to
TemperatureScaler, and |T - T_sklcalib| / T_sklcalib. Run::

    python benchmarks/bench_temperature.py [--n 200000] [--k 100] [--repeats 5]
"""

import argparse
import os
import statistics
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class LogitLookup(ClassifierMixin, BaseEstimator):
    """A "fitted model" whose decision_function returns stored logits.

    ``X`` holds row indices into the logits, so scikit-learn's meta-estimator
    sees exactly the logits that sklcalib fits on.
    """

    def __init__(self, logits=None):
        self.logits = logits

    def fit(self, X, y):
        self.classes_ = np.arange(self.logits.shape[1])
        return self

    def decision_function(self, X):
        return self.logits[np.asarray(X)[:, 0]]

    def predict(self, X):
        return np.argmax(self.decision_function(X), axis=1)


def timeit(fn, repeats):
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def make_data(n, k, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k))
    y = np.argmax(z + rng.gumbel(size=(n, k)), axis=1)  # y ~ softmax(z)
    z *= scale
    return z, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import numba
    import sklearn
    from sklearn.calibration import CalibratedClassifierCV, _TemperatureScaling
    from sklearn.frozen import FrozenEstimator

    from sklcalib.calibration import TemperatureScaler
    from sklcalib.calibration._temperature_nll import fit_temperature_nll

    logits, y = make_data(args.n, args.k)
    rows = np.arange(args.n).reshape(-1, 1)
    print(
        f"temperature scaling, {args.n} x {args.k} float64 logits "
        f"({logits.nbytes / 2**20:.0f} MiB); numba {numba.__version__} "
        f"({numba.get_num_threads()} threads), scikit-learn {sklearn.__version__}, "
        f"{os.cpu_count()} CPUs; median of {args.repeats} runs"
    )

    start = time.perf_counter()
    TemperatureScaler().fit(logits, y)
    cold = time.perf_counter() - start

    def ours():
        return TemperatureScaler().fit(logits, y).temperature_

    def ours_numpy():
        return fit_temperature_nll(logits, y, fused=False)

    frozen = FrozenEstimator(LogitLookup(logits).fit(rows, y))

    def sklearn_public():
        model = CalibratedClassifierCV(frozen, method="temperature").fit(rows, y)
        return 1.0 / float(model.calibrated_classifiers_[0].calibrators[0].beta_)

    def sklearn_internal():
        return 1.0 / float(_TemperatureScaling().fit(logits, y).beta_)

    methods = [
        ("sklcalib TemperatureScaler", ours),
        ("sklcalib, numpy kernel", ours_numpy),
        ("sklearn CalibratedClassifierCV", sklearn_public),
        ("sklearn _TemperatureScaling", sklearn_internal),
    ]
    results = {}
    for name, fn in methods:
        fn()  # warm-up
        results[name] = timeit(fn, args.repeats)
    reference_time, reference_t = results["sklcalib TemperatureScaler"]

    print(
        f"{'method':34s} {'seconds':>9s} {'x ours':>8s} {'T':>12s} {'rel. diff T':>12s}"
    )
    cold_name = "sklcalib TemperatureScaler (cold)"
    print(f"{cold_name:34s} {cold:9.3f} {cold / reference_time:8.1f}")
    for name, (seconds, temperature) in results.items():
        diff = abs(temperature - reference_t) / reference_t
        print(
            f"{name:34s} {seconds:9.3f} {seconds / reference_time:8.1f} "
            f"{temperature:12.8f} {diff:12.2e}"
        )
    fastest_sklearn = min(
        results["sklearn CalibratedClassifierCV"][0],
        results["sklearn _TemperatureScaling"][0],
    )
    print(
        f"speed-up over the faster scikit-learn route: "
        f"{fastest_sklearn / reference_time:.1f}x"
    )


if __name__ == "__main__":
    main()
