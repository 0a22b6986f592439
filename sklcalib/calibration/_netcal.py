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

netcal's models take no sample weights. Every sklcalib calibrator takes
frequency weights, a weight of k being the row repeated k times, so the
adapters honour integer weights exactly that way (the rows repeated before
netcal sees them) and refuse fractional ones with a ValueError.
"""

import contextlib
import functools
import sys
import threading
import warnings
from typing import ClassVar

import numpy as np
from sklearn.isotonic import IsotonicRegression

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._optional import import_optional
from sklcalib._utils._param_validation import InvalidParameterError, StrOptions

from ._one_vs_rest import OneVsRestCalibrator

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


#: integer sample weights are honoured by repeating rows up to this many rows
MAX_REPEATED_ROWS = 10**7


def repetitions(sample_weight, owner):
    """The integer counts of a frequency ``sample_weight``, or a ValueError.

    netcal's models take no weights; an integer weight is exactly the row
    repeated, so integer weights are honoured by repeating rows. Other
    weights have no such reading and are refused, as are weights that would
    repeat the rows into more than :data:`MAX_REPEATED_ROWS` rows.
    """
    if not np.all(sample_weight == np.round(sample_weight)):
        raise ValueError(
            f"{owner} takes integer sample_weight only: netcal's model has no "
            "sample weights, so a weight of k is honoured by repeating the row "
            "k times, which a fractional weight cannot be. Round the weights, "
            "or use a calibrator that takes real weights (IsotonicCalibrator, "
            "SplineCalibrator, BetaScaler)."
        )
    total = float(sample_weight.sum())
    if total > MAX_REPEATED_ROWS:
        raise ValueError(
            f"{owner}: sample_weight sums to {total:.4g}, and netcal has no "
            "sample weights, so honouring them would repeat the rows into that "
            f"many rows (at most {MAX_REPEATED_ROWS:.0e}). Divide the weights by "
            "a common factor, or use a calibrator that takes real weights."
        )
    return sample_weight.astype(np.intp)


class _ConstantColumn:
    """The calibrated column of a class that is always (or never) the label:
    netcal's models are not defined there (ENIR fails, BBQ and beta warn)."""

    def __init__(self, value):
        self.value = float(value)

    def transform(self, p):
        return np.full(len(p), self.value)


class _IsotonicColumn:
    """ENIR's column where netcal's near-isotonic path has a single model:
    the isotonic regression of the column (scikit-learn's)."""

    def __init__(self, p, target):
        self.isotonic = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)
        self.isotonic.fit(p, target)

    def transform(self, p):
        return self.isotonic.predict(p)


@contextlib.contextmanager
def _path_end_guard(binning):
    """End netcal's near-isotonic path where every score is in one group.

    netcal's ``NearIsotonicRegression.get_next_model`` returns None at the
    end of the regularisation path, except when the last model has a single
    group: it then takes the minimum of no collision times and raises
    "zero-size array to reduction operation minimum". While the block runs
    (under the netcal lock, like :func:`netcal_quietly`'s substitutions), a
    model with one group ends the path, as netcal means it to.
    """
    nir = binning.NearIsotonicRegression
    original = nir.__dict__["get_next_model"]

    def get_next_model(self):
        if self.get_degrees_of_freedom() <= 1:
            return None
        return original(self)

    nir.get_next_model = get_next_model
    try:
        yield
    finally:
        nir.get_next_model = original


class _NetcalCalibrator(OneVsRestCalibrator):
    """One binary netcal model per calibrated column.

    netcal's own multiclass modes are one-vs-rest for BBQ and ENIR too, but
    they divide by a row sum that can be 0 (NaN) and skip classes absent from
    the calibration data; the shared one-vs-rest code renormalises safely.
    netcal has no sample weights: integer weights are honoured by repeating
    rows (:func:`repetitions`), others refused.
    """

    def _fit(self, scores, y_idx, sample_weight=None):
        if sample_weight is not None:
            counts = repetitions(sample_weight, type(self).__name__)
            scores = np.repeat(scores, counts, axis=0)
            y_idx = np.repeat(y_idx, counts)
        super()._fit(scores, y_idx)

    def _fit_column(self, p, target, sample_weight=None):
        if np.all(target == target[0]):  # zero-weight rows removed: may happen
            return _ConstantColumn(target[0])
        # one order for the same rows (netcal's fits depend on the order of
        # its rows through the order of its sums): by score, then label
        order = np.lexsort((target, p))
        p, target = p[order], target[order].astype(np.int64)
        with netcal_quietly(self._netcal_submodule, type(self).__name__) as module:
            return self._fit_netcal(module, p, target)

    def _fit_netcal(self, module, p, target):
        model = self._make_netcal(module)
        model.fit(p.copy(), target.copy())  # copies: netcal may write to them
        return model

    def _predict_column(self, model, p):
        with netcal_quietly(self._netcal_submodule, type(self).__name__):
            return np.asarray(model.transform(np.array(p)), dtype=np.float64)


