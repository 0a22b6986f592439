"""The private APIs of scikit-learn, skorch and netcal that sklcalib relies on.

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


# ---------------------------------------------------------------------------
# skorch: every private name NetClassifier and its loop (sklcalib/_net_loop.py)
# rely on, one test each, and a guard that the list is complete
# ---------------------------------------------------------------------------


def _skorch_net():
    pytest.importorskip("skorch", reason="NetClassifier is the optional torch extra")
    import torch
    from skorch import NeuralNet

    return NeuralNet(
        torch.nn.Linear(2, 2), criterion=torch.nn.MSELoss, max_epochs=1
    ).initialize()


def _private_name_checks():
    """name -> a check that raises AssertionError saying what changed."""

    def registries(attribute):
        def check():
            net = _skorch_net()
            names = getattr(net, attribute, None)
            assert isinstance(names, list), f"NeuralNet.{attribute} is gone"
            for name in names:
                assert hasattr(net, name + "_"), (
                    f"NeuralNet.{attribute} no longer names the initialized "
                    f"components (no {name}_)"
                )

        return check

    def signature(owner, method, params):
        def check():
            from skorch import NeuralNet
            from skorch.callbacks import PassthroughScoring
            from skorch.dataset import ValidSplit

            cls = {
                "NeuralNet": NeuralNet,
                "PassthroughScoring": PassthroughScoring,
                "ValidSplit": ValidSplit,
            }[owner]
            function = getattr(cls, method, None)
            assert callable(function), f"{owner}.{method} is gone"
            got = list(inspect.signature(function).parameters)[: len(params)]
            assert got == params, f"{owner}.{method}'s signature changed: {got}"

        return check

    def set_training():
        signature("NeuralNet", "_set_training", ["self", "training"])()
        net = _skorch_net()
        net._set_training(False)
        assert not net.module_.training, "_set_training(False) left training mode"
        net._set_training(True)
        assert net.module_.training

    def default_callbacks():
        from skorch import NeuralNet

        prop = NeuralNet.__dict__.get("_default_callbacks")
        assert isinstance(prop, property), "NeuralNet._default_callbacks changed"
        names = [name for name, _ in _skorch_net()._default_callbacks]
        assert {"epoch_timer", "train_loss", "valid_loss", "print_log"} <= set(names), (
            f"skorch's default callbacks changed: {names}"
        )

    def routing_method():
        test_skorch_partial_fit_routing_method()

    def params_to_validate():
        net = _skorch_net()
        assert hasattr(net, "_params_to_validate"), (
            "NeuralNet._params_to_validate is gone: NetClassifier's "
            "_get_param_names filter may be unnecessary"
        )

    def is_best_score():
        signature("PassthroughScoring", "_is_best_score", ["self", "current_score"])()
        from skorch.callbacks import PassthroughScoring

        scoring = PassthroughScoring(name="valid_loss")
        scoring.best_score_ = 1.0
        assert scoring._is_best_score(0.5) is True
        assert scoring._is_best_score(2.0) is False

    def is_float():
        signature("ValidSplit", "_is_float", ["self", "x"])()
        from skorch.dataset import ValidSplit

        split = ValidSplit(0.2)
        assert split._is_float(0.2) and not split._is_float(5)

    return {
        "NeuralNet._modules": registries("_modules"),
        "NeuralNet._criteria": registries("_criteria"),
        "NeuralNet._optimizers": registries("_optimizers"),
        "NeuralNet._set_training": set_training,
        "NeuralNet._zero_grad_optimizer": signature(
            "NeuralNet", "_zero_grad_optimizer", ["self", "set_to_none"]
        ),
        "NeuralNet._step_optimizer": signature(
            "NeuralNet", "_step_optimizer", ["self", "step_fn"]
        ),
        "NeuralNet._default_callbacks": default_callbacks,
        "NeuralNet.partial_fit(_routing_method=)": routing_method,
        "NeuralNet._params_to_validate": params_to_validate,
        "PassthroughScoring._is_best_score": is_best_score,
        "ValidSplit._is_float": is_float,
    }


def _listed_names():
    pytest.importorskip("skorch", reason="NetClassifier is the optional torch extra")
    from sklcalib._net_loop import SKORCH_PRIVATE_NAMES

    return SKORCH_PRIVATE_NAMES


@pytest.mark.parametrize(
    "name",
    [
        "NeuralNet._modules",
        "NeuralNet._criteria",
        "NeuralNet._optimizers",
        "NeuralNet._set_training",
        "NeuralNet._zero_grad_optimizer",
        "NeuralNet._step_optimizer",
        "NeuralNet._default_callbacks",
        "NeuralNet.partial_fit(_routing_method=)",
        "NeuralNet._params_to_validate",
        "PassthroughScoring._is_best_score",
        "ValidSplit._is_float",
    ],
)
def test_skorch_private_name(name):
    assert name in _listed_names()
    _private_name_checks()[name]()


def test_every_private_skorch_name_used_is_listed():
    # the private attributes sklcalib's net modules read on skorch's objects:
    # `self._x` / `split._x` ... that skorch (not sklcalib) defines
    pytest.importorskip("skorch", reason="NetClassifier is the optional torch extra")
    import ast
    from pathlib import Path

    from skorch import NeuralNet
    from skorch.callbacks import PassthroughScoring
    from skorch.dataset import ValidSplit

    import sklcalib

    root = Path(sklcalib.__file__).parent
    ours = set()
    used = set()
    for module in ("net.py", "_net_loop.py"):
        tree = ast.parse((root / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                ours.add(node.name)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                if not node.attr.startswith("__"):
                    used.add(node.attr)
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = (
                    node.targets if isinstance(node, ast.Assign) else [node.target]
                )
                for target in targets:
                    if isinstance(target, ast.Attribute):
                        ours.add(target.attr)
            if isinstance(node, ast.keyword) and node.arg and node.arg.startswith("_"):
                used.add(node.arg)
    net = _skorch_net()
    owners = {
        "NeuralNet": (NeuralNet, net),
        "PassthroughScoring": (PassthroughScoring,),
        "ValidSplit": (ValidSplit,),
    }
    skorchs = {
        f"{owner}.{name}"
        for name in used - ours
        for owner, objects in owners.items()
        if any(hasattr(obj, name) for obj in objects)
    }
    # "NeuralNet.partial_fit(_routing_method=)": a keyword of partial_fit
    listed = {name.split("(")[0] for name in _listed_names()}
    listed.add("NeuralNet._routing_method")
    assert skorchs <= listed, (
        f"private skorch names used but not listed: {sorted(skorchs - listed)}"
    )
