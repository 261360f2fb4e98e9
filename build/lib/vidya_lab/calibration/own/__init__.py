"""Calibrating the cost model on the reader's OWN deployment (``vidya-lab calibrate``).

The published calibration (:mod:`vidya_lab.calibration`) is fitted on other people's tables; a
team with its own engine runs a benchmark and fits the same parameters to it. Read in this order:

1. :mod:`~vidya_lab.calibration.own.observe` — request timelines → observations the model
   predicts: TTFTs of requests that met an idle replica (prefill), gaps between tokens while
   no prompt was pending (decode steps at a known batch and context).
2. :mod:`~vidya_lab.calibration.own.aggregate` — aggregate rows (a CSV in the published columns).
3. :mod:`~vidya_lab.calibration.own.results` — reading every results file, whatever its format.
4. :mod:`~vidya_lab.calibration.own.solve` — bounded least squares on log(predicted/measured)
   and each parameter's profile (is it pinned by the data?).
5. :mod:`~vidya_lab.calibration.own.fitting` — the searched coordinates and their mapping onto a
   :class:`~vidya_lab.sizing.Calibration` (step and layer overheads are one sum on one layout).
6. :mod:`~vidya_lab.calibration.own.document` — :func:`calibrate`, the document it writes.

Load the written file anywhere with :func:`vidya_lab.sizing.load_calibration_file`, or give it to
any cost-model command as ``--calibration FILE``.
"""

from vidya_lab.calibration.own.document import (
    calibrate,
    calibrate_to_file,
    deployment_replica,
    name_for,
    write_calibration_file,
)
from vidya_lab.calibration.own.fitting import fit_deployment
from vidya_lab.calibration.own.observe import Observation, trace_observations
from vidya_lab.calibration.own.results import FORMATS, ROWS, read_results
from vidya_lab.calibration.own.solve import RISE_THRESHOLD

__all__ = ["FORMATS", "ROWS", "RISE_THRESHOLD", "Observation", "calibrate", "calibrate_to_file",
           "deployment_replica", "fit_deployment", "name_for", "read_results",
           "trace_observations", "write_calibration_file"]
