"""``kernel_builder.Benchmark``: the base class of benchmark classes, the form upstream's ``kernels`` uses.

A file ``benchmarks/benchmark*.py`` defines subclasses; ``kernel-builder bench`` runs each ``benchmark_<w>``
method as a workload, after ``setup_<w>`` (or ``setup``), and compares ``self.out`` with what ``verify_<w>``
returns (see ``docs/cli.md``). The class carries the same attributes as ``kernels.benchmark.Benchmark``, so a
file written for either runs under both, and a project need not install ``kernels`` to write one.

This module imports nothing: ``import kernel_builder`` and the CLI stay free of torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Benchmark"]


class Benchmark:
    """Subclass it; define ``setup`` (or ``setup_<w>``), ``benchmark_<w>`` and optionally ``verify_<w>``.

    The runner creates one instance per workload, sets :attr:`kernel` to the loaded kernel and :attr:`device`
    to the device it runs on, seeds torch and :mod:`random` with :attr:`seed` when that is set, then calls the
    setup. ``benchmark_<w>`` is what is timed; it writes its result to :attr:`out`, which the runner compares
    with the tensor ``verify_<w>`` returns.

    The setup may set ``self.bytes`` (what one ``benchmark_<w>`` call must read and write) and ``self.flops``
    (its floating-point operations); the table then gives GB/s and TFLOP/s. They are not class attributes, so
    the class keeps upstream's exact surface (upstream's runner ignores them). To keep small inputs out of the
    cache, the runner sets up more instances and cycles through them (see ``docs/cli.md``), so the setup
    should create everything a call touches.
    """

    #: Seeds ``torch.manual_seed`` and ``random.seed`` before the setup, when not ``None``.
    seed: int | None = None
    #: The torch device the workload runs on ("cpu", "cuda", ...); set by the runner.
    device: str = "cpu"

    def __init__(self) -> None:
        #: The kernel module under test; set by the runner before the setup.
        self.kernel: Any = None
        #: The workload's output, compared with what ``verify_<w>`` returns.
        self.out: Any = None

    def setup(self) -> None:
        """Create the inputs (and :attr:`out`) as attributes; used when there is no ``setup_<workload>``."""
