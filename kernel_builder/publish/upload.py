"""``kernel-builder upload``: plan an upload against the Hub, then make it (docs/cli.md).

:func:`upload` resolves the target (repo id, branch, type), collects the content
(:mod:`~kernel_builder.publish.content`), and builds an :class:`UploadPlan` with read calls only: whether the
repo and branch exist, which files are new or changed (compared by git blob id or LFS SHA-256 with the tree
listing), and which are deleted; then the completeness gate (:mod:`~kernel_builder.publish.completeness`)
checks that the release has every required variant, counting those the branch already has. A dry run stops
there, and works without the network: offline (``HF_HUB_OFFLINE``), or when the Hub cannot be reached, it plans
from the local files alone and says so. Otherwise it creates the repo and branch if needed and
commits the changes in path order, in batches of at most :data:`MAX_OPERATIONS_PER_COMMIT`, then the card as
``README.md`` on ``main`` in its own commit. With ``create_pr`` each branch's first commit opens a pull request
and later batches go to it. The module never prints; the CLI renders the plan and the result.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_builder import __version__
from kernel_builder.errors import HubConnectionError, HubError, UsageError
from kernel_builder.formats.identifiers import repo_id_problem
from kernel_builder.hub import (
    KERNEL,
    MODEL,
    REQUEST_ERRORS,
    AddFile,
    DeleteFile,
    Hub,
    RemoteFile,
    RemoteRepo,
    describe_error,
)
from kernel_builder.publish.abi_gate import abi_gate
from kernel_builder.publish.completeness import Missing, missing_variants, refusal, with_card_section
from kernel_builder.publish.content import README, Content, LocalFile, collect_content, is_benchmark

__all__ = [
    "MAX_OPERATIONS_PER_COMMIT",
    "BranchChanges",
    "PullRequest",
    "UploadOptions",
    "UploadPlan",
    "UploadResult",
    "describe_plan",
    "upload",
]

#: At most this many adds and deletes per commit; tests lower it.
MAX_OPERATIONS_PER_COMMIT = 1000

MAIN = "main"

Log = Callable[[str], None]


@dataclass(frozen=True)
class UploadOptions:
    kernel_dir: Path = Path(".")
    repo_id: str | None = None
    branch: str | None = None
    private: bool = False
    repo_type: str = KERNEL
    create_pr: bool = False
    dry_run: bool = False
    allow_abi_violations: bool = False  # upload variants check-abi rejects; the card then says so
    allow_explicit_archs: bool = False  # upload variants built for an explicit --arch list
    allow_incomplete: bool = False  # upload a release that lacks required variants; the card then lists them


@dataclass(frozen=True)
class BranchChanges:
    """What one branch gets: new or changed files, unchanged ones (not sent), and deletions."""

    branch: str
    adds: tuple[LocalFile, ...] = ()
    unchanged: tuple[LocalFile, ...] = ()
    deletes: tuple[str, ...] = ()

    @property
    def operations(self) -> list[AddFile | DeleteFile]:
        """Adds and deletes sorted by path."""
        ops: list[AddFile | DeleteFile] = [AddFile(f.path, f.source) for f in self.adds]
        ops += [DeleteFile(path) for path in self.deletes]
        return sorted(ops, key=lambda op: op.path)

    @property
    def changed(self) -> bool:
        return bool(self.adds or self.deletes)


@dataclass(frozen=True)
class UploadPlan:
    repo_id: str
    repo_type: str
    branch: str
    url: str
    create_repo: bool
    create_branch: bool
    base: str | None  # the head the version branch's changes apply to; None when the repo is created
    main_head: str | None
    files: BranchChanges
    card: BranchChanges | None
    create_pr: bool = False
    private: bool = False
    variants: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    kept_variants: tuple[str, ...] = ()  # variants the target branch has that this upload leaves in place
    hub_unknown: str | None = None  # why the Hub was not asked (a dry run offline); None when it was
    checks: tuple[str, ...] = ()  # what the checks before the upload found, one line each
    missing: tuple[Missing, ...] = ()  # required variants neither uploaded nor kept on the branch
    refused: str | None = None  # why the upload would be refused (a dry run shows it, then fails)

    @property
    def card_source(self) -> Path | None:
        """The local file the card is read from."""
        if self.card is None:
            return None
        return (self.card.adds or self.card.unchanged)[0].source

    @property
    def changed(self) -> bool:
        return (
            self.create_repo
            or self.create_branch
            or self.files.changed
            or bool(self.card and self.card.changed)
        )


@dataclass(frozen=True)
class PullRequest:
    branch: str
    url: str


@dataclass(frozen=True)
class UploadResult:
    status: str  # no_changes | uploaded | pull_request_created | dry_run
    plan: UploadPlan
    commits: tuple[str, ...] = ()
    pull_requests: tuple[PullRequest, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "repo_id": self.plan.repo_id,
            "branch": self.plan.branch,
            "url": self.plan.url,
            "pull_requests": [{"branch": pr.branch, "url": pr.url} for pr in self.pull_requests],
            "missing": [{"variant": m.variant, "runner": m.runner, "how": m.how} for m in self.plan.missing],
        }


# --- the target (repo id and branch) ---------------------------------------------------------------------------------


def _hub_settings(kernel_dir: Path) -> tuple[str | None, str | None]:
    """``[general.hub]`` ``repo-id`` and ``branch`` of the kernel's build.toml, if it has one."""
    if not (kernel_dir / "build.toml").is_file():
        return None, None
    from kernel_builder.config import load_project

    hub = load_project(kernel_dir).project.config.general.hub
    return hub.repo_id, hub.branch


