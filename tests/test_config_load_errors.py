"""Malformed build.toml files: every rule of docs/build-toml.md and the cases about errors.

Each case asserts the complete output, every line of it with its position and hint, and that
``kernel-builder check-config`` prints exactly that on stderr and exits 2 without a traceback. Projects are
written by ``make_project`` with every listed file present, so each case is about its one problem only.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Collection
from pathlib import Path

import matrix_data as md
import pytest
from _pytest.mark.structures import ParameterSet
from conftest import Diagnose, MakeProject, render

from kernel_builder.cli import main
from kernel_builder.config import load as config_load
from kernel_builder.config import load_project
from kernel_builder.formats.matrix import Matrix, load_matrix

# An edition-5 file with one CUDA kernel; cases append lines to [kernel.gelu] from line 15 on.
K = """\
[general]
name = "gelu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gelu]
backend = "cuda"
depends = ["torch"]
src = ["gelu/gelu.cu"]
"""

# A v1 file: no backends, kernels with `language`.
V1 = """\
[general]
name = "gelu"

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gelu]
language = "cuda-hipify"
src = ["gelu/gelu.cu"]
depends = ["torch"]
"""

# A v2 file: kernels with `backend`, no `backends`.
V2 = """\
[general]
name = "gelu"
universal = true

