"""Marking layers and functions as replaceable by hub kernels (what a modelling library does).

A mark is two class attributes, ``kernel_layer_name`` and ``kernel_condition``, the same ones upstream's
``kernels`` sets, so a model marked with either package can be kernelized by either. Marking changes no
behaviour: the layer runs its own ``forward`` until ``kernelize`` decides otherwise.

A marked *function* becomes a module: an instance of a small ``nn.Module`` class whose ``forward`` calls the
function and whose signature is the function's (what the kernel layer's ``forward`` is checked against). It
is called like the function. ``kernelize`` only sees it through a module that lists it with
:func:`use_kernelized_func`, and each instance of that module gets a function module of its own (as in the
``kernels`` loader since 0.19): while the instance's ``forward`` runs, a call of the shared function goes to the
instance's own, so kernelizing one model never changes what another model of the same class computes.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import MethodType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "COPY_MEMBERS",
    "FUNCS_ATTRIBUTE",
    "REPO_ATTRIBUTE",
    "function_layer",
    "replace_kernel_forward_from_hub",
    "use_kernel_forward_from_hub",
    "use_kernel_func_from_hub",
    "use_kernelized_func",
]

#: The instance attribute (outside ``nn.Module``'s submodule registry) that holds a module's marked functions.
FUNCS_ATTRIBUTE = "_kernel_funcs"
#: The instance attribute that holds the repository whose kernel layer ``kernelize`` put in place of a marked
#: layer's forward (what ``get_kernelized_layers`` reads back). The ``kernels`` loader uses the same two names,
#: so each package reads back what the other's ``kernelize`` did.
REPO_ATTRIBUTE = "_kernel_repo"

_T = TypeVar("_T")
Condition = Callable[["nn.Module"], bool]


def _always(module: nn.Module) -> bool:
    return True


def _check_layer_name(layer_name: object) -> str:
    if not isinstance(layer_name, str) or not layer_name:
        raise TypeError(f"a kernel layer name must be a non-empty string, got {layer_name!r}")
    return layer_name


def replace_kernel_forward_from_hub(
    cls: type[nn.Module], layer_name: str, condition: Condition | None = None
) -> None:
    """Mark ``cls`` (a layer class you do not own) as replaceable by the kernel layers mapped to
    ``layer_name``.

    ``condition(module)``, when given, is asked for each instance at ``kernelize`` time; an instance for
    which it is false keeps its forward. Prefer :func:`use_kernel_forward_from_hub` in the class's own code:
    only its maintainer can promise to keep ``forward``'s signature stable.
    """
    if not isinstance(cls, type):
        raise TypeError(f"replace_kernel_forward_from_hub marks a layer class, got {cls!r}")
    if condition is not None and not callable(condition):
        raise TypeError(f"condition must be a callable taking the module, got {condition!r}")
    cls.kernel_layer_name = _check_layer_name(layer_name)  # type: ignore[attr-defined]
    # A staticmethod, so that reading it through an instance does not bind the module as a first argument.
    cls.kernel_condition = staticmethod(condition or _always)  # type: ignore[attr-defined]


def use_kernel_forward_from_hub(layer_name: str, condition: Condition | None = None) -> Callable[[_T], Any]:
    """Decorator: mark a layer class (returned as is) or a function (returned as a module, see the module
    docstring) as replaceable by the kernel layers mapped to ``layer_name``."""
    _check_layer_name(layer_name)

    def mark(target: _T) -> Any:
        if isinstance(target, type):
            replace_kernel_forward_from_hub(target, layer_name, condition)
            return target
        if inspect.isfunction(target) or inspect.isbuiltin(target):
            layer = function_layer(target)
            replace_kernel_forward_from_hub(layer, layer_name, condition)
            return layer()
        raise TypeError(
            f"@use_kernel_forward_from_hub({layer_name!r}) applies to classes and functions, not {target!r}"
        )

    return mark


def use_kernel_func_from_hub(func_name: str) -> Callable[[_T], Any]:
    """The older name of :func:`use_kernel_forward_from_hub` for functions; kept for code that uses it."""
    return use_kernel_forward_from_hub(func_name)


def _compiling() -> bool:
    """Whether ``torch.compile`` is tracing the calling code (never without Torch imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.compiler.is_compiling())


class _Routes:
    """Which function module of its own each shared function module stands for (by ``id``) while a module
    listing it runs its ``forward``; nested forwards add to what the outer ones set.

    A context variable, so threads and async tasks each see their own; while ``torch.compile`` traces, which
    cannot follow a context variable on every Torch release, a plain attribute instead (one trace at a time).
    """

    def __init__(self) -> None:
        self._var: ContextVar[dict[int, Any] | None] = ContextVar(
            "kernel_builder_function_routes", default=None
        )
        self._traced: dict[int, Any] | None = None
        self._tracing = False

    def get(self) -> dict[int, Any] | None:
        if self._tracing or _compiling():
            return self._traced
        return self._var.get()

    def set(self, routes: dict[int, Any]) -> tuple[bool, Any]:
        """Make ``routes`` current; returns what :meth:`reset` needs to restore the previous ones."""
        if self._tracing or _compiling():
            previous, self._traced, self._tracing = self._traced, routes, True
            return (True, previous)
        token: Token[dict[int, Any] | None] = self._var.set(routes)
        return (False, token)

    def reset(self, state: tuple[bool, Any]) -> None:
        traced, previous = state
        if traced:
            self._traced = previous
            self._tracing = previous is not None
        else:
            self._var.reset(previous)


_routes = _Routes()


def _own_function(module: nn.Module) -> Any:
    """The function module of its own that stands for the shared ``module`` right now, if any."""
    routes = _routes.get()
    return None if routes is None else routes.get(id(module))


