"""AdaFocal (Ghosh et al. 2022) and AdaDualFocal (Tao et al. 2023, Sec. 5.2):
a γ per confidence bin, updated once an epoch from the validation split."""

import math

import numpy as np
import torch

from sklcalib._utils._binning import quantile_edges, quantile_groups, top_label
from sklcalib._utils._validation import check_n_bins, check_prob_values
from sklcalib.losses._autograd import FocalPlan, dual_logp, focal_term, log_softmax
from sklcalib.losses._base import (
    CalibrationLoss,
    check_real,
    check_reduction,
    target_logp,
)
from sklcalib.losses._focal import fused_focal


def adafocal_step(gamma, gap, *, lam, switch_threshold, gamma_min, gamma_max):
    """One AdaFocal update of a bin's γ from its validation calibration gap.

    ``gap`` is E_b = mean confidence - accuracy of the bin (> 0: over-confident).
    As in Ghosh et al.'s code:

    1. γ > 0 (focal): γ ← γ·exp(λ·E_b), more focal when over-confident;
       γ <= 0 (inverse focal): γ ← γ·exp(-λ·E_b), more inverse-focal when
       under-confident;
    2. if then ``|γ| < switch_threshold`` the loss switches type: a positive γ becomes
       -switch_threshold, a negative (or zero) one +switch_threshold;
    3. clip to [gamma_min, gamma_max].

    Parameters
    ----------
    gamma : float
        The bin's current γ (> 0: focal, <= 0: inverse focal).
    gap : float
        The bin's calibration gap E_b on the validation set.
    lam : float
        Update rate λ.
    switch_threshold : float
        Magnitude of γ below which the loss switches type (step 2).
    gamma_min : float
        Lower clip of the new γ.
    gamma_max : float
        Upper clip of the new γ.

    Returns
    -------
    gamma : float
        The bin's new γ.

    Examples
    --------
    >>> from sklcalib.losses import adafocal_step
    >>> kw = dict(lam=1.0, switch_threshold=0.2, gamma_min=-2.0, gamma_max=20.0)
    >>> round(adafocal_step(1.0, 0.1, **kw), 6)  # over-confident: more focal
    1.105171
    >>> adafocal_step(0.21, -0.1, **kw)  # under-confident, |γ| < 0.2: inverse focal
    -0.2
    """
    if gamma > 0:
        new = gamma * math.exp(lam * gap)
    else:
        new = gamma * math.exp(-lam * gap)
    if abs(new) < switch_threshold:
        new = -switch_threshold if new > 0 else switch_threshold
    return min(max(new, gamma_min), gamma_max)


def adadualfocal_step(gamma, gap, *, lam, gamma_max):
    """One AdaDualFocal update of a bin's γ (Tao et al.'s code).

    ``γ ← min(γ·exp(λ·E_b), gamma_max)`` with E_b = mean confidence - accuracy
    of the bin: γ >= 0 stays >= 0, with no sign switch and no lower clip.
    """
    return min(gamma * math.exp(lam * gap), gamma_max)


def _check_validation(y_prob, y_true):
    """(float64 probabilities (N, K), int64 labels (N,)) after validation."""
    if isinstance(y_prob, torch.Tensor):
        y_prob = y_prob.detach().cpu().numpy()
    if isinstance(y_true, torch.Tensor):
        y_true = y_true.detach().cpu().numpy()
    y_prob = np.asarray(y_prob)
    y_true = np.asarray(y_true)
    if y_prob.ndim != 2 or y_prob.shape[0] == 0 or y_prob.shape[1] == 0:
        raise ValueError(
            f"y_prob must have shape (N, K) with N, K >= 1, got {y_prob.shape}."
        )
    if not np.issubdtype(y_prob.dtype, np.floating):
        raise ValueError(f"y_prob must hold floating point values, got {y_prob.dtype}.")
    y_prob = check_prob_values(y_prob)  # rounded rows come back renormalised
    prob = y_prob.astype(np.float64)
    if y_true.ndim != 1 or y_true.shape[0] != prob.shape[0]:
        raise ValueError(
            f"y_true must have shape ({prob.shape[0]},) to match y_prob, got "
            f"{y_true.shape}."
        )
    if not np.issubdtype(y_true.dtype, np.integer):
        raise ValueError(
            f"y_true must hold integer class indices, got dtype {y_true.dtype}."
        )
    if y_true.min() < 0 or y_true.max() >= prob.shape[1]:
        raise ValueError(f"y_true must lie in [0, {prob.shape[1]}).")
    return prob, y_true.astype(np.int64)