def _repo_id(options: UploadOptions) -> tuple[str, str | None]:
    repo_id, branch = options.repo_id, options.branch
    if repo_id is None or branch is None:
        configured_id, configured_branch = _hub_settings(Path(options.kernel_dir))
        repo_id = repo_id or configured_id
        branch = branch or configured_branch
    if not repo_id:
        raise UsageError(
            f"no repository to upload to: pass --repo-id <org>/<name>, or set repo-id in the [general.hub] "
            f"table of {Path(options.kernel_dir) / 'build.toml'}"
        )
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise UsageError(f"invalid repo id {repo_id!r}: {problem}")
    if options.repo_type not in (KERNEL, MODEL):
        raise UsageError(f"invalid repo type {options.repo_type!r}: expected {KERNEL} or {MODEL}")
    return repo_id, branch


def _filled_card(kernel_dir: Path, repo_id: str, content: Content, scratch: Path) -> Content:
    """The kernel's ``CARD.md`` filled in for ``repo_id`` (the repository uploaded to, which ``build`` may not
    have known) in place of ``build/CARD.md``; ``content`` as it is for a directory without ``build.toml`` and
    ``CARD.md``, whose ``build/CARD.md`` goes as ``build`` wrote it."""
    from kernel_builder.config import load_project
    from kernel_builder.pipeline.card import CARD_FILE, fill_project_card

    if not ((kernel_dir / "build.toml").is_file() and (kernel_dir / CARD_FILE).is_file()):
        return content
    filled = fill_project_card(load_project(kernel_dir).project, repo_id=repo_id)
    if filled is None:
        return content
    card = scratch / README
    card.write_text(filled, encoding="utf-8")
    return dataclasses.replace(content, card=LocalFile.read(README, card))


def _branch(branch: str | None, content: Content) -> str:
    versions = content.versions
    if len(versions) > 1:
        listed = ", ".join(f"{v.name}: {v.metadata.version}" for v in content.variants)
        raise HubError(
            f"the variants in {content.variants_dir} are builds of different versions ({listed}); rebuild "
            f"them from one version of the kernel before uploading"
        )
    if branch:
        return branch
    if not versions:
        raise UsageError(
            "the variants' metadata.json has no version to name the branch after: pass --branch, or set "
            "branch in the [general.hub] table of build.toml"
        )
    return f"v{versions[0]}"


# --- the plan (repo, branch, additions and deletions) ----------------------------------------------------------------------------


