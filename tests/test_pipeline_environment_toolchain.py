"""Finding the tools as typed values, and the nvcc / Torch CUDA check (docs/layout.md).

The "compilers" here are shell scripts that answer the few questions the tool asks (``--version``,
``-dryrun``); nothing is compiled.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment import toolchain
from kernel_builder.pipeline.environment.toolchain import CudaToolkit, Tool, check_cuda_match, cuda_toolkit

CACHED = (
    toolchain.cuda_toolkit,
    toolchain.host_compiler,
    toolchain._accepts,
    toolchain.cmake,
    toolchain.ninja,
)


@pytest.fixture(autouse=True)
def _fresh_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The tool lookups are cached per process; each test starts without CUDA_HOME and with an empty PATH."""
    for cached in CACHED:
        cached.cache_clear()
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for var in ("CUDA_HOME", "CUDA_PATH", "CXX"):
        monkeypatch.delenv(var, raising=False)
    yield
    for cached in CACHED:
        cached.cache_clear()


def script(path: Path, body: str, *, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_nvcc(cuda_root: Path, release: str, *, here: Path | None = None, dryrun: bool = True) -> Path:
    """``<cuda_root>/bin/nvcc`` reporting ``release``; its dry run names ``here`` (default: its own dir)."""
    bin_dir = cuda_root / "bin"
    dry = f"  -dryrun) echo '#$ _HERE_={here or bin_dir}' >&2 ;;\n" if dryrun else ""
    return script(
        bin_dir / "nvcc",
        'case "$1" in\n'
        "  --version) printf 'nvcc: NVIDIA (R) Cuda compiler driver\\n"
        f"Cuda compilation tools, release {release}, V{release}.41\\nBuild cuda_{release}.r{release}/compiler.0\\n' ;;\n"
        f"{dry}"
        "esac\n",
    )


def test_nvcc_from_cuda_home_reporting_12_8_against_torch_cu130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cuda_home = tmp_path / "cuda-12.8"
    nvcc = fake_nvcc(cuda_home, "12.8")
    fake_nvcc(tmp_path / "cuda-13.0", "13.0")
    monkeypatch.setenv("CUDA_HOME", str(cuda_home))
    monkeypatch.setenv("PATH", str(tmp_path / "cuda-13.0" / "bin"))  # CUDA_HOME comes first
    toolkit = cuda_toolkit()
    assert toolkit == CudaToolkit(
        nvcc.resolve(), (12, 8), cuda_home.resolve(), "Build cuda_12.8.r12.8/compiler.0"
    )
    assert toolkit.include == cuda_home.resolve() / "include"
    with pytest.raises(BuildError) as info:
        check_cuda_match(toolkit, "13.0")
    assert str(info.value) == (
        f"nvcc {nvcc.resolve()} is CUDA 12.8, but torch was built with CUDA 13.0: install CUDA 13.0 and set "
        "CUDA_HOME to it, or use a torch built for CUDA 12.8"
    )
    assert info.value.exit_code == 1


@pytest.mark.parametrize("torch_cuda", ["12.8", "12.8.1"])
def test_matching_versions_pass(tmp_path: Path, torch_cuda: str) -> None:
    toolkit = CudaToolkit(tmp_path / "nvcc", (12, 8), tmp_path, "")
    check_cuda_match(toolkit, torch_cuda)


@pytest.mark.parametrize("torch_cuda", ["12.6", "13.0", "12", None, "unknown"])
def test_mismatching_versions_fail(tmp_path: Path, torch_cuda: str | None) -> None:
    toolkit = CudaToolkit(tmp_path / "nvcc", (12, 8), tmp_path, "")
    with pytest.raises(BuildError, match=f"torch was built with CUDA {torch_cuda}:"):
        check_cuda_match(toolkit, torch_cuda)


def test_nvcc_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc = fake_nvcc(tmp_path / "cuda", "13.0")
    monkeypatch.setenv("PATH", str(nvcc.parent))
    toolkit = cuda_toolkit()
    assert (toolkit.nvcc, toolkit.version, toolkit.root) == (
        nvcc.resolve(),
        (13, 0),
        (tmp_path / "cuda").resolve(),
    )


def test_nvcc_from_cuda_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvcc(tmp_path / "cuda", "12.6")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "cuda"))
    assert cuda_toolkit().version == (12, 6)


