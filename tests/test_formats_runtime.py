"""Environment facts and the shared backend-detection function (docs/loading.md)."""

from __future__ import annotations

import ast
import builtins
import ctypes
import inspect
import subprocess
import sys
import sysconfig
import textwrap
import types
from types import SimpleNamespace
from typing import Any

import pytest
from fake_torch import install_fake_torch, make_fake_torch

from kernel_builder.formats import runtime
from kernel_builder.formats.runtime import Environment, detect_backend, detect_environment, normalize_cpu

# (description, fake torch, expected detection)
BACKEND_CASES: list[tuple[str, SimpleNamespace, tuple[str, tuple[int, int] | None]]] = [
    ("cpu-only", make_fake_torch(), ("cpu", None)),
    ("cuda 12.6", make_fake_torch(cuda="12.6"), ("cuda", (12, 6))),
    ("cuda 13.0", make_fake_torch(cuda="13.0"), ("cuda", (13, 0))),
    ("hip with build suffix", make_fake_torch(hip="7.1.25424-4179531dcd"), ("rocm", (7, 1))),
    ("hip major.minor only", make_fake_torch(hip="6.4"), ("rocm", (6, 4))),
    ("hip major.minor with suffix", make_fake_torch(hip="6.4-rc1"), ("rocm", (6, 4))),
    # torch.version.rocm first (Torch 2.10+): ROCm 10.0 ships HIP 7.15
    ("rocm before hip", make_fake_torch(hip="7.15.1-abc", rocm="10.0.0"), ("rocm", (10, 0))),
    ("rocm without hip is no rocm build", make_fake_torch(rocm="7.2.0"), ("cpu", None)),
    ("mps available", make_fake_torch(mps=True), ("metal", None)),
    ("xpu 20250300", make_fake_torch(xpu="20250300"), ("xpu", (2025, 3))),
    ("xpu 20260000", make_fake_torch(xpu="20260000"), ("xpu", (2026, 0))),
    # upstream reads the fifth and sixth characters as "<anything><minor digit>"
    ("xpu dotted", make_fake_torch(xpu="2025.3"), ("xpu", (2025, 3))),
    ("xpu too short", make_fake_torch(xpu="2025"), ("xpu", None)),
    ("xpu attribute missing", make_fake_torch(xpu_attribute=False), ("cpu", None)),
    ("npu privateuse1", make_fake_torch(privateuse1="npu"), ("cann", None)),
    ("tpu", make_fake_torch(tpu=True), ("tpu", None)),
    (
        "tpu backend module alone is no tpu",
        SimpleNamespace(backends=SimpleNamespace(tpu=SimpleNamespace())),
        ("cpu", None),
    ),
    (
        "a failing accelerator query",
        SimpleNamespace(accelerator=SimpleNamespace(current_accelerator=lambda: 1 / 0)),
        ("cpu", None),
    ),
    ("neuron", make_fake_torch(neuron=True), ("neuron", None)),
    ("unreadable cuda version", make_fake_torch(cuda="unknown"), ("cuda", None)),
    ("empty module", SimpleNamespace(), ("cpu", None)),
    # The order: tpu, neuron, cuda, rocm, metal, xpu, npu, cpu.
    ("tpu before neuron", make_fake_torch(tpu=True, neuron=True, cuda="12.6"), ("tpu", None)),
    ("neuron before cuda", make_fake_torch(neuron=True, cuda="12.6"), ("neuron", None)),
    ("cuda before rocm", make_fake_torch(cuda="12.6", hip="7.1.0"), ("cuda", (12, 6))),
    ("rocm before metal", make_fake_torch(hip="7.2.0", mps=True), ("rocm", (7, 2))),
    ("metal before xpu", make_fake_torch(mps=True, xpu="20250300"), ("metal", None)),
    ("xpu before npu", make_fake_torch(xpu="20250300", privateuse1="npu"), ("xpu", (2025, 3))),
]


@pytest.mark.parametrize(
    ("torch", "expected"), [c[1:] for c in BACKEND_CASES], ids=[c[0] for c in BACKEND_CASES]
)
def test_detect_backend(torch: SimpleNamespace, expected: tuple[str, tuple[int, int] | None]) -> None:
    assert detect_backend(torch) == expected