def _bin_of(inner, score):
    # bins (e_b, e_b+1]: the index is the number of inner edges < score, the
    # rule of sklcalib._utils._binning.bin_index, on the device
    return torch.searchsorted(inner, score.detach(), right=False)


class _BinnedGammaLoss(CalibrationLoss):
    """A γ per bin (registered buffers ``bin_edges`` and ``gammas``), looked up
    per sample and updated from validation confidence bins.

    Subclasses give ``_step(gamma, gap)`` (the update of one bin),
    ``_row_gamma(p_t, p_j)`` (the per-row γ and sign of the fused path) and
    ``_check_gammas()`` (their γ parameters).
    """

    rowwise = True
    _fixed_node = True
    #: whether the focal base holds the dual term p_j (AdaDualFocal)
    _dual = False

    def _check_params(self):
        check_n_bins(self.n_bins)
        check_real(self.lam, "lam", low=0.0)
        self._check_gammas()  # the subclass's γ range
        check_reduction(self.reduction)
        self._check_state()

    def _fused(self, logits, target):
        return fused_focal(
            self,
            logits,
            target,
            lambda: FocalPlan(
                row_gamma=self._row_gamma, dual=self._dual, table=self._compiled_table
            ),
        )

    def _compiled_table(self, like):
        # the look-up of _lookup (searchsorted, right=False) for the compiled
        # kernel, in float64 (the buffers' values), rebuilt when _lookup's
        # tables are
        tables = self._lookup(like)
        cache = self.__dict__.get("_compiled_tables")
        if cache is None or cache[0] is not tables:
            inner = self.bin_edges[1:-1].detach().cpu().double().numpy().copy()
            gamma = self.gammas.detach().cpu().double().numpy().copy()
            cache = self.__dict__["_compiled_tables"] = (tables, (2, inner, gamma))
        return cache[1]

    def _init_state(self):
        n_bins = self.n_bins
        self.register_buffer(
            "bin_edges", torch.linspace(0.0, 1.0, n_bins + 1, dtype=torch.float64)
        )
        self.register_buffer(
            "gammas", torch.full((n_bins,), float(self.gamma_init), dtype=torch.float64)
        )

    def _params_unchanged(self):
        # the state check compares the buffers' length with n_bins: a buffer
        # replaced by one of another length is checked again too
        gammas = self.__dict__["_buffers"].get("gammas")
        return (
            super()._params_unchanged()
            and gammas is not None
            and gammas.shape[0] == self.n_bins
        )

    def _check_state(self):
        buffers = getattr(self, "gammas", None)
        if buffers is not None and buffers.shape[0] != self.n_bins:
            raise ValueError(
                f"n_bins was changed to {self.n_bins} after construction (the state "
                f"has {buffers.shape[0]} bins); create a new criterion instead."
            )

    def _lookup(self, score):
        """(inner edges, γ, (|γ|, sign) or None) per bin, in ``score``'s dtype
        and device, cached
        until a buffer changes (in-place updates bump a tensor's version; ``to``
        and ``load_state_dict`` replace or bump it).

        The edges are rounded *down* into the score's dtype, so that for every
        representable score ``e < score`` holds exactly as in float64: a
        training batch then bins as the float64 validation edges say, with two
        fewer dtype conversions per call.
        """
        edges, gammas = self.bin_edges, self.gammas
        key = (score.dtype, score.device, edges._version, gammas._version)
        cache = self.__dict__.get("_lookup_cache")
        if cache is not None and cache[0] is edges and cache[1] is gammas:
            if cache[2] == key:
                return cache[3]
        inner = edges[1:-1].detach()
        low = inner.to(device=score.device, dtype=score.dtype)
        # where the cast rounded up, step one value down: e_low <= e < next
        rounded_up = low.to(inner.dtype) > inner.to(score.device)
        below = torch.nextafter(low, low.new_tensor(float("-inf")))
        low = torch.where(rounded_up, below, low)
        gamma = gammas.detach().to(device=score.device, dtype=score.dtype)
        signed = None
        if bool((gamma < 0).any()):
            # γ >= 0: focal side (γ = 0 is cross-entropy either way)
            signed = (gamma.abs(), torch.where(gamma >= 0, 1.0, -1.0).to(gamma.dtype))
        tables = (low.contiguous(), gamma, signed)
        self.__dict__["_lookup_cache"] = (edges, gammas, key, tables)
        return tables

    def sample_gamma(self, score):
        """The γ of the bin holding each value of ``score``, without gradient.

        Parameters
        ----------
        score : torch.Tensor
            The looked-up quantity (p_t for AdaFocal, p_t - p_j for AdaDualFocal).

        Returns
        -------
        gamma : torch.Tensor
            Same shape and dtype as ``score``.
        """
        inner, gamma, _ = self._lookup(score)
        return gamma.take(_bin_of(inner, score))

    def gamma_and_sign(self, score):
        """The exponent and the side of the focal term of each value of ``score``.

        Parameters
        ----------
        score : torch.Tensor
            The looked-up quantity, as for :meth:`sample_gamma`.

        Returns
        -------
        gamma : torch.Tensor
            The bin's γ when no bin has a negative γ, else ``|γ|``; same shape
            and dtype as ``score``, without gradient.
        sign : float or torch.Tensor
            ``1.0`` (focal for every sample) when no bin has a negative γ,
            else the per-sample sign ±1 of γ, -1 for inverse focal (γ = 0
            counts as focal: the term is cross-entropy either way).
        """
        inner, gamma, signed = self._lookup(score)
        index = _bin_of(inner, score)
        if signed is None:
            return gamma.take(index), 1.0
        magnitude, sign = signed
        return magnitude.take(index), sign.take(index)

    def update_from_validation(self, y_prob, y_true):
        """Update the per-bin γ and the bin edges from validation predictions.

        Sorts the validation top-1 confidences with a stable sort, splits them
        into ``n_bins`` consecutive groups whose sizes differ by at most one,
        larger first (the order of ``numpy.array_split``, as the metrics'
        adaptive ECE), and for each non-empty group updates its γ from E_b =
        mean confidence - accuracy of the group. The new edges are 0, the
        largest confidence of each group but the last, and 1, so that the
        right-closed training bins reproduce the groups. An empty group (fewer
        validation samples than bins) keeps its γ and gets an empty bin.

        Parameters
        ----------
        y_prob : array-like or torch.Tensor of shape (N, K)
            Validation probabilities (rows summing to 1).
        y_true : array-like or torch.Tensor of shape (N,)
            Integer validation targets in [0, K).

        Returns
        -------
        gammas : ndarray of shape (n_bins,)
            The updated γ of each bin (a copy of the ``gammas`` buffer).
        """
        self._check_params()
        prob, y_true = _check_validation(y_prob, y_true)
        conf, correct = top_label(prob, y_true)
        correct = correct.astype(np.float64)
        # the metrics' equal-mass grouping and edges, so AdaFocal bins as
        # adaptive ECE does
        _, order, sizes = quantile_groups(conf, self.n_bins)
        groups = np.split(order, np.cumsum(sizes)[:-1])
        gammas = self.gammas.detach().cpu().numpy().copy()
        edges = quantile_edges(conf, order, sizes)
        for b, idx in enumerate(groups):
            if len(idx):
                gammas[b] = self._step(
                    gammas[b], conf[idx].mean() - correct[idx].mean()
                )
        with torch.no_grad():
            self.gammas.copy_(torch.from_numpy(gammas))
            self.bin_edges.copy_(torch.from_numpy(edges))
        return gammas


