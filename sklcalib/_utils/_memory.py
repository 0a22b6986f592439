"""Memory: what this process may still allocate, the limit a file's data may
take, and sizes as text.

Shared by :mod:`sklcalib.io` (a file is refused before it is read when its
data would not fit) and the command line (``--max-bytes``).

The limit is taken from what the process may actually use, not from the
machine's size: the least of the physical memory available
(``MemAvailable``), the address-space and data-segment resource limits
(``RLIMIT_AS``, ``RLIMIT_DATA``: ``ulimit -v``, ``ulimit -d``) minus what the
process already uses, and the memory limit of its cgroup (v2 ``memory.max``,
v1 ``memory.limit_in_bytes``, every ancestor's included) minus the cgroup's
usage. Of that, the report's own peak is set aside: reading a file and
computing the report (intervals included) peaks at about
:data:`PEAK_FACTOR` times the scores' size in float64 plus
:data:`PEAK_FIXED` (``benchmarks/bench_report_memory.py`` measures it).
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: the report's peak memory per byte of its scores in float64 (reading,
#: the metrics and their intervals together; measured at most 4.3, see
#: benchmarks/bench_report_memory.py)
PEAK_FACTOR = 5
#: ``sklcalib report --calibrate auto``: its cross-validated fits of the
#: matrix-type candidates grow with the square of the classes; its peak is
#: below PEAK_FIXED plus this many times ``n_fit * K**2`` float64 (measured at
#: most 1.9 times: 20 000 rows of 30 classes peak at 387 MiB, 60 000 of 10 at
#: 164 MiB)
PEAK_FACTOR_SELECTION = 3
#: and what it takes whatever the size of the file (measured at most 105 MiB,
#: for the binary report's fixed-size tables)
PEAK_FIXED = 128 << 20
#: a cgroup v1 limit this large means "no limit" (the kernel's page-rounded
#: LONG_MAX)
_UNLIMITED = 1 << 60


@dataclass(frozen=True)
class MemoryBudget:
    """What this process may still allocate, in bytes, and what binds it."""

    available: int
    reason: str


def _kib_field(path, name):
    """A ``Name:   123 kB`` field of a /proc file, in bytes, or None."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read_int(path):
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _physical(proc):
    available = _kib_field(Path(proc) / "meminfo", "MemAvailable")
    if available is not None:
        return available, "the physical memory available"
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        return os.sysconf("SC_PAGE_SIZE") * pages, "the physical memory available"
    except (AttributeError, ValueError, OSError):  # not POSIX
        return None


def _resource_limits(proc):
    try:
        import resource
    except ImportError:  # Windows
        return []
    found = []
    for limit, field, what in (
        ("RLIMIT_AS", "VmSize", "address-space limit (RLIMIT_AS, ulimit -v)"),
        ("RLIMIT_DATA", "VmData", "data-segment limit (RLIMIT_DATA, ulimit -d)"),
    ):
        if not hasattr(resource, limit):
            continue
        soft, _ = resource.getrlimit(getattr(resource, limit))
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _kib_field(Path(proc) / "self" / "status", field) or 0
        found.append(
            (
                soft - used,
                f"the {what} of {human_size(soft)}, {human_size(used)} in use",
            )
        )
    return found


def _cgroup_limits(proc, root):
    """(limit - usage, reason) of the process's cgroup and its ancestors."""
    try:
        lines = (Path(proc) / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return []
    root = Path(root)
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2: one unified hierarchy
            base, limit_file, usage_file = root, "memory.max", "memory.current"
        elif "memory" in controllers.split(","):  # v1: the memory controller's
            base = root / "memory"
            limit_file, usage_file = "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        # the cgroup's folder and its ancestors (each may set a lower limit);
        # inside a container the path may not exist: its root is the cgroup
        relative = Path(path.strip()).relative_to("/") if path.strip() else Path()
        folders = [base / relative, *(base / a for a in relative.parents)]
        for folder in dict.fromkeys(folders):
            limit = _read_int(folder / limit_file)
            if limit is None or limit >= _UNLIMITED:
                continue
            usage = _read_int(folder / usage_file) or 0
            found.append(
                (
                    limit - usage,
                    f"the cgroup memory limit of {human_size(limit)}, "
                    f"{human_size(usage)} in use",
                )
            )
    return found


def memory_budget(*, proc="/proc", cgroup="/sys/fs/cgroup"):
    """What this process may still allocate, and which limit binds.

    The least of the physical memory available, the resource limits on the
    address space and the data segment less the process's use of each, and
    its cgroup's memory limit less the cgroup's usage (see the module's
    docstring). ``proc`` and ``cgroup`` are where ``/proc`` and the cgroup
    file system are mounted.

    Returns
    -------
    budget : MemoryBudget or None
        None where nothing can be read (not Linux, no ``sysconf``).
    """
    candidates = [
        c
        for c in (
            _physical(proc),
            *_resource_limits(proc),
            *_cgroup_limits(proc, cgroup),
        )
        if c is not None
    ]
    if not candidates:
        return None
    available, reason = min(candidates, key=lambda c: c[0])
    return MemoryBudget(max(int(available), 0), reason)


#: the limit where nothing can be read
_FALLBACK = 4 << 30


@dataclass(frozen=True)
class DataLimit:
    """The most bytes a file's scores may take in float64, and why."""

    max_bytes: int
    explanation: str


def data_limit(max_bytes=None, *, peak_factor=PEAK_FACTOR):
    """The limit on a file's data: ``max_bytes`` if given, else what this
    process may still allocate less the report's fixed peak, divided by its
    peak per byte of data, ``peak_factor``."""
    if max_bytes is not None:
        return DataLimit(int(max_bytes), "max_bytes, --max-bytes")
    budget = memory_budget()
    if budget is None:
        return DataLimit(
            _FALLBACK, "the default where this process's memory cannot be read"
        )
    room = max(budget.available - PEAK_FIXED, 0) // peak_factor
    return DataLimit(
        int(room),
        f"what this process may still allocate ({human_size(budget.available)}: "
        f"{budget.reason}) less {human_size(PEAK_FIXED)}, divided by "
        f"{peak_factor} for the report's own peak; --max-bytes sets another",
    )


def default_max_bytes():
    """The default limit on the memory a file's scores may take, in float64.

    What this process may still allocate (the least of the physical memory
    available, its address-space and data-segment resource limits and its
    cgroup's memory limit, each less what is in use), less the report's fixed
    peak of :data:`~sklcalib._utils._memory.PEAK_FIXED` bytes, divided by the
    report's peak per byte of data,
    :data:`~sklcalib._utils._memory.PEAK_FACTOR`: a file whose scores fit is
    read and reported without running out of memory. 4 GiB where nothing can
    be read.

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
    return data_limit().max_bytes


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
