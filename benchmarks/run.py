"""GPU bandwidth of the example kernels next to PyTorch's own ops and a device-to-device copy.

    python benchmarks/run.py [--sizes 1MiB,64MiB,1GiB] [--dtypes fp32,bf16] [--json PATH]

Loads examples/relu and examples/activation from their ``build/`` directories (build them first:
``kernel-builder build examples/relu --backend cuda``), then times, for each input size and dtype:

- ``relu`` against ``torch.relu``;
- ``gelu_tanh`` against ``torch.nn.functional.gelu(approximate="tanh")``;
- ``silu_and_mul`` (input ``[rows, 2 * 4096]``) against the unfused ``silu(x[..., :d]) * x[..., d:]``;

and ``out.copy_(x)`` of the same input, the ceiling for an op that reads and writes every byte once.
Bandwidth counts the bytes an op must move (input read plus output written), whatever it really moves.

Each timing is ``kernel_builder.authoring.timing.measure``, the timer of ``kernel-builder bench``: CUDA events;
a call under 100 µs is launch-bound, so a batch of calls is captured in a CUDA graph (``--eager`` never
captures), replayed ``--repeats`` times, and the median per call is kept; longer calls are timed one by one.
Unlike ``kernel-builder bench``, the inputs are not rotated: at 1 MiB they sit in the L2 cache. Outputs are
checked against the reference before timing.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from common import REPO, RESULTS, machine, table, use_repository, verdict, write_json

SIZES = {"1MiB": 1 << 20, "64MiB": 64 << 20, "1GiB": 1 << 30}
ROW = 2 * 4096  # silu_and_mul's input row: a typical MLP width
TARGET_RELU = 0.97  # × torch.relu at 1 GiB, fp32 and bf16
TARGET_COPY = 0.90  # × copy, the activation kernels at 1 GiB


@dataclass
class Result:
    op: str
    dtype: str
    size: str
    ms: float
    gbps: float
    reference: str
    reference_gbps: float
    vs_reference: float
    copy_gbps: float
    vs_copy: float


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--relu",
        type=Path,
        default=REPO / "examples" / "relu" / "build",
        help="build directory of examples/relu (default: %(default)s)",
    )
    parser.add_argument(
        "--activation",
        type=Path,
        default=REPO / "examples" / "activation" / "build",
        help="build directory of examples/activation (default: %(default)s)",
    )
    parser.add_argument("--sizes", default="1MiB,64MiB,1GiB", help="input sizes, of " + ", ".join(SIZES))
    parser.add_argument("--dtypes", default="fp32,bf16", help="of fp32, fp16, bf16")
    parser.add_argument("--repeats", type=int, default=15, help="timed samples per case; the median counts")
    parser.add_argument("--eager", action="store_true", help="never capture CUDA graphs: time plain calls")
    parser.add_argument("--json", type=Path, default=RESULTS / "run.json", help="where to write the results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("benchmarks/run.py needs torch with CUDA", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("benchmarks/run.py needs a visible CUDA GPU; none was found", file=sys.stderr)
        return 2
    use_repository()
    from kernel_builder import get_local_kernel

    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    try:
        sizes = {name: SIZES[name] for name in args.sizes.split(",")}
        chosen = {name: dtypes[name] for name in args.dtypes.split(",")}
    except KeyError as exc:
        print(
            f"unknown size or dtype {exc}; sizes: {', '.join(SIZES)}; dtypes: {', '.join(dtypes)}",
            file=sys.stderr,
        )
        return 2
    kernels = {}
    for name, path in (("relu", args.relu), ("activation", args.activation)):
        if not path.is_dir():
            print(
                f"{path} does not exist: build it first (kernel-builder build {path.parent} --backend cuda)",
                file=sys.stderr,
            )
            return 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a build of a work tree is "dirty"
            kernels[name] = get_local_kernel(path)

    timer = Timer(torch, repeats=args.repeats, graphs=not args.eager)
    results: list[Result] = []
    for size_name, nbytes in sizes.items():
        for dtype_name, dtype in chosen.items():
            results += measure_case(torch, timer, kernels, size_name, nbytes, dtype_name, dtype)
            torch.cuda.empty_cache()

    headers = ["op", "dtype", "size", "ms", "GB/s", "reference", "ref GB/s", "×ref", "copy GB/s", "×copy"]
    print(table(headers, [list(asdict(r).values()) for r in results]))
    targets = target_rows(results)
    print()
    print(table(["target", "measured", "verdict"], targets))
    props = torch.cuda.get_device_properties(0)
    write_json(args.json, {
        "machine": {**machine(), "gpu": props.name, "sms": props.multi_processor_count,
                    "torch": torch.__version__, "cuda": torch.version.cuda},
        "timing": "eager" if args.eager else "cuda-graph",
        "results": [asdict(r) for r in results],
        "targets": [{"target": t, "measured": m, "verdict": v} for t, m, v in targets],
    })  # fmt: skip
    return 0


class Timer:
    """Milliseconds per call of a function: ``kernel_builder.authoring.timing.measure`` (what
    ``kernel-builder bench`` times with), the median of ``repeats`` samples."""

    def __init__(self, torch: object, *, repeats: int, graphs: bool) -> None:
        self.repeats = repeats
        self.graphs = graphs

    def __call__(self, fn: Callable[[], object], estimate_ms: float) -> float:
        from kernel_builder.authoring.timing import measure

        # estimate_ms is unused: measure estimates the call itself, and graphs the launch-bound ones.
        return measure(fn, "cuda", warmup=3, runs=self.repeats, graphs=self.graphs).median_us / 1e3


def measure_case(torch, timer, kernels, size_name, nbytes, dtype_name, dtype) -> list[Result]:  # type: ignore[no-untyped-def]
    F = torch.nn.functional
    element = torch.tensor([], dtype=dtype).element_size()
    numel = nbytes // element
    x = torch.randn(numel, device="cuda", dtype=torch.float32).to(dtype) * 3
    out = torch.empty_like(x)
    # Copy: the ceiling (reads and writes nbytes).
    copy_ms = timer(lambda: out.copy_(x), estimate_ms=2 * nbytes / 2e9)
    copy_gbps = 2 * nbytes / copy_ms / 1e6

    rows = numel // ROW
    gated = x[: rows * ROW].view(rows, ROW)
    half = torch.empty((rows, ROW // 2), device="cuda", dtype=dtype)
    d = ROW // 2
    cases = [
        ("relu", lambda: kernels["relu"].relu(x, out=out), "torch.relu", lambda: torch.relu(x),
         2 * nbytes, lambda: torch.equal(kernels["relu"].relu(x), torch.relu(x))),
        ("gelu_tanh", lambda: kernels["activation"].gelu_tanh(x, out=out), "F.gelu(tanh)",
         lambda: F.gelu(x, approximate="tanh"), 2 * nbytes,
         lambda: _close(torch, kernels["activation"].gelu_tanh(x), F.gelu(x.float(), approximate="tanh"))),
        ("silu_and_mul", lambda: kernels["activation"].silu_and_mul(gated, out=half), "silu(a)*b",
         lambda: F.silu(gated[:, :d]) * gated[:, d:], gated.numel() * element * 3 // 2,
         lambda: _close(torch, kernels["activation"].silu_and_mul(gated),
                        F.silu(gated[:, :d].float()) * gated[:, d:].float())),
    ]  # fmt: skip
    results = []
    for op, fn, ref_name, ref_fn, moved, check in cases:
        if not check():
            raise SystemExit(f"{op} {dtype_name} {size_name}: the output differs from the reference")
        ms = timer(fn, estimate_ms=moved / 2e9)
        ref_ms = timer(ref_fn, estimate_ms=moved / 2e9)
        gbps, ref_gbps = moved / ms / 1e6, moved / ref_ms / 1e6
        results.append(Result(op, dtype_name, size_name, ms, gbps, ref_name, ref_gbps, gbps / ref_gbps,
                              copy_gbps, gbps / copy_gbps))  # fmt: skip
        print(f"  {op:13} {dtype_name} {size_name:>6}: {gbps:8.1f} GB/s ({ref_name} {ref_gbps:.1f}, copy {copy_gbps:.1f})",
              file=sys.stderr, flush=True)  # fmt: skip
    return results


def _close(torch, actual, expected) -> bool:  # type: ignore[no-untyped-def]
    tolerance = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[actual.dtype]
    return bool(torch.allclose(actual.float(), expected.float(), rtol=tolerance, atol=tolerance))


def target_rows(results: list[Result]) -> list[list[object]]:
    by_key = {(r.op, r.dtype, r.size): r for r in results}
    rows: list[list[object]] = []
    for dtype in ("fp32", "bf16"):
        r = by_key.get(("relu", dtype, "1GiB"))
        value = r.vs_reference if r else None
        rows.append(
            [
                f"relu ≥ {TARGET_RELU}× torch.relu, 1 GiB {dtype}",
                value,
                verdict(value, TARGET_RELU, at_most=False),
            ]
        )
    for op in ("gelu_tanh", "silu_and_mul"):
        for dtype in ("fp32", "bf16"):
            r = by_key.get((op, dtype, "1GiB"))
            value = r.vs_copy if r else None
            rows.append(
                [
                    f"{op} ≥ {TARGET_COPY}× copy, 1 GiB {dtype}",
                    value,
                    verdict(value, TARGET_COPY, at_most=False),
                ]
            )
    return rows


if __name__ == "__main__":
    sys.exit(main())