[kernel.gelu]
backend = "cuda"
src = ["gelu/gelu.cu"]
depends = ["torch"]
"""

NOARCH = """\
[general]
name = "gelu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch-noarch]
"""


def rocm(text: str) -> str:
    return text.replace('backends = ["cuda"]', 'backends = ["rocm"]').replace(
        'backend = "cuda"', 'backend = "rocm"'
    )


def cpu(text: str) -> str:
    text = text.replace('backends = ["cuda"]', 'backends = ["cpu"]').replace(
        'backend = "cuda"', 'backend = "cpu"'
    )
    return text.replace("gelu.cu", "gelu.cpp")


def general(extra: str) -> str:
    """``K`` with ``extra`` lines in [general] from line 7 on."""
    return K.replace('backends = ["cuda"]\n', 'backends = ["cuda"]\n' + extra)


def legacy(form: int, trait: str) -> str:
    return (
        f"kernel/build.toml: warning: legacy v{form} form ({trait}); upgraded to edition 5 in memory. "
        "Run 'kernel-builder update-build kernel' to rewrite the file.\n"
    )


LEGACY_V1 = legacy(1, "kernel sections have no 'backend' and [general] has no 'backends'")
LEGACY_V2 = legacy(2, "kernel sections have 'backend' but [general] has no 'backends'")
LEGACY_V4 = legacy(4, "'backends', 'version', 'license' and [torch] without 'edition'")
NOASSERTION = (
    'kernel/build.toml:1: warning: no `license`: metadata will carry "NOASSERTION"\n'
    '  hint: add `license = "<SPDX id>"` to [general] (or run `kernel-builder update-build --license <id>`)\n'
)


def case(
    name: str, text: str, expected: str, *, skip: Collection[str] = (), init: bool = True
) -> ParameterSet:
    return pytest.param(text, expected, skip, init, id=name)


# The supported capability span per CUDA version: capabilities.py's default lists (each applies from its CUDA
# version on), not the matrix's data.
CAPABILITY_SPANS = {(0, 0): "7.0 … 9.0", (12, 8): "7.0 … 12.0", (13, 0): "7.5 … 12.1"}
E20_HINT = "  hint: fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel"


def no_capability_builds(requested: str) -> str:
    """E20 for every CUDA version of the packaged matrix: an error where a required entry has it, else a warning."""
    lines = []
    for cuda in md.cuda_versions(system=None):
        span = CAPABILITY_SPANS[max(v for v in CAPABILITY_SPANS if v <= cuda)]
        message = (
            f"kernel/build.toml:11: {{}}: [kernel.gelu]: none of the requested capabilities ({requested}) can be "
            f"built with CUDA {md.dotted(cuda)} (supported: {span})"
        )
        if md.is_required("cuda", cuda=cuda):
            lines.append(message.format("error"))
        else:
            lines.append(message.format("warning") + "; those optional variants are not buildable")
        lines.append(E20_HINT)
    return "\n".join(lines)


CASES = [
    case(
        "E2-bare-value",
        K.replace('backend = "cuda"', "backend = cuda"),
        "kernel/build.toml:12:11: error: invalid TOML: Invalid value\n"
        "  hint: fix the TOML syntax at this position",
    ),
    case(
        "E2-unclosed-header",
        K.replace("[kernel.gelu]", "[kernel.gelu"),
        "kernel/build.toml:11:13: error: invalid TOML: Expected ']' at the end of a table declaration\n"
        "  hint: fix the TOML syntax at this position",
    ),
    case(
        "E3-cuda_flags",
        K + 'cuda_flags = ["-O3"]\n',
        "kernel/build.toml:15: error: unknown key `cuda_flags` in [kernel.gelu]\n"
        "  hint: did you mean `cuda-flags`?",
    ),
    case(
        "E3-srcs",
        K.replace('src = ["gelu/gelu.cu"]', 'srcs = ["gelu/gelu.cu"]'),
        "kernel/build.toml:11: error: [kernel.gelu] is missing required key `src`\n"
        '  hint: add `src = ["gelu/gelu.cu"]` (the files to compile and the headers they use)\n'
        "kernel/build.toml:14: error: unknown key `srcs` in [kernel.gelu]\n"
        "  hint: did you mean `src`?",
    ),
    case(
        "E3-dependencies",
        K.replace('depends = ["torch"]', 'dependencies = ["torch"]'),
        "kernel/build.toml:11: error: [kernel.gelu] is missing required key `depends`\n"
        '  hint: add `depends = []` (or `depends = ["torch"]`)\n'
        "kernel/build.toml:13: error: unknown key `dependencies` in [kernel.gelu]\n"
        "  hint: did you mean `depends`?",
    ),
    case(
        "E3-kernels-table",
        K.replace("[kernel.gelu]", "[kernels.gelu]"),
        "kernel/build.toml:11: error: unknown table `[kernels.gelu]`\n  hint: did you mean `[kernel.gelu]`?",
    ),
    case(
        "E3-backends-CUDA",
        K.replace('backends = ["cuda"]', 'backends = ["CUDA"]'),
        "kernel/build.toml:6: error: unknown backend `CUDA` in `backends`\n  hint: did you mean `cuda`?",
    ),
    case(
        "E3-cutlass_3_7",
        K.replace('depends = ["torch"]', 'depends = ["torch", "cutlass_3_7"]'),
        "kernel/build.toml:13: error: unknown dependency `cutlass_3_7` in `depends`\n"
        "  hint: did you mean `cutlass_3_6` or `cutlass_3_8`?",
    ),
    case(
        "E3-torch_noarch",
        NOARCH.replace("[torch-noarch]", "[torch_noarch]"),
        "kernel/build.toml:1: error: no framework table\n"
        "  hint: add `[torch]` (compiled) or `[torch-noarch]` (pure Python)\n"
        "kernel/build.toml:8: error: unknown table `[torch_noarch]`\n"
        "  hint: did you mean `[torch-noarch]`?",
    ),
    case(
        "E3-Cuda-Capabilities",
        K + 'Cuda-Capabilities = ["8.0"]\n',
        "kernel/build.toml:15: error: unknown key `Cuda-Capabilities` in [kernel.gelu]\n"
        "  hint: did you mean `cuda-capabilities`?",
    ),
    case(
        "E3-capabilities-alias",
        K + 'capabilities = ["8.0"]\n',
        "kernel/build.toml:15: error: unknown key `capabilities` in [kernel.gelu]\n"
        "  hint: did you mean `cuda-capabilities`?",
    ),
    case(
        "E3-archs-on-rocm",
        rocm(K) + 'archs = ["gfx90a"]\n',
        "kernel/build.toml:15: error: unknown key `archs` in [kernel.gelu]\n"
        "  hint: did you mean `rocm-archs`?",
    ),
    case(
        "E3-includes",
        K + 'includes = ["gelu"]\n',
        "kernel/build.toml:15: error: unknown key `includes` in [kernel.gelu]\n"
        "  hint: did you mean `include`?",
    ),
    case(
        "E3-close-key",
        K + 'cuda-flag = ["-O3"]\n',
        "kernel/build.toml:15: error: unknown key `cuda-flag` in [kernel.gelu]\n"
        "  hint: did you mean `cuda-flags`?",
    ),
    case(
        "E3-universal-in-v5",
        K.replace("[torch]\n", "[torch]\nuniversal = false\n"),
        "kernel/build.toml:9: error: unknown key `universal` in [torch]\n"
        "  hint: `universal` was removed in edition 5: use a `[torch-noarch]` table for a pure-Python kernel",
    ),
    case(
        "E3-language-in-v5",
        K + 'language = "cuda"\n',
        "kernel/build.toml:15: error: unknown key `language` in [kernel.gelu]\n"
        '  hint: `language` was removed in edition 5: use `backend = "cuda"` (or "metal", "rocm")',
    ),
    case(
        "E3-general-cuda-minver-in-v5",
        general('cuda-minver = "12.6"\n'),
        "kernel/build.toml:7: error: unknown key `cuda-minver` in [general]\n"
        "  hint: `[general] cuda-minver` became `minver` in a `[general.cuda]` table",
    ),
    case(
        "E3-top-level-key",
        'license = "MIT"\n' + K,
        "kernel/build.toml:1: error: unknown top-level key `license`\n"
        "  hint: top-level keys belong in a table such as [general]",
    ),
    case(
        "E3-general-cpu-table",
        K.replace("[torch]", "[general.cpu]\npython-depends = []\n\n[torch]"),
        "kernel/build.toml:8: error: unknown table `[general.cpu]`\n"
        "  hint: there is no `[general.cpu]` table; only cuda, xpu, neuron and tpu have one",
    ),
    case(
        "E3-xpu-minver",
        K.replace("[torch]", '[general.xpu]\nminver = "2025.3"\n\n[torch]'),
        "kernel/build.toml:9: error: unknown key `minver` in [general.xpu]\n"
        "  hint: `minver` belongs in `[torch]` or `[general.cuda]`",
    ),
    case(
        "E3-hub-key",
        K.replace("[torch]", '[general.hub]\nrepo = "my-org/gelu"\n\n[torch]'),
        "kernel/build.toml:9: error: unknown key `repo` in [general.hub]\n  hint: did you mean `repo-id`?",
    ),
    case(
        "E3-kernel-backend",
        K.replace('backend = "cuda"', 'backend = "cuda12"'),
        "kernel/build.toml:12: error: unknown backend `cuda12` in [kernel.gelu]\n"
        "  hint: did you mean `cuda`?",
    ),
    case(
        "E3-depends-value",
        K.replace('depends = ["torch"]', 'depends = ["pytorch"]'),
        "kernel/build.toml:13: error: unknown dependency `pytorch` in `depends`\n"
        "  hint: did you mean `torch`?",
    ),
    case(
        "E3-kernel-backend-neuron",
        K.replace('backend = "cuda"', 'backend = "neuron"'),
        "kernel/build.toml:12: error: backend `neuron` has no compiled form: kernel sections cannot use it\n"
        "  hint: ship neuron code as Python in the package; list `neuron` only in `general.backends`",
    ),
    case(
        "E3-caps-in-torch",
        K.replace("[torch]\n", '[torch]\ncuda-capabilities = ["8.0"]\n'),
        "kernel/build.toml:9: error: unknown key `cuda-capabilities` in [torch]\n"
        '  hint: `cuda-capabilities` belongs in a `[kernel.<name>]` section with `backend = "cuda"`',
    ),
    case(
        "E15-cuda-flags-on-rocm",
        rocm(K) + 'cuda-flags = ["-O3"]\n',
        'kernel/build.toml:15: error: `cuda-flags` is only valid with `backend = "cuda"`\n'
        '  hint: `cuda-flags` belongs in a `[kernel.<name>]` section with `backend = "cuda"`',
    ),
    case(
        "E15-sycl-flags-on-cuda",
        K + 'sycl-flags = ["-O3"]\n',
        'kernel/build.toml:15: error: `sycl-flags` is only valid with `backend = "xpu"`\n'
        '  hint: `sycl-flags` belongs in a `[kernel.<name>]` section with `backend = "xpu"`',
    ),
    case(
        "E15-cuda-minver-on-cpu",
        cpu(K) + 'cuda-minver = "12.8"\n',
        'kernel/build.toml:15: error: `cuda-minver` is only valid with `backend = "cuda"`\n'
        '  hint: `cuda-minver` belongs in a `[kernel.<name>]` section with `backend = "cuda"`',
    ),
    case(
        "E3-v1-language",
        V1.replace('"cuda-hipify"', '"hip"'),
        LEGACY_V1 + NOASSERTION + 'kernel/build.toml:8: error: unknown `language = "hip"`\n'
        '  hint: use "cuda", "cuda-hipify" or "metal"',
    ),
    case(
        "E3-lowercase-key-in-general",
        general('Python-Depends = ["einops"]\n'),
        "kernel/build.toml:7: error: unknown key `Python-Depends` in [general]\n"
        "  hint: did you mean `python-depends`?",
    ),
    case(
        "E4-version-string-v5",
        K.replace("version = 1", 'version = "1"'),
        "kernel/build.toml:3: error: [general] `version` must be an integer, not a string\n"
        "  hint: write `version = 1`",
    ),
    case(
        "E4-capabilities-string",
        K + 'cuda-capabilities = "8.0"\n',
        "kernel/build.toml:15: error: [kernel.gelu] `cuda-capabilities` must be an array of strings, not a string\n"
        '  hint: write `cuda-capabilities = ["8.0", "9.0"]`',
    ),
    case(
        "E4-capability-float",
        K + "cuda-capabilities = [8.0]\n",
        "kernel/build.toml:15: error: [kernel.gelu] `cuda-capabilities` must hold strings, but element 1 is a float\n"
        '  hint: quote it: `"8.0"`',
    ),
    case(
        "E4-backends-string",
        K.replace('backends = ["cuda"]', 'backends = "cuda"'),
        "kernel/build.toml:6: error: [general] `backends` must be an array of strings, not a string\n"
        '  hint: write `backends = ["cpu", "cuda"]`',
    ),
    case(
        "E4-edition-string",
        K.replace("edition = 5", 'edition = "5"'),
        "kernel/build.toml:4: error: `edition` must be an integer, not a string\n  hint: write `edition = 5`",
    ),
    case(
        "E4-stable-abi-float",
        K.replace("[torch]\n", "[torch]\nstable-abi = 2.11\n"),
        "kernel/build.toml:9: error: `stable-abi` must be a version string or a table of backend = version\n"
        '  hint: write `stable-abi = "2.11"` or `stable-abi = { cuda = "2.11" }`',
    ),
    case(
        "E4-general-not-a-table",
        'general = "gelu"\n\n[torch]\n',
        "kernel/build.toml:1: error: `general` must be a table\n  hint: write it as a `[general]` table",
    ),
    case(
        "E4-depends-element",
        K.replace('depends = ["torch"]', 'depends = ["torch", 3]'),
        "kernel/build.toml:13: error: [kernel.gelu] `depends` must hold strings, but element 2 is an integer\n"
        '  hint: quote it: `"3"`',
    ),
    case(
        "E5-general-keys",
        K.replace('name = "gelu"\n', "").replace("version = 1\n", "").replace('license = "Apache-2.0"\n', ""),
        "kernel/build.toml:1: error: [general] is missing required key `name`\n"
        '  hint: add `name = "my-kernel"`\n'
        "kernel/build.toml:1: error: [general] is missing required key `version`\n"
        "  hint: add `version = 1` (the major version of the kernel's API)\n"
        "kernel/build.toml:1: error: [general] is missing required key `license`\n"
        '  hint: add `license = "Apache-2.0"` (an SPDX identifier)',
    ),
    case(
        "E5-backends",
        K.replace('backends = ["cuda"]\n', ""),
        "kernel/build.toml:1: error: [general] is missing required key `backends`\n"
        '  hint: add `backends = ["cuda"]`',
    ),
    case(
        "E5-depends",
        K.replace('depends = ["torch"]\n', ""),
        "kernel/build.toml:11: error: [kernel.gelu] is missing required key `depends`\n"
        '  hint: add `depends = []` (or `depends = ["torch"]`)',
    ),
    case(
        "E5-backend",
        K.replace('backend = "cuda"\n', ""),
        "kernel/build.toml:11: error: [kernel.gelu] is missing required key `backend`\n"
        '  hint: add `backend = "cuda"` (one of cpu, cuda, metal, rocm, xpu)',
    ),
    case(
        "E5-src",
        K.replace('src = ["gelu/gelu.cu"]\n', ""),
        "kernel/build.toml:11: error: [kernel.gelu] is missing required key `src`\n"
        '  hint: add `src = ["gelu/gelu.cu"]` (the files to compile and the headers they use)',
    ),
    case(
        "E5-no-general",
        K.replace(
            '[general]\nname = "gelu"\nversion = 1\nedition = 5\nlicense = "Apache-2.0"\nbackends = ["cuda"]\n\n',
            "",
        ),
        "kernel/build.toml: error: missing required table `[general]`\n"
        "  hint: add a `[general]` table with `name`",
    ),
    case(
        "E6-my_kernel",
        K.replace('name = "gelu"', 'name = "my_kernel"'),
        "kernel/build.toml:2: error: invalid kernel name `my_kernel`\n"
        "  hint: did you mean `my-kernel`? (the Python package name becomes `my_kernel`)",
    ),
    case(
        "E6-MyKernel",
        K.replace('name = "gelu"', 'name = "MyKernel"'),
        "kernel/build.toml:2: error: invalid kernel name `MyKernel`\n"
        "  hint: did you mean `mykernel`? (the Python package name becomes `mykernel`)",
    ),
    case(
        "E6-a",
        K.replace('name = "gelu"', 'name = "a"'),
        "kernel/build.toml:2: error: invalid kernel name `a`\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E6-my-kernel-",
        K.replace('name = "gelu"', 'name = "my-kernel-"'),
        "kernel/build.toml:2: error: invalid kernel name `my-kernel-`\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E6--my-kernel",
        K.replace('name = "gelu"', 'name = "-my-kernel"'),
        "kernel/build.toml:2: error: invalid kernel name `-my-kernel`\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E6-1kernel",
        K.replace('name = "gelu"', 'name = "1kernel"'),
        "kernel/build.toml:2: error: invalid kernel name `1kernel`\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E6-empty",
        K.replace('name = "gelu"', 'name = ""'),
        "kernel/build.toml:2: error: `name` is empty\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E6-v4-1kernel",
        K.replace("edition = 5\n", "").replace('name = "gelu"', 'name = "1kernel"'),
        LEGACY_V4 + "kernel/build.toml:2: error: invalid kernel name `1kernel`\n"
        "  hint: a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit",
    ),
    case(
        "E7-float-minver",
        K.replace("[torch]", "[general.cuda]\nminver = 12.6\n\n[torch]"),
        "kernel/build.toml:9: error: [general.cuda] `minver` must be a version string, not a float\n"
        '  hint: quote it: `minver = "12.6"`',
    ),
    case(
        "E7-bad-version",
        K.replace("[torch]\n", '[torch]\nmaxver = "2.x"\n'),
        "kernel/build.toml:9: error: invalid version `2.x` for [torch] `maxver`\n"
        '  hint: a version is dot-separated numbers, e.g. "12.6" or "2.12"',
    ),
    case(
        "E7-minver-above-maxver",
        K.replace("[torch]", '[general.cuda]\nminver = "13.0"\nmaxver = "12.6"\n\n[torch]'),
        "kernel/build.toml:9: error: `minver` (13.0) is greater than `maxver` (12.6) in [general.cuda]\n"
        "  hint: swap them, or remove one bound",
    ),
    case(
        "E8-sm_80",
        K + 'cuda-capabilities = ["sm_80"]\n',
        "kernel/build.toml:15: error: invalid CUDA capability `sm_80` in [kernel.gelu] `cuda-capabilities`\n"
        "  hint: write `8.0`",
    ),
    case(
        "E8-8",
        K + 'cuda-capabilities = ["8"]\n',
        "kernel/build.toml:15: error: invalid CUDA capability `8` in [kernel.gelu] `cuda-capabilities`\n"
        "  hint: write `8.0`",
    ),
    case(
        "E8-9.0A",
        K + 'cuda-capabilities = ["9.0A"]\n',
        "kernel/build.toml:15: error: invalid CUDA capability `9.0A` in [kernel.gelu] `cuda-capabilities`\n"
        "  hint: write `9.0a`",
    ),
    case(
        "E8-8.0+ptx",
        K + 'cuda-capabilities = ["8.0+ptx"]\n',
        "kernel/build.toml:15: error: invalid CUDA capability `8.0+ptx` in [kernel.gelu] `cuda-capabilities`\n"
        "  hint: write `8.0+PTX`",
    ),
    case(
        "E8-two-suffixes",
        K + 'cuda-capabilities = ["10.0a", "10.0f"]\n',
        "kernel/build.toml:15: error: two suffixes on capability 10.0: `a` and `f`\n"
        "  hint: keep one of `10.0a` and `10.0f`",
    ),
    case(
        "E8-rocm-feature-suffix",
        rocm(K) + 'rocm-archs = ["gfx90a:xnack+"]\n',
        "kernel/build.toml:15: error: invalid ROCm arch `gfx90a:xnack+` in [kernel.gelu] `rocm-archs`\n"
        "  hint: feature suffixes are not supported: write `gfx90a`",
    ),
    case(
        "E9-no-framework",
        K.replace('[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n', ""),
        "kernel/build.toml:1: error: no framework table\n"
        "  hint: add `[torch]` (compiled) or `[torch-noarch]` (pure Python)",
    ),
    case(
        "E9-two-frameworks",
        K.replace("[kernel.gelu]", "[torch-noarch]\n\n[kernel.gelu]"),
        "kernel/build.toml:11: error: more than one framework table ([torch], [torch-noarch])\n"
        "  hint: keep one",
    ),
    case(
        "E10-edition-4",
        K.replace("edition = 5", "edition = 4"),
        "kernel/build.toml:4: error: there is no edition 4\n"
        "  hint: files before edition 5 have no `edition` key: remove it to read the file as v4, or set `edition = 5`",
    ),
    case(
        "E10-edition-6",
        K.replace("edition = 5", "edition = 6"),
        "kernel/build.toml:4: error: edition 6 is newer than this kernel-builder supports (5)\n"
        "  hint: upgrade kernel-builder",
    ),
    case(
        "E10-kernel-depends-without-edition",
        K.replace("edition = 5\n", 'kernel-depends = [{ repo-id = "my-org/activation", version = 1 }]\n'),
        "kernel/build.toml:4: error: uses edition-5 features (`kernel-depends`) but lacks `edition = 5`\n"
        "  hint: add `edition = 5` to [general]",
    ),
    case(
        "E10-kernel-depends-v2",
        V2.replace(
            "universal = true\n", 'kernel-depends = [{ repo-id = "my-org/activation", version = 1 }]\n'
        ),
        "kernel/build.toml:3: error: uses edition-5 features (`kernel-depends`) but lacks `edition = 5`\n"
        "  hint: add `edition = 5` to [general]",
    ),
    case(
        "E10-tpu-without-edition",
        K.replace("edition = 5\n", "").replace("[torch]", "[general.tpu]\n\n[torch]"),
        "kernel/build.toml:7: error: uses edition-5 features (`[general.tpu]`) but lacks `edition = 5`\n"
        "  hint: add `edition = 5` to [general]",
    ),
    case(
        "E10-v4-trait-without-backends",
        V1.replace("[torch]\n", '[torch]\ncxx-flags = ["-O3"]\n'),
        "kernel/build.toml:1: error: `general.backends` is missing (required since v3; this file uses "
        "`torch.cxx-flags`)\n"
        '  hint: add `backends = ["cuda", "rocm"]` to [general]',
    ),
    case(
        "E10-mixed-v1-v2",
        V1.replace('name = "gelu"\n', 'name = "gelu"\nuniversal = false\n'),
        "kernel/build.toml:9: error: mixes v1 and v2 traits: [kernel.gelu] has `language` (v1) and `general.universal` (v2)\n"
        "  hint: a file is read as one form: use `backend` in every kernel section (v2), or run `kernel-builder update-build` on a consistent v1 file",
    ),
    case(
        "E10-cuda-table-without-backends",
        """[general]
