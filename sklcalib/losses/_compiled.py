"""Compiled (numba) kernels of the fused nodes: each computes a criterion's
reduced value and the logits' gradient in one pass over the logits.

Why: on the small batches of tabular training (128 x 10) a node's torch
operations cost microseconds of dispatch each, and the criteria make 17 to 50
of them per batch where cross-entropy makes one or two. A kernel makes none:
one exp per entry, the per-row scalars and the closed-form gradient of
:mod:`sklcalib.losses._autograd` (the same formulas), written into a buffer.

Arithmetic is in float64 whatever the logits' dtype (a float32 gradient is
rounded once, when stored), so values and gradients equal the reference
compositions' to rounding, not to the bit. The discrete choices are made as
the reference makes them: the dual term's class from ``1 / (z_k - z_t)``
evaluated in the logits' dtype (:func:`~sklcalib.losses._autograd.dual_index`),
MbLS's excess ``(max - m) - z_j`` in the logits' dtype (``zero``, ``one`` and
``margin`` are passed as scalars of that dtype so that numba does this
arithmetic in it). A per-row γ is looked up in float64, from the float64 table
(the float64 reference's look-up): a float32 reference may put a p_t within
its rounding of a bin edge in the neighbouring bin.

Imported on the first call that takes a compiled path (never by
``import sklcalib``); each kernel compiles once per dtype, on its first call,
into numba's cache.

Arguments common to every kernel: ``z`` (N, K) logits, ``t`` (N,) int64
targets, ``out`` (N, K) the gradient's buffer (of ``z``'s dtype), ``row_scale``
the upstream gradient of each row (1/N for the mean, 1 for the sum); each
returns the reduced value.

MbLS on batches above the dispatch's ``MAX_ENTRIES`` takes two passes instead,
:func:`margin_shift` and :func:`margin_finish`, with torch's ``exp`` between
them: there one libm call per entry costs more than the rest of the kernel,
while torch's vector kernels compute several lanes per instruction. Its
exponentials are those of ``z - max`` rounded to the logits' dtype, as in
torch's log-softmax (the reference's); the sums, the logarithms and the
penalty are in float64, and the gradient ``e·(G/Σe) - G·α·[excess > 0]`` in
the logits' dtype (two roundings more in float32: each row within 2e-7 of
the float64 reference in the tests, where the torch operations stray up to
1e-5). The focal family's node does the same with :func:`focal_finish`
(``z - max`` by torch's ``sub``: no index to find), its gradient's products
in the logits' dtype without the squared error, in float64 with it.
"""

import numpy as np
from numba import njit

#: float division by zero gives inf or NaN as in numpy and torch, not an error
_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def _softmax_row(z, i, e):
    """``(max, argmax, Σ exp(z - max))`` of row i, ``exp(z - max)`` in ``e``
    (the first largest logit's index, as torch's ``max``)."""
    k = z.shape[1]
    top = np.float64(z[i, 0])
    arg = 0
    for j in range(1, k):
        if z[i, j] > top:
            top = np.float64(z[i, j])
            arg = j
    total = 0.0
    for j in range(k):
        e[j] = np.exp(np.float64(z[i, j]) - top)
        total += e[j]
    return top, arg, total


@njit(**_JIT)
def _focal_power(base, gamma, sign, logp_t):
    """``(w, y)``: w = B^γ and y = γ·s·w·log p_t / B (0 where B = 0)."""
    if gamma == 0.0:
        return 1.0, 0.0
    # (B^1 is B exactly: γ = 1 without a call to pow)
    w = base if gamma == 1.0 else base**gamma
    r = logp_t / base if base != 0.0 else 0.0
    return w, gamma * sign * w * r


@njit(**_JIT)
def _focal_row(focal, mode, p_t, p_j, p_t_1, logp_t, gamma, sign, bounds, gammas):
    """``(row, m_f, y)`` of a focal-family row: its loss -w·log p_t, m_f = w -
    y·p_t and y (zeros without the focal term), with the criterion's own γ
    and side (mode 0) or those of the bin of p_t - p_j in the table (mode 1:
    bins closed on the right, 2: on the left; a negative γ the inverse side),
    in float64 against the float64 table, as the float64 reference."""
    g = gamma
    s = sign
    if mode != 0:
        score = p_t - p_j
        b = 0
        if mode == 1:
            while b < bounds.shape[0] and bounds[b] <= score:
                b += 1
        else:
            while b < bounds.shape[0] and bounds[b] < score:
                b += 1
        g = gammas[b]
        s = 1.0
        if g < 0.0:
            g = -g
            s = -1.0
    if not focal:
        return 0.0, 0.0, 0.0
    base = p_j - p_t_1 if s > 0.0 else p_t_1 + 2.0
    w, y = _focal_power(base, g, s, logp_t)
    return -w * logp_t, w - y * p_t, y


