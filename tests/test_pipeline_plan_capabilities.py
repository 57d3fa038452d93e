"""Unit tests for kernel_builder.backends.gpu_archs (docs/layout.md; docs/loading.md)."""

from __future__ import annotations

import pytest
from cuobjdump_listing import cuobjdump_names, expected_cuobjdump_images

from kernel_builder.backends.gpu_archs import (
    CAPABILITY_RE,
    ROCM_ARCH_RE,
    ROCM_SUPPORTED_ARCHS,
    Capability,
    Selection,
    default_capabilities,
    default_targets,
    device_runs,
    explicit_archs,
    gencode_flags,
    parse_capability,
    rocm_device_runs,
    select_capabilities,
    select_explicit,
    select_rocm_archs,
    suggest_capability,
    supported_capabilities,
    union_archs,
)

LIST_BEFORE_12_8 = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0+PTX")
LIST_12_8 = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "12.0+PTX")
LIST_13_0 = ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")


# --- parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.0", Capability(8, 0)),
        ("9.0a", Capability(9, 0, "a")),
        ("10.0f", Capability(10, 0, "f")),
        ("12.0+PTX", Capability(12, 0, "", True)),
        ("9.0a+PTX", Capability(9, 0, "a", True)),
        ("99999.0", Capability(99999, 0)),
    ],
)
def test_parse_capability(text: str, expected: Capability) -> None:
    cap = parse_capability(text)
    assert cap == expected
    assert str(cap) == text


@pytest.mark.parametrize(
    "text", ["sm_80", "80", "8", "9.0A", "8.0+ptx", "10.0af", "8.0 ", "8.0\n", "", "+PTX", "８.0", "9.0b"]
)
def test_parse_capability_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid CUDA capability"):
        parse_capability(text)
    assert CAPABILITY_RE.fullmatch(text) is None


def test_parse_capability_message_names_the_fix() -> None:
    with pytest.raises(ValueError) as info:
        parse_capability("sm_90a")
    assert str(info.value) == (
        "invalid CUDA capability 'sm_90a': expected e.g. '8.0', '9.0a', '12.0+PTX'; did you mean '9.0a'?"
    )
    with pytest.raises(ValueError) as info:
        parse_capability("sm_9000")
    assert str(info.value) == "invalid CUDA capability 'sm_9000': expected e.g. '8.0', '9.0a', '12.0+PTX'"


def test_capability_parts_and_order() -> None:
    cap = parse_capability("9.0a+PTX")
    assert str(cap.base) == "9.0a"
    assert str(cap.plain) == "9.0"
    assert cap.version == (9, 0)
    assert cap.code == "90a"
    assert parse_capability("12.0").code == "120"
    texts = ["10.0f", "9.0", "10.0", "9.0a", "8.9", "10.0a", "12.0+PTX", "9.0+PTX"]
    ordered = [str(c) for c in sorted(parse_capability(t) for t in texts)]
    assert ordered == ["8.9", "9.0", "9.0+PTX", "9.0a", "10.0", "10.0a", "10.0f", "12.0+PTX"]
    assert parse_capability("10.0f").sort_key == (10, 0, 2)
    with pytest.raises(ValueError):
        Capability(9, 0, "b")


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("sm_80", "8.0"),
        ("sm_90a", "9.0a"),
        ("SM_90A", "9.0a"),
        ("sm90", "9.0"),
        ("80", "8.0"),
        ("8", "8.0"),
        ("9.0A", "9.0a"),
        ("8.0+ptx", "8.0+PTX"),
        ("compute_90", "9.0"),
        ("100", "10.0"),
        ("sm_100f", "10.0f"),
        ("12.0+ptx", "12.0+PTX"),
        ("90+PTX", "9.0+PTX"),
        (" 8.0 ", "8.0"),
    ],
)
def test_suggest_capability(text: str, suggestion: str) -> None:
    assert suggest_capability(text) == suggestion
    assert CAPABILITY_RE.fullmatch(suggestion)


@pytest.mark.parametrize("text", ["8.0", "9.0a+PTX", "", "sm_", "1000", "10.0af", "hopper", "8.0.1", "9.0b"])
def test_suggest_capability_none(text: str) -> None:
    assert suggest_capability(text) is None


