"""``kernel-builder init``: the files of each template, the name rule, refusing to overwrite (fast tests).

The slow end-to-end check (init → build → ``kernel-builder test``) is in ``test_authoring_devtest.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel_builder.cli import main
from kernel_builder.config import load_project
from kernel_builder.config.values import NAME_RE

COMMON = {
    "build.toml",
    "CARD.md",
    ".gitignore",
    ".github/workflows/build.yml",
    "benchmarks/benchmark.py",
    "tests/test_my_kernel.py",
    "torch-ext/my_kernel/__init__.py",
    "torch-ext/my_kernel/layers.py",
}
COMPILED = {"torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h", "my_kernel_cpu/relu_cpu.cpp"}


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("flags", "expected", "backends", "framework"),
    [
        (["--backends", "cpu"], COMMON | COMPILED, ("cpu",), "torch"),
        (["--template", "cpu"], COMMON | COMPILED, ("cpu",), "torch"),
        (
            ["--backends", "cuda,cpu"],
            COMMON | COMPILED | {"my_kernel_cuda/relu.cu"},
            ("cuda", "cpu"),
            "torch",
        ),
        ([], COMMON | COMPILED | {"my_kernel_cuda/relu.cu"}, ("cuda", "cpu"), "torch"),
        (["--template", "triton"], COMMON, ("cuda", "cpu"), "torch-noarch"),
    ],
)
def test_each_template_writes_a_valid_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], expected: set[str],
    backends: tuple[str, ...], framework: str,
) -> None:  # fmt: skip
    root = tmp_path / "my-kernel"
    assert main(["init", str(root), "--name", "my-kernel", *flags]) == 0
    assert files_under(root) == expected
    result = load_project(root)
    assert result.diagnostics == []  # not even a warning
    config = result.project.config
    assert config.general.name == "my-kernel"
    assert config.general.backends == backends
    assert config.framework.kind == framework
    assert {k.backend for k in config.kernels} == (set(backends) if framework == "torch" else set())
    assert "kernel-builder build" in capsys.readouterr().out


def test_generated_files_say_what_the_issue_asks(tmp_path: Path) -> None:
    root = tmp_path / "k"
    assert main(["init", str(root), "--name", "my-kernel", "--org", "acme", "--license", "MIT"]) == 0
    assert load_project(root).project.config.general.hub.repo_id == "acme/my-kernel"
    assert load_project(root).project.config.general.license == "MIT"
    package = (root / "torch-ext/my_kernel/__init__.py").read_text()
    assert '__all__ = ["layers", "relu"]' in package
    assert "class ReLU(torch.nn.Module)" in (root / "torch-ext/my_kernel/layers.py").read_text()
    ignored = (root / ".gitignore").read_text().splitlines()
    assert "build/" in ignored and ".kernel-builder/" in ignored
    workflow = (root / ".github/workflows/build.yml").read_text()
    assert "kernel-builder matrix . --format github" in workflow and "${{ matrix.command }}" in workflow
    # The build jobs share compiled objects through the GitHub Actions cache (docs/ci.md).
    assert "mozilla-actions/sccache-action@" in workflow and 'SCCACHE_GHA_ENABLED: "true"' in workflow
    assert "KERNEL_BUILDER_COMPILER_CACHE: sccache" in workflow
    tests = (root / "tests/test_my_kernel.py").read_text()
    assert 'get_kernel("acme/my-kernel", version=1)' in tests and "torch.relu(x)" in tests
    assert "license: mit" in (root / "CARD.md").read_text()
    compile(package, "__init__.py", "exec")
    compile(tests, "test_my_kernel.py", "exec")
    compile((root / "benchmarks/benchmark.py").read_text(), "benchmark.py", "exec")


def test_without_org_the_repo_id_is_local(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "k"), "--name", "abc"]) == 0
    assert load_project(tmp_path / "k").project.config.general.hub.repo_id is None
    assert 'get_kernel("local/abc", version=1)' in (tmp_path / "k/tests/test_abc.py").read_text()


def test_default_path_is_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--name", "abc", "--backends", "cpu"]) == 0
    assert (tmp_path / "abc" / "build.toml").is_file()


@pytest.mark.parametrize("name", ["My_Kernel", "1relu", "relu-", "re lu", "r", "relu_2"])
def test_names_follow_the_build_toml_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    assert not NAME_RE.match(name)  # the same rule decides
    assert main(["init", str(tmp_path / "k"), "--name", name]) == 2
    err = capsys.readouterr().err
    assert f"invalid kernel name `{name}`" in err and "Traceback" not in err
    assert not (tmp_path / "k").exists()


def test_suggests_the_fixed_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "k"), "--name", "My_Kernel"]) == 2
    assert "did you mean `my-kernel`?" in capsys.readouterr().err


def test_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "k"
    root.mkdir()
    (root / "CARD.md").write_text("mine\n")
    assert main(["init", str(root), "--name", "abc"]) == 2
    err = capsys.readouterr().err
    assert "CARD.md already exists; pass --force" in err
    assert files_under(root) == {"CARD.md"}  # nothing else written either
    assert main(["init", str(root), "--name", "abc", "--force"]) == 0
    assert (root / "CARD.md").read_text() != "mine\n"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backends", "cuda,rocm"], "unknown: rocm"),
        (["--backends", "cpu,cpu"], "names a backend twice"),
        (["--template", "cuda", "--backends", "cpu"], "--template cuda needs the cuda backend"),
        (["--template", "cpu", "--backends", "cuda,cpu"], "--template cpu builds only the cpu backend"),
        (["--org", "a/b"], "not a valid Hub repository id"),
    ],
)
def test_bad_flags_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["init", str(tmp_path / "k"), "--name", "abc", *flags]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "k").exists()


def test_compiled_sources_include_lean_torch_headers(tmp_path: Path) -> None:
    """No file of the compiled templates includes the umbrella headers (``<torch/all.h>``,
    ``<torch/extension.h>``): they cost a binding that includes them several times its compile time, on every
    build; the binding registers under the build's namespace without naming it, so ``load`` keeps its object
    (``pipeline/generate/namespace.py``)."""
    from kernel_builder.pipeline.generate.namespace import namespace_use

    root = tmp_path / "my-kernel"
    assert main(["init", str(root), "--name", "my-kernel", "--backends", "cuda,cpu"]) == 0
    compiled = sorted(COMPILED | {"my_kernel_cuda/relu.cu"})
    for rel in compiled:
        included = re.findall(
            r"^\s*#\s*include\s*(\S+)", (root / rel).read_text(encoding="utf-8"), re.MULTILINE
        )
        assert included and not {"<torch/all.h>", "<torch/extension.h>"} & set(included), rel
    assert "#include <ATen/core/Tensor.h>" in (root / "torch-ext/torch_binding.h").read_text(encoding="utf-8")
    sources = [s for s in compiled if not s.endswith(".h")]
    assert namespace_use(root, sources).at_link == ("torch-ext/torch_binding.cpp",)
