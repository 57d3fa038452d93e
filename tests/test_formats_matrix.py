"""The variant matrix: the shipped data, its schema and its loader (docs/layout.md)."""

from __future__ import annotations

import copy
import importlib.resources
import json
from pathlib import Path
from typing import Any

import pytest

from kernel_builder.formats.matrix import (
    MATRIX_DOC,
    STALE_HINT,
    Matrix,
    MatrixEntry,
    MatrixError,
    load_matrix,
    newer_than_known,
    parse_matrix,
    stale_notice,
)
from kernel_builder.formats.variants import parse_variant, variant_for_entry

LINUX = ("x86_64-linux", "aarch64-linux")

# --- the shipped data, written out on purpose ---------------------------------------------------------------
# These tests check build-matrix.json's content against the table written out independently below: a matrix
# bump edits the JSON and this section (_expected_names, PINS, PYPI_DEFAULT_CUDA), nothing else in the tests.
# Every other test reads the versions it needs from tests/matrix_data.py.


def _expected_names() -> dict[str, bool]:
    """The spec's table, written out independently of the JSON: variant name -> required."""
    expected: dict[str, bool] = {}

    def add(torch: str, computes: list[str], systems: tuple[str, ...], required: bool) -> None:
        for compute in computes:
            for system in systems:
                tag = "-cxx11" if system.endswith("-linux") else ""
                expected[f"torch{torch}{tag}-{compute}-{system}"] = required

    add("211", ["cpu", "cu126", "cu128", "cu130"], LINUX, False)
    for torch, xpu in [("212", "xpu20253"), ("213", "xpu20260")]:
        add(torch, ["cpu", "cu126", "cu130", "cu132"], LINUX, False)
        add(torch, ["cpu", "metal"], ("aarch64-darwin",), False)
        add(torch, ["rocm71", "rocm72", xpu], ("x86_64-linux",), False)
    add("214", ["cpu", "cu126", "cu130", "cu132"], LINUX, True)
    add("214", ["cpu", "metal"], ("aarch64-darwin",), True)
    add("215", ["cpu", "cu130", "cu132"], LINUX, True)
    add("215", ["cpu", "metal"], ("aarch64-darwin",), True)
    return expected