# --- default lists  ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cuda", "expected"),
    [
        ((11, 8), LIST_BEFORE_12_8),
        ((12, 6), LIST_BEFORE_12_8),
        ((12, 7), LIST_BEFORE_12_8),
        ((12, 8), LIST_12_8),
        ((12, 9), LIST_12_8),
        ((13, 0), LIST_13_0),
        ((13, 2), LIST_13_0),
        ((14, 0), LIST_13_0),
    ],
)
def test_default_list_changes_exactly_at_12_8_and_13_0(
    cuda: tuple[int, int], expected: tuple[str, ...]
) -> None:
    assert default_capabilities(cuda) == expected
    assert default_targets(cuda) == tuple(c.removesuffix("+PTX") for c in expected)
    assert select_capabilities(None, cuda) == Selection(expected)


def test_default_targets_match_spec_examples() -> None:
    t_12_6 = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0")
    assert default_targets((12, 6)) == t_12_6
    assert default_targets((12, 8)) == (*t_12_6, "10.0", "10.1", "12.0")
    assert default_targets((13, 0)) == (
        "7.5",
        "8.0",
        "8.6",
        "8.7",
        "8.9",
        "9.0",
        "10.0",
        "11.0",
        "12.0",
        "12.1",
    )


# --- loose intersection  -------------------------------------------------------------

ROWS = [
    # (row, requested, cuda, targets, archs, dropped)
    (1, None, (12, 6), None, LIST_BEFORE_12_8, ()),
    (2, ["5.0", "7.5", "8.0", "9.0"], (12, 6), None, ("7.5", "8.0", "9.0"), ()),
    (3, ["8.0", "9.0a"], (12, 8), None, ("8.0", "9.0a"), ()),
    (4, ["7.5", "8.0", "8.6", "9.0", "9.0a"], (12, 6), ["8.0", "8.9", "9.0"], ("8.0", "8.6", "9.0a"), ()),
    (5, ["8.0+PTX"], (12, 6), None, ("8.0+PTX",), ()),
    (6, ["8.0", "9.0+PTX"], (13, 0), None, ("8.0", "9.0+PTX"), ()),
    (7, ["7.0", "7.5", "8.0"], (13, 0), None, ("7.5", "8.0"), ()),
    (8, ["7.0", "8.0"], (13, 0), None, ("8.0",), ("7.0",)),
    (9, ["9.0a"], (12, 6), None, ("9.0a",), ()),
    (10, ["10.0a"], (12, 6), None, (), ()),
    (11, ["10.0a", "12.0a"], (12, 8), None, ("10.0a", "12.0a"), ()),
    (12, ["10.0f"], (12, 8), None, (), ("10.0f",)),
    (13, ["8.0", "10.0f"], (13, 0), None, ("8.0", "10.0f"), ()),
    # row 14: "any" CUDA version
    (14, ["99999.0"], (12, 6), None, (), ()),
    (14, ["99999.0"], (12, 8), None, (), ()),
    (14, ["99999.0"], (12, 9), None, (), ()),
    (14, ["99999.0"], (13, 0), None, (), ()),
]


@pytest.mark.parametrize(
    ("row", "requested", "cuda", "targets", "archs", "dropped"),
    ROWS,
    ids=[f"row{r[0]}-cu{r[2][0]}{r[2][1]}" for r in ROWS],
)
def test_worked_examples(
    row: int,
    requested: list[str] | None,
    cuda: tuple[int, int],
    targets: list[str] | None,
    archs: tuple[str, ...],
    dropped: tuple[str, ...],
) -> None:
    assert select_capabilities(requested, cuda, targets) == Selection(archs, dropped)


def test_row4_plain_entry_of_consumed_target_never_chosen() -> None:
    # The widely copied claim "8.0 8.6 9.0 9.0a" is wrong: 9.0a consumes 9.0.
    result = select_capabilities(["7.5", "8.0", "8.6", "9.0", "9.0a"], (12, 6), ["8.0", "8.9", "9.0"])
    assert "9.0" not in result.archs


@pytest.mark.parametrize(
    ("requested", "cuda", "archs"),
    [
        (["8.0", "8.0", "9.0"], (12, 6), ("8.0", "9.0")),
        (["9.0", "9.0+PTX"], (12, 6), ("9.0+PTX",)),
        (["9.0a", "9.0a", "9.0a+PTX"], (12, 6), ("9.0a+PTX",)),
        (["9.0", "8.0", "7.5"], (12, 6), ("7.5", "8.0", "9.0")),
    ],
)
def test_duplicates_merge_and_order_is_irrelevant(
    requested: list[str], cuda: tuple[int, int], archs: tuple[str, ...]
) -> None:
    assert select_capabilities(requested, cuda).archs == archs


