"""``kernel-builder schema``: the JSON Schema of build.toml agrees with the validator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_builder.authoring.scaffold import InitOptions, project_files
from kernel_builder.cli import main
from kernel_builder.common import toml as tomllib
from kernel_builder.config import load_project, schema
from kernel_builder.config.jsonschema import build_toml_schema

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parent.parent
EDITION5 = [REPO / "examples" / name / "build.toml" for name in ("relu", "activation", "relu-triton")] + [
    REPO / "tests" / "fixtures" / "forms" / "v5" / "build.toml"
]


@pytest.fixture(scope="module")
def validator() -> object:
    document = build_toml_schema()
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)


def errors(validator: object, document: dict[str, object]) -> list[str]:
    return [e.message for e in validator.iter_errors(document)]  # type: ignore[attr-defined]


def test_cli_prints_the_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == build_toml_schema()
    assert main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text()) == printed


def test_tables_have_exactly_the_validators_keys() -> None:
    document = build_toml_schema()
    props = document["properties"]
    assert set(props) == schema.TOP_LEVEL
    assert set(props["general"]["properties"]) == schema.GENERAL
    assert set(props["general"]["properties"]["hub"]["properties"]) == schema.HUB
    for backend, keys in schema.GENERAL_BACKEND.items():
        assert set(props["general"]["properties"][backend]["properties"]) == keys
    assert set(props["torch"]["properties"]) == schema.TORCH
    assert set(props["torch-noarch"]["properties"]) == schema.TORCH_NOARCH
    assert set(props["tvm-ffi"]["properties"]) == schema.TVM_FFI
    assert set(props["kernel"]["additionalProperties"]["properties"]) == schema.KERNEL


@pytest.mark.parametrize("path", EDITION5, ids=lambda p: p.parent.name)
def test_valid_files_pass(validator: object, path: Path) -> None:
    load_project(path)  # the validator accepts it
    assert errors(validator, tomllib.loads(path.read_text())) == []


@pytest.mark.parametrize("template", ["cpu", "cuda", "triton"])
def test_init_projects_pass(validator: object, template: str) -> None:
    files = project_files(InitOptions(name="my-kernel", org="acme", template=template))
    assert errors(validator, tomllib.loads(files["build.toml"])) == []


BASE = """
[general]
name = "relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu.cpp"]
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('name = "relu"', 'name = "Relu"'),
        ("edition = 5", "edition = 4"),
        ('backends = ["cpu"]', 'backends = ["gpu"]'),
        ('depends = ["torch"]', 'depends = ["cutlass_3_7"]'),
        ('depends = ["torch"]', 'srcs = ["x.cpp"]\ndepends = ["torch"]'),
        ("[torch]", "[torch]\ncuda-capabilities = ['8.0']"),
        ("[kernel.relu_cpu]", "[torch-noarch]\n[kernel.relu_cpu]"),
        ('src = ["relu_cpu/relu.cpp"]', "src = []"),
    ],
)
def test_invalid_files_fail(validator: object, old: str, new: str) -> None:
    assert errors(validator, tomllib.loads(BASE)) == []
    assert errors(validator, tomllib.loads(BASE.replace(old, new))) != []
