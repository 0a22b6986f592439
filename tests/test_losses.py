"""sklcalib.losses against independent per-sample formulas (numpy/scipy, float64),
hand-computed reference values, finite differences, extreme logits, and the
criteria's contracts (reductions, validation, registry, pickling)."""

import copy
import io
import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers import draw_targets
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import lambertw, log_softmax

from sklcalib.losses import (
    CRITERIA,
    AdaDualFocalLoss,
    AdaFocalLoss,
    BrierLoss,
    DualFocalLoss,
    FocalCalibrationLoss,
    FocalLoss,
    InverseFocalLoss,
    LabelSmoothingLoss,
    MbLSLoss,
    MDCALoss,
    MMCELoss,
    SampleDependentFocalLoss,
    get_criterion,
)


def _graph_nodes(loss):
    """Names of the autograd nodes behind ``loss``."""
    nodes, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        nodes.add(type(node).__name__)
        stack += [f for f, _ in node.next_functions if f is not None]
    return nodes


# ---------------------------------------------------------------------------
# independent references (numpy, float64)
# ---------------------------------------------------------------------------


def _probs(z):
    logp = log_softmax(z, axis=1)
    return np.exp(logp), logp


def _pt(z, y):
    p, logp = _probs(z)
    rows = np.arange(len(y))
    return p, logp, p[rows, y], logp[rows, y]


def ref_focal(z, y, gamma):
    _, _, pt, lpt = _pt(z, y)
    return -((1 - pt) ** gamma) * lpt


def ref_flsd(z, y, gamma, thresholds):
    _, _, pt, lpt = _pt(z, y)
    out = np.empty_like(pt)
    for i, p in enumerate(pt):
        g = gamma
        for p0, g0 in sorted(thresholds, reverse=True):
            if p < p0:
                g = g0
        out[i] = -((1 - p) ** g) * lpt[i]
    return out


def _below(p_row, pt):
    """Probabilities strictly below pt, largest first (by plain comparison)."""
    return sorted((q for q in p_row if q < pt), reverse=True)


def ref_dual_term(p_row, pt, dual):
    """The per-sample dual term; for the mean variants the per-sample sum."""
    below = _below(p_row, pt)
    if dual == "max":
        return below[0] if below else 0.0
    if dual == "mean_all":
        return float(np.sum(below))
    kind, k = dual
    if kind == "kth":
        return below[k - 1] if len(below) >= k else 0.0
    return float(np.sum(below[:k]))


def ref_dual(z, y, gamma, dual="max"):
    p, _, pt, lpt = _pt(z, y)
    pj = np.array([ref_dual_term(p[i], pt[i], dual) for i in range(len(y))])
    if dual == "mean_all" or dual[0] == "mean":
        # Tao et al.'s ablation code: torch.mean over the batch of the sums
        pj = np.full_like(pj, pj.mean())
    return -((1 - pt + pj) ** gamma) * lpt


def ref_brier(z, y):
    p, _, _, _ = _pt(z, y)
    onehot = np.eye(z.shape[1])[y]
    return ((p - onehot) ** 2).sum(1)


def ref_fcl(z, y, gamma, lam):
    return ref_focal(z, y, gamma) + lam * ref_brier(z, y)


def ref_inverse(z, y, gamma):
    _, _, pt, lpt = _pt(z, y)
    return -((1 + pt) ** gamma) * lpt


def ref_label_smoothing(z, y, alpha):
    _, logp, _, _ = _pt(z, y)
    k = z.shape[1]
    q = (1 - alpha) * np.eye(k)[y] + alpha / k
    return -(q * logp).sum(1)


def ref_mmce(z, y, weighted, bandwidth=0.4, normalisation="mukhoti"):
    """MMCE / MMCE_w by explicit double sums over pairs: Kumar et al.'s
    normalisation, or Mukhoti et al.'s code (pair means divided by m² again,
    0 unless both groups are present)."""
    p, _ = _probs(z)
    r = p.max(1)
    c = (p.argmax(1) == y).astype(float)
    n = len(y)

    def k(a, b):
        return np.exp(-abs(a - b) / bandwidth)

    if not weighted:
        s = sum(
            (c[i] - r[i]) * (c[j] - r[j]) * k(r[i], r[j])
            for i in range(n)
            for j in range(n)
        )
        return np.sqrt(max(s / n**2, 0.0))
    cor = [i for i in range(n) if c[i] == 1]
    wrong = [i for i in range(n) if c[i] == 0]
    mc, mw = len(cor), len(wrong)
    if normalisation == "mukhoti":
        if not (mc and mw):
            return 0.0
        mc, mw = mc * mc, mw * mw
    s = 0.0
    if mc:
        s += sum((1 - r[i]) * (1 - r[j]) * k(r[i], r[j]) for i in cor for j in cor) / (
            mc * mc
        )
    if mw:
        s += sum(r[i] * r[j] * k(r[i], r[j]) for i in wrong for j in wrong) / (mw * mw)
    if mc and mw:
        s -= (
            2
            * sum((1 - r[i]) * r[j] * k(r[i], r[j]) for i in cor for j in wrong)
            / (mc * mw)
        )
    return np.sqrt(max(s, 0.0))


def ref_mmce_loss(z, y, lam, weighted, normalisation="mukhoti"):
    _, _, _, lpt = _pt(z, y)
    return -lpt + lam * ref_mmce(z, y, weighted, normalisation=normalisation)


def ref_ada(z, y, edges, gammas, dual):
    p, _, pt, lpt = _pt(z, y)
    out = np.empty_like(pt)
    for i in range(len(y)):
        pj = ref_dual_term(p[i], pt[i], "max") if dual else 0.0
        score = pt[i] - pj
        b = int(np.sum(edges[1:-1] < score))  # right-closed bins, 0 in the first
        g = gammas[b]
        base = 1 - pt[i] + pj if g >= 0 else 1 + pt[i] - pj
        assert g >= 0 or not dual  # AdaDualFocal's γ is never negative
        out[i] = -(base ** abs(g)) * lpt[i]
    return out


# ---------------------------------------------------------------------------
# data: targets that are the argmax, the argmin, and tied with another class
# ---------------------------------------------------------------------------


