"""The chapters' figures, one module per chapter (``chNN.py``): drawing only, from numbers the
package computes; a chapter calls one function per figure and shows (or glues) what it returns."""
