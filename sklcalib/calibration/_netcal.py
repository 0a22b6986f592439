"""Clone-safe scikit-learn adapters over netcal's BBQ, ENIR and beta calibration.

netcal (and the torch and pyro it pulls in) is imported inside ``fit`` only:
``import sklcalib.calibration`` stays light, and netcal stays optional
(``pip install "sklcalib[netcal]"``). The constructors store parameters only;
the netcal objects are created in ``fit`` (``calibrators_``), so ``clone``,
``get_params`` and grid searches see ordinary scikit-learn parameters.

Every adapter calibrates one-vs-rest with netcal's binary models: a binary
problem fits one model on the positive-class probability, a multiclass one fits
one per class on ``p[:, k]`` against ``[y == k]`` and renormalises the rows
(an all-zero row becomes uniform).
"""

import contextlib
import functools
import sys
import threading
import warnings

import numpy as np

from sklcalib._utils._optional import import_optional
from sklcalib._utils._validation import check_bool, check_option

from ._binning import _OneVsRestCalibrator

# netcal keeps state in module globals (pyro's parameter store, torch's seed,
# its progress bars): two threads fitting at once raise or get each other's
# parameters. Every netcal call of sklcalib runs under this lock.
_NETCAL_LOCK = threading.RLock()
_ABSENT = object()


def import_netcal(submodule, owner):
    """``netcal.<submodule>``, or an ImportError that names the extra."""
    return import_optional(f"netcal.{submodule}", owner)


@contextlib.contextmanager
def netcal_quietly(submodule, owner):
    """Import ``netcal.<submodule>`` and yield it under the lock, netcal's
    ``print`` and ``tqdm`` silenced meanwhile.

    netcal writes its warnings with ``print`` and its progress bars with tqdm
    straight to stdout/stderr, which a calibrator inside a grid search should
    not. Rather than redirecting the whole process's streams (not
    thread-safe, and it would hide everyone else's output), the names
    ``print`` and ``tqdm`` inside netcal's loaded modules are replaced while
    the block runs and restored after it, so that netcal used directly
    elsewhere behaves as netcal does: netcal's ``"WARNING: ..."`` lines become
    Python warnings (visible and filterable), its other chatter is dropped
    and its progress bars are disabled.
    """
    with _NETCAL_LOCK:
        netcal_module = import_netcal(submodule, owner)
        saved = []
        for name, module in list(sys.modules.items()):
            if module is not None and (name == "netcal" or name.startswith("netcal.")):
                saved.append((module, _silence(module)))
        try:
            yield netcal_module
        finally:
            for module, originals in saved:
                for attr, value in originals.items():
                    if value is _ABSENT:
                        module.__dict__.pop(attr, None)
                    else:
                        setattr(module, attr, value)


def _netcal_print(*args, **kwargs):
    """``print`` as netcal's modules see it: its warnings become warnings."""
    message = " ".join(map(str, args))
    if message.startswith("WARNING:"):
        warnings.warn(
            f"netcal: {message.removeprefix('WARNING:').strip()}",
            UserWarning,
            stacklevel=2,
        )


def _silence(module):
    """Replace ``print`` and ``tqdm`` in ``module``; return what they were."""
    originals = {"print": module.__dict__.get("print", _ABSENT)}
    module.print = _netcal_print
    bar = module.__dict__.get("tqdm")
    if isinstance(bar, type):  # the tqdm class imported by name
        originals["tqdm"] = bar
        module.tqdm = functools.partial(bar, disable=True)
    return originals


class _NetcalCalibrator(_OneVsRestCalibrator):
    """One binary netcal model per calibrated column.

    netcal's own multiclass modes are one-vs-rest for BBQ and ENIR too, but
    they divide by a row sum that can be 0 (NaN) and skip classes absent from
    the calibration data; the shared one-vs-rest code renormalises safely.
    """

    def _check_weights_supported(self, sample_weight):
        if sample_weight is not None:
            raise ValueError(
                f"{type(self).__name__} cannot honour sample_weight: netcal's "
                "model has no sample weights. Fit without sample_weight, or use "
                "a calibrator that weights samples (e.g. IsotonicCalibrator, "
                "HistogramBinningCalibrator)."
            )

    def _fit_column(self, p, target, sample_weight=None):
        owner = type(self).__name__
        with netcal_quietly(self._netcal_submodule, owner) as netcal_module:
            model = self._make_netcal(netcal_module)
            # copies: netcal may write to its inputs
            model.fit(np.array(p), target.astype(np.int64))
        return model

    def _predict_column(self, model, p):
        with netcal_quietly(self._netcal_submodule, type(self).__name__):
            return np.asarray(model.transform(np.array(p)), dtype=np.float64)