def _unchanged(local: LocalFile, remote: RemoteFile | None) -> bool:
    if remote is None:
        return False
    return local.sha256 == remote.sha256 if remote.sha256 is not None else local.blob_id == remote.blob_id


def _changes(
    branch: str, files: Sequence[LocalFile], tree: Sequence[RemoteFile], doomed: Callable[[str], bool]
) -> BranchChanges:
    remote = {file.path: file for file in tree}
    sending = {file.path for file in files}
    adds = tuple(f for f in files if not _unchanged(f, remote.get(f.path)))
    unchanged = tuple(f for f in files if _unchanged(f, remote.get(f.path)))
    deletes = tuple(path for path in sorted(remote) if path not in sending and doomed(path))
    return BranchChanges(branch, adds, unchanged, deletes)


def plan_upload(
    hub: Hub, repo: RemoteRepo, content: Content, branch: str, options: UploadOptions
) -> UploadPlan:
    """Everything the upload will do, found with read calls only."""
    branches = hub.existing_branches(repo)
    url = f"{hub.repo_url(repo)}/tree/{branch}"
    variants = tuple(v.name for v in content.variants)
    common: dict[str, Any] = {
        "repo_id": repo.repo_id,
        "repo_type": options.repo_type,
        "branch": branch,
        "url": url,
        "create_pr": options.create_pr,
        "private": options.private,
        "variants": variants,
        "warnings": content.warnings,
    }
    if branches is None:
        if options.create_pr:
            raise HubError(
                f"--create-pr needs an existing repository, and {options.repo_type} repo {repo.repo_id} does "
                f"not exist on {hub.endpoint}; upload without --create-pr to create it"
            )
        files = BranchChanges(branch, tuple(content.files))
        card = BranchChanges(MAIN, (content.card,)) if content.card is not None else None
        return UploadPlan(
            **common,
            create_repo=True,
            create_branch=branch != MAIN,
            base=None,
            main_head=None,
            files=files,
            card=card,
        )

    main_head = branches.get(MAIN)
    exists = branch in branches
    if not exists:
        if options.create_pr:
            raise HubError(
                f"--create-pr needs an existing branch, and {repo.repo_id} has no branch {branch}; upload "
                f"without --create-pr to create it"
            )
        if main_head is None:
            raise HubError(f"{repo.repo_id} has no branch {MAIN} to create branch {branch} from")
    base = branches[branch] if exists else main_head
    assert base is not None
    tree = hub.tree_files(repo, base)
    if exists:
        uploaded = tuple(f"build/{name}/" for name in variants)

        def doomed(path: str) -> bool:
            return path.startswith(uploaded) or is_benchmark(path)

    else:

        def doomed(path: str) -> bool:
            return path.startswith(("build/", "benchmarks/"))

    files = _changes(branch, content.files, tree, doomed)
    kept = sorted(
        {
            path.split("/")[1]
            for path in (f.path for f in tree)
            if path.count("/") >= 2 and path.startswith("build/")
        }
        - set(variants)
    )
    if not exists:
        kept = []  # a new branch starts from main without its variants
    card = None
    if content.card is not None:
        main_tree = tree if base == main_head else (hub.tree_files(repo, main_head) if main_head else [])
        card = _changes(MAIN, [content.card], main_tree, lambda path: False)
    return UploadPlan(
        **common,
        create_repo=False,
        create_branch=not exists,
        base=base,
        main_head=main_head,
        files=files,
        card=card,
        kept_variants=tuple(kept),
    )


def local_plan(
    hub: Hub, repo: RemoteRepo, content: Content, branch: str, options: UploadOptions, why: str
) -> UploadPlan:
    """A dry run's plan without the Hub: every file is listed as sent; whether the repository and branch exist,
    which files it already has and what would be deleted are not known (``why`` says why it was not asked)."""
    return UploadPlan(
        repo_id=repo.repo_id,
        repo_type=options.repo_type,
        branch=branch,
        url=f"{hub.repo_url(repo)}/tree/{branch}",
        create_repo=False,
        create_branch=False,
        base=None,
        main_head=None,
        files=BranchChanges(branch, tuple(content.files)),
        card=BranchChanges(MAIN, (content.card,)) if content.card is not None else None,
        create_pr=options.create_pr,
        private=options.private,
        variants=tuple(v.name for v in content.variants),
        warnings=content.warnings,
        hub_unknown=why,
    )


