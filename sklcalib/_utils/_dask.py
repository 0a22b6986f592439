"""Row blocks of dask arrays, processed on the active Dask scheduler.

The streaming metrics and calibrators run one task per row block of
``y_prob`` (or of the scores), each returning a small partial result that the
client combines in block order: a fixed order, so the result does not depend
on the scheduler or on which task finished first. The arrays themselves are
never gathered on the client.

This module imports dask; it is itself imported only once a dask array has
arrived, so dask stays an optional dependency.
"""

import math

import dask
import dask.array as da
import numpy as np

from ._validation import as_numpy, is_dask_array


def _check_known_chunks(x, name):
    if any(math.isnan(c) for c in x.chunks[0]):
        raise ValueError(
            f"{name} is a dask array of unknown chunk sizes (for instance after "
            f"boolean indexing); call {name}.compute_chunk_sizes() first."
        )


def _rows_of(x, name):
    """Number of rows of ``x`` (numpy, torch or dask), or a ValueError."""
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"{name} must be an array with one entry per sample.")
    return shape[0]


def row_blocks(lead, lead_name, others):
    """Align arrays on the row blocks of the dask array ``lead``.

    Parameters
    ----------
    lead : dask array
        The array whose row chunks are kept (``y_prob``, the scores).
    lead_name : str
        Its argument name, for messages.
    others : dict
        Argument name -> array (dask, numpy, torch, list) or None. Dask arrays
        of other row chunks are rechunked to those of ``lead`` (they are one
        value per row, cheap to move); in-memory arrays are split along them.

    Returns
    -------
    arrays : list
        ``lead`` with every column in one block, then the others (dask arrays
        of ``lead``'s row chunks, or None), in order.
    """
    _check_known_chunks(lead, lead_name)
    if lead.ndim == 2 and lead.numblocks[1] > 1:
        lead = lead.rechunk({1: -1})  # whole rows in every block
    chunks = lead.chunks[0]
    n = lead.shape[0]
    arrays = [lead]
    for name, x in others.items():
        if x is None:
            arrays.append(None)
            continue
        if is_dask_array(x):
            _check_known_chunks(x, name)
        else:
            x = np.asarray(as_numpy(x))
        if _rows_of(x, name) != n:
            raise ValueError(
                f"{name} has {_rows_of(x, name)} entries but {lead_name} has {n} rows."
            )
        if not is_dask_array(x):
            x = da.from_array(x, chunks=(chunks, *x.shape[1:]))
        elif x.chunks[0] != chunks or (x.ndim == 2 and x.numblocks[1] > 1):
            x = x.rechunk({0: chunks, **({1: -1} if x.ndim == 2 else {})})
        arrays.append(x)
    return arrays


def _guarded(func, index, n_blocks, offset, blocks, args):
    """Run ``func`` on one block; a ValueError comes back as data, so that the
    client reports the first bad block (in row order), whichever task failed
    first."""
    rows = blocks[0].shape[0]
    if rows == 0:
        return True, None
    try:
        return True, func(*blocks, *args)
    except ValueError as exc:
        where = (
            f"row block {index + 1} of {n_blocks}, rows {offset} to {offset + rows - 1}"
        )
        return False, f"{exc} (in {where})"


def map_row_blocks(func, arrays, *args):
    """``func(*blocks, *args)`` for every row block, on the active scheduler.

    ``arrays`` come from :func:`row_blocks` (None entries pass None). Returns
    the results in block order, skipping empty blocks; raises the ValueError
    of the first failing block.
    """
    lead = arrays[0]
    n_blocks = lead.numblocks[0]
    per_array = [
        [None] * n_blocks if a is None else list(a.to_delayed().ravel()) for a in arrays
    ]
    offsets = np.concatenate([[0], np.cumsum(lead.chunks[0])])
    tasks = [
        dask.delayed(_guarded, pure=True)(
            func,
            i,
            n_blocks,
            int(offsets[i]),
            [blocks[i] for blocks in per_array],
            args,
        )
        for i in range(n_blocks)
    ]
    results = dask.compute(*tasks)
    for ok, value in results:
        if not ok:
            raise ValueError(value)
    return [value for _, value in results if value is not None]


def unique_values(x):
    """Sorted unique values of a dask array (one pass over it)."""
    return np.asarray(da.unique(x).compute())
