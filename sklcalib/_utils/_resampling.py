"""Resampling engine of the bootstrap and of the consistency test.

The binned metrics (ECE, MCE, classwise ECE) and NLL and Brier are functions of
a few sums over the rows that fall in each "cell" (a bin, or a bin of one
class): the number of rows, the sum of their confidences, the sum of their
correctness. Under bootstrap resampling a row keeps its confidence, its
correctness and its bin; only how many times it is drawn changes. So a resample
is a pass that draws ``n`` row indices and adds each drawn row's values to its
cells: no resampled copy of ``y_prob``, no validation, no argmax, no sort.
Under consistency resampling (labels drawn from ``y_prob``) the bins stay
fixed as well; each row adds the values of the class drawn for it.

A plan is ``(codes, values, finalize)``: ``codes[i, m]`` is the cell of the
``m``-th contribution of row ``i``, ``values[i, m]`` its vector of values, and
``finalize(sums)`` maps cell sums of shape ``(..., n_cells, 1 + n_values)``
(a count of contributions first, then the value sums) to the metric. The
metric itself is ``finalize`` of the full-data sums.

Random numbers. Every resample ``b`` has its own stream, SplitMix64
(Steele, Lea & Flood 2014) started at a 64-bit seed drawn from
``random_state``; draw ``t`` of the stream is a pure function of
``(seed_b, t)``. We write the generator ourselves (a few integer operations)
because a compiled loop cannot call numpy's ``Generator``, and drawing the
indices with numpy first costs more than the whole statistic; a counter-based
stream also makes the parallel kernel's result independent of the number of
threads, and lets the numpy path below draw exactly the same numbers, so the
two paths agree to the last bit (the numpy path is the reference of the
compiled one, and runs the small problems, sparing the numba import).
A uniform row within a block of ``s`` rows is ``floor(u * s)`` with ``u`` the
top 53 bits of the draw: every row is drawn with probability ``1/s`` to within
``s / 2^53``.
"""

import numpy as np
from sklearn.utils import check_random_state

from ._optional import is_installed
from ._splitmix import GAMMA, MIX1, MIX2, TO_UNIT

# Problems of fewer (resamples x rows x contributions) than this run in numpy:
# the compiled kernel's import and one-off compilation cost seconds. Tests move
# it to exercise both paths. Without numba (the "fast" extra) numpy runs every
# size, with the same numbers.
_COMPILED_MIN_WORK = 1 << 24
_NUMPY_CHUNK = 1 << 21  # draws per numpy batch (memory ~ 100 bytes per draw)
_ROW_BLOCK = 2048  # rows per block of the bootstrap draws (see uniform_indices)


def _compiled(work):
    """Whether a problem of ``work`` draws takes the compiled kernel."""
    return work >= _COMPILED_MIN_WORK and is_installed("numba")


def stream_seeds(random_state, n_streams):
    """One 64-bit seed per resample, drawn from ``random_state`` (None, an int,
    a ``RandomState`` or a ``Generator``)."""
    if isinstance(random_state, np.random.Generator):
        rng = random_state
        return rng.integers(0, 2**64, size=n_streams, dtype=np.uint64)
    rng = check_random_state(random_state)
    return rng.randint(0, 2**64, size=n_streams, dtype=np.uint64)


def uniforms(seeds, n_draws):
    """The first ``n_draws`` uniforms in [0, 1) of every stream: shape
    ``(len(seeds), n_draws)``, float64 (numpy path)."""
    with np.errstate(over="ignore"):
        steps = np.arange(1, n_draws + 1, dtype=np.uint64) * GAMMA
        z = seeds[:, None] + steps[None, :]
        z ^= z >> np.uint64(30)
        z *= MIX1
        z ^= z >> np.uint64(27)
        z *= MIX2
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * TO_UNIT


def block_counts(seeds, n):
    """How many of the ``n`` draws of every resample land in each block of
    ``_ROW_BLOCK`` consecutive rows: (len(seeds), n_blocks), multinomial.
    Resample ``b``'s counts depend on ``seeds[b]`` alone, so a resample is
    the same rows whichever batch it is drawn in."""
    sizes = np.diff(np.append(np.arange(0, n, _ROW_BLOCK), n))
    counts = np.empty((seeds.shape[0], sizes.shape[0]), dtype=np.int64)
    for b, seed in enumerate(seeds):
        counts[b] = np.random.default_rng(int(seed)).multinomial(n, sizes / n)
    return counts, sizes