def _size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover


def describe_plan(plan: UploadPlan) -> list[str]:
    """The plan as lines for a dry run: creations, adds with sizes, unchanged counts, deletes, README."""
    lines = [f"upload to {plan.repo_type} repo {plan.repo_id}, branch {plan.branch} ({plan.url})"]
    if plan.hub_unknown is not None:
        lines.append(
            f"  the Hub was not asked ({plan.hub_unknown}): whether the repository and the branch exist, which "
            "files it has already and what would be deleted are not known; every file is listed"
        )
    if plan.create_repo:
        lines.append(f"  create repository {plan.repo_id} ({'private' if plan.private else 'public'})")
    if plan.create_branch:
        lines.append(f"  create branch {plan.branch} from the head of {MAIN}")
    for changes in (plan.files, plan.card):
        if changes is None:
            continue
        target = f"{changes.branch} (pull request)" if plan.create_pr else changes.branch
        for file in changes.adds:
            lines.append(f"  add    {file.path} ({_size(file.size)}) to {target}")
        for path in changes.deletes:
            lines.append(f"  delete {path} from {target}")
        if changes.unchanged:
            lines.append(f"  {len(changes.unchanged)} file(s) unchanged on {changes.branch}")
    if plan.card is None:
        lines.append("  no CARD.md in the variants directory: README.md is left as it is")
    if not plan.changed and plan.hub_unknown is None:
        lines.append("  nothing to change")
    if plan.kept_variants:
        lines.append(
            f"  {len(plan.kept_variants)} variant(s) already on {plan.branch} stay: {', '.join(plan.kept_variants)}"
        )
    if plan.checks or plan.missing:
        lines.append("checks:")
        lines += [f"  {check}" for check in plan.checks]
    if plan.missing:
        lines.append(f"  missing required variants ({len(plan.missing)}):")
        lines += [f"    {m.describe()}" for m in plan.missing]
    return lines


# --- the commits (batched, sorted by path) --------------------------------------------------------------------------------


def _batches(operations: Sequence[AddFile | DeleteFile]) -> list[list[AddFile | DeleteFile]]:
    size = max(1, MAX_OPERATIONS_PER_COMMIT)
    return [list(operations[start : start + size]) for start in range(0, len(operations), size)]


@dataclass
class _Progress:
    commits: list[str] = field(default_factory=list)
    pull_requests: list[PullRequest] = field(default_factory=list)


def _commit_branch(
    hub: Hub,
    repo: RemoteRepo,
    changes: BranchChanges,
    *,
    parent: str | None,
    title: str,
    description: str,
    create_pr: bool,
    progress: _Progress,
    log: Log,
) -> str | None:
    """Commit ``changes`` in batches; returns the last commit's SHA (``parent`` when nothing changed)."""
    batches = _batches(changes.operations)
    revision = changes.branch
    for index, batch in enumerate(batches, 1):
        opens_pr = create_pr and index == 1
        result = hub.commit(
            repo,
            batch,
            revision=revision,
            message=f"{title} (batch {index}/{len(batches)})",
            description=description,
            parent=parent,
            create_pr=opens_pr,
        )
        if opens_pr:
            if result.pr_url is None or result.pr_revision is None:  # pragma: no cover - the Hub sends both
                raise HubError(f"the Hub opened no pull request for {repo.repo_id} {changes.branch}")
            progress.pull_requests.append(PullRequest(changes.branch, result.pr_url))
            revision = result.pr_revision
            log(f"opened pull request {result.pr_url} against {changes.branch}")
        progress.commits.append(result.oid)
        log(f"committed batch {index}/{len(batches)} ({len(batch)} change(s)) to {revision}: {result.oid}")
        parent = result.oid
    return parent