def _raw_matrix() -> dict[str, Any]:
    text = (
        importlib.resources.files("kernel_builder.formats")
        .joinpath("build-matrix.json")
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


def test_packaged_matrix_is_the_spec_table() -> None:
    matrix = load_matrix()
    names = {variant_for_entry(entry, system).name: entry.required for entry, system in matrix.pairs()}
    assert names == _expected_names()


def test_packaged_matrix_is_cached() -> None:
    assert load_matrix() is load_matrix()


def test_packaged_matrix_source() -> None:
    assert load_matrix().source == "kernel_builder/formats/build-matrix.json"


def test_every_packaged_name_round_trips() -> None:
    matrix = load_matrix()
    checked = 0
    for entry, system in matrix.pairs():
        for stable_abi in (None, entry.torch):
            variant = variant_for_entry(entry, system, stable_abi)
            assert parse_variant(variant.name) == variant
            assert parse_variant(variant.name).name == variant.name
            checked += 1
    assert checked == 2 * len(list(matrix.pairs()))


def test_packaged_matrix_has_no_duplicates() -> None:
    keys = [
        (entry["torch"], entry["backend"], entry.get("version"), system)
        for entry in _raw_matrix()["entries"]
        for system in entry["systems"]
    ]
    assert len(keys) == len(set(keys))


def test_packaged_systems_are_grouped() -> None:
    """Entries equal in every field but ``systems`` share one entry."""
    rests = [
        json.dumps({k: v for k, v in e.items() if k != "systems"}, sort_keys=True)
        for e in _raw_matrix()["entries"]
    ]
    assert len(rests) == len(set(rests))


PINS = {(2, 11): "2.11.0", (2, 12): "2.12.1", (2, 13): "2.13.0", (2, 14): "2.14.1", (2, 15): "2.15.0"}
PYPI_DEFAULT_CUDA = {(2, 14): (13, 0), (2, 15): (13, 2)}
"""The CUDA flavour PyPI serves by default, for the Torch releases whose entries rely on it (no index-url)."""


def test_packaged_pins_and_indexes() -> None:
    for entry in load_matrix().entries:
        if entry.backend == "cpu":
            assert (entry.torch_pin, entry.index_url) == (
                PINS[entry.torch],
                "https://download.pytorch.org/whl/cpu",
            )
        elif entry.backend == "cuda":
            if PYPI_DEFAULT_CUDA.get(entry.torch) == entry.version:
                expected_index = None
            else:
                expected_index = f"https://download.pytorch.org/whl/{entry.compute}"
            assert (entry.torch_pin, entry.index_url) == (PINS[entry.torch], expected_index)
        else:
            assert (entry.torch_pin, entry.index_url) == (None, None)


def test_entry_helpers() -> None:
    entry = MatrixEntry(
        torch=(2, 12),
        torch_pin=None,
        backend="xpu",
        version=(2025, 3),
        systems=("x86_64-linux",),
        required=True,
        index_url=None,
    )
    assert (entry.torch_str, entry.version_str, entry.compute) == ("2.12", "2025.3", "xpu20253")


def test_pairs_and_torch_versions() -> None:
    matrix = load_matrix()
    cuda = {variant_for_entry(entry, system).name for entry, system in matrix.pairs(backend="cuda")}
    assert cuda == {name for name in _expected_names() if "-cu1" in name}
    torch = {(int(name[5]), int(name[6:8])) for name in _expected_names()}  # "torch213-..." -> (2, 13)
    assert matrix.torch_versions == tuple(sorted(torch))


# A small valid matrix the schema tests mutate (its versions are its own, not the shipped data's).
VALID: dict[str, Any] = {
    "format": 1,
    "entries": [
        {
            "torch": "2.13",
            "torch-pin": "2.13.0",
            "backend": "cpu",
            "systems": ["x86_64-linux", "aarch64-linux"],
            "required": True,
            "index-url": "https://download.pytorch.org/whl/cpu",
        },
        {
            "torch": "2.14",
            "torch-pin": "2.14.1",
            "backend": "cuda",
            "version": "13.0",
            "systems": ["x86_64-linux"],
            "required": False,
        },
        {"torch": "2.13", "backend": "rocm", "version": "7.1", "systems": ["x86_64-linux"], "required": True},
    ],
}


def test_valid_matrix_parses() -> None:
    matrix = parse_matrix(copy.deepcopy(VALID), "test.json")
    assert matrix == Matrix(
        entries=(
            MatrixEntry(
                torch=(2, 13),
                torch_pin="2.13.0",
                backend="cpu",
                version=None,
                systems=("x86_64-linux", "aarch64-linux"),
                required=True,
                index_url="https://download.pytorch.org/whl/cpu",
            ),
            MatrixEntry(
                torch=(2, 14),
                torch_pin="2.14.1",
                backend="cuda",
                version=(13, 0),
                systems=("x86_64-linux",),
                required=False,
                index_url=None,
            ),
            MatrixEntry(
                torch=(2, 13),
                torch_pin=None,
                backend="rocm",
                version=(7, 1),
                systems=("x86_64-linux",),
                required=True,
                index_url=None,
            ),
        ),
        source="test.json",
    )


def _set(index: int, field: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    if value is _DELETE:
        del data["entries"][index][field]
    else:
        data["entries"][index][field] = value
    return data


def _rename(index: int, old: str, new: str) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    data["entries"][index][new] = data["entries"][index].pop(old)
    return data


_DELETE = object()

SCHEMA_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("torch not major.minor", _set(0, "torch", "2.x"), ["entries[0].torch: expected major.minor such as '2.13', got \"2.x\""]),
    ("torch as number", _set(0, "torch", 2.13), ["entries[0].torch: expected major.minor such as '2.13', got 2.13"]),
    ("torch major two digits", _set(0, "torch", "10.1"), ["entries[0].torch: Torch version 10.1 cannot be encoded in a variant name: the major must be one digit"]),
    ("torch missing", _set(2, "torch", _DELETE), ["entries[2].torch: missing"]),
    ("pin missing on cpu", _set(0, "torch-pin", _DELETE), ["entries[0].torch-pin: missing (required for cpu and cuda entries)"]),
    ("pin missing on cuda", _set(1, "torch-pin", _DELETE), ["entries[1].torch-pin: missing (required for cpu and cuda entries)"]),
    ("pin of another minor", _set(0, "torch-pin", "2.12.0"), ["entries[0].torch-pin: \"2.12.0\" is not a Torch 2.13 release"]),
    ("pin not a version", _set(0, "torch-pin", "latest"), ["entries[0].torch-pin: \"latest\" is not a valid version"]),
    ("pin not a string", _set(0, "torch-pin", 2), ["entries[0].torch-pin: expected a string such as '2.13.0', got 2"]),
    ("unknown backend", _set(0, "backend", "npu"), ["entries[0].backend: unknown backend \"npu\" (expected one of cpu, cuda, rocm, xpu, metal)"]),
    ("cuda minor of ten", _set(1, "version", "12.10"), ["entries[1].version: cuda version 12.10 cannot be encoded in a variant name: the minor must be one digit"]),
    ("cuda version missing", _set(1, "version", _DELETE), ["entries[1].version: missing (required for cuda entries)"]),
    ("cuda version malformed", _set(1, "version", "13"), ["entries[1].version: expected a version such as '13.0', got \"13\""]),
    ("version on cpu", _set(0, "version", "1.0"), ["entries[0].version: not allowed for cpu entries (only cuda, rocm, xpu have one)"]),
    ("systems empty", _set(2, "systems", []), ["entries[2].systems: expected a non-empty list of '<cpu>-<os>' strings, got []"]),
    ("system unknown os", _set(2, "systems", ["x86_64-macos"]), ["entries[2].systems[0]: expected '<cpu>-<os>' with cpu x86_64 or aarch64 and os linux, darwin, windows, got \"x86_64-macos\""]),
    ("system listed twice", _set(2, "systems", ["x86_64-linux", "x86_64-linux"]), ["entries[2].systems[1]: \"x86_64-linux\" is listed twice"]),
    ("required not boolean", _set(2, "required", "yes"), ["entries[2].required: expected true or false, got \"yes\""]),
    ("required missing", _set(2, "required", _DELETE), ["entries[2].required: missing"]),
    ("index not a url", _set(0, "index-url", "download.pytorch.org"), ["entries[0].index-url: expected an http(s) or file URL, got \"download.pytorch.org\""]),
    ("index ftp", _set(0, "index-url", "ftp://example.org/simple"), ["entries[0].index-url: expected an http(s) or file URL, got \"ftp://example.org/simple\""]),
    ("tvm-ffi malformed", _set(2, "tvm-ffi", "0"), ["entries[2].tvm-ffi: expected major.minor such as '0.1', got \"0\""]),
    # A misspelt key is reported with a suggestion, together with the missing field it was meant to be.
    ("misspelt key", _rename(0, "torch-pin", "torch_pin"), ["entries[0].torch_pin: unknown field (did you mean 'torch-pin'?)", "entries[0].torch-pin: missing (required for cpu and cuda entries)"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "problems"), [case[1:] for case in SCHEMA_CASES], ids=[case[0] for case in SCHEMA_CASES]
)
def test_schema_problems(data: dict[str, Any], problems: list[str]) -> None:
    with pytest.raises(MatrixError) as error:
        parse_matrix(data, "test.json")
    assert error.value.problems == problems


def test_all_problems_in_one_error_with_the_source() -> None:
    data = copy.deepcopy(VALID)
    data["entries"][0]["required"] = "yes"
    data["entries"][2]["version"] = "7.10"
    with pytest.raises(MatrixError) as error:
        parse_matrix(data, "test.json")
    assert str(error.value) == (
        "invalid variant matrix test.json:\n"
        '  entries[0].required: expected true or false, got "yes"\n'
        "  entries[2].version: rocm version 7.10 cannot be encoded in a variant name: the minor must be one digit"
    )


def test_tvm_ffi_field_is_parsed() -> None:
    data = copy.deepcopy(VALID)
    data["entries"][2]["tvm-ffi"] = "0.1"
    assert parse_matrix(data).entries[2].tvm_ffi == (0, 1)


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        ([], ["expected a JSON object with 'format' and 'entries', got a list"]),
        ({"format": 2, "entries": []}, ["format: unsupported format 2 (expected 1)"]),
        ({"format": True, "entries": []}, ["format: unsupported format true (expected 1)"]),
        ({"entries": []}, ["format: missing (expected 1)"]),
        ({"format": 1}, ["entries: missing"]),
        ({"format": 1, "entries": {}}, ["entries: expected a list, got an object"]),
        ({"format": 1, "entries": [], "entry": []}, ["entry: unknown field (did you mean 'entries'?)"]),
        ({"format": 1, "entries": ["cpu"]}, ["entries[0]: expected an object, got a string"]),
    ],
)
def test_top_level_problems(data: object, problems: list[str]) -> None:
    with pytest.raises(MatrixError) as error:
        parse_matrix(data, "test.json")
    assert error.value.problems == problems


