"""kernelize end to end on the CPU: pure-Python kernels with ``layers`` modules, loaded through
``LocalLayerRepository`` and through the Hub double, swapped into a small model marked in this file."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hub_server import HubServer
from layers_fixtures import (
    KERNEL_REPO,
    NO_LAYERS_REPO,
    GatedHead,
    GeluTanh,
    ReLU,
    SiluAndMul,
    calls_of,
    fresh_layers,  # noqa: F401  (fixture)
    publish_kernel,
    silu_and_mul,
    write_kernel,
)
from torch import nn

from kernel_builder.layers import (
    CUDAProperties,
    Device,
    FuncRepository,
    IncompatibleLayerError,
    KernelizedFunc,
    KernelizeError,
    KernelizeFallback,
    KernelLoadError,
    LayerRepository,
    LocalFuncRepository,
    LocalLayerRepository,
    LockedLayerRepository,
    Mode,
    get_kernelized_layers,
    kernelize,
    kernelize_report,
    register_kernel_mapping,
    replace_kernel_forward_from_hub,
    use_kernel_mapping,
)
from kernel_builder.layers import kernelizer as kernelizer_module
from kernel_builder.loader.errors import KernelNotLockedError, UntrustedKernelError

pytestmark = pytest.mark.usefixtures("fresh_layers")


# --- the model, marked as a modelling library marks it ------------------------------------------------------


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.act = SiluAndMul()
        self.gelu = GeluTanh()
        self.relu = ReLU()
        self.plain = nn.ReLU()  # not marked: never touched
        self.head = GatedHead()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.plain(self.relu(self.gelu(self.act(self.up(x))))))


MARKED = ("act", "gelu", "relu")
#: Fall back for unmapped layers, raise when the mapped kernel does not support the mode.
ONLY_MODE_RAISES = (
    KernelizeFallback.NO_LAYER | KernelizeFallback.NO_DEVICE | KernelizeFallback.NO_COMPATIBLE_PROPERTIES
)


def model() -> Model:
    torch.manual_seed(0)
    return Model()


def local(root: Path, layer_name: str) -> LocalLayerRepository:
    return LocalLayerRepository(root, layer_name=layer_name)


def local_mapping(root: Path) -> dict[str, dict[str | Device, object]]:
    return {name: {"cpu": local(root, name)} for name in ("SiluAndMul", "GeluTanh", "ReLU")}


def kernel_forward_name(module: nn.Module) -> str:
    """``kernel:<Class>`` when the instance forward is a kernel layer's, else ``original``."""
    forward = module.forward
    function = getattr(forward, "__func__", None)
    if function is type(module).forward:
        return "original"
    return f"kernel:{function.__qualname__.split('.')[0]}" if function is not None else "other"


def outcomes(model: nn.Module) -> dict[str, str]:
    return {name: kernel_forward_name(getattr(model, name)) for name in MARKED}


def own_function(net: nn.Module) -> nn.Module:
    """The model's own copy of the marked function ``silu_and_mul`` (``use_kernelized_func``)."""
    own: nn.Module = net.head.__dict__["_kernel_funcs"]["silu_and_mul"]
    return own


@pytest.fixture
def kernel_root(tmp_path: Path) -> Path:
    return write_kernel(tmp_path / "activation")


# --- replacing forwards -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_local_layers_replace_marked_forwards_and_match(kernel_root: Path, dtype: torch.dtype) -> None:
    net = model().to(dtype)
    x = torch.randn(5, 8, dtype=dtype)
    reference = net(x)
    with use_kernel_mapping(local_mapping(kernel_root)):
        assert kernelize(net, mode=Mode.INFERENCE, device="cpu") is net
    assert outcomes(net) == {"act": "kernel:SiluAndMul", "gelu": "kernel:GeluTanh", "relu": "kernel:ReLU"}
    # Unmarked layers keep their class's forward; nothing was set on them.
    for name in ("up", "plain", "head", "head.proj"):
        assert "forward" not in net.get_submodule(name).__dict__, name
    counter = calls_of_kernel(net)
    before = dict(counter)
    tolerance = {"rtol": 1.6e-2, "atol": 1e-2} if dtype == torch.bfloat16 else {"rtol": 1e-6, "atol": 1e-6}
    torch.testing.assert_close(net(x), reference, **tolerance)
    assert {name: counter[name] - before.get(name, 0) for name in ("SiluAndMul", "GeluTanh", "ReLU")} == {
        "SiluAndMul": 1,
        "GeluTanh": 1,
        "ReLU": 1,
    }


