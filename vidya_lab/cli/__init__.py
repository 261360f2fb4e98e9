"""The ``vidya-lab`` command line.

Each sub-command lives in its own module in this package and defines ``register(subparsers)``, which
adds its parser and sets ``func`` (``args -> int`` exit status). ``main`` discovers the modules, so a new
command is a new file. Errors a user can cause (bad ids, bad ranges, bad files) are raised as
:class:`UsageError`, ``ValueError``, ``TypeError`` or ``KeyError`` and become one line on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Sequence


class UsageError(Exception):
    """A problem with the user's input, reported as one line and exit status 2."""


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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, TypeError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"vidya-lab {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `vidya-lab models | head`
        return 0
