"""MbLSLoss and MDCALoss against the authors' code semantics: independent numpy
references, hand-computed values, finite differences, the criteria's contracts
and the hyper-parameter search through NetClassifier."""

import copy
import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers import draw_targets
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import log_softmax, softmax
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from sklcalib.losses import CRITERIA, MbLSLoss, MDCALoss, get_criterion, mdca

# ---------------------------------------------------------------------------
# references in numpy, float64, written from the authors' code semantics:
# MbLS (by-liu/MbLS, LogitMarginL1): CE(mean) + α · relu(max_k z_k - z_j - m)
#   averaged over the whole (N, K) matrix, the max class included;
# MDCA (mdca-loss/MDCA-Calibration, ClassficationAndMDCA): base loss (mean CE,
#   or mean focal) + β · (1/K) Σ_c |mean_i p_ic - mean_i [y_i = c]|.
# ---------------------------------------------------------------------------


def ref_ce(z, y):
    return -log_softmax(z, axis=1)[np.arange(len(y)), y]


def ref_mbls(z, y, margin, alpha, class_reduction="sum"):
    """Per-sample MbLS losses."""
    z = np.asarray(z, dtype=np.float64)
    n, k = z.shape
    penalty = np.zeros(n)
    for i in range(n):
        for j in range(k):  # every class, the largest included
            penalty[i] += max(0.0, z[i].max() - z[i, j] - margin)
    if class_reduction == "mean":
        penalty /= k
    return ref_ce(z, y) + alpha * penalty


def ref_mdca_term(z, y):
    p = softmax(np.asarray(z, dtype=np.float64), axis=1)
    k = p.shape[1]
    total = 0.0
    for c in range(k):
        total += abs(p[:, c].mean() - np.mean(y == c))
    return total / k


def ref_mdca(z, y, beta, gamma=0.0):
    """Per-sample MDCA losses: base loss + β · MDCA of the batch."""
    logp = log_softmax(np.asarray(z, dtype=np.float64), axis=1)
    logp_t = logp[np.arange(len(y)), y]
    base = -((1 - np.exp(logp_t)) ** gamma) * logp_t
    return base + beta * ref_mdca_term(z, y)


def random_logits(seed, n=16, k=5, scale=4.0):
    rng = np.random.default_rng(seed)
    z = scale * rng.standard_normal((n, k))
    y = rng.integers(0, k, n)
    return z, y


