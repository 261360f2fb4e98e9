"""``--calibration FILE``: the one option every cost-model command shares.

``add_option(parser)`` registers it; ``load(args)`` returns the
:class:`~vidya_lab.sizing.Calibration` to pass on (the published one when the option is absent; a bad file is a one-line error naming
the file and the problem, exit status 2); ``line(cal)`` is the line the text output prints, and
the JSON output names it under the key ``calibration``.
"""

from __future__ import annotations

from vidya_lab import sizing


def add_option(parser) -> None:
    """Register ``--calibration FILE`` on a sub-command's parser."""
    parser.add_argument("--calibration", metavar="FILE", default=None,
                        help="a calibration JSON file (from `vidya-lab calibrate`) instead of the "
                             "published one")


def load(args) -> sizing.Calibration:
    """The calibration ``args.calibration`` names (the published one if none)."""
    path = getattr(args, "calibration", None)
    return sizing.fitted_calibration() if path is None else sizing.load_calibration_file(path)


def line(cal: sizing.Calibration) -> str:
    """The text output's line naming the calibration used."""
    return f"  calibration: {cal.name}"
