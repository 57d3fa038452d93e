"""What ``kernelize`` prepares a model for (:class:`Mode`), and when it may keep a layer's own forward
(:class:`KernelizeFallback`).

A mapping registers a repository per mode; :data:`MODE_FALLBACK_ORDER` says which registered modes can serve a
requested one, best first. A kernel registered for training also serves inference, and one registered for
``torch.compile`` also serves eager execution, never the other way round; :attr:`Mode.FALLBACK` (what a bare
repository in a mapping is registered as) serves every mode, last.
"""

from __future__ import annotations

from enum import Flag

__all__ = ["MODE_FALLBACK_ORDER", "KernelizeFallback", "Mode", "check_kernelize_mode"]


class Mode(Flag):
    """The mode ``kernelize`` prepares a model for, and the mode a mapping entry is registered for.

    Exactly one of :attr:`INFERENCE` and :attr:`TRAINING`, optionally with :attr:`TORCH_COMPILE` (the model
    will run under ``torch.compile``). :attr:`FALLBACK` is for mappings only: the entry used when no entry of
    the requested mode exists; it combines with nothing.
    """

    FALLBACK = 1
    TRAINING = 2
    INFERENCE = 4
    TORCH_COMPILE = 8

    def __or__(self, other: object) -> Mode:
        if not isinstance(other, Mode):
            return NotImplemented
        combined = Mode(self.value | other.value)
        _check_combination(combined)
        return combined

    __ror__ = __or__


def _check_combination(mode: Mode) -> None:
    if Mode.INFERENCE in mode and Mode.TRAINING in mode:
        raise ValueError("Mode.INFERENCE and Mode.TRAINING exclude each other: pick one")
    if Mode.FALLBACK in mode and mode != Mode.FALLBACK:
        raise ValueError(
            "Mode.FALLBACK is a mapping entry of its own and cannot be combined with other modes"
        )


#: For each mode ``kernelize`` accepts, the registered modes that can serve it, best first.
MODE_FALLBACK_ORDER: dict[Mode, tuple[Mode, ...]] = {
    Mode.INFERENCE: (
        Mode.INFERENCE,
        Mode.INFERENCE | Mode.TORCH_COMPILE,
        Mode.TRAINING,
        Mode.TRAINING | Mode.TORCH_COMPILE,
        Mode.FALLBACK,
    ),
    Mode.INFERENCE | Mode.TORCH_COMPILE: (
        Mode.INFERENCE | Mode.TORCH_COMPILE,
        Mode.TRAINING | Mode.TORCH_COMPILE,
        Mode.FALLBACK,
    ),
    Mode.TRAINING: (Mode.TRAINING, Mode.TRAINING | Mode.TORCH_COMPILE, Mode.FALLBACK),
    Mode.TRAINING | Mode.TORCH_COMPILE: (Mode.TRAINING | Mode.TORCH_COMPILE, Mode.FALLBACK),
}


def check_kernelize_mode(mode: object) -> Mode:
    """``mode`` itself when ``kernelize`` accepts it; ``TypeError``/``ValueError`` saying what to pass."""
    if not isinstance(mode, Mode):
        raise TypeError(f"mode must be a Mode (e.g. Mode.INFERENCE), got {mode!r}")
    if mode == Mode.FALLBACK:
        raise ValueError(
            "Mode.FALLBACK is for kernel mappings only; kernelize with Mode.INFERENCE or Mode.TRAINING"
        )
    _check_combination(mode)
    if mode not in MODE_FALLBACK_ORDER:
        raise ValueError(
            f"kernelize mode {mode} must contain Mode.INFERENCE or Mode.TRAINING (optionally "
            f"| Mode.TORCH_COMPILE)"
        )
    return mode


class KernelizeFallback(Flag):
    """The cases in which ``kernelize`` keeps a layer's own forward instead of raising.

    ``use_fallback=True`` means :attr:`DEFAULT`, ``False`` means :attr:`NONE`. Only :attr:`CANNOT_LOAD`, a
    kernel that cannot be found or has no variant for this environment, is left out of the default: a mapping
    that names a kernel is expected to load.
    """

    NONE = 0
    NO_LAYER = 1  # no mapping entry for the layer name
    NO_DEVICE = 2  # entries, but none for this device type
    NO_COMPATIBLE_PROPERTIES = 4  # none for this device's capability
    NO_COMPATIBLE_MODE = 8  # none for the mode, or the kernel layer does not support it
    CANNOT_LOAD = 16  # the kernel could not be found or has no variant for this environment
    DEFAULT = NO_LAYER | NO_DEVICE | NO_COMPATIBLE_PROPERTIES | NO_COMPATIBLE_MODE
    ALL = DEFAULT | CANNOT_LOAD
