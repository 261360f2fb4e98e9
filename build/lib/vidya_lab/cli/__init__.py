"""The ``vidya-lab`` command line.

Each sub-command lives in its own module in this package and defines ``register(subparsers)``, which
adds its parser and sets ``func`` (``args -> int`` exit status). ``main`` discovers the modules, so a new
command is a new file.

Exit status and errors (one rule for every command):

* 0 — done; 1 — the run itself failed (e.g. a simulation in which no request could be served; the
  command says why on stderr, see :class:`RunFailed`);
* 2 — an error the user can fix: bad ids or ranges, a missing or malformed file, an unwritable
  output, a full disk. Raised as :class:`UsageError`, ``ValueError``, ``TypeError``, ``KeyError`` or
  ``OSError``; printed as ONE line on stderr, never a traceback.
* A closed pipe (``vidya-lab models | head``) ends the command quietly with 0.
* ``--debug`` (before the sub-command) re-raises instead, with the traceback; an unexpected error
  without it is one line naming its kind, exit status 1.

Standard output is flushed inside the guarded region, so writing to a full device (``> /dev/full``)
is reported like any other error instead of an "Exception ignored" message at exit.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Sequence


class UsageError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""


class RunFailed(Exception):
    """The command ran but its result is a failure (e.g. nothing could be served): one line on
    stderr and exit status 1."""


def print_json(obj) -> None:
    """Print ``obj`` as indented JSON (the machine-readable output of every command)."""
    print(json.dumps(obj, indent=2, sort_keys=False, default=_json_default))


def _json_default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vidya-lab",
        description="Capacity planning for LLM serving: the calculators and simulators of the book.",
    )
    from vidya_lab import __version__

    parser.add_argument("--version", action="version", version=f"vidya-lab {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _silence_stdout() -> None:
    """After a broken pipe or a failed write, point stdout at /dev/null so the interpreter's own
    flush at exit does not print "Exception ignored"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    name = f"vidya-lab {args.command}"
    debug = getattr(args, "debug", False)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # e.g. `vidya-lab models | head`: the reader has all it wanted
        _silence_stdout()
        return 0
    except RunFailed as exc:
        if debug:
            raise
        print(f"{name}: failed: {_one_line(exc)}", file=sys.stderr)
        return 1
    except (UsageError, ValueError, TypeError, KeyError, OSError) as exc:
        if debug:
            raise
        if isinstance(exc, OSError):
            _silence_stdout()
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line unless asked for the traceback
        if debug:
            raise
        print(f"{name}: internal error ({type(exc).__name__}): {_one_line(exc)} "
              f"(run `vidya-lab --debug {args.command} ...` for the traceback)", file=sys.stderr)
        return 1
