"""`walkerlab train --list-params KIND`: a recognizer's settings, their types and defaults.

Read from the class itself (the constructor's signature for defaults, the
``_parameter_constraints`` for allowed values), so every registered recognizer is
listed without anyone writing its table by hand.
"""
from __future__ import annotations

import inspect


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
                     "allowed": " or ".join("None" if c is None else str(c)
                                            for c in allowed) if allowed else ""})
    return rows


def _type_name(allowed, default) -> str:
    if allowed:
        names = []
        for c in allowed:
            if c is None:
                names.append("None")
            elif hasattr(c, "options"):
                names.append("str")
            elif hasattr(c, "type"):
                names.append("int" if c.type.__name__ == "Integral" else "float")
            elif isinstance(c, type):
                names.append(c.__name__)
            else:
                names.append(type(c).__name__)
        return " | ".join(dict.fromkeys(names))
    return type(default).__name__ if default is not None else "any"


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
