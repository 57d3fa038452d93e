"""Marking layers and functions, and the checks a kernel layer class must pass to replace a marked layer."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from kernel_builder.layers import (
    IncompatibleLayerError,
    Mode,
    replace_kernel_forward_from_hub,
    use_kernel_forward_from_hub,
    use_kernel_func_from_hub,
    use_kernelized_func,
)
from kernel_builder.layers.checks import check_layer_class, unsupported_in
from kernel_builder.layers.marks import FUNCS_ATTRIBUTE, function_layer

# --- marks --------------------------------------------------------------------------------------------------


def test_marking_a_class_changes_no_behaviour() -> None:
    @use_kernel_forward_from_hub("Double")
    class Double(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    assert Double.kernel_layer_name == "Double"  # type: ignore[attr-defined]
    layer = Double()
    assert layer.kernel_condition(layer) is True  # type: ignore[attr-defined]  # static: no binding
    assert "forward" not in layer.__dict__
    assert torch.equal(layer(torch.ones(2)), torch.full((2,), 2.0))


def test_marking_a_function_makes_a_callable_module_with_its_signature() -> None:
    def scale(x: torch.Tensor, factor: float = 2.0, *, bias: float = 0.0) -> torch.Tensor:
        """Scale and shift."""
        return x * factor + bias

    scale.has_backward = False  # type: ignore[attr-defined]
    module = use_kernel_forward_from_hub("scale")(scale)
    assert isinstance(module, nn.Module)
    assert type(module).__name__ == "scale" and type(module).kernel_layer_name == "scale"
    assert str(inspect.signature(type(module).forward)) == (
        "(self, x: 'torch.Tensor', factor: 'float' = 2.0, *, bias: 'float' = 0.0) -> 'torch.Tensor'"
    )
    assert (type(module).has_backward, type(module).can_torch_compile) == (False, False)
    assert torch.equal(module(torch.ones(2), 3.0, bias=1.0), torch.full((2,), 4.0))
    assert use_kernel_func_from_hub("scale")(scale).__class__.kernel_layer_name == "scale"


def test_function_layer_of_a_builtin_without_signature() -> None:
    layer = function_layer(torch.relu)
    assert "self" in inspect.signature(layer.forward).parameters
    assert torch.equal(layer()(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2.0]))


def test_use_kernelized_func_lists_functions_outside_the_module_tree() -> None:
    @use_kernel_forward_from_hub("double")
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @use_kernelized_func(double)
    class Block(nn.Module):
        """A block."""

        def __init__(self, width: int) -> None:
            super().__init__()
            self.linear = nn.Linear(width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return double(self.linear(x))

    block = Block(3)
    listed = block.__dict__[FUNCS_ATTRIBUTE]
    assert list(listed) == ["double"] and type(listed["double"]) is type(double)
    assert listed["double"] is not double  # the instance's own copy
    assert [name for name, _ in block.named_modules()] == ["", "linear"]
    assert set(block.state_dict()) == {"linear.weight", "linear.bias"}
    with pytest.raises(ValueError, match="is not a function marked with @use_kernel_forward_from_hub"):
        use_kernelized_func(lambda x: x)


def test_invalid_marks() -> None:
    with pytest.raises(TypeError, match="non-empty string"):
        use_kernel_forward_from_hub("")
    with pytest.raises(TypeError, match="marks a layer class"):
        replace_kernel_forward_from_hub(nn.ReLU(), "ReLU")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="condition must be a callable"):
        replace_kernel_forward_from_hub(nn.ReLU, "ReLU", condition=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="applies to classes and functions"):
        use_kernel_forward_from_hub("X")(3)


def test_replacing_a_third_party_class_with_a_condition() -> None:
    class Norm(nn.Module):
        def __init__(self, eps: float) -> None:
            super().__init__()
            self.eps = eps

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    replace_kernel_forward_from_hub(Norm, "Norm", condition=lambda module: module.eps < 1e-3)
    condition = Norm.kernel_condition  # type: ignore[attr-defined]
    assert condition(Norm(1e-5)) and not condition(Norm(0.1))


# --- checks of kernel layer classes -------------------------------------------------------------------------


class Original(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2))

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return x * self.weight


class Good(nn.Module):
    has_backward = False
    can_torch_compile = True
    weight: torch.Tensor  # an annotation only: read from the original instance

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return hidden * self.weight


def test_a_compatible_layer_passes_whatever_its_parameter_names() -> None:
    assert check_layer_class(Good, Original, subject="Good") is Good


class NotAModule:
    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return x


class WithInit(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return x


class WithMember(nn.Module):
    scale = 2

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return x * self.scale


class WithoutForward(nn.Module):
    pass


class FewerParameters(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class OtherKinds(nn.Module):
    def forward(self, x: torch.Tensor, *residual: torch.Tensor) -> torch.Tensor:
        return x


@pytest.mark.parametrize(
    ("layer", "fragment"),
    [
        (3, "is 3, not a torch.nn.Module subclass"),
        (NotAModule, "not a torch.nn.Module subclass"),
        (WithInit, "defines a constructor (__init__)"),
        (WithMember, "defines scale, which Original instances do not have"),
        (WithoutForward, "defines no forward method"),
        (FewerParameters, "forward(self, x: 'torch.Tensor') does not match Original.forward(self, x:"),
        (OtherKinds, "forward(self, x: 'torch.Tensor', *residual: 'torch.Tensor') does not match"),
    ],
)
def test_incompatible_layers(layer: object, fragment: str) -> None:
    with pytest.raises(IncompatibleLayerError) as raised:
        check_layer_class(layer, Original, subject="kernel layer Bad from org/k")
    assert str(raised.value).startswith("kernel layer Bad from org/k")
    assert fragment in str(raised.value)
    assert isinstance(raised.value, TypeError)  # what upstream's kernels raises


def test_mode_support() -> None:
    class Plain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    assert unsupported_in(Plain, Mode.TRAINING) is None  # has_backward defaults to true
    assert unsupported_in(Plain, Mode.INFERENCE | Mode.TORCH_COMPILE) == (
        "it does not declare can_torch_compile = True"
    )
    assert unsupported_in(Good, Mode.TRAINING | Mode.TORCH_COMPILE) == "it declares has_backward = False"
    assert unsupported_in(Good, Mode.INFERENCE | Mode.TORCH_COMPILE) is None


def test_checks_still_pass_after_torch_compile_patched_nn_module() -> None:
    """torch.compile adds a member to nn.Module itself on first use; a kernel layer inherits it."""
    assert check_layer_class(Good, Original, subject="Good") is Good
    compiled = torch.compile(lambda x: x * 2, backend="eager", fullgraph=True)
    assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert check_layer_class(Good, Original, subject="Good") is Good


@use_kernel_forward_from_hub("triple")
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3


class TripleKernel(nn.Module):
    """A stand-in kernel layer for ``triple``, at module level so that its forward pickles by name."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 30


@use_kernelized_func(triple)
class Tripler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = triple(x)
        return out


def test_a_models_own_function_modules_copy_and_pickle() -> None:
    """As upstream's since 0.19: a model with its own (kernelized) function module survives ``copy.copy``,
    ``copy.deepcopy`` and a pickle round trip, each copy with a function module of its own; the shared
    function pickles as itself."""
    import copy
    import pickle
    from types import MethodType

    model = Tripler()
    own = model.__dict__[FUNCS_ATTRIBUTE]["triple"]
    own.forward = MethodType(TripleKernel.forward, own)
    x = torch.ones(1)
    assert model(x).item() == 30 and triple(x).item() == 3
    for restored in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        theirs = restored.__dict__[FUNCS_ATTRIBUTE]["triple"]
        assert theirs is not own and theirs.forward.__self__ is theirs
        assert theirs.forward.__func__ is TripleKernel.forward
        assert restored(x).item() == 30
    assert pickle.loads(pickle.dumps(triple)) is triple
    shallow = copy.copy(own)
    assert shallow is not own and shallow.forward.__self__ is shallow
    assert triple(x).item() == 3  # nothing above touched the shared function