def make_logits(seed=0, n_classes=5, scale=2.0):
    """12 rows: targets argmax (4), argmin (4), tied with another class (4)."""
    rng = np.random.default_rng(seed)
    z = scale * rng.standard_normal((12, n_classes))
    y = np.empty(12, dtype=np.int64)
    y[:4] = z[:4].argmax(1)
    y[4:8] = z[4:8].argmin(1)
    for i in range(8, 12):
        a, b = rng.choice(n_classes, 2, replace=False)
        z[i, b] = z[i, a]  # exact tie between the target and class b
        y[i] = a
    # one row where the target ties with the maximum, one with three-way ties
    z[10, :] = [1.0, 1.0, -0.5, 0.3, 0.3][:n_classes]
    y[10] = 0
    z[11, :] = [0.2, 0.2, 0.2, -1.0, 0.7][:n_classes]
    y[11] = 1
    return z, y


def small_logits(seed):
    """6 rows, 4 classes: targets argmax, argmin, tied (2 each), for gradchecks."""
    z, y = make_logits(seed, n_classes=4)
    rows = [0, 1, 4, 5, 8, 9]
    return z[rows], y[rows]


CASES = [
    ("focal0", FocalLoss(gamma=0.0), lambda z, y: ref_focal(z, y, 0.0)),
    ("focal0.5", FocalLoss(gamma=0.5), lambda z, y: ref_focal(z, y, 0.5)),
    ("focal1.5", FocalLoss(gamma=1.5), lambda z, y: ref_focal(z, y, 1.5)),
    ("focal3", FocalLoss(gamma=3.0), lambda z, y: ref_focal(z, y, 3.0)),
    (
        "flsd53",
        SampleDependentFocalLoss(),
        lambda z, y: ref_flsd(z, y, 3.0, [(0.2, 5.0)]),
    ),
    (
        "flsd532",
        SampleDependentFocalLoss(2.0, ((0.5, 3.0), (0.2, 5.0))),
        lambda z, y: ref_flsd(z, y, 2.0, [(0.2, 5.0), (0.5, 3.0)]),
    ),
    (
        "flsd-lambert",
        SampleDependentFocalLoss(thresholds="lambert"),
        lambda z, y: ref_flsd(z, y, 3.0, [(0.2, 4.850554445506)]),
    ),
    (
        "flsd-small-gamma",
        SampleDependentFocalLoss(0.5, ((0.3, 0.0),)),
        lambda z, y: ref_flsd(z, y, 0.5, [(0.3, 0.0)]),
    ),
    ("dual5", DualFocalLoss(), lambda z, y: ref_dual(z, y, 5.0)),
    ("dual0.5", DualFocalLoss(gamma=0.5), lambda z, y: ref_dual(z, y, 0.5)),
    (
        "dual-kth2",
        DualFocalLoss(dual=("kth", 2)),
        lambda z, y: ref_dual(z, y, 5.0, ("kth", 2)),
    ),
    (
        "dual-kth9",
        DualFocalLoss(dual=("kth", 9)),
        lambda z, y: ref_dual(z, y, 5.0, ("kth", 9)),
    ),
    (
        "dual-mean3",
        DualFocalLoss(gamma=2.0, dual=("mean", 3)),
        lambda z, y: ref_dual(z, y, 2.0, ("mean", 3)),
    ),
    (
        "dual-mean-all",
        DualFocalLoss(gamma=2.0, dual="mean_all"),
        lambda z, y: ref_dual(z, y, 2.0, "mean_all"),
    ),
    ("fcl", FocalCalibrationLoss(), lambda z, y: ref_fcl(z, y, 2.0, 1.0)),
    (
        "fcl-0.5-3",
        FocalCalibrationLoss(gamma=0.5, lam=3.0),
        lambda z, y: ref_fcl(z, y, 0.5, 3.0),
    ),
    ("inverse", InverseFocalLoss(), lambda z, y: ref_inverse(z, y, 2.0)),
    ("inverse0.3", InverseFocalLoss(0.3), lambda z, y: ref_inverse(z, y, 0.3)),
    ("brier", BrierLoss(), ref_brier),
    ("ls", LabelSmoothingLoss(), lambda z, y: ref_label_smoothing(z, y, 0.05)),
    ("ls0.3", LabelSmoothingLoss(0.3), lambda z, y: ref_label_smoothing(z, y, 0.3)),
    ("mmce-w", MMCELoss(), lambda z, y: ref_mmce_loss(z, y, 2.0, True)),
    (
        "mmce-w-kumar",
        MMCELoss(normalisation="kumar"),
        lambda z, y: ref_mmce_loss(z, y, 2.0, True, "kumar"),
    ),
    (
        "mmce",
        MMCELoss(lam=0.7, weighted=False),
        lambda z, y: ref_mmce_loss(z, y, 0.7, False),
    ),
]


def _with_reduction(criterion, reduction):
    crit = copy.deepcopy(criterion)
    crit.reduction = reduction
    return crit


@pytest.mark.parametrize(
    ("label", "criterion", "ref"), CASES, ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("requires_grad", [False, True], ids=["eval", "train"])
def test_matches_per_sample_formula(label, criterion, ref, seed, requires_grad):
    # "train": logits that require grad take the fused training path
    z, y = make_logits(seed)
    logits = torch.tensor(z, requires_grad=requires_grad)
    got = _with_reduction(criterion, "none")(logits, torch.from_numpy(y)).detach()
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), ref(z, y), rtol=1e-9, atol=1e-12)


def _ada_with_state(cls, edges, gammas):
    loss = cls(n_bins=len(gammas), reduction="none")
    loss.bin_edges.copy_(torch.tensor(edges, dtype=torch.float64))
    loss.gammas.copy_(torch.tensor(gammas, dtype=torch.float64))
    return loss


