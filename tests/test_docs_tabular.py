"""The tabular page's prose holds for the committed run it describes.

docs/user_guide/tabular.rst includes the committed ``results.md`` and draws
conclusions from it in words; each conclusion is checked here against the
committed ``boosting.csv`` and ``results.csv`` of the same run, so that a new
run that changes the picture fails here until the prose is rewritten.
"""

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from sklcalib.benchmark.boosting_tables import (
    _stats,
    _verdict,
    auto_check,
    calibrator_scores,
)

STATIC = Path(__file__).resolve().parents[1] / "docs" / "_static" / "tabular"
PARAMETRIC = ("sms", "svs", "dirichlet", "quadratic", "beta")


def _read(name):
    with open(STATIC / name, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for key, value in row.items():
            try:
                row[key] = float(value) if key not in ("seed",) else int(value)
            except ValueError:
                pass
    return rows


@pytest.fixture(scope="module")
def boosting():
    return _read("boosting.csv")


@pytest.fixture(scope="module")
def scores(boosting):
    return calibrator_scores(boosting)


def test_the_page_includes_the_committed_run():
    page = (STATIC.parents[1] / "user_guide" / "tabular.rst").read_text()
    assert ".. include:: /generated/tabular_results.rst" in page
    markdown = (STATIC / "results.md").read_text()
    assert "## Post-hoc calibrators on tabular models" in markdown


def test_parametric_methods_lead_and_are_rarely_worse(scores):
    present = [c for c in PARAMETRIC if c in scores]
    assert len(present) >= 3
    for c in present:
        s = scores[c]
        assert s["worse"] <= 1, (c, s)  # "significantly worse in at most one"
        assert s["better"] + s["wins"] * s["cells"] > s["cells"] / 2, (c, s)
        assert s["wins"] > 0.5, (c, s)  # "lower the test log-loss in most cells"
    best = min(scores, key=lambda c: scores[c]["mean_rank"])
    assert best in present, best  # "one of them has the best mean rank"


def test_temperature_is_never_worse_but_behind_the_richer_methods(scores):
    assert scores["temperature"]["worse"] == 0
    leaders = [scores[c]["mean_rank"] for c in PARAMETRIC if c in scores]
    assert scores["temperature"]["mean_rank"] > min(leaders)


def test_isotonic_and_histogram_are_worse_than_none_on_log_loss(scores):
    for c in ("isotonic", "histogram"):
        assert scores[c]["ratio"] > 1.0, (c, scores[c])


def test_logistic_regression_gains_little_and_boosting_more(boosting):
    stats = _stats(boosting)
    ties = {"logreg": [], "hgb": []}
    for (_, model, c), s in stats.items():
        if model in ties and c != "none" and "nll_change" in s:
            ties[model].append(_verdict(*s["nll_change"][1:]) == "tie")
    assert np.mean(ties["logreg"]) > 0.5  # "most of its cells"
    assert np.mean(ties["hgb"]) < np.mean(ties["logreg"])


def test_focal_makes_the_nets_under_confident_and_temperature_repairs_it():
    rows = _read("results.csv")
    by_set = {}
    for r in rows:
        by_set.setdefault(r["dataset"], {}).setdefault(r["loss"], []).append(r)
    focal_below_one = ce_below_one = narrower = 0
    for losses in by_set.values():
        focal_below_one += np.mean([r["temperature"] for r in losses["focal"]]) < 1
        ce_below_one += np.mean([r["temperature"] for r in losses["ce"]]) < 1
        pre = [np.mean([r["ece_pre"] for r in v]) for v in losses.values()]
        post = [np.mean([r["ece_post"] for r in v]) for v in losses.values()]
        narrower += np.ptp(post) < np.ptp(pre)
    # "its temperature is below 1 on most sets, cross-entropy's on few"
    assert focal_below_one > len(by_set) / 2 > ce_below_one
    # "after scaling the losses' ECEs are closer together than before"
    assert narrower > len(by_set) / 2


def test_small_sets_have_wide_intervals(boosting):
    stats = _stats(boosting)
    for ds in ("cells", "titanic"):
        widths = [
            s["nll_change"][2] - s["nll_change"][1]
            for (d, _, c), s in stats.items()
            if d == ds and c != "none" and "nll_change" in s
        ]
        assert np.median(widths) > 0.04  # "span several points of log-loss"


def test_auto_does_no_harm_and_is_near_the_hindsight_best(boosting):
    check = auto_check(boosting)
    assert check is not None, "the committed run has no auto rows"
    assert check["cells"] >= 10
    # "significantly worse than no calibration in none of its 40 cells"
    assert check["cells"] == 40
    assert check["worse_cells"] == []
    assert check["excess"] < 0.01  # "within 1 % of the best single calibrator"


def _tree_ensemble_advice():
    """The post-hoc guide's bullet on tree ensembles, as one line."""
    page = (STATIC.parents[1] / "user_guide" / "post_hoc.rst").read_text()
    bullets = re.split(r"\n(?=\* )", page)
    found = [b for b in bullets if b.startswith("* **Tree ensembles")]
    assert len(found) == 1, "the post-hoc guide has no bullet on tree ensembles"
    return " ".join(found[0].split())


def test_the_post_hoc_guide_advises_on_trees_as_the_measured_table_does(scores):
    from sklcalib.calibration import CALIBRATORS

    by_class = {spec.estimator.__name__: name for name, spec in CALIBRATORS.items()}
    advice = _tree_ensemble_advice()
    headline = re.match(r"\* \*\*(.*?)\*\*", advice)[1]
    # isotonic regression and histogram binning appear only as what not to use
    avoided = headline.split(" not ", 1)[1]
    assert "isotonic" in avoided and "histogram" in avoided, headline
    assert "isotonic" not in headline.split(" not ", 1)[0], headline
    for c in ("isotonic", "histogram"):
        # "worse than no calibration ... significantly worse in many cells"
        assert scores[c]["ratio"] > 1.0 and scores[c]["worse"] > scores[c]["better"]
    # the calibrators it says "lowered the log-loss in most cells" did
    sentence = next(s for s in advice.split(". ") if "in most cells" in s)
    named = re.findall(r":class:`(\w+)`", sentence)
    assert len(named) >= 3, sentence
    for cls in named:
        s = scores[by_class[cls]]
        assert s["wins"] > 0.5 and s["ratio"] < 1.0 and s["worse"] <= 1, (cls, s)


def test_no_sentence_of_the_post_hoc_guide_recommends_binning_for_trees():
    page = (STATIC.parents[1] / "user_guide" / "post_hoc.rst").read_text()
    sentences = re.split(r"(?<=\.)\s", " ".join(page.split()))
    for s in sentences:
        low = s.lower()
        if re.search(r"tree|boost", low) and re.search(r"isotonic|histogram", low):
            assert re.search(r"\bnot\b|worse|avoid", low), s
