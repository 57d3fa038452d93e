"""The five forms of build.toml and their models (docs/build-toml.md).

The golden fixtures ``tests/fixtures/forms/v1..v5`` are one kernel ("gelu") written in each form; the model
each must give is written out in full below.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import MakeProject, render

from kernel_builder.config import BuildConfig, LoadResult, load_project
from kernel_builder.config.model import (
    BackendSettings,
    General,
    Hub,
    Kernel,
    Torch,
    TorchNoarch,
)
from kernel_builder.config.values import Version
from kernel_builder.errors import ConfigError
from kernel_builder.formats.dependencies import KernelDependency

FORMS = Path(__file__).parent / "fixtures" / "forms"

TORCH_BINDING = ("torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h")
GELU_CUDA_SRC = ("gelu_cuda/gelu.cu", "gelu_cuda/gelu.cuh")
GELU_CPU = Kernel(name="gelu_cpu", backend="cpu", src=("gelu_cpu/gelu.cpp",), depends=("torch",))

GOLDEN: dict[str, BuildConfig] = {
    "v1": BuildConfig(
        general=General(
            name="gelu", py_name="gelu", version=1, license="NOASSERTION", backends=("cuda", "rocm")
        ),
        framework=Torch(src=TORCH_BINDING),
        kernels=(
            Kernel(
                name="gelu",
                backend="cuda",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                cuda_capabilities=("8.0", "9.0"),
            ),
            Kernel(
                name="gelu_rocm",
                backend="rocm",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                rocm_archs=("gfx90a", "gfx942"),
            ),
        ),
    ),
    "v2": BuildConfig(
        general=General(
            name="gelu",
            py_name="gelu",
            version=1,
            license="NOASSERTION",
            backends=("cpu", "cuda"),
            python_depends=("einops",),
            hub=Hub(repo_id="my-org/gelu"),
            backend_settings=(
                ("cuda", BackendSettings(python_depends=("nvidia-cutlass-dsl",), minver=Version((12, 6)))),
            ),
        ),
        framework=Torch(src=TORCH_BINDING),
        kernels=(
            Kernel(
                name="gelu_cuda",
                backend="cuda",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                cuda_capabilities=("8.0", "9.0a"),
            ),
            GELU_CPU,
        ),
    ),
    "v3": BuildConfig(
        general=General(
            name="gelu",
            py_name="gelu",
            version=1,
            license="NOASSERTION",
            backends=("cpu", "cuda"),
            backend_settings=(("cuda", BackendSettings(minver=Version((12, 6)))),),
        ),
        framework=Torch(src=TORCH_BINDING),
        kernels=(
            Kernel(
                name="gelu_cuda",
                backend="cuda",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                cuda_capabilities=("8.0", "9.0a"),
            ),
            GELU_CPU,
        ),
    ),
    "v4": BuildConfig(
        general=General(
            name="gelu",
            py_name="gelu",
            version=2,
            license="Apache-2.0",
            backends=("cpu", "cuda"),
            source="https://github.com/my-org/gelu",
            backend_settings=(("cuda", BackendSettings(minver=Version((12, 6)))),),
        ),
        framework=Torch(src=TORCH_BINDING, cxx_flags=("-DGELU_FAST",)),
        kernels=(
            Kernel(
                name="gelu_cuda",
                backend="cuda",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                cuda_capabilities=("8.0", "9.0a"),
            ),
            GELU_CPU,
        ),
    ),
    "v5": BuildConfig(
        general=General(
            name="gelu",
            py_name="gelu",
            version=2,
            license="Apache-2.0",
            backends=("cpu", "cuda"),
            source="https://github.com/my-org/gelu",
            python_depends=("einops",),
            kernel_depends=(KernelDependency(repo_id="my-org/activation", version=1),),
            hub=Hub(repo_id="my-org/gelu"),
            backend_settings=(
                ("cuda", BackendSettings(python_depends=("nvidia-cutlass-dsl",), minver=Version((12, 6)))),
            ),
        ),
        framework=Torch(
            src=TORCH_BINDING,
            cxx_flags=("-DGELU_FAST",),
            stable_abi=(("cuda", Version((2, 11))),),
        ),
        kernels=(
            Kernel(
                name="gelu_cuda",
                backend="cuda",
                src=GELU_CUDA_SRC,
                depends=("torch",),
                cuda_capabilities=("8.0", "9.0a"),
                cuda_flags=("--use_fast_math",),
            ),
            GELU_CPU,
        ),
    ),
}

NOASSERTION_WARNING = (
    '{path}:3: warning: no `license`: metadata will carry "NOASSERTION"\n'
    '  hint: add `license = "<SPDX id>"` to [general] (or run `kernel-builder update-build --license <id>`)'
)
LEGACY = (
    "{path}: warning: legacy v{n} form ({trait}); upgraded to edition 5 in memory. "
    "Run 'kernel-builder update-build {root}' to rewrite the file."
)
GOLDEN_DIAGNOSTICS = {
    "v1": [
        LEGACY.format(
            n=1,
            trait="kernel sections have no 'backend' and [general] has no 'backends'",
            path="{path}",
            root="{root}",
        ),
        NOASSERTION_WARNING,
    ],
    "v2": [
        LEGACY.format(
            n=2,
            trait="kernel sections have 'backend' but [general] has no 'backends'",
            path="{path}",
            root="{root}",
        ),
        NOASSERTION_WARNING,
    ],
    "v3": [
        LEGACY.format(n=3, trait="[general] has 'backends' but no 'edition'", path="{path}", root="{root}"),
        NOASSERTION_WARNING,
    ],
    "v4": [LEGACY.format(n=4, trait="`general.source` without 'edition'", path="{path}", root="{root}")],
    "v5": [],
}


def copy_form(tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden project of ``form`` copied to ``tmp_path/<form>``, with ``tmp_path`` as working directory."""
    target = tmp_path / form
    shutil.copytree(FORMS / form, target, ignore=shutil.ignore_patterns("expected-v5.toml"))
    monkeypatch.chdir(tmp_path)
    return target


