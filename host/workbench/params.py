"""A recognizer's settings as form fields, generated from its parameter constraints.

Every kind declares ``_parameter_constraints`` (scikit-learn style) and defaults in
``__init__``; :func:`param_fields` turns them into fields a form can show (a choice,
a switch, or a number, possibly optional), and :func:`parse_value` turns the text a
user typed back into a value the constraints accept.  One mechanism for every kind.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from host.errors import UserError

# Settings about how a fit reports, not what it learns: not shown.
HIDDEN = frozenset({"verbose"})


@dataclass(frozen=True)
class ParamField:
    name: str
    default: object
    widget: str  # "choice" | "bool" | "int" | "float" | "text"
    options: tuple = ()  # choices (with None first when optional)
    optional: bool = False  # None is allowed ("auto")
    hint: str = ""  # the constraints in words, for a tooltip


def _kind_of(constraints) -> tuple[str, tuple, bool]:
    from recognizers.base import Interval, StrOptions

    optional = any(c is None for c in constraints)
    real = [c for c in constraints if c is not None]
    for c in real:
        if isinstance(c, StrOptions):
            return "choice", tuple(sorted(c.options)), optional
    for c in real:
        if isinstance(c, Interval):
            integral = issubclass(c.type, numbers.Integral)
            return ("int" if integral else "float"), (), optional
    if "boolean" in real:
        return "bool", (), optional
    return "text", (), optional


def param_fields(kind: str) -> list[ParamField]:
    """The settings form of a recognizer kind, in get_params order."""
    from recognizers import get_recognizer_class

    try:
        cls = get_recognizer_class(kind)
    except (KeyError, ValueError) as exc:
        raise UserError(str(exc)) from None
    defaults = cls().get_params(deep=False)
    constraints = getattr(cls, "_parameter_constraints", {})
    fields = []
    for name, default in defaults.items():
        if name in HIDDEN:
            continue
        cons = constraints.get(name, [])
        widget, options, optional = _kind_of(cons)
        if widget == "text" and isinstance(default, bool):
            widget = "bool"
        if widget == "choice" and optional:
            options = (None,) + options
        hint = " or ".join("None" if c is None else str(c) for c in cons)
        fields.append(ParamField(name, default, widget, options, optional, hint))
    return fields


def parse_value(field: ParamField, text: str):
    """The value for what a user typed in a number or text field (UserError if bad)."""
    text = text.strip()
    if text == "" or text.lower() in ("none", "auto"):
        if field.optional:
            return None
        raise UserError("%s needs a value (%s)" % (field.name, field.hint or "required"))
    if field.widget == "int":
        try:
            return int(text)
        except ValueError:
            raise UserError("%s must be a whole number, not %r" % (field.name, text)) from None
    if field.widget == "float":
        try:
            return float(text)
        except ValueError:
            raise UserError("%s must be a number, not %r" % (field.name, text)) from None
    return text


def format_value(value) -> str:
    """How a value shows in a text field (None as empty: 'auto')."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return "%g" % value if abs(value) < 1e6 else str(int(value))
    return str(value)


def validate_params(kind: str, params: dict) -> None:
    """UserError naming the first setting its constraints reject (the recognizers
    check them only when fitting, which for a run is on a worker, fold after fold)."""
    from recognizers import get_recognizer_class

    from sklearn.utils._param_validation import make_constraint

    constraints = getattr(get_recognizer_class(kind), "_parameter_constraints", {})
    for name, v in params.items():
        cons = [make_constraint(c) for c in constraints.get(name, [])]
        if cons and not any(c.is_satisfied_by(v) for c in cons):
            raise UserError("%s %s must be %s, not %r"
                            % (kind, name, " or ".join(str(c) for c in cons), v))


def changed_params(kind: str, values: dict) -> dict:
    """Only the settings that differ from the kind's defaults (short names, commands)."""
    defaults = {f.name: f.default for f in param_fields(kind)}
    return {k: v for k, v in values.items() if k not in defaults or defaults[k] != v}
