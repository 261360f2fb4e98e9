"""The answer key: one module per chapter (``chNN.py``), each with an ``EXERCISES`` list.

Kept apart from the chapters' data (``vidya_lab/exercises/chNN.py``) so that the grader can leave it
out of the copy of vidya_lab a notebook being graded runs with: there, importing this package fails,
and ``check``/``get_exercise`` say the notebook is being graded instead of answering.
"""
