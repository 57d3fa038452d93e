"""Load a built example kernel through the kernel_builder loader and check it against torch on the CPU.

Usage: python examples/demo.py examples/relu   (after `kernel-builder build examples/relu`)
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

import kernel_builder


def main(kernel_root: str) -> int:
    build = Path(kernel_root) / "build"
    relu = kernel_builder.get_local_kernel(build, backend="cpu")
    x = torch.randn(4, 1000)
    y = relu.relu(x)
    ok = torch.equal(y, torch.relu(x))
    loaded = kernel_builder.get_loaded_kernels()[-1]
    print(f"loaded {loaded.metadata.name} as module {relu.__name__} from {build}")
    print(f"relu of a random 4x1000 tensor equals torch.relu: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "examples/relu"))
