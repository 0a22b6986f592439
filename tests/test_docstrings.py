"""The docstrings of the API reference pass numpydoc's validation.

The docs build validates them too (``sphinx -W`` turns every finding into an
error), but it is slow and runs in its own CI step; this test applies the same
checks and exclusions, read from ``docs/_numpydoc_checks.py`` like
``docs/conf.py`` reads them, so that a bad docstring fails the ordinary test
run. It also requires an Examples section on every class and function of the
API page (not on their methods), and checks that no paragraph of text sits in a
Parameters-like section, where numpydoc would read it as entries; the build
checks neither.
"""

import re
import runpy
import sys
from pathlib import Path

import pytest

validate = pytest.importorskip("numpydoc.validate")

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS))
import _numpydoc_checks as checks  # noqa: E402

sys.path.remove(str(DOCS))

OBJECTS = list(checks.public_objects())
EXCLUDED = re.compile("|".join(checks.validation_exclude()))


def findings(name, top_level):
    """The findings of numpydoc's validation that the docs build reports."""
    enabled = validate.get_validation_checks(checks.CHECKS)
    if top_level:
        enabled |= checks.EXAMPLES_REQUIRED
    if EXCLUDED.search(name):
        return []
    report = validate.validate(name)
    return [
        f"{code}: {message}" for code, message in report["errors"] if code in enabled
    ]


@pytest.mark.parametrize(
    ("name", "top_level"),
    [(name, top_level) for name, _, top_level in OBJECTS],
    ids=[name for name, _, _ in OBJECTS],
)
def test_docstring_passes_numpydoc_validation(name, top_level):
    errors = findings(name, top_level)
    assert not errors, f"{name}:\n  " + "\n  ".join(errors)


# an entry's name: identifiers, comma-separated (``low, high``), ``*args``
ENTRY_NAME = re.compile(r"\*{0,2}\w+(, \*{0,2}\w+)*")


@pytest.mark.parametrize(
    "name", [name for name, _, _ in OBJECTS], ids=[name for name, _, _ in OBJECTS]
)
def test_sections_hold_only_entries(name):
    # numpydoc reads every unindented line of a Parameters-like section as an
    # entry: a paragraph left there becomes a "parameter" named by its words.
    # PR02 catches that in Parameters only (the name is not in the signature);
    # this checks the other sections too.
    doc = validate.get_doc_object(validate.Validator._load_obj(name))
    sections = ["Parameters", "Other Parameters", "Attributes", "Returns", "Yields"]
    stray = [
        f"{section}: {entry.name!r}"
        for section in sections
        for entry in doc[section]
        if entry.name and not ENTRY_NAME.fullmatch(entry.name)
    ]
    assert not stray, f"{name}: text read as entries:\n  " + "\n  ".join(stray)


def test_every_documented_kind_is_validated():
    names = {name for name, _, _ in OBJECTS}
    # a class, its methods and properties, a function, a NamedTuple result
    for name in [
        "sklcalib.net.NetClassifier",
        "sklcalib.net.NetClassifier.fit",
        "sklcalib.net.NetClassifier.classes_",
        "sklcalib.callbacks.GammaSchedule.on_epoch_begin",
        "sklcalib.losses.CalibrationLoss.forward",
        "sklcalib.metrics.expected_calibration_error",
        "sklcalib.metrics.BinStatistics",
        "sklcalib.metrics.BinStatistics.nonempty",
    ]:
        assert name in names, name
    # values are documented by ``#:`` comments, not validated; generated
    # members are not on the pages
    values = set(checks.value_names())
    assert {"sklcalib.losses.CRITERIA", "sklcalib.metrics.ece_scorer"} <= values
    assert "sklcalib.losses.FocalLoss.name" in values
    assert not values & names
    assert not any(re.search(r"\.set_\w+_request$", name) for name in names)
    assert "sklcalib.metrics.BinStatistics.counts" not in names


def test_docs_build_uses_the_same_settings():
    pytest.importorskip("matplotlib")  # conf.py sets up the gallery's backend
    saved = list(sys.path)
    try:
        conf = runpy.run_path(str(DOCS / "conf.py"))
    finally:
        sys.path[:] = saved  # conf.py puts the checkout and docs/ first
    assert conf["numpydoc_validation_checks"] == checks.CHECKS
    assert conf["numpydoc_validation_exclude"] == checks.validation_exclude()
    # the validation is on: "all" less a few checks
    enabled = validate.get_validation_checks(conf["numpydoc_validation_checks"])
    assert {"GL08", "PR01", "PR02", "RT01", "SS01"} <= enabled


def test_class_pages_list_what_sklcalib_defines_bases_included():
    from sklcalib.calibration import TemperatureScaler
    from sklcalib.losses import AdaFocalLoss
    from sklcalib.net import NetClassifier

    calibrator = dict(checks.documented_members(TemperatureScaler))
    loss = dict(checks.documented_members(AdaFocalLoss))
    net = dict(checks.documented_members(NetClassifier))
    # inherited from sklcalib's own bases: on the page, and validated
    assert {"fit", "predict_proba", "predict"} <= set(calibrator)
    assert {"forward", "update_from_validation", "sample_gamma"} <= set(loss)
    assert {"predict_proba", "decision_function", "predict_logits"} <= set(net)
    # defined by scikit-learn, torch or skorch: not ours to document
    assert "get_params" not in calibrator and "score" not in calibrator
    assert "train" not in loss and "state_dict" not in loss
    assert "save_params" not in net and "get_params" not in net
    names = set(checks.foreign_bases().split(","))
    assert {"ClassifierMixin", "Module", "NeuralNetClassifier"} <= names


def test_foreign_base_names_are_not_sklcalib_class_names():
    # autodoc matches inherited-members by class name: a foreign name equal to
    # one of sklcalib's classes would hide that class's members
    import sklcalib.calibration
    import sklcalib.losses
    import sklcalib.net

    ours = {
        base.__name__
        for module in (sklcalib.calibration, sklcalib.losses, sklcalib.net)
        for obj in vars(module).values()
        if isinstance(obj, type)
        for base in obj.__mro__
        if base.__module__.split(".")[0] == "sklcalib"
    }
    assert "BaseCalibrator" in ours and "CalibrationLoss" in ours
    assert not ours & set(checks.foreign_bases().split(","))


def test_shared_entries_are_filled_into_every_documented_docstring():
    # a placeholder left unfilled (a forgotten @fill_doc) would reach the docs
    left = [
        name for name, obj, _ in OBJECTS if "%(" in (getattr(obj, "__doc__", "") or "")
    ]
    assert left == []


def test_fill_doc_indents_the_entry_and_refuses_an_unknown_name():
    from sklcalib._utils._docstrings import SHARED_ENTRIES, fill_doc

    def documented():
        """Summary.

        Attributes
        ----------
        %(fitted_score_inputs)s
        """

    filled = fill_doc(documented).__doc__.splitlines()
    entry = SHARED_ENTRIES["fitted_score_inputs"].splitlines()
    assert filled[4:][: len(entry)] == ["        " + line for line in entry]

    def unknown():
        """%(no_such_entry)s"""

    with pytest.raises(KeyError, match="no_such_entry"):
        fill_doc(unknown)