def test_selection_details() -> None:
    # A +PTX entry also serves larger targets of any major; a larger same-major entry wins.
    assert select_capabilities(["7.5+PTX", "8.0"], (12, 8)).archs == ("7.5+PTX", "8.0")
    # The PTX flag is kept on a suffixed entry.
    assert select_capabilities(["9.0a+PTX"], (13, 0)).archs == ("9.0a+PTX",)
    # "f" entries are kept from CUDA 12.9 on.
    assert select_capabilities(["10.0f"], (12, 9)) == Selection(("10.0f",))
    # A suffixed entry whose base is not a target disappears without a warning.
    assert select_capabilities(["8.1a", "8.0"], (12, 6)) == Selection(("8.0",))
    # An empty request is empty (E20 for the caller).
    assert select_capabilities([], (13, 0)) == Selection(())
    # 10.0a consumes 10.0 while plain 10.0 serves 10.1; the sort puts the suffix after the plain base.
    assert select_capabilities(["10.0a", "10.0", "9.0"], (12, 8)).archs == ("9.0", "10.0", "10.0a")


def test_select_rejects_bad_entries() -> None:
    with pytest.raises(ValueError, match="invalid CUDA capability 'sm_80'"):
        select_capabilities(["sm_80"], (12, 6))
    with pytest.raises(ValueError, match="invalid target '9.0a'"):
        select_capabilities(None, (12, 6), ["9.0a"])


def test_native_targets() -> None:
    #: an H100 gives T = 9.0.
    assert select_capabilities(None, (13, 0), ["9.0"]) == Selection(("9.0",))
    assert select_capabilities(["8.0", "9.0a"], (13, 0), ["9.0"]) == Selection(("9.0a",))
    # Two GPUs of one capability, two kinds.
    assert select_capabilities(None, (13, 0), ["9.0", "8.0", "9.0"]).archs == ("8.0", "9.0")
    assert select_capabilities(["8.0"], (13, 0), ["8.6"]).archs == ("8.0",)
    # The drop rule still uses the CUDA version's default targets.
    assert select_capabilities(["7.0+PTX"], (13, 0), ["9.0"]) == Selection((), ("7.0+PTX",))
    assert select_capabilities(["7.0+PTX"], (12, 6), ["9.0"]) == Selection(("7.0+PTX",))
    assert select_capabilities(None, (13, 0), ["7.0"]) == Selection((), ("7.0",))
    assert select_capabilities(["10.0f"], (12, 8), ["10.0"]) == Selection((), ("10.0f",))


# --- -gencode  -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "flags"),
    [
        ("8.0", ["-gencode=arch=compute_80,code=sm_80"]),
        ("12.0", ["-gencode=arch=compute_120,code=sm_120"]),
        ("9.0a", ["-gencode=arch=compute_90a,code=sm_90a"]),
        ("10.0f", ["-gencode=arch=compute_100f,code=sm_100f"]),
        ("9.0+PTX", ["-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_90,code=compute_90"]),
        (
            "12.1a+PTX",
            ["-gencode=arch=compute_121a,code=sm_121a", "-gencode=arch=compute_121a,code=compute_121a"],
        ),
    ],
)
def test_gencode_forms(arch: str, flags: list[str]) -> None:
    assert gencode_flags([arch]) == flags


def test_gencode_list_order() -> None:
    assert gencode_flags(["8.0", "9.0a", "10.0f", "12.0+PTX"]) == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_100f,code=sm_100f",
        "-gencode=arch=compute_120,code=sm_120",
        "-gencode=arch=compute_120,code=compute_120",
    ]
    assert gencode_flags([]) == []


def test_gencode_plain_and_family_on_one_base() -> None:
    # nvcc refuses code=sm_100 next to code=sm_100f; the sm_100f cubin stands in for both.
    assert select_capabilities(["10.0", "10.0f"], (12, 9)).archs == ("10.0", "10.0f")
    assert gencode_flags(["10.0", "10.0f"]) == ["-gencode=arch=compute_100f,code=sm_100f"]
    assert gencode_flags(["10.0+PTX", "10.0f"]) == [
        "-gencode=arch=compute_100,code=compute_100",
        "-gencode=arch=compute_100f,code=sm_100f",
    ]
    # "a" entries do not clash with plain ones.
    assert gencode_flags(["9.0", "9.0a"]) == [
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90a,code=sm_90a",
    ]


# --- union (metadata archs, [torch] src) ---------------------------------------------------------


