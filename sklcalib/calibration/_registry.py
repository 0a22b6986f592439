"""The calibrator registry: one name per calibrator class, and what each takes.

Every place that takes a calibrator by name reads this table: the selection
(:func:`select_calibrator`, :class:`CalibratorSearchCV`, its default
candidates and its size rule), ``CalibratedClassifier(calibrator="name")``,
``sklcalib report --calibrate`` and the tabular benchmark. A calibrator joins
all of them with one entry here.

What a class already declares is read from the class, never repeated: the
scores it takes (``_input``: logits or probabilities) and whether it is for
binary problems only (the ``multi_class`` classifier tag that
``BinaryOnlyMixin`` turns off).
"""

import warnings
from dataclasses import dataclass
from types import MappingProxyType

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._optional import is_installed
from sklcalib._utils._validation import _outside_stacklevel

from ._base import LOGITS
from ._beta_native import BetaScaler
from ._binning import HistogramBinningCalibrator, IsotonicCalibrator
from ._dirichlet import DirichletCalibrator
from ._ensemble_temperature import EnsembleTemperatureScaler
from ._netcal import BBQCalibrator, BetaCalibrator, ENIRCalibrator
from ._quadratic import QuadraticScaler
from ._scaling import MatrixScaler, PlattScaler, VectorScaler
from ._scaling_binning import ScalingBinningCalibrator
from ._sms import SMSCalibrator, SVSCalibrator
from ._spline import SplineCalibrator
from ._temperature import TemperatureScaler
from ._venn_abers import VennAbersCalibrator

#: no calibration: the estimator's own probabilities
PASSTHROUGH = "passthrough"
#: the cross-validated choice among "passthrough" and the candidates
AUTO = "auto"

# non-parametric calibrators (isotonic, Venn–ABERS, BBQ, ENIR) count as this
# many parameters per one-vs-rest column in the size rule: an isotonic fit on
# a few hundred rows has tens of steps
NONPARAMETRIC = 20


@dataclass(frozen=True)
class CalibratorSpec:
    """One entry of :data:`CALIBRATORS`.

    Parameters
    ----------
    name : str
        The calibrator's name, the key of :data:`CALIBRATORS`.
    estimator : type
        Its class in :mod:`sklcalib.calibration`.
    n_parameters : callable
        ``n_parameters(n_classes)``: the parameters per class that the size
        rule of :func:`select_calibrator` and :class:`CalibrationWarning`
        counts (non-parametric methods count 20).
    candidate : {None, "any", "multiclass"}
        Among the default candidates of :func:`select_calibrator` and
        ``calibrator="auto"``: for every problem it applies to, for more than
        two classes only (vector scaling, SVS, SMS and Dirichlet duplicate
        Platt scaling on two), or not (None).
    requires : str or None
        The optional package it needs (installed with the extra of that
        name), None for the core install.
    description : str
        What it does, in a few words.

    Examples
    --------
    >>> from sklcalib.calibration import CALIBRATORS
    >>> spec = CALIBRATORS["platt"]
    >>> spec.estimator.__name__, spec.input, spec.binary_only
    ('PlattScaler', 'logits', True)
    >>> spec.n_parameters(2)
    2
    """

    name: str
    estimator: type
    n_parameters: object
    candidate: str | None = None
    requires: str | None = None
    description: str = ""

    @property
    def input(self):
        """The scores it is fitted on: ``"logits"`` or ``"probabilities"``.

        The ``"logits"`` of a binary-only calibrator are the one
        positive-class margin.
        """
        return self.estimator._input

    @property
    def binary_only(self):
        """Whether it calibrates two classes only."""
        return not self.estimator().__sklearn_tags__().classifier_tags.multi_class

    @property
    def available(self):
        """Whether this installation has the optional package it needs."""
        return self.requires is None or is_installed(self.requires)

    @fill_doc
    def is_candidate(self, n_classes):
        """Tell whether it is a default candidate for ``n_classes`` classes.

        %(n_classes_parameter)s

        Returns
        -------
        candidate : bool
            True when ``calibrator="auto"`` tries it on such a problem.
        """
        if self.candidate is None or not self.applies_to(n_classes):
            return False
        return self.candidate == "any" or n_classes > 2

    @fill_doc
    def applies_to(self, n_classes):
        """Tell whether it calibrates a problem with ``n_classes`` classes.

        %(n_classes_parameter)s

        Returns
        -------
        applies : bool
            False for a binary-only calibrator and more than two classes.
        """
        return n_classes == 2 or not self.binary_only