def _create_repo(hub: Hub, repo: RemoteRepo, private: bool, log: Log) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        hub.create_repo(repo, private=private)
    except HfHubHTTPError as error:
        response = getattr(error, "response", None)
        if response is not None and response.status_code == 403:
            org = repo.repo_id.split("/")[0]
            raise HubError(
                f"not allowed to create {repo.repo_type} repo {repo.repo_id} on {hub.endpoint} (403). Use a "
                f"token with write access to '{org}' (HF_TOKEN or `hf auth login`); creating kernel repos may "
                f"need the organization's permission: ask an admin of '{org}' to create {repo.repo_id} "
                f"(or to grant you that right), then run the upload again."
            ) from None
        raise
    log(f"created {repo.repo_type} repo {repo.repo_id}")
    heads = hub.branches(repo)
    if MAIN not in heads:  # pragma: no cover - a new repo starts with a commit on main
        raise HubError(f"the new repo {repo.repo_id} has no branch {MAIN}")
    return heads[MAIN]


def _execute(hub: Hub, repo: RemoteRepo, plan: UploadPlan, log: Log) -> UploadResult:
    progress = _Progress()
    main_head = plan.main_head
    base = plan.base
    if plan.create_repo:
        main_head = _create_repo(hub, repo, plan.private, log)
        base = main_head
    if plan.create_branch:
        assert main_head is not None
        hub.create_branch(repo, plan.branch, main_head)
        log(f"created branch {plan.branch} from {main_head}")
        base = main_head
    names = ", ".join(plan.variants)
    head = _commit_branch(
        hub,
        repo,
        plan.files,
        parent=base,
        title=f"Upload {len(plan.variants)} variant(s) with kernel-builder {__version__}",
        description=f"Variants: {names}",
        create_pr=plan.create_pr,
        progress=progress,
        log=log,
    )
    if plan.card is not None and plan.card.changed:
        parent = head if plan.branch == MAIN and not plan.create_pr else main_head
        _commit_branch(
            hub,
            repo,
            plan.card,
            parent=parent,
            title=f"Update README.md from CARD.md with kernel-builder {__version__}",
            description="The kernel's card (build/CARD.md).",
            create_pr=plan.create_pr,
            progress=progress,
            log=log,
        )
    if progress.pull_requests:
        status = "pull_request_created"
    elif progress.commits or plan.create_repo or plan.create_branch:
        status = "uploaded"
    else:
        status = "no_changes"
    return UploadResult(status, plan, tuple(progress.commits), tuple(progress.pull_requests))


def check_output_json(path: Path) -> None:
    """``UsageError`` unless the report file ``path`` can be written; checked before the upload starts, so a
    typo in ``--output-json`` never costs an upload whose report is then lost."""
    where = f"--output-json {path}"
    if path.is_dir():
        raise UsageError(f"{where}: it is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{where}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{where}: it cannot be written (permission denied)")


def upload(
    options: UploadOptions, *, log: Log = lambda line: None, warn: Log = lambda line: None
) -> UploadResult:
    """Upload a kernel's built variants (see the module docstring).

    ``log`` receives progress lines; ``warn`` each warning about the content (hidden paths left out, dirty
    builds) as soon as it is collected, before any request (they are also kept in the plan).

    Raises ``UsageError`` (exit 2) for a missing or invalid repo id, :class:`HubError` (exit 1) for
    refused variants, an incomplete release without ``allow_incomplete``, a missing repo or branch with
    ``create_pr``, and failed Hub requests. A dry run that would be refused returns its plan with ``refused``.
    """
    repo_id, branch_setting = _repo_id(options)
    content = collect_content(options.kernel_dir, allow_explicit_archs=options.allow_explicit_archs)
    with tempfile.TemporaryDirectory(prefix="kernel-builder-upload-") as scratch:
        content = _filled_card(Path(options.kernel_dir), repo_id, content, Path(scratch))
        gated = abi_gate(content, options.allow_abi_violations, Path(scratch))
        for warning in gated.warnings:
            warn(warning)
        checks = (
            f"{len(gated.variants)} variant(s): names, metadata.json, package and digest checked",
            "check-abi: no findings"
            if gated is content
            else "check-abi: findings accepted (--allow-abi-violations)",
        )
        return _upload(options, repo_id, branch_setting, gated, checks, Path(scratch), log, warn)


