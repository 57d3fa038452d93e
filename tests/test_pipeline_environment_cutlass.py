"""CUTLASS headers for kernel sections (docs/layout.md; without compiling).

A checkout is a directory tree with ``include/cutlass/cutlass.h`` and ``version.h``. The PyPI pins are fetched with
the real ``pip download``, offline: from a directory of wheels built here with the layout of NVIDIA's
``nvidia-cutlass`` wheels (``PIP_FIND_LINKS``, ``PIP_NO_INDEX``); the user cache is a temporary directory.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from stage_fixtures import fake_interpreter, write_files

from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import CUTLASS_PINS
from kernel_builder.pipeline.environment.cutlass import cached_headers, checkout_version, cutlass_includes


def version_h(version: str) -> str:
    major, minor, patch = version.split(".")
    return (
        "#pragma once\n"
        f"#define CUTLASS_MAJOR {major}\n#define CUTLASS_MINOR {minor}\n#define CUTLASS_PATCH {patch}\n"
        "#define CUTLASS_BUILD 0\n"
    )


def checkout(root: Path, version: str | None = "3.6.0", *, tools: bool = True) -> Path:
    files: dict[str, str | bytes] = {"include/cutlass/cutlass.h": "#pragma once\n"}
    if version is not None:
        files["include/cutlass/version.h"] = version_h(version)
    if tools:
        files["tools/util/include/cutlass/util/device_memory.h"] = "#pragma once\n"
    return write_files(root, files)


class Log(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


def isolate_cutlass_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No CUTLASS_SRC_DIR or KERNEL_BUILDER_CUTLASS* from the caller's environment; an empty user cache."""
    monkeypatch.delenv("CUTLASS_SRC_DIR", raising=False)
    for name in list(os.environ):
        if name.startswith("KERNEL_BUILDER_CUTLASS"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "user-cache"))


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_cutlass_settings(monkeypatch, tmp_path)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"unexpected process: {args}")

    monkeypatch.setattr("kernel_builder.pipeline.environment.cutlass.processes.run", refuse)


def cutlass_wheel(
    directory: Path,
    version: str,
    *,
    headers_version: str | None = None,
    project: str = "nvidia-cutlass",
    wheel_version: str | None = None,
    source: str = "cutlass_library/source",
) -> Path:
    """A wheel laid out as NVIDIA's ``nvidia-cutlass`` (version ``X.Y.Z.0``), headers under cutlass_library/source/
    (or as ``project`` ``wheel_version`` with the headers under ``source``)."""
    wheel_version = wheel_version or f"{version}.0"
    dist = f"{project.replace('-', '_')}-{wheel_version}"
    files = {
        f"{source.split('/')[0]}/__init__.py": b"",
        f"{source}/include/cutlass/cutlass.h": b"#pragma once\n",
        f"{source}/include/cutlass/version.h": version_h(headers_version or version).encode(),
        f"{source}/tools/util/include/cutlass/util/device_memory.h": b"#pragma once\n",
        f"{source}/python/not_a_header.py": b"",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {wheel_version}\n".encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


@pytest.fixture
def offline_pip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pip sees only a local directory of wheels; returns that directory."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return wheels


def interpreter_with_pip(tmp_path: Path):  # type: ignore[no-untyped-def]
    return fake_interpreter(purelib=tmp_path / "site-packages", python=Path(sys.executable))


def test_checkout_gives_its_include_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None
) -> None:
    root = checkout(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_3_6", fake_interpreter(), log) == [
        root / "include",
        root / "tools" / "util" / "include",
    ]
    assert log == []


def test_mismatched_checkout_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    root = checkout(tmp_path / "cutlass", "3.6.0")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_3_8", fake_interpreter(), log) == [
        root / "include",
        root / "tools" / "util" / "include",
    ]
    assert log == ["warning: CUTLASS_SRC_DIR holds CUTLASS 3.6.0, but cutlass_3_8 pins 3.8.0"]


def test_checkout_of_unknown_version_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = checkout(tmp_path / "cutlass", None, tools=False)
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_4_0", fake_interpreter(), log) == [root / "include"]
    assert log == ["warning: CUTLASS_SRC_DIR holds CUTLASS of unknown version, but cutlass_4_0 pins 4.0.0"]


