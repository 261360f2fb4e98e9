"""The command-line frame: discovery, exit codes, one-line errors (sub-commands test themselves)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from vidya_lab import cli


def run(*args):
    return subprocess.run([sys.executable, "-m", "vidya_lab", *args], capture_output=True,
                          text=True, timeout=60)


def test_help_and_version():
    out = run("--help")
    assert out.returncode == 0 and "usage: vidya-lab" in out.stdout
    out = run("--version")
    assert out.returncode == 0 and out.stdout.startswith("vidya-lab ")


def test_no_command_prints_help_and_fails():
    out = run()
    assert out.returncode == 2 and "usage" in out.stdout


def test_unknown_command_fails_with_usage():
    out = run("no-such-command")
    assert out.returncode == 2 and "invalid choice" in out.stderr


@pytest.mark.parametrize("exc", [ValueError("tp must divide 64, got 3"), KeyError("unknown model 'x'"),
                                 TypeError("batch must be an integer"), cli.UsageError("bad file")])
def test_user_errors_are_one_line_exit_2(monkeypatch, capsys, exc):
    def fail(args):
        raise exc

    def parser():
        p = argparse.ArgumentParser(prog="vidya-lab")
        sub = p.add_subparsers(dest="command")
        sub.add_parser("boom").set_defaults(func=fail)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main(["boom"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vidya-lab boom: error: ")
    assert "Traceback" not in err


def test_every_command_module_registers():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub_parser in sub.choices.items():
        assert sub_parser.format_help(), name


def test_closed_pipe_and_full_disk_are_handled():
    """`vidya-lab models | head` ends quietly (0); writing to a full device is one line, exit 2."""
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "vidya_lab", "models", "--json"], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "No space left on device" in out.stderr
    head = subprocess.run(f"{sys.executable} -m vidya_lab models --json | head -c 10", shell=True,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in head.stderr and "Exception ignored" not in head.stderr


def test_unexpected_error_is_one_line_unless_debug(monkeypatch, capsys):
    def fail(args):
        raise ZeroDivisionError("division by zero")

    def parser():
        p = argparse.ArgumentParser(prog="vidya-lab")
        p.add_argument("--debug", action="store_true")
        sub = p.add_subparsers(dest="command")
        sub.add_parser("boom").set_defaults(func=fail)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main(["boom"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (ZeroDivisionError)" in err
    with pytest.raises(ZeroDivisionError):
        cli.main(["--debug", "boom"])


def test_run_failed_is_exit_1(monkeypatch, capsys):
    def fail(args):
        raise cli.RunFailed("no request could be served")

    def parser():
        p = argparse.ArgumentParser(prog="vidya-lab")
        sub = p.add_subparsers(dest="command")
        sub.add_parser("boom").set_defaults(func=fail)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main(["boom"]) == 1
    assert capsys.readouterr().err == "vidya-lab boom: failed: no request could be served\n"