class BBQCalibrator(_NetcalCalibrator):
    """Bayesian Binning into Quantiles (Naeini et al., 2015), via netcal.

    BBQ averages histogram-binning models with different numbers of bins,
    weighted by a Bayesian score. Multiclass problems are calibrated
    one-vs-rest and rows renormalised; a row whose columns all calibrate to 0
    becomes uniform.

    Parameters
    ----------
    score_function : {"BIC", "AIC"}, default="BIC"
        Score weighting the binning models (netcal's ``score_function``).
    equal_intervals : bool, default=True
        Equal-width bins if True, equal-frequency bins otherwise.

    Attributes
    ----------
    calibrators_ : list of netcal.binning.BBQ
        The fitted binary netcal models: one for the positive class of a
        binary problem, one per class otherwise.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of probability columns seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import BBQCalibrator
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p1**2).astype(int)
    >>> bbq = BBQCalibrator().fit(p1, y)
    >>> bbq.predict_proba(p1[:3]).shape
    (3, 2)
    """

    def __init__(self, score_function="BIC", equal_intervals=True):
        self.score_function = score_function
        self.equal_intervals = equal_intervals

    def _check_params(self):
        check_option(self.score_function, "score_function", ("BIC", "AIC"))
        check_bool(self.equal_intervals, "equal_intervals")

    _netcal_submodule = "binning"

    def _make_netcal(self, binning):
        return binning.BBQ(
            score_function=self.score_function, equal_intervals=self.equal_intervals
        )


class ENIRCalibrator(_NetcalCalibrator):
    """Ensemble of Near-Isotonic Regressions (Naeini & Cooper, 2016), via netcal.

    Multiclass problems are calibrated one-vs-rest and rows renormalised; a
    row whose columns all calibrate to 0 becomes uniform.

    Parameters
    ----------
    score_function : {"BIC", "AIC"}, default="BIC"
        Score weighting the near-isotonic models (netcal's ``score_function``).
    quick_init : bool, default=True
        The ``quick_init`` of netcal: start the regularisation path from a
        pre-binned solution, much faster on large calibration sets.

    Attributes
    ----------
    calibrators_ : list of netcal.binning.ENIR
        The fitted binary netcal models: one for the positive class of a
        binary problem, one per class otherwise.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of probability columns seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import ENIRCalibrator
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p1**2).astype(int)
    >>> enir = ENIRCalibrator().fit(p1, y)
    >>> enir.predict_proba(p1[:3]).shape
    (3, 2)
    """

    def __init__(self, score_function="BIC", quick_init=True):
        self.score_function = score_function
        self.quick_init = quick_init

    def _check_params(self):
        check_option(self.score_function, "score_function", ("BIC", "AIC"))
        check_bool(self.quick_init, "quick_init")

    _netcal_submodule = "binning"

    def _make_netcal(self, binning):
        return binning.ENIR(
            score_function=self.score_function, quick_init=self.quick_init
        )


class BetaCalibrator(_NetcalCalibrator):
    """Beta calibration (Kull et al., 2017), via netcal's maximum likelihood fit.

    Binary: ``sigmoid(c + a log p - b log(1 - p))``, Kull et al.'s binary
    map. Multiclass problems are calibrated one-vs-rest and renormalised
    (as Kull et al. do), not with netcal's multinomial extension, whose
    numerical-gradient fit takes seconds on a few hundred samples.

    Attributes
    ----------
    calibrators_ : list of netcal.scaling.BetaCalibration
        The fitted binary netcal models: one for the positive class of a
        binary problem, one per class otherwise.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of probability columns seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import BetaCalibrator
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p1**2).astype(int)
    >>> beta = BetaCalibrator().fit(p1, y)
    >>> bool(beta.predict_proba([0.5])[0, 1] < 0.5)
    True
    """

    def __init__(self):
        pass

    def _check_params(self):
        pass

    _netcal_submodule = "scaling"

    def _make_netcal(self, scaling):
        return scaling.BetaCalibration(method="mle")