def _cuda(torch: str, version: str, systems: list[str]) -> dict[str, Any]:
    return {
        "torch": torch,
        "torch-pin": f"{torch}.0",
        "backend": "cuda",
        "version": version,
        "systems": systems,
        "required": True,
    }


def test_duplicate_entry_is_an_error() -> None:
    data = {
        "format": 1,
        "entries": [
            _cuda("2.13", "13.0", ["x86_64-linux", "aarch64-linux"]),
            _cuda("2.12", "13.0", ["x86_64-linux"]),
            _cuda("2.13", "13.0", ["aarch64-linux"]),
        ],
    }
    with pytest.raises(MatrixError) as error:
        parse_matrix(data, "test.json")
    assert error.value.problems == [
        "entries[2]: Torch 2.13 cuda 13.0 on aarch64-linux already appears in entries[0]"
    ]


def test_versions_naming_the_same_variant_are_duplicates() -> None:
    data = {
        "format": 1,
        "entries": [_cuda("2.13", "13.0", ["x86_64-linux"]), _cuda("2.13", "13.0.2", ["x86_64-linux"])],
    }
    with pytest.raises(MatrixError) as error:
        parse_matrix(data, "test.json")
    assert error.value.problems == [
        "entries[1]: Torch 2.13 cuda 13.0.2 on x86_64-linux already appears in entries[0]"
    ]