class AdaFocalLoss(_BinnedGammaLoss):
    """AdaFocal: focal or inverse focal loss with a signed γ per bin.

    Ghosh, Schaaf & Gormley (NeurIPS 2022). Each sample takes the γ of the bin
    holding its p_t (bins right-closed, ``(e_b, e_b+1]``, the first also holding
    0, as the metrics use): γ > 0 gives focal loss ``-(1 - p_t)^γ log p_t``,
    γ < 0 inverse focal loss ``-(1 + p_t)^|γ| log p_t``, γ = 0 cross-entropy. γ
    has no gradient.

    Once an epoch, :meth:`update_from_validation` (called by
    :class:`sklcalib.callbacks.AdaFocalUpdater`) bins the validation top-1
    confidence into ``n_bins`` equal-mass bins, takes each bin's gap E_b = mean
    confidence - accuracy and updates its γ (:func:`adafocal_step`):
    ``γ·exp(λE_b)`` if γ > 0 else ``γ·exp(-λE_b)``; if then ``|γ|`` <
    ``switch_threshold`` the sign flips (a positive γ becomes -0.2, a negative one
    +0.2: focal switches to inverse focal when it keeps making the bin
    under-confident, and back); clip to [``gamma_min``, ``gamma_max``]. The
    training bins then take the validation bin edges. Before the first update the
    bins are ``n_bins`` equal-width bins on [0, 1] with γ = ``gamma_init``.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins, >= 1.
    gamma_init : float, default=1.0
        Initial γ of every bin, in [gamma_min, gamma_max].
    lam : float, default=1.0
        Update rate λ >= 0.
    gamma_min : float, default=-2.0
        Lower end of the clipping range of γ.
    gamma_max : float, default=20.0
        Upper end of the clipping range of γ.
    switch_threshold : float, default=0.2
        ``|γ|`` below which focal and inverse focal are switched, >= 0.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses.

    Attributes
    ----------
    bin_edges : torch.Tensor of shape (n_bins + 1,), float64 buffer
        Bin edges, 0 first and 1 last.
    gammas : torch.Tensor of shape (n_bins,), float64 buffer
        Signed γ of each bin.

    Notes
    -----
    ``bin_edges`` and ``gammas`` are registered buffers: they are in
    ``state_dict``, pickle, and move with ``.to(device)``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklcalib.losses import AdaFocalLoss
    >>> loss = AdaFocalLoss(n_bins=2)
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.7, 0.3]])
    >>> loss.update_from_validation(y_prob, np.array([0, 0, 1, 1])).round(4).tolist()
    [1.9155, 0.8607]
    >>> loss.bin_edges.tolist()
    [0.0, 0.7, 1.0]
    >>> float(loss(torch.log(torch.tensor([[0.8, 0.2]])), torch.tensor([0])) > 0)
    1.0
    """

    name = "adafocal"
    _repr_params = (
        "n_bins",
        "gamma_init",
        "lam",
        "gamma_min",
        "gamma_max",
        "switch_threshold",
        "reduction",
    )

    def __init__(
        self,
        n_bins=15,
        gamma_init=1.0,
        lam=1.0,
        gamma_min=-2.0,
        gamma_max=20.0,
        switch_threshold=0.2,
        reduction="mean",
    ):
        super().__init__()
        self.n_bins = n_bins
        self.gamma_init = gamma_init
        self.lam = lam
        self.gamma_min = gamma_min
        self.gamma_max = gamma_max
        self.switch_threshold = switch_threshold
        self.reduction = reduction
        self._check_params()
        self._init_state()

    def _check_gammas(self):
        gamma_min = check_real(self.gamma_min, "gamma_min")
        gamma_max = check_real(self.gamma_max, "gamma_max")
        if gamma_min > gamma_max:
            raise ValueError(
                f"gamma_min must be <= gamma_max, got {gamma_min} > {gamma_max}."
            )
        check_real(self.gamma_init, "gamma_init", low=gamma_min, high=gamma_max)
        check_real(self.switch_threshold, "switch_threshold", low=0.0)

    def _step(self, gamma, gap):
        return adafocal_step(
            gamma,
            gap,
            lam=float(self.lam),
            switch_threshold=float(self.switch_threshold),
            gamma_min=float(self.gamma_min),
            gamma_max=float(self.gamma_max),
        )

    def _per_sample(self, logits, target):
        _, logp_t = target_logp(logits, target)
        gamma, sign = self.gamma_and_sign(logp_t.exp())
        return focal_term(logp_t, gamma, sign=sign)

    def _row_gamma(self, p_t, p_j):
        return self.gamma_and_sign(p_t)


