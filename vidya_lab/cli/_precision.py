"""The one check every command that takes ``--precision`` makes before any work: a precision whose
math needs units of its own (fp4) is refused unless a GPU row the command uses has those units.

Without this the models quietly fall back (fp4 math at fp8 or bf16 rate, see
:meth:`vidya_lab.catalog.GPU.flops_per_s`) and the command would report numbers for a format the
hardware cannot run natively, with exit 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from vidya_lab import catalog
from vidya_lab.cli import UsageError

#: compute kind -> the GPU attribute that must be set for a command to accept it
_NATIVE_ONLY = {"fp4": "fp4_flops_per_s"}


def check_supported(flag: str, precisions: str | Iterable[str], gpu_ids: str | Iterable[str]) -> None:
    """Raise :class:`UsageError` (exit 2) if a precision in ``precisions`` needs units none of
    ``gpu_ids`` has. Unknown ids are left to the command's own lookups (they name them)."""
    precisions = [precisions] if isinstance(precisions, str) else list(precisions)
    gpu_ids = [gpu_ids] if isinstance(gpu_ids, str) else list(gpu_ids)
    gpus = []
    for g in gpu_ids:
        try:
            gpus.append(catalog.get_gpu(g))
        except (KeyError, TypeError):
            return
    for name in precisions:
        try:
            p = catalog.get_precision(name)
        except (KeyError, TypeError):
            return
        attr = _NATIVE_ONLY.get(p.compute)
        if attr is None or any(getattr(g, attr) is not None for g in gpus):
            continue
        have = [g.id for g in catalog.GPUS.values() if getattr(g, attr) is not None]
        raise UsageError(
            f"{flag} {p.id} needs {p.compute} tensor cores, which {', '.join(g.id for g in gpus)} "
            f"lack{'s' if len(gpus) == 1 else ''}; choose another precision (bf16, fp8, int8, int4)"
            + (f" or a GPU with {p.compute} units ({', '.join(have)})" if have else ""))