def _embedded_detect_backend() -> Any:
    """Compile detect_backend's source alone, with only builtins, as the generated ``_ops.py`` does."""
    namespace: dict[str, Any] = {"__builtins__": builtins}
    code = compile(textwrap.dedent(inspect.getsource(detect_backend)), "<_ops.py>", "exec")
    exec(code, namespace)  # noqa: S102 - running the copied source alone is the point
    return namespace["detect_backend"]


@pytest.mark.parametrize(
    ("torch", "expected"), [c[1:] for c in BACKEND_CASES], ids=[c[0] for c in BACKEND_CASES]
)
def test_embedded_copy_agrees(torch: SimpleNamespace, expected: tuple[str, tuple[int, int] | None]) -> None:
    assert _embedded_detect_backend()(torch) == expected


def test_detect_backend_source_is_self_contained_python39() -> None:
    source = textwrap.dedent(inspect.getsource(detect_backend))
    tree = ast.parse(source, feature_version=(3, 9))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    bound = {arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments) for arg in node.args}
    bound |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert sorted(loaded - bound - set(dir(builtins))) == []


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ("x86_64", "x86_64"),
        ("amd64", "x86_64"),
        ("AMD64", "x86_64"),
        ("aarch64", "aarch64"),
        ("arm64", "aarch64"),
        ("ARM64", "aarch64"),
    ],
)
def test_normalize_cpu(machine: str, expected: str) -> None:
    assert normalize_cpu(machine) == expected


def test_normalize_cpu_rejects_other_machines() -> None:
    with pytest.raises(ValueError) as error:
        normalize_cpu("i686")
    assert str(error.value) == "unsupported CPU 'i686': variants exist for x86_64 and aarch64 only"


def _current_python() -> tuple[int, int]:
    return sys.version_info.major, sys.version_info.minor


def test_detect_environment_linux_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch("2.14.1+cu130", cuda="13.0"), machine="x86_64")
    monkeypatch.setattr(sys, "abiflags", "")
    assert detect_environment() == Environment(
        cpu="x86_64",
        os="linux",
        torch_version=(2, 14),
        cxx11_abi=True,
        backend="cuda",
        backend_version=(13, 0),
        macos_version=None,
        free_threaded=False,
        python_version=_current_python(),
        tvm_ffi_version=None,
    )


def test_detect_environment_pre_cxx11_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch("2.5.1", cxx11_abi=False), machine="aarch64")
    env = detect_environment()
    assert (env.cpu, env.torch_version, env.cxx11_abi, env.backend) == ("aarch64", (2, 5), False, "cpu")


def test_detect_environment_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(
        monkeypatch,
        make_fake_torch("2.13.0", mps=True),
        machine="arm64",
        system="Darwin",
        mac_version="26.0.1",
    )
    env = detect_environment()
    assert (env.cpu, env.os, env.macos_version, env.cxx11_abi, env.backend, env.backend_version) == (
        "aarch64",
        "darwin",
        (26, 0),
        None,
        "metal",
        None,
    )


def test_detect_environment_windows_keeps_no_abi_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch("2.12.0", cuda="12.6"), machine="AMD64", system="Windows")
    env = detect_environment()
    assert (env.cpu, env.os, env.cxx11_abi, env.macos_version) == ("x86_64", "windows", None, None)


def test_detect_environment_unknown_machine_is_kept_lowercase(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch(), machine="PPC64LE")
    assert detect_environment().cpu == "ppc64le"


def test_detect_environment_free_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A free-threaded build: ``t`` in ``sys.abiflags`` (POSIX), else ``sysconfig``'s ``Py_GIL_DISABLED``."""
    install_fake_torch(monkeypatch, make_fake_torch())
    monkeypatch.setattr(sys, "abiflags", "t")
    assert detect_environment().free_threaded is True
    monkeypatch.setattr(sys, "abiflags", "d")
    assert detect_environment().free_threaded is False
    monkeypatch.delattr(sys, "abiflags")  # Windows
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: 1 if name == "Py_GIL_DISABLED" else None)
    assert detect_environment().free_threaded is True


def test_abiflags_and_sysconfig_agree_here() -> None:
    assert ("t" in sys.abiflags) == bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def test_detect_environment_tvm_ffi(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch())
    monkeypatch.setitem(sys.modules, "tvm_ffi", SimpleNamespace(__version__="0.1.3"))
    assert detect_environment().tvm_ffi_version == (0, 1)


