"""argparse pieces every `walkerlab` subcommand shares: one-line errors, checked numbers,
deprecated option spellings, and `--list-params`.

Kept apart from host/cli.py so the CLI stays a list of thin subcommands.
"""
from __future__ import annotations

import argparse
import sys


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
