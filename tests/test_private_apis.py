"""The private APIs of scikit-learn and skorch that sklcalib relies on.

Each is used only where there is no public way (see the comment at the call
site); these tests fail loudly, with the reason, when an upgrade changes one.
"""

import inspect

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
