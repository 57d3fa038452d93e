"""Adding a Torch release to the matrix from PyPI's metadata (kernel_builder/formats/torch_release.py), from a
recorded answer of PyPI (tests/fixtures/pypi/torch.json: torch 2.15.0 the newest release), never the network."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kernel_builder.formats.matrix import PACKAGED_MATRIX, parse_matrix
from kernel_builder.formats.torch_release import (
    ReleaseError,
    format_matrix,
    newest_patches,
    propose,
    release_facts,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pypi"


@pytest.fixture(scope="module")
def pypi() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "torch.json").read_text(encoding="utf-8"))
    return data


def shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PACKAGED_MATRIX.read_text(encoding="utf-8"))
    return data


def test_the_newest_patch_of_each_minor(pypi: dict[str, Any]) -> None:
    assert newest_patches(pypi) == {
        (2, 10): "2.10.0",
        (2, 11): "2.11.0",
        (2, 12): "2.12.1",
        (2, 13): "2.13.0",
        (2, 14): "2.14.1",
        (2, 15): "2.15.0",
    }
    # A yanked release, a pre-release and a release without files are not pins.
    edited = copy.deepcopy(pypi)
    edited["releases"]["2.15.1"] = [{**f, "yanked": True} for f in pypi["releases"]["2.15.0"]]
    edited["releases"]["2.15.2rc1"] = pypi["releases"]["2.15.0"]
    edited["releases"]["2.15.3"] = []
    assert newest_patches(edited)[(2, 15)] == "2.15.0"


def test_the_facts_of_a_release(pypi: dict[str, Any]) -> None:
    facts = release_facts(pypi, (2, 15))
    assert (facts.version, facts.minor, facts.systems) == (
        "2.15.0",
        (2, 15),
        ("x86_64-linux", "aarch64-linux", "aarch64-darwin"),
    )
    assert (facts.pypi_cuda, facts.requires_python) == ((13, 2), ">=3.11")
    assert str(facts.cuda_requirement).startswith("cuda-toolkit[") and "==13.2.2" in str(
        facts.cuda_requirement
    )


def test_a_release_the_answer_does_not_describe(pypi: dict[str, Any]) -> None:
    """The project answer's ``info`` is the newest release's: an older one needs its own answer."""
    with pytest.raises(ReleaseError) as caught:
        release_facts(pypi, (2, 14))
    assert str(caught.value) == (
        "PyPI's answer has no metadata of torch 2.14.1 (it describes 2.15.0): its Requires-Dist says which CUDA "
        "its wheels are built for; give its own answer (/pypi/torch/2.14.1/json)"
    )
    # Given it (the 2.14.1 wheel's own metadata: a CUDA 13.0 build), the facts follow.
    own = {"info": {"version": "2.14.1", "requires_python": ">=3.10",
                    "requires_dist": ['cuda-toolkit[cudart]==13.0.3; platform_system == "Linux"', "filelock"]}}  # fmt: skip
    assert release_facts(pypi, (2, 14), own).pypi_cuda == (13, 0)
    with pytest.raises(ReleaseError, match=r"^PyPI has no release of torch 2\.16$"):
        release_facts(pypi, (2, 16))


def test_the_shipped_matrix_is_what_the_command_proposes(pypi: dict[str, Any]) -> None:
    """A fixed point: proposing 2.15 again, with the CUDA flavours PyTorch published for it, changes nothing."""
    data = shipped()
    proposal = propose(data, release_facts(pypi, (2, 15)), newest_patches(pypi), [(13, 0), (13, 2)])
    assert format_matrix(proposal.data) == PACKAGED_MATRIX.read_text(encoding="utf-8")
    assert proposal.changes == {}


def test_the_2_15_release_proposed_over_the_2_14_matrix(pypi: dict[str, Any]) -> None:
    """From the matrix before 2.15, with the CUDA flavours carried over from 2.14: the shipped matrix, but for
    2.14's cu126 (PyTorch's notice, not PyPI, says 2.14 has it)."""
    before = json.loads((FIXTURES / "build-matrix-2.14.json").read_text(encoding="utf-8"))
    proposal = propose(before, release_facts(pypi, (2, 15)), newest_patches(pypi))
    expected = shipped()
    expected["entries"] = [
        e for e in expected["entries"] if not (e["torch"] == "2.14" and e.get("version") == "12.6")
    ]
    assert format_matrix(proposal.data) == format_matrix(expected)
    assert proposal.changes == {
        "2.12: torch-pin 2.12.0 -> 2.12.1": 4,
        "2.12: required -> optional": 8,
        "2.13: required -> optional": 8,
        "2.14: optional -> required": 4,
    }
    assert proposal.notes == [
        "2.15: torch 2.15.0 on PyPI, wheels for x86_64-linux, aarch64-linux, aarch64-darwin, Requires-Python >=3.11",
        f"2.15 cu132: PyPI's flavour ({release_facts(pypi, (2, 15)).cuda_requirement})",
        "2.15: CUDA flavours carried over from 2.14; name them with --cuda",
        "2.15 cu130: from PyTorch's index https://download.pytorch.org/whl/cu130 (not on PyPI: check PyTorch's "
        "release notes)",
    ]
    parse_matrix(proposal.data)  # a valid matrix


def test_a_next_release_carries_over_rocm_and_xpu_and_moves_the_required_set(pypi: dict[str, Any]) -> None:
    """A release 2.16 on PyPI (the 2.15 files renamed), over a matrix whose newest minor has ROCm and XPU."""
    answer = copy.deepcopy(pypi)
    answer["releases"]["2.16.0"] = [
        {**f, "filename": f["filename"].replace("2.15.0", "2.16.0")} for f in pypi["releases"]["2.15.0"]
    ]
    answer["info"]["version"] = "2.16.0"
    data = shipped()
    data["entries"].append({"torch": "2.15", "backend": "rocm", "version": "7.2", "systems": ["x86_64-linux"],
                            "required": True})  # fmt: skip
    proposal = propose(data, release_facts(answer, (2, 16)), newest_patches(answer), [(13, 2)])
    new = [e for e in proposal.data["entries"] if e["torch"] == "2.16"]
    assert [(e["backend"], e.get("version"), e.get("index-url")) for e in new] == [
        ("cpu", None, "https://download.pytorch.org/whl/cpu"),
        ("cuda", "13.2", None),
        ("metal", None, None),
        ("rocm", "7.2", None),
    ]
    required = sorted({e["torch"] for e in proposal.data["entries"] if e["required"]})
    assert required == ["2.15", "2.16"]
    assert "2.16 rocm 7.2: carried over from 2.15" in proposal.notes
    parse_matrix(proposal.data)


def test_the_file_layout_round_trips() -> None:
    text = PACKAGED_MATRIX.read_text(encoding="utf-8")
    assert format_matrix(json.loads(text)) == text