@njit(**_JIT)
def focal_family(
    z, t, out, row_scale, gamma, sign, dual, lam, focal, mode, bounds, gammas, zero, one
):
    """The focal family's node (:class:`~sklcalib.losses._autograd.FocalNode`).

    ``mode``: 0 a constant ``gamma`` and ``sign``; 1 γ = ``gammas[#{bounds <=
    p_t}]`` (FLSD's ``bucketize(right=True)``); 2 γ = ``gammas[#{bounds <
    p_t - p_j}]`` (the binned γ's ``searchsorted``; p_j = 0 without ``dual``);
    a negative table γ is |γ| on the inverse side.
    """
    n, k = z.shape
    e = np.empty(k)
    two_lam = 2.0 * lam
    value = 0.0
    for i in range(n):
        ti = t[i]
        top, _, total = _softmax_row(z, i, e)
        inv = 1.0 / total
        logp_t = np.float64(z[i, ti]) - top - np.log(total)
        p_t = e[ti] * inv
        p_t_1 = np.expm1(logp_t)  # p_t - 1, exact near p_t = 1
        # the dual term: the first class of the smallest 1 / (z_k - z_t), in
        # the logits' dtype (dual_index), if that is < 0
        jd = -1
        p_j = 0.0
        if dual:
            zt = z[i, ti]
            best = one / ((z[i, 0] - zt) + zero)
            jd = 0
            for j in range(1, k):
                key = one / ((z[i, j] - zt) + zero)
                if key < best:
                    best = key
                    jd = j
            if best < 0:
                p_j = e[jd] * inv
            else:
                jd = -1
        # per-row scalars (the module docstring of _autograd): m_f = w - y·p_t
        row, mf, y = _focal_row(
            focal, mode, p_t, p_j, p_t_1, logp_t, gamma, sign, bounds, gammas
        )
        others = 0.0
        sq = 0.0
        if lam != 0.0:
            for j in range(k):
                if j != ti:
                    pj = e[j] * inv
                    others += pj * pj
            sq = p_t_1 * p_t_1 + others
            row += lam * sq
        value += row
        # k = m_f + y·p_j + 2λ·(p_t - S), 2λ·(p_t - S) = -2λ·(S_o + p_t·(p_t - 1))
        kk = mf + y * p_j - two_lam * (others + p_t * p_t_1)
        for j in range(k):
            pj = e[j] * inv
            out[i, j] = row_scale * pj * (two_lam * pj + kk)
        at_target = mf * p_t_1 + y * p_j * p_t - two_lam * p_t * sq
        out[i, ti] = row_scale * at_target
        if jd >= 0:
            out[i, jd] = row_scale * (p_j * (two_lam * p_j + kk) - y * p_j)
    return value * row_scale


@njit(**_JIT)
def margin(z, t, out, row_scale, margin, alpha, class_mean):
    """MbLS (:class:`~sklcalib.losses._autograd.MarginNode`): ``margin`` a
    scalar of the logits' dtype (the excess is computed in it)."""
    n, k = z.shape
    e = np.empty(k)
    step = alpha / k if class_mean else alpha
    value = 0.0
    for i in range(n):
        ti = t[i]
        top, arg, total = _softmax_row(z, i, e)
        inv = 1.0 / total
        logp_t = np.float64(z[i, ti]) - top - np.log(total)
        threshold = z[i, arg] - margin
        penalty = 0.0
        count = 0
        for j in range(k):
            excess = threshold - z[i, j]
            if excess > 0:
                penalty += excess
                count += 1
                out[i, j] = row_scale * (e[j] * inv - step)
            else:
                out[i, j] = row_scale * (e[j] * inv)
        if class_mean:
            penalty /= k
        value += alpha * penalty - logp_t
        at_target = np.expm1(logp_t)
        if threshold - z[i, ti] > 0:
            at_target -= step
        out[i, ti] = row_scale * at_target
        out[i, arg] += row_scale * step * count
    return value * row_scale


