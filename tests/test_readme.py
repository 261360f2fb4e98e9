"""README's command table runs as written: every concrete `vidya-lab ...` command in it (no
placeholder such as M, G, TRACE.csv or [optional] parts) exits 0. Placeholder rows are listed by
name in the skip so a reader sees which ones need their own inputs."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import ROOT

from vidya_lab.cli import main

_ROW = re.compile(r"^\|\s*(.+?)\s*\|[^|]*\|\s*$", re.M)
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]*(\.csv)?\b|\[|\.\.\.")


def readme_commands() -> list[str]:
    commands = []
    for cell in _ROW.findall((ROOT / "README.md").read_text()):
        commands += [c for c in re.findall(r"`(vidya-lab[^`]*)`", cell)]
    return commands


COMMANDS = readme_commands()


def test_the_readme_lists_commands():
    assert any(c.startswith("vidya-lab estimate") for c in COMMANDS), COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_as_written(command, capsys):
    if _PLACEHOLDER.search(command.removeprefix("vidya-lab")):
        pytest.skip(f"needs the reader's own inputs: {command}")
    rc = main(shlex.split(command)[1:])
    err = capsys.readouterr().err
    assert rc == 0, f"`{command}` exits {rc}: {err[-500:]}"
