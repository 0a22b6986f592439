"""compare_calibration on the paired-model beds of benchmarks/_pair_beds.py,
whose population ECEs are exact finite sums: the beds' truths, and the
seeded fast variant of benchmarks/bench_compare.py (the user guide's table).

The beds are built with fewer atoms than the benchmark's (the same laws on a
coarser grid) to keep the suite fast."""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

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


def _pooled_shrinkage(gap, mass, s):
    """The shrunk standardised gaps, written out from the rule: the common
    gap per row mu = sum G / sum n, standardised Z = sum G / sqrt(sum s^2),
    shrunk by (sqrt(Z^2 + 1) - 1) / |Z|; every bin's deviation d = (G - n
    mu) / s by max(0, 1 - (B - 1) / sum d^2)."""
    mu = gap.sum() / mass.sum()
    big_z = abs(gap.sum()) / np.sqrt(np.sum(s**2))
    mus = mu * (np.sqrt(big_z**2 + 1) - 1) / big_z
    d = (gap - mass * mu) / s
    phi = max(0.0, 1.0 - (gap.size - 1) / np.sum(d**2))
    return mus * mass / s + phi * d


def test_the_gap_correction_pools_the_bins():
    # a calibrated model (gaps of both signs within their noise) is
    # corrected by its whole zero-gap bias; one that errs in one direction
    # by clear gaps keeps nearly all of its plug-in
    from sklcalib._utils._swap import ece_and_bias, gap_corrected, top_label_rows

    rng = np.random.default_rng(1)
    conf = rng.uniform(0.5, 1.0, 2000)
    for power, calibrated in ((1.0, True), (3.0, False)):
        correct = (rng.uniform(size=2000) < conf**power).astype(float)
        rows = top_label_rows(conf, correct, 15)
        ece, bias0, correction, _ = gap_corrected(rows.sums, rows.total, 15)
        per_bin = ece_and_bias(rows.sums, rows.total, 15, per_bin=True)[1]
        assert bias0 == pytest.approx(per_bin.sum())
        sums = rows.sums
        live = sums[:15] > 0
        mass, gap = sums[:15][live], sums[30:][live]
        pbar = sums[15:30][live] / mass
        zs = _pooled_shrinkage(gap, mass, np.sqrt(mass * pbar * (1 - pbar)))
        rho = np.exp(-(zs**2) / 2) - np.abs(zs) * np.sqrt(2 * np.pi) * ndtr(-np.abs(zs))
        assert correction == pytest.approx(np.sum(per_bin[live] * rho), rel=1e-10)
        if calibrated:
            assert correction > 0.85 * bias0
        else:
            assert correction < 0.05 * bias0 and ece - correction > 0.9 * ece


def test_the_calibrated_models_corrected_error_is_nearer_its_truth():
    # the calibrated model of the power bed on 500 rows (truth 0, plug-in
    # about 0.042): pooled, its gap-corrected ECE averaged 0.0095 over 400
    # draws, where the earlier bin-by-bin shrinkage, sign(G) (sqrt(G^2 +
    # s^2) - s), left 0.0137 (benchmarks/bench_compare.py --part moments);
    # the same 40 draws here, paired
    import bench_compare as bench

    from sklcalib._utils._binning import top_label
    from sklcalib._utils._swap import ece_and_bias, gap_corrected, top_label_rows
    from sklcalib._utils._validation import check_targets

    law = bench._law("cmp", 11)
    rng = np.random.default_rng(5)
    pooled, by_bin = [], []
    for _ in range(40):
        y, a, _ = law.draw(rng, 500)
        y_idx, pa, _, _ = check_targets(y, a, None, None)
        rows = top_label_rows(*top_label(pa, y_idx), 15)
        ece, _, correction, _ = gap_corrected(rows.sums, rows.total, 15)
        pooled.append(ece - correction)
        b0 = ece_and_bias(rows.sums, rows.total, 15, per_bin=True)[1]
        live = rows.sums[:15] > 0
        mass, gap = rows.sums[:15][live], rows.sums[30:][live]
        pbar = rows.sums[15:30][live] / mass
        sd = np.sqrt(mass * pbar * (1 - pbar))
        r = (np.sqrt(gap**2 + sd**2) - sd) / sd
        rho = np.exp(-(r**2) / 2) - r * np.sqrt(2 * np.pi) * ndtr(-r)
        by_bin.append(ece - np.sum(b0[live] * rho))
    pooled, by_bin = np.array(pooled), np.array(by_bin)
    assert by_bin.mean() > 0.01
    assert np.mean(by_bin - pooled) > 0.002
    assert abs(pooled.mean()) < 0.012


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