#: reassociation lets the compiler split a row's sums into vector lanes: for
#: the helpers whose only chains of operations are those sums (each entry's
#: own arithmetic is one operation deep, which reassociation cannot reorder)
_SUMS = {**_JIT, "fastmath": {"reassoc"}}


@njit(**_SUMS)
def _row_sum(e, i):
    total = 0.0
    for j in range(e.shape[1]):
        total += e[i, j]
    return total


@njit(**_SUMS)
def _margin_row(z, e, i, threshold, zero, s_inv, s_step):
    """Row i of MbLS's gradient over ``e = exp(z - max)``: ``e·s_inv``, less
    ``s_step`` where the excess ``threshold - z_j`` (in the logits' dtype,
    ``zero`` a 0 of it) is > 0, ``s_inv`` and ``s_step`` scalars of that dtype;
    returns the row's penalty (the excesses > 0, summed in float64) and their
    number."""
    penalty = 0.0
    count = 0
    for j in range(z.shape[1]):
        excess = threshold - z[i, j]
        above = excess > zero
        penalty += excess if above else zero
        count += above
        e[i, j] = e[i, j] * s_inv - (s_step if above else zero)
    return penalty, count


@njit(**_JIT)
def margin_shift(z, top, e, arg):
    """MbLS on a large batch (:class:`~sklcalib.losses._autograd.MarginNode`),
    first pass, from the rows' maxima ``top`` (torch's ``amax``: a vectorised
    maximum, which this module's compiler does not vectorise): ``e = z - max``
    per row in the logits' dtype, as torch's log-softmax subtracts it, and in
    ``arg`` the first index of the maximum (torch's ``max``), found by an
    int32 minimum that vectorises (0 for a row without one: a NaN maximum)."""
    n, k = z.shape
    none = np.int32(k)
    for i in range(n):
        m = top[i]
        a = none
        for j in range(k):
            v = z[i, j]
            e[i, j] = v - m
            a = min(a, np.int32(j) if v == m else none)
        arg[i] = a if a < none else 0


@njit(**_JIT)
def margin_finish(z, t, e, arg, row_scale, margin, zero, alpha, class_mean):
    """Second pass, from ``e = exp(z - max)``: :func:`margin`'s value and
    gradient (the same formulas), the gradient written over ``e``.
    ``margin`` and ``zero`` are scalars of the logits' dtype."""
    n, k = z.shape
    step = alpha / k if class_mean else alpha
    s_step = row_scale * step
    # the row's factors in the logits' dtype: the gradient's products in its
    # vector lanes (8 float32 per instruction where float64 has 4)
    typed = np.empty(2, dtype=e.dtype)
    typed[1] = s_step
    value = 0.0
    for i in range(n):
        ti = t[i]
        a = arg[i]
        total = _row_sum(e, i)
        logp_t = np.float64(z[i, ti]) - np.float64(z[i, a]) - np.log(total)
        threshold = z[i, a] - margin
        typed[0] = row_scale / total
        penalty, count = _margin_row(z, e, i, threshold, zero, typed[0], typed[1])
        if class_mean:
            penalty /= k
        value += alpha * penalty - logp_t
        # the target's entry without the difference p_t - 1 near p_t = 1
        at_target = np.expm1(logp_t)
        if threshold - z[i, ti] > zero:
            at_target -= step
        e[i, ti] = row_scale * at_target
        e[i, a] += s_step * count
    return value * row_scale


@njit(**_JIT)
def _mdca_focal(logp_t, p_t, gamma):
    """``(w·log p_t, m)`` of an MDCA row's focal term (γ = 0: cross-entropy,
    ``(log p_t, 1)``): w = (1 - p_t)^γ, m = w - y·p_t."""
    if gamma == 0.0:
        return logp_t, 1.0
    p_t_1 = np.expm1(logp_t)
    w, y = _focal_power(-p_t_1, gamma, 1.0, logp_t)
    return w * logp_t, w - y * p_t


@njit(**_JIT)
def _class_gaps(mean, frac, n, scale):
    """``(Σ_j |gap_j|, v)``: the batch's gaps between mean probability and
    frequency per class, and v_j = scale·sign(gap_j) / (K·n), the batch
    term's derivative in p_j."""
    k = mean.shape[0]
    gap_sum = 0.0
    v = np.empty(k)
    for j in range(k):
        gap = mean[j] / n - frac[j] / n
        gap_sum += abs(gap)
        v[j] = scale * np.sign(gap) / (k * n)
    return gap_sum, v