def test_union_archs() -> None:
    assert union_archs([["9.0a", "8.0"], ["10.0", "8.0", "12.0+PTX"], []]) == (
        "8.0",
        "9.0a",
        "10.0",
        "12.0+PTX",
    )
    # Numeric, not lexical order.
    assert union_archs([["10.0"], ["9.0"], ["12.0"], ["8.9"]]) == ("8.9", "9.0", "10.0", "12.0")
    # "+PTX" is kept when any list has it for that base; suffixes stay separate.
    assert union_archs([["9.0"], ["9.0+PTX"], ["9.0a"]]) == ("9.0+PTX", "9.0a")
    assert union_archs([["9.0a+PTX"], ["9.0a"], ["9.0"]]) == ("9.0", "9.0a+PTX")
    assert union_archs([["10.0f"], ["10.0a"], ["10.0"]]) == ("10.0", "10.0a", "10.0f")
    assert union_archs([]) == ()


# --- cuobjdump  ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("archs", "elf", "ptx"),
    [
        (("8.0", "9.0+PTX"), {"sm_80", "sm_90"}, {"sm_90"}),  # example 6
        (("7.5", "8.0"), {"sm_75", "sm_80"}, set()),  # example 7
        (("8.0", "10.0f"), {"sm_80", "sm_100"}, set()),  # example 13
        (("8.0", "9.0a"), {"sm_80", "sm_90a"}, set()),
        (("9.0a+PTX", "10.0f+PTX"), {"sm_90a", "sm_100"}, {"sm_90a", "sm_100f"}),
    ],
)
def test_expected_cuobjdump_images(archs: tuple[str, ...], elf: set[str], ptx: set[str]) -> None:
    assert expected_cuobjdump_images(archs) == (elf, ptx)


def test_cuobjdump_names() -> None:
    # Output of cuobjdump 13.1 for -gencode 80, 90a, 100f (SASS) and 90, 90a, 100f (PTX).
    elf = "ELF file    1: k.1.sm_80.cubin\nELF file    2: k.2.sm_90a.cubin\nELF file    3: k.3.sm_100.cubin\n"
    ptx = "PTX file    1: k.1.sm_90a.ptx\nPTX file    2: k.2.sm_100f.ptx\nPTX file    3: k.3.sm_90.ptx\n"
    none = "cuobjdump info    : No PTX file found to extract from 'k.o'. You may try with -all option.\n"
    assert cuobjdump_names(elf) == {"sm_80", "sm_90a", "sm_100"}
    assert cuobjdump_names(ptx) == {"sm_90", "sm_90a", "sm_100f"}
    assert cuobjdump_names(none) == set()
    assert expected_cuobjdump_images(["8.0", "9.0a+PTX", "10.0f+PTX"]) == (
        cuobjdump_names(elf),
        {"sm_90a", "sm_100f"},
    )


# --- ROCm  ---------------------------------------------------------------------


def test_rocm_supported_list() -> None:
    assert ROCM_SUPPORTED_ARCHS == (
        "gfx906",
        "gfx908",
        "gfx90a",
        "gfx942",
        "gfx950",
        "gfx1030",
        "gfx1100",
        "gfx1101",
        "gfx1200",
        "gfx1201",
    )
    assert all(ROCM_ARCH_RE.fullmatch(a) for a in ROCM_SUPPORTED_ARCHS)


def test_select_rocm_archs() -> None:
    assert select_rocm_archs(["gfx90a", "gfx940", "gfx942", "gfx1100"]) == ("gfx90a", "gfx942", "gfx1100")
    assert select_rocm_archs(None) == ROCM_SUPPORTED_ARCHS
    assert select_rocm_archs(["gfx940"]) == ()
    assert select_rocm_archs(["gfx1201", "gfx906", "gfx1201"]) == ("gfx906", "gfx1201")
    assert select_rocm_archs(["gfx90a:xnack+"]) == ()


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("gfx90a", True),
        ("gfx1100", True),
        ("gfx11-generic", True),
        ("gfx90a:xnack+", False),
        ("GFX90A", False),
        ("gfx", False),
        ("sm_90", False),
        ("gfx90a\n", False),
    ],
)
def test_rocm_arch_re(text: str, ok: bool) -> None:
    assert (ROCM_ARCH_RE.fullmatch(text) is not None) is ok


# --- loader run check (docs/loading.md) ----------------------------------------------