def test_load_matrix_from_path(tmp_path: Path) -> None:
    path = tmp_path / "build-matrix.json"
    path.write_text(json.dumps(VALID), encoding="utf-8")
    matrix = load_matrix(path)
    assert matrix.source == str(path)
    assert [variant_for_entry(e, s).name for e, s in matrix.pairs()] == [
        "torch213-cxx11-cpu-x86_64-linux",
        "torch213-cxx11-cpu-aarch64-linux",
        "torch214-cxx11-cu130-x86_64-linux",
        "torch213-cxx11-rocm71-x86_64-linux",
    ]


def test_load_matrix_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "build-matrix.json"
    path.write_text('{"format": 1,\n "entries": [}\n', encoding="utf-8")
    with pytest.raises(MatrixError) as error:
        load_matrix(path)
    assert str(error.value) == (
        f"invalid variant matrix {path}:\n  not valid JSON: Expecting value (line 2, column 14)"
    )


# --- a Torch newer than the matrix: the notice build and list-variants give --------------------------------


def test_newer_than_known_names_the_newest_release_and_the_required_ones() -> None:
    matrix = parse_matrix(
        {
            "format": 1,
            "entries": [
                {
                    "torch": "2.12",
                    "torch-pin": "2.12.1",
                    "backend": "cpu",
                    "systems": ["x86_64-linux"],
                    "required": False,
                },
                {
                    "torch": "2.13",
                    "torch-pin": "2.13.0",
                    "backend": "cpu",
                    "systems": ["x86_64-linux"],
                    "required": True,
                },
                {
                    "torch": "2.14",
                    "torch-pin": "2.14.1",
                    "backend": "cpu",
                    "systems": ["x86_64-linux"],
                    "required": True,
                },
            ],
        }  # fmt: skip
    )
    assert newer_than_known(matrix, "2.15.0+cpu") == (
        "torch 2.15.0+cpu is newer than Torch 2.14, the newest release in this kernel-builder's variant matrix: "
        "its variants build, but are not part of the published set (the required Torch releases are 2.13 and 2.14)"
    )
    assert newer_than_known(matrix, "3.0.0") is not None
    assert newer_than_known(matrix, "2.15.0.dev20260901") is not None  # a nightly of the next release too
    for known in ("2.14.7", "2.14.1+cu130", "2.12.0", "1.13.1", "not a version"):
        assert newer_than_known(matrix, known) is None, known
    assert newer_than_known(Matrix(entries=()), "2.99.0") is None


def test_stale_notice_is_a_warning_on_the_matrix_file_with_the_way_out() -> None:
    newest = load_matrix().torch_versions[-1]
    notice = stale_notice(f"{newest[0]}.{newest[1] + 1}.0")
    assert notice is not None
    assert (notice.path, notice.severity.value) == ("kernel_builder/formats/build-matrix.json", "warning")
    assert notice.hint == STALE_HINT and MATRIX_DOC in STALE_HINT
    assert stale_notice(f"{newest[0]}.{newest[1]}.0") is None