CASES = [
    ("mbls", MbLSLoss(), lambda z, y: ref_mbls(z, y, 10.0, 0.1)),
    ("mbls-m1", MbLSLoss(margin=1.0, alpha=0.5), lambda z, y: ref_mbls(z, y, 1, 0.5)),
    (
        "mbls-sum",
        MbLSLoss(margin=2.0, alpha=0.3, class_reduction="sum"),
        lambda z, y: ref_mbls(z, y, 2.0, 0.3, "sum"),
    ),
    ("mbls-m0", MbLSLoss(margin=0.0, alpha=1.0), lambda z, y: ref_mbls(z, y, 0, 1)),
    ("mbls-a0", MbLSLoss(alpha=0.0), lambda z, y: ref_ce(z, y)),
    ("mdca", MDCALoss(), lambda z, y: ref_mdca(z, y, 1.0)),
    ("mdca-b5", MDCALoss(beta=5.0), lambda z, y: ref_mdca(z, y, 5.0)),
    ("mdca-fl", MDCALoss(beta=1.0, gamma=1.0), lambda z, y: ref_mdca(z, y, 1, 1)),
    ("mdca-b0", MDCALoss(beta=0.0, gamma=2.0), lambda z, y: ref_mdca(z, y, 0, 2)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("label", "criterion", "ref"), CASES, ids=IDS)
@pytest.mark.parametrize("scale", [0.5, 4.0, 12.0])
@pytest.mark.parametrize("requires_grad", [False, True], ids=["eval", "train"])
def test_matches_reference_for_every_reduction(
    label, criterion, ref, scale, requires_grad
):
    z, y = random_logits(int(scale * 10), scale=scale)
    want = ref(z, y)
    logits = torch.tensor(z, requires_grad=requires_grad)
    target = torch.from_numpy(y)
    for reduction, expected in (
        ("none", want),
        ("mean", want.mean()),
        ("sum", want.sum()),
    ):
        crit = copy.deepcopy(criterion)
        crit.reduction = reduction
        got = crit(logits, target).detach().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_mbls_hand_computed():
    # row 1: distances to the largest logit 0, 12, 11 -> above m = 10: 0, 2, 1
    # row 2: largest 15, distances 15, 12, 0 -> 5, 2, 0
    z = torch.tensor([[12.0, 0.0, 1.0], [0.0, 3.0, 15.0]], dtype=torch.float64)
    y = torch.tensor([0, 2])
    ce = [np.log(1 + np.exp(-12) + np.exp(-11)), np.log(1 + np.exp(-15) + np.exp(-12))]
    # the authors' mean over the 2 x 3 matrix: (0+2+1+5+2+0) / 6 = 5/3
    want = np.mean(ce) + 0.1 * 10 / 6
    got = MbLSLoss(class_reduction="mean")(z, y).item()
    assert got == pytest.approx(want, rel=1e-14)
    # the paper's sum over classes (the default): per sample 3 and 7, mean 5
    assert MbLSLoss()(z, y).item() == pytest.approx(np.mean(ce) + 0.1 * 5.0, rel=1e-14)
    # the largest class is in the mean: with m = 0, row 1 pays (0 + 12 + 11) / 3
    got = MbLSLoss(margin=0.0, alpha=1.0, class_reduction="mean", reduction="none")(
        z, y
    )[0].item()
    assert got == pytest.approx(ce[0] + 23 / 3, rel=1e-14)


def test_mdca_hand_computed():
    # p rows (.5,.3,.2), (.2,.3,.5), (.6,.2,.2); targets 0, 1, 0
    p = [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]
    z = torch.log(torch.tensor(p, dtype=torch.float64))
    y = torch.tensor([0, 1, 0])
    # mean p = (1.3/3, .8/3, .9/3); class fractions (2/3, 1/3, 0)
    gaps = [abs(1.3 / 3 - 2 / 3), abs(0.8 / 3 - 1 / 3), abs(0.9 / 3 - 0)]
    term = sum(gaps) / 3
    assert mdca(z, y).item() == pytest.approx(term, rel=1e-12)
    ce = -np.log([0.5, 0.3, 0.6])
    assert MDCALoss()(z, y).item() == pytest.approx(ce.mean() + term, rel=1e-12)
    focal = -(1 - np.array([0.5, 0.3, 0.6])) * np.log([0.5, 0.3, 0.6])
    got = MDCALoss(beta=2.0, gamma=1.0)(z, y).item()
    assert got == pytest.approx(focal.mean() + 2 * term, rel=1e-12)


def test_mdca_is_zero_when_batch_means_match_class_fractions():
    # two samples, one per class, mirrored probabilities: mean p = (.5, .5)
    z = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64))
    assert mdca(z, torch.tensor([0, 1])).item() == pytest.approx(0.0, abs=1e-15)
    assert mdca(z, torch.tensor([0, 0])).item() == pytest.approx(0.5)


GRAD_CASES = [
    MbLSLoss(margin=1.0, alpha=0.5),
    MbLSLoss(margin=3.0, alpha=2.0, class_reduction="sum"),
    MbLSLoss(),  # the default margin 10: logits spread enough to cross it
    MDCALoss(),
    MDCALoss(beta=3.0, gamma=1.5),
]


@pytest.mark.parametrize("criterion", GRAD_CASES, ids=repr)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gradients_match_finite_differences(criterion, reduction):
    z, y = random_logits(3, n=8, k=4, scale=6.0)
    # gradcheck perturbs by 1e-6: stay away from the kinks (a tie for the
    # largest logit, a distance equal to the margin, a zero MDCA gap)
    top = np.sort(z, axis=1)
    assert np.min(top[:, -1] - top[:, -2]) > 1e-3
    distance = z.max(1, keepdims=True) - z
    assert np.min(np.abs(distance - criterion.__dict__.get("margin", -1))) > 1e-3
    assert np.any(distance > 10.0)
    crit = copy.deepcopy(criterion)
    crit.reduction = reduction
    logits = torch.tensor(z, requires_grad=True)
    target = torch.from_numpy(y)
    assert torch.autograd.gradcheck(lambda x: crit(x, target), (logits,))