@pytest.mark.parametrize("cls", [AdaFocalLoss, AdaDualFocalLoss])
def test_adafocal_forward_matches_formula(cls):
    edges = np.array([0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
    gammas = np.array([3.0, -1.5, 0.5, -0.2, 2.0])
    if cls is AdaDualFocalLoss:
        gammas = np.abs(gammas)
    z, y = make_logits(3, scale=1.5)
    loss = _ada_with_state(cls, edges, gammas)
    want = ref_ada(z, y, edges, gammas, dual=cls is AdaDualFocalLoss)
    for requires_grad in (False, True):
        logits = torch.tensor(z, requires_grad=requires_grad)
        got = loss(logits, torch.from_numpy(y)).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # every bin is exercised by this data, both signs
    _, _, pt, _ = _pt(z, y)
    assert len(np.unique(np.searchsorted(edges[1:-1], pt, side="left"))) >= 3


def test_adafocal_bins_are_right_closed():
    edges = [0.0, 0.5, 1.0]
    loss = _ada_with_state(AdaFocalLoss, edges, [2.0, -1.0])
    z = torch.log(
        torch.tensor([[0.5, 0.5], [0.5 + 1e-9, 0.5 - 1e-9]], dtype=torch.float64)
    )
    got = loss(z, torch.tensor([0, 0])).numpy()
    # p_t = 0.5 is in (0, 0.5] -> γ = 2 (focal); just above 0.5 -> γ = -1 (inverse)
    np.testing.assert_allclose(got[0], -(0.5**2) * np.log(0.5), rtol=1e-12)
    np.testing.assert_allclose(got[1], -(1.5 + 1e-9) * np.log(0.5 + 1e-9), rtol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_adafocal_lookup_bins_like_float64_edges_in_any_dtype(dtype, data):
    # the float64 edges are cast to the scores' dtype once (cached): each score,
    # one at an edge or a step either side of it included, must take the bin
    # that comparing it with the float64 edges gives
    inner = np.sort(
        data.draw(arrays(np.float64, 4, elements=st.floats(0.01, 0.99), unique=True))
    )
    loss = _ada_with_state(AdaFocalLoss, [0.0, *inner, 1.0], [1.0, -2.0, 3.0, 4.0, 5.0])
    at = torch.tensor(inner).to(dtype)  # rounded to nearest: above or below
    scores = torch.cat(
        [
            at,
            torch.nextafter(at, torch.zeros_like(at)),
            torch.nextafter(at, torch.ones_like(at)),
            torch.tensor([0.0, 1.0], dtype=dtype),
        ]
    )
    want = loss.gammas.numpy()[np.searchsorted(inner, scores.double().numpy())]
    got = loss.sample_gamma(scores)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.double().numpy(), want)


def test_adafocal_lookup_follows_every_change_of_the_state():
    loss = _ada_with_state(AdaFocalLoss, [0.0, 0.5, 1.0], [2.0, 3.0])
    p = torch.tensor([0.3, 0.7])
    gamma, sign = loss.gamma_and_sign(p)
    np.testing.assert_array_equal(gamma.numpy(), [2.0, 3.0])
    assert sign == 1.0  # no negative γ: the focal branch, no per-sample sign
    with torch.no_grad():
        loss.gammas[1] = -1.5  # in place: the sign split must appear
    gamma, sign = loss.gamma_and_sign(p)
    np.testing.assert_array_equal(gamma.numpy(), [2.0, 1.5])
    np.testing.assert_array_equal(sign.numpy(), [1.0, -1.0])
    np.testing.assert_array_equal(loss.sample_gamma(p).numpy(), [2.0, -1.5])
    loss.bin_edges.copy_(torch.tensor([0.0, 0.8, 1.0], dtype=torch.float64))
    np.testing.assert_array_equal(loss.sample_gamma(p).numpy(), [2.0, 2.0])
    other = _ada_with_state(AdaFocalLoss, [0.0, 0.2, 1.0], [7.0, 8.0])
    loss.load_state_dict(other.state_dict())
    np.testing.assert_array_equal(loss.sample_gamma(p).numpy(), [8.0, 8.0])
    loss.update_from_validation(np.array([[0.9, 0.1], [0.6, 0.4]]), np.array([1, 1]))
    np.testing.assert_array_equal(
        loss.sample_gamma(p.double()).numpy(),
        loss.gammas.numpy()[np.searchsorted(loss.bin_edges.numpy()[1:-1], [0.3, 0.7])],
    )
    copied = pickle.loads(pickle.dumps(loss))
    with torch.no_grad():
        copied.gammas.fill_(0.5)
    np.testing.assert_array_equal(copied.sample_gamma(p).numpy(), [0.5, 0.5])


# ---------------------------------------------------------------------------
# reference values (hand-computed from the authors' code semantics)
# ---------------------------------------------------------------------------


def _logits(p):
    return torch.log(torch.tensor([p], dtype=torch.float64))


def test_reference_values():
    assert FocalLoss(3.0)(
        _logits([0.3, 0.7]), torch.tensor([0])
    ).item() == pytest.approx(0.412963, abs=5e-7)
    flsd = SampleDependentFocalLoss()
    assert flsd(_logits([0.1, 0.9]), torch.tensor([0])).item() == pytest.approx(
        1.359653, abs=5e-7
    )
    # p_t = 0.2 is not below the threshold: γ = 3
    p_t = _logits([0.2 + 1e-12, 0.8 - 1e-12])
    assert torch.exp(p_t[0, 0]).item() >= 0.2
    assert flsd(p_t, torch.tensor([0])).item() == pytest.approx(0.824032, abs=5e-7)
    dfl = DualFocalLoss(gamma=5.0, reduction="none")
    got = dfl(_logits([0.5, 0.3, 0.2]).repeat(3, 1), torch.tensor([0, 1, 2]))
    np.testing.assert_allclose(got.numpy(), [0.227130, 0.710934, 0.527381], atol=5e-7)
    fcl = FocalCalibrationLoss(gamma=2.0, lam=1.0)
    assert fcl(_logits([0.5, 0.3, 0.2]), torch.tensor([0])).item() == pytest.approx(
        0.553287, abs=5e-7
    )
    inv = InverseFocalLoss(gamma=2.0)
    assert inv(_logits([0.7, 0.3]), torch.tensor([0])).item() == pytest.approx(
        1.030791, abs=5e-7
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_flsd_thresholds_are_exclusive_in_the_logits_dtype(dtype):
    # p_t equal to 0.2 (rounded to the dtype) is not below 0.2: γ = 3, as in the
    # authors' code; the next float down is
    loss = SampleDependentFocalLoss(2.0, ((0.2, 5.0), (0.5, 3.0)))
    at = torch.tensor([0.2, 0.5], dtype=dtype)
    below = torch.nextafter(at, torch.zeros_like(at))
    np.testing.assert_array_equal(loss.sample_gamma(at).numpy(), [3.0, 2.0])
    np.testing.assert_array_equal(loss.sample_gamma(below).numpy(), [5.0, 3.0])
    assert loss.sample_gamma(at).dtype == dtype


# ---------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------

GRAD_CASES = [c for c in CASES if not c[0].startswith("ls")] + [
    ("ada", AdaFocalLoss(n_bins=4, gamma_init=0.4), None),
    ("adadual", AdaDualFocalLoss(n_bins=4, gamma_init=0.7), None),
]


@pytest.mark.parametrize(
    ("label", "criterion", "ref"), GRAD_CASES, ids=[c[0] for c in GRAD_CASES]
)
def test_gradients_match_finite_differences(label, criterion, ref):
    z, y = small_logits(5)
    # gradcheck perturbs the logits by 1e-6; break exact ties, where the dual
    # term (a max) and MMCE's argmax are not differentiable
    z = z + 1e-3 * np.random.default_rng(1).standard_normal(z.shape)
    logits = torch.tensor(z, requires_grad=True)
    target = torch.from_numpy(y)
    assert torch.autograd.gradcheck(lambda x: criterion(x, target), (logits,))


@pytest.mark.parametrize(
    "criterion",
    [
        FocalLoss(0.5),
        FocalLoss(3.0),
        DualFocalLoss(0.7),
        InverseFocalLoss(0.5),
        AdaFocalLoss(n_bins=3, gamma_init=-0.4),
        FocalCalibrationLoss(1.5, 2.0),
        BrierLoss(),
        MMCELoss(),
    ],
    ids=repr,
)
def test_second_derivatives_match_finite_differences(criterion):
    # sklcalib.diagnostics takes Hessian-vector products through the criteria
    z, y = small_logits(6)
    z = z + 1e-3 * np.random.default_rng(2).standard_normal(z.shape)
    logits = torch.tensor(z, requires_grad=True)
    target = torch.from_numpy(y)
    assert torch.autograd.gradgradcheck(
        lambda x: criterion(x, target), (logits,), fast_mode=True
    )


def test_dual_focal_gradient_flows_through_pj():
    # classes: target 1 (p=.3), dual term class 2 (p=.2), class 0 above (p=.5)
    logits = _logits([0.5, 0.3, 0.2]).requires_grad_()
    DualFocalLoss(gamma=5.0)(logits, torch.tensor([1])).backward()
    p = np.array([0.5, 0.3, 0.2])
    pt, pj, lpt = 0.3, 0.2, np.log(0.3)
    base = 1 - pt + pj
    # L = -(1 - p_t + p_j)^γ log p_t; dp_k/dz = p_k (e_k - p)
    dL_dpt = 5 * base**4 * lpt - base**5 / pt
    dL_dpj = -5 * base**4 * lpt
    e = np.eye(3)
    want = dL_dpt * pt * (e[1] - p) + dL_dpj * pj * (e[2] - p)
    np.testing.assert_allclose(logits.grad.numpy()[0], want, rtol=1e-10)


ALL_CRITERIA = [
    FocalLoss(0.0),
    FocalLoss(0.3),
    FocalLoss(1.0),
    FocalLoss(1.5),
    FocalLoss(3.0),
    SampleDependentFocalLoss(),
    SampleDependentFocalLoss(0.5, ((0.2, 0.0), (0.6, 0.7))),
    SampleDependentFocalLoss(thresholds="lambert"),
    DualFocalLoss(),
    DualFocalLoss(0.4),
    DualFocalLoss(dual=("kth", 2)),
    DualFocalLoss(0.5, dual=("mean", 3)),
    DualFocalLoss(0.5, dual="mean_all"),
    FocalCalibrationLoss(),
    FocalCalibrationLoss(0.5, 2.0),
    InverseFocalLoss(),
    InverseFocalLoss(0.5),
    BrierLoss(),
    MMCELoss(),
    MMCELoss(weighted=False),
    MMCELoss(normalisation="kumar"),
    LabelSmoothingLoss(),
    AdaFocalLoss(gamma_init=0.3),
    AdaFocalLoss(gamma_init=-0.3),
    AdaDualFocalLoss(gamma_init=0.5),
    AdaDualFocalLoss(gamma_init=0.0),
]


@pytest.mark.parametrize("criterion", ALL_CRITERIA, ids=repr)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_finite_for_extreme_float32_logits(criterion, reduction):
    rng = np.random.default_rng(0)
    z = np.sign(rng.standard_normal((16, 6))) * 1e4
    z[0] = [1e4, -1e4, -1e4, -1e4, -1e4, -1e4]  # p_t = 1 exactly
    z[1] = [-1e4, 1e4, -1e4, -1e4, -1e4, -1e4]  # p_t = 0 (underflow)
    z[2] = 0.0  # all tied
    z[3] = [1e4, 1e4, -1e4, 0, 0, 1e4]  # target tied with the max
    y = rng.integers(0, 6, 16)
    y[:4] = 0
    crit = _with_reduction(criterion, reduction)
    logits = torch.tensor(z, dtype=torch.float32, requires_grad=True)
    loss = crit(logits, torch.from_numpy(y))
    loss.backward()
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss).all()
    assert torch.isfinite(logits.grad).all()


@pytest.mark.parametrize(
    "criterion", [FocalLoss(0.5), DualFocalLoss(0.5), FocalLoss(1.5)]
)
def test_hessian_vector_product_finite_at_certainty(criterion):
    logits = torch.tensor([[1e4, -1e4, 0.0], [3.0, 1.0, 0.0]], requires_grad=True)
    loss = criterion(logits, torch.tensor([0, 0]))
    (grad,) = torch.autograd.grad(loss, logits, create_graph=True)
    (hvp,) = torch.autograd.grad((grad * torch.ones_like(grad)).sum(), logits)
    assert torch.isfinite(grad).all() and torch.isfinite(hvp).all()


# ---------------------------------------------------------------------------
# reductions and equivalences
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("criterion", ALL_CRITERIA, ids=repr)
def test_reductions(criterion):
    z, y = make_logits(7)
    z, y = torch.from_numpy(z), torch.from_numpy(y)
    none = _with_reduction(criterion, "none")(z, y)
    assert none.shape == (len(y),)
    mean = _with_reduction(criterion, "mean")(z, y)
    total = _with_reduction(criterion, "sum")(z, y)
    assert mean.ndim == 0 and total.ndim == 0
    np.testing.assert_allclose(mean.item(), none.mean().item(), rtol=1e-12)
    np.testing.assert_allclose(total.item(), none.sum().item(), rtol=1e-12)
    assert criterion.reduction == "mean"  # the copies did not touch it


def test_focal_gamma0_is_cross_entropy_and_label_smoothing_is_torch():
    z, y = make_logits(8)
    z, y = torch.from_numpy(z), torch.from_numpy(y)
    for reduction in ("mean", "sum", "none"):
        torch.testing.assert_close(
            FocalLoss(0.0, reduction)(z, y), F.cross_entropy(z, y, reduction=reduction)
        )
        for alpha in (0.0, 0.05, 0.5, 1.0):
            torch.testing.assert_close(
                LabelSmoothingLoss(alpha, reduction)(z, y),
                F.cross_entropy(z, y, reduction=reduction, label_smoothing=alpha),
            )
    # dual and FCL reduce to focal, AdaFocal with γ = 0 to cross-entropy
    torch.testing.assert_close(
        FocalCalibrationLoss(2.0, 0.0)(z, y), FocalLoss(2.0)(z, y)
    )
    torch.testing.assert_close(DualFocalLoss(0.0)(z, y), F.cross_entropy(z, y))
    torch.testing.assert_close(
        AdaFocalLoss(gamma_init=0.0)(z, y), F.cross_entropy(z, y)
    )
    torch.testing.assert_close(MMCELoss(lam=0.0)(z, y), F.cross_entropy(z, y))
    # ("kth", 1) is "max"; ("mean", K) is "mean_all"
    k = z.shape[1]
    torch.testing.assert_close(
        DualFocalLoss(dual=("kth", 1))(z, y), DualFocalLoss()(z, y)
    )
    torch.testing.assert_close(
        DualFocalLoss(dual=("mean", k))(z, y), DualFocalLoss(dual="mean_all")(z, y)
    )


def test_mmce_zero_when_calibrated_and_weighted_differs():
    logits = torch.log(torch.tensor([[0.75, 0.25]] * 3 + [[0.25, 0.75]]))
    target = torch.tensor([0, 0, 1, 1])  # confidence 0.75, accuracy 3/4
    ce = F.cross_entropy(logits, target)
    torch.testing.assert_close(MMCELoss(weighted=False)(logits, target), ce)
    assert MMCELoss(weighted=True)(logits, target) > ce
    # the sqrt's gradient is finite (0) where MMCE = 0
    logits.requires_grad_()
    MMCELoss(weighted=False)(logits, target).backward()
    assert torch.isfinite(logits.grad).all()


# ---------------------------------------------------------------------------
# Lambert W rule (Mukhoti et al., Proposition 2)
# ---------------------------------------------------------------------------


def g_ratio(p, gamma):
    return (1 - p) ** gamma - gamma * p * (1 - p) ** (gamma - 1) * np.log(p)


def lambert_gamma(p0):
    """γ* written out from Proposition 2, independently of sklcalib."""
    a, b = 1 - p0, p0 * np.log(p0)
    return a / b + lambertw(-(a ** (1 - a / b)) / b * np.log(a), k=-1).real / np.log(a)


@pytest.mark.parametrize("p0", [0.05, 0.1, 0.19, 0.2, 0.3, 0.45])
def test_lambert_threshold_gamma(p0):
    loss = SampleDependentFocalLoss(gamma=1.0, thresholds=((p0, "lambert"),))
    (table,) = loss.gamma_table()
    gamma = table[1]
    assert gamma == pytest.approx(lambert_gamma(p0), rel=1e-10)
    assert g_ratio(p0, gamma) == pytest.approx(1.0, abs=1e-10)
    # below p0 focal loss speeds training up, above it regularises
    assert g_ratio(0.9 * p0, gamma) > 1 > g_ratio(min(1.1 * p0, 0.99), gamma)
    # samples below p0 take γ*, the others `gamma`
    p_t = torch.tensor([0.5 * p0, p0, 0.99], dtype=torch.float64)
    np.testing.assert_allclose(loss.sample_gamma(p_t).numpy(), [gamma, 1.0, 1.0])


def test_lambert_shorthand_is_p0_02():
    short = SampleDependentFocalLoss(thresholds="lambert").gamma_table()
    assert (
        short == SampleDependentFocalLoss(thresholds=((0.2, "lambert"),)).gamma_table()
    )
    assert short[0][1] == pytest.approx(4.850554, abs=1e-6)


# ---------------------------------------------------------------------------
# AdaFocal update
# ---------------------------------------------------------------------------


def test_adafocal_update_by_hand():
    # 10 validation samples, 3 bins -> groups of 4, 3, 3 in confidence order
    y_prob = np.array(
        [
            [0.95, 0.05],  # conf .95 correct
            [0.60, 0.40],  # .60 wrong
            [0.55, 0.45],  # .55 wrong
            [0.30, 0.70],  # .70 correct
            [0.90, 0.10],  # .90 correct
            [0.52, 0.48],  # .52 correct
            [0.35, 0.65],  # .65 wrong
            [0.80, 0.20],  # .80 wrong
            [0.99, 0.01],  # .99 correct
            [0.15, 0.85],  # .85 correct
        ]
    )
    y_true = np.array([0, 1, 1, 1, 0, 0, 0, 1, 0, 1])
    loss = AdaFocalLoss(n_bins=3, gamma_init=1.0, lam=1.0)
    loss.gammas.copy_(torch.tensor([0.21, -0.5, 19.0], dtype=torch.float64))
    got = loss.update_from_validation(y_prob, y_true)
    # sorted confidences: .52 .55 .60 .65 | .70 .80 .85 | .90 .95 .99
    gap0 = np.mean([0.52, 0.55, 0.60, 0.65]) - 1 / 4  # over-confident: +0.33
    gap1 = np.mean([0.70, 0.80, 0.85]) - 2 / 3
    gap2 = np.mean([0.90, 0.95, 0.99]) - 1.0  # under-confident
    # bin 0: 0.21 > 0 -> 0.21·e^{0.33} = 0.292 (stays focal)
    # bin 1: -0.5 -> -0.5·e^{-gap1} = -0.5·e^{-0.117} = -0.445 (stays inverse)
    # bin 2: 19 -> 19·e^{gap2} = 19·e^{-0.053} = 18.01
    want = [0.21 * np.exp(gap0), -0.5 * np.exp(-gap1), 19.0 * np.exp(gap2)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(loss.gammas.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(loss.bin_edges.numpy(), [0.0, 0.65, 0.85, 1.0])

    # sign flips: a small positive γ in an under-confident bin becomes -0.2,
    # a small negative γ in an over-confident bin becomes +0.2; clipping
    loss.gammas.copy_(torch.tensor([-0.21, 0.21, 19.9], dtype=torch.float64))
    y_prob2 = np.array([[0.6, 0.4]] * 3 + [[0.7, 0.3]] * 3 + [[0.9, 0.1]] * 3)
    # bin 0 (.6): all wrong (gap +0.6): -0.21·e^{-0.6} = -0.115 -> +0.2
    # bin 1 (.7): all correct (gap -0.3): 0.21·e^{-0.3} = 0.156 -> -0.2
    # bin 2 (.9): all wrong (gap +0.9): 19.9·e^{0.9} = 48.9 -> clipped to 20
    y_true2 = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1])
    got2 = loss.update_from_validation(y_prob2, y_true2)
    np.testing.assert_allclose(got2, [0.2, -0.2, 20.0])
    np.testing.assert_allclose(loss.bin_edges.numpy(), [0.0, 0.6, 0.7, 1.0])
    # a negative γ driven below gamma_min is clipped too
    loss.gammas.copy_(torch.tensor([-1.9, -1.9, -1.9], dtype=torch.float64))
    got3 = loss.update_from_validation(y_prob2, 1 - y_true2)  # all under-confident?
    gaps = [0.6 - 1.0, 0.7 - 0.0, 0.9 - 1.0]
    want3 = np.clip([-1.9 * np.exp(-g) for g in gaps], -2.0, 20.0)
    np.testing.assert_allclose(got3, want3)
    assert got3[0] == -2.0


def test_adafocal_update_accepts_tensors_and_few_samples():
    loss = AdaFocalLoss(n_bins=4)
    y_prob = torch.tensor([[0.9, 0.1], [0.3, 0.7]], dtype=torch.float32)
    got = loss.update_from_validation(y_prob, torch.tensor([0, 0]))
    # two non-empty groups (0.7 wrong, 0.9 correct); the empty ones keep γ
    np.testing.assert_allclose(
        got, [np.exp(0.7), np.exp(0.9 - 1.0), 1.0, 1.0], rtol=1e-6
    )
    np.testing.assert_allclose(
        loss.bin_edges.numpy(), [0.0, 0.7, 0.9, 0.9, 1.0], rtol=1e-6
    )


def test_adadualfocal_update_is_the_authors_rule():
    # Tao et al.'s code: validation *confidence* bins, γ ← min(γ·exp(λE_b), γ_max),
    # no sign switch, no lower clip; training looks p_t - p_j up in those bins
    y_prob = np.array(
        [[0.5, 0.3, 0.2], [0.8, 0.1, 0.1], [0.4, 0.4, 0.2], [0.6, 0.3, 0.1]]
    )
    y_true = np.array([0, 0, 1, 2])
    # confidences .5 (correct) .8 (correct) .4 (wrong) .6 (wrong)
    # sorted: .4 .5 | .6 .8 -> edges 0, 0.5, 1
    loss = AdaDualFocalLoss(n_bins=2, lam=1.0)
    loss.gammas.copy_(torch.tensor([0.1, 19.5], dtype=torch.float64))
    got = loss.update_from_validation(y_prob, y_true)
    np.testing.assert_allclose(loss.bin_edges.numpy(), [0.0, 0.5, 1.0])
    gap0 = 0.45 - 0.5  # under-confident: γ shrinks, but stays positive
    gap1 = 0.7 - 0.5  # over-confident: 19.5·e^0.2 = 23.8 -> clipped to 20
    assert 19.5 * np.exp(gap1) > 20.0
    np.testing.assert_allclose(got, [0.1 * np.exp(gap0), 20.0], rtol=1e-12)
    # AdaFocal's rule would switch the small γ to -0.2 here
    ada = AdaFocalLoss(n_bins=2, lam=50.0)
    ada.gammas.copy_(torch.tensor([0.1, 1.0], dtype=torch.float64))
    assert ada.update_from_validation(y_prob, y_true)[0] == -0.2
    loss.lam = 50.0
    small = loss.update_from_validation(y_prob, y_true)[0]
    assert small == pytest.approx(0.1 * np.exp(gap0) * np.exp(50 * gap0), rel=1e-12)
    assert 0 < small < 0.01
    # training: p = (.55, .45), y = 0 -> p_t - p_j = 0.1 lies in the first
    # confidence bin, though the confidence 0.55 lies in the second
    loss.reduction = "none"
    z = torch.log(torch.tensor([[0.55, 0.45]], dtype=torch.float64))
    want = -((1 - 0.55 + 0.45) ** small) * np.log(0.55)
    for requires_grad in (False, True):
        got = loss(z.clone().requires_grad_(requires_grad), torch.tensor([0]))
        np.testing.assert_allclose(got.detach().numpy(), [want], rtol=1e-12)


def test_mmce_normalisations_by_hand():
    # r = 0.75 and k = 1 for every pair; 3 correct, 1 wrong:
    # S_cc = 9·(1/4)², S_ww = (3/4)², S_cw = 3·(1/4)(3/4), all 9/16
    logits = torch.log(torch.tensor([[0.75, 0.25]] * 3 + [[0.25, 0.75]]))
    target = torch.tensor([0, 0, 1, 1])
    ce = F.cross_entropy(logits, target)
    kumar = np.sqrt(9 / 16 / 9 + 9 / 16 / 1 - 2 * 9 / 16 / 3)
    mukhoti = np.sqrt(9 / 16 / 81 + 9 / 16 / 1 - 2 * 9 / 16 / 9)
    got_k = MMCELoss(normalisation="kumar")(logits, target)
    got_m = MMCELoss()(logits, target)
    np.testing.assert_allclose(got_k.item(), ce.item() + 2 * kumar, rtol=1e-6)
    np.testing.assert_allclose(got_m.item(), ce.item() + 2 * mukhoti, rtol=1e-6)
    # a batch without wrong samples: Mukhoti et al.'s code gives MMCE_w = 0,
    # Kumar et al.'s formula keeps the correct samples' term
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    target = torch.tensor([0, 1])
    ce = F.cross_entropy(logits, target)
    torch.testing.assert_close(MMCELoss()(logits, target), ce)
    assert MMCELoss(normalisation="kumar")(logits, target) > ce + 0.1


def test_dual_focal_mean_ablation_is_a_batch_mean_by_hand():
    # Tao et al.'s ablation code: 1 - p_t + mean_batch(p_j + p_3)
    p = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]], dtype=torch.float64)
    target = torch.tensor([1, 3])
    # below p_t: row 0 (.2, .1) -> sum .3; row 1 (.3, .2) -> sum .5; mean .4
    want = [-(1.1**2) * np.log(0.3), -(1.0**2) * np.log(0.4)]
    loss = DualFocalLoss(gamma=2.0, dual=("mean", 2), reduction="none")
    logits = p.log().requires_grad_()
    got = loss(logits, target)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
    # the batch term couples the rows: row 1's probabilities move row 0's loss
    (grad,) = torch.autograd.grad(got[0], logits)
    assert grad[1].abs().max() > 1e-3
    # all below p_t: row 0 .3, row 1 .6 -> .45
    loss.dual = "mean_all"
    want = [-(1.15**2) * np.log(0.3), -(1.05**2) * np.log(0.4)]
    np.testing.assert_allclose(loss(p.log(), target).numpy(), want, rtol=1e-12)


