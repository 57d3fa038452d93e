"""docs/cli.md lists every command and exactly the options of each command's real ``--help`` output."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_builder.cli import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
#: Options every command has, documented once at the top of the page.
COMMON = {"-h", "--help", "--debug", "--no-color"}


def commands() -> list[str]:
    subparsers = next(a for a in build_parser()._actions if a.dest == "command")
    assert subparsers.choices is not None
    return sorted(subparsers.choices)


def help_output(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", *args, "--help"],
        capture_output=True, text=True, check=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return result.stdout


def help_options(text: str) -> set[str]:
    """The option strings of the ``options:`` part of a help text (where each line starts with options)."""
    part = text.split("\noptions:\n", 1)[1]
    found: set[str] = set()
    for line in part.splitlines():
        stripped = line.strip()
        if line.startswith("  -") and stripped:
            found.update(OPTION.findall(stripped.split("  ")[0]))
    return found


def documented_options(command: str) -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## `kernel-builder {command}`")
    end = text.find("\n## ", start + 1)
    rows = re.findall(r"^\| `([^`]+)` \|", text[start : end if end != -1 else None], re.MULTILINE)
    return {opt for row in rows for opt in OPTION.findall(row)}


def test_every_command_has_a_section() -> None:
    listed = re.findall(r"^## `kernel-builder ([a-z-]+)`", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    assert sorted(listed) == commands()
    top = help_output()
    for command in commands():
        assert re.search(rf"^    {command}\b", top, re.MULTILINE), command


def actions(command: str) -> list[str]:
    """The sub-commands of a command that has them (``cache ls``), else none."""
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = subparsers.choices[command]
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(nested[0].choices or ()) if nested else []


@pytest.mark.parametrize("command", commands())
def test_documented_options_are_the_real_ones(command: str) -> None:
    real = help_options(help_output(command))
    assert COMMON <= real, f"the options of `kernel-builder {command} --help` were not parsed"
    for action in actions(command):  # `cache ls`: the action's options are documented with the command
        options = help_options(help_output(command, action))
        assert COMMON <= options, f"the options of `kernel-builder {command} {action} --help` were not parsed"
        real |= options
    assert documented_options(command) == real - COMMON


def test_common_options_are_described() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "--debug" in text and "--version" in text and "Exit status" in text
    assert "--no-color" in text and "NO_COLOR" in text