def test_mbls_gradient_by_hand():
    # d/dz of α Σ_j relu(z_max - z_j - m): +α·(#active) on the max logit,
    # -α on each active j; plus the CE gradient p - e_y (the mean over the
    # classes divides the penalty's part by K)
    for reduction, scale in (("sum", 1.0), ("mean", 1 / 3)):
        z = torch.tensor([[12.0, 0.0, 1.0]], dtype=torch.float64, requires_grad=True)
        MbLSLoss(class_reduction=reduction)(z, torch.tensor([1])).backward()
        p = softmax(z.detach().numpy(), axis=1)[0]
        want = p - np.array([0, 1, 0]) + 0.1 * scale * np.array([2, -1, -1])
        np.testing.assert_allclose(z.grad.numpy()[0], want, rtol=1e-12)


@pytest.mark.parametrize("criterion", [MbLSLoss(), MDCALoss()], ids=repr)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_finite_for_extreme_float32_logits(criterion, reduction):
    rng = np.random.default_rng(0)
    z = rng.choice([-1e4, 1e4, 0.0, 3.0], size=(32, 6)).astype(np.float32)
    logits = torch.tensor(z, requires_grad=True)
    target = torch.from_numpy(rng.integers(0, 6, 32))
    crit = copy.deepcopy(criterion)
    crit.reduction = reduction
    loss = crit(logits, target)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(logits.grad).all()


logit_rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(2, 6)),
    elements=st.floats(-40, 40, allow_nan=False),
)