name = "gelu"

[general.cuda]
minver = "12.6"

[torch]
src = []

[kernel.gelu]
language = "cuda-hipify"
src = ["gelu/gelu.cu"]
depends = ["torch"]

[kernel.gelu_metal]
language = "metal"
src = ["gelu/gelu.metal"]
depends = ["torch"]
""",
        "kernel/build.toml:1: error: `general.backends` is missing (required since v3; this file uses `[general.cuda]`)\n"
        '  hint: add `backends = ["cuda", "metal", "rocm"]` to [general]',
    ),
    case(
        "E10-extension",
        '[general]\nname = "gelu"\n\n[extension]\nsrc = ["torch-ext/torch_binding.cpp"]\n',
        "kernel/build.toml:4: error: pre-release build.toml format, not supported; see update-build\n"
        "  hint: rename `[extension]` to `[torch]` and add `[general] name`",
    ),
    case(
        "E10-torch-name",
        '[general]\nname = "gelu"\n\n[torch]\nname = "gelu"\nsrc = ["torch-ext/torch_binding.cpp"]\n',
        "kernel/build.toml:5: error: pre-release build.toml format, not supported; see update-build\n"
        "  hint: `[torch] name` is a pre-release trait: move the name to `[general] name`, list Python files in `torch-ext/<name>/`, and write the file in the current form",
    ),
    case(
        "E10-torch-pysrc",
        '[general]\nname = "gelu"\n\n[torch]\npysrc = ["torch-ext/gelu/__init__.py"]\n',
        "kernel/build.toml:5: error: pre-release build.toml format, not supported; see update-build\n"
        "  hint: `[torch] pysrc` is a pre-release trait: move the name to `[general] name`, list Python files in `torch-ext/<name>/`, and write the file in the current form",
    ),
    case(
        "E10-torch-pyroot",
        '[general]\nname = "gelu"\n\n[torch]\npyroot = "torch-ext"\n',
        "kernel/build.toml:5: error: pre-release build.toml format, not supported; see update-build\n"
        "  hint: `[torch] pyroot` is a pre-release trait: move the name to `[general] name`, list Python files in `torch-ext/<name>/`, and write the file in the current form",
    ),
    case(
        "E10-version-string",
        '[general]\nname = "gelu"\nversion = "0.0.1"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n',
        "kernel/build.toml:3: error: pre-release build.toml format, not supported; see update-build\n"
        '  hint: `version = "0.0.1"` is a pre-release trait: the version is now an integer major version (`version = 1`)',
    ),
    case(
        "E11-empty-backends",
        K.replace('backends = ["cuda"]', "backends = []"),
        "kernel/build.toml:6: error: `backends` is empty\n"
        '  hint: list at least one backend, e.g. `backends = ["cuda"]`',
    ),
    case(
        "E11-v1-without-kernels",
        '[general]\nname = "gelu"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n',
        LEGACY_V1
        + NOASSERTION
        + "kernel/build.toml:1: error: no backends: the file has no kernel sections to derive `backends` from\n"
        '  hint: add `backends = ["cuda"]` (the backends this kernel supports) and `edition = 5` to [general]',
    ),
    case(
        "E12-missing-src",
        K,
        "kernel/build.toml:14: error: source file `gelu/gelu.cu` in [kernel.gelu] `src` does not exist\n"
        "  hint: looked for kernel/gelu/gelu.cu; list each file explicitly, relative to the kernel root",
        skip=("gelu/gelu.cu",),
    ),
    case(
        "E12-absolute",
        K.replace('"gelu/gelu.cu"', '"/opt/gelu/gelu.cu"'),
        "kernel/build.toml:14: error: absolute path `/opt/gelu/gelu.cu` in [kernel.gelu] `src`\n"
        "  hint: paths are relative to the directory of build.toml",
    ),
    case(
        "E12-leaves-root",
        K.replace('"gelu/gelu.cu"', '"../x.cu"'),
        "kernel/build.toml:14: error: path `../x.cu` in [kernel.gelu] `src` leaves the kernel root\n"
        "  hint: keep every source inside the directory that holds build.toml",
    ),
    case(
        "E12-glob",
        K.replace('"gelu/gelu.cu"', '"*.cu"'),
        "kernel/build.toml:14: error: path `*.cu` in [kernel.gelu] `src` contains a glob character\n"
        "  hint: globs are never expanded: list each file explicitly",
    ),
    case(
        "E12-backslash",
        K.replace('"gelu/gelu.cu"', '"gelu\\\\gelu.cu"'),
        "kernel/build.toml:14: error: path `gelu\\gelu.cu` in [kernel.gelu] `src` uses `\\`\n"
        "  hint: use `/` as separator: `gelu/gelu.cu`",
    ),
    case(
        "E12-include-missing",
        K + 'include = ["gelu/include"]\n',
        "kernel/build.toml:15: error: include directory `gelu/include` in [kernel.gelu] `include` does not exist\n"
        "  hint: looked for kernel/gelu/include",
        skip=("gelu/include",),
    ),
    case(
        "E12-src-is-directory",
        K.replace('src = ["torch-ext/torch_binding.cpp"]', 'src = ["torch-ext/gelu"]'),
        "kernel/build.toml:9: error: source file `torch-ext/gelu` in [torch] `src` is not a regular file\n"
        "  hint: looked for kernel/torch-ext/gelu; list each file explicitly, relative to the kernel root",
    ),
    case(
        "E13-no-init",
        K,
        "kernel/build.toml:2: error: the kernel's Python package `torch-ext/gelu/__init__.py` is missing\n"
        "  hint: create torch-ext/gelu/__init__.py (the package users import; its name comes from `name`)",
        init=False,
    ),
    case(
        "E14-cu-in-cpu",
        cpu(K).replace('"gelu/gelu.cpp"', '"gelu/gelu.cpp", "gelu/gelu.cu"'),
        "kernel/build.toml:14: error: `gelu/gelu.cu` cannot be compiled by a `cpu` kernel ([kernel.gelu])\n"
        '  hint: move it to a kernel section with `backend = "cuda"` or `backend = "rocm"`',
    ),
    case(
        "E14-hip-in-cuda",
        K.replace('"gelu/gelu.cu"', '"gelu/gelu.hip"'),
        "kernel/build.toml:14: error: `gelu/gelu.hip` cannot be compiled by a `cuda` kernel ([kernel.gelu])\n"
        '  hint: move it to a kernel section with `backend = "rocm"`',
    ),
    case(
        "E16-both",
        general('kernel-depends = [{ repo-id = "my-org/act", version = 1, revision = "main" }]\n'),
        "kernel/build.toml:7: error: `kernel-depends` entry `my-org/act` has both of `version` and `revision`\n"
        '  hint: give exactly one: `kernel-depends = [{ repo-id = "org/name", version = 1 }]` or `{ repo-id = "org/name", revision = "main" }`',
    ),
    case(
        "E16-neither",
        general('kernel-depends = [{ repo-id = "my-org/act" }]\n'),
        "kernel/build.toml:7: error: `kernel-depends` entry `my-org/act` has neither of `version` and `revision`\n"
        '  hint: give exactly one: `kernel-depends = [{ repo-id = "org/name", version = 1 }]` or `{ repo-id = "org/name", revision = "main" }`',
    ),
    case(
        "E16-version-string",
        general('kernel-depends = [{ repo-id = "my-org/act", version = "1" }]\n'),
        'kernel/build.toml:7: error: `kernel-depends` entry `my-org/act`: `version` must be an integer >= 0, not `"1"`\n'
        "  hint: write `version = 1`",
    ),
    case(
        "E16-repo-id",
        general('kernel-depends = [{ repo-id = "act", version = 1 }]\n'),
        "kernel/build.toml:7: error: `kernel-depends` entry 1: bad `repo-id` (`act`)\n"
        '  hint: write `kernel-depends = [{ repo-id = "org/name", version = 1 }]`',
    ),
    case(
        "E17-unknown",
        general('python-depends = ["numpy"]\n'),
        "kernel/build.toml:7: error: unknown Python dependency `numpy` in [general] `python-depends`\n"
        "  hint: allowed here: einops, helion, tvm-ffi",
    ),
    case(
        "E17-wrong-level",
        general('python-depends = ["einops", "nvidia-cutlass-dsl"]\n'),
        "kernel/build.toml:7: error: `nvidia-cutlass-dsl` is not allowed in [general] `python-depends`\n"
        "  hint: move it to `[general.cuda] python-depends`",
    ),
    case(
        "E17-tpu",
        K.replace("[torch]", '[general.tpu]\npython-depends = ["jax"]\n\n[torch]'),
        "kernel/build.toml:9: error: unknown Python dependency `jax` in [general.tpu] `python-depends`\n"
        "  hint: no Python dependencies exist for [general.tpu]; remove the entry",
    ),
    case(
        "E17-cuda-einops",
        K.replace("[torch]", '[general.cuda]\npython-depends = ["einops"]\n\n[torch]'),
        "kernel/build.toml:9: error: `einops` is not allowed in [general.cuda] `python-depends`\n"
        "  hint: move it to `[general] python-depends`",
    ),
    case(
        "E17-v2-split-keeps-lines",
        # nvidia-cutlass-dsl moves to [general.cuda]; numpy keeps its own line (5), not its new index's (4)
        V2.replace("universal = true", 'python-depends = [\n  "nvidia-cutlass-dsl",\n  "numpy",\n]'),
        LEGACY_V2
        + NOASSERTION
        + "kernel/build.toml:5: error: unknown Python dependency `numpy` in [general] `python-depends`\n"
        "  hint: allowed here: einops, helion, tvm-ffi",
    ),
    case(
        "E18-both-spellings",
        NOARCH + 'cuda-capabilities = ["8.0"]\ncuda_capabilities = ["8.0"]\n',
        "kernel/build.toml:10: error: both `cuda-capabilities` and `cuda_capabilities` in [torch-noarch]\n"
        "  hint: keep one (`cuda-capabilities` is the documented spelling)",
    ),
    case(
        "E19-v1-universal-with-src",
        '[general]\nname = "gelu"\n\n[torch]\nuniversal = true\nsrc = ["torch-ext/torch_binding.cpp"]\n',
        LEGACY_V1
        + NOASSERTION
        + "kernel/build.toml:5: error: `universal` declares a pure-Python kernel but sources are listed\n"
        "  hint: remove `universal`, or remove the sources and kernel sections",
    ),
    case(
        "E19-v2-universal-with-kernel",
        V2,
        LEGACY_V2
        + NOASSERTION
        + "kernel/build.toml:3: error: `universal` declares a pure-Python kernel but sources are listed\n"
        "  hint: remove `universal`, or remove the sources and kernel sections",
    ),
    case(
        "E19-hipify-clash",
        V1 + '\n[kernel.gelu_rocm]\nsrc = ["gelu/gelu_rocm.cu"]\ndepends = ["torch"]\n',
        LEGACY_V1
        + NOASSERTION
        + 'kernel/build.toml:12: error: `language = "cuda-hipify"` on [kernel.gelu] creates [kernel.gelu_rocm], which already exists\n'
        "  hint: rename [kernel.gelu_rocm]",
    ),
    case(
        "E20-no-capability-builds",
        K + 'cuda-capabilities = ["3.5"]\n',  # Kepler: below every CUDA version's lowest target
        no_capability_builds("3.5"),
    ),
    case(
        "E20-10.0a-on-cuda-12.6",
        K + 'cuda-capabilities = ["10.0a"]\n',
        "kernel/build.toml:11: error: [kernel.gelu]: none of the requested capabilities (10.0a) can be built with CUDA 12.6 (supported: 7.0 … 9.0)\n"
        "  hint: fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel",
    ),
    case(
        "E21-dot",
        K.replace("[torch]\n", '[torch]\npyext = ["py", ".json"]\n'),
        "kernel/build.toml:9: error: invalid `pyext` entry `.json`\n  hint: write `json`, not `.json`",
    ),
    case(
        "E21-empty",
        NOARCH + 'pyext = ["py", ""]\n',
        "kernel/build.toml:9: error: empty `pyext` entry\n  hint: write `json`, not `.json`",
    ),
    case(
        "cutlass_sycl-in-v5",
        K.replace('backends = ["cuda"]', 'backends = ["xpu"]')
        .replace('backend = "cuda"', 'backend = "xpu"')
        .replace("gelu.cu", "gelu.cpp")
        .replace('depends = ["torch"]', 'depends = ["torch", "cutlass_sycl"]'),
        'kernel/build.toml:13: error: `cutlass_sycl` was renamed to `sycl_tla`\n  hint: write `"sycl_tla"`',
    ),
]


def test_enough_cases_and_each_is_an_error() -> None:
    assert len(CASES) >= 45
    assert all("error: " in str(param.values[1]) for param in CASES)


@pytest.mark.parametrize(("text", "expected", "skip", "init"), CASES)
def test_malformed_build_toml(
    diagnose: Diagnose,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: str,
    skip: Collection[str],
    init: bool,
) -> None:
    assert diagnose(text, skip=skip, init=init) == expected

    config_load._warned_legacy.clear()  # the CLI run is a new process: it warns again
    assert main(["check-config", "kernel"]) == 2
    out, err = capsys.readouterr()
    assert err == expected + "\n"
    assert out == ""
    assert "Traceback" not in err


# -- E1: no build.toml ------------------------------------------------------------------------------------


def test_missing_build_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    expected = (
        "empty/build.toml: error: build.toml not found\n"
        f"  hint: looked for {tmp_path}/empty/build.toml; pass the kernel directory or its build.toml"
    )
    assert render(path="empty") == expected
    assert main(["check-config", "empty"]) == 2
    assert capsys.readouterr() == ("", expected + "\n")


def test_unreadable_build_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "build.toml").write_bytes(b'[general]\nname = "g\xe9lu"\n')
    assert render() == (
        "kernel/build.toml:2:10: error: cannot read build.toml: not valid UTF-8 (invalid continuation byte at "
        "byte 19)\n  hint: save the file as UTF-8"
    )


# --: every problem in one run, ordered by line --------------------------------------------------------


def test_all_problems_reported_in_line_order(make_project: MakeProject) -> None:
    text = """\