def _spec(name, estimator, n_parameters, **kwargs):
    return name, CalibratorSpec(name, estimator, n_parameters, **kwargs)


def _constant(m):
    return lambda n_classes: m


def _per_class_plus_bias(n_classes):
    return n_classes + 1


#: name -> :class:`CalibratorSpec`, in the order the default candidates are
#: tried (the order breaks ties of the size rule's parameter counts)
CALIBRATORS = MappingProxyType(
    dict(
        [
            _spec(
                "temperature",
                TemperatureScaler,
                _constant(1),
                candidate="any",
                description="softmax(z / T), one temperature",
            ),
            _spec(
                "platt",
                PlattScaler,
                _constant(2),
                candidate="any",
                description="sigmoid(a s + b) of the binary margin",
            ),
            _spec(
                "quadratic",
                QuadraticScaler,
                _constant(3),
                candidate="any",
                description="sigmoid(a + b s + c s^2), regularised",
            ),
            _spec(
                "beta",
                BetaScaler,
                _constant(3),
                candidate="any",
                description="beta calibration (Kull et al.), native",
            ),
            _spec(
                "vector",
                VectorScaler,
                _constant(2),
                candidate="multiclass",
                description="softmax(w * z + b)",
            ),
            _spec(
                "svs",
                SVSCalibrator,
                _constant(2),
                candidate="multiclass",
                description="structured vector scaling, regularised",
            ),
            _spec(
                "sms",
                SMSCalibrator,
                _per_class_plus_bias,
                candidate="multiclass",
                description="structured matrix scaling, regularised",
            ),
            _spec(
                "dirichlet",
                DirichletCalibrator,
                _per_class_plus_bias,
                candidate="multiclass",
                description="softmax(W log p + b), ODIR-regularised",
            ),
            _spec(
                "spline",
                SplineCalibrator,
                _constant(10),
                candidate="any",
                description="spline of the cumulative gap, one-vs-rest",
            ),
            _spec(
                "isotonic",
                IsotonicCalibrator,
                _constant(NONPARAMETRIC),
                candidate="any",
                description="isotonic regression, one-vs-rest",
            ),
            _spec(
                "venn_abers",
                VennAbersCalibrator,
                _constant(NONPARAMETRIC),
                candidate="any",
                description="inductive Venn-ABERS, one-vs-rest",
            ),
            _spec(
                "matrix",
                MatrixScaler,
                _per_class_plus_bias,
                description="softmax(W z + b)",
            ),
            _spec(
                "ets",
                EnsembleTemperatureScaler,
                _constant(3),
                description="ensemble temperature scaling",
            ),
            _spec(
                "histogram",
                HistogramBinningCalibrator,
                _constant(15),
                description="histogram binning, one-vs-rest",
            ),
            _spec(
                "scaling_binning",
                ScalingBinningCalibrator,
                _constant(10),
                description="Platt, then equal-mass bins",
            ),
            _spec(
                "bbq",
                BBQCalibrator,
                _constant(NONPARAMETRIC),
                requires="netcal",
                description="netcal's BBQ, one-vs-rest",
            ),
            _spec(
                "enir",
                ENIRCalibrator,
                _constant(NONPARAMETRIC),
                requires="netcal",
                description="netcal's ENIR, one-vs-rest",
            ),
            _spec(
                "beta_netcal",
                BetaCalibrator,
                _constant(3),
                requires="netcal",
                description="netcal's beta calibration, one-vs-rest",
            ),
        ]
    )
)

#: other names a user may type -> the registry name: scikit-learn's
#: ``CalibratedClassifierCV(method="sigmoid")`` is Platt scaling
ALIASES = MappingProxyType({"sigmoid": "platt"})

