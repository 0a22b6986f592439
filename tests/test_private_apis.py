"""The private APIs of scikit-learn and skorch that sklcalib relies on.

Each is used only where there is no public way (see the comment at the call
site); these tests fail loudly, with the reason, when an upgrade changes one.
"""

import inspect
from numbers import Real

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, make_scorer


def test_sklearn_scorer_class_and_score_hook():
    from sklearn.metrics._scorer import _Scorer

    from sklcalib.metrics import ece_scorer

    built = make_scorer(
        log_loss, greater_is_better=False, response_method="predict_proba"
    )
    assert type(built) is _Scorer, "make_scorer no longer builds _Scorer"
    for attr in ("_score_func", "_sign", "_kwargs", "_response_method"):
        assert hasattr(built, attr), f"_Scorer lost {attr}"
    params = list(inspect.signature(_Scorer._score).parameters)
    assert params[:5] == ["self", "method_caller", "estimator", "X", "y_true"], (
        "_Scorer._score changed its signature; sklcalib's scorers override it"
    )
    assert isinstance(ece_scorer, _Scorer)
    X, y = make_classification(
        n_samples=80, n_classes=3, n_informative=3, random_state=0
    )
    model = LogisticRegression(max_iter=500).fit(X, y)
    # the override runs: labels=classes_ lets a split lacking a class score
    missing = y != 2
    assert -1.0 <= ece_scorer(model, X[missing], y[missing]) <= 0.0


def test_skorch_partial_fit_routing_method():
    pytest.importorskip("skorch", reason="NetClassifier is the optional torch extra")
    from skorch import NeuralNet

    source = inspect.getsource(NeuralNet.partial_fit)
    assert "_routing_method" in source, (
        "skorch's NeuralNet.partial_fit no longer reads _routing_method, which "
        "NetClassifier.fit passes (skorch >= 1.4)"
    )
    assert "_routing_method" in inspect.signature(NeuralNet.fit_loop).parameters


def test_sklearn_safe_indexing():
    from sklearn.utils import _safe_indexing

    assert _safe_indexing([[1], [2], [3]], [2, 0]) == [[3], [1]]


def test_sklearn_parameter_validation():
    # sklcalib._utils._param_validation: scikit-learn's declared constraints,
    # their checker, its error class and its wording
    from sklearn.utils._param_validation import (
        Interval,
        InvalidParameterError,
        StrOptions,
        validate_parameter_constraints,
    )

    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)
    constraints = {
        "C": [Interval(Real, 0, np.inf, closed="neither")],
        "runout": [StrOptions({"natural"})],
    }
    with pytest.raises(InvalidParameterError) as info:
        validate_parameter_constraints(constraints, {"C": -1, "runout": "natural"}, "X")
    assert str(info.value) == (
        "The 'C' parameter of X must be a float in the range (0.0, inf). "
        "Got -1 instead."
    )
    with pytest.raises(InvalidParameterError, match="must be a str among"):
        validate_parameter_constraints(constraints, {"C": 1.0, "runout": "x"}, "X")


def test_netcal_near_isotonic_path():
    # ENIRCalibrator ends netcal's near-isotonic path where a model has one
    # group (netcal raises there instead): it replaces the class's
    # get_next_model for the duration of a fit and reads the groups through
    # get_degrees_of_freedom
    pytest.importorskip("netcal", reason="the netcal adapters are an extra")
    from netcal.binning import ENIR, NearIsotonicRegression

    assert "get_next_model" in NearIsotonicRegression.__dict__
    first = NearIsotonicRegression(quick_init=True)
    first.fit(np.array([0.1, 0.4, 0.6, 0.9]), np.array([1, 0, 1, 0]))
    assert first.get_degrees_of_freedom() >= 1
    assert "NearIsotonicRegression(" in inspect.getsource(ENIR.fit)