def test_wrapper_script_resolves_to_the_real_nvcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrapper (as conda and ccache install) is followed through nvcc's dry run, which names its own dir."""
    real = fake_nvcc(tmp_path / "real-cuda", "13.0")
    script(tmp_path / "wrapper" / "bin" / "nvcc", f'exec "{real}" "$@"\n')
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "wrapper"))
    toolkit = cuda_toolkit()
    assert toolkit.nvcc == real.resolve()
    assert toolkit.root == (tmp_path / "real-cuda").resolve()


def test_symlinked_nvcc_without_dry_run_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fake_nvcc(tmp_path / "real-cuda", "13.0", dryrun=False)
    (tmp_path / "link" / "bin").mkdir(parents=True)
    (tmp_path / "link" / "bin" / "nvcc").symlink_to(real)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "link"))
    toolkit = cuda_toolkit()
    assert toolkit.nvcc == real.resolve()
    assert toolkit.root == (tmp_path / "real-cuda").resolve()


def test_unusable_candidates_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_executable = tmp_path / "broken" / "bin" / "nvcc"
    script(not_executable, "echo 'release 11.8'\n", executable=False)
    script(tmp_path / "silent" / "bin" / "nvcc", "exit 0\n")
    nvcc = fake_nvcc(tmp_path / "cuda", "13.0")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "broken"))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "silent"))
    monkeypatch.setenv("PATH", str(nvcc.parent))
    assert cuda_toolkit().version == (13, 0)


def test_no_nvcc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", tmp_path / "no-system-cuda")
    with pytest.raises(BuildError) as info:
        cuda_toolkit()
    assert str(info.value) == (
        f"no CUDA compiler: nvcc not found in CUDA_HOME, PATH or {tmp_path / 'no-system-cuda'} (set CUDA_HOME)"
    )


@pytest.mark.parametrize("layout", ["nvidia/cu13", "nvidia/cuda_nvcc"])
def test_nvcc_from_nvidias_pypi_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    purelib = tmp_path / "site-packages"
    nvcc = fake_nvcc(purelib / layout, "13.0")
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", tmp_path / "no-system-cuda")
    toolkit = cuda_toolkit(purelib)
    assert (toolkit.nvcc, toolkit.root) == (nvcc.resolve(), (purelib / layout).resolve())
    # CUDA_HOME and PATH come first.
    monkeypatch.setenv("PATH", str(fake_nvcc(tmp_path / "path-cuda", "12.8").parent))
    cuda_toolkit.cache_clear()
    assert cuda_toolkit(purelib).version == (12, 8)


def test_no_nvcc_in_the_build_environment_either(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", tmp_path / "no-system-cuda")
    with pytest.raises(BuildError) as info:
        cuda_toolkit(tmp_path / "site-packages")
    assert str(info.value) == (
        "no CUDA compiler: nvcc not found in CUDA_HOME, PATH, NVIDIA's PyPI packages or "
        f"{tmp_path / 'no-system-cuda'} (set CUDA_HOME)"
    )


def test_toolkit_is_found_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvcc(tmp_path / "a", "12.8")
    fake_nvcc(tmp_path / "b", "13.0")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "a"))
    first = cuda_toolkit()
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "b"))
    assert cuda_toolkit() is first
    cuda_toolkit.cache_clear()
    assert cuda_toolkit().version == (13, 0)


# --- host compiler ----------------------------------------------------------------------------------------


def fake_cxx(path: Path, *, rejects: str = "") -> Path:
    """A "compiler" that prints a version and fails for ``rejects`` (as clang does for ``-fno-gnu-unique``)."""
    return script(
        path,
        'if [ "$1" = --version ]; then echo "g++ (Fake) 12.2.0"; echo "Copyright"; exit 0; fi\n'
        f'if [ -n "{rejects}" ] && [ "$1" = "{rejects}" ]; then exit 1; fi\n'
        "exit 0\n",
    )


def test_host_compiler_from_cxx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cxx = fake_cxx(tmp_path / "bin" / "my-g++")
    monkeypatch.setenv("CXX", str(cxx))
    assert toolchain.host_compiler() == Tool(cxx, "g++ (Fake) 12.2.0")


def test_host_compiler_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cxx = fake_cxx(tmp_path / "bin" / "g++")
    monkeypatch.setenv("PATH", str(cxx.parent))
    assert toolchain.host_compiler().path == cxx


def test_missing_host_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(BuildError) as info:
        toolchain.host_compiler()
    assert str(info.value) == "no C++ compiler: `no-such-compiler` not found (set CXX or install g++)"


