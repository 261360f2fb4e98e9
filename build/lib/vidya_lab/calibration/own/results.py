"""Reading a reader's results files: benchmark traces of any format :mod:`vidya_lab.traces` knows,
and aggregate measurement CSVs (:mod:`~vidya_lab.calibration.own.aggregate`).

Each file is read, turned into observations, and summarised for the calibration document: its
format, SHA-256, what it held, how many observations of each kind it gave, the conversions and
assumptions its reader applied, and why it gave no more.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter

from vidya_lab import _validate as v
from vidya_lab import sizing, traces
from vidya_lab.calibration.own import aggregate, observe
from vidya_lab.traces._load import read_text

#: The ``format`` of an aggregate measurement CSV (beside :data:`vidya_lab.traces.FORMATS`).
ROWS = "rows"
FORMATS = (*traces.FORMATS, ROWS)
#: Most results files one calibration reads.
MAX_FILES = 64


def _format_of(path, fmt: str | None) -> str:
    """The file's format: ``fmt`` if given, else ``rows`` for a CSV with the measurement
    columns, else what :func:`vidya_lab.traces.detect_format` says."""
    if fmt not in (None, "auto"):
        return fmt
    _, text = read_text(path)
    if not text.lstrip().startswith(("{", "[")) and aggregate.is_rows_csv(text):
        return ROWS
    return traces.detect_format(path)


def sha256_of(path) -> str:
    """The SHA-256 of the file's bytes (hex)."""
    return hashlib.sha256(v.check_input_file("results", path).read_bytes()).hexdigest()


def read_one(path, r: sizing.Replica, fmt: str | None = None) -> tuple[list, dict]:
    """(observations, summary) of one results file on replica ``r``."""
    name = os.fspath(path)
    kind = _format_of(path, fmt)
    info = {"file": name, "source_format": kind, "sha256": sha256_of(path)}
    if kind == ROWS:
        obs, notes = aggregate.row_observations(path, r)
        info.update(rows=len(obs) + len(notes), conversions=[], assumptions=[])
    else:
        trace = traces.read_trace(path, format=kind)
        obs, notes = observe.trace_observations(trace, name)
        counts = trace.timelines.counts()
        info.update(requests=counts["count"], finished=counts["finished"],
                    arrivals_known=trace.arrivals_known, conversions=list(trace.conversions),
                    assumptions=list(trace.assumptions))
    info["observations"] = dict(sorted(Counter(o.kind for o in obs).items()))
    info["notes"] = notes
    return obs, info


def read_results(paths, r: sizing.Replica, fmt: str | None = None) -> tuple[list, list[dict]]:
    """Observations of every file, and one summary per file (:func:`read_one`).

    Raises ``ValueError`` for no files, too many, an unknown ``fmt``, or a file that is not what
    it claims (the readers' one-line messages name the file).
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ValueError("give at least one results file")
    v.check_work("results files", len(paths), MAX_FILES, unit="files")
    if fmt not in (None, "auto"):
        v.check_choice("format", fmt, FORMATS)
    observations, inputs = [], []
    for path in paths:
        obs, info = read_one(path, r, fmt)
        observations += obs
        inputs.append(info)
    return observations, inputs


def nothing_usable(inputs: list[dict]) -> str:
    """The one-line reason no file gave an observation."""
    parts = [f"{i['file']}: {'; '.join(i['notes']) or 'no timing measurement'}" for i in inputs]
    return "the results constrain nothing: no measurement the cost model can predict (" \
        + " | ".join(parts) + ")"
