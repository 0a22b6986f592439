"""The segment audit: a family-wise test whose size is its level, intervals
that cover, and the structure around it (the comparisons with mcgrad are in
test_metrics_cumulative_references.py)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sklcalib._utils._segment_audit as segment_audit
from sklcalib._utils._segment_audit import gap_interval
from sklcalib._utils._segments import build_segments
from sklcalib.metrics import (
    MulticalibrationAudit,
    cumulative_calibration_test,
    multicalibration_audit,
)


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


def test_missing_values_are_a_level_of_their_own():
    frame = pd.DataFrame(
        {"a": ["x", None, "y", "x", np.nan, "y"] * 20, "b": [1.0, 2.0, np.nan] * 40}
    )
    segset = build_segments(frame, 120, max_depth=1, min_rows=1)
    assert "a=missing" in segset.names and "b=missing" in segset.names
    sizes = dict(zip(segset.names, segset.sizes(), strict=True))
    assert sizes["a=missing"] == 40 and sizes["b=missing"] == 40
    assert sizes["all rows"] == 120


def test_rare_levels_collapse_and_numeric_columns_are_binned():
    levels = np.repeat(list("abcdefgh"), [40, 30, 20, 10, 5, 5, 5, 5])
    x = np.arange(120.0)
    segset = build_segments(
        pd.DataFrame({"c": levels, "x": x}), 120, max_depth=1, max_levels=3, min_rows=1
    )
    names = dict(zip(segset.names, segset.sizes(), strict=True))
    assert names["c=a"] == 40 and names["c=b"] == 30 and names["c=other"] == 50
    binned = sorted(v for k, v in names.items() if k.startswith("x="))
    assert binned == [40, 40, 40]


# --- the family-wise test --------------------------------------------------------


def test_pvalue_is_the_rank_of_the_maximum_in_its_null_law():
    frame, y, p, _ = _frame(2000, 2)
    audit = multicalibration_audit(y, p, frame, n_resamples=199, random_state=3)
    null = audit.null_distribution
    assert null.shape == (199,) and np.all(np.diff(null) >= 0)
    assert audit.pvalue == (1 + np.sum(null >= audit.statistic)) / 200
    assert audit.statistic == audit.table["scaled_statistic"].max()
    adjusted = (
        1 + (null[None, :] >= audit.table["scaled_statistic"][:, None]).sum(1)
    ) / 200
    np.testing.assert_allclose(audit.table["pvalue"], adjusted)
    # a segment above the null quantile is exactly one whose adjusted p <= alpha
    flagged = audit.table["scaled_statistic"] > audit.null_quantile
    np.testing.assert_array_equal(flagged, audit.table["pvalue"] <= 0.05)
    assert np.all(audit.table["pvalue"] >= audit.pvalue)


def test_size_is_the_level_where_the_unadjusted_minimum_is_not():
    # seeded fast variant of benchmarks/bench_multicalibration.py: calibrated
    # outcomes, 67 overlapping segments; the family-wise test rejects at the
    # 5 % level about 5 % of the time, the unadjusted minimum p-value
    # (mcgrad's mce_pvalue) far more often
    rng = np.random.default_rng(20261128)
    n = 1000
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 3, n).astype(str) for j in range(4)})
    segments = build_segments(frame, n)
    masks = np.column_stack([segments.mask(s, n) for s in range(segments.n_segments)])
    ours = unadjusted = 0
    n_sims = 80
    for sim in range(n_sims):
        p = rng.uniform(0.02, 0.98, n)
        y = (rng.uniform(size=n) < p).astype(int)
        audit = multicalibration_audit(
            y, p, masks, n_resamples=99, random_state=sim, labels=[0, 1]
        )
        ours += audit.pvalue <= 0.05
        unadjusted += audit.table["pvalue_unadjusted"].min() <= 0.05
    assert audit.n_segments == 67
    assert ours <= 11  # expected 4 of 80; P(X > 11) < 0.001
    assert unadjusted >= 48  # 66 of 80 with this seed


def test_power_grows_with_the_gap_and_beats_the_global_test():
    # seeded fast variant of the power table of
    # benchmarks/bench_multicalibration.py: a flagged 5 % of the rows has
    # outcome probability p + delta; 30 simulations per delta, 4 columns
    # of three levels plus the flag, up to depth 2 (59 null draws: the rank
    # p-value's size is exactly 3 / 60)
    rng = np.random.default_rng(20261128)
    n = 3000
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 3, n).astype(str) for j in range(4)})
    flag = rng.uniform(size=n) < 0.05
    frame["flag"] = np.where(flag, "1", "0")
    p = 1 / (1 + np.exp(-rng.normal(-1.0, 1.0, n)))
    audit_hits, global_hits = {}, {}
    for delta in (0.0, 0.1, 0.25):
        true_p = np.where(flag, np.clip(p + delta, 0, 1), p)
        audit_hits[delta] = global_hits[delta] = 0
        for sim in range(30):
            y = (rng.uniform(size=n) < true_p).astype(int)
            audit = multicalibration_audit(
                y, p, frame, n_resamples=59, random_state=sim, labels=[0, 1]
            )
            audit_hits[delta] += audit.pvalue <= 0.05
            global_hits[delta] += cumulative_calibration_test(y, p).pvalue <= 0.05
    assert audit.n_segments > 60
    assert audit_hits[0.0] <= 6  # expected 1.5 of 30; P(X > 6) < 0.001
    assert audit_hits[0.0] < audit_hits[0.1] < audit_hits[0.25]
    assert audit_hits[0.25] >= 26  # the shifted segment is found
    # the shift is 0.05 * delta on all rows: the global test mostly misses it
    assert global_hits[0.25] <= audit_hits[0.25] - 10


def test_a_shifted_segment_is_found_and_its_interval_covers_the_shift():
    frame, _, p, rng = _frame(6000, 4)
    true_p = np.where(frame["region"] == "b", np.clip(p + 0.1, 0, 1), p)
    y = (rng.uniform(size=6000) < true_p).astype(int)
    audit = multicalibration_audit(y, p, frame, n_resamples=200, random_state=0)
    assert audit.pvalue < 0.01
    assert "region=b" in audit.worst.segment
    m = (frame["region"] == "b").to_numpy()
    low, high = audit.worst_interval
    worst_mask = build_segments(frame, 6000).mask(
        list(audit.table["segment"]).index(audit.worst.segment), 6000
    )
    true_gap = np.mean(true_p[worst_mask] - p[worst_mask])
    assert low <= true_gap <= high
    # the simultaneous interval is wider than the pointwise one
    assert low <= audit.worst.gap_low and audit.worst.gap_high <= high
    assert m.sum() > 0


def test_gap_interval_covers_on_small_segments():
    # the score interval keeps its level where gap +- z se collapses (few
    # events): 2000 segments of 40 rows with p = 0.03, outcomes calibrated
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(2000):
        p = np.full(40, 0.03)
        y = rng.uniform(size=40) < p
        gap = y.mean() - p.mean()
        low, high = gap_interval(
            gap, p.mean(), 40.0, 40.0, np.sum(p * (1 - p)), np.sum(1 - 2 * p), 1.96
        )
        covered += low <= 0.0 <= high
    assert covered / 2000 >= 0.93


# --- weights, modes, paths --------------------------------------------------------


def test_zero_weight_rows_are_no_rows_and_weights_are_scale_free():
    frame, y, p, rng = _frame(1500, 5)
    w = rng.uniform(0.5, 2.0, size=1500)
    w[::5] = 0.0
    keep = w > 0
    a = multicalibration_audit(
        y, p, frame, sample_weight=w, n_resamples=50, random_state=1
    )
    b = multicalibration_audit(
        y[keep],
        p[keep],
        frame[keep],
        sample_weight=w[keep],
        n_resamples=50,
        random_state=1,
    )
    c = multicalibration_audit(
        y, p, frame, sample_weight=3.5 * w, n_resamples=50, random_state=1
    )
    for other in (b, c):
        assert other.pvalue == a.pvalue
        np.testing.assert_allclose(
            other.null_distribution, a.null_distribution, rtol=1e-9
        )
        np.testing.assert_allclose(
            other.table["scaled_statistic"], a.table["scaled_statistic"], rtol=1e-9
        )
        np.testing.assert_array_equal(other.table["n_rows"], a.table["n_rows"])


def test_compiled_and_numpy_paths_agree(monkeypatch):
    pytest.importorskip("numba", reason="the compiled path is the fast extra")
    frame, y, p, _ = _frame(1200, 6)
    runs = []
    for threshold in (1 << 62, 0):
        monkeypatch.setattr(segment_audit, "_COMPILED_MIN_WORK", threshold)
        for mode, statistic in (("auto", "kuiper"), ("top_label", "ks")):
            runs.append(
                multicalibration_audit(
                    y,
                    p,
                    frame,
                    mode=mode,
                    statistic=statistic,
                    n_resamples=64,
                    random_state=2,
                )
            )
    rng = np.random.default_rng(1)
    prob = rng.dirichlet(np.ones(3), size=1200)
    labels = (prob.cumsum(1) < rng.uniform(size=(1200, 1))).sum(1).clip(max=2)
    for threshold in (1 << 62, 0):
        monkeypatch.setattr(segment_audit, "_COMPILED_MIN_WORK", threshold)
        runs.append(
            multicalibration_audit(
                labels, prob, frame, mode="classwise", n_resamples=64, random_state=2
            )
        )
    pairs = [(runs[0], runs[2]), (runs[1], runs[3]), (runs[4], runs[5])]
    for numpy_run, compiled_run in pairs:
        np.testing.assert_allclose(
            numpy_run.null_distribution, compiled_run.null_distribution, rtol=1e-10
        )
        assert numpy_run.pvalue == compiled_run.pvalue


def test_top_label_and_classwise_audits():
    rng = np.random.default_rng(7)
    n = 2000
    prob = rng.dirichlet(np.ones(4), size=n)
    labels = (prob.cumsum(1) < rng.uniform(size=(n, 1))).sum(1).clip(max=3)
    names = np.array(["w", "x", "y", "z"])[labels]
    group = rng.integers(0, 3, n)
    top = multicalibration_audit(
        names, prob, group, n_resamples=50, random_state=0, labels=["w", "x", "y", "z"]
    )
    assert top.mode == "top_label" and "class" not in top.table
    cw = multicalibration_audit(
        names,
        prob,
        group,
        mode="classwise",
        n_resamples=50,
        random_state=0,
        labels=["w", "x", "y", "z"],
    )
    assert cw.mode == "classwise"
    assert len(cw.table["class"]) == 4 * cw.n_segments
    assert set(cw.table["class"]) == {"w", "x", "y", "z"}
    assert cw.worst.class_label in {"w", "x", "y", "z"}


def test_masks_are_audited_as_given():
    frame, y, p, _ = _frame(1000, 8)
    masks = {
        "young": frame["age"].to_numpy() < 35,
        "web": (frame["device"] == "web").to_numpy(),
    }
    audit = multicalibration_audit(y, p, masks, n_resamples=30, random_state=0)
    assert list(audit.table["segment"]) == ["young", "web"]
    assert list(audit.table["depth"]) == [-1, -1]
    as_matrix = multicalibration_audit(
        y, p, np.column_stack(list(masks.values())), n_resamples=30, random_state=0
    )
    assert as_matrix.pvalue == audit.pvalue
    assert list(as_matrix.table["segment"]) == ["segment 0", "segment 1"]
    tiny = {"few": np.arange(1000) < 5, "all": np.ones(1000, dtype=bool)}
    dropped = multicalibration_audit(y, p, tiny, n_resamples=10, random_state=0)
    assert dropped.n_segments == 1 and dropped.n_dropped == 1


def test_result_reads_well():
    frame, y, p, _ = _frame(1000, 9)
    audit = multicalibration_audit(
        y, p.astype(np.float32), frame, n_resamples=50, random_state=0
    )
    assert isinstance(audit, MulticalibrationAudit)
    assert repr(audit).startswith("MulticalibrationAudit(pvalue=")
    text = str(audit)
    assert "family-wise p = " in text and audit.worst.segment in text
    assert text.splitlines()[0].endswith(audit.verdict())
    import json

    entries = audit.report_entries(3)
    assert json.loads(json.dumps(entries))["n_segments"] == audit.n_segments
    assert entries["multicalibration_pvalue"] == audit.pvalue
    assert [r["segment"] for r in entries["worst_segments"]] == [
        r.segment for r in audit.worst_segments(3)
    ]
    table = audit.to_frame()
    assert len(table) == audit.n_segments
    assert list(table.columns) == [c for c in audit.table]
    worst = audit.worst_segments(3)
    assert worst[0] == audit.worst
    assert (
        worst[0].scaled_statistic
        >= worst[1].scaled_statistic
        >= worst[2].scaled_statistic
    )
    assert np.all(table["gap_low"] <= table["gap"]) and np.all(
        table["gap"] <= table["gap_high"]
    )


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segments", "kwargs", "match"),
    [
        (np.zeros((10, 2)), {}, "segments has 10 rows but y_true has 4"),
        ({}, {}, "empty dict"),
        ({"a": np.array([1, 0, 1, 0])}, {}, r"segments\['a'\] must be a boolean mask"),
        ({"a": np.ones(3, dtype=bool)}, {}, "has shape"),
        (np.zeros(4), {"max_depth": -1}, "max_depth must be >= 0"),
        (np.zeros(4), {"max_levels": 1}, "max_levels must be >= 2"),
        (np.zeros(4), {"min_rows": 10}, "No segment has at least min_rows=10"),
        (np.zeros(4), {"confidence_level": 1.0}, "confidence_level"),
        (np.zeros(4), {"n_resamples": 0}, "n_resamples"),
        (np.zeros(4), {"statistic": "max"}, "statistic must be one of"),
    ],
)
def test_bad_input(segments, kwargs, match):
    with pytest.raises(ValueError, match=match):
        multicalibration_audit([0, 1, 1, 0], [0.2, 0.6, 0.7, 0.4], segments, **kwargs)


def test_too_many_combinations_are_refused():
    x = np.zeros((10, 200))
    with pytest.raises(ValueError, match="lower max_depth or pass fewer columns"):
        build_segments(x, 10, max_depth=4)


def test_dask_is_refused():
    da = pytest.importorskip("dask.array", reason="dask is the dask extra")
    p = da.from_array(np.array([0.2, 0.6, 0.7, 0.4]), chunks=2)
    with pytest.raises(ValueError, match=r"y_prob.compute\(\)"):
        multicalibration_audit(np.array([0, 1, 1, 0]), p, np.zeros(4))


@given(st.integers(0, 2**31), st.sampled_from(["auto", "top_label", "classwise"]))
@settings(max_examples=25)
def test_a_segments_numbers_are_those_of_its_rows(seed, mode):
    # every segment's statistic, sigma and gap are those of the cumulative
    # test run on its rows alone, and they do not depend on the row order
    rng = np.random.default_rng(seed)
    n = 300
    prob = rng.dirichlet(np.ones(3), size=n)
    y = (prob.cumsum(1) < rng.uniform(size=(n, 1))).sum(1).clip(max=2)
    group = rng.integers(0, 3, n)
    kwargs = {"mode": mode, "labels": [0, 1, 2], "n_resamples": 5, "min_rows": 1}
    audit = multicalibration_audit(y, prob, group, random_state=0, **kwargs)
    perm = rng.permutation(n)
    shuffled = multicalibration_audit(
        y[perm], prob[perm], group[perm], random_state=0, **kwargs
    )
    for key in ("statistic", "sigma", "gap", "gap_low", "gap_high", "mean_prob"):
        np.testing.assert_allclose(audit.table[key], shuffled.table[key], atol=1e-12)
    n_col = 3 if mode == "classwise" else 1
    for i, name in enumerate(audit.table["segment"][::n_col]):
        rows = np.ones(n, bool) if name == "all rows" else group == int(name[3:])
        ref = cumulative_calibration_test(
            y[rows], prob[rows], mode=mode, labels=[0, 1, 2]
        )
        got = audit.table["statistic"][i * n_col : (i + 1) * n_col]
        np.testing.assert_allclose(got, np.ravel(ref.statistic), atol=1e-12)
        got = audit.table["sigma"][i * n_col : (i + 1) * n_col]
        np.testing.assert_allclose(got, np.ravel(ref.sigma), atol=1e-12)


def test_mixed_type_and_boolean_columns():
    mixed = np.array([1, "a", 1, "a", 2.5] * 10, dtype=object)
    segset = build_segments(mixed, 50, max_depth=1, min_rows=1)
    sizes = dict(zip(segset.names, segset.sizes(), strict=True))
    assert sizes == {"all rows": 50, "x0=1": 20, "x0=a": 20, "x0=2.5": 10}
    flags = pd.DataFrame({"mobile": np.arange(50) % 5 == 0})
    segset = build_segments(flags, 50, max_depth=1, min_rows=1)
    assert dict(zip(segset.names, segset.sizes(), strict=True)) == {
        "all rows": 50,
        "mobile=False": 40,
        "mobile=True": 10,
    }


_FORK_AFTER_AUDIT = """
import multiprocessing
import numba
import numpy as np
import sklcalib._utils._segment_audit as segment_audit
from sklcalib.metrics import multicalibration_audit


