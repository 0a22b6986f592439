"""sklcalib's cumulative statistics and segment audit against the references:
mcgrad 0.1.5 (``ecce``, ``ecce_sigma``, ``ecce_pvalue``, its segments) and
MAPIE 1.6 (Kuiper, Kolmogorov–Smirnov and Spiegelhalter functions).

MAPIE is in the test extra. mcgrad is installed with ``pip install --no-deps
mcgrad==0.1.5`` (its declared dependencies pull in torch builds, ax-platform
and plotly that its metrics never import); where it is absent its tests skip
and say so.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from mapie.metrics import calibration as mapie_calibration

from sklcalib._utils._brownian import brownian_max_abs_sf, brownian_range_sf
from sklcalib._utils._segments import build_segments
from sklcalib.metrics import (
    cumulative_calibration_error,
    cumulative_calibration_test,
    multicalibration_audit,
    spiegelhalter_test,
)

_NO_MCGRAD = "mcgrad 0.1.5 absent: install it with pip install --no-deps mcgrad==0.1.5"
try:
    import mcgrad._segmentation as mcgrad_segmentation
    import mcgrad.metrics as mcgrad_metrics
except ImportError:  # pragma: no cover - depends on the environment
    mcgrad_metrics = mcgrad_segmentation = None
needs_mcgrad = pytest.mark.skipif(mcgrad_metrics is None, reason=_NO_MCGRAD)


def _binary(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    y = (rng.uniform(size=n) < np.clip(p + shift, 0, 1)).astype(np.int64)
    return y, p, rng.uniform(0.2, 3.0, size=n)


def _rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "region": rng.choice(
                list("abcdefg"), n, p=[0.3, 0.2, 0.17, 0.13, 0.1, 0.06, 0.04]
            ),
            "device": rng.choice(["web", "ios", "android"], n, p=[0.5, 0.3, 0.2]),
            "age": rng.normal(40, 12, n),
        }
    )
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(int)
    return frame, y, p, rng


@needs_mcgrad
@pytest.mark.parametrize("n", [20, 1000, 30000])
@pytest.mark.parametrize("shift", [0.0, 0.02])
@pytest.mark.parametrize("weighted", [False, True])
def test_kuiper_equals_mcgrad(n, shift, weighted):
    y, p, w = _binary(n, seed=n, shift=shift)
    w = w if weighted else None
    res = cumulative_calibration_test(y, p, sample_weight=w)
    assert _rel(res.statistic, mcgrad_metrics.ecce(y, p, w)) < 1e-12
    assert _rel(res.scaled_statistic, mcgrad_metrics.ecce_sigma(y, p, w)) < 1e-12
    expected = mcgrad_metrics.ecce_pvalue(y, p, w)
    if res.pvalue > 1e-6:
        assert _rel(res.pvalue, expected) < 1e-9
    else:  # mcgrad's 1 - CDF is exact to ~1e-16 absolute (its floor: eps)
        assert abs(res.pvalue - expected) < 1e-15
    assert cumulative_calibration_error(y, p, sample_weight=w) == res.statistic


@pytest.mark.parametrize("seed", range(4))
def test_kuiper_and_ks_equal_mapie(seed):
    # MAPIE jitters the scores by a relative 1e-8 before sorting, so the
    # agreement is to about 1e-8; its range omits the starting 0 (see below)
    y, p, _ = _binary(2000, seed, shift=0.01 * seed)
    kuiper = cumulative_calibration_test(y, p)
    ks = cumulative_calibration_test(y, p, statistic="ks")
    path = np.cumsum((y - p)[np.argsort(p)]) / p.shape[0]
    if path.max() >= 0 >= path.min():  # the two ranges agree
        assert (
            _rel(kuiper.scaled_statistic, mapie_calibration.kuiper_statistic(y, p))
            < 1e-7
        )
        assert _rel(kuiper.pvalue, mapie_calibration.kuiper_p_value(y, p)) < 1e-7
    assert (
        _rel(ks.scaled_statistic, mapie_calibration.kolmogorov_smirnov_statistic(y, p))
        < 1e-7
    )
    assert _rel(ks.pvalue, mapie_calibration.kolmogorov_smirnov_p_value(y, p)) < 1e-7
    assert ks.statistic == pytest.approx(np.abs(path).max(), rel=1e-12)


@needs_mcgrad
def test_range_counts_the_starting_zero_as_mcgrad_not_mapie():
    # every cumulative difference positive: MAPIE's range (without C_0 = 0)
    # is max - min of the path, mcgrad's and sklcalib's is max - 0
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    y = np.array([1, 0, 1, 0, 1])
    path = np.cumsum(y - p) / 5
    assert path.min() > 0
    ours = cumulative_calibration_error(y, p)
    assert ours == pytest.approx(path.max(), rel=1e-12)
    assert ours == pytest.approx(mcgrad_metrics.ecce(y, p), rel=1e-12)
    sigma = np.sqrt(np.sum(p * (1 - p))) / 5
    mapie_range = mapie_calibration.kuiper_statistic(y, p) * sigma
    assert mapie_range == pytest.approx(path.max() - path.min(), rel=1e-6)
    assert ours > mapie_range


@pytest.mark.parametrize("alternative", ["greater", "two-sided", "less"])
def test_spiegelhalter_equals_mapie(alternative):
    y, p, _ = _binary(3000, 7, shift=0.01)
    res = spiegelhalter_test(y, p, alternative=alternative)
    z = mapie_calibration.spiegelhalter_statistic(y, p)
    one_sided = mapie_calibration.spiegelhalter_p_value(y, p)  # 1 - Phi(z)
    assert _rel(res.statistic, z) < 1e-12
    expected = {
        "greater": one_sided,
        "less": 1 - one_sided,
        "two-sided": 2 * min(one_sided, 1 - one_sided),
    }[alternative]
    assert _rel(res.pvalue, expected) < 1e-9


@needs_mcgrad
def test_limit_laws_against_the_references_cdfs():
    x = np.array([0.3, 0.8, 1.2, 1.9, 2.6, 3.5, 4.5])
    np.testing.assert_allclose(
        brownian_range_sf(x), 1 - mcgrad_metrics._ecce_cdf(x), rtol=1e-10
    )
    for xi in x:
        assert (
            _rel(
                brownian_max_abs_sf(xi),
                1 - mapie_calibration.kolmogorov_smirnov_cdf(xi),
            )
            < 1e-7
        )
        assert _rel(brownian_range_sf(xi), 1 - mapie_calibration.kuiper_cdf(xi)) < 1e-7


@needs_mcgrad
@pytest.mark.parametrize("weighted", [False, True])
def test_every_segment_equals_mcgrad_ecce(weighted):
    frame, y, p, rng = _frame(3000, 0)
    w = rng.uniform(0.5, 2.0, size=3000) if weighted else None
    audit = multicalibration_audit(
        y, p, frame, sample_weight=w, n_resamples=20, random_state=0
    )
    segset = build_segments(frame, 3000)
    assert audit.n_segments == segset.n_segments
    for s in range(segset.n_segments):
        m = segset.mask(s, 3000)
        ws = None if w is None else w[m]
        ref = (
            mcgrad_metrics.ecce(y[m], p[m], ws),
            mcgrad_metrics.ecce_sigma(y[m], p[m], ws),
            mcgrad_metrics.ecce_pvalue(y[m], p[m], ws),
        )
        ours = (
            audit.table["statistic"][s],
            audit.table["scaled_statistic"][s],
            audit.table["pvalue_unadjusted"][s],
        )
        np.testing.assert_allclose(ours, ref, rtol=1e-9)
        rate = np.average(y[m], weights=ws)
        assert audit.table["gap"][s] == pytest.approx(
            rate - np.average(p[m], weights=ws)
        )


def _mcgrad_masks(frame, categorical, numerical, max_depth, max_levels, min_rows):
    masks = []
    for chunk, size, _ in mcgrad_segmentation.get_segment_masks(
        frame,
        categorical_segment_columns=categorical,
        numerical_segment_columns=numerical,
        max_depth=max_depth,
        max_values_per_segment_feature=max_levels,
        min_samples_per_segment=min_rows,
    ):
        masks.extend(chunk[:size])
    return {np.flatnonzero(m).tobytes() for m in masks}


@needs_mcgrad
@pytest.mark.parametrize("max_depth", [1, 2, 3])
def test_segments_are_built_as_mcgrad_builds_them(max_depth):
    frame, *_ = _frame(2000, 1)
    ours = build_segments(frame, 2000, max_depth=max_depth, max_levels=4, min_rows=25)
    theirs = _mcgrad_masks(frame, ["region", "device"], ["age"], max_depth, 4, 25)
    ours_set = {
        ours.indices[ours.indptr[s] : ours.indptr[s + 1]].astype(np.int64).tobytes()
        for s in range(ours.n_segments)
    }
    theirs = {
        np.frombuffer(b, dtype=np.int64).astype(np.int64).tobytes() for b in theirs
    }
    assert ours_set == theirs
    assert ours.n_segments + ours.n_dropped == ours.n_candidates


def _mcgrad_audit(frame, y, p, w, **kwargs):
    df = frame.copy()
    df["label"], df["score"] = y, p
    if w is not None:
        df["weight"] = w
    with warnings.catch_warnings():
        # mcgrad 0.1.5 sorts in place, which pandas >= 3.1 deprecates
        warnings.filterwarnings(
            "ignore",
            message="The inplace keyword",
            category=getattr(pd.errors, "Pandas4Warning", FutureWarning),
        )
        return mcgrad_metrics.MulticalibrationError(
            df,
            label_column="label",
            score_column="score",
            weight_column=None if w is None else "weight",
            categorical_segment_columns=["region", "device"],
            numerical_segment_columns=["age"],
            max_n_segments=None,
            precision_dtype="float64",
            **kwargs,
        )


@needs_mcgrad
@pytest.mark.parametrize("weighted", [False, True])
def test_audit_equals_mcgrad_multicalibration_error(weighted):
    # mcgrad's whole audit object as the oracle: the same segments, the same
    # per-segment statistics, scaled values and unadjusted p-values; its
    # mce_sigma is the audit's maximum and its mce_pvalue the smallest
    # unadjusted p-value (which the family-wise p-value replaces)
    frame, y, p, rng = _frame(4000, 5)
    w = rng.uniform(0.5, 2.0, size=4000) if weighted else None
    p[rng.uniform(size=4000) < 0.2] += 0.01  # a little off: p-values < 1
    p = np.clip(p, 0.02, 0.98)
    theirs = _mcgrad_audit(
        frame,
        y,
        p,
        w,
        max_depth=2,
        max_values_per_segment_feature=4,
        min_samples_per_segment=25,
    )
    audit = multicalibration_audit(
        y,
        p,
        frame,
        max_depth=2,
        max_levels=4,
        min_rows=25,
        sample_weight=w,
        n_resamples=20,
        random_state=0,
    )
    table = audit.table
    their_statistics = theirs.segments_ecce  # builds its segments
    assert audit.n_segments == theirs.total_number_segments
    for ours_col, their_values in (
        ("statistic", their_statistics),
        ("scaled_statistic", theirs.segments_ecce_sigma),
        ("pvalue_unadjusted", theirs.segments_ecce_pvalue),
    ):
        np.testing.assert_allclose(
            np.sort(np.asarray(table[ours_col])),
            np.sort(np.asarray(their_values, dtype=np.float64)),
            rtol=1e-9,
            atol=1e-15,
        )
    assert audit.statistic == pytest.approx(theirs.mce_sigma, rel=1e-9)
    assert min(table["pvalue_unadjusted"]) == pytest.approx(theirs.mce_pvalue, rel=1e-9)
    # depth 0 (all rows) is mcgrad's global ECCE
    everyone = [i for i, name in enumerate(table["segment"]) if name == "all rows"]
    assert len(everyone) == 1
    assert table["statistic"][everyone[0]] == pytest.approx(
        theirs.global_ecce, rel=1e-9
    )


@needs_mcgrad
@pytest.mark.parametrize("statistic_mode", ["top_label", "classwise"])
def test_weighted_multiclass_columns_equal_mcgrad_ecce(statistic_mode):
    # mcgrad is binary-only: a top-label or classwise statistic is its ecce
    # on the binary column (correct vs confidence, or [y = k] vs p_k), weighted
    rng = np.random.default_rng(8)
    n = 2500
    prob = rng.dirichlet(np.full(4, 0.7), size=n)
    y = (prob.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1).clip(max=3)
    w = rng.uniform(0.2, 3.0, size=n)
    res = cumulative_calibration_test(y, prob, mode=statistic_mode, sample_weight=w)
    if statistic_mode == "top_label":
        columns = [((prob.argmax(1) == y).astype(int), prob.max(1))]
    else:
        columns = [((y == k).astype(int), prob[:, k]) for k in range(4)]
    ref = np.array(
        [
            [
                mcgrad_metrics.ecce(o, s, w),
                mcgrad_metrics.ecce_sigma(o, s, w),
                mcgrad_metrics.ecce_pvalue(o, s, w),
            ]
            for o, s in columns
        ]
    )
    np.testing.assert_allclose(np.atleast_1d(res.statistic), ref[:, 0], rtol=1e-9)
    np.testing.assert_allclose(
        np.atleast_1d(res.scaled_statistic), ref[:, 1], rtol=1e-9
    )
    pvalues = res.class_pvalues if statistic_mode == "classwise" else [res.pvalue]
    np.testing.assert_allclose(pvalues, ref[:, 2], rtol=1e-7, atol=1e-15)