def test_relative_checkout_gives_absolute_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The include dirs are used from the generated project, far from the working directory."""
    checkout(tmp_path / "deps" / "cutlass", "4.0.0")
    monkeypatch.chdir(tmp_path / "deps")
    monkeypatch.setenv("CUTLASS_SRC_DIR", "cutlass")
    includes = cutlass_includes("cutlass_4_0", fake_interpreter(), Log())
    assert includes == [tmp_path / "deps/cutlass/include", tmp_path / "deps/cutlass/tools/util/include"]
    assert all(p.is_absolute() for p in includes)


def test_not_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(tmp_path))
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_6", fake_interpreter(), Log())
    assert (
        str(info.value)
        == f"CUTLASS_SRC_DIR={tmp_path} is not a CUTLASS checkout (no include/cutlass/cutlass.h)"
    )


@pytest.mark.parametrize("pin", [p.value for p in CUTLASS_PINS.values() if p.wheel is None])
def test_offline_pin_without_a_wheel_names_the_checkout_to_make(pin: str, no_pip: None) -> None:
    version = CUTLASS_PINS[pin].version
    with pytest.raises(BuildError) as info:
        cutlass_includes(pin, fake_interpreter(), Log(), offline=True)
    assert str(info.value) == (
        f"{pin} needs CUTLASS {version}, and --offline forbids fetching it: set KERNEL_BUILDER_{pin.upper()}_DIR (or "
        f"CUTLASS_SRC_DIR) to a checkout of CUTLASS {version} (git clone --depth 1 --branch v{version} "
        "https://github.com/NVIDIA/cutlass)"
    )
    assert info.value.exit_code == 1


def test_per_pin_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    """KERNEL_BUILDER_CUTLASS_<X>_<Y>_DIR serves its pin only; CUTLASS_SRC_DIR, when set, wins for every pin."""
    root = checkout(tmp_path / "cutlass-3.9.2", "3.9.2")
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_3_9_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_3_9", fake_interpreter(), log, offline=True) == [
        root / "include",
        root / "tools" / "util" / "include",
    ]
    assert log == []
    with pytest.raises(BuildError, match="^cutlass_4_0 needs CUTLASS 4.0.0, and --offline forbids"):
        cutlass_includes("cutlass_4_0", fake_interpreter(), log, offline=True)
    other = checkout(tmp_path / "other", "4.0.0")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(other))
    assert cutlass_includes("cutlass_3_9", fake_interpreter(), log, offline=True)[0] == other / "include"
    assert log == ["warning: CUTLASS_SRC_DIR holds CUTLASS 4.0.0, but cutlass_3_9 pins 3.9.2"]
    monkeypatch.delenv("CUTLASS_SRC_DIR")
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_3_9_DIR", str(tmp_path / "nothing"))
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), log)
    assert str(info.value) == (
        f"KERNEL_BUILDER_CUTLASS_3_9_DIR={tmp_path / 'nothing'} is not a CUTLASS checkout (no include/cutlass/cutlass.h)"
    )


def test_pins_on_pypi() -> None:
    """The releases PyPI has as nvidia-cutlass (`pip index versions nvidia-cutlass`: 3.3.0 to 3.8.0 and 4.2.0)."""
    on_pypi = {"3.3.0", "3.4.0", "3.4.1", "3.5.0", "3.5.1", "3.6.0", "3.7.0", "3.8.0", "4.2.0"}
    assert {p.value for p in CUTLASS_PINS.values() if p.pypi} == {"cutlass_3_5", "cutlass_3_6", "cutlass_3_8"}
    assert all(p.pypi == (p.version in on_pypi) for p in CUTLASS_PINS.values())


def test_pypi_headers_already_installed(tmp_path: Path, no_pip: None) -> None:
    source = checkout(tmp_path / "site-packages" / "cutlass_library" / "source", "3.6.0")
    log = Log()
    includes = cutlass_includes("cutlass_3_6", fake_interpreter(purelib=tmp_path / "site-packages"), log)
    assert includes == [source / "include", source / "tools" / "util" / "include"]
    assert log == []


@pytest.mark.parametrize("pin", [p.value for p in CUTLASS_PINS.values() if p.pypi])
def test_pypi_pin_is_fetched_once_then_works_offline(
    tmp_path: Path, offline_pip: Path, monkeypatch: pytest.MonkeyPatch, pin: str
) -> None:
    version = CUTLASS_PINS[pin].version
    checkout(tmp_path / "site-packages" / "cutlass_library" / "source", "3.4.1")  # another release installed
    cutlass_wheel(offline_pip, version)
    cutlass_wheel(offline_pip / "other", "3.7.0")
    log = Log()
    includes = cutlass_includes(pin, interpreter_with_pip(tmp_path), log)
    cache = cached_headers(version)
    assert cache == tmp_path / "user-cache" / "cutlass" / version
    assert includes == [cache / "include", cache / "tools" / "util" / "include"]
    assert checkout_version(cache) == version
    assert sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()) == [
        "include/cutlass/cutlass.h", "include/cutlass/version.h", "tools/util/include/cutlass/util/device_memory.h",
    ]  # fmt: skip
    assert log == [f"fetching nvidia-cutlass=={version} for {pin} (its headers are kept in {cache})"]
    assert list(cache.parent.iterdir()) == [cache]  # no staging directory left
    # From now on no pip at all: neither the wheel nor the index is needed.
    (offline_pip / f"nvidia_cutlass-{version}.0-py3-none-any.whl").unlink()

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"unexpected process: {args}")

    monkeypatch.setattr("kernel_builder.pipeline.environment.cutlass.processes.run", refuse)
    second = Log()
    assert cutlass_includes(pin, interpreter_with_pip(tmp_path / "another-env"), second) == includes
    assert second == []


def test_failed_fetch_names_pip_setup_and_checkout(tmp_path: Path, offline_pip: Path) -> None:
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_8", interpreter_with_pip(tmp_path), Log())
    message = str(info.value)
    assert message.startswith("cutlass_3_8: could not fetch nvidia-cutlass==3.8.0 (")
    assert "No matching distribution found for nvidia-cutlass==3.8.0" in message
    assert message.endswith(
        "); without network, point pip at a copy of the wheel (PIP_FIND_LINKS=<dir> PIP_NO_INDEX=1), set "
        "KERNEL_BUILDER_CUTLASS_MIRROR to a mirror of the release archives, or set KERNEL_BUILDER_CUTLASS_3_8_DIR "
        "(or CUTLASS_SRC_DIR) to a checkout of CUTLASS 3.8.0 (git clone --depth 1 --branch v3.8.0 "
        "https://github.com/NVIDIA/cutlass)"
    )
    assert not cached_headers("3.8.0").exists()


def test_offline_uses_the_cache_and_never_fetches(tmp_path: Path, offline_pip: Path, no_pip: None) -> None:
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_6", interpreter_with_pip(tmp_path), Log(), offline=True)
    assert str(info.value) == (
        "cutlass_3_6 needs CUTLASS 3.6.0, and --offline forbids fetching it: install nvidia-cutlass==3.6.0 in the "
        "build environment, or set KERNEL_BUILDER_CUTLASS_3_6_DIR (or CUTLASS_SRC_DIR) to a checkout of CUTLASS "
        "3.6.0 (git clone --depth 1 --branch v3.6.0 https://github.com/NVIDIA/cutlass)"
    )
    cache = checkout(cached_headers("3.6.0"), "3.6.0")
    assert cutlass_includes("cutlass_3_6", interpreter_with_pip(tmp_path), Log(), offline=True) == [
        cache / "include",
        cache / "tools" / "util" / "include",
    ]


def test_wheel_with_other_headers_is_refused(tmp_path: Path, offline_pip: Path) -> None:
    cutlass_wheel(offline_pip, "3.6.0", headers_version="3.5.1")
    with pytest.raises(
        BuildError, match=r"nvidia_cutlass-3.6.0.0-py3-none-any.whl holds CUTLASS 3.5.1, not 3.6.0"
    ):
        cutlass_includes("cutlass_3_6", interpreter_with_pip(tmp_path), Log())
    assert not cached_headers("3.6.0").exists()
    assert list(cached_headers("3.6.0").parent.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (version_h("3.9.2"), "3.9.2"),
        ("#define CUTLASS_MAJOR 4\n#define   CUTLASS_MINOR   5\n", "4.5.0"),
        ("#define CUTLASS_MAJOR 4\n", None),
        ("", None),
    ],
)
def test_checkout_version(tmp_path: Path, text: str, version: str | None) -> None:
    write_files(tmp_path, {"include/cutlass/version.h": text})
    assert checkout_version(tmp_path) == version
    assert checkout_version(tmp_path / "missing") is None


def test_a_variant_gets_the_headers_of_the_pins_its_kernels_depend_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None
) -> None:
    """``dependency_includes``: one lookup per CUTLASS pin of the planned variant; other dependencies add none."""
    from stage_fixtures import CU130_213, load

    from kernel_builder.pipeline.environment.cutlass import dependency_includes
    from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build

    general = (
        '[general]\nname = "deps"\nversion = 1\nedition = 5\nlicense = "Apache-2.0"\nbackends = ["cuda"]\n'
    )
    kernels = "".join(
        f'\n[kernel.{name}]\nbackend = "cuda"\ndepends = {depends}\nsrc = ["{name}/k.cu"]\n'
        for name, depends in (("a", '["torch", "cutlass_3_6"]'), ("b", '["torch"]'))
    )
    root = write_files(
        tmp_path / "deps",
        {"build.toml": general + "\n[torch]\n" + kernels, "torch-ext/deps/__init__.py": "",
         "a/k.cu": "// a\n", "b/k.cu": "// b\n"},
    )  # fmt: skip

    def depends(variant: VariantPlan) -> list[str]:
        return [d for c in variant.components for d in c.depends]

    (variant,) = [v for v in plan_build(load(root), CU130_213, "0123456789").variants if v.aot]
    cutlass = checkout(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(cutlass))
    log = Log()
    includes = dependency_includes(depends(variant), CU130_213, log, offline=True)
    assert includes == (cutlass / "include", cutlass / "tools/util/include")
    assert log == []
    toml = root / "build.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(', "cutlass_3_6"', ""), encoding="utf-8")
    (variant,) = [v for v in plan_build(load(root), CU130_213, "0123456789").variants if v.aot]
    assert dependency_includes(depends(variant), CU130_213, log, offline=True) == ()


def test_a_wheel_pinned_by_sha256(tmp_path: Path, offline_pip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cutlass_4_4 comes from flashinfer-python 0.6.7 (its vendored CUTLASS 4.4.2 headers), pinned by the wheel's
    SHA-256: another file of that name is refused; the pinned one fills the cache."""
    from dataclasses import replace

    wheel = cutlass_wheel(
        offline_pip,
        "4.4.2",
        project="flashinfer-python",
        wheel_version="0.6.7",
        source="flashinfer/data/cutlass",
    )
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_4_4", interpreter_with_pip(tmp_path), Log())
    pinned = CUTLASS_PINS["cutlass_4_4"].wheel
    assert pinned is not None
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert str(info.value) == (
        f"cutlass_4_4: flashinfer_python-0.6.7-py3-none-any.whl has SHA-256 {digest}, expected {pinned.sha256}: "
        "refusing it"
    )
    assert not cached_headers("4.4.2").parent.exists()
    ours = replace(CUTLASS_PINS["cutlass_4_4"], wheel=replace(pinned, sha256=digest))
    monkeypatch.setitem(CUTLASS_PINS, "cutlass_4_4", ours)
    log = Log()
    includes = cutlass_includes("cutlass_4_4", interpreter_with_pip(tmp_path), log)
    cache = cached_headers("4.4.2")
    assert includes == [cache / "include", cache / "tools" / "util" / "include"]
    assert checkout_version(cache) == "4.4.2"
    assert log == [f"fetching flashinfer-python==0.6.7 for cutlass_4_4 (its headers are kept in {cache})"]