def calls_of_kernel(net: Model) -> dict[str, int]:
    """The CALLS counter of the kernel whose SiluAndMul replaced ``net.act``'s forward."""
    return calls_of(net.act.forward.__func__)  # type: ignore[no-any-return]


def test_hub_layers_replace_marked_forwards_and_match(hub: HubServer, tmp_path: Path) -> None:
    sha = publish_kernel(hub, tmp_path)
    net = model()
    x = torch.randn(3, 8)
    reference = net(x)
    mapping = {
        name: {"cpu": LayerRepository(KERNEL_REPO, layer_name=name, version=1, trust_remote_code=True)}
        for name in ("SiluAndMul", "GeluTanh", "ReLU")
    }
    with use_kernel_mapping(mapping):
        decisions = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
    assert outcomes(net) == {"act": "kernel:SiluAndMul", "gelu": "kernel:GeluTanh", "relu": "kernel:ReLU"}
    torch.testing.assert_close(net(x), reference)
    assert [(d.module, d.outcome, d.repository) for d in decisions] == [
        ("act", "kernel", f"{KERNEL_REPO} (version 1), layer SiluAndMul"),
        ("gelu", "kernel", f"{KERNEL_REPO} (version 1), layer GeluTanh"),
        ("relu", "kernel", f"{KERNEL_REPO} (version 1), layer ReLU"),
        ("head:silu_and_mul", "original", None),  # a marked function without a mapping entry
    ]
    # One download for the three layers: each repository is loaded once, the kernel once.
    from kernel_builder import get_loaded_kernels

    (loaded,) = get_loaded_kernels()
    assert loaded.repo_info is not None and loaded.repo_info.revision == sha


def test_hub_layer_of_an_untrusted_publisher_is_refused_at_kernelize(hub: HubServer, tmp_path: Path) -> None:
    publish_kernel(hub, tmp_path)
    net = model()
    untrusted = LayerRepository(KERNEL_REPO, layer_name="ReLU", version=1)
    with use_kernel_mapping({"ReLU": {"cpu": untrusted}}), pytest.raises(ValueError, match="not a trusted"):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert outcomes(net)["relu"] == "original"


def test_marked_function_listed_by_a_module_is_replaced(kernel_root: Path) -> None:
    net = model()
    x = torch.randn(2, 8)
    reference = net(x)
    kernel_function = LocalFuncRepository(kernel_root, func_name="silu_and_mul")
    with use_kernel_mapping({"silu_and_mul": {"cpu": kernel_function}}):
        *_, decision = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
    assert (decision.module, decision.layer_name, decision.outcome) == (
        "head:silu_and_mul",
        "silu_and_mul",
        "kernel",
    )
    own = own_function(net)
    assert own.forward.__func__ is decision.layer.forward
    assert "forward" not in silu_and_mul.__dict__  # the shared function module is never replaced
    assert decision.layer is not None and decision.layer.__module__.endswith("torch_cpu_0123456789")
    assert get_kernelized_layers(net).funcs == {
        ("head", "silu_and_mul"): KernelizedFunc(own, kernel_function)
    }
    counter = calls_of(decision.layer)
    torch.testing.assert_close(net(x), reference)
    assert counter["silu_and_mul"] == 1  # the kernel's function ran
    # Another instance of the same model has its own function module, which nobody kernelized.
    torch.testing.assert_close(model()(x), reference)
    assert counter["silu_and_mul"] == 1
    with use_kernel_mapping({}, inherit_mapping=False):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert "forward" not in own.__dict__ and get_kernelized_layers(net).funcs == {}