#: names of an earlier version -> the registry name (a FutureWarning says so):
#: BetaScaler was "beta_native" while "beta" named netcal's calibrator in the
#: report and benchmark commands
DEPRECATED_NAMES = MappingProxyType({"beta_native": "beta"})


def canonical_name(name, argument="calibrator", special=()):
    """The registry name for ``name`` (an alias resolved, a deprecated name
    resolved with a FutureWarning); ValueError naming ``argument`` (and the
    ``special`` names the caller also takes) for an unknown name."""
    if name in CALIBRATORS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    if name in DEPRECATED_NAMES:
        new = DEPRECATED_NAMES[name]
        warnings.warn(
            f"the calibrator name {name!r} is deprecated and will be removed in a "
            f"future version; use {new!r} ({CALIBRATORS[new].estimator.__name__}).",
            FutureWarning,
            stacklevel=_outside_stacklevel(),
        )
        return new
    names = [*special, *CALIBRATORS]
    raise ValueError(
        f"{argument}: unknown name {name!r}; valid names are "
        f"{', '.join(names)} (aliases: {', '.join(ALIASES)})."
    )


@fill_doc
def calibrator_spec(name):
    """The :data:`CALIBRATORS` entry for a name or an alias.

    Parameters
    ----------
    name : str
        A name of :data:`CALIBRATORS` or an alias (``"sigmoid"`` is
        ``"platt"``, as in scikit-learn's ``CalibratedClassifierCV``); a
        name of an earlier version (``"beta_native"``) is resolved with a
        FutureWarning.

    Returns
    -------
    spec : CalibratorSpec
        Its entry (``spec.name`` is the registry's name).

    %(unknown_name_raises)s

    Examples
    --------
    >>> from sklcalib.calibration import calibrator_spec
    >>> calibrator_spec("sigmoid").name
    'platt'
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a calibrator name; got {name!r}.")
    return CALIBRATORS[canonical_name(name, "name")]


def available_calibrators(n_classes=None):
    """List the names of :data:`CALIBRATORS` that this installation can fit.

    Parameters
    ----------
    n_classes : int, default=None
        Only those that calibrate a problem with this many classes (binary-only
        calibrators are left out for more than two); None: all.

    Returns
    -------
    names : list of str
        In the order of :data:`CALIBRATORS`; a name whose optional package
        (netcal) is missing is left out.

    Examples
    --------
    >>> from sklcalib.calibration import available_calibrators
    >>> available_calibrators()[:3]
    ['temperature', 'platt', 'quadratic']
    >>> "platt" in available_calibrators(n_classes=3)
    False
    """
    return [
        name
        for name, spec in CALIBRATORS.items()
        if spec.available and (n_classes is None or spec.applies_to(n_classes))
    ]


@fill_doc
def get_calibrator(name, **params):
    """A fresh calibrator for a name of :data:`CALIBRATORS`.

    Parameters
    ----------
    name : str
        A name of :data:`CALIBRATORS` or an alias (``"sigmoid"`` is
        ``"platt"``, as in scikit-learn's ``CalibratedClassifierCV``).
    **params
        Parameters of the calibrator's constructor.

    Returns
    -------
    calibrator : estimator
        Unfitted.

    %(unknown_name_raises)s

    Examples
    --------
    >>> from sklcalib.calibration import get_calibrator
    >>> get_calibrator("isotonic")
    IsotonicCalibrator()
    >>> get_calibrator("sigmoid")
    PlattScaler()
    """
    return calibrator_spec(name).estimator(**params)


def spec_of(calibrator):
    """The registry entry of a calibrator instance's class, or None."""
    for spec in CALIBRATORS.values():
        if type(calibrator) is spec.estimator:
            return spec
    return None


def needs_logits(calibrator):
    """Whether a calibrator instance (or registry entry) is fitted on logits;
    objects that do not say are taken as logit calibrators."""
    return getattr(calibrator, "_input", getattr(calibrator, "input", LOGITS)) == LOGITS
