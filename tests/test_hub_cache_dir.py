"""An unusable cache directory, and a download that fails half-way (kernel_builder/hub.py, docs/environment.md).

The cache directory comes from ``KERNELS_CACHE``, ``HF_HUB_CACHE`` or ``HF_HOME``: when it is a device, a file,
or cannot be written, the error names that variable and what to do, instead of a raw ``PermissionError`` or
``NotADirectoryError``. A download that fails while writing (a full disk) leaves no half variant behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import FILES, env_machine, seed_version_one  # noqa: F401  (env_machine: a fixture)

from kernel_builder.hub import CacheError
from kernel_builder.loader import get_kernel

pytestmark = pytest.mark.usefixtures("env_machine")

REPO = "org/relu"
VARIANT = "torch212-cxx11-cu130-x86_64-linux"
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("KERNELS_CACHE", "/dev/null", "KERNELS_CACHE (/dev/null) is not a directory (a character device)"),
        ("KERNELS_CACHE", "{file}", "KERNELS_CACHE ({file}) is not a directory (a regular file)"),
        ("HF_HUB_CACHE", "{file}/hub", "HF_HUB_CACHE ({file}/hub) cannot be created: Not a directory"),
        ("HF_HOME", "/dev/null", "HF_HOME (/dev/null/hub) cannot be created: Not a directory"),
    ],
)
def test_an_unusable_cache_directory_names_its_variable(
    hub: HubServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    message: str,
) -> None:
    seed_version_one(hub, tmp_path / "publish", tag="cachedir")
    file = tmp_path / "a-file"
    file.write_text("")
    for name in ("KERNELS_CACHE", "HF_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value.format(file=file))
    with pytest.raises(CacheError) as caught:
        get_kernel(REPO, version=1)
    assert str(caught.value) == (
        message.format(file=file)
        + "; point KERNELS_CACHE at a writable directory, or set HF_HUB_OFFLINE=1 to "
        "load only what the cache already holds"
    )
    assert isinstance(caught.value, OSError)


def run_as_other_process(script: str, *, nobody: bool = False, file_limit: int | None = None) -> str:
    """Run ``script`` (a load against the double, the environment faked as in these tests) in a subprocess;
    as the unprivileged user ``nobody`` or with a cap on file sizes. Returns what it printed."""
    prelude = textwrap.dedent(
        f"""
        import resource, signal, sys
        sys.path[:0] = [{str(TESTS)!r}, {str(ROOT)!r}]
        if {file_limit!r} is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, ({file_limit!r}, {file_limit!r}))
        from loader_fixtures import ENV
        from kernel_builder.formats import runtime
        from kernel_builder.loader import resolve
        runtime.detect_environment = lambda: ENV
        resolve.probe_gpus = lambda backend: []
        """
    )
    argv = [sys.executable, "-c", prelude + textwrap.dedent(script)]
    if nobody:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_read_only_cache_names_its_variable(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the load as a user who cannot write the cache")
    reach = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
         f"import sys; sys.path[:0] = [{str(TESTS)!r}, {str(ROOT)!r}]; import loader_fixtures, kernel_builder.loader"],
        capture_output=True,
    )  # fmt: skip
    if reach.returncode != 0:  # e.g. a checkout under a `mktemp -d` directory (mode 0700)
        pytest.skip("the unprivileged user cannot import this checkout (a parent directory is 0700)")
    seed_version_one(hub, tmp_path / "publish", tag="cachedir")
    # Outside pytest's temporary root (mode 0700): the other user must reach the cache but not write it.
    base = Path(tempfile.mkdtemp(prefix="kb-readonly-cache-"))
    try:
        base.chmod(0o755)
        shared = base / "hub"
        shared.mkdir(mode=0o755)
        monkeypatch.setenv("KERNELS_CACHE", str(shared))
        out = run_as_other_process(
            """
            from kernel_builder.hub import CacheError
            from kernel_builder.loader import get_kernel
            try:
                get_kernel("org/relu", version=1)
            except CacheError as error:
                print(error)
            """,
            nobody=True,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert out.strip() == (
        f"KERNELS_CACHE ({shared}) is not writable; point KERNELS_CACHE at a writable directory, or set "
        "HF_HUB_OFFLINE=1 to load only what the cache already holds"
    )


def test_a_download_that_fails_half_way_leaves_no_partial_variant(hub: HubServer, tmp_path: Path) -> None:
    """A full disk, reproduced by a cap on file sizes (RLIMIT_FSIZE): one large file fails to be written."""
    sha = seed_version_one(
        hub, tmp_path / "publish", tag="cachedir", files={**FILES, "weights.py": "# " + "x" * 400_000 + "\n"}
    )
    out = run_as_other_process(
        """
        import json
        from kernel_builder.hub import CacheError
        from kernel_builder.loader import get_kernel
        try:
            get_kernel("org/relu", version=1)
        except CacheError as error:
            print(json.dumps(str(error)))
        """,
        file_limit=200_000,
    )
    message = json.loads(out)
    assert message.startswith(f"org/relu: downloading build/{VARIANT} at {sha} into ")
    assert "File too large" in message and "the partial download was removed" in message
    repo = Path(os.environ["KERNELS_CACHE"]) / "kernels--org--relu"
    variant = repo / "snapshots" / sha / "build" / VARIANT
    assert sorted(p.name for p in variant.iterdir()) == [
        "metadata.json"
    ]  # read earlier, to choose the variant
    assert list((repo / "blobs").glob("*.incomplete")) == []
    # With room again, the same load succeeds from scratch.
    module = get_kernel(REPO, version=1)
    assert module.__name__.startswith("_relu_cachedir_")
