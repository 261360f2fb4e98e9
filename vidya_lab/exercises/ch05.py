"""Chapter 5's exercise data: the freeze, chunked prefill and its cost, and the queueing answers.

The constants and helpers the chapter and its exercises share (the same for every reader:
no per-student givens yet); the answers are in the answer key, ``key/ch05.py``.
"""

from __future__ import annotations

from functools import cache

from vidya_lab import sizing
from vidya_lab.scenario import TANVI

GPU_ID, TP = "h100-sxm", 4
#: Exercise 5.2: students decoding while the upload is chunked, and the step's token budget.
DECODING_STUDENTS = 32
CHUNK_TOKENS = 512
#: Exercise 5.4: uploads per second reaching a dedicated one-at-a-time summary replica.
UPLOAD_RATE_PER_S = 0.1
#: Exercise 5.5: uploads per second in exam week, and the largest share allowed to wait.
EXAM_UPLOAD_RATE_PER_S = 1.0
MAX_WAIT_PROBABILITY = 0.1


@cache
def replica() -> sizing.Replica:
    """The chapter's replica (scenario model, 4 × H100, TP 4)."""
    return sizing.Replica(TANVI.model_id, GPU_ID, tp=TP)