@njit(**_JIT)
def mdca(z, t, out, row_scale, batch_scale, gamma, beta):
    """Cross-entropy (γ = 0) or focal loss plus β·MDCA
    (:class:`~sklcalib.losses._autograd.MDCANode`); ``batch_scale`` the
    upstream gradient of the batch term (1 for the mean, N for the sum)."""
    n, k = z.shape
    p = np.empty((n, k))
    m = np.empty(n)
    logp = np.empty(n)
    mean = np.zeros(k)
    frac = np.zeros(k)
    base_sum = 0.0
    for i in range(n):
        ti = t[i]
        top, _, total = _softmax_row(z, i, p[i])
        inv = 1.0 / total
        logp_t = np.float64(z[i, ti]) - top - np.log(total)
        for j in range(k):
            p[i, j] *= inv
            mean[j] += p[i, j]
        frac[ti] += 1.0
        logp[i] = logp_t
        row, m[i] = _mdca_focal(logp_t, p[i, ti], gamma)
        base_sum -= row
    gap_sum, v = _class_gaps(mean, frac, n, beta * batch_scale)
    value = base_sum * row_scale + beta * (gap_sum / k) * (row_scale * n)
    for i in range(n):
        ti = t[i]
        pv = 0.0
        for j in range(k):
            pv += p[i, j] * v[j]
        gm = row_scale * m[i]
        for j in range(k):
            out[i, j] = p[i, j] * (v[j] + gm - pv)
        out[i, ti] = (v[ti] - pv) * p[i, ti] + np.expm1(logp[i]) * gm
    return value


@njit(**_JIT)
def mmce(z, t, out, row_scale, batch_scale, lam, weighted, power, bandwidth):
    """Cross-entropy plus λ·MMCE (:class:`~sklcalib.losses._autograd.MMCENode`);
    ``power`` 1 (``"kumar"``) or 2 (``"mukhoti"``) for the weighted MMCE."""
    n, k = z.shape
    p = np.empty((n, k))
    logp = np.empty(n)
    log_total = np.empty(n)
    conf = np.empty(n)
    pred = np.empty(n, dtype=np.int64)
    w = np.empty(n)
    kw = np.zeros(n)
    signed = np.zeros(n)
    ce = 0.0
    n_correct = 0
    for i in range(n):
        ti = t[i]
        top, arg, total = _softmax_row(z, i, p[i])
        inv = 1.0 / total
        logp_t = np.float64(z[i, ti]) - top - np.log(total)
        ce -= logp_t
        logp[i] = logp_t
        for j in range(k):
            p[i, j] *= inv
        pred[i] = arg
        conf[i] = inv  # exp(max log p)
        log_total[i] = np.log(total)
        if arg == ti:
            n_correct += 1
    # the weights' factors s_i (mmce_scale)
    if weighted:
        n_wrong = n - n_correct
        s_correct = 1.0 / max(n_correct, 1) ** power
        s_wrong = -1.0 / max(n_wrong, 1) ** power
        if power == 2 and (n_correct == 0 or n_wrong == 0):
            s_correct = s_wrong = 0.0
    else:
        s_correct = 1.0 / n
        s_wrong = -1.0 / n
    for i in range(n):
        if pred[i] == t[i]:
            w[i] = s_correct * (1.0 - conf[i])
        else:
            w[i] = s_wrong * conf[i]
    # K w and (K ⊙ sign(r_i - r_j)) w, K symmetric: one exp per pair
    for i in range(n):
        kw[i] += w[i]
        for j in range(i + 1, n):
            d = conf[i] - conf[j]
            kern = np.exp(-abs(d) / bandwidth)
            kw[i] += kern * w[j]
            kw[j] += kern * w[i]
            if d != 0.0:
                sg = kern if d > 0.0 else -kern
                signed[i] += sg * w[j]
                signed[j] -= sg * w[i]
    quad = 0.0
    for i in range(n):
        quad += w[i] * kw[i]
    root = np.sqrt(quad) if quad > 0.0 else 0.0
    value = ce * row_scale + lam * root * (row_scale * n)
    d_total = lam / 2.0 / root * batch_scale if quad > 0.0 else 0.0
    for i in range(n):
        a = 0.0
        if d_total != 0.0:
            ds = -s_correct if pred[i] == t[i] else s_wrong
            a = 2.0 * d_total * conf[i] * (ds * kw[i] - w[i] * signed[i] / bandwidth)
        ti = t[i]
        for j in range(k):
            out[i, j] = p[i, j] * (row_scale - a)
        # the target's and the prediction's entries without a difference of
        # nearly equal terms near p = 1: p_t·(G - a) - G + a = (G - a)·(p_t - 1)
        # when they are one class, else G·(p_t - 1) - a·p_t and
        # G·p_r + a·(1 - p_r), with log p_r = -log Σ exp(z - max)
        if pred[i] == ti:
            out[i, ti] = (row_scale - a) * np.expm1(logp[i])
        else:
            out[i, ti] = row_scale * np.expm1(logp[i]) - a * p[i, ti]
            out[i, pred[i]] = row_scale * conf[i] - a * np.expm1(-log_total[i])
    return value


