"""Load a built example kernel the way users do and check it against torch on the CPU.

``get_kernel("kernel-builder-examples/relu", version=1)`` normally downloads from the Hugging Face Hub; the
``LOCAL_KERNELS`` override maps that repo id to the local kernel directory, so the demo runs offline on what
``kernel-builder build`` just produced.

Usage: python examples/demo.py examples/relu   (after `kernel-builder build examples/relu`)
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import torch

import kernel_builder

REPO_ID = "kernel-builder-examples/relu"


def main(kernel_root: str) -> int:
    root = Path(kernel_root).absolute()
    os.environ["LOCAL_KERNELS"] = f"{REPO_ID}={root}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a demo build of a work tree is "dirty"
        relu = kernel_builder.get_kernel(REPO_ID, version=1, backend="cpu")
    x = torch.randn(4, 1000)
    ok = torch.equal(relu.relu(x), torch.relu(x))
    loaded = kernel_builder.get_loaded_kernels()[-1]
    print(f'get_kernel("{REPO_ID}", version=1) loaded {loaded.metadata.name} as module {relu.__name__}')
    print(f"  from {root / 'build'} (LOCAL_KERNELS)")
    print(f"relu of a random 4x1000 tensor equals torch.relu: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "examples/relu"))
