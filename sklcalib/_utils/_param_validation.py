"""Declared parameter constraints, checked with scikit-learn's own checker.

An estimator declares its constructor parameters' constraints once, in a
class attribute ``_parameter_constraints`` (parameter name -> list of
constraints, any of which may hold), and calls :func:`validate_params` at the
start of ``fit``. The constraints and the check are scikit-learn's
(``sklearn.utils._param_validation``), so a bad parameter gets exactly
scikit-learn's message ("The 'C' parameter of PlattScaler must be a float in
the range (0.0, inf). Got -1 instead.") and its ``InvalidParameterError``,
which is both a ``ValueError`` and a ``TypeError``: code that catches
scikit-learn's error catches sklcalib's.

That module is private in scikit-learn; it is the one its own estimators and
third-party ones built on its conventions use, and this is its only entry
point in sklcalib: ``tests/test_private_apis.py`` pins the names, the error
class and the wording, so an upgrade that changes them fails there first.

Constraints: a type (``numbers.Real``, ``dict``), ``Interval(type, left,
right, closed=...)``, ``StrOptions({...})``, ``Options(type, {...})``,
``"array-like"``, ``"boolean"``, ``None``. A real interval with ``right=None``
accepts ``inf``; ``right=np.inf`` with ``closed="left"`` or ``"neither"``
refuses it. One difference from scikit-learn: a bool is refused for a
parameter that declares no ``"boolean"`` (Python counts ``True`` as the
integer 1, and ``max_iter=True`` is a mistake, not one iteration), with the
same message as any other refused value.
"""

import numpy as np
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = [
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "StrOptions",
    "validate_params",
]


class _Refused:
    """A value that satisfies no constraint, shown as the value it stands for."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


def _declares_booleans(constraints):
    return any(c == "boolean" or c is bool for c in constraints)


def validate_params(estimator):
    """Check ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``)
    naming the parameter, the estimator and what it accepts.
    """
    constraints = estimator._parameter_constraints
    params = estimator.get_params(deep=False)
    for name, value in params.items():
        if (
            isinstance(value, bool | np.bool_)
            and name in constraints
            and not _declares_booleans(constraints[name])
        ):
            params[name] = _Refused(value)
    validate_parameter_constraints(
        constraints, params, caller_name=type(estimator).__name__
    )
