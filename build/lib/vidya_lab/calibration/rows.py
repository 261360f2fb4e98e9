"""The published measurements: rows of ``published_calibration.csv`` (and of the extra file), in SI.

``published_calibration.csv`` is a copy of ``../shared/data/published_calibration.csv`` (GPU specs,
KV sizes and the TensorRT-LLM timing rows); ``published_timings_extra.csv`` adds timing rows of
other engines and GPUs (MLPerf Inference, engine blogs) in the same columns, each with its citation.

:func:`split` divides the timing rows into the rows the fit sees and the rows held out to validate
it, by whole configurations (all metrics of one run go to the same side), deterministically.
"""

from __future__ import annotations

import csv
import hashlib
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from vidya_lab import _validate as v

CSV_NAME = "published_calibration.csv"
EXTRA_CSV_NAME = "published_timings_extra.csv"
COLUMNS = ("source", "citation", "model", "gpu", "n_gpus", "tp", "precision", "isl", "osl",
           "metric", "value", "unit", "notes")
#: Largest measurement file read, bytes.
MAX_CSV_BYTES = 5_000_000
#: One configuration in this many is held out of the fit (validation), chosen by a hash of its key.
HOLDOUT_EVERY = 4

_UNIT_SCALE = {"ms": 1e-3, "s": 1.0, "us": 1e-6, "tokens/s": 1.0, "tokens/s/GPU": 1.0,
               "bytes": 1.0, "KB": 1024.0, "GB": 1e9, "TB/s": 1e12, "TFLOPS": 1e12, "%": 1.0}


@dataclass(frozen=True)
class Row:
    """One row of a measurement CSV, with its value in SI units (``si_value``)."""

    index: int
    source: str
    citation: str
    model: str
    gpu: str
    n_gpus: int | None
    tp: int | None
    precision: str
    isl: int | None
    osl: int | None
    metric: str
    value: str
    unit: str
    notes: str
    file: str = CSV_NAME

    @property
    def offered_qps(self) -> float | None:
        if "QPS=INF" in self.notes:
            return math.inf
        m = re.search(r"QPS=([0-9.]+)", self.notes)
        return float(m.group(1)) if m else None

    @property
    def batch_size(self) -> int | None:
        m = re.search(r"batch_size=(\d+)", self.notes)
        return int(m.group(1)) if m else None

    @property
    def kv_precision(self) -> str | None:
        m = re.search(r"kv_precision=([a-z0-9]+)", self.notes)
        return m.group(1) if m else None

    @property
    def config_key(self) -> tuple:
        """One run's configuration: its rows share a side of the train/validation split."""
        return (self.file, self.source, self.model, self.gpu, self.n_gpus, self.tp, self.precision,
                self.isl, self.osl, self.batch_size, self.offered_qps)

    @property
    def si_value(self) -> float | None:
        try:
            x = float(self.value)
        except ValueError:
            return None
        unit = self.unit.split(" (")[0].split(" ")[0] if self.unit else ""
        if self.unit.startswith("GB"):
            return x * 1e9
        return x * _UNIT_SCALE.get(unit, 1.0)


def _int(text: str) -> int | None:
    text = (text or "").strip()
    return int(text) if text else None


def _parse(text: str, file: str, start: int = 0) -> list[Row]:
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{file}: missing column(s) {missing}")
    rows = []
    for i, d in enumerate(reader):
        try:
            rows.append(Row(start + i, d["source"], d["citation"], d["model"], d["gpu"],
                            _int(d["n_gpus"]), _int(d["tp"]), d["precision"], _int(d["isl"]),
                            _int(d["osl"]), d["metric"], d["value"], d["unit"], d["notes"], file))
        except ValueError as exc:
            raise ValueError(f"{file} row {i + 2}: {exc}") from None
    return rows


def load_rows(path: str | Path | None = None, *, extra: bool = False) -> list[Row]:
    """Rows of the packaged published_calibration.csv (or of ``path``); with ``extra``, followed
    by the rows of the packaged published_timings_extra.csv."""
    if path is None:
        text = resources.files("vidya_lab").joinpath("data", CSV_NAME).read_text()
        rows = _parse(text, CSV_NAME)
    else:
        p = v.check_input_file("path", path, max_bytes=MAX_CSV_BYTES)
        rows = _parse(p.read_text(), p.name)
    if extra:
        res = resources.files("vidya_lab").joinpath("data", EXTRA_CSV_NAME)
        if res.is_file():
            rows += _parse(res.read_text(), EXTRA_CSV_NAME, start=len(rows))
    return rows


def _holdout(row: Row) -> bool:
    digest = hashlib.sha256(repr(row.config_key).encode()).digest()
    return digest[0] % HOLDOUT_EVERY == 0


def split(rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """(fit rows, held-out rows): one configuration in :data:`HOLDOUT_EVERY` is held out, chosen by
    a SHA-256 of its configuration key, so the split is the same on every machine."""
    rows = check_rows("rows", rows)
    fit = [r for r in rows if not _holdout(r)]
    held = [r for r in rows if _holdout(r)]
    return fit, held


def check_row(name: str, row) -> Row:
    """``row`` if it is a :class:`Row`; else a ``TypeError`` naming ``name``."""
    return v.check_instance(name, row, Row, "calibration.Row (from load_rows)")


def check_rows(name: str, rows) -> list[Row]:
    """``rows`` as a list if it is a sequence of :class:`Row`; else a ``TypeError`` naming
    ``name`` (or the first entry that is not a row)."""
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, (list, tuple)):
        raise TypeError(f"{name} must be a list of calibration.Row (from load_rows), got "
                        f"{type(rows).__name__}")
    for i, row in enumerate(rows):
        check_row(f"{name}[{i}]", row)
    return list(rows)
