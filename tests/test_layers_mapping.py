"""Modes, devices and kernel mappings: what registering and looking up do (no kernels are loaded here)."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator

import pytest

from kernel_builder.layers import (
    CUDAProperties,
    Device,
    KernelizeFallback,
    LayerRepository,
    LocalLayerRepository,
    Mode,
    ROCMProperties,
    register_kernel_mapping,
    use_kernel_mapping,
)
from kernel_builder.layers import mapping as mapping_module
from kernel_builder.layers.mapping import MappingHit, MappingMiss, current_mapping, select_repository
from kernel_builder.layers.mode import MODE_FALLBACK_ORDER, check_kernelize_mode


@pytest.fixture(autouse=True)
def empty_global_mapping() -> Iterator[None]:
    mapping_module._global_mapping.clear()
    yield
    mapping_module._global_mapping.clear()


def repo(name: str) -> LocalLayerRepository:
    return LocalLayerRepository(f"/kernels/{name}", layer_name=name)


def lookup(layer: str, device: str, capability: int = 0) -> MappingHit | MappingMiss:
    return current_mapping().lookup(layer, device, lambda: capability)


def chosen(layer: str, device: str, mode: Mode, capability: int = 0) -> str | None:
    hit = lookup(layer, device, capability)
    if isinstance(hit, MappingMiss):
        return hit.kind
    selected = select_repository(hit.modes, mode)
    return None if selected is None else selected[1].layer_name  # type: ignore[attr-defined]


# --- modes --------------------------------------------------------------------------------------------------


def test_mode_combinations() -> None:
    assert Mode.INFERENCE | Mode.TORCH_COMPILE == Mode(Mode.INFERENCE.value | Mode.TORCH_COMPILE.value)
    with pytest.raises(ValueError, match="exclude each other"):
        Mode.INFERENCE | Mode.TRAINING
    with pytest.raises(ValueError, match="cannot be combined"):
        Mode.FALLBACK | Mode.TORCH_COMPILE
    assert check_kernelize_mode(Mode.TRAINING | Mode.TORCH_COMPILE) == Mode.TRAINING | Mode.TORCH_COMPILE
    for bad, message in [
        (Mode.FALLBACK, "for kernel mappings only"),
        (Mode.TORCH_COMPILE, "must contain Mode.INFERENCE or Mode.TRAINING"),
        (Mode(Mode.INFERENCE.value | Mode.TRAINING.value), "exclude each other"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_kernelize_mode(bad)
    with pytest.raises(TypeError, match="must be a Mode"):
        check_kernelize_mode("inference")


def test_fallback_order_serves_weaker_requirements_only() -> None:
    """A registered mode serves a request when it is at least as capable: training kernels serve inference,
    compile-capable ones serve eager execution, FALLBACK serves all; never the other way round."""
    for requested, order in MODE_FALLBACK_ORDER.items():
        assert order[0] == requested and order[-1] == Mode.FALLBACK
        for registered in order[:-1]:
            assert Mode.TORCH_COMPILE in registered or Mode.TORCH_COMPILE not in requested
            assert Mode.TRAINING in registered or Mode.TRAINING not in requested
    assert MODE_FALLBACK_ORDER[Mode.INFERENCE] == (
        Mode.INFERENCE,
        Mode.INFERENCE | Mode.TORCH_COMPILE,
        Mode.TRAINING,
        Mode.TRAINING | Mode.TORCH_COMPILE,
        Mode.FALLBACK,
    )


def test_kernelize_fallback_flags() -> None:
    assert KernelizeFallback.CANNOT_LOAD not in KernelizeFallback.DEFAULT
    assert KernelizeFallback.ALL == KernelizeFallback.DEFAULT | KernelizeFallback.CANNOT_LOAD
    assert KernelizeFallback.NO_LAYER not in KernelizeFallback.NONE


# --- devices ------------------------------------------------------------------------------------------------


def test_devices_validate_types_and_properties() -> None:
    assert Device("cuda", CUDAProperties(80, 90)).capability_range == (80, 90)
    assert Device("mps").capability_range is None
    assert Device("cuda", CUDAProperties(75, 75)) == Device("cuda", CUDAProperties(75, 75))
    assert len({Device("cpu"), Device("cpu")}) == 1
    with pytest.raises(ValueError, match="unknown device type 'gpu': expected one of cpu, cuda, mps"):
        Device("gpu")
    with pytest.raises(ValueError, match="CUDAProperties applies to 'cuda' devices, not 'rocm'"):
        Device("rocm", CUDAProperties(80, 90))
    with pytest.raises(ValueError, match="ROCMProperties applies to 'rocm' devices"):
        Device("cuda", ROCMProperties(90, 95))
    with pytest.raises(ValueError, match=r"min_capability \(90\) is greater than max_capability \(80\)"):
        CUDAProperties(90, 80)
    with pytest.raises(TypeError, match="min_capability must be an int like 80"):
        CUDAProperties(8.0, 9)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="properties must be CUDAProperties, ROCMProperties or None"):
        Device("cuda", (80, 90))  # type: ignore[arg-type]


# --- registering and looking up -----------------------------------------------------------------------------


def test_bare_repository_is_a_fallback_entry_for_every_mode() -> None:
    register_kernel_mapping({"SiluAndMul": {"cuda": repo("A"), Device("cpu"): repo("B")}})
    for mode in MODE_FALLBACK_ORDER:
        assert chosen("SiluAndMul", "cuda", mode, 80) == "A"
        assert chosen("SiluAndMul", "cpu", mode) == "B"
    assert chosen("SiluAndMul", "mps", Mode.INFERENCE) == "NO_DEVICE"
    assert chosen("GeluTanh", "cpu", Mode.INFERENCE) == "NO_LAYER"


def test_mode_tables_and_their_fallback_order() -> None:
    table = {Mode.TRAINING: repo("T"), Mode.INFERENCE | Mode.TORCH_COMPILE: repo("IC")}
    register_kernel_mapping({"L": {"cpu": table}})
    assert chosen("L", "cpu", Mode.INFERENCE) == "IC"
    assert chosen("L", "cpu", Mode.INFERENCE | Mode.TORCH_COMPILE) == "IC"
    assert chosen("L", "cpu", Mode.TRAINING) == "T"
    assert chosen("L", "cpu", Mode.TRAINING | Mode.TORCH_COMPILE) is None  # nothing compiles for training


def test_capability_ranges_narrowest_wins_then_latest() -> None:
    register_kernel_mapping(
        {
            "L": {
                "cuda": repo("any"),
                Device("cuda", CUDAProperties(80, 90)): repo("wide"),
                Device("cuda", CUDAProperties(86, 89)): repo("narrow"),
                Device("cuda", CUDAProperties(90, 93)): repo("also_wide"),
            },
            "M": {Device("cuda", CUDAProperties(80, 89)): repo("ampere")},
        }
    )
    assert [chosen("L", "cuda", Mode.INFERENCE, c) for c in (70, 80, 86, 89, 90, 100)] == [
        "any",
        "wide",
        "narrow",
        "narrow",
        "also_wide",  # 90-93 is narrower than 80-90
        "any",
    ]
    assert chosen("M", "cuda", Mode.INFERENCE, 90) == "NO_COMPATIBLE_PROPERTIES"
    register_kernel_mapping({"L": {Device("cuda", CUDAProperties(88, 91)): repo("late")}})
    assert chosen("L", "cuda", Mode.INFERENCE, 90) == "late"  # as narrow as 90-93, registered later


def test_rocm_ranges() -> None:
    register_kernel_mapping(
        {"L": {Device("rocm", ROCMProperties(90, 95)): repo("mi300"), "rocm": repo("any")}}
    )
    assert chosen("L", "rocm", Mode.INFERENCE, 94) == "mi300"
    assert chosen("L", "rocm", Mode.INFERENCE, 110) == "any"


def test_capability_is_asked_only_when_needed() -> None:
    register_kernel_mapping({"L": {"cpu": repo("cpu")}, "N": {"cuda": repo("cuda")}})

    def no_gpu() -> int:
        raise AssertionError("capability asked")

    assert isinstance(current_mapping().lookup("L", "cpu", no_gpu), MappingHit)
    assert current_mapping().lookup("L", "cuda", no_gpu) == MappingMiss(
        "NO_DEVICE", "layer 'L' is mapped for cpu, not for 'cuda'"
    )


def test_registering_replaces_the_whole_table_of_an_entry() -> None:
    register_kernel_mapping({"L": {"cpu": {Mode.INFERENCE: repo("I"), Mode.TRAINING: repo("T")}}})
    register_kernel_mapping({"L": {"cpu": {Mode.TRAINING: repo("T2")}}})
    assert chosen("L", "cpu", Mode.INFERENCE) == "T2"  # the INFERENCE entry went with the old table
    register_kernel_mapping({"M": {"cpu": repo("M")}}, inherit_mapping=False)
    assert chosen("L", "cpu", Mode.INFERENCE) == "NO_LAYER"
    assert chosen("M", "cpu", Mode.INFERENCE) == "M"


def test_scopes_copy_or_replace_and_always_restore() -> None:
    register_kernel_mapping({"L": {"cpu": repo("global")}})
    scope = use_kernel_mapping({"M": {"cpu": repo("scoped")}})
    with scope:
        assert chosen("L", "cpu", Mode.INFERENCE) == "global"
        assert chosen("M", "cpu", Mode.INFERENCE) == "scoped"
        register_kernel_mapping({"L": {"cpu": repo("inner")}})
        assert chosen("L", "cpu", Mode.INFERENCE) == "inner"
        with use_kernel_mapping({"N": {"cpu": repo("N")}}, inherit_mapping=False):
            assert chosen("L", "cpu", Mode.INFERENCE) == "NO_LAYER"
        assert chosen("L", "cpu", Mode.INFERENCE) == "inner"
    assert chosen("L", "cpu", Mode.INFERENCE) == "global"
    assert chosen("M", "cpu", Mode.INFERENCE) == "NO_LAYER"
    with scope:  # reusable
        assert chosen("M", "cpu", Mode.INFERENCE) == "scoped"
    with pytest.raises(RuntimeError), scope:
        raise RuntimeError
    assert chosen("M", "cpu", Mode.INFERENCE) == "NO_LAYER"


def test_the_process_wide_mapping_is_shared_by_threads() -> None:
    register_kernel_mapping({"L": {"cpu": repo("main")}})
    seen: list[str | None] = []
    thread = threading.Thread(target=lambda: seen.append(chosen("L", "cpu", Mode.INFERENCE)))
    thread.start()
    thread.join()
    assert seen == ["main"]


@pytest.mark.parametrize(
    ("mapping", "error", "message"),
    [
        ([], TypeError, "a kernel mapping is a dict"),
        ({"": {"cpu": repo("A")}}, TypeError, "layer names"),
        ({"L": repo("A")}, TypeError, "kernel mapping for layer 'L' must be a dict device -> repository"),
        ({"L": {"gpu": repo("A")}}, ValueError, "unknown device type 'gpu'"),
        ({"L": {3: repo("A")}}, TypeError, "devices are device type names or Device"),
        ({"L": {"cpu": "org/kernel"}}, TypeError, "'org/kernel' is not a repository"),
        ({"L": {"cpu": {"inference": repo("A")}}}, TypeError, "keys of a mode table must be Mode values"),
    ],
)
def test_invalid_mappings_change_nothing(mapping: object, error: type[Exception], message: str) -> None:
    register_kernel_mapping({"Kept": {"cpu": repo("kept")}})
    with pytest.raises(error, match=message):
        register_kernel_mapping(
            {"Other": {"cpu": repo("other")}, **mapping} if isinstance(mapping, dict) else mapping
        )  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        register_kernel_mapping(mapping, inherit_mapping=False)  # type: ignore[arg-type]
    assert chosen("Kept", "cpu", Mode.INFERENCE) == "kept"
    assert chosen("Other", "cpu", Mode.INFERENCE) == "NO_LAYER"


def test_a_mode_no_kernelize_selects_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kernel_builder.layers")
    register_kernel_mapping({"L": {"cpu": {Mode.TORCH_COMPILE: repo("A")}}})
    assert "no kernelize mode ever selects an entry registered for Mode.TORCH_COMPILE" in caplog.text


# --- repositories (construction only) -----------------------------------------------------------------------


def test_repositories_compare_by_value_and_validate_arguments() -> None:
    a = LayerRepository("org/act", layer_name="SiluAndMul", version=1)
    assert a == LayerRepository("org/act", layer_name="SiluAndMul", version=1)
    assert a != LayerRepository("org/act", layer_name="SiluAndMul", revision="v1")
    assert a != LayerRepository("org/act", layer_name="SiluAndMul", version=1, trust_remote_code=True)
    assert hash(a) == hash(LayerRepository("org/act", layer_name="SiluAndMul", version=1))
    assert str(a) == "org/act (version 1), layer SiluAndMul"
    assert LocalLayerRepository("x", layer_name="A") == LocalLayerRepository("./x", layer_name="A")
    with pytest.raises(ValueError, match="exactly one of version and revision"):
        LayerRepository("org/act", layer_name="SiluAndMul")
    with pytest.raises(ValueError, match="exactly one of version and revision"):
        LayerRepository("org/act", layer_name="SiluAndMul", version=1, revision="main")
    with pytest.raises(ValueError, match="invalid kernel repo id 'act'"):
        LayerRepository("act", layer_name="SiluAndMul", version=1)
    with pytest.raises(ValueError, match="layer_name must be a Python identifier"):
        LayerRepository("org/act", layer_name="silu-and-mul", version=1)
    with pytest.raises(TypeError, match="trust_remote_code must be True, False or a list"):
        LayerRepository("org/act", layer_name="A", version=1, trust_remote_code="y")  # type: ignore[arg-type]


def test_importing_the_layer_api_imports_neither_torch_nor_the_hub_client() -> None:
    import subprocess

    code = (
        "import sys, kernel_builder\n"
        "from kernel_builder import LayerRepository, Mode, register_kernel_mapping\n"
        "repository = LayerRepository('o/k', layer_name='L', version=1)\n"
        "register_kernel_mapping({'L': {'cuda': {Mode.INFERENCE: repository}}})\n"
        "print(sorted(m for m in ('torch', 'huggingface_hub') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