def uniform_indices(seeds, n, counts=None):
    """``(len(seeds), n)`` row indices drawn uniformly with replacement.

    Drawn block by block: first how many draws land in each block of rows
    (multinomial), then that many uniform rows within the block, in block
    order. The multiset of rows is distributed exactly as ``n`` independent
    uniform draws; what it buys is locality: the compiled kernel reads one
    small block of the table at a time (in cache) instead of jumping over all
    of it (a cache miss per draw; measured 3x slower on 1e5 rows).
    """
    if counts is None:
        counts, sizes = block_counts(seeds, n)
    else:
        sizes = np.diff(np.append(np.arange(0, n, _ROW_BLOCK), n))
    starts = np.arange(0, n, _ROW_BLOCK)
    u = uniforms(seeds, n)
    idx = np.empty(u.shape, dtype=np.intp)
    for b in range(seeds.shape[0]):
        block = np.repeat(np.arange(sizes.shape[0]), counts[b])
        idx[b] = starts[block] + np.minimum(
            (u[b] * sizes[block]).astype(np.intp), sizes[block] - 1
        )
    return idx


def drawn_classes(u, cumulative):
    """Class drawn for every row from uniforms ``u`` of shape (B, n) and the
    rows' cumulative probabilities (n, K): the first class whose cumulative
    probability exceeds ``u`` times the row total."""
    target = u * cumulative[None, :, -1]
    k = (cumulative[None, :, :] <= target[:, :, None]).sum(axis=2)
    return np.minimum(k, cumulative.shape[1] - 1, out=k)


def _chunks(n_resamples, n_rows):
    step = max(1, _NUMPY_CHUNK // max(n_rows, 1))
    for start in range(0, n_resamples, step):
        yield slice(start, min(start + step, n_resamples))


def _accumulate(cells, values, n_cells, b):
    """Per-(resample, cell) count and value sums for a chunk of ``b``
    resamples; ``cells`` is (b, n, m) cell indices, ``values`` (b, n, m, v).
    Returns (b, n_cells, 1 + v)."""
    flat = (cells + (np.arange(b) * n_cells)[:, None, None]).ravel()
    v = values.shape[-1]
    out = np.empty((b, n_cells, 1 + v))
    out[:, :, 0] = np.bincount(flat, minlength=b * n_cells).reshape(b, n_cells)
    for j in range(v):
        out[:, :, 1 + j] = np.bincount(
            flat, weights=values[..., j].ravel(), minlength=b * n_cells
        ).reshape(b, n_cells)
    return out


def full_sums(codes, values, n_cells):
    """Cell sums of the data itself: (n_cells, 1 + v)."""
    return _accumulate(codes[None], values[None], n_cells, 1)[0]


def bootstrap_sums(codes, values, n_cells, seeds):
    """Cell sums of every bootstrap resample: (B, n_cells, 1 + v)."""
    n, m = codes.shape
    counts, _ = block_counts(seeds, n)
    if _compiled(seeds.shape[0] * n * m):
        from ._resampling_compiled import bootstrap_sums_compiled

        return bootstrap_sums_compiled(
            codes, values, n_cells, seeds, counts, _ROW_BLOCK
        )
    out = np.empty((seeds.shape[0], n_cells, 1 + values.shape[-1]))
    for sl in _chunks(seeds.shape[0], n * m):
        idx = uniform_indices(seeds[sl], n, counts[sl])
        out[sl] = _accumulate(codes[idx], values[idx], n_cells, idx.shape[0])
    return out


def top_label_hits(u, bounds):
    """Whether the class drawn from ``u`` (B, n) is each row's top label, by
    :func:`drawn_classes`' rule, from ``bounds`` (n, 3) (see ``_plans``)."""
    target = u * bounds[None, :, 2]
    return (bounds[None, :, 0] <= target) & (target < bounds[None, :, 1])


def consistency_sums(plan, seeds):
    """Cell sums when every row draws its class from its probabilities: row
    ``i`` drawing class ``k`` adds one and ``values[i, k]`` to cell
    ``codes[i, k]`` (with ``top_label_bounds``: ``k`` is 1 if the drawn class
    is the top label, else 0). Shape (B, n_cells, 1 + v)."""
    codes, values, n_cells = plan.codes, plan.values, plan.n_cells
    n, n_classes = plan.cumulative.shape
    if _compiled(seeds.shape[0] * n * n_classes):
        from ._resampling_compiled import consistency_sums_compiled

        return consistency_sums_compiled(plan, seeds)
    out = np.empty((seeds.shape[0], n_cells, 1 + values.shape[-1]))
    rows = np.arange(n)
    for sl in _chunks(seeds.shape[0], n * n_classes):
        u = uniforms(seeds[sl], n)
        if plan.top_label_bounds is not None:
            k = top_label_hits(u, plan.top_label_bounds).astype(np.intp)
        else:
            k = drawn_classes(u, plan.cumulative)
        cells = codes[rows, k][:, :, None]
        vals = values[rows, k][:, :, None, :]
        out[sl] = _accumulate(cells, vals, n_cells, k.shape[0])
    return out


def jackknife_sums(codes, values, total, rows):
    """Cell sums with each of ``rows`` left out: (len(rows), n_cells, 1 + v)."""
    out = np.broadcast_to(total, (rows.shape[0], *total.shape)).copy()
    at = np.arange(rows.shape[0])
    for j in range(codes.shape[1]):
        out[at, codes[rows, j], 0] -= 1.0
        out[at, codes[rows, j], 1:] -= values[rows, j]
    return out