def test_lambert_above_one_half_raises():
    # γ*(p0) is 0 for p0 >= 0.5: a "lambert" entry there would silently be
    # cross-entropy (e.g. on [0.2, 0.5) of a FLSD-532-like table)
    with pytest.raises(ValueError, match=r"thresholds.*0\.5"):
        SampleDependentFocalLoss(thresholds=((0.2, "lambert"), (0.5, "lambert")))
    with pytest.raises(ValueError, match="thresholds"):
        SampleDependentFocalLoss(thresholds=((0.7, "lambert"),))
    table = SampleDependentFocalLoss(
        thresholds=((0.2, "lambert"), (0.4, "lambert"))
    ).gamma_table()
    assert table[0][1] > table[1][1] > 0


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

BAD_ARGS = [
    (FocalLoss, {"gamma": -1.0}, "gamma"),
    (FocalLoss, {"gamma": float("nan")}, "gamma"),
    (FocalLoss, {"gamma": "3"}, "gamma"),
    (FocalLoss, {"reduction": "avg"}, "reduction"),
    (SampleDependentFocalLoss, {"gamma": -0.1}, "gamma"),
    (SampleDependentFocalLoss, {"thresholds": "weibull"}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": ((1.2, 5.0),)}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": ((0.2, -5.0),)}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": ((0.2,),)}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": 0.2}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": ((0.2, 5.0), (0.2, 3.0))}, "thresholds"),
    (SampleDependentFocalLoss, {"thresholds": ((0.2, "exact"),)}, "thresholds"),
    (DualFocalLoss, {"gamma": -5.0}, "gamma"),
    (DualFocalLoss, {"dual": "min"}, "dual"),
    (DualFocalLoss, {"dual": ("kth", 0)}, "dual"),
    (DualFocalLoss, {"dual": ("mean", 1.5)}, "dual"),
    (FocalCalibrationLoss, {"lam": -1.0}, "lam"),
    (FocalCalibrationLoss, {"gamma": -2.0}, "gamma"),
    (InverseFocalLoss, {"gamma": -2.0}, "gamma"),
    (BrierLoss, {"reduction": None}, "reduction"),
    (MMCELoss, {"lam": -2.0}, "lam"),
    (MMCELoss, {"bandwidth": 0.0}, "bandwidth"),
    (MMCELoss, {"weighted": "yes"}, "weighted"),
    (LabelSmoothingLoss, {"alpha": 1.5}, "alpha"),
    (LabelSmoothingLoss, {"alpha": -0.1}, "alpha"),
    (AdaFocalLoss, {"n_bins": 0}, "n_bins"),
    (AdaFocalLoss, {"n_bins": 2.5}, "n_bins"),
    (AdaFocalLoss, {"lam": -1.0}, "lam"),
    (AdaFocalLoss, {"gamma_min": 3.0, "gamma_max": 2.0}, "gamma_min"),
    (AdaFocalLoss, {"gamma_init": 30.0}, "gamma_init"),
    (AdaFocalLoss, {"switch_threshold": -0.2}, "switch_threshold"),
    (AdaDualFocalLoss, {"reduction": "max"}, "reduction"),
    (AdaDualFocalLoss, {"gamma_init": -0.5}, "gamma_init"),
    (AdaDualFocalLoss, {"gamma_max": -1.0}, "gamma_max"),
    (MMCELoss, {"normalisation": "paper"}, "normalisation"),
]