def test_each_model_instance_has_its_own_function_modules(tmp_path: Path) -> None:
    """Two instances of one model, kernelized with two kernels for the same marked function: each keeps its
    own (with one shared function module, the last kernelize would win for both)."""
    first = write_kernel(tmp_path / "first", tag="first_")
    second = write_kernel(tmp_path / "second", tag="second_")
    a, b = model(), model()
    repos = [LocalFuncRepository(root, func_name="silu_and_mul") for root in (first, second)]
    layers = []
    for net, repository in zip((a, b), repos):
        with use_kernel_mapping({"silu_and_mul": {"cpu": repository}}):
            *_, decision = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
        assert decision.layer is not None
        layers.append(decision.layer)
        assert own_function(net).forward.__func__ is decision.layer.forward
    assert [layer.__module__.split(".")[0] for layer in layers] == [
        "_activation_first_torch_cpu_0123456789",
        "_activation_second_torch_cpu_0123456789",
    ]
    counters = [calls_of(layer) for layer in layers]
    x = torch.randn(2, 8)
    a(x)
    assert (counters[0]["silu_and_mul"], counters[1]["silu_and_mul"]) == (1, 0)
    b(x)
    b(x)
    assert (counters[0]["silu_and_mul"], counters[1]["silu_and_mul"]) == (1, 2)
    # Outside any model's forward, the shared function is the plain function.
    torch.testing.assert_close(silu_and_mul(x), F.silu(x[..., :4]) * x[..., 4:])
    assert (counters[0]["silu_and_mul"], counters[1]["silu_and_mul"]) == (1, 2)
    # A deep copy keeps the kernel of the model it copies, in a function module of its own.
    copied = copy.deepcopy(a)
    assert own_function(copied) is not own_function(a)
    copied(x)
    assert counters[0]["silu_and_mul"] == 2


def test_func_repository_from_the_hub(hub: HubServer, tmp_path: Path) -> None:
    publish_kernel(hub, tmp_path)
    net = model()
    repository = FuncRepository(KERNEL_REPO, func_name="silu_and_mul", revision="v1", trust_remote_code=True)
    try:
        with use_kernel_mapping({"silu_and_mul": {"cpu": repository}}):
            *_, decision = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
        assert (decision.module, decision.outcome) == ("head:silu_and_mul", "kernel")
        assert str(repository) == f"{KERNEL_REPO} (revision v1), function silu_and_mul"
    finally:
        with use_kernel_mapping({}, inherit_mapping=False):
            kernelize(net, mode=Mode.INFERENCE, device="cpu")


