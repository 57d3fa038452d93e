"""A seeded mutator over the example build.toml files, run through check-config, build and update-build.

Each case takes one of the real files (the examples and the v1-v5 form fixtures), applies one to three random
mutations (hostile values, broken syntax, control characters, invalid UTF-8, deep nesting, truncation, ...)
and runs the three commands in-process. A rejected file must give exit status 2, a message naming its
build.toml and no traceback, the same in all three commands, and ``update-build`` must leave it byte for
byte as it was. A mutant that is still valid is skipped by ``build`` (it would compile). The seed of each
case is in the failure message: ``FUZZ_SEED=<n> pytest tests/test_config_load_fuzz.py`` replays that case first.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernel_builder.cli import main
from kernel_builder.config import load as config_load

ROOT = Path(__file__).resolve().parents[1]
SEEDS = [
    ROOT / "examples" / "relu",
    ROOT / "examples" / "activation",
    ROOT / "examples" / "relu-triton",
    *(ROOT / "tests" / "fixtures" / "forms" / form for form in ("v1", "v2", "v3", "v4", "v5")),
]
CASES = 600
MIN_REJECTED = 500

HOSTILE_VALUES = [
    "99999999999999999999999",
    "-1",
    "1e400",
    "nan",
    "true",
    '"' + "x" * 5000 + '"',
    '"../../../etc/passwd"',
    '"/etc/passwd"',
    '"a\\nb"',
    '"a\\u0000b"',
    '"\\u202eevil"',
    '"\\u001b[31m"',
    '"$<1:x>"',
    '"a>b;c,d$x"',
    '"*.cu"',
    '"' + "k" * 300 + '.cu"',
    "[" * 40 + "]" * 40,
    "{ a = " * 30 + "1" + " }" * 30,
    '["\\t"]',
    "[1, 2, 3]",
    "{}",
    "[]",
    '""',
    '"relu\\r\\n"',
    "1979-05-27T07:32:00Z",
]
HOSTILE_LINES = [
    "[kernel._torch_binding]",
    "[kernel.all]",
    f"[kernel.{'k' * 200}]",
    '[kernel."a\\nb"]',
    "[[general]]",
    "[general.hub]",
    "general.name = 1",
    ".".join(["a"] * 40) + " = 1",
    "x = " + "[" * 1000,
    '"\\u0007" = 1',
    '[kernel.x]\nbackend = "cuda"\nsrc = []\ndepends = []',
    "[torch-noarch]",
    "[tvm-ffi]",
    "key = = 1",
    "[",
    '"""',
]
JUNK = [
    "\x00",
    "\x1b",
    "\x7f",
    "\u202e",
    "\ufeff",
    "]",
    "[",
    "{",
    "}",
    '"',
    "'",
    "=",
    "#",
    "\\",
    "\n",
    ".",
    ",",
]


Mutation = Callable[[random.Random, bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def delete_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = rng.randrange(len(lines))
    lines.insert(index, lines[index])
    return b"\n".join(lines)


def swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return b"\n".join(lines)


def insert_junk(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + "".join(rng.choice(JUNK) for _ in range(rng.randint(1, 4))).encode() + data[at:]


def invalid_utf8(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return (
        data[:at]
        + rng.choice([b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        + data[at:]
    )


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def _assignment(rng: random.Random, lines: list[bytes]) -> int | None:
    """The index of a random ``key = value`` line, or ``None`` when there is none."""
    candidates = [i for i, line in enumerate(lines) if b"=" in line and not line.lstrip().startswith(b"#")]
    return rng.choice(candidates) if candidates else None


def replace_value(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = _assignment(rng, lines)
    if index is None:
        return insert_line(rng, data)
    key = lines[index].split(b"=", 1)[0]
    lines[index] = key + b"= " + rng.choice(HOSTILE_VALUES).encode()
    return b"\n".join(lines)


def rename_key(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    index = _assignment(rng, lines)
    if index is None:
        return insert_junk(rng, data)
    key, value = lines[index].split(b"=", 1)
    chars = bytearray(key.strip() or b"k")
    chars[rng.randrange(len(chars))] = rng.choice(b"abcxyz_-.\"' ")
    lines[index] = bytes(chars) + b" =" + value
    return b"\n".join(lines)


def insert_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(HOSTILE_LINES).encode())
    return b"\n".join(lines)


MUTATIONS: list[Mutation] = [
    delete_line,
    duplicate_line,
    swap_lines,
    insert_junk,
    invalid_utf8,
    truncate,
    replace_value,
    replace_value,
    rename_key,
    insert_line,
    insert_line,
]


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, list[str]]:
    applied = []
    for _ in range(rng.randint(1, 3)):
        mutation = rng.choice(MUTATIONS)
        data = mutation(rng, data) or b"\n"
        applied.append(mutation.__name__)
    return data, applied


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def run(argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return Outcome(code, out.getvalue(), err.getvalue())


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, bytes]]:
    """A copy of every seed project, and the bytes of its build.toml; the tests' working directory."""
    monkeypatch.chdir(tmp_path)
    copies = []
    for index, seed in enumerate(SEEDS):
        target = tmp_path / f"p{index}-{seed.name}"
        shutil.copytree(
            seed, target, ignore=shutil.ignore_patterns("build", "__pycache__", "expected-v5.toml")
        )
        copies.append((target, (seed / "build.toml").read_bytes()))
    return copies


@pytest.mark.slow
def test_mutated_build_toml_files_are_rejected_cleanly(projects: list[tuple[Path, bytes]]) -> None:
    first = os.environ.get("FUZZ_SEED")
    seeds = ([int(first)] if first else []) + list(range(CASES))
    rejected = 0
    for seed in seeds:
        rng = random.Random(seed)
        project, original = projects[rng.randrange(len(projects))]
        data, applied = mutate(rng, original)
        build_toml = project / "build.toml"
        build_toml.write_bytes(data)
        config_load._warned_legacy.clear()
        where = f"FUZZ_SEED={seed} ({project.name}, {', '.join(applied)})"

        check = run(["check-config", str(project)])
        assert check.code in (0, 2), f"{where}: check-config exited {check.code}\n{check.err}"
        if check.code == 0:
            continue  # still valid: building it would compile
        rejected += 1
        assert f"{build_toml}" in check.err, f"{where}: no message naming build.toml\n{check.err}"
        for argv in (["build", str(project)], ["update-build", str(project), "--license", "MIT"]):
            config_load._warned_legacy.clear()  # each command is its own process: the legacy warning again
            outcome = run(argv)
            assert (outcome.code, outcome.err) == (2, check.err), f"{where}: {argv[0]} differs\n{outcome.err}"
            assert "Traceback" not in outcome.out + outcome.err
            assert build_toml.read_bytes() == data, f"{where}: {argv[0]} changed a file it rejected"
    assert rejected >= MIN_REJECTED, f"only {rejected} of {len(seeds)} mutants were rejected"
