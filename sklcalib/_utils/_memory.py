"""Memory sizes: the limit a file's data may take, and sizes as text.

Shared by :mod:`sklcalib.io` (refuse a file before reading it) and the command
line (``--max-bytes``).
"""

import os
import re


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX
        return None


def default_max_bytes():
    """The default limit on the memory a file's data may take.

    A quarter of the machine's physical memory (4 GiB where it cannot be
    read). A quarter leaves room for the copies the metrics make of the scores.

    Returns
    -------
    max_bytes : int
        The limit, in bytes.

    Examples
    --------
    >>> from sklcalib.io import default_max_bytes
    >>> default_max_bytes() > 0
    True
    """
    memory = _physical_memory()
    return int(memory // 4) if memory else 4 << 30


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text):
    """``"500M"`` -> 524288000: bytes, with an optional K, M, G or T (powers
    of 1024, an optional trailing ``B`` or ``iB``).

    Parameters
    ----------
    text : str

    Returns
    -------
    size : int

    Examples
    --------
    >>> from sklcalib._utils._memory import parse_size
    >>> parse_size("2G"), parse_size("1000")
    (2147483648, 1000)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), re.I)
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G or a byte count)")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte, got {text!r}")
    return int(value)


def human_size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover
