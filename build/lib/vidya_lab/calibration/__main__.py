"""``python -m vidya_lab.calibration``: refit and rewrite the package's calibration.json."""

import json

from vidya_lab.calibration.record import package_file, write_calibration

if __name__ == "__main__":  # pragma: no cover - the refit script
    doc = write_calibration(package_file())
    print(json.dumps({k: doc[k] for k in ("parameters", "throughput_error", "layout_lesson")},
                     indent=2))
