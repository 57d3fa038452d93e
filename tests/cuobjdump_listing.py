"""What ``cuobjdump`` shows for a CUDA build: the tests' check that a binary holds exactly the capabilities asked.

Test code only (the builder never runs cuobjdump): the CUDA build tests list a built extension's images with
``cuobjdump --list-elf`` / ``--list-ptx`` and compare them with what the requested capability list should give.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kernel_builder.backends.gpu_archs import parse_capability


def expected_cuobjdump_images(archs: Sequence[str]) -> tuple[set[str], set[str]]:
    """The (ELF, PTX) names ``cuobjdump --list-elf`` / ``--list-ptx`` show for a build of ``archs``.

    Names are those :func:`cuobjdump_names` extracts. cuobjdump names every image ``sm_...``: an
    ``f`` cubin under its plain name (``10.0f`` -> ``sm_100``), an ``a`` cubin with its suffix
    (``9.0a`` -> ``sm_90a``); PTX, present only for ``+PTX`` entries, keeps the suffix
    (``9.0+PTX`` -> ``sm_90``, ``10.0f+PTX`` -> ``sm_100f``). Checked against cuobjdump 13.1.
    """
    elf: set[str] = set()
    ptx: set[str] = set()
    for text in archs:
        cap = parse_capability(text)
        elf.add(f"sm_{cap.plain.code}" if cap.suffix == "f" else f"sm_{cap.code}")
        if cap.ptx:
            ptx.add(f"sm_{cap.code}")
    return elf, ptx


_CUOBJDUMP_LINE_RE = re.compile(r"^(?:ELF|PTX) file\s+\d+:\s*\S*?\.(sm_[0-9]+[af]?)\.(?:cubin|ptx)\s*$")


def cuobjdump_names(listing: str) -> set[str]:
    """The image names (``sm_90a``) in ``cuobjdump --list-elf`` or ``--list-ptx`` output.

    Lines such as ``ELF file    1: k.1.sm_90a.cubin`` or ``PTX file    1: k.1.sm_90.ptx``; other
    lines (``cuobjdump info : ...``) are ignored.
    """
    names: set[str] = set()
    for line in listing.splitlines():
        match = _CUOBJDUMP_LINE_RE.match(line.strip())
        if match is not None:
            names.add(match[1])
    return names