@pytest.mark.parametrize(("cls", "kwargs", "name"), BAD_ARGS)
def test_bad_arguments_raise_value_error_naming_them(cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        cls(**kwargs)


def test_parameters_changed_in_place_are_checked_at_call():
    loss = FocalLoss()
    loss.gamma = -1.0  # e.g. set by a callback
    with pytest.raises(ValueError, match="gamma"):
        loss(torch.zeros(2, 3), torch.tensor([0, 1]))


def test_parameters_changed_between_batches_are_checked():
    # a forward skips the check only for the very (immutable) objects it last
    # checked: a new value, or a mutable one changed in place, is checked again
    logits, target = torch.zeros(2, 3), torch.tensor([0, 1])
    loss = FocalLoss()
    loss(logits, target)
    loss.gamma = -1.0
    with pytest.raises(ValueError, match="gamma"):
        loss(logits, target)
    loss.gamma = 2.0
    loss(logits, target)
    loss.reduction = "median"
    with pytest.raises(ValueError, match="reduction"):
        loss(logits, target)
    flsd = SampleDependentFocalLoss(3.0, [[0.2, 5.0]])
    flsd(logits, target)
    flsd.thresholds[0][1] = -5.0  # in place: the same list object
    with pytest.raises(ValueError, match=r"gamma|threshold"):
        flsd(logits, target)


@pytest.mark.parametrize(
    ("logits", "target", "name"),
    [
        (torch.zeros(3), torch.tensor([0, 1, 2]), "logits"),
        (torch.zeros(3, 2, dtype=torch.int64), torch.tensor([0, 1, 1]), "logits"),
        (torch.zeros(0, 2), torch.zeros(0, dtype=torch.int64), "logits"),
        (torch.zeros(3, 2), torch.tensor([0, 1]), "target"),
        (torch.zeros(3, 2), torch.tensor([0.0, 1.0, 1.0]), "target"),
        (torch.zeros(3, 2), torch.tensor([0, 1, 2]), "target"),
        (torch.zeros(3, 2), torch.tensor([0, -1, 1]), "target"),
        (np.zeros((3, 2)), torch.tensor([0, 1, 1]), "logits"),
    ],
)
@pytest.mark.parametrize("cls", [FocalLoss, DualFocalLoss, MMCELoss, AdaFocalLoss])
def test_bad_input_raises_value_error(cls, logits, target, name):
    with pytest.raises(ValueError, match=name):
        cls()(logits, target)


@pytest.mark.parametrize(
    ("y_prob", "y_true", "name"),
    [
        (np.array([0.9, 0.1]), np.array([0]), "y_prob"),
        (np.array([[0.9, 0.2]]), np.array([0]), "y_prob"),
        (np.array([[np.nan, 1.0]]), np.array([0]), "y_prob"),
        (np.array([[1.5, -0.5]]), np.array([0]), "y_prob"),
        (np.array([[0.9, 0.1]]), np.array([0, 1]), "y_true"),
        (np.array([[0.9, 0.1]]), np.array([2]), "y_true"),
        (np.array([[0.9, 0.1]]), np.array([0.0]), "y_true"),
        (np.empty((0, 2)), np.empty(0, dtype=int), "y_prob"),
    ],
)
def test_bad_validation_input(y_prob, y_true, name):
    loss = AdaFocalLoss(n_bins=2)
    before = loss.gammas.clone()
    with pytest.raises(ValueError, match=name):
        loss.update_from_validation(y_prob, y_true)
    torch.testing.assert_close(loss.gammas, before)


# ---------------------------------------------------------------------------
# registry, pickling, skorch routing
# ---------------------------------------------------------------------------


def test_registry():
    names = {
        "focal": FocalLoss,
        "flsd53": SampleDependentFocalLoss,
        "dual_focal": DualFocalLoss,
        "fcl": FocalCalibrationLoss,
        "inverse_focal": InverseFocalLoss,
        "brier": BrierLoss,
        "mmce": MMCELoss,
        "label_smoothing": LabelSmoothingLoss,
        "adafocal": AdaFocalLoss,
        "adadualfocal": AdaDualFocalLoss,
        "mbls": MbLSLoss,
        "mdca": MDCALoss,
        "ce": torch.nn.CrossEntropyLoss,
    }
    assert CRITERIA == names
    for name, cls in names.items():
        assert get_criterion(name) is cls
        if cls is not torch.nn.CrossEntropyLoss:
            assert cls.name == name
    with pytest.raises(ValueError, match=r"'dual_focal'.*'focal'"):
        get_criterion("focall")
    with pytest.raises(ValueError, match="valid names"):
        get_criterion(None)


@pytest.mark.parametrize("criterion", ALL_CRITERIA, ids=repr)
def test_pickle_and_deepcopy(criterion):
    z, y = make_logits(9)
    z, y = torch.from_numpy(z), torch.from_numpy(y)
    if isinstance(criterion, AdaFocalLoss):
        criterion = copy.deepcopy(criterion)
        criterion.update_from_validation(torch.softmax(z, 1), y)
    for clone in (pickle.loads(pickle.dumps(criterion)), copy.deepcopy(criterion)):
        assert type(clone) is type(criterion)
        torch.testing.assert_close(clone(z, y), criterion(z, y), rtol=0, atol=0)
    buf = io.BytesIO()
    torch.save(criterion.state_dict(), buf)
    if isinstance(criterion, AdaFocalLoss):
        assert set(criterion.state_dict()) == {"bin_edges", "gammas"}


def test_adafocal_state_moves_with_to():
    loss = AdaFocalLoss(n_bins=3).to(torch.float32)  # buffers keep their meaning
    assert loss.bin_edges.shape == (4,) and loss.gammas.shape == (3,)
    z = torch.randn(4, 3)
    assert torch.isfinite(loss(z, torch.tensor([0, 1, 2, 0])))


def test_skorch_routes_and_resets_criterion_parameters():
    from skorch import NeuralNetClassifier

    net = NeuralNetClassifier(
        torch.nn.Linear(4, 3),
        criterion=FocalCalibrationLoss,
        criterion__gamma=1.0,
        max_epochs=1,
        train_split=None,
    ).initialize()
    assert net.criterion_.gamma == 1.0 and net.criterion_.lam == 1.0
    net.set_params(criterion__gamma=4.0, criterion__lam=0.5)
    assert (net.criterion_.gamma, net.criterion_.lam) == (4.0, 0.5)
    with pytest.raises(ValueError, match="lam"):
        net.set_params(criterion__lam=-1.0)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

logit_rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 6), st.integers(2, 6)),
    elements=st.floats(-30, 30, allow_nan=False),
)


