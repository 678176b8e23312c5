"""One CLI: --version, help on every option, --list-params, one-line user errors.

The checks walk the argparse tree, so subcommands added later are covered too.
"""
import argparse
import os

import numpy as np
import pytest

from host.cli import build_parser, main as walkerlab


def _subparsers(parser, prefix=()):
    """(command words, parser) of every (sub)command, depth first."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subparsers(sub, prefix + (name,))


def _is_leaf(parser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def run(argv, capsys):
    """(exit status, stderr) of `walkerlab ARGV`; any exception escaping is a failure."""
    try:
        code = walkerlab(argv)
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # a traceback for the user
        pytest.fail("walkerlab %s raised %s: %s" % (" ".join(argv), type(exc).__name__, exc))
    captured = capsys.readouterr()
    return code, captured.err


def test_every_option_and_argument_has_help_text():
    missing = []
    for words, parser in _subparsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append("walkerlab %s %s" % (" ".join(words),
                                                     "/".join(action.option_strings)
                                                     or action.dest))
    assert missing == []


def test_the_same_option_name_means_one_thing():
    """--labels was a track in train and a label set in annotate: now --track and
    --label-set everywhere, --labels a deprecated spelling of the same thing."""
    dests = {}
    for words, parser in _subparsers(build_parser()):
        for action in parser._actions:
            for opt in action.option_strings:
                dests.setdefault(opt, {})[" ".join(words)] = action
    for opt in ("--track", "--label-set", "--labels", "--out", "--overwrite", "--quiet"):
        for where, action in dests.get(opt, {}).items():
            assert action.option_strings[0] != "--labels", where  # never the main name
    for where, action in dests["--labels"].items():
        main_name = action.option_strings[0]
        assert main_name in ("--track", "--label-set"), where
        assert "deprecated" in action.help


def test_deprecated_spelling_still_works_with_a_warning(tmp_path, capsys):
    from host.simulate import simulate_to_files

    (path,) = simulate_to_files("exp2", 1, 3, tmp_path, duration_s=10, progress=False)
    code, err = run(["info", str(path), "--labels", "simulator", "--json"], capsys)
    assert code == 0 and "--labels is deprecated, use --track" in err


def test_version(capsys):
    from host.models import app_version

    with pytest.raises(SystemExit) as done:
        walkerlab(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "walkerlab " + app_version()


def test_list_params_shows_types_and_defaults(capsys):
    with pytest.raises(SystemExit) as done:
        walkerlab(["train", "--list-params", "hmm"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.split()[:1] == ["tau"])
    assert "float" in line and "4000.0" in line and "(0.0, inf)" in line
    assert any(line.split()[:3] == ["transitions", "str", "'persistence'"]
               for line in out.splitlines())
    with pytest.raises(SystemExit) as done:
        walkerlab(["train", "--list-params", "nope"])
    assert done.value.code == 2 and "unknown recognizer 'nope'" in capsys.readouterr().err


def _one_line_error(code, err):
    assert code not in (0, None), err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines()
             if line.strip() and "warning" not in line and "%|" not in line]
    assert len(lines) == 1, err
    return lines[0]


def test_every_subcommand_refuses_an_unknown_option_in_one_line(capsys):
    for words, parser in _subparsers(build_parser()):
        if not words or not _is_leaf(parser):
            continue
        code, err = run([*words, "--no-such-option"], capsys)
        line = _one_line_error(code, err)
        assert line.startswith("walkerlab %s: error:" % " ".join(words)), line


def test_every_subcommand_with_a_file_refuses_a_missing_one_in_one_line(tmp_path, capsys):
    """Fill each subcommand's required arguments: files that do not exist, the first
    of each choice; whatever it is, the answer is one line and a non-zero exit."""
    missing = str(tmp_path / "missing" / "x.h5")
    for words, parser in _subparsers(build_parser()):
        if not words or not _is_leaf(parser):
            continue
        argv = list(words)
        needs_file = False
        for action in parser._actions:
            if action.option_strings and not action.required:
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            if action.choices:
                value = str(sorted(action.choices)[0])
            elif action.option_strings:  # a required output (--out): somewhere new
                value = str(tmp_path / "new" / ("%s.out" % "-".join(words)))
            else:
                value = missing
                needs_file = True
            argv += ([action.option_strings[0]] if action.option_strings else []) + [value]
        if not needs_file:
            continue  # nothing to be missing (e.g. virtual-walker serves forever)
        code, err = run(argv, capsys)
        assert code not in (0, None), argv
        _one_line_error(code, err)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from host.simulate import simulate_to_files

    d = tmp_path_factory.mktemp("bad-args")
    (rec,) = simulate_to_files("exp2", 1, 5, d, duration_s=10, progress=False)
    fake = d / "notes.h5"
    fake.write_text("this is not HDF5\n")
    empty_model = d / "empty.npz"
    empty_model.write_bytes(b"")
    return {"rec": str(rec), "fake": str(fake), "model": str(empty_model), "dir": d}


BAD = [
    ["evaluate", "{rec}", "--transition-window", "-1"],
    ["evaluate", "{rec}", "--workers", "0"],
    ["evaluate", "{rec}", "--own-sessions", "-2"],
    ["render-video", "{rec}", "--out", "{dir}/video.xyz"],
    ["render-video", "{rec}", "--out", "{dir}/video.mp4", "--fps", "-1"],
    ["render-video", "{rec}", "--out", "{dir}/video.mp4", "--size", "0x0"],
    ["simulate", "--course", "exp2", "--subjects", "0", "--out", "{dir}/sim"],
    ["simulate", "--course", "exp2", "--duration", "-5", "--out", "{dir}/sim"],
    ["info", "{fake}"],
    ["replay", "{fake}"],
    ["export", "{fake}", "--format", "csv"],
    ["train", "{fake}", "--quiet"],
    ["train", "{rec}", "{rec}", "--quiet"],
    ["train", "{rec}", "--quiet", "--out", "{dir}"],
    ["train", "{rec}", "--quiet", "--param", "tau=-3"],
    ["train", "{rec}", "--quiet", "--label-map", "{fake}"],
    ["evaluate", "{fake}", "{rec}", "--scheduler", "serial", "--quiet"],
    ["labels", "import", "{fake}", "{rec}", "--annotator", "me"],
    ["labels", "export", "{fake}", "--format", "csv", "--out", "{dir}/l.csv"],
    ["learn", "{model}", "{rec}"],
    ["replay", "{rec}", "--model", "{model}"],
    ["replay", "{rec}", "--speed", "-1"],
    ["monitor", "--headless", "--model", "{model}", "--duration", "1"],
    ["monitor", "--duration", "-1"],
    ["recover", "{fake}"],
    ["models", "{rec}"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a[:2]) + " " + a[-1] for a in BAD])
def test_user_mistakes_are_one_line_without_traceback(argv, files, capsys):
    line = _one_line_error(*run([a.format(**files) for a in argv], capsys))
    assert "signature" not in line and "errno" not in line.lower()  # no raw HDF5 text
