"""One bisect step: build the checked-out commit, run the check, keep a log."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.bisect import ABORT, SKIP
from harness.bisect.checks import Check
from harness.bisect.progress import BisectProgress
from harness.errors import SdqtestError
from harness.provision import proc
from harness.provision.build import Builder

VERDICT = {0: "good", 1: "bad", SKIP: "skip", ABORT: "abort"}


def verdict(code: int) -> str:
    return VERDICT.get(code, "bad" if 0 < code < SKIP else "abort")


@dataclass
class StepOutcome:
    """What one step found about one commit."""

    commit: str
    subject: str
    code: int
    summary: str
    detail: list[str] = field(default_factory=list)
    figure: float | None = None
    log: Path | None = None
    build_seconds: float = 0.0
    check_seconds: float = 0.0

    @property
    def verdict(self) -> str:
        return verdict(self.code)


def git(src: Path, *args: str, timeout: float = 120) -> str:
    """``git -C src ARGS``'s stdout; raises :class:`GitError` on failure."""
    r = proc.capture(["git", "-C", str(src), *args], timeout=timeout,
                     env=_git_env())
    if r.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {(r.stderr or r.stdout).strip()}")
    return r.stdout


def _git_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat")
    return env


class GitError(SdqtestError):
    """A git command failed."""


def dirty_files(src: Path) -> list[str]:
    """Tracked files with changes (staged or not); untracked files do not count."""
    out = git(src, "status", "--porcelain", "--untracked-files=no")
    return [ln[3:] for ln in out.splitlines() if ln.strip()]


def run_step(
    src: Path,
    builder: Builder,
    check: Check,
    log_path: Path,
    *,
    build_timeout: float,
    check_timeout: float,
    progress: BisectProgress | None = None,
) -> StepOutcome:
    """Build and check the commit checked out in ``src``; the log goes to ``log_path``."""
    commit = git(src, "rev-parse", "HEAD").strip()
    subject = git(src, "log", "-1", "--format=%s", commit).strip()
    progress = progress or BisectProgress(live=False)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out = StepOutcome(commit, subject, SKIP, "", log=log_path)
    with open(log_path, "a") as log:
        log.write(f"=== {commit} {subject}\n=== builder: {builder.name}; "
                  f"check: {check.describe()}\n")
        log.flush()
        t0 = time.monotonic()
        with progress.phase("build") as shown:
            built = builder.build(src, commit, log, build_timeout)
            shown.append(("ok" if built.ok else "FAILED: " + built.message)
                         + "".join(f"; {n}" for n in built.notes))
        out.build_seconds = time.monotonic() - t0
        try:
            changed = dirty_files(src)
        except GitError:
            changed = []
        if changed:
            out.code = ABORT
            out.summary = ("the build changed tracked files in the source tree: "
                           + ", ".join(changed[:5]) + " (builds must stay outside the tree)")
        elif not built.ok or built.binary is None:
            out.code = SKIP
            out.summary = f"build failed: {built.message}"
            out.detail = proc.read_tail(log_path, 8)
        else:
            log.write(f"=== binary: {built.binary}\n")
            log.flush()
            t0 = time.monotonic()
            with progress.phase("check") as shown:
                res = check.run(built.binary, log, check_timeout)
                shown.append(f"{verdict(res.code)}: {res.summary}")
            out.check_seconds = time.monotonic() - t0
            out.code, out.summary, out.detail, out.figure = (
                res.code, res.summary, res.detail, res.figure)
        log.write(f"=== verdict: {out.verdict} (exit {out.code}): {out.summary}\n")
        for line in out.detail:
            log.write(f"    {line}\n")
    return out
