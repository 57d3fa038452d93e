"""kernel_builder.Benchmark: the same attributes, defaults and methods as upstream's kernels.benchmark.Benchmark,
so that a benchmark file runs with either base class."""

from __future__ import annotations

import inspect

import pytest

from kernel_builder.authoring.benchmark import Benchmark


def test_defaults_of_a_fresh_instance() -> None:
    bench = Benchmark()
    bench.setup()  # does nothing
    assert (bench.seed, bench.device, bench.kernel, bench.out) == (None, "cpu", None, None)


def test_a_subclass_keeps_its_class_attributes_and_own_setup() -> None:
    class Mine(Benchmark):
        seed = 3

        def setup(self) -> None:
            self.x = [1, 2]

    mine = Mine()
    mine.setup()
    assert mine.seed == 3 and mine.x == [1, 2] and Benchmark.seed is None


def test_same_public_surface_as_upstream() -> None:
    upstream = pytest.importorskip("kernels.benchmark").Benchmark

    def surface(cls: type) -> dict[str, object]:
        names = {n for n in vars(cls) if not n.startswith("_")} | set(vars(cls()))
        return {
            n: getattr(cls(), n) if not callable(getattr(cls, n, None)) else "method" for n in sorted(names)
        }

    assert surface(Benchmark) == surface(upstream)
    for method in ("__init__", "setup"):
        ours, theirs = (
            inspect.signature(getattr(Benchmark, method)),
            inspect.signature(getattr(upstream, method)),
        )
        assert list(ours.parameters) == list(theirs.parameters) == ["self"]
