"""The code the grader sends into a submission's kernel, after the notebook has run.

Two requests, each writing JSON to a file of the kernel's own folder:

* :data:`VALUES` — the answer variables, encoded by exact type (``int``, ``float``, ``bool``, ``str``,
  ``None``, numpy scalars): an object with a doctored ``__eq__`` or ``__float__`` is reported by its
  type name and scores nothing;
* :data:`FUNCTION` — a student's function called on the grading cases (in the second kernel, where
  the package's reference implementation does not exist), each output encoded the same way.

Nothing here is trusted by the grader: the kernel may have patched ``json``, ``type`` or anything
else, so the worker and the grader validate every field of the report and keep only JSON primitives.
"""

from __future__ import annotations

import json

MAX_STR_CHARS = 2000                # longer string answers are reported as too long

#: Runs in the student's kernel. Encodes a value as JSON by exact type; never calls ``==`` on it.
_ENCODE = r'''
def _vidya_encode(v, _max_str=%(max_str)d):
    import sys as _sys
    try:
        if v is Ellipsis:
            return {"state": "unanswered"}
        t = type(v)
        if v is None or t is bool or t is float:
            return {"state": "value", "value": v}
        if t is int:
            if v.bit_length() > 256:
                return {"state": "unsupported", "type": "int (too large)"}
            return {"state": "value", "value": v}
        if t is str:
            if len(v) > _max_str:
                return {"state": "unsupported", "type": "str (too long)"}
            return {"state": "value", "value": v}
        _np = _sys.modules.get("numpy")
        if _np is not None and t.__module__ == "numpy" and (t.__bases__ and (
                issubclass(t, _np.generic) or t is _np.ndarray)):
            if t is _np.ndarray:
                if v.shape != ():
                    return {"state": "unsupported", "type": "numpy.ndarray"}
                v = v[()]
                t = type(v)
            if issubclass(t, (_np.bool_,)):
                return {"state": "value", "value": bool(v)}
            if issubclass(t, _np.integer):
                return _vidya_encode(int(v))
            if issubclass(t, _np.floating):
                return {"state": "value", "value": float(v)}
        name = getattr(t, "__qualname__", "?")
        return {"state": "unsupported", "type": name if type(name) is str else "?"}
    except BaseException as exc:  # a hostile object: report its type only
        return {"state": "unsupported", "type": "unreadable (" + type(exc).__name__ + ")"}
'''

VALUES = _ENCODE + r'''
def _vidya_collect_values():
    import builtins as _b, json as _json
    _spec = _json.loads(%(spec)r)
    _ns = _b.globals()
    _out = {}
    for _name in _spec["names"]:
        _out[_name] = _vidya_encode(_ns[_name]) if _name in _ns else {"state": "missing"}
    with _b.open(_spec["path"], "w", encoding="utf-8") as _f:
        _f.write(_json.dumps(_out))
_vidya_collect_values()
del _vidya_collect_values, _vidya_encode
'''

FUNCTION = _ENCODE + r'''
def _vidya_call_function():
    import builtins as _b, json as _json
    _spec = _json.loads(%(spec)r)
    def _dec(x):
        if type(x) is list:
            return [_dec(i) for i in x]
        if type(x) is dict:
            if set(x) == {"__tuple__"}:
                return tuple(_dec(i) for i in x["__tuple__"])
            return {k: _dec(i) for k, i in x.items()}
        return x
    _ns = _b.globals()
    if _spec["name"] not in _ns:
        _out = {"state": "missing"}
    else:
        _f = _ns[_spec["name"]]
        if _f is Ellipsis:
            _out = {"state": "unanswered"}
        elif not _b.callable(_f):
            _out = {"state": "not callable", "type": _vidya_encode(_f).get("type", "value")}
        else:
            _outs = []
            for _args in _spec["cases"]:
                try:
                    _outs.append(_vidya_encode(_f(*_dec(_args))))
                except (Exception, SystemExit) as _exc:
                    _outs.append({"state": "raised", "type": type(_exc).__name__,
                                  "message": str(_exc)[:300]})
            _out = {"state": "called", "outputs": _outs}
    with _b.open(_spec["path"], "w", encoding="utf-8") as _f2:
        _f2.write(_json.dumps(_out))
_vidya_call_function()
del _vidya_call_function, _vidya_encode
'''


def kernel_code(template: str, **spec) -> str:
    """Fill a kernel-side template: the spec travels as a JSON string literal."""
    return template % {"spec": json.dumps(spec), "max_str": MAX_STR_CHARS}


def valid_encoded(x) -> bool:
    """An encoded answer as the grader accepts it: a dict with a string ``state``."""
    return isinstance(x, dict) and isinstance(x.get("state"), str)