@given(z=logit_rows, gamma=st.floats(0.0, 8.0), data=st.data())
def test_focal_between_zero_and_cross_entropy(z, gamma, data):
    zt, yt = draw_targets(data, z)
    ce = F.cross_entropy(zt, yt, reduction="none")
    focal = FocalLoss(gamma, "none")(zt, yt)
    dual = DualFocalLoss(gamma, reduction="none")(zt, yt)
    tol = 1e-12
    # 0 <= FL <= DFL <= CE: 1 - p_t <= 1 - p_t + p_j <= 1 since p_j < p_t
    assert torch.all(focal >= -tol)
    assert torch.all(focal <= dual + tol)
    assert torch.all(dual <= ce + tol)


ONE_PER_CLASS = [
    FocalLoss(0.3),
    SampleDependentFocalLoss(0.5, ((0.2, 0.0), (0.6, 0.7))),
    DualFocalLoss(0.4, dual=("mean", 2)),
    FocalCalibrationLoss(0.5, 2.0),
    InverseFocalLoss(0.5),
    BrierLoss(),
    MMCELoss(weighted=False),
    LabelSmoothingLoss(),
    AdaFocalLoss(gamma_init=-0.3),
    AdaDualFocalLoss(gamma_init=0.5),
]


@settings(max_examples=25)
@given(z=logit_rows, data=st.data())
def test_losses_are_nonnegative(z, data):
    zt, yt = draw_targets(data, z)
    for criterion in ONE_PER_CLASS:
        loss = _with_reduction(criterion, "none")(zt, yt)
        assert torch.all(loss >= -1e-12), criterion


@pytest.mark.parametrize("normalisation", ["mukhoti", "kumar"])
def test_mmce_training_path_is_one_node_and_exact_without_wrong_samples(normalisation):
    # the training path is the closed-form node; a batch whose predictions are
    # all correct has MMCE_w = 0 under "mukhoti" (both groups needed) and the
    # correct group alone under "kumar": gradients as the composed version's
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]], requires_grad=True)
    target = torch.tensor([0, 1, 0])
    criterion = MMCELoss(lam=1.0, normalisation=normalisation, reduction="sum")
    loss = criterion(logits, target)
    nodes = _graph_nodes(loss)
    assert nodes == {"MMCENodeBackward", "AccumulateGrad"}
    (fused,) = torch.autograd.grad(loss, logits)
    composed = criterion._per_sample(logits, target).sum()
    (expected,) = torch.autograd.grad(composed, logits)
    torch.testing.assert_close(fused, expected, rtol=1e-6, atol=1e-7)
