"""Clone-safe scikit-learn adapters over netcal's BBQ, ENIR and beta calibration.

netcal (and the torch and pyro it pulls in) is imported inside ``fit`` only:
``import sklcalib.calibration`` stays light, and netcal stays optional
(``pip install "sklcalib[netcal]"``). The constructors store parameters only;
the netcal object is created in ``fit`` as ``calibrator_``, so ``clone``,
``get_params`` and grid searches see ordinary scikit-learn parameters.
"""

import contextlib
import importlib
import io

import numpy as np

from ._base import PROBABILITIES, BaseCalibrator, check_params, renormalise


def import_netcal(submodule, owner):
    """``netcal.<submodule>``, or an ImportError that names the extra."""
    try:
        return importlib.import_module(f"netcal.{submodule}")
    except ImportError as exc:
        raise ImportError(
            f"{owner} needs the optional dependency netcal; install it with "
            'pip install "sklcalib[netcal]"'
        ) from exc


@contextlib.contextmanager
def _quiet():
    # netcal prints warnings and progress bars (tqdm) straight to
    # stdout/stderr; a calibrator inside a grid search should not.
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        yield


class _NetcalCalibrator(BaseCalibrator):
    """Binary problems get the positive-class column as netcal's 1-D input."""

    _input = PROBABILITIES
    # netcal's own multiclass mode is one-vs-rest for BBQ and ENIR: we ask it
    # for independent (unnormalised) columns and renormalise ourselves, so
    # that an all-zero row becomes uniform instead of 0/0.
    _netcal_one_vs_rest = True

    def _netcal_input(self, scores):
        if len(self.classes_) == 2:
            return np.array(scores[:, -1])  # a copy: netcal may write to it
        return np.array(scores)

    def _fit(self, scores, y_idx):
        multiclass = len(self.classes_) > 2
        self.calibrator_ = self._make_netcal(
            independent_probabilities=multiclass and self._netcal_one_vs_rest
        )
        with _quiet():
            self.calibrator_.fit(self._netcal_input(scores), y_idx.astype(np.int64))

    def _predict_proba(self, scores):
        with _quiet():
            calibrated = self.calibrator_.transform(self._netcal_input(scores))
        calibrated = np.clip(np.asarray(calibrated, dtype=np.float64), 0.0, 1.0)
        if len(self.classes_) == 2:
            calibrated = calibrated.reshape(-1)
            return np.column_stack([1.0 - calibrated, calibrated])
        return renormalise(calibrated)


class BBQCalibrator(_NetcalCalibrator):
    """Bayesian Binning into Quantiles (Naeini et al., 2015), via netcal.

    BBQ averages histogram-binning models with different numbers of bins,
    weighted by a Bayesian score. Multiclass problems are calibrated
    one-vs-rest (netcal's scheme) and rows renormalised; a row whose columns
    all calibrate to 0 becomes uniform.

    Parameters
    ----------
    score_function : {"BIC", "AIC"}, default="BIC"
        Score weighting the binning models (netcal's ``score_function``).
    equal_intervals : bool, default=True
        Equal-width bins if True, equal-frequency bins otherwise.

    Attributes
    ----------
    calibrator_ : netcal.binning.BBQ
        The fitted netcal model.
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
        check_params("score_function", self.score_function, choices={"BIC", "AIC"})
        if not isinstance(self.equal_intervals, bool):
            raise ValueError(
                f"equal_intervals must be a bool; got {self.equal_intervals!r}."
            )

    def _make_netcal(self, independent_probabilities):
        binning = import_netcal("binning", type(self).__name__)
        return binning.BBQ(
            score_function=self.score_function,
            equal_intervals=self.equal_intervals,
            independent_probabilities=independent_probabilities,
        )


class ENIRCalibrator(_NetcalCalibrator):
    """Ensemble of Near-Isotonic Regressions (Naeini & Cooper, 2016), via netcal.

    Multiclass problems are calibrated one-vs-rest (netcal's scheme) and rows
    renormalised; a row whose columns all calibrate to 0 becomes uniform.

    Parameters
    ----------
    score_function : {"BIC", "AIC"}, default="BIC"
        Score weighting the near-isotonic models (netcal's ``score_function``).
    quick_init : bool, default=True
        netcal's ``quick_init``: start the regularisation path from a
        pre-binned solution, much faster on large calibration sets.

    Attributes
    ----------
    calibrator_ : netcal.binning.ENIR
        The fitted netcal model.
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
        check_params("score_function", self.score_function, choices={"BIC", "AIC"})
        if not isinstance(self.quick_init, bool):
            raise ValueError(f"quick_init must be a bool; got {self.quick_init!r}.")

    def _make_netcal(self, independent_probabilities):
        binning = import_netcal("binning", type(self).__name__)
        return binning.ENIR(
            score_function=self.score_function,
            quick_init=self.quick_init,
            independent_probabilities=independent_probabilities,
        )


class BetaCalibrator(_NetcalCalibrator):
    """Beta calibration (Kull et al., 2017), via netcal's maximum likelihood fit.

    Binary: ``sigmoid(c + a log p - b log(1 - p))``. Multiclass problems use
    netcal's multinomial extension (one joint logistic model on the log
    probabilities), not one-vs-rest.

    Attributes
    ----------
    calibrator_ : netcal.scaling.BetaCalibration
        The fitted netcal model.
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

    _netcal_one_vs_rest = False

    def __init__(self):
        pass

    def _check_params(self):
        pass

    def _make_netcal(self, independent_probabilities):
        scaling = import_netcal("scaling", type(self).__name__)
        return scaling.BetaCalibration(
            method="mle", independent_probabilities=independent_probabilities
        )
