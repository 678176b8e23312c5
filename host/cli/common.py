"""What every `walkerlab` command group shares: argparse pieces (one-line errors, checked
numbers, deprecated option spellings, `--list-params`), JSON output, the command line
recorded in saved files, and `--recognizer`/`--param` parsing.
"""
from __future__ import annotations

import argparse
import sys

from host.errors import UserError


def number(kind, low=None, strict=False, what=None):
    """An argparse type: a ``kind`` (int or float) above ``low`` (``strict``) or at least it."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "%r is not %s" % (text, "a whole number" if kind is int else "a number")
            ) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError("%r is not a finite number" % text)
        if low is not None and (value <= low if strict else value < low):
            raise argparse.ArgumentTypeError(
                what or "must be %s %s, got %s" % ("greater than" if strict else "at least",
                                                   low, text))
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


nonneg_int = number(int, 0)
pos_int = number(int, 1)
nonneg_float = number(float, 0.0)
pos_float = number(float, 0.0, strict=True)


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``walkerlab CMD: error: ...`` (and a --help hint)."""

    def error(self, message):
        self.exit(2, "%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))


class Alias(argparse.Action):
    """Store a value; a deprecated spelling of the option still works, with a warning."""

    def __init__(self, option_strings, dest, deprecated=(), **kwargs):
        self.deprecated = tuple(deprecated)
        super().__init__(option_strings + list(self.deprecated), dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.deprecated:
            print("%s: warning: %s is deprecated, use %s" % (
                parser.prog, option_string, self.option_strings[0]), file=sys.stderr)
        setattr(namespace, self.dest, values)


class ListParams(argparse.Action):
    """``--list-params KIND``: print the recognizer's settings and exit (like --help)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=1, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from host.params_help import describe_params

        try:
            text = describe_params(values[0])
        except ValueError as exc:
            parser.exit(2, "%s: error: %s\n" % (parser.prog, exc))
        sys.stdout.write(text)
        parser.exit(0)


def subcommand_parser(parser, argv):
    """The deepest (sub)parser the command words of argv select."""
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            if subs and not word.startswith("-"):
                break
            continue
        parser = subs[0].choices[word]
    return parser


def rate_hz(text: str) -> int:
    """An argparse type: a sample rate the wire protocol allows."""
    from device.protocol import wire

    rate = int(text)
    if not wire.MIN_RATE_HZ <= rate <= wire.MAX_RATE_HZ:
        raise argparse.ArgumentTypeError(
            "rate must be %d-%d Hz" % (wire.MIN_RATE_HZ, wire.MAX_RATE_HZ))
    return rate


def probability(text: str) -> float:
    """An argparse type: a probability in [0, 1]."""
    p = float(text)
    if not 0.0 <= p <= 1.0:
        raise argparse.ArgumentTypeError("must be a probability between 0 and 1")
    return p


def has_display() -> bool:
    """Whether Qt can open a window here (a display, or the offscreen platform)."""
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") == "offscreen")


def load_model_or_default(path, default: bool = False):
    """The model at ``path`` (UserError in one line), else the shipped one if ``default``."""
    from host.models import load_default_model, load_model

    if path is None:
        return load_default_model() if default else None
    return load_model(path)


def print_json(data) -> None:
    """Print ``data`` as indented JSON (numpy values converted, no NaN)."""
    import json

    from host.report import json_safe

    print(json.dumps(json_safe(data), indent=2, sort_keys=True, allow_nan=False))


_ARGV: list[str] | None = None  # the arguments main() was given (recorded in models)


def set_argv(argv: list[str]) -> None:
    """Remember the arguments `main` was given, for `command_line`."""
    global _ARGV
    _ARGV = list(argv)


def command_line() -> str:
    """The `walkerlab ...` command being run, shell-quoted (saved models record it)."""
    argv = _ARGV if _ARGV is not None else sys.argv[1:]
    return "walkerlab " + " ".join(map(_shell_quote, argv))


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def model_specs(recognizers: str, params: list[str]):
    """ModelSpecs for --recognizer a,b,... and --param [KIND:]KEY=VALUE (no kind: all)."""
    import json

    from host.evaluate import ModelSpec

    kinds = [k.strip() for k in recognizers.split(",") if k.strip()]
    if not kinds:
        raise UserError("--recognizer needs at least one kind")
    per_kind: dict[str, dict] = {k: {} for k in kinds}
    for item in params:
        target, colon, rest = item.partition(":")
        if colon and "=" not in target:
            if target not in per_kind:
                raise UserError("--param %s names %r, which is not among --recognizer %s"
                                % (item, target, recognizers))
            targets, item = [target], rest
        else:
            targets = kinds
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError("--param takes [KIND:]KEY=VALUE, got %r" % item)
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        for k in targets:
            per_kind[k][key] = parsed
    specs = [ModelSpec(k, per_kind[k]) for k in kinds]
    for spec in specs:
        _check_setting_names(spec)
        spec.check()
    return specs


def _check_setting_names(spec) -> None:
    """UserError naming the recognizer's settings for a --param key it does not have."""
    from host.params_help import param_table

    try:
        known = [row["name"] for row in param_table(spec.kind)]
    except ValueError:
        return  # an unknown kind: ModelSpec.check says so, listing the kinds
    unknown = [key for key in spec.params if key not in known]
    if unknown:
        raise UserError("--param %s: recognizer %s has no setting %s (its settings: %s; "
                        "`walkerlab train --list-params %s` describes them)"
                        % (unknown[0], spec.kind, " or ".join(map(repr, unknown)),
                           ", ".join(known), spec.kind))
