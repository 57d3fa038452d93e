"""Kernel test suites written the ways public kernels write them, and interpreters that lack pytest.

``mixed_suite_project`` renders ``kb-mix``, a pure-Python (``[torch-noarch]``) kernel whose ``tests/`` combine
the import patterns of public kernels' suites that `kernel-builder test` must run unchanged:

- ``tests/conftest.py`` puts the source tree (``torch-ext``) first on ``sys.path`` and imports a helper module,
  ``tests/utils.py``, that imports the package at import time (``from kb_mix.core import FACTOR``): the build must
  be importable before pytest imports the first conftest, and win over the source tree;
- ``tests/upstream/__init__.py`` loads the kernel with Hugging Face's ``kernels.get_kernel`` (through
  ``LOCAL_KERNELS``) and reads a submodule attribute of it (``_kernel._backends``), bound only when the package
  is executed once: the module the ``kernels`` package returns must be the one already imported;
- ``tests/upstream/test_upstream.py`` compares every way of loading the kernel in one process;
- ``tests/test_subprocess.py`` imports the package, and loads it through both loaders in both orders, in child
  processes, where no pytest plugin runs.

The package itself binds ``_backends`` only through the import system: ``__init__`` imports ``core``, which
imports ``_backends``.

``bare_venv`` makes a virtual environment without pip whose ``site-packages`` sees only chosen entries of this
interpreter's (torch, say), through a ``.pth`` file naming a directory of links: ``--system-site-packages``
would show pytest too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

from cpu_projects import write_tree

REPO_ID = "kb-tests/kb-mix"
#: The number of tests in the suite, all of which pass under `kernel-builder test`.
SUITE_TESTS = 5

_SUBPROCESS_TESTS = '''
import json
import subprocess
import sys
from pathlib import Path

import kb_mix

ROOT = Path(__file__).resolve().parents[1]
HEAD = f"import json, pathlib\\nREPO = @REPO@\\nROOT = pathlib.Path({str(ROOT)!r})\\n"


def run(code):
    result = subprocess.run([sys.executable, "-c", HEAD + code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_by_name_then_kernels_in_a_child():
    out = run("""
import kb_mix, kernels, kernel_builder
k = kernels.get_kernel(REPO, version=1)
print(json.dumps([kb_mix.__name__, kb_mix.__file__, kb_mix.double(2), k is kb_mix, hasattr(k, "_backends"),
                  kernels.get_local_kernel(ROOT) is k, kernel_builder.get_local_kernel(ROOT) is k]))
""")
    assert out == [kb_mix.__name__, kb_mix.__file__, 4, True, True, True, True]


def test_kernels_first_in_a_child():
    out = run("""
import kernels
k = kernels.get_kernel(REPO, version=1)
import kb_mix, kernel_builder
print(json.dumps([k is kb_mix, kernel_builder.get_kernel(REPO, version=1) is k,
                  k._backends is kb_mix.core._backends]))
""")
    assert out == [True, True, True]


def test_both_get_kernels_without_the_name_in_a_child():
    out = run("""
import kernel_builder, kernels
ours = kernel_builder.get_kernel(REPO, version=1)
theirs = kernels.get_kernel(REPO, version=1)
print(json.dumps([ours is theirs, hasattr(theirs, "_backends"), len(kernels.get_loaded_kernels())]))
""")
    assert out == [True, True, 1]
'''.replace("@REPO@", repr(REPO_ID))

_UPSTREAM_TESTS = f"""
from pathlib import Path

import kb_mix
import kernel_builder
import kernels

from . import _backends, _kernel

ROOT = Path(__file__).resolve().parents[2]


def test_every_way_of_loading_gives_one_complete_module():
    assert _kernel is kb_mix
    assert kernel_builder.get_kernel({REPO_ID!r}, version=1) is kb_mix
    assert kernels.get_kernel({REPO_ID!r}, version=1) is kb_mix
    assert kernels.get_local_kernel(ROOT) is kb_mix
    assert kernel_builder.get_local_kernel(ROOT) is kb_mix
    import kb_mix._backends as by_name

    assert kb_mix._backends is _backends is kb_mix.core._backends is by_name
    assert all(entry.module is kb_mix for entry in kernels.get_loaded_kernels())
"""


def mixed_suite_project(root: Path) -> Path:
    """``kb-mix`` with its test suite (see the module docstring)."""
    return write_tree(
        root,
        {
            "build.toml": f"""
                [general]
                name = "kb-mix"
                version = 1
                edition = 5
                license = "Apache-2.0"
                backends = ["cpu", "cuda"]

                [general.hub]
                repo-id = "{REPO_ID}"

                [torch-noarch]
            """,
            "torch-ext/kb_mix/__init__.py": 'from .core import double\n\n__all__ = ["double"]\n',
            "torch-ext/kb_mix/core.py": """
                from . import _backends

                FACTOR = 2


                def double(x):
                    return _backends.scale(x, FACTOR)
            """,
            "torch-ext/kb_mix/_backends.py": "def scale(x, factor):\n    return x * factor\n",
            "tests/conftest.py": """
                import sys
                from pathlib import Path

                # The source tree first on sys.path, as some suites do: the build must still be what they get.
                sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "torch-ext"))

                from utils import FACTOR  # noqa: E402,F401 - imports the package at import time
            """,
            "tests/utils.py": "from kb_mix.core import FACTOR  # noqa: F401\n",
            "tests/test_by_name.py": """
                import os

                import kb_mix
                from utils import FACTOR


                def test_the_build_not_the_source_tree():
                    assert f"{os.sep}build{os.sep}" in kb_mix.__file__, kb_mix.__file__
                    assert kb_mix.__name__.startswith("_kb_mix_")
                    assert FACTOR == 2 and kb_mix.double(3) == 6
            """,
            "tests/upstream/__init__.py": f"""
                import kernels

                _kernel = kernels.get_kernel("{REPO_ID}", version=1)
                _backends = _kernel._backends
            """,
            "tests/upstream/test_upstream.py": _UPSTREAM_TESTS,
            "tests/test_subprocess.py": _SUBPROCESS_TESTS,
        },
    )


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Path(out.strip())


def bare_venv(path: Path, keep: Callable[[str], bool] = lambda name: False) -> Path:
    """A venv without pip whose ``site-packages`` also sees the entries of this interpreter's for which
    ``keep(name)`` is true; returns its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    python = path / "bin" / "python"
    links = path / "links"
    links.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in sorted(ours.iterdir()):
        if not entry.name.endswith(".pth") and entry.name != "__pycache__" and keep(entry.name):
            os.symlink(entry, links / entry.name)
    (site_packages(python) / "kb_links.pth").write_text(f"{links}\n", encoding="utf-8")
    return python


def without_pytest_and_kernels(name: str) -> bool:
    """Everything but pytest (and what only pytest uses), pip and kernels."""
    dropped = ("pytest", "_pytest", "py.py", "pluggy", "iniconfig", "pip", "kernels")
    return not any(name == d or name.startswith(d.removesuffix(".py") + "-") for d in dropped)