@fill_doc
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
        Equal-width bins if True. False (equal-frequency bins) is refused at
        ``fit``: netcal 1.3 fits them but raises "currently not implemented"
        when predicting with them.

    Attributes
    ----------
    calibrators_ : list of netcal.binning.BBQ
    %(netcal_fitted_models)s

    %(netcal_notes)s

    Examples
    --------
    >>> from sklcalib.calibration import BBQCalibrator
    >>> from sklcalib.datasets import make_binary_scores
    >>> p1, y = make_binary_scores(truth=lambda p: p**2)  # over-confident
    >>> bbq = BBQCalibrator().fit(p1, y)
    >>> bbq.predict_proba(p1[:3]).shape
    (3, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        "score_function": [StrOptions({"BIC", "AIC"})],
        "equal_intervals": ["boolean"],
    }

    def __init__(self, score_function="BIC", equal_intervals=True):
        self.score_function = score_function
        self.equal_intervals = equal_intervals

    def _check_param_values(self):
        if not self.equal_intervals:
            raise InvalidParameterError(
                "The 'equal_intervals' parameter of BBQCalibrator must be True: "
                "netcal (1.3) fits equal-frequency bins but cannot predict with "
                "them ('currently not implemented'). Got False instead."
            )

    _netcal_submodule = "binning"

    def _make_netcal(self, binning):
        return binning.BBQ(
            score_function=self.score_function,
            equal_intervals=bool(self.equal_intervals),
        )


@fill_doc
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
    calibrators_ : list
        The fitted binary models: one for the positive class of a binary
        problem, one per class otherwise; each a ``netcal.binning.ENIR``, or
        the isotonic fit where ENIR has no model to average (see Notes).
    %(fitted_probability_inputs)s

    Notes
    -----
    %(netcal_weights_note)s

    netcal's ENIR averages the models of the near-isotonic regression path
    except its first (the fit to the training data itself). netcal 1.3
    fails in two places, which this adapter handles: where a path merges
    every score into one group (an uninformative or inverted column), its
    next-model step takes a minimum over nothing instead of ending the path,
    so the path is ended there; and where a column's labels are already in
    score order (scores that separate the class, a tiny calibration set),
    the path has only its first model and ENIR averages none, so the column
    gets the isotonic regression that path consists of (scikit-learn's
    ``IsotonicRegression``), the ensemble's limit there.

    Examples
    --------
    >>> from sklcalib.calibration import ENIRCalibrator
    >>> from sklcalib.datasets import make_binary_scores
    >>> p1, y = make_binary_scores(truth=lambda p: p**2)  # over-confident
    >>> enir = ENIRCalibrator().fit(p1, y)
    >>> enir.predict_proba(p1[:3]).shape
    (3, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        "score_function": [StrOptions({"BIC", "AIC"})],
        "quick_init": ["boolean"],
    }

    def __init__(self, score_function="BIC", quick_init=True):
        self.score_function = score_function
        self.quick_init = quick_init

    def _fit_netcal(self, binning, p, target):
        with _path_end_guard(binning):
            first = binning.NearIsotonicRegression(quick_init=bool(self.quick_init))
            first.fit(p.copy(), target.copy())
            if first.get_next_model() is None:
                # labels already in score order: the near-isotonic path is the
                # one isotonic fit, which ENIR discards before averaging (and
                # then fails on an empty average); that fit is its limit
                return _IsotonicColumn(p, target)
            return super()._fit_netcal(binning, p, target)

    _netcal_submodule = "binning"

    def _make_netcal(self, binning):
        return binning.ENIR(
            score_function=self.score_function, quick_init=bool(self.quick_init)
        )


@fill_doc
class BetaCalibrator(_NetcalCalibrator):
    """Beta calibration (Kull et al., 2017), via netcal's maximum likelihood fit.

    Binary: ``sigmoid(c + a log p - b log(1 - p))``, Kull et al.'s binary
    map. Multiclass problems are calibrated one-vs-rest and renormalised
    (as Kull et al. do), not with netcal's multinomial extension, whose
    numerical-gradient fit takes seconds on a few hundred samples.

    Attributes
    ----------
    calibrators_ : list of netcal.scaling.BetaCalibration
    %(netcal_fitted_models)s

    %(netcal_notes)s

    Examples
    --------
    >>> from sklcalib.calibration import BetaCalibrator
    >>> from sklcalib.datasets import make_binary_scores
    >>> p1, y = make_binary_scores(truth=lambda p: p**2)  # over-confident
    >>> beta = BetaCalibrator().fit(p1, y)
    >>> bool(beta.predict_proba([0.5])[0, 1] < 0.5)
    True
    """

    def __init__(self):
        pass

    _netcal_submodule = "scaling"

    def _make_netcal(self, scaling):
        return scaling.BetaCalibration(method="mle")
