"""compare_calibration on the paired-model beds of benchmarks/_pair_beds.py,
whose population ECEs are exact finite sums: the beds' truths, and the
seeded fast variant of benchmarks/bench_compare.py (the user guide's table).

The beds are built with fewer atoms than the benchmark's (the same laws on a
coarser grid) to keep the suite fast."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _pair_beds as beds

from sklcalib.metrics import compare_calibration, expected_calibration_error


def _rates(law, n, reps, seed, n_resamples=199):
    """Rejections at 5 % and coverage of the true difference."""
    rng = np.random.default_rng(seed)
    rejected = covered = 0
    for rep in range(reps):
        y, a, b = law.draw(rng, n)
        res = compare_calibration(y, a, b, n_resamples=n_resamples, random_state=rep)
        rejected += res.pvalue <= 0.05
        covered += res.low <= law.difference <= res.high
    return rejected, covered


def test_population_ece_is_the_plug_in_on_many_rows():
    # the exact finite sum against the metric on 200 000 drawn rows (its
    # noise: a few 1e-3 at this n; its bias at zero gap about 1e-3)
    law = beds.same_base(1.0, 1.5, m=1 << 12)
    assert law.truth_a == pytest.approx(0.0, abs=1e-12)  # the truth itself
    y, a, b = law.draw(np.random.default_rng(0), 200_000)
    assert expected_calibration_error(y, a) == pytest.approx(law.truth_a, abs=5e-3)
    assert expected_calibration_error(y, b) == pytest.approx(law.truth_b, abs=5e-3)
    assert law.truth_b > 0.05


def test_opposite_pairs_have_equal_population_errors():
    law = beds.same_base(1.5, m=1 << 12)
    assert law.null and law.truth_a > 0.04
    assert law.truth_a == pytest.approx(law.truth_b, abs=1e-5)
    # B is under-confident: its temperature is below 1
    assert law.b.max() < law.a.max()
    net = beds.net(0.5, m=1 << 12)
    assert net.truth_a == pytest.approx(net.truth_b, abs=1e-5)
    top = net.a.max(axis=1)
    assert np.mean(top >= 14 / 15) > 0.95  # nearly every row in the top bin


def test_two_temperatures_of_the_same_scores_keep_their_size():
    # the swap test this replaced rejected this null 30-34 % of the time at
    # nominal 5 % (benchmarks/bench_compare.py, 400 replications); 60
    # replications at 5 % give 8 or more rejections with probability 0.6 %
    law = beds.same_base(1.5, m=1 << 12)
    rejected, covered = _rates(law, 500, 60, seed=3)
    assert rejected <= 7
    assert covered >= 57


def test_a_real_difference_between_correlated_models_is_found_and_covered():
    # the same scores at two temperatures (A calibrated): the swap test's
    # interval covered 92.5 % at n = 2000; power at n = 2000 is ~100 %
    law = beds.same_base(1.0, 1.5, m=1 << 12)
    rejected, covered = _rates(law, 2000, 20, seed=4)
    assert rejected >= 19
    assert covered == 20


def test_the_bootstrap_draws_rows_with_shrunk_gaps():
    # every bin's residual sum becomes sign(G) (sqrt(G^2 + s^2) - s), its
    # count and confidences stay; with weights, per unit weight
    from sklcalib._utils._swap import shrunk_rows, top_label_rows

    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 400)
    correct = (rng.uniform(size=400) < conf**2).astype(float)
    for w in (None, rng.uniform(0.5, 2.0, 400)):
        rows = top_label_rows(conf, correct, 15, w)
        moved = shrunk_rows(rows)
        k = rows.rows.shape[1] // 15
        before, after = rows.sums, moved.sums
        assert np.array_equal(before[: (k - 1) * 15], after[: (k - 1) * 15])
        live = before[:15] > 0  # the scores are above 1/2: 7 bins empty
        assert live.sum() == 8
        gap = before[(k - 1) * 15 :][live]
        mass = before[:15][live]
        pbar = before[(k - 2) * 15 : (k - 1) * 15][live] / mass
        sq = mass if w is None else before[15:30][live]
        s = np.sqrt(sq * pbar * (1 - pbar))
        want = np.sign(gap) * (np.sqrt(gap**2 + s**2) - s)
        np.testing.assert_allclose(after[(k - 1) * 15 :][live], want, atol=1e-9)
        assert np.all(after[(k - 1) * 15 :][~live] == 0)
        # the per-row residuals move with their bin (the standard error's)
        shift = np.zeros(15)
        shift[live] = (gap - want) / mass
        np.testing.assert_allclose(moved.resid, rows.resid - shift[rows.bin])


def test_power_anatomy_reads_the_tests_statistic():
    # bench_compare.py --part moments: the statistic is the difference of
    # the two gap-corrected ECEs, the plug-in difference compare_calibration's
    import bench_compare as bench

    out = bench.moments_cell(11, 300, 3, seed=0)
    stat, _, diff, ea, _, ca, eb, _, cb = out.T
    np.testing.assert_allclose(stat, ca - cb, atol=1e-12)
    np.testing.assert_allclose(diff, ea - eb, atol=1e-12)
    law = bench._law("cmp", 11)
    y, a, b = law.draw(np.random.default_rng([0, 11, 300]), 300)
    res = compare_calibration(y, a, b, n_resamples=9, random_state=0)
    assert res.difference == pytest.approx(diff[0], abs=1e-12)