class AdaDualFocalLoss(_BinnedGammaLoss):
    """AdaDualFocal: dual focal loss with a γ >= 0 per confidence bin.

    Tao et al. (ICML 2023, Sec. 5.2) combine AdaFocal and dual focal loss; this
    is their code's rule. Per sample, ``-(1 - p_t + p_j)^γ log p_t`` with p_j
    the largest probability strictly below p_t (0 if none; see
    :class:`DualFocalLoss`), where γ (no gradient) is the γ of the bin holding
    ``p_t - p_j``.

    Once an epoch, :meth:`update_from_validation` (called by
    :class:`sklcalib.callbacks.AdaFocalUpdater`) bins the validation top-1
    *confidence* into ``n_bins`` equal-mass bins, as :class:`AdaFocalLoss` does,
    and updates each bin's γ from E_b = mean confidence - accuracy:
    ``γ ← min(γ·exp(λE_b), gamma_max)``. γ stays >= 0: unlike AdaFocal there is
    no sign switch, no inverse-focal branch and no lower clip. The training
    look-up then takes the validation confidence edges for ``p_t - p_j``: the
    authors' code looks the training margin up in the confidence bins. Before
    the first update the bins are ``n_bins`` equal-width bins on [0, 1] with γ =
    ``gamma_init``.

    Parameters
    ----------
    n_bins : int, default=15
        Number of bins, >= 1.
    gamma_init : float, default=1.0
        Initial γ of every bin, in [0, gamma_max].
    lam : float, default=1.0
        Update rate λ >= 0.
    gamma_max : float, default=20.0
        Upper clip of γ (20 in the authors' training scripts).
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean (skorch's convention), sum or (N,) vector of the per-sample
        losses. The authors' training code sums (an SGD learning rate
        ported from it needs ``"sum"`` or multiplying by the batch size).

    Attributes
    ----------
    bin_edges : torch.Tensor of shape (n_bins + 1,), float64 buffer
        Bin edges (on the validation confidence), 0 first and 1 last.
    gammas : torch.Tensor of shape (n_bins,), float64 buffer
        γ >= 0 of each bin.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.losses import AdaDualFocalLoss
    >>> loss = AdaDualFocalLoss(n_bins=2)
    >>> y_prob = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.7, 0.3]])
    >>> loss.update_from_validation(y_prob, np.array([0, 0, 1, 1])).round(4).tolist()
    [1.9155, 0.8607]
    >>> loss.bin_edges.tolist()
    [0.0, 0.7, 1.0]
    """

    name = "adadualfocal"
    _dual = True
    _repr_params = ("n_bins", "gamma_init", "lam", "gamma_max", "reduction")

    def __init__(
        self, n_bins=15, gamma_init=1.0, lam=1.0, gamma_max=20.0, reduction="mean"
    ):
        super().__init__()
        self.n_bins = n_bins
        self.gamma_init = gamma_init
        self.lam = lam
        self.gamma_max = gamma_max
        self.reduction = reduction
        self._check_params()
        self._init_state()

    def _check_gammas(self):
        gamma_max = check_real(self.gamma_max, "gamma_max", low=0.0)
        check_real(self.gamma_init, "gamma_init", low=0.0, high=gamma_max)

    def _step(self, gamma, gap):
        return adadualfocal_step(
            gamma, gap, lam=float(self.lam), gamma_max=float(self.gamma_max)
        )

    def _per_sample(self, logits, target):
        logp = log_softmax(logits)
        logp_t, p_j = dual_logp(logits, logp, target)
        gamma = self.sample_gamma(logp_t.exp() - p_j)
        return focal_term(logp_t, gamma, dual=p_j)

    def _row_gamma(self, p_t, p_j):
        return self.sample_gamma(p_t - p_j), 1.0
