"""`walkerlab train --list-params KIND`: a recognizer's settings, their types and defaults.

Read from the class itself (the constructor's signature for defaults, the
``_parameter_constraints`` for allowed values), so every registered recognizer is
listed without anyone writing its table by hand.
"""
from __future__ import annotations

import inspect
import numbers


def param_table(kind: str) -> list[dict]:
    """[{name, type, default, allowed}] for every constructor parameter of ``kind``.

    ``ValueError`` listing the known kinds for an unknown one.
    """
    from recognizers import get_recognizer_class

    cls = get_recognizer_class(kind)
    constraints = getattr(cls, "_parameter_constraints", {}) or {}
    rows = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        default = None if p.default is p.empty else p.default
        allowed = constraints.get(p.name)
        rows.append({"name": p.name, "type": _type_name(allowed, default),
                     "default": default,
                     "allowed": " or ".join(_allowed_text(c) for c in allowed)
                     if allowed else ""})
    return rows


def _allowed_text(c) -> str:
    """One constraint in words (scikit-learn's own wording; its strings made readable)."""
    if c is None:
        return "None"
    if isinstance(c, str):
        return "a " + _CONSTRAINT_STRINGS.get(c, c)
    return str(c)


def _type_name(allowed, default) -> str:
    if allowed:
        return " | ".join(dict.fromkeys(_constraint_type(c) for c in allowed))
    if isinstance(default, bool):
        return "bool"
    return type(default).__name__ if default is not None else "any"


# scikit-learn's constraint strings, and the readable type each stands for
_CONSTRAINT_STRINGS = {"boolean": "bool", "array-like": "array-like",
                       "sparse matrix": "sparse matrix", "random_state": "int | RandomState",
                       "nan": "nan", "verbose": "int | bool", "cv_object": "int | CV splitter"}


def _constraint_type(c) -> str:
    """A readable type for one parameter constraint (scikit-learn's or the same shape)."""
    if c is None:
        return "None"
    if isinstance(c, str):
        return _CONSTRAINT_STRINGS.get(c, c)
    if isinstance(c, type):
        return c.__name__
    if hasattr(c, "options"):  # StrOptions, Options
        if all(isinstance(o, str) for o in c.options):
            return "str"
        return "int" if getattr(c, "type", None) is numbers.Integral else "option"
    if hasattr(c, "type") and hasattr(c, "closed"):  # Interval
        return "int" if c.type.__name__ == "Integral" else "float"
    name = type(c).__name__.lstrip("_").lower()
    if "bool" in name:
        return "bool"
    if "none" in name:
        return "None"
    if "randomstate" in name:
        return "int | RandomState"
    if "callable" in name:
        return "callable"
    return name


def describe_params(kind: str) -> str:
    """The text ``--list-params`` prints: one line per parameter, then an example."""
    rows = param_table(kind)
    width = max([len(r["name"]) for r in rows] + [4])
    twidth = max([len(r["type"]) for r in rows] + [4])
    lines = ["%s settings (walkerlab train --recognizer %s --param KEY=VALUE):" % (kind, kind),
             "  %-*s  %-*s  %-12s  %s" % (width, "name", twidth, "type", "default", "allowed")]
    for r in rows:
        lines.append("  %-*s  %-*s  %-12s  %s" % (width, r["name"], twidth, r["type"],
                                                  repr(r["default"]), r["allowed"]))
    return "\n".join(lines) + "\n"
