"""``python -m vidya_lab …`` is the same as ``vidya-lab …``."""

import sys

from vidya_lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
