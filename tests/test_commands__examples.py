"""Every command's ``--help`` ends with one or two examples a newcomer can run, and each example is a valid
command line of that command (the real parser accepts it)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from kernel_builder.cli import build_parser
from kernel_builder.commands import COMMANDS
from kernel_builder.commands._examples import EXAMPLES, TOP


def help_text(*words: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", *words, "--help"], capture_output=True, text=True, check=True,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return result.stdout


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_commands_help_ends_with_examples(command: str) -> None:
    text = help_text(command)
    examples = text.split("\nexamples:\n", 1)[1]
    commands = [
        line.strip() for line in examples.splitlines() if line.startswith(f"  kernel-builder {command}")
    ]
    assert 1 <= len(commands) <= 2, text
    assert examples.count("\n      ") == len(commands)  # each with what it does


@pytest.mark.parametrize(
    ("command", "example"), [(c, e) for c, shown in EXAMPLES.items() for e, _ in shown], ids=lambda v: v
)
def test_each_example_parses(command: str, example: str) -> None:
    """The example's own words (up to a shell `&&`) are accepted by the command's parser."""
    words = shlex.split(example.split("&&")[0])[1:]
    assert words[0] == command
    args = build_parser(only=command).parse_args(words[: words.index("--")] if "--" in words else words)
    assert args.command == command


def test_the_top_level_help_ends_with_examples() -> None:
    text = help_text()
    assert text.rstrip().endswith(TOP[-1][1])
    assert all(f"  {example}" in text for example, _ in TOP)