def test_compiler_accepts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", str(fake_cxx(tmp_path / "clang++", rejects="-fno-gnu-unique")))
    assert not toolchain.compiler_accepts("-fno-gnu-unique")
    assert toolchain.compiler_accepts("-O2")


def test_default_cuda_home_is_the_last_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvcc(tmp_path / "system-cuda", "12.9")
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOME", tmp_path / "system-cuda")
    assert cuda_toolkit().version == (12, 9)
    cuda_toolkit.cache_clear()
    monkeypatch.setenv("PATH", str(fake_nvcc(tmp_path / "path-cuda", "13.0").parent))
    assert cuda_toolkit().version == (13, 0)


def test_fingerprint(tmp_path: Path) -> None:
    a = Tool(tmp_path / "cmake", "3.31.0")
    b = CudaToolkit(tmp_path / "nvcc", (13, 0), tmp_path, "Build cuda_13.0")
    assert toolchain.fingerprint(a, b) == toolchain.fingerprint(a, b)
    assert toolchain.fingerprint(a, b) != toolchain.fingerprint(Tool(a.path, "3.31.1"), b)
    assert toolchain.fingerprint(a, b) != toolchain.fingerprint(
        a, CudaToolkit(b.nvcc, (13, 0), tmp_path, "other")
    )


# --- CMake and Ninja -------------------------------------------------------------------------------------------


def test_cmake_and_ninja_come_from_their_pypi_packages() -> None:
    import ninja as ninja_pkg

    import cmake as cmake_pkg

    assert toolchain.cmake().path == Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake"
    assert toolchain.ninja().path == Path(ninja_pkg.BIN_DIR) / "ninja"


def test_cmake_is_found_without_importing_its_package() -> None:
    """The ``cmake`` package's ``__init__`` lists every file of its distribution: a third of a second of every
    no-op rebuild on a slow file system."""
    code = "import sys; from kernel_builder.pipeline.environment import toolchain; print(toolchain.cmake().path); print('cmake' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    import cmake as cmake_pkg

    assert out == [str(Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake"), "False"]


def test_ninja_is_found_without_importing_its_package_once_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``ninja`` package finds its binary through ``sysconfig`` at import; its answer is kept per environment
    (``env_facts``), so the next process (a no-op rebuild) imports neither, and gets the same tool."""
    import ninja as ninja_pkg

    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    code = (
        "import sys; from kernel_builder.pipeline.environment import toolchain; tool = toolchain.ninja(); "
        "print(tool.path, tool.version, 'ninja' in sys.modules, 'sysconfig' in sys.modules)"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    expected = [str(Path(ninja_pkg.BIN_DIR) / "ninja"), ninja_pkg.__version__]
    assert runs[0] == [*expected, "True", "True"]  # asked: the package imported
    assert runs[1] == [*expected, "False", "False"]  # remembered


@pytest.fixture
def no_pypi_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a Nix build, where nixpkgs' cmake and ninja are on PATH and their PyPI packages are absent."""
    monkeypatch.setitem(sys.modules, "cmake", None)  # `import cmake` raises ImportError
    monkeypatch.setitem(sys.modules, "ninja", None)


def test_without_the_packages_cmake_and_ninja_come_from_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pypi_tools: None
) -> None:
    tools = tmp_path / "bin"
    cmake = script(
        tools / "cmake", "echo 'cmake version 3.31.7'; echo; echo 'CMake suite maintained by Kitware'\n"
    )
    ninja = script(tools / "ninja", "echo '1.12.1'\n")
    monkeypatch.setenv("PATH", str(tools))
    assert toolchain.cmake() == Tool(cmake, "3.31.7")
    assert toolchain.ninja() == Tool(ninja, "1.12.1")


def test_an_old_cmake_on_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pypi_tools: None
) -> None:
    script(tmp_path / "bin" / "cmake", "echo 'cmake version 3.22.1'\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(
        BuildError, match=r"cmake .*bin/cmake is 3\.22\.1; kernel-builder needs 3\.26 or newer"
    ):
        toolchain.cmake()


def test_no_cmake_at_all(no_pypi_tools: None) -> None:
    with pytest.raises(BuildError) as caught:
        toolchain.cmake()
    assert str(caught.value) == (
        "no CMake: install the `cmake` Python package (a dependency of kernel-builder) or put cmake 3.26 or newer "
        "on PATH"
    )