def _upload(
    options: UploadOptions,
    repo_id: str,
    branch_setting: str | None,
    content: Content,
    checks: tuple[str, ...],
    scratch: Path,
    log: Log,
    warn: Log,
) -> UploadResult:
    branch = _branch(branch_setting, content)
    hub = Hub(agent=f"kernel-builder-cli/{__version__}")
    if hub.offline and not options.dry_run:
        raise HubError(
            "upload needs the network, but offline mode is on (HF_HUB_OFFLINE); unset it "
            "(`upload --dry-run` rehearses the upload offline)"
        )
    repo = RemoteRepo(repo_id, options.repo_type)
    try:
        plan = _plan(hub, repo, content, branch, options)
        gated, content = _completeness(plan, content, checks, options, scratch, warn)
        plan = gated
        if content.card is not None and plan.card is not None and content.card.source != plan.card_source:
            # The card now lists the missing variants: compare that card with the Hub's README instead.
            plan = dataclasses.replace(_plan(hub, repo, content, branch, options), **_gate_fields(gated))
        if options.dry_run:
            return UploadResult("dry_run", plan)
        if plan.refused is not None:
            raise HubError(plan.refused)
        return _execute(hub, repo, plan, log)
    except REQUEST_ERRORS as error:
        raise HubError(f"upload to {repo_id} failed: {describe_error(error)}") from error


def _plan(hub: Hub, repo: RemoteRepo, content: Content, branch: str, options: UploadOptions) -> UploadPlan:
    """The plan from the Hub; for a dry run without the Hub (offline, or unreachable), from the files alone."""
    if hub.offline:
        return local_plan(hub, repo, content, branch, options, "offline mode is on: HF_HUB_OFFLINE")
    try:
        return plan_upload(hub, repo, content, branch, options)
    except HubConnectionError as error:
        if not options.dry_run:
            raise
        return local_plan(hub, repo, content, branch, options, f"it could not be reached: {error}")


def _gate_fields(plan: UploadPlan) -> dict[str, Any]:
    return {"checks": plan.checks, "missing": plan.missing, "refused": plan.refused}


def _completeness(
    plan: UploadPlan,
    content: Content,
    checks: tuple[str, ...],
    options: UploadOptions,
    scratch: Path,
    warn: Log,
) -> tuple[UploadPlan, Content]:
    """The plan with the completeness gate's verdict, and the content with the card that lists what is missing
    when ``allow_incomplete`` lets an incomplete release through."""
    present = {*plan.variants, *plan.kept_variants}
    found = missing_variants(Path(options.kernel_dir), present)
    if found is None:  # a directory of variants alone (no project): nothing says which are required
        note = f"required variants: not checked (no build.toml in {options.kernel_dir})"
        return dataclasses.replace(plan, checks=(*checks, note)), content
    missing, required = found
    have = f"required variants: {required - len(missing)} of {required} present"
    if plan.hub_unknown is not None:
        have += " (variants already on the Hub branch are not known: the Hub was not asked)"
    blocking = [m for m in missing if m.blocking]
    refused = None
    if blocking and not options.allow_incomplete:
        refused = str(refusal(missing, required))
    elif blocking:
        warn(
            f"uploading an incomplete release (--allow-incomplete): {len(blocking)} required variant(s) missing, "
            "listed on the card"
        )
        content = with_card_section(content, missing, scratch)
        for warning in content.warnings[len(plan.warnings) :]:
            warn(warning)
    elif missing:
        warn(
            f"the release lacks {len(missing)} required variant(s) that kernel-builder does not build: "
            + ", ".join(m.variant for m in missing)
        )
    return dataclasses.replace(plan, checks=(*checks, have), missing=tuple(missing), refused=refused), content
