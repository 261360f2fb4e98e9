"""The chapters' figures and tables, drawn by code from the package's numbers (one module per chapter,
``chNN.py``), so that a notebook cell only calls and displays them."""