def test_detect_environment_rocm_version_is_torch_version_rocm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch 2.10+ has ``torch.version.rocm``, which upstream reads before ``hip`` (ROCm 10.0 ships HIP 7.15)."""
    install_fake_torch(monkeypatch, make_fake_torch("2.13.0+rocm10.0", hip="7.15.2-x", rocm="10.0.1"))
    env = detect_environment()
    assert (env.backend, env.backend_version) == ("rocm", (10, 0))


def _torch_npu(monkeypatch: pytest.MonkeyPatch, get_cann_version: Any) -> None:
    collect_env = types.ModuleType("torch_npu.utils.collect_env")
    collect_env.get_cann_version = get_cann_version  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setitem(sys.modules, "torch_npu.utils", types.ModuleType("torch_npu.utils"))
    monkeypatch.setitem(sys.modules, "torch_npu.utils.collect_env", collect_env)


@pytest.mark.parametrize(
    ("reported", "expected"), [("8.2.RC1", (8, 2)), ("8.1.0", (8, 1)), ("unknown", None)]
)
def test_detect_environment_cann_version_from_torch_npu(
    monkeypatch: pytest.MonkeyPatch, reported: str, expected: tuple[int, int] | None
) -> None:
    """As upstream reads it: ``torch_npu``'s ``get_cann_version()``, its first and third characters."""
    install_fake_torch(monkeypatch, make_fake_torch(privateuse1="npu"))
    _torch_npu(monkeypatch, lambda: reported)
    env = detect_environment()
    assert (env.backend, env.backend_version) == ("cann", expected)


def test_detect_environment_cann_without_torch_npu_has_no_version(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch(privateuse1="npu"))
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    assert (detect_environment().backend, detect_environment().backend_version) == ("cann", None)


def test_detect_environment_mlx(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, make_fake_torch())
    monkeypatch.setitem(sys.modules, "mlx", None)
    assert detect_environment().mlx is False
    monkeypatch.setitem(sys.modules, "mlx", types.ModuleType("mlx"))
    assert detect_environment().mlx is True


def test_without_torch_mlx_on_metal_gives_metal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's order without Torch: the CUDA runtime, then MLX's Metal, then CPU."""
    install_fake_torch(monkeypatch, None)
    monkeypatch.setattr(runtime, "_cudart_version", lambda: None)
    core = types.ModuleType("mlx.core")
    core.metal = SimpleNamespace(is_available=lambda: True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlx", types.ModuleType("mlx"))
    monkeypatch.setitem(sys.modules, "mlx.core", core)
    assert detect_environment().backend == "metal"
    core.metal = SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    assert detect_environment().backend == "cpu"


def test_without_torch_and_cudart_backend_is_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, None)
    monkeypatch.setattr(runtime, "_cudart_version", lambda: None)
    env = detect_environment()
    assert (env.torch_version, env.cxx11_abi, env.backend, env.backend_version) == (None, None, "cpu", None)


def test_without_torch_cudart_gives_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_torch(monkeypatch, None)
    monkeypatch.setattr(runtime, "_cudart_version", lambda: (12, 8))
    env = detect_environment()
    assert (env.torch_version, env.backend, env.backend_version) == (None, "cuda", (12, 8))


class _FakeCudart:
    def __init__(self, version: int, status: int = 0) -> None:
        self.version = version
        self.status = status

    def cudaRuntimeGetVersion(self, pointer: Any) -> int:
        pointer._obj.value = self.version
        return self.status


def test_cudart_version_decodes_runtime_version(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []

    def fake_cdll(name: str) -> _FakeCudart:
        loaded.append(name)
        if name != "libcudart.so.12":
            raise OSError(f"{name}: cannot open shared object file")
        return _FakeCudart(12080)

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
    assert runtime._cudart_version() == (12, 8)
    assert loaded == ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]


def test_cudart_version_failure_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda name: _FakeCudart(0, status=35))
    assert runtime._cudart_version() is None


def test_no_torch_import_at_module_import() -> None:
    code = textwrap.dedent(
        """
        import sys

        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "tvm_ffi"):
                    raise AssertionError("imported " + name)
                return None

        sys.meta_path.insert(0, Refuse())
        import kernel_builder.formats.runtime
        import kernel_builder.formats.matrix
        import kernel_builder.formats.variants

        kernel_builder.formats.matrix.load_matrix()
        kernel_builder.formats.variants.parse_variant("torch212-cxx11-cu126-x86_64-linux")
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok\n", "")
