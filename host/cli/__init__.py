"""`walkerlab`: the command line. Each subcommand is a thin layer over a library call.

One module per command group registers its subcommands:

- `host.cli.live`: virtual-walker, monitor, record, replay, recover, ports
- `host.cli.data`: simulate, info, export, labels, annotate, render-video
- `host.cli.models`: train, evaluate, models, learn, workbench, deploy-model, flash
- `host.cli.analysis`: topics, discover, latent
- `host.cli.calibrate`: calibrate, recalibrate
- `host.cli.common`: what they share (argparse pieces, JSON output, --param parsing)

User mistakes raise UserError (or an error listed in `host.errors.user_errors`) and end
as one line on stderr with exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

from host.cli import analysis, calibrate, common, data, live, models
from host.cli.common import OneLineParser, model_specs, subcommand_parser
from host.errors import user_errors

_model_specs = model_specs  # the name tests and scripts used before the split

GROUPS = (live, data, models, analysis, calibrate)


def build_parser() -> argparse.ArgumentParser:
    """The `walkerlab` parser with every command group's subcommands."""
    parser = OneLineParser(
        prog="walkerlab",
        description="Instrumented rolling walker: virtual walker, recording, recognition.")
    parser.add_argument("--version", action="version", version="%(prog)s " + _version(),
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
    return parser


def _version() -> str:
    from host.models import app_version

    return app_version()


def main(argv: list[str] | None = None) -> int:
    """Run `walkerlab ARGV` (default: the process's arguments); the exit status."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:  # the reader went away (`walkerlab ... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered goes nowhere
        os.close(devnull)
        return 128 + 13  # as a process killed by SIGPIPE


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = list(argv) if argv is not None else sys.argv[1:]
    common.set_argv(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand that was given them, in one line
        subcommand_parser(parser, argv).error(
            "unrecognized arguments: %s" % " ".join(extra))
    try:
        return args.func(args)
    except user_errors() as exc:
        print("walkerlab %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