def test_each_model_instance_has_its_own_function_modules_as_upstream(tmp_path: Path) -> None:
    """The same scenario through ``kernels`` and through ours, each with its own marks: two instances of one
    model, kernelized with two kernels for one marked function, then called; each instance runs its own."""
    kernels = pytest.importorskip("kernels")
    roots = [write_kernel(tmp_path / name, tag=f"{name}_") for name in ("first", "second")]
    ran = {}
    for package in (kernels, __import__("kernel_builder")):

        @package.use_kernel_forward_from_hub("silu_and_mul")
        def gate(x: torch.Tensor) -> torch.Tensor:
            return F.silu(x[..., :4]) * x[..., 4:]

        @package.use_kernelized_func(gate)
        class Gated(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return gate(x)

        nets = [Gated(), Gated()]
        for net, root in zip(nets, roots):
            repository = package.LocalLayerRepository(root, layer_name="SiluAndMul")
            with package.use_kernel_mapping({"silu_and_mul": {"cpu": repository}}, inherit_mapping=False):
                package.kernelize(net, mode=package.Mode.INFERENCE, device="cpu")
        counters = [
            calls_of(package.get_kernelized_layers(net).funcs[("", "silu_and_mul")].module.forward.__func__)
            for net in nets
        ]
        before = [counter["SiluAndMul"] for counter in counters]
        x = torch.randn(2, 8)
        nets[1](x)
        nets[1](x)
        nets[0](x)
        gate(x)  # outside any model: the plain function
        ran[package.__name__] = [counter["SiluAndMul"] - start for counter, start in zip(counters, before)]
    assert ran == {"kernels": [1, 2], "kernel_builder": [1, 2]}


# --- modes --------------------------------------------------------------------------------------------------


def test_training_falls_back_for_a_layer_without_backward(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping(local_mapping(kernel_root)):
        kernelize(net, mode=Mode.TRAINING, device="cpu")
        assert outcomes(net) == {"act": "kernel:SiluAndMul", "gelu": "original", "relu": "kernel:ReLU"}
        with pytest.raises(KernelizeError) as raised:
            kernelize(net, mode=Mode.TRAINING, device="cpu", use_fallback=False)
    message = str(raised.value)
    assert "'GeluTanh'" in message and str(kernel_root) in message and "has_backward = False" in message


def test_torch_compile_falls_back_for_a_layer_not_declared_compilable(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping(local_mapping(kernel_root)):
        kernelize(net, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu")
        assert outcomes(net) == {"act": "kernel:SiluAndMul", "gelu": "kernel:GeluTanh", "relu": "original"}
        kernelize(net, mode=Mode.TRAINING | Mode.TORCH_COMPILE, device="cpu")
        assert outcomes(net) == {"act": "kernel:SiluAndMul", "gelu": "original", "relu": "original"}


def test_the_registered_mode_is_not_checked_against_the_layer(kernel_root: Path) -> None:
    """An entry registered for training whose layer has no backward (0.19's rule): it serves inference, and
    training falls back (or raises without the fallback) as for any layer without a backward."""
    net = model()
    mapping = {"GeluTanh": {"cpu": {Mode.TRAINING: local(kernel_root, "GeluTanh")}}}
    with use_kernel_mapping(mapping):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")  # INFERENCE falls back to the TRAINING entry
        assert outcomes(net)["gelu"] == "kernel:GeluTanh"
        kernelize(net, mode=Mode.TRAINING, device="cpu")
        assert outcomes(net)["gelu"] == "original"
        with pytest.raises(KernelizeError) as raised:
            kernelize(net, mode=Mode.TRAINING, device="cpu", use_fallback=ONLY_MODE_RAISES)
    message = str(raised.value)
    assert "'GeluTanh'" in message and str(kernel_root) in message and "has_backward = False" in message


def test_an_entry_registered_for_torch_compile_serves_the_modes_its_layer_supports(kernel_root: Path) -> None:
    """ReLU is not declared compilable: registered for ``INFERENCE | TORCH_COMPILE``, it serves plain
    inference (which falls back to that entry), and compiled inference falls back or raises."""
    mapping = {"ReLU": {"cpu": {Mode.INFERENCE | Mode.TORCH_COMPILE: local(kernel_root, "ReLU")}}}
    net = model()
    with use_kernel_mapping(mapping):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
        assert outcomes(net)["relu"] == "kernel:ReLU"
        kernelize(net, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu")
        assert outcomes(net)["relu"] == "original"
        with pytest.raises(KernelizeError, match="can_torch_compile = True"):
            kernelize(
                net, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu", use_fallback=ONLY_MODE_RAISES
            )


def test_mode_tables_pick_the_first_entry_in_fallback_order(tmp_path: Path) -> None:
    first = write_kernel(tmp_path / "first", tag="first_")
    second = write_kernel(tmp_path / "second", tag="second_")
    net = model()
    table = {Mode.TRAINING: local(first, "SiluAndMul"), Mode.FALLBACK: local(second, "SiluAndMul")}
    with use_kernel_mapping({"SiluAndMul": {"cpu": table}}):
        (inference,) = [
            d for d in kernelize_report(net, mode=Mode.INFERENCE, device="cpu") if d.module == "act"
        ]
        (compiled,) = [
            d
            for d in kernelize_report(net, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu")
            if d.module == "act"
        ]
    assert (inference.registered_mode, inference.repository) == (Mode.TRAINING, str(table[Mode.TRAINING]))
    assert (compiled.registered_mode, compiled.repository) == (Mode.FALLBACK, str(table[Mode.FALLBACK]))


def test_no_entry_for_the_mode(kernel_root: Path) -> None:
    mapping = {"ReLU": {"cpu": {Mode.INFERENCE: local(kernel_root, "ReLU")}}}
    net = model()
    with use_kernel_mapping(mapping):
        kernelize(net, mode=Mode.TRAINING, device="cpu")
        assert outcomes(net)["relu"] == "original"
        with pytest.raises(KernelizeError, match=r"layer 'ReLU'.*NO_COMPATIBLE_MODE"):
            kernelize(net, mode=Mode.TRAINING, device="cpu", use_fallback=KernelizeFallback.NO_LAYER)


# --- errors at kernelize time -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer_name", "error", "fragment"),
    [
        ("Missing", KernelizeError, "has no layer 'Missing' in its layers module (classes there: GeluTanh"),
        ("WithInit", IncompatibleLayerError, "defines a constructor (__init__)"),
        ("WithHelper", IncompatibleLayerError, "defines helper, which ReLU instances do not have"),
        ("TwoInputs", IncompatibleLayerError, "forward(self, x, y) does not match ReLU.forward(self, x"),
        ("KeywordOnly", IncompatibleLayerError, "forward(self, *, x) does not match"),
    ],
)
def test_incompatible_kernel_layers_raise_naming_layer_and_repo(
    kernel_root: Path, layer_name: str, error: type[Exception], fragment: str
) -> None:
    net = model()
    x = torch.randn(2, 8)
    reference = net(x)
    mapping = {**local_mapping(kernel_root), "ReLU": {"cpu": local(kernel_root, layer_name)}}
    with use_kernel_mapping(mapping), pytest.raises(error) as raised:
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    message = str(raised.value)
    assert fragment in message, message
    assert str(kernel_root) in message and layer_name in message
    # Decided first, applied after: an error leaves every layer as it was, even those decided earlier.
    assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "original"}
    torch.testing.assert_close(net(x), reference)


def test_a_kernel_without_layers(tmp_path: Path) -> None:
    root = write_kernel(tmp_path / "no-layers", name="no-layers", layers=False)
    with use_kernel_mapping({"ReLU": {"cpu": local(root, "ReLU")}}), pytest.raises(KernelizeError) as raised:
        kernelize(model(), mode=Mode.INFERENCE, device="cpu")
    assert "has no `layers` attribute" in str(raised.value) and str(root) in str(raised.value)


def test_a_kernel_without_layers_on_the_hub(hub: HubServer, tmp_path: Path) -> None:
    publish_kernel(hub, tmp_path, NO_LAYERS_REPO, layers=False)
    repository = LayerRepository(NO_LAYERS_REPO, layer_name="ReLU", version=1, trust_remote_code=True)
    with use_kernel_mapping({"ReLU": {"cpu": repository}}), pytest.raises(ValueError) as raised:
        kernelize(model(), mode=Mode.INFERENCE, device="cpu")
    assert f"{NO_LAYERS_REPO} (version 1) has no `layers` attribute" in str(raised.value)


def test_missing_mapping_falls_back_or_raises(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping(
        {"SiluAndMul": {"cuda": local(kernel_root, "SiluAndMul")}}, inherit_mapping=False
    ):
        decisions = {d.module: d for d in kernelize_report(net, mode=Mode.INFERENCE, device="cpu")}
        assert "no entry for layer name 'GeluTanh'" in decisions["gelu"].reason
        assert "mapped for cuda, not for 'cpu'" in decisions["act"].reason
        with pytest.raises(KernelizeError, match=r"layer 'SiluAndMul'.*KernelizeFallback.NO_DEVICE"):
            kernelize(net, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.NO_LAYER)
        with pytest.raises(KernelizeError, match=r"layer 'GeluTanh'.*KernelizeFallback.NO_LAYER"):
            kernelize(net, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.NO_DEVICE)
        kernelize(net, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.DEFAULT)
    assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "original"}


def test_a_kernel_that_cannot_load(tmp_path: Path) -> None:
    missing = local(tmp_path / "nowhere", "ReLU")
    net = model()
    with use_kernel_mapping({"ReLU": {"cpu": missing}}):
        with pytest.raises(KernelLoadError) as raised:
            kernelize(net, mode=Mode.INFERENCE, device="cpu")
        assert isinstance(raised.value, FileNotFoundError)
        assert "layer 'ReLU'" in str(raised.value) and str(tmp_path / "nowhere") in str(raised.value)
        (decision,) = [
            d
            for d in kernelize_report(
                net, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.ALL
            )
            if d.module == "relu"
        ]
    assert decision.outcome == "original" and "could not be loaded" in decision.reason


def test_invalid_arguments(kernel_root: Path) -> None:
    net = model()
    with pytest.raises(ValueError, match="for kernel mappings only"):
        kernelize(net, mode=Mode.FALLBACK)
    with pytest.raises(ValueError, match="must contain Mode.INFERENCE or Mode.TRAINING"):
        kernelize(net, mode=Mode.TORCH_COMPILE)
    with pytest.raises(ValueError, match="unknown device type 'tpu0'"):
        kernelize(net, mode=Mode.INFERENCE, device="tpu0")
    with pytest.raises(TypeError, match="use_fallback must be a bool"):
        kernelize(net, mode=Mode.INFERENCE, use_fallback="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot tell the model's device"):
        kernelize(GeluTanh(), mode=Mode.INFERENCE)


# --- idempotence, conditions, devices, reports --------------------------------------------------------------


def test_kernelize_is_idempotent_and_reversible(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping(local_mapping(kernel_root)):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
        first = outcomes(net)
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
        assert outcomes(net) == first
        kernelize(net, mode=Mode.TRAINING, device="cpu")
    assert "forward" not in net.gelu.__dict__  # restored: the instance attribute kernelize set is gone
    with use_kernel_mapping({}, inherit_mapping=False):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert not any("forward" in getattr(net, name).__dict__ for name in MARKED)


def test_a_forward_set_by_someone_else_is_kept_on_fallback(kernel_root: Path) -> None:
    net = model()

    def hooked(x: torch.Tensor) -> torch.Tensor:
        return x

    net.gelu.forward = hooked  # e.g. an accelerate hook
    with use_kernel_mapping({}, inherit_mapping=False):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert net.gelu.forward is hooked


def test_condition_skips_instances(kernel_root: Path) -> None:
    class Scaled(nn.Module):
        def __init__(self, enabled: bool) -> None:
            super().__init__()
            self.enabled = enabled

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    replace_kernel_forward_from_hub(Scaled, "ReLU", condition=lambda module: module.enabled)
    net = nn.Sequential(Scaled(True), Scaled(False))
    with use_kernel_mapping({"ReLU": {"cpu": local(kernel_root, "ReLU")}}):
        decisions = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
    assert [(d.module, d.outcome) for d in decisions] == [("0", "kernel"), ("1", "skipped")]
    assert "forward" in net[0].__dict__ and "forward" not in net[1].__dict__


def test_disable_kernel_mapping(kernel_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    net = model()
    with use_kernel_mapping(local_mapping(kernel_root)):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
        monkeypatch.setenv("DISABLE_KERNEL_MAPPING", "1")
        decisions = kernelize_report(net, mode=Mode.INFERENCE, device="cpu")
    assert {d.outcome for d in decisions} == {"original"}
    assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "original"}


def test_cuda_entries_by_capability(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The narrowest range containing the GPU's capability wins; no range containing it falls back."""
    roots = {name: write_kernel(tmp_path / name, tag=f"{name}_") for name in ("any", "ampere", "hopper")}
    mapping = {
        "ReLU": {
            "cuda": local(roots["any"], "ReLU"),
            Device("cuda", CUDAProperties(min_capability=80, max_capability=89)): local(
                roots["ampere"], "ReLU"
            ),
            Device("cuda", CUDAProperties(min_capability=90, max_capability=90)): local(
                roots["hopper"], "ReLU"
            ),
        },
        "GeluTanh": {
            Device("cuda", CUDAProperties(min_capability=90, max_capability=100)): local(
                roots["any"], "GeluTanh"
            )
        },
    }
    seen: list[int | None] = []

    def capability(index: int | None) -> int:
        seen.append(index)
        return capabilities[-1]

    monkeypatch.setattr(kernelizer_module, "gpu_capability", capability)
    chosen = {}
    with use_kernel_mapping(mapping):
        for capabilities in ([75], [86], [90]):
            decisions = {d.module: d for d in kernelize_report(model(), mode=Mode.INFERENCE, device="cuda:1")}
            chosen[capabilities[0]] = (decisions["relu"].repository, decisions["gelu"].outcome)
    assert chosen == {
        75: (str(local(roots["any"], "ReLU")), "original"),
        86: (str(local(roots["ampere"], "ReLU")), "original"),
        90: (str(local(roots["hopper"], "ReLU")), "kernel"),
    }
    assert set(seen) == {1}  # the device index given, asked once per kernelize call
    assert len(seen) == 3


@pytest.mark.parametrize(
    ("hip", "device", "expected"),
    [
        ("7.2.0", "torch-cuda", "rocm"),  # Torch calls a ROCm GPU cuda: the mapping's rocm entry applies
        (None, "torch-cuda", "cuda"),
        ("7.2.0", "cuda", "cuda"),  # a device type given as a string is the mapping's device type as written
    ],
)
def test_a_torch_cuda_device_on_rocm_uses_the_rocm_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hip: str | None, device: str, expected: str
) -> None:
    """The same scenario through ``kernels`` and through ours, on a simulated ROCm (or CUDA) build of Torch."""
    kernels = pytest.importorskip("kernels")
    repos_module = pytest.importorskip("kernels._internals.layer.repos")
    variants = ("torch-cpu", "torch-cuda", "torch-rocm")
    roots = {
        name: write_kernel(tmp_path / name, tag=f"{name}_", variants=variants) for name in ("cuda", "rocm")
    }
    monkeypatch.setattr(torch.version, "hip", hip)
    monkeypatch.setattr(kernelizer_module, "gpu_capability", lambda index: 90)
    monkeypatch.setattr(repos_module, "_find_capability", lambda index=None: 90)
    target = torch.device("cuda") if device == "torch-cuda" else device
    chosen = {}
    for package in (kernels, __import__("kernel_builder")):
        mapping = {
            "ReLU": {
                name: package.LocalLayerRepository(root, layer_name="ReLU") for name, root in roots.items()
            }
        }
        net = model()
        with package.use_kernel_mapping(mapping, inherit_mapping=False):
            package.kernelize(net, mode=package.Mode.INFERENCE, device=target)
        repo = get_kernelized_layers(net).layers["relu"].repo
        chosen[package.__name__] = next(name for name, r in mapping["ReLU"].items() if r is repo)
    assert chosen == {"kernels": expected, "kernel_builder": expected}


def test_device_is_inferred_from_the_parameters(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping({"ReLU": {"cpu": local(kernel_root, "ReLU")}}):
        kernelize(net, mode=Mode.INFERENCE)
    assert outcomes(net)["relu"] == "kernel:ReLU"


def test_decisions_are_logged(kernel_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kernel_builder.layers")
    with use_kernel_mapping(local_mapping(kernel_root)):
        kernelize(model(), mode=Mode.TRAINING, device="cpu")
    lines = [r.getMessage() for r in caplog.records if r.name == "kernel_builder.layers"]
    assert any(
        line.startswith("kernelize(Mode.TRAINING, cpu): gelu [GeluTanh]: original (")
        and line.endswith("the kernel layer does not support Mode.TRAINING: it declares has_backward = False")
        for line in lines
    ), lines
    assert "kernelize(Mode.TRAINING, cpu): 2 of 4 marked layers use kernels" in lines


def test_dry_run_changes_nothing(kernel_root: Path) -> None:
    net = model()
    with use_kernel_mapping(local_mapping(kernel_root)):
        decisions = kernelize_report(net, mode=Mode.INFERENCE, device="cpu", dry_run=True)
    assert [d.outcome for d in decisions] == ["kernel", "kernel", "kernel", "original"]
    assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "original"}


def test_registered_mapping_is_process_wide_and_scopes_restore_it(kernel_root: Path) -> None:
    register_kernel_mapping({"ReLU": {"cpu": local(kernel_root, "ReLU")}})
    net = model()
    with use_kernel_mapping({"GeluTanh": {"cpu": local(kernel_root, "GeluTanh")}}):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
        assert outcomes(net) == {"act": "original", "gelu": "kernel:GeluTanh", "relu": "kernel:ReLU"}
        register_kernel_mapping({"SiluAndMul": {"cpu": local(kernel_root, "SiluAndMul")}})  # this scope only
    kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "kernel:ReLU"}
    with use_kernel_mapping({"GeluTanh": {"cpu": local(kernel_root, "GeluTanh")}}, inherit_mapping=False):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert outcomes(net) == {"act": "original", "gelu": "kernel:GeluTanh", "relu": "original"}


# --- locked repositories ------------------------------------------------------------------------------------


def test_locked_layer_repository(hub: HubServer, tmp_path: Path) -> None:
    from kernel_builder.loader.lock import lock_project

    sha = publish_kernel(hub, tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[tool.kernels.dependencies]\n"{KERNEL_REPO}" = 1\n', encoding="utf-8"
    )
    assert lock_project(project, trust_remote_code=True).written
    lock = project / "kernels.lock"
    refused = LockedLayerRepository(KERNEL_REPO, lockfile=lock, layer_name="ReLU")
    with use_kernel_mapping({"ReLU": {"cpu": refused}}):  # online, the trust gate applies, as upstream's
        with pytest.raises(UntrustedKernelError):
            kernelize(model(), mode=Mode.INFERENCE, device="cpu")
    repository = LockedLayerRepository(
        KERNEL_REPO, lockfile=lock, layer_name="ReLU", trust_remote_code=[KERNEL_REPO]
    )
    assert repository != refused
    assert str(repository) == f"{KERNEL_REPO} (locked at {sha} in {project / 'kernels.lock'}), layer ReLU"
    net = model()
    with use_kernel_mapping({"ReLU": {"cpu": repository}}):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert outcomes(net)["relu"] == "kernel:ReLU"
    from kernel_builder import get_loaded_kernels

    assert [k.repo_info.revision for k in get_loaded_kernels() if k.repo_info] == [sha]
    # The caller's own lock is looked up when the repository is made: this test's project locks nothing.
    with pytest.raises(KernelNotLockedError, match=f"{KERNEL_REPO} is not locked"):
        LockedLayerRepository(KERNEL_REPO, layer_name="ReLU")


# --- the other package's marks ------------------------------------------------------------------------------


def test_layers_marked_with_upstream_kernels_are_kernelized(kernel_root: Path) -> None:
    kernels = pytest.importorskip("kernels")

    @kernels.use_kernel_forward_from_hub("ReLU")
    class UpstreamReLU(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    net = nn.Sequential(UpstreamReLU())
    with use_kernel_mapping({"ReLU": {"cpu": local(kernel_root, "ReLU")}}):
        kernelize(net, mode=Mode.INFERENCE, device="cpu")
    assert kernel_forward_name(net[0]) == "kernel:ReLU"


def test_layers_marked_here_are_kernelized_by_upstream_kernels(kernel_root: Path) -> None:
    kernels = pytest.importorskip("kernels")
    net = model()
    x = torch.randn(2, 8)
    reference = net(x)
    mapping = {
        "ReLU": {"cpu": kernels.LocalLayerRepository(kernel_root, layer_name="ReLU")},
        "silu_and_mul": {"cpu": kernels.LocalLayerRepository(kernel_root, layer_name="SiluAndMul")},
    }
    try:
        with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
            kernels.kernelize(net, mode=kernels.Mode.INFERENCE, device="cpu")
        assert outcomes(net) == {"act": "original", "gelu": "original", "relu": "kernel:ReLU"}
        own = own_function(net)
        assert own.forward.__func__.__qualname__ == "SiluAndMul.forward"  # the listed function too
        assert "forward" not in silu_and_mul.__dict__  # in the model's own function module only
        torch.testing.assert_close(net(x), reference)
        # What upstream's kernelize did reads back the same through both packages.
        theirs, ours = kernels.get_kernelized_layers(net), get_kernelized_layers(net)
        assert {name: layer.repo for name, layer in ours.layers.items()} == {"relu": mapping["ReLU"]["cpu"]}
        assert {name: layer.repo for name, layer in theirs.layers.items()} == {"relu": mapping["ReLU"]["cpu"]}
        assert list(ours.funcs) == list(theirs.funcs) == [("head", "silu_and_mul")]
    finally:
        silu_and_mul.__dict__.pop("forward", None)
