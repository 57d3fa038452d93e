"""``kernel-builder bench ORG/NAME`` (kernel_builder.authoring.bench_hub): a published kernel fetched through the
loader's checks and its ``benchmarks/benchmark*.py`` run, against the Hub double with the real huggingface_hub
client, in the real environment of this machine (a pure-Python universal variant, so nothing is compiled)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_runs import run_cli
from hub_server import HubServer, files_from_directory
from loader_fixtures import write_variant

from kernel_builder.authoring.bench_hub import HubRelease, fetch_benchmarks, looks_like_release, parse_release
from kernel_builder.errors import HubError, UsageError

pytest.importorskip("torch")

REPO = "org/relu"
VARIANT = "torch-universal"
INIT = """import torch

NAME = __name__


def relu(x):
    return torch.clamp(x, min=0)


def wrong(x):
    return x
"""
#: Upstream's form: what `kernels benchmark` runs, importing upstream's class.
BENCHMARK = """import torch
from kernels.benchmark import Benchmark


class Relu(Benchmark):
    seed = 0

    def setup(self):
        self.x = torch.randn(1 << 14, device=self.device)
        self.out = torch.empty_like(self.x)
        self.bytes = 2 * self.x.nbytes

    def benchmark_relu(self):
        self.out = self.kernel.relu(self.x)

    def verify_relu(self):
        return torch.relu(self.x)
