"""The calibrator registry is the one table of calibrator names: the selection,
CalibratedClassifier, the report command and the benchmark all read it, and
what a class declares (its input, binary-only) is read from the class."""

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

import sklcalib.calibration as calibration
from sklcalib.benchmark import tabular
from sklcalib.calibration import (
    CALIBRATORS,
    BetaScaler,
    CalibratedClassifier,
    IsotonicCalibrator,
    PlattScaler,
    TemperatureScaler,
    available_calibrators,
    calibrator_spec,
    get_calibrator,
    select_calibrator,
)
from sklcalib.cli import report_command as cli_report

ROOT = Path(__file__).resolve().parents[1] / "sklcalib"


def test_every_entry_is_a_public_class_and_reads_what_it_declares():
    assert len(set(spec.estimator for spec in CALIBRATORS.values())) == len(
        CALIBRATORS
    )  # one name per class
    for name, spec in CALIBRATORS.items():
        assert spec.name == name
        assert getattr(calibration, spec.estimator.__name__) is spec.estimator
        assert spec.input == spec.estimator._input in ("logits", "probabilities")
        tags = spec.estimator().__sklearn_tags__()
        assert spec.binary_only is (not tags.classifier_tags.multi_class)
        assert spec.applies_to(2)
        assert spec.applies_to(3) is not spec.binary_only
        assert spec.n_parameters(3) > 0
    assert {n for n, s in CALIBRATORS.items() if s.binary_only} == {
        "platt",
        "quadratic",
        "beta",
    }
    assert {s.requires for s in CALIBRATORS.values()} == {None, "netcal"}
    # the default candidates: vector scaling, SVS, SMS and Dirichlet duplicate
    # Platt scaling on two classes
    binary = {n for n, s in CALIBRATORS.items() if s.is_candidate(2)}
    multi = {n for n, s in CALIBRATORS.items() if s.is_candidate(3)}
    assert binary == {
        "temperature", "platt", "quadratic", "beta", "spline", "isotonic",
        "venn_abers",
    }  # fmt: skip
    assert multi == {
        "temperature", "vector", "svs", "sms", "dirichlet", "spline", "isotonic",
        "venn_abers",
    }  # fmt: skip


def test_names_a_user_expects():
    assert CALIBRATORS["beta"].estimator is BetaScaler  # the native one
    assert CALIBRATORS["beta_netcal"].estimator is calibration.BetaCalibrator
    assert isinstance(get_calibrator("sigmoid"), PlattScaler)  # scikit-learn's
    assert isinstance(get_calibrator("isotonic"), IsotonicCalibrator)
    assert get_calibrator("temperature", objective="ece").objective == "ece"
    with pytest.warns(FutureWarning, match=r"'beta_native' is deprecated.*'beta'"):
        assert calibrator_spec("beta_native").estimator is BetaScaler
    with pytest.raises(ValueError, match=r"name: unknown name 'nope'.*temperature"):
        get_calibrator("nope")


def test_the_cli_the_benchmark_and_the_selection_read_the_registry():
    # the report command: every registry name this installation has, and auto
    assert cli_report.available_calibrators() == [*available_calibrators(), "auto"]
    # the benchmark: a selection of registry names, made by the registry
    assert set(tabular.CALIBRATORS) <= {*CALIBRATORS, "auto"}
    for name in tabular.available_calibrators():
        made = tabular.make_calibrator(name)
        if name != "auto":
            assert type(made) is CALIBRATORS[name].estimator
    # the selection: its default candidates are the registry's candidates
    rng = np.random.default_rng(0)
    for k in (2, 3):
        z = rng.normal(size=(600, k))
        y = (softmax(z, axis=1).cumsum(axis=1) > rng.random((600, 1))).argmax(axis=1)
        sel = select_calibrator(z, y, response="logits", cv=2)
        expected = [
            n for n, s in CALIBRATORS.items() if s.available and s.is_candidate(k)
        ]
        assert sel.cv_results_["candidate"] == ["passthrough", *expected]
        r = sel.cv_results_
        params = dict(zip(r["candidate"], r["n_parameters"], strict=True))
        for n in expected:
            assert params[n] == CALIBRATORS[n].n_parameters(k)


def _string_constants(path):
    """String constants of a module, except docstrings and the export lists
    (``__all__``, the top level's lazy-import table)."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("__all__", "_LAZY")
            for t in node.targets
        ):
            skip.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # a docstring
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
    }


def test_no_other_module_names_a_calibrator_class_by_string():
    # class look-ups by string (getattr(calibration, "TemperatureScaler"),
    # tables of class names) are how the old tables drifted from the classes
    # (a class may name itself in its own module's messages)
    home = {
        spec.estimator.__name__: spec.estimator.__module__
        for spec in CALIBRATORS.values()
    }
    offenders = {}
    for path in ROOT.rglob("*.py"):
        if path.name == "_registry.py":
            continue
        module = ".".join(("sklcalib", *path.relative_to(ROOT).with_suffix("").parts))
        names = {n for n, m in home.items() if m != module}
        found = names & _string_constants(path)
        if found:
            offenders[str(path.relative_to(ROOT))] = sorted(found)
    assert offenders == {}


def _logistic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ [1.5, -1.0, 0.5]))).astype(int)
    return X, y


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("sigmoid", PlattScaler),
        ("isotonic", IsotonicCalibrator),
        ("temperature", TemperatureScaler),
        ("beta", BetaScaler),
    ],
)
def test_calibrated_classifier_takes_names(name, cls):
    X, y = _logistic(600, 1)
    model = LogisticRegression().fit(X[:300], y[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calibration.CalibrationWarning)
        clf = CalibratedClassifier(FrozenEstimator(model), name).fit(X[300:], y[300:])
    ((_, fitted),) = clf.calibrated_classifiers_
    assert type(fitted) is cls
    direct = cls().fit(
        model.decision_function(X[300:])
        if cls._input == "logits"
        else model.predict_proba(X[300:]),
        y[300:],
    )
    scores = (
        model.decision_function(X[:5])
        if cls._input == "logits"
        else model.predict_proba(X[:5])
    )
    np.testing.assert_allclose(clf.predict_proba(X[:5]), direct.predict_proba(scores))
    assert clf.calibrator == name  # the parameter is stored unchanged


def test_calibrated_classifier_names_a_bad_name():
    X, y = _logistic(100, 2)
    with pytest.raises(ValueError, match="unknown name 'sigmoidal'"):
        CalibratedClassifier(LogisticRegression(), "sigmoidal").fit(X, y)