[general]
name = "gelu"
version = "1"
edition = 5
license = "Apache-2.0"
backends = ["cuda", "CPU"]

[torch]
src = ["torch-ext/missing.cpp"]
cuda-capabilities = ["8.0"]

[kernel.gelu]
backend = "cuda"
src = ["gelu/gelu.cu"]
cuda-capabilities = ["sm_90"]
cuda_flags = ["-O3"]

[kernels.other]
backend = "cpu"
"""
    make_project(text, skip=["torch-ext/missing.cpp"])
    assert render() == (
        "kernel/build.toml:3: error: [general] `version` must be an integer, not a string\n"
        "  hint: write `version = 1`\n"
        "kernel/build.toml:6: error: unknown backend `CPU` in `backends`\n"
        "  hint: did you mean `cpu`?\n"
        "kernel/build.toml:9: error: source file `torch-ext/missing.cpp` in [torch] `src` does not exist\n"
        "  hint: looked for kernel/torch-ext/missing.cpp; list each file explicitly, relative to the kernel root\n"
        "kernel/build.toml:10: error: unknown key `cuda-capabilities` in [torch]\n"
        '  hint: `cuda-capabilities` belongs in a `[kernel.<name>]` section with `backend = "cuda"`\n'
        "kernel/build.toml:12: error: [kernel.gelu] is missing required key `depends`\n"
        '  hint: add `depends = []` (or `depends = ["torch"]`)\n'
        "kernel/build.toml:15: error: invalid CUDA capability `sm_90` in [kernel.gelu] `cuda-capabilities`\n"
        "  hint: write `9.0`\n"
        "kernel/build.toml:16: error: unknown key `cuda_flags` in [kernel.gelu]\n"
        "  hint: did you mean `cuda-flags`?\n"
        "kernel/build.toml:18: error: unknown table `[kernels.other]`\n"
        "  hint: did you mean `[kernel.other]`?"
    )


def test_layout_errors_come_with_source_errors(make_project: MakeProject) -> None:
    make_project(K, skip=["gelu/gelu.cu"], init=False)
    assert render() == (
        "kernel/build.toml:2: error: the kernel's Python package `torch-ext/gelu/__init__.py` is missing\n"
        "  hint: create torch-ext/gelu/__init__.py (the package users import; its name comes from `name`)\n"
        "kernel/build.toml:14: error: source file `gelu/gelu.cu` in [kernel.gelu] `src` does not exist\n"
        "  hint: looked for kernel/gelu/gelu.cu; list each file explicitly, relative to the kernel root"
    )


def test_multi_line_arrays_point_at_the_element(make_project: MakeProject) -> None:
    text = K.replace(
        'src = ["gelu/gelu.cu"]',
        'src = [\n  "gelu/gelu.cu",  # the kernel\n  "gelu/gelu.cuh",\n  "gelu/*.inl",\n]',
    )
    make_project(text)
    assert render() == (
        "kernel/build.toml:17: error: path `gelu/*.inl` in [kernel.gelu] `src` contains a glob character\n"
        "  hint: globs are never expanded: list each file explicitly"
    )


# -- E12 / case 23: a missing source stops everything before a process starts --------------------------------


def test_missing_source_starts_no_process(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []

    def spy(*args: object, **kwargs: object) -> None:
        started.append(args)
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", spy)
    monkeypatch.setattr(os, "system", spy)
    monkeypatch.setattr(os, "posix_spawn", spy)
    make_project(K.replace('"gelu/gelu.cu"', '"gelu/gelu.cu", "gelu/gelu.cuh"'), skip=["gelu/gelu.cuh"])
    assert main(["check-config", "kernel"]) == 2
    assert render() == (
        "kernel/build.toml:14: error: source file `gelu/gelu.cuh` in [kernel.gelu] `src` does not exist\n"
        "  hint: looked for kernel/gelu/gelu.cuh; list each file explicitly, relative to the kernel root"
    )
    assert started == []


def test_symlink_to_a_file_is_a_source(make_project: MakeProject) -> None:
    root = make_project(K, skip=["gelu/gelu.cu"])
    (root / "gelu").mkdir()
    (root / "elsewhere.cu").write_text("")
    (root / "gelu" / "gelu.cu").symlink_to(root / "elsewhere.cu")
    assert render() == ""


# -- E13 / case 25: nested package --------------------------------------------------------------------------


def test_nested_package_directory(make_project: MakeProject, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(K)
    (root / "torch-ext" / "gelu" / "gelu").mkdir()
    expected = (
        "kernel/build.toml:2: error: nested package directory `torch-ext/gelu/gelu/`\n"
        "  hint: move its files up into torch-ext/gelu/ (the flat layout)"
    )
    assert render() == expected
    assert main(["check-config", "kernel"]) == 2
    assert capsys.readouterr().err == expected + "\n"


# -- E20 / case 20 with a test matrix ------------------------------------------------------------------------

TEST_MATRIX = {
    "format": 1,
    "entries": [
        {"torch": "2.12", "torch-pin": "2.12.0", "backend": "cuda", "version": "12.6",
         "systems": ["x86_64-linux"], "required": False},
        {"torch": "2.12", "torch-pin": "2.12.0", "backend": "cuda", "version": "12.8",
         "systems": ["x86_64-linux"], "required": True},
        {"torch": "2.13", "torch-pin": "2.13.0", "backend": "cuda", "version": "13.0",
         "systems": ["x86_64-linux"], "required": True},
    ],
}  # fmt: skip


@pytest.fixture
def test_matrix(tmp_path: Path) -> Matrix:
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(TEST_MATRIX))
    return load_matrix(path)


def test_e20_only_in_optional_entries_is_a_warning(make_project: MakeProject, test_matrix: Matrix) -> None:
    make_project(K + 'cuda-capabilities = ["10.0a"]\n')
    result = load_project("kernel", matrix=test_matrix)
    assert [d.render() for d in result.diagnostics] == [
        (
            "kernel/build.toml:11: warning: [kernel.gelu]: none of the requested capabilities (10.0a) can be built "
            "with CUDA 12.6 (supported: 7.0 … 9.0); those optional variants are not buildable\n"
            "  hint: fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel"
        )
    ]


def test_e20_in_a_required_entry_is_an_error(make_project: MakeProject, test_matrix: Matrix) -> None:
    make_project(K + 'cuda-capabilities = ["12.1"]\n')
    assert render(matrix=test_matrix) == (
        "kernel/build.toml:11: warning: [kernel.gelu]: none of the requested capabilities (12.1) can be built "
        "with CUDA 12.6 (supported: 7.0 … 9.0); those optional variants are not buildable\n"
        "  hint: fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel\n"
        "kernel/build.toml:11: error: [kernel.gelu]: none of the requested capabilities (12.1) can be built "
        "with CUDA 12.8 (supported: 7.0 … 12.0)\n"
        "  hint: fix `cuda-capabilities`, or set `cuda-minver` so older CUDA skips this kernel"
    )


@pytest.mark.parametrize(
    "fix",
    [
        'cuda-minver = "13.0"\n',  # the kernel skips older CUDA
        '[general.cuda]\nminver = "13"\n',  # the project skips older CUDA (a new table: appended last)
    ],
)
def test_e20_avoided_by_version_bounds(make_project: MakeProject, test_matrix: Matrix, fix: str) -> None:
    make_project(K + 'cuda-capabilities = ["12.1"]\n' + fix)
    assert render(matrix=test_matrix) == ""


ROCM_E20 = (
    "kernel/build.toml:11: {}: [kernel.gelu]: none of the requested archs (gfx940) are supported by ROCm "
    "(supported: gfx906 … gfx1201){}\n"
    "  hint: fix `rocm-archs`: list at least one supported arch, or remove it to build for all of them"
)


def test_e20_rocm_in_a_required_entry_is_an_error(make_project: MakeProject, tmp_path: Path) -> None:
    make_project(rocm(K) + 'rocm-archs = ["gfx940"]\n')
    rocm_entry = {"torch": "2.13", "backend": "rocm", "version": "7.1", "systems": ["x86_64-linux"]}
    path = tmp_path / "rocm-matrix.json"
    path.write_text(json.dumps({"format": 1, "entries": [{**rocm_entry, "required": True}]}))
    assert render(matrix=load_matrix(path)) == ROCM_E20.format("error", "")
    path.write_text(json.dumps({"format": 1, "entries": [{**rocm_entry, "required": False}]}))
    assert render(matrix=load_matrix(path)) == ROCM_E20.format(
        "warning", "; those optional variants are not buildable"
    )


def test_e20_rocm_with_the_packaged_matrix(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error while the required set has ROCm variants, a warning (and exit 0) while only optional ones do."""
    make_project(rocm(K) + 'rocm-archs = ["gfx940"]\n')
    required = md.is_required("rocm")
    expected = ROCM_E20.format(
        *(("error", "") if required else ("warning", "; those optional variants are not buildable"))
    )
    assert render() == expected
    assert main(["check-config", "kernel"]) == (2 if required else 0)
    assert expected in capsys.readouterr().err