def use_kernelized_func(*funcs: Any) -> Callable[[type[_T]], type[_T]]:
    """Class decorator: each instance gets its own copy of each of ``funcs`` (functions marked with
    :func:`use_kernel_forward_from_hub`), which ``kernelize`` finds and replaces when it visits the instance;
    while the instance's ``forward`` runs, calls of the shared functions go to its copies.

    The copies are stored in the instance's ``__dict__`` (by layer name), not as submodules: the model's
    ``state_dict``, ``named_modules`` and ``repr`` stay as they were.
    """
    for func in funcs:
        if not isinstance(getattr(type(func), "kernel_layer_name", None), str):
            raise ValueError(  # noqa: TRY004 - upstream's kernels raises ValueError here
                f"{func!r} is not a function marked with @use_kernel_forward_from_hub, so kernelize could "
                f"not replace it; mark it first"
            )

    def attach(cls: type[_T]) -> type[_T]:
        original_init = cls.__init__
        original_forward = getattr(cls, "forward")

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            listed = self.__dict__.setdefault(FUNCS_ATTRIBUTE, {})
            for func in funcs:
                listed[type(func).kernel_layer_name] = type(func)()

        @functools.wraps(original_forward)
        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            listed = self.__dict__.get(FUNCS_ATTRIBUTE) or {}
            routes = dict(_routes.get() or {})
            for func in funcs:
                own = listed.get(type(func).kernel_layer_name)
                if own is not None:
                    routes[id(func)] = own
            state = _routes.set(routes)
            try:
                return original_forward(self, *args, **kwargs)
            finally:
                _routes.reset(state)

        __init__.__doc__ = original_init.__doc__
        __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
        cls.__init__ = __init__  # type: ignore[method-assign]
        setattr(cls, "forward", forward)
        return cls

    return attach


#: The copy and pickle support of function modules: the only members they add to ``nn.Module``'s besides
#: ``forward`` and the declarations (the layer checks accept them, as upstream's do).
COPY_MEMBERS = frozenset({"__copy__", "__deepcopy__"})


def _copy(self: nn.Module) -> nn.Module:
    """``copy.copy``: a new function module of the same function, its forward (if kernelized) bound to it."""
    copied = type(self)()
    copied.__dict__.update(self.__dict__)
    forward = self.__dict__.get("forward")
    if isinstance(forward, MethodType) and forward.__self__ is self:
        copied.__dict__["forward"] = MethodType(forward.__func__, copied)
    return copied


def _deepcopy(self: nn.Module, memo: dict[int, Any]) -> nn.Module:
    """``copy.deepcopy`` (of a model, say): a new function module of the same function, with a deep copy of its
    state; a kernelized forward is rebound to the copy."""
    import copy

    copied = type(self)()
    memo[id(self)] = copied
    copied.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return copied


def _rebuild(module_name: str, name: str, state: dict[str, Any], forward: Callable[..., Any] | None) -> Any:
    """Unpickle a model's own function module: a new one of the shared function ``module_name.name``."""
    import importlib

    shared = getattr(importlib.import_module(module_name), name)
    own = type(shared)()
    own.__dict__.update(state)
    if forward is not None:
        own.forward = MethodType(forward, own)
    return own


def _reducer(func: Callable[..., Any]) -> Callable[[nn.Module], Any]:
    """``__reduce__`` of ``func``'s module class: the shared module pickles as the module-level name it is bound
    to; a model's own copy as that name plus its state (a kernelized forward by its function)."""
    module_name, name = getattr(func, "__module__", ""), getattr(func, "__name__", "")

    def reduce(self: nn.Module) -> Any:
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is self:
            return name
        state = dict(self.__dict__)
        forward = state.pop("forward", None)
        bound = isinstance(forward, MethodType) and forward.__self__ is self
        if forward is not None and not bound:
            state["forward"] = forward
        return (_rebuild, (module_name, name, state, forward.__func__ if bound else None))

    return reduce


def function_layer(func: Callable[..., Any]) -> type[nn.Module]:
    """A module class whose ``forward(self, <func's parameters>)`` calls ``func``.

    It carries ``func``'s ``can_torch_compile`` (default false) and ``has_backward`` (default true)
    attributes, so a kernel *function* is judged like a kernel layer. Its instances copy, deep-copy and pickle
    (a model's own copies with a kernelized forward too; pickling needs ``func`` at module level).
    """
    from torch import nn

    def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        own = _own_function(self)
        if own is not None and own is not self:
            if not _compiling():
                return own(*args, **kwargs)
            # Traced: the kernel's forward itself, bound to this shared module (kernel layers keep no state),
            # so that the trace does not depend on which model's copy it went through.
            replaced = own.__dict__.get("forward")
            if isinstance(replaced, MethodType):
                return replaced.__func__(self, *args, **kwargs)
        return func(*args, **kwargs)

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # some builtins have none: accept any arguments
        signature = inspect.Signature(
            [
                inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
            ]
        )
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    forward.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self_parameter, *signature.parameters.values()]
    )
    name = getattr(func, "__name__", "function")
    forward.__name__ = forward.__qualname__ = "forward"
    forward.__doc__ = getattr(func, "__doc__", None)
    namespace = {
        "forward": forward,
        "can_torch_compile": bool(getattr(func, "can_torch_compile", False)),
        "has_backward": bool(getattr(func, "has_backward", True)),
        "__doc__": f"Module form of the function {name!r}.",
        "__module__": getattr(func, "__module__", __name__),
        "__copy__": _copy,
        "__deepcopy__": _deepcopy,
        "__reduce__": _reducer(func),
    }
    layer: type[nn.Module] = type(name, (nn.Module,), namespace)
    return layer