@njit(**_SUMS)
def _others_sum(e, i, ti):
    """Σ_(j≠t) e_j of row i in float64."""
    total = 0.0
    for j in range(e.shape[1]):
        total += np.float64(e[i, j]) if j != ti else 0.0
    return total


@njit(**_JIT)
def _row_logp(z, e, i, ti, top):
    """``(Σ_j e_j, log p_t)`` of row i from ``e = exp(z - max)``: log p_t =
    -log1p(S_o / e_t) with ``e_t`` in float64 where p_t may be near 1 (the
    float64 sum 1 + S_o would round S_o away there, and its digits are
    those of p_t - 1), ``z_t - max - log Σ`` elsewhere (e_t may underflow)."""
    others = _others_sum(e, i, ti)
    total = others + np.float64(e[i, ti])
    shift = np.float64(z[i, ti]) - np.float64(top[i])
    e_t = np.exp(shift)
    if e_t > 0.5:
        return total, -np.log1p(others / e_t)
    return total, shift - np.log(total)


@njit(**_SUMS)
def _others_sq(e, i, ti):
    """Σ_(j≠t) e_j² of row i in float64 (the target's entry skipped, not
    subtracted: near p_t = 1 the others' squares are far below p_t²)."""
    total = 0.0
    for j in range(e.shape[1]):
        v = np.float64(e[i, j])
        total += v * v if j != ti else 0.0
    return total


@njit(**_JIT)
def _scale_row(e, i, b):
    """Row i of ``e`` becomes ``e·b``, ``b`` a scalar of its dtype (the
    products in its vector lanes: one rounding more than in float64)."""
    for j in range(e.shape[1]):
        e[i, j] = e[i, j] * b


@njit(**_JIT)
def _quadratic_row(e, i, a, b):
    """Row i of ``e`` becomes ``e·(a·e + b)``, in float64: with the squared
    error ``a·e`` and ``b`` can nearly cancel (Brier's p_j near Σ p²)."""
    for j in range(e.shape[1]):
        v = np.float64(e[i, j])
        e[i, j] = v * (a * v + b)


@njit(**_JIT)
def _dual_keys(z, i, zt, one, zero, keys):
    """``keys = 1 / ((z_j - z_t) + 0)`` of row i in the logits' dtype (as
    :func:`~sklcalib.losses._autograd.dual_index`), a loop of divisions that
    vectorises, apart from the search for the first smallest."""
    for j in range(z.shape[1]):
        keys[j] = one / ((z[i, j] - zt) + zero)