@numba.njit(parallel=True)
def parallel_sum(x):
    total = 0.0
    for i in numba.prange(x.shape[0]):
        total += x[i]
    return total


def child_work():  # what a dask worker does: run a parallel kernel
    assert parallel_sum(np.ones(1000)) == 1000.0


segment_audit._COMPILED_MIN_WORK = 0
rng = np.random.default_rng(0)
p = rng.uniform(size=500)
multicalibration_audit(rng.uniform(size=500) < p, p, rng.integers(0, 3, 500),
                       n_resamples=20, random_state=0)
child = multiprocessing.get_context("fork").Process(target=child_work)
child.start()
child.join(60)
raise SystemExit(child.exitcode)
"""


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(),
    reason="fork() exists on POSIX only",
)
def test_a_process_forks_safely_after_a_compiled_audit():
    # a parallel numba kernel would start OpenMP threads, after which fork()
    # aborts the child (dask's LocalCluster, multiprocessing): the audit's
    # kernel is serial. In a fresh interpreter: another test's parallel
    # kernel must not decide the outcome.
    pytest.importorskip("numba", reason="the compiled path is the fast extra")
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FORK_AFTER_AUDIT], capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_calibration_report_opens_with_the_segment_audit():
    from sklcalib.metrics import calibration_report

    frame, _, p, rng = _frame(3000, 11)
    true_p = np.where(frame["device"] == "ios", np.clip(p + 0.12, 0, 1), p)
    y = (rng.uniform(size=3000) < true_p).astype(int)
    report = calibration_report(y, p, segments=frame, random_state=0)
    audit = multicalibration_audit(y, p, frame, random_state=0)
    assert next(iter(report)) == "segment_verdict"
    assert report["segment_verdict"] == audit.verdict()
    assert report["multicalibration_pvalue"] == audit.pvalue < 0.05
    assert report["worst_segment"] == audit.worst.segment
    assert report.audit.n_segments == report["n_segments"] == audit.n_segments
    text = str(report).splitlines()
    assert text[0] == f"segments: {audit.verdict()}"
    assert audit.worst.segment in text[1]
    assert text[1 + len(report["worst_segments"])] == report.verdict
    plain = calibration_report(y, p, random_state=0)
    assert plain.audit is None and "segment_verdict" not in plain
    assert {k: plain[k] for k in plain} == {k: report[k] for k in plain}
    without = calibration_report(y, p, segments=frame, confidence_level=None)
    assert without["n_segments"] == audit.n_segments


def test_calibration_report_with_segments_refuses_dask():
    da = pytest.importorskip("dask.array", reason="dask is the dask extra")
    from sklcalib.metrics import calibration_report

    p = da.from_array(np.array([0.2, 0.6, 0.7, 0.4]), chunks=2)
    y = da.from_array(np.array([0, 1, 1, 0]), chunks=2)
    with pytest.raises(ValueError, match="segment audit sorts"):
        calibration_report(y, p, segments=np.zeros(4), labels=[0, 1])
