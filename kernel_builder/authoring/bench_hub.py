"""``kernel-builder bench ORG/NAME``: benchmark a published kernel, as upstream's ``kernels benchmark ORG/NAME``.

The release is named as for a load: ``--version N`` (branch ``vN``), ``--revision REV``, or in the argument,
``ORG/NAME@vN`` and ``ORG/NAME@REV``. The kernel comes through the loader's own path,
:func:`kernel_builder.loader.install_kernel`: the trust gate (``--trust-remote-code`` skips it), the revision
resolved to a commit, the variant for this machine chosen, downloaded and its digest verified. The benchmark
files are fetched at that same commit (``benchmarks/benchmark*.py``, the files ``upload`` publishes), copied into
a private directory by name (nothing else of the repository runs), and the benchmark process loads the kernel
with :func:`kernel_builder.get_kernel` at the commit, which verifies it again, then runs the ``Benchmark``
classes (:mod:`kernel_builder.authoring.bench_classes`) as for a local project.

The benchmark files are code from the repository, like the kernel: they run only behind the same trust gate.
They are not covered by the variant's digest (no digest lists them); they come from the commit the verified
variant came from.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.authoring.bench import BenchOptions
from kernel_builder.errors import HubError, KernelBuilderError, UsageError
from kernel_builder.formats.identifiers import is_commit_id, repo_id_problem

__all__ = ["HubRelease", "fetch_benchmarks", "parse_release", "run_hub_benchmarks"]

#: The benchmark files a repository may ship: directly in ``benchmarks/``, a plain name.
BENCHMARK_NAME = re.compile(r"benchmark[A-Za-z0-9_.-]*\.py")
_VERSION = re.compile(r"v([0-9]+)")


@dataclass(frozen=True)
class HubRelease:
    """A Hub kernel and which of its releases: a ``version`` (branch ``v<N>``) or a ``revision``."""

    repo_id: str
    version: int | None = None
    revision: str | None = None

    @property
    def label(self) -> str:
        return (
            f"{self.repo_id}@v{self.version}"
            if self.version is not None
            else f"{self.repo_id}@{self.revision}"
        )


def looks_like_release(path: str, version: int | None, revision: str | None) -> bool:
    """Whether ``kernel-builder bench PATH`` names a Hub kernel: a release is given (``--version``,
    ``--revision``, ``@``), or ``PATH`` is ``ORG/NAME`` and no such directory exists."""
    if version is not None or revision is not None or "@" in path:
        return True
    return repo_id_problem(path) is None and not Path(path).exists()


def parse_release(spec: str, version: int | None = None, revision: str | None = None) -> HubRelease:
    """``ORG/NAME`` with ``--version``/``--revision``, or ``ORG/NAME@vN`` / ``ORG/NAME@REV``; exactly one
    release. Raises :class:`UsageError` saying what to write."""
    repo_id, at, ref = spec.partition("@")
    if at:
        if version is not None or revision is not None:
            raise UsageError(
                f"{spec}: the release is given twice (after @ and by --version/--revision): keep one"
            )
        match = _VERSION.fullmatch(ref)
        if match:
            version = int(match.group(1))
        elif ref.isdigit():
            raise UsageError(f"{spec}: a version is written with a v: {repo_id}@v{ref} (or --version {ref})")
        elif ref:
            revision = ref
        else:
            raise UsageError(f"{spec}: nothing after @: write {repo_id}@vN or {repo_id}@REVISION")
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise UsageError(f"{repo_id}: not a kernel directory, nor a Hub repo id ORG/NAME: {problem}")
    if version is not None and revision is not None:
        raise UsageError(f"{repo_id}: give --version or --revision, not both")
    if version is None and revision is None:
        raise UsageError(
            f"{repo_id}: no such directory; to benchmark the Hub kernel, say which release: --version N, "
            f"--revision REV, {repo_id}@vN or {repo_id}@REV"
        )
    if version is not None and version < 0:
        raise UsageError(f"{repo_id}: --version must be 0 or more, not {version}")
    return HubRelease(repo_id, version, revision)


def fetch_benchmarks(release: HubRelease, destination: Path, *, trust_remote_code: bool) -> tuple[str, Path]:
    """Download the kernel's variant for this machine through the loader's checks, and copy its
    ``benchmarks/benchmark*.py`` at the same commit into ``destination/benchmarks``.

    Returns the commit and the verified variant directory. Raises :class:`HubError` when the repository ships
    no benchmark file.
    """
    from kernel_builder.hub import REQUEST_ERRORS, Hub, RemoteRepo, describe_error
    from kernel_builder.loader import install_kernel

    failures: tuple[type[Exception], ...] = (*REQUEST_ERRORS, ValueError)

    try:
        variant_dir = install_kernel(
            release.repo_id,
            version=release.version,
            revision=release.revision,
            trust_remote_code=trust_remote_code,
        )
    except KernelBuilderError:  # untrusted, no compatible variant, a digest that does not match: said already
        raise
    except failures as error:  # not found, no such version, the network
        raise HubError(f"{release.label}: {describe_error(error)}") from error
    sha = variant_dir.parent.parent.name  # <snapshot named by its commit>/build/<variant>
    if not is_commit_id(sha):
        raise HubError(f"{release.label}: the download is not in a commit's snapshot ({variant_dir})")
    hub = Hub()
    repo = RemoteRepo(release.repo_id)
    try:
        folder = hub.download_folder(repo, sha, "benchmarks")
    except FileNotFoundError:
        folder = None
    target = destination / "benchmarks"
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    if folder is not None:
        root = hub.repo_folder(RemoteRepo(release.repo_id, repo.repo_type)).resolve()
        for path in sorted(folder.iterdir()):
            # Only plain names of the published form; their content (a link into the cache's blobs) must stay
            # inside this repository's cache folder.
            if not BENCHMARK_NAME.fullmatch(path.name) or not path.is_file():
                continue
            if not path.resolve().is_relative_to(root):
                raise HubError(
                    f"{release.label}: benchmarks/{path.name} points outside the cache ({path.resolve()})"
                )
            (target / path.name).write_bytes(path.read_bytes())
            copied.append(path.name)
    if not copied:
        raise HubError(
            f"{release.label} (commit {sha[:12]}) ships no benchmarks/benchmark*.py: there is nothing to run "
            "(kernel-builder bench runs a repository's Benchmark classes)"
        )
    return sha, variant_dir


def run_hub_benchmarks(release: HubRelease, options: BenchOptions, *, trust_remote_code: bool = False) -> int:
    """Fetch (:func:`fetch_benchmarks`) and run the benchmark process on the Hub kernel; its exit status."""
    import os

    with tempfile.TemporaryDirectory(prefix="kernel-builder-bench-") as scratch:
        sha, variant_dir = fetch_benchmarks(release, Path(scratch), trust_remote_code=trust_remote_code)
        files = ", ".join(sorted(p.name for p in (Path(scratch) / "benchmarks").iterdir()))
        print(f"{release.label}: commit {sha}, variant {variant_dir.name} (digest verified); benchmarks/: {files}",
              file=sys.stderr)  # fmt: skip
        argv = [sys.executable, "-m", "kernel_builder.authoring.bench", f"{release.repo_id}@{sha}", scratch,
                "--hub", *options.argv()]  # fmt: skip
        if trust_remote_code:
            argv.append("--trust-remote-code")
        return subprocess.run(argv, cwd=scratch, env=options.environment(os.environ), check=False).returncode