@njit(**_JIT)
def focal_finish(
    z,
    t,
    e,
    top,
    row_scale,
    gamma,
    sign,
    dual,
    lam,
    focal,
    mode,
    bounds,
    gammas,
    zero,
    one,
):
    """The focal family on a large batch, from ``e = exp(z - max)`` (torch's,
    ``top`` the rows' maxima): :func:`focal_family`'s value and gradient (the
    same formulas, the row sums in float64), the gradient written over ``e``
    (``p·(2λ·p + k)`` in the logits' dtype, the target's and the dual class's
    entries in float64 as in :func:`focal_family`)."""
    n, k = z.shape
    two_lam = 2.0 * lam
    typed = np.empty(1, dtype=e.dtype)
    keys = np.empty(k, dtype=z.dtype)
    value = 0.0
    for i in range(n):
        ti = t[i]
        total, logp_t = _row_logp(z, e, i, ti, top)
        inv = 1.0 / total
        p_t = np.float64(e[i, ti]) * inv
        p_t_1 = np.expm1(logp_t)  # p_t - 1, exact near p_t = 1
        jd = -1
        p_j = 0.0
        if dual:
            _dual_keys(z, i, z[i, ti], one, zero, keys)
            best = keys[0]
            jd = 0
            for j in range(1, k):
                if keys[j] < best:
                    best = keys[j]
                    jd = j
            if best < 0:
                p_j = np.float64(e[i, jd]) * inv
            else:
                jd = -1
        row, mf, y = _focal_row(
            focal, mode, p_t, p_j, p_t_1, logp_t, gamma, sign, bounds, gammas
        )
        others = 0.0
        sq = 0.0
        if lam != 0.0:
            others = _others_sq(e, i, ti) * (inv * inv)
            sq = p_t_1 * p_t_1 + others
            row += lam * sq
        value += row
        kk = mf + y * p_j - two_lam * (others + p_t * p_t_1)
        # G·p·(2λ·p + k) = e·(a·e + b), p = e/Σ
        if lam != 0.0:
            _quadratic_row(e, i, row_scale * two_lam * inv * inv, row_scale * kk * inv)
        else:
            typed[0] = row_scale * kk * inv
            _scale_row(e, i, typed[0])
        e[i, ti] = row_scale * (mf * p_t_1 + y * p_j * p_t - two_lam * p_t * sq)
        if jd >= 0:
            e[i, jd] = row_scale * (p_j * (two_lam * p_j + kk) - y * p_j)
    return value * row_scale


@njit(**_SUMS)
def _add_row(mean, e, i, inv):
    """``mean += e[i]·inv`` in float64 (the class sums of p)."""
    for j in range(e.shape[1]):
        mean[j] += np.float64(e[i, j]) * inv


@njit(**_SUMS)
def _dot_row(e, i, ti, v):
    """``Σ_(j≠t) e[i, j]·(v[t] - v[j])`` in float64: ``Σ_j e_j·(v_t - v_j)``,
    with p = e/Σ the difference ``v_t - p·v`` without its cancellation near
    p_t = 1 (where p's rounding to the logits' dtype would dominate it)."""
    total = 0.0
    vt = v[ti]
    for j in range(e.shape[1]):
        total += np.float64(e[i, j]) * (vt - v[j])
    return total


@njit(**_JIT)
def _mdca_row(e, i, inv, v, c):
    """Row i of ``e`` becomes ``p·(v + c)``, ``p = e·inv``, in float64."""
    for j in range(e.shape[1]):
        e[i, j] = np.float64(e[i, j]) * inv * (v[j] + c)


@njit(**_JIT)
def mdca_finish(z, t, e, top, row_scale, batch_scale, gamma, beta):
    """MDCA on a large batch, from ``e = exp(z - max)`` (torch's, ``top`` the
    rows' maxima): :func:`mdca`'s value and gradient (the same formulas, in
    float64), in two passes over ``e`` (the batch term needs every row's p
    first), the gradient written over ``e``."""
    n, k = z.shape
    inv = np.empty(n)
    m = np.empty(n)
    logp = np.empty(n)
    mean = np.zeros(k)
    frac = np.zeros(k)
    base_sum = 0.0
    for i in range(n):
        ti = t[i]
        total, logp_t = _row_logp(z, e, i, ti, top)
        inv[i] = 1.0 / total
        _add_row(mean, e, i, inv[i])
        frac[ti] += 1.0
        logp[i] = logp_t
        row, m[i] = _mdca_focal(logp_t, np.float64(e[i, ti]) * inv[i], gamma)
        base_sum -= row
    gap_sum, v = _class_gaps(mean, frac, n, beta * batch_scale)
    value = base_sum * row_scale + beta * (gap_sum / k) * (row_scale * n)
    for i in range(n):
        ti = t[i]
        p_t = np.float64(e[i, ti]) * inv[i]
        d = _dot_row(e, i, ti, v) * inv[i]  # v_t - p·v
        gm = row_scale * m[i]
        _mdca_row(e, i, inv[i], v, gm - (v[ti] - d))
        e[i, ti] = d * p_t + np.expm1(logp[i]) * gm
    return value