"""
#: Published next to the benchmark, but not a benchmark file: it must not run.
HELPER = "raise SystemExit('benchmarks/helper.py must not run')\n"


def publish(hub: HubServer, tmp_path: Path, *, trusted: bool = True, benchmarks: bool = True) -> str:
    """A repository with release v1: one universal variant (its digest written) and the benchmark files."""
    hub.add_organization("org", trusted=trusted)
    hub.create_repo(REPO)
    hub.create_branch(REPO, "v1")
    write_variant(tmp_path / "build" / VARIANT, kernel_id="_relu_universal_abc", backend="cpu",
                  files={"__init__.py": INIT})  # fmt: skip
    files: dict[str, bytes | str] = {**files_from_directory(tmp_path / "build", "build")}
    if benchmarks:
        files |= {"benchmarks/benchmark.py": BENCHMARK, "benchmarks/helper.py": HELPER}
    return hub.commit(REPO, files, branch="v1")


def test_the_release_is_named_as_for_a_load() -> None:
    assert parse_release("org/relu", 1) == HubRelease("org/relu", version=1)
    assert parse_release("org/relu@v2") == HubRelease("org/relu", version=2)
    assert parse_release("org/relu@main") == HubRelease("org/relu", revision="main")
    assert parse_release("org/relu", revision="abc").label == "org/relu@abc"
    for spec, version, revision, message in [
        ("org/relu", None, None, "say which release: --version N, --revision REV"),
        ("org/relu@3", None, None, "a version is written with a v: org/relu@v3"),
        ("org/relu@v1", 1, None, "the release is given twice"),
        ("org/relu", 1, "main", "not both"),
        ("org/relu@", None, None, "nothing after @"),
        ("not a/repo", 1, None, "not a kernel directory, nor a Hub repo id"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_release(spec, version, revision)


def test_a_directory_is_a_project_an_org_name_with_a_release_a_hub_kernel(tmp_path: Path) -> None:
    (tmp_path / "org" / "relu").mkdir(parents=True)
    assert looks_like_release(str(tmp_path / "org" / "relu"), None, None) is False
    assert looks_like_release("org/nothing-here", None, None) is True
    assert looks_like_release(".", 1, None) is True
    assert looks_like_release("org/relu@v1", None, None) is True


@pytest.mark.slow
def test_bench_a_hub_kernel_by_version(hub: HubServer, tmp_path: Path) -> None:
    """Release 1 is resolved to its commit, the variant downloaded and digest-verified by the loader, and the
    repository's benchmark file run against it (the helper next to it is neither copied nor run)."""
    sha = publish(hub, tmp_path)
    report = tmp_path / "report.json"
    run = run_cli(["bench", REPO, "--version", "1", "--runs", "3", "--warmup", "1", "--json", report],
                  cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    assert (
        f"{REPO}@v1: commit {sha}, variant {VARIANT} (digest verified); benchmarks/: benchmark.py"
        in run.stderr
    )
    assert f"{REPO}@{sha}: mode: Benchmark classes of benchmarks/benchmark*.py" in run.stdout
    data = json.loads(report.read_text())
    assert (
        data["source"] == "Benchmark classes" and data["threads"] == 1 and data["kernel"] == f"{REPO}@{sha}"
    )
    (result,) = data["results"]
    assert result["name"] == "Relu.relu" and result["verified"] is True and result["error"] == ""
    assert result["kernel"]["median_us"] > 0 and result["reference"]["median_us"] > 0
    assert result["kernel"]["rounds"] >= 3  # timed in rounds, as a local project
    assert result["bytes"] == 2 * 4 * (1 << 14)
    assert "must not run" not in run.stdout + run.stderr
    # What was fetched: the variant and the benchmarks/ folder, at the commit v1 resolved to.
    fetched = {r.path.split("/resolve/", 1)[1] for r in hub.requests if "/resolve/" in r.path}
    assert f"{sha}/benchmarks/benchmark.py" in fetched and f"{sha}/build/{VARIANT}/__init__.py" in fetched
    # The same release by its commit, written after @ (no JSON asked for: the table only).
    again = run_cli(["bench", f"{REPO}@{sha}", "--runs", "2", "--warmup", "0"], cwd=tmp_path)
    assert again.returncode == 0 and "Relu.relu" in again.stdout, again.stderr
    assert f"{REPO}@{sha}: commit {sha}" in again.stderr


@pytest.mark.slow
def test_an_untrusted_publisher_is_refused_before_anything_runs(hub: HubServer, tmp_path: Path) -> None:
    publish(hub, tmp_path, trusted=False)
    run = run_cli(["bench", f"{REPO}@v1", "--runs", "2"], cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "org" in run.stderr and "trust" in run.stderr.lower(), run.stderr
    assert not any("/benchmarks/" in r.path for r in hub.requests)
    # With --trust-remote-code the user vouches for it: the check is skipped and the benchmark runs.
    trusted = run_cli(
        ["bench", f"{REPO}@v1", "--runs", "2", "--warmup", "0", "--trust-remote-code"], cwd=tmp_path
    )
    assert trusted.returncode == 0 and "Relu.relu" in trusted.stdout, trusted.stderr


@pytest.fixture
def fresh_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    """No publisher verdict remembered from another test (the loader keeps them for the process)."""
    from kernel_builder.loader import trust

    monkeypatch.setattr(trust, "_verdicts", {})


def test_a_release_without_benchmark_files(hub: HubServer, tmp_path: Path, fresh_trust: None) -> None:
    sha = publish(hub, tmp_path, benchmarks=False)
    with pytest.raises(HubError) as caught:
        fetch_benchmarks(parse_release(f"{REPO}@v1"), tmp_path / "scratch", trust_remote_code=False)
    assert str(caught.value) == (
        f"{REPO}@v1 (commit {sha[:12]}) ships no benchmarks/benchmark*.py: there is nothing to run "
        "(kernel-builder bench runs a repository's Benchmark classes)"
    )
    assert not list((tmp_path / "scratch" / "benchmarks").iterdir())


def test_a_missing_release_and_a_missing_repository(
    hub: HubServer, tmp_path: Path, fresh_trust: None
) -> None:
    publish(hub, tmp_path)
    with pytest.raises(HubError, match=rf"^{REPO}@v7: .*version 7"):
        fetch_benchmarks(HubRelease(REPO, version=7), tmp_path / "a", trust_remote_code=False)
    with pytest.raises(HubError, match=r"^org/nothing@v1: "):
        fetch_benchmarks(HubRelease("org/nothing", version=1), tmp_path / "b", trust_remote_code=False)
    usage = run_cli(["bench", "org/nothing"], cwd=tmp_path)  # refused before torch or the Hub is touched
    assert usage.returncode == 2 and "say which release" in usage.stderr and "Traceback" not in usage.stderr