def test_e20_real_matrix_10_0a_with_cuda_minver(make_project: MakeProject) -> None:
    make_project(K + 'cuda-capabilities = ["10.0a"]\ncuda-minver = "12.8"\n')
    assert render() == ""


# -- warnings do not fail a file ----------------------------------------------------------------------------


def test_warnings_only_exit_0(make_project: MakeProject, capsys: pytest.CaptureFixture[str]) -> None:
    text = """\
[general]
name = "gelu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gelu]
backend = "cpu"
depends = ["torch", "cutlass_3_6"]
src = ["gelu/gelu.cpp", "gelu/gelu.cpp", "gelu/legacy.c"]
cxx-flags = ["-O3 -ffast-math"]
"""
    make_project(text)
    expected = (
        "kernel/build.toml:6: warning: duplicate entry `cpu` in [general] `backends` (ignored)\n"
        "kernel/build.toml:13: warning: dependency `cutlass_3_6` has no effect on a `cpu` kernel\n"
        "  hint: it is used by cuda kernels; remove it here\n"
        "kernel/build.toml:14: warning: duplicate entry `gelu/gelu.cpp` in [kernel.gelu] `src` (ignored)\n"
        "kernel/build.toml:14: warning: C source `gelu/legacy.c` is not compiled\n"
        "  hint: rename it to .cpp\n"
        "kernel/build.toml:15: warning: flag `-O3 -ffast-math` in [kernel.gelu] `cxx-flags` contains a space and "
        "is passed as one argument\n"
        '  hint: split it into separate elements: "-O3", "-ffast-math"'
    )
    assert render() == expected
    assert main(["check-config", "kernel"]) == 0
    assert capsys.readouterr().err == expected + "\n"
    assert load_project("kernel").project.config.kernels[0].src == ("gelu/gelu.cpp", "gelu/legacy.c")
