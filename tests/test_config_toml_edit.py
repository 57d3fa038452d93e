"""update-build writes the same bytes under the oldest and the newest tomlkit release its dependency range allows.

tomlkit only has private calls for placing a key at a position, and their helpers have changed between releases
(0.15 dropped ``Container._insert_after``, which changed where ``version`` and ``edition`` landed). So the golden
files are rewritten by a child interpreter that sees a given tomlkit release first on its path, the oldest the
range allows and the newest on the index, each installed once into the tests' cache (``--target``: a pure-Python
wheel, no environment).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from pip_targets import install_target

from kernel_builder.config.toml_edit import insert_after, insert_at, key_index, replace_key

FORMS = Path(__file__).parent / "fixtures" / "forms"
LEGACY = ["v1", "v2", "v3", "v4"]


def _tomlkit_range() -> Requirement:
    for line in requires("kernel-builder") or []:
        requirement = Requirement(line)
        if requirement.name == "tomlkit" and requirement.marker is None:
            return requirement
    raise AssertionError("kernel-builder does not depend on tomlkit")


def _oldest_allowed() -> str:
    """The lowest version the range's ``>=`` names (``>=0.13`` → ``0.13.0``)."""
    floors = [s.version for s in _tomlkit_range().specifier if s.operator == ">="]
    assert len(floors) == 1, f"the tomlkit range has no single lower bound: {_tomlkit_range()}"
    parts = floors[0].split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def _tomlkit_at(release: str | None, cache: Path) -> Path:
    """A directory holding tomlkit ``release``, installed once; the newest the range allows when None,
    installed again each run (a newer release may have come out)."""
    spec = f"tomlkit=={release}" if release else str(_tomlkit_range())
    target = cache / ("tomlkit-" + (release or "newest"))
    return install_target(spec, target, marker="tomlkit/__init__.py", fresh=release is None)


@pytest.fixture(scope="module")
def tomlkit_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE")
    return Path(kept) / "tomlkit-releases" if kept else tmp_path_factory.mktemp("tomlkit-releases")


def _update_under(tomlkit_dir: Path, kernel: Path) -> tuple[str, str]:
    """Run update-build on ``kernel`` in a child that imports tomlkit from ``tomlkit_dir``; its version and the
    rewritten file."""
    code = (
        "import sys, tomlkit; from kernel_builder.cli import main; "
        f"code = main(['update-build', {str(kernel)!r}, '--license', 'Apache-2.0']); "
        "print(tomlkit.__version__); sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tomlkit_dir), str(Path(__file__).parents[1])])}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1], (kernel / "build.toml").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("release", ["oldest", "newest"])
def test_update_build_output_is_the_same_at_both_ends_of_the_range(
    tmp_path: Path, tomlkit_cache: Path, release: str
) -> None:
    wanted = _oldest_allowed() if release == "oldest" else None
    directory = _tomlkit_at(wanted, tomlkit_cache)
    for form in LEGACY:
        kernel = tmp_path / form
        shutil.copytree(FORMS / form, kernel)
        (kernel / "expected-v5.toml").unlink()
        version, rewritten = _update_under(directory, kernel)
        if wanted:
            assert version == wanted
        assert _tomlkit_range().specifier.contains(version)
        assert rewritten == (FORMS / form / "expected-v5.toml").read_text(), (form, version)


def test_insert_after_places_the_key_on_the_next_line() -> None:
    import tomlkit

    doc = tomlkit.parse('[general]\nname = "x"  # the name\n# a comment\nbackends = ["cpu"]\n')
    general = doc["general"].value
    insert_after(general, "name", "version", 1)
    insert_after(general, "backends", "license", "MIT")  # the last key: appended
    assert tomlkit.dumps(doc) == (
        '[general]\nname = "x"  # the name\nversion = 1\n# a comment\nbackends = ["cpu"]\nlicense = "MIT"\n'
    )
    with pytest.raises(KeyError):
        insert_after(general, "missing", "edition", 5)


def test_insert_at_and_replace_key_keep_the_neighbours() -> None:
    import tomlkit

    doc = tomlkit.parse('[torch]\nsrc = []\n\n[kernel.a]\nbackend = "cuda"\n')
    insert_at(doc["kernel"]["a"].value, 0, "depends", ["torch"])
    replace_key(doc, "torch", "torch-noarch", doc["torch"])
    doc["torch-noarch"].display_name = None
    doc["torch-noarch"].name = "torch-noarch"
    text = tomlkit.dumps(doc)
    assert text.index("[torch-noarch]") < text.index("[kernel.a]")
    assert 'depends = ["torch"]\nbackend = "cuda"' in text
    assert key_index(doc, "torch") == -1 and key_index(doc, "torch-noarch") == 0