def load(make_project: MakeProject, text: str) -> LoadResult:
    make_project(text)
    return load_project("kernel")


def rendered(result: LoadResult) -> list[str]:
    return [d.render() for d in result.diagnostics]


# -- cases 1 and 2: the golden files -----------------------------------------------------------------------


@pytest.mark.parametrize("form", ["v1", "v2", "v3", "v4", "v5"])
def test_golden_form_gives_golden_model(form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_form(tmp_path, form, monkeypatch)
    result = load_project(form)
    assert result.project.form == int(form[1])
    assert result.project.config == GOLDEN[form]
    path = f"{form}/build.toml"
    assert rendered(result) == [d.format(path=path, root=form) for d in GOLDEN_DIAGNOSTICS[form]]


@pytest.mark.parametrize("form", ["v1", "v2", "v3", "v4"])
def test_legacy_warning_names_the_form_once(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_form(tmp_path, form, monkeypatch)
    first = [d.message for d in load_project(form).warnings if "legacy" in d.message]
    assert len(first) == 1
    assert first[0].startswith(f"legacy {form} form (")
    # once per file per process: a second load in the same process stays quiet
    assert [d for d in load_project(f"{form}/build.toml").warnings if "legacy" in d.message] == []


def test_legacy_warning_from_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec's example text exactly: the file shown as ``build.toml`` and the command given ``.``."""
    monkeypatch.chdir(copy_form(tmp_path, "v2", monkeypatch))
    assert rendered(load_project())[0] == (
        "build.toml: warning: legacy v2 form (kernel sections have 'backend' but [general] has no "
        "'backends'); upgraded to edition 5 in memory. Run 'kernel-builder update-build .' to rewrite the file."
    )


def test_kernel_sections_keep_their_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_form(tmp_path, "v5", monkeypatch)
    kernels = load_project("v5").project.config.kernels
    assert [k.line for k in kernels] == [24, 31]


# -- case 3: v4 is edition 5 without the key ---------------------------------------------------------------


def test_v4_equals_v4_with_edition_5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_form(tmp_path, "v4", monkeypatch)
    v4 = load_project("v4")
    text = (root / "build.toml").read_text()
    (root / "build.toml").write_text(text.replace("version = 2\n", "version = 2\nedition = 5\n"))
    v5 = load_project("v4")
    assert (v4.project.form, v5.project.form) == (4, 5)
    assert v5.project.config == v4.project.config
    assert v5.diagnostics == []


# -- cases 4 and 5: v1 languages -----------------------------------------------------------------------------

V1 = """\
[general]
name = "gelu"

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gelu]
language = "{language}"
src = ["gelu/{file}"]
depends = ["torch"]
"""


def test_v1_hipify_creates_rocm_companion(make_project: MakeProject) -> None:
    result = load(
        make_project, V1.format(language="cuda-hipify", file="gelu.cu") + 'rocm-archs = ["gfx942"]\n'
    )
    config = result.project.config
    assert config.general.backends == ("cuda", "rocm")
    assert config.kernels == (
        Kernel(name="gelu", backend="cuda", src=("gelu/gelu.cu",), depends=("torch",)),
        Kernel(
            name="gelu_rocm",
            backend="rocm",
            src=("gelu/gelu.cu",),
            depends=("torch",),
            rocm_archs=("gfx942",),
        ),
    )
    assert [k.line for k in config.kernels] == [7, 7]  # the companion points at its original section


def test_v1_plain_cuda_drops_rocm_archs_with_a_note(make_project: MakeProject) -> None:
    result = load(make_project, V1.format(language="cuda", file="gelu.cu") + 'rocm-archs = ["gfx942"]\n')
    assert result.project.config.kernels == (
        Kernel(name="gelu", backend="cuda", src=("gelu/gelu.cu",), depends=("torch",)),
    )
    assert (
        rendered(result)[-1] == "kernel/build.toml:11: note: `rocm-archs` dropped: the kernel is not hipified"
    )


def test_v1_kernel_without_language_is_cuda(make_project: MakeProject) -> None:
    text = V1.format(language="", file="gelu.cu").replace('language = ""\n', "")
    config = load(make_project, text).project.config
    assert config.general.backends == ("cuda",)
    assert config.kernels == (Kernel(name="gelu", backend="cuda", src=("gelu/gelu.cu",), depends=("torch",)),)


def test_v1_metal_gives_a_metal_kernel(make_project: MakeProject) -> None:
    result = load(make_project, V1.format(language="metal", file="gelu.metal"))
    config = result.project.config
    assert config.general.backends == ("metal",)
    assert config.kernels == (
        Kernel(name="gelu", backend="metal", src=("gelu/gelu.metal",), depends=("torch",)),
    )
    assert config.aot_backends() == ("metal",)


# -- case 6: universal ---------------------------------------------------------------------------------------

ALL_FIVE = ("cpu", "cuda", "metal", "rocm", "xpu")


def test_v1_torch_universal_gives_torch_noarch(make_project: MakeProject) -> None:
    text = '[general]\nname = "gelu"\n\n[torch]\nuniversal = true\npyext = ["py", "json"]\n'
    result = load(make_project, text)
    assert result.project.form == 1
    assert result.project.config == BuildConfig(
        general=General(name="gelu", py_name="gelu", version=1, license="NOASSERTION", backends=ALL_FIVE),
        framework=TorchNoarch(pyext=("py", "json")),
    )
    assert result.project.config.noarch_backends() == ALL_FIVE


def test_v2_general_universal_gives_torch_noarch(make_project: MakeProject) -> None:
    result = load(make_project, '[general]\nname = "gelu"\nuniversal = true\n')
    assert result.project.form == 2
    assert result.project.config == BuildConfig(
        general=General(name="gelu", py_name="gelu", version=1, license="NOASSERTION", backends=ALL_FIVE),
        framework=TorchNoarch(),
    )


def test_v1_universal_false_is_a_compiled_kernel(make_project: MakeProject) -> None:
    text = V1.format(language="cuda", file="gelu.cu").replace("[torch]\n", "[torch]\nuniversal = false\n")
    config = load(make_project, text).project.config
    assert config.framework == Torch(src=("torch-ext/torch_binding.cpp",))
    assert config.general.backends == ("cuda",)


# -- case 7: v2 python-depends are split ------------------------------------------------------------------


def test_v2_python_depends_split_between_general_and_cuda(make_project: MakeProject) -> None:
    text = """\
[general]
name = "gelu"
python-depends = ["einops", "nvidia-cutlass-dsl"]
cuda-maxver = "13.0"

[kernel.gelu]
backend = "cuda"
src = ["gelu/gelu.cu"]
depends = []
"""
    general = load(make_project, text).project.config.general
    assert general.python_depends == ("einops",)
    assert general.cuda == BackendSettings(python_depends=("nvidia-cutlass-dsl",), maxver=Version((13, 0)))
    assert general.python_depends_for("cuda") == ("einops", "nvidia-cutlass-dsl")
    assert general.python_depends_for("cpu") == ("einops",)


def test_v2_without_torch_is_noarch_and_its_kernels_are_not_built(make_project: MakeProject) -> None:
    text = (
        '[general]\nname = "gelu"\n\n[kernel.gelu]\nbackend = "cuda"\nsrc = ["gelu/gelu.cu"]\ndepends = []\n'
    )
    result = load(make_project, text)
    assert result.project.config.framework == TorchNoarch()
    assert rendered(result)[-1] == (
        "kernel/build.toml:4: warning: [kernel.gelu] is never built: [torch-noarch] kernels are pure Python\n"
        "  hint: remove the section, or use [torch] to compile it"
    )


# -- case 8: v3 defaults ------------------------------------------------------------------------------------


def test_v3_without_framework_version_and_license(make_project: MakeProject) -> None:
    result = load(make_project, '[general]\nname = "gelu"\nbackends = ["cuda", "xpu"]\n')
    assert result.project.form == 3
    assert result.project.config == BuildConfig(
        general=General(
            name="gelu", py_name="gelu", version=1, license="NOASSERTION", backends=("cuda", "xpu")
        ),
        framework=TorchNoarch(),
    )
    assert rendered(result) == [
        (
            "kernel/build.toml: warning: legacy v3 form ([general] has 'backends' but no 'edition'); upgraded to "
            "edition 5 in memory. Run 'kernel-builder update-build kernel' to rewrite the file."
        ),
        NOASSERTION_WARNING.format(path="kernel/build.toml").replace(":3:", ":1:"),
    ]


def test_v3_with_version_and_license_but_no_torch_stays_v3(make_project: MakeProject) -> None:
    text = '[general]\nname = "gelu"\nversion = 3\nlicense = "MIT"\nbackends = ["cpu"]\n'
    result = load(make_project, text)
    assert result.project.form == 3
    assert result.project.config.general == General(
        name="gelu", py_name="gelu", version=3, license="MIT", backends=("cpu",)
    )
    assert len(result.warnings) == 1  # only the legacy warning: the license is there


# -- cases 9-12: detection errors (the full texts are in test_config_load_errors.py) ---------------------------


@pytest.mark.parametrize(
    ("general", "first_line"),
    [
        ("edition = 4", "kernel/build.toml:4: error: there is no edition 4"),
        (
            "edition = 6",
            "kernel/build.toml:4: error: edition 6 is newer than this kernel-builder supports (5)",
        ),
        ('edition = "5"', "kernel/build.toml:4: error: `edition` must be an integer, not a string"),
    ],
)
def test_bad_editions_are_rejected_before_validation(
    make_project: MakeProject, general: str, first_line: str
) -> None:
    # the unknown key `colour` is not reported: detection failed, so the file is not validated
    make_project(f'[general]\nname = "gelu"\nversion = 1\n{general}\ncolour = "red"\nbackends = ["cpu"]\n')
    assert render().splitlines()[0] == first_line
    assert "colour" not in render()


def test_kernel_depends_needs_edition_5_and_loads_with_it(make_project: MakeProject) -> None:
    text = """\
[general]
name = "gelu"
version = 1
license = "MIT"
backends = ["cpu"]
kernel-depends = [{ repo-id = "my-org/activation", revision = "main" }]

[torch-noarch]
"""
    make_project(text)
    with pytest.raises(ConfigError):
        load_project("kernel")
    make_project(text.replace("version = 1\n", "version = 1\nedition = 5\n"))
    general = load_project("kernel").project.config.general
    assert general.kernel_depends == (KernelDependency(repo_id="my-org/activation", revision="main"),)


# -- case 17: [torch-noarch] capability keys --------------------------------------------------------------

NOARCH = """\
[general]
name = "gelu-triton"
version = 1
edition = 5
license = "MIT"
backends = ["cuda", "rocm"]

[torch-noarch]
"""


@pytest.mark.parametrize("spelling", ["kebab", "snake"])
def test_noarch_capability_keys_in_both_spellings(make_project: MakeProject, spelling: str) -> None:
    caps, archs = (
        ("cuda-capabilities", "rocm-archs") if spelling == "kebab" else ("cuda_capabilities", "rocm_archs")
    )
    result = load(make_project, NOARCH + f'{caps} = ["8.0", "9.0a"]\n{archs} = ["gfx942"]\n')
    assert result.project.config.framework == TorchNoarch(
        cuda_capabilities=("8.0", "9.0a"), rocm_archs=("gfx942",)
    )
    assert result.project.py_name == "gelu_triton"
    assert result.diagnostics == []


# -- case 18: names accepted in edition 5 ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["my-kernel", "relu2d", "a1", "my--kernel"])
def test_edition_5_names_accepted(make_project: MakeProject, name: str) -> None:
    text = NOARCH.replace('"gelu-triton"', f'"{name}"')
    project = load(make_project, text).project
    assert (project.name, project.py_name) == (name, name.replace("-", "_"))


# -- case 22: a kernel whose backend is not built ---------------------------------------------------------

V5_TWO_KERNELS = """\
[general]
name = "gelu"
version = 1
edition = 5
license = "MIT"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gelu_cuda]
backend = "cuda"
depends = ["torch"]
src = ["gelu/gelu.cu"]

[kernel.gelu_xpu]
backend = "xpu"
depends = ["torch"]
src = ["gelu/gelu_xpu.cpp"]
"""


def test_kernel_of_an_unlisted_backend_warns_and_is_not_built(make_project: MakeProject) -> None:
    result = load(make_project, V5_TWO_KERNELS)
    config = result.project.config
    assert rendered(result) == [
        (
            "kernel/build.toml:16: warning: [kernel.gelu_xpu] is never built: its backend `xpu` is not in `backends`\n"
            '  hint: add "xpu" to `general.backends`, or remove the section'
        )
    ]
    assert config.aot_backends() == ("cuda",)
    assert [k.name for k in config.kernels_for("cuda")] == ["gelu_cuda"]


def test_backend_without_kernels_is_noarch_with_a_note(make_project: MakeProject) -> None:
    result = load(
        make_project, V5_TWO_KERNELS.replace('backends = ["cuda"]', 'backends = ["cpu", "cuda", "xpu"]')
    )
    assert result.project.config.aot_backends() == ("cuda", "xpu")
    assert result.project.config.noarch_backends() == ("cpu",)
    assert rendered(result) == [
        (
            "kernel/build.toml:6: note: backend cpu has no kernel sections; it is built as the pure-Python variant "
            "torch-cpu"
        )
    ]


# -- case 27: cutlass_sycl --------------------------------------------------------------------------------


def test_cutlass_sycl_accepted_in_v4_as_sycl_tla(make_project: MakeProject) -> None:
    text = (
        V5_TWO_KERNELS.replace("edition = 5\n", "")
        .replace('backends = ["cuda"]', 'backends = ["cuda", "xpu"]')
        .replace(
            'depends = ["torch"]\nsrc = ["gelu/gelu_xpu.cpp"]',
            'depends = ["torch", "cutlass_sycl"]\nsrc = ["gelu/gelu_xpu.cpp"]',
        )
    )
    result = load(make_project, text)
    assert result.project.form == 4
    assert result.project.config.kernels[1].depends == ("torch", "sycl_tla")
    assert rendered(result)[1:] == [
        (
            "kernel/build.toml:17: warning: `cutlass_sycl` is the old name of `sycl_tla`\n"
            '  hint: write `"sycl_tla"` (kernel-builder update-build does this)'
        )
    ]


# -- case 31: stable-abi ------------------------------------------------------------------------------------


def test_string_stable_abi_applies_to_every_aot_backend(make_project: MakeProject) -> None:
    text = V5_TWO_KERNELS.replace('backends = ["cuda"]', 'backends = ["cuda", "xpu"]').replace(
        "[torch]\n", '[torch]\nstable-abi = "2.11"\n'
    )
    result = load(make_project, text)
    torch = result.project.config.framework
    assert isinstance(torch, Torch)
    assert torch.stable_abi_all == Version((2, 11))
    assert {b: torch.stable_abi_for(b) for b in result.project.config.aot_backends()} == {
        "cuda": Version((2, 11)),
        "xpu": Version((2, 11)),
    }
    assert result.diagnostics == []


def test_table_stable_abi_applies_to_listed_backends_and_warns_for_unlisted(
    make_project: MakeProject,
) -> None:
    text = V5_TWO_KERNELS.replace("[torch]\n", '[torch]\nstable-abi = { cuda = "2.11", rocm = "2.12" }\n')
    result = load(make_project, text)
    torch = result.project.config.framework
    assert isinstance(torch, Torch)
    assert (torch.stable_abi_for("cuda"), torch.stable_abi_for("xpu")) == (Version((2, 11)), None)
    assert rendered(result)[0] == (
        "kernel/build.toml:9: warning: `stable-abi` entry for `rocm`, which is not in `backends`\n"
        "  hint: add `rocm` to `backends` or remove the entry"
    )


# -- case 39: legacy names ----------------------------------------------------------------------------------


def test_v4_legacy_name_is_normalised_and_keeps_its_py_name(make_project: MakeProject) -> None:
    text = V5_TWO_KERNELS.replace("edition = 5\n", "").replace('name = "gelu"', 'name = "My_Kernel"')
    make_project(text)
    assert (Path("kernel") / "torch-ext" / "My_Kernel" / "__init__.py").is_file()
    result = load_project("kernel")
    assert (result.project.name, result.project.py_name) == ("my-kernel", "My_Kernel")
    assert rendered(result)[1] == (
        "kernel/build.toml:2: warning: legacy name `My_Kernel` does not follow the edition-5 name rule; read as "
        "`my-kernel`\n  hint: the Python package stays `torch-ext/My_Kernel/`"
    )


def test_normalised_name_still_needs_its_original_package(make_project: MakeProject) -> None:
    text = V5_TWO_KERNELS.replace("edition = 5\n", "").replace('name = "gelu"', 'name = "My_Kernel"')
    make_project(text, init=False)
    (Path("kernel") / "torch-ext" / "my_kernel").mkdir(parents=True)
    (Path("kernel") / "torch-ext" / "my_kernel" / "__init__.py").write_text("")
    assert "error: the kernel's Python package `torch-ext/My_Kernel/__init__.py` is missing" in render()


# -- case 40: pre-release layouts (full texts in test_config_load_errors.py) -----------------------------------


def test_pre_release_version_is_only_a_trait_without_edition(make_project: MakeProject) -> None:
    make_project(NOARCH.replace("version = 1\n", 'version = "1"\n'))
    assert render() == (
        "kernel/build.toml:3: error: [general] `version` must be an integer, not a string\n"
        "  hint: write `version = 1`"
    )
    make_project(NOARCH.replace("version = 1\nedition = 5\n", 'version = "0.0.1"\n'))
    assert render().splitlines()[0] == (
        "kernel/build.toml:3: error: pre-release build.toml format, not supported; see update-build"
    )


@pytest.mark.parametrize("form", ["v2", "v3"])
def test_v2_v3_underscore_names_load_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """Upstream accepted `name = "my_kernel"` in these forms; such real files keep working."""
    root = tmp_path / form
    shutil.copytree(FORMS / form, root)
    text = (root / "build.toml").read_text().replace('name = "gelu"', 'name = "my_gelu"')
    (root / "build.toml").write_text(text)
    (root / "torch-ext" / "gelu").rename(root / "torch-ext" / "my_gelu")
    monkeypatch.chdir(tmp_path)
    result = load_project(form)
    assert (result.project.name, result.project.py_name) == ("my-gelu", "my_gelu")
    assert (
        f"{form}/build.toml:4: warning: legacy name `my_gelu` does not follow the edition-5 name rule; read as "
        "`my-gelu`\n  hint: the Python package stays `torch-ext/my_gelu/`"
    ) in [d.render() for d in result.warnings]
    assert sum("legacy v" in d.message for d in result.warnings) == 1
