"""The author's source lines that error messages point at (kernel_builder/common/source_lines.py)."""

from __future__ import annotations

from pathlib import Path

from kernel_builder.common.source_lines import source_lines


def test_only_the_authors_sources_with_the_suffixes_asked_for(tmp_path: Path) -> None:
    for relative, text in {
        "csrc/relu.cu": "  void relu(float x);  \n\nint y;\n",
        "torch-ext/binding.h": "void relu(float x);\n",
        "torch-ext/notes.txt": "void relu(float x);\n",
        "build/torch213-cxx11-cpu-x86_64-linux/relu.h": "void relu(float x);\n",
        ".kernel-builder/stage/relu.cu": "void relu(float x);\n",
        ".git/relu.h": "void relu(float x);\n",
    }.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert list(source_lines(tmp_path, (".cu", ".h"))) == [
        ("csrc/relu.cu", 1, "void relu(float x);"),
        ("csrc/relu.cu", 2, ""),
        ("csrc/relu.cu", 3, "int y;"),
        ("torch-ext/binding.h", 1, "void relu(float x);"),
    ]


def test_an_unreadable_file_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "a.h").write_text("int a;\n", encoding="utf-8")
    (tmp_path / "b.h").symlink_to(tmp_path / "missing.h")  # rglob lists it; reading it fails
    assert list(source_lines(tmp_path, (".h",))) == [("a.h", 1, "int a;")]