@settings(max_examples=40, deadline=None)
@given(z=logit_rows, margin=st.floats(0.0, 20.0), data=st.data())
def test_mbls_at_least_cross_entropy_and_equal_within_the_margin(z, margin, data):
    zt, yt = draw_targets(data, z)
    ce = F.cross_entropy(zt, yt, reduction="none")
    loss = MbLSLoss(margin=margin, alpha=0.7, reduction="none")(zt, yt)
    assert torch.all(loss >= ce - 1e-12)
    within = (z.max(1) - z.min(1)) <= margin
    # the penalty is exactly 0 there: cross-entropy to the last bits (the
    # criteria's log-softmax of few classes runs over the transposed logits),
    # bits of the logits' size: a small loss from logits of 5 (z = [5, 0, ...])
    # differs by 6.5e-15 of itself, 2e-16 absolute
    eps = torch.finfo(torch.float64).eps
    scale = max(1.0, float(np.abs(z).max()))
    torch.testing.assert_close(
        loss[within], ce[within], rtol=4 * eps, atol=4 * eps * scale
    )
    # shifting every logit of a row changes nothing
    shifted = MbLSLoss(margin=margin, alpha=0.7, reduction="none")(zt + 3.0, yt)
    torch.testing.assert_close(shifted, loss, rtol=1e-10, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(z=logit_rows, data=st.data())
def test_mdca_term_bounds_and_permutation_invariance(z, data):
    n, k = z.shape
    y = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    zt, yt = torch.from_numpy(z), torch.from_numpy(y)
    term = mdca(zt, yt).item()
    assert -1e-15 <= term <= 2.0 / k + 1e-12
    assert term == pytest.approx(ref_mdca_term(z, y), abs=1e-12)
    order = torch.from_numpy(np.random.default_rng(0).permutation(n))
    assert mdca(zt[order], yt[order]).item() == pytest.approx(term, abs=1e-12)


# ---------------------------------------------------------------------------
# contracts: registry, validation, pickling, repr
# ---------------------------------------------------------------------------


def test_registry_names():
    assert get_criterion("mbls") is MbLSLoss is CRITERIA["mbls"]
    assert get_criterion("mdca") is MDCALoss is CRITERIA["mdca"]
    assert MbLSLoss.name == "mbls" and MDCALoss.name == "mdca"
    defaults = MbLSLoss()
    assert (defaults.margin, defaults.alpha) == (10.0, 0.1)
    assert MDCALoss().beta == 1.0


@pytest.mark.parametrize(
    ("cls", "kwargs", "name"),
    [
        (MbLSLoss, {"margin": -1.0}, "margin"),
        (MbLSLoss, {"margin": float("nan")}, "margin"),
        (MbLSLoss, {"alpha": -0.1}, "alpha"),
        (MbLSLoss, {"alpha": "big"}, "alpha"),
        (MbLSLoss, {"class_reduction": "max"}, "class_reduction"),
        (MbLSLoss, {"reduction": "avg"}, "reduction"),
        (MDCALoss, {"beta": -1.0}, "beta"),
        (MDCALoss, {"beta": float("inf")}, "beta"),
        (MDCALoss, {"gamma": -2.0}, "gamma"),
        (MDCALoss, {"reduction": None}, "reduction"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        cls(**kwargs)
    crit = cls()
    setattr(crit, *next(iter(kwargs.items())))  # changed in place: checked at call
    with pytest.raises(ValueError, match=name):
        crit(torch.zeros(2, 3), torch.tensor([0, 1]))


@pytest.mark.parametrize("cls", [MbLSLoss, MDCALoss])
@pytest.mark.parametrize(
    ("logits", "target", "name"),
    [
        (torch.zeros(3), torch.tensor([0, 1, 2]), "logits"),
        (torch.zeros(3, 2), torch.tensor([0, 1]), "target"),
        (torch.zeros(2, 2), torch.tensor([0, 2]), "target"),
        (torch.zeros(2, 2), torch.tensor([0.0, 1.0]), "target"),
    ],
)
def test_bad_input_raises_value_error(cls, logits, target, name):
    with pytest.raises(ValueError, match=name):
        cls()(logits, target)


@pytest.mark.parametrize(
    "criterion", [MbLSLoss(margin=2.0), MDCALoss(beta=2.0, gamma=1.0)], ids=repr
)
def test_pickle_deepcopy_and_repr(criterion):
    z, y = random_logits(5)
    z, y = torch.from_numpy(z), torch.from_numpy(y)
    for clone in (pickle.loads(pickle.dumps(criterion)), copy.deepcopy(criterion)):
        torch.testing.assert_close(clone(z, y), criterion(z, y), rtol=0, atol=0)
    assert type(criterion).__name__ in repr(criterion)
    assert "reduction='mean'" in repr(criterion)


# ---------------------------------------------------------------------------
# skorch routing and the hyper-parameter search
# ---------------------------------------------------------------------------


def test_net_routes_criterion_parameters():
    from sklcalib import NetClassifier

    net = NetClassifier(
        criterion="mbls",
        criterion__margin=3.0,
        criterion__alpha=0.5,
        max_epochs=1,
        module__n_features=4,
        module__n_classes=3,
    ).initialize()
    assert isinstance(net.criterion_, MbLSLoss)
    assert (net.criterion_.margin, net.criterion_.alpha) == (3.0, 0.5)
    net.set_params(criterion__margin=5.0)
    assert net.criterion_.margin == 5.0
    with pytest.raises(ValueError, match="alpha"):
        net.set_params(criterion__alpha=-1.0)
    net = NetClassifier(criterion="mdca", criterion__beta=4.0, max_epochs=1)
    net.set_params(module__n_features=4, module__n_classes=3)
    assert net.initialize().criterion_.beta == 4.0


def test_grid_search_over_margin_alpha_and_beta(data):
    from sklcalib import NetClassifier

    X, y = data  # the shared 3-class problem of tests/conftest.py
    net = NetClassifier(
        module__hidden_units=(16,), max_epochs=3, lr=0.05, random_state=0
    )
    grid = [
        {
            "criterion": ["mbls"],
            "criterion__margin": [0.0, 10.0],
            "criterion__alpha": [0.0, 2.0],
        },
        {"criterion": ["mdca"], "criterion__beta": [0.0, 5.0]},
    ]
    cv = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)
    search = GridSearchCV(net, grid, scoring="neg_log_loss", cv=cv).fit(X, y)
    results = search.cv_results_
    scores = results["mean_test_score"]
    assert scores.shape == (6,) and np.all(np.isfinite(scores))
    params = results["params"]

    def score_of(**wanted):
        (i,) = [i for i, p in enumerate(params) if p == wanted]
        return scores[i]

    # α = 0 is cross-entropy whatever the margin: identical nets, equal scores
    a = score_of(criterion="mbls", criterion__margin=0.0, criterion__alpha=0.0)
    b = score_of(criterion="mbls", criterion__margin=10.0, criterion__alpha=0.0)
    assert a == b
    # the penalty reaches the net: α = 2 with m = 0 trains a different net
    c = score_of(criterion="mbls", criterion__margin=0.0, criterion__alpha=2.0)
    assert c != a
    # β = 0 is cross-entropy too; β = 5 is another net
    d = score_of(criterion="mdca", criterion__beta=0.0)
    e = score_of(criterion="mdca", criterion__beta=5.0)
    assert d == pytest.approx(a, abs=1e-6) and e != d
    best = search.best_estimator_.criterion_
    assert type(best).name == search.best_params_["criterion"]