@pytest.mark.parametrize(
    ("device", "entry", "runs"),
    [
        ((9, 0), "9.0a", True),
        ((9, 1), "9.0a", False),
        ((10, 0), "9.0a", False),
        ((10, 3), "10.0f", True),
        ((10, 0), "10.0f", True),
        ((12, 0), "10.0f", False),
        ((8, 6), "8.0", True),
        ((8, 0), "8.0", True),
        ((9, 0), "8.0", False),
        ((7, 5), "8.0", False),
        ((10, 0), "9.0+PTX", True),
        ((12, 1), "9.0+PTX", True),
        ((8, 9), "9.0+PTX", False),
        ((10, 0), "9.0a+PTX", False),
        ((9, 0), "9.0a+PTX", True),
        ((12, 0), "10.0f+PTX", False),
        ((10, 3), "10.0f+PTX", True),
    ],
)
def test_device_runs(device: tuple[int, int], entry: str, runs: bool) -> None:
    assert device_runs(device, entry) is runs


def test_device_runs_rejects_bad_entry() -> None:
    with pytest.raises(ValueError):
        device_runs((9, 0), "sm_90")


def test_device_arch_mismatch_example() -> None:
    # Loader: a 10.0 GPU cannot run "8.0, 9.0" but runs a "9.0+PTX" build.
    assert not any(device_runs((10, 0), e) for e in ["8.0", "9.0"])
    assert any(device_runs((10, 0), e) for e in ["8.0", "9.0+PTX"])


@pytest.mark.parametrize(
    ("arch", "entry", "runs"),
    [
        ("gfx90a", "gfx90a", True),
        ("gfx90a:sramecc+:xnack-", "gfx90a", True),
        ("gfx90a", "gfx90a:xnack+", True),
        ("gfx1100", "gfx90a", False),
        ("gfx1100", "gfx942", False),
        ("gfx942", "gfx94", False),
    ],
)
def test_rocm_device_runs(arch: str, entry: str, runs: bool) -> None:
    assert rocm_device_runs(arch, entry) is runs


# --arch LIST (explicit capabilities)


def test_supported_capabilities_are_every_default_list() -> None:
    assert supported_capabilities() == (
        "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "11.0", "12.0", "12.1",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "archs"),
    [
        ("9.0", ("9.0",)),
        ("9.0a,8.0", ("8.0", "9.0a")),
        (" 8.0 , 9.0 ", ("8.0", "9.0")),
        ("9.0,9.0+PTX", ("9.0+PTX",)),
        ("10.0f,12.0a", ("10.0f", "12.0a")),
    ],
)
def test_explicit_archs(text: str, archs: tuple[str, ...]) -> None:
    assert explicit_archs(text) == archs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--arch '': expected 'native' or capabilities separated by commas, e.g. 8.0,9.0a"),
        ("8.0,", "--arch '8.0,': expected 'native' or capabilities separated by commas, e.g. 8.0,9.0a"),
        (
            "sm_90",
            "--arch: invalid CUDA capability 'sm_90': expected e.g. '8.0', '9.0a', '12.0+PTX'; did you mean '9.0'?",
        ),
        (
            "8.1",
            "--arch: 8.1 is not a supported CUDA capability (supported: 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, "
            "10.0, 10.1, 11.0, 12.0, 12.1; an 'a' suffix from 9.0, an 'f' suffix from 10.0, '+PTX' on any)",
        ),
        (
            "8.0a",
            "--arch: 8.0a does not exist: arch-specific ('a') capabilities start at 9.0, family ('f') ones at 10.0",
        ),
        (
            "9.0f",
            "--arch: 9.0f does not exist: arch-specific ('a') capabilities start at 9.0, family ('f') ones at 10.0",
        ),
    ],
)
def test_explicit_archs_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        explicit_archs(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("requested", "cuda", "explicit", "selection"),
    [
        (None, (13, 0), ("8.0", "9.0a"), Selection(("8.0", "9.0a"))),
        (None, (13, 0), ("7.0", "9.0"), Selection(("9.0",), ("7.0",))),  # CUDA 13 builds no 7.0
        (None, (12, 8), ("7.0", "10.1"), Selection(("7.0", "10.1"))),
        (None, (12, 8), ("10.0f",), Selection((), ("10.0f",))),  # family targets need CUDA 12.9
        (("8.0", "9.0a"), (13, 0), ("9.0",), Selection(("9.0a",))),
        (("8.0",), (13, 0), ("9.0",), Selection(())),
        (("8.0",), (13, 0), ("11.0",), Selection(())),
        (("8.0",), (13, 0), ("8.9",), Selection(("8.0",))),
    ],
)
def test_select_explicit(
    requested: tuple[str, ...] | None, cuda: tuple[int, int], explicit: tuple[str, ...], selection: Selection
) -> None:
    assert select_explicit(requested, cuda, explicit) == selection
    assert gencode_flags(select_explicit(None, (13, 0), ("9.0",)).archs) == [
        "-gencode=arch=compute_90,code=sm_90"
    ]
