"""The ``git bisect`` loop in the user's tree, which always leaves it as it was.

The tree must be clean (tracked files) and not already bisecting.  Each
step builds outside the tree (see :mod:`harness.provision.build`), runs the
check in a subprocess, and answers ``git bisect good|bad|skip``.  Whatever
happens (a found commit, a broken check, Ctrl-C, SIGTERM, SIGHUP), the
``finally`` runs ``git bisect reset`` with those signals ignored, after
saving ``git bisect log`` beside the step logs.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from harness.bisect import ABORT, BAD, GOOD, SKIP
from harness.bisect.checks import Check
from harness.bisect.progress import BisectProgress, fmt_duration
from harness.bisect.step import GitError, StepOutcome, _git_env, dirty_files, git, run_step
from harness.errors import SdqtestError
from harness.provision import proc
from harness.provision.build import Builder, format_missing, tree_dir

#: ``sdqtest bisect`` exit codes.
EXIT_FOUND = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_CHECK_BROKEN = 3


class BisectError(SdqtestError):
    """A problem the user can fix before bisecting (dirty tree, bad refs, prerequisites)."""


@dataclass
class BisectResult:
    """How a bisect ended."""

    code: int
    message: str
    first_bad: str | None = None
    subject: str = ""
    outcome: StepOutcome | None = None
    candidates: list[str] = field(default_factory=list)
    steps: list[StepOutcome] = field(default_factory=list)
    log_dir: Path | None = None
    elapsed: float = 0.0
    reset_ok: bool = True

    def report(self) -> list[str]:
        """The closing summary, as printed and as saved in ``summary.txt``."""
        lines: list[str] = []
        if self.first_bad and self.code == EXIT_FOUND:
            lines.append(f"first bad commit: {self.first_bad} {self.subject}")
            if self.outcome is not None:
                lines.append(f"  {self.outcome.summary}")
                lines += [f"    {d}" for d in self.outcome.detail[:8]
                          if d and d not in self.outcome.summary]
        else:
            lines.append(self.message)
            lines += [f"  {c}" for c in self.candidates]
        if self.first_bad and self.message and self.code == EXIT_FOUND:
            lines.append(self.message)
        built = sum(1 for s in self.steps if not s.summary.startswith("build failed"))
        skipped = sum(1 for s in self.steps if s.code == SKIP)
        lines.append(f"steps: {len(self.steps)} ({built} built, {skipped} skipped), "
                     f"{fmt_duration(self.elapsed)}")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i:2d}. {s.commit[:12]} {s.verdict:5s} {s.summary}")
        if self.log_dir is not None:
            lines.append(f"logs: {self.log_dir} (a log per step; bisect-log.txt replays "
                         "the bisect with 'git bisect replay')")
        if not self.reset_ok:
            lines.append("WARNING: 'git bisect reset' failed: run it by hand in the tree")
        return lines


# -- git helpers ------------------------------------------------------------------------


_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
_LEFT = re.compile(r"Bisecting: (\d+) revisions? left to test after this "
                   r"\(roughly (\d+) steps?\)")
_ONLY_SKIPPED = "There are only 'skip'ped commits left to test"


@dataclass
class _State:
    first_bad: str | None = None
    candidates: list[str] = field(default_factory=list)
    left: int | None = None
    revisions: int | None = None


def _parse(out: str) -> _State:
    st = _State()
    m = _FIRST_BAD.search(out)
    if m:
        st.first_bad = m.group(1)
    elif _ONLY_SKIPPED in out:
        after = out.split(_ONLY_SKIPPED, 1)[1]
        st.candidates = re.findall(r"^([0-9a-f]{40})\b", after, re.M)
    m2 = _LEFT.search(out)
    if m2:
        st.revisions, st.left = int(m2.group(1)), int(m2.group(2))
    return st


def _bisect_cmd(src: Path, *args: str) -> str:
    r = proc.capture(["git", "-C", str(src), "bisect", *args], timeout=300, env=_git_env())
    out = r.stdout + r.stderr
    st = _parse(out)
    if r.returncode != 0 and st.first_bad is None and not st.candidates:
        raise GitError(f"git bisect {' '.join(args)}: {out.strip()}")
    return out


def git_path(src: Path, name: str) -> Path:
    p = Path(git(src, "rev-parse", "--git-path", name).strip())
    return p if p.is_absolute() else src / p


def bisecting(src: Path) -> bool:
    """Whether a ``git bisect`` is in progress in ``src``."""
    return git_path(src, "BISECT_START").exists()


def toplevel(src: Path) -> Path:
    """The work tree's top; a :class:`BisectError` if ``src`` is not in one."""
    if not src.is_dir():
        raise BisectError(f"{src} is not a directory")
    try:
        return Path(git(src, "rev-parse", "--show-toplevel").strip())
    except GitError as e:
        raise BisectError(f"{src} is not a git work tree: {e}") from e


def check_tree(src: Path) -> None:
    """Refuse a tree with tracked changes or a bisect already in progress."""
    if bisecting(src):
        raise BisectError(
            f"a git bisect is already in progress in {src}: finish it, or run "
            f"'git -C {src} bisect reset', then try again")
    changed = dirty_files(src)
    if changed:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8
                                          else "")
        raise BisectError(
            f"the tree {src} has uncommitted changes ({shown}); bisecting checks out other "
            "commits, so commit or stash them first (git stash), then try again")


def resolve_commit(src: Path, ref: str, what: str) -> str:
    try:
        return git(src, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except GitError:
        raise BisectError(f"--{what} {ref!r} is not a commit in {src}") from None


@contextlib.contextmanager
def tree_lock(src: Path) -> Iterator[None]:
    """One bisect (or bisect-run) at a time per tree: they share a build directory."""
    d = tree_dir(src)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BisectError(f"another sdqtest bisect is using {d} (its build directory); "
                              "wait for it to finish") from None
        yield


@contextlib.contextmanager
def signals_as_exit() -> Iterator[None]:
    """SIGTERM and SIGHUP raise SystemExit(128+n) for the duration (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait while the tree is being restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old: dict[signal.Signals, Any] = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def default_log_dir(src: Path) -> Path:
    return tree_dir(src) / "logs" / time.strftime("%Y%m%d-%H%M%S")


# -- the loop -----------------------------------------------------------------------------


def bisect(
    src: Path,
    good: str,
    bad: str,
    builder: Builder,
    check: Check,
    *,
    log_dir: Path | None = None,
    progress: BisectProgress | None = None,
    build_timeout: float = 3600,
    check_timeout: float = 900,
    verify_good: bool = False,
) -> BisectResult:
    """Find the first commit between ``good`` and ``bad`` where ``check`` goes bad.

    Raises :class:`BisectError` before touching the tree when it cannot start.
    ``verify_good`` tests the ``good`` commit first (one more step) and stops
    if it is not good.
    Ctrl-C and SIGTERM end it with the tree reset and a result whose code is
    128 + the signal.
    """
    src = toplevel(src)
    good_sha, bad_sha = _endpoints(src, good, bad, builder)
    progress = progress or BisectProgress()
    log_dir = (log_dir or default_log_dir(src)).absolute()
    log_dir.mkdir(parents=True, exist_ok=True)
    _announce(src, good_sha, bad_sha, builder, check, log_dir, progress)
    res = BisectResult(EXIT_NOT_FOUND, "", log_dir=log_dir)
    loop = _Loop(src, builder, check, res, log_dir, progress, build_timeout, check_timeout)
    with tree_lock(src), signals_as_exit():
        started = False
        try:
            with signals_ignored():
                out = _bisect_cmd(src, "start", bad_sha, good_sha, "--")
                started = True
            loop.run(out, good_sha if verify_good else None)
        except KeyboardInterrupt:
            res.code, res.message = 130, "interrupted (Ctrl-C)"
        except SystemExit as e:
            _stopped(res, e)
        finally:
            res.elapsed = progress.elapsed()
            if started:
                res.reset_ok = _finish(src, log_dir)
    _write_summary(res)
    return res


def _endpoints(src: Path, good: str, bad: str, builder: Builder) -> tuple[str, str]:
    """``good`` and ``bad`` as commits, checked before the tree is touched:
    distinct, ``good`` an ancestor of ``bad``, the builder's prerequisites met."""
    check_tree(src)
    good_sha = resolve_commit(src, good, "good")
    bad_sha = resolve_commit(src, bad, "bad")
    if good_sha == bad_sha:
        raise BisectError("--good and --bad name the same commit")
    try:
        git(src, "merge-base", "--is-ancestor", good_sha, bad_sha)
    except GitError:
        raise BisectError(f"--good {good} is not an ancestor of --bad {bad} "
                          "(swapped?)") from None
    missing = builder.prerequisites(src)
    if missing:
        raise BisectError(format_missing(missing))
    return good_sha, bad_sha


def _announce(src: Path, good_sha: str, bad_sha: str, builder: Builder, check: Check,
              log_dir: Path, progress: BisectProgress) -> None:
    n = int(git(src, "rev-list", "--count", f"{good_sha}..{bad_sha}").strip())
    progress.say(f"bisecting {n} commits from good {good_sha[:12]} to bad {bad_sha[:12]} "
                 f"with {check.describe()}; logs in {log_dir}")
    advice = getattr(builder, "advice", None)
    if callable(advice):
        for line in advice(src):
            progress.say(f"  {line}")


def _stopped(res: BisectResult, e: SystemExit) -> None:
    """``res`` ended by ``sys.exit`` (a signal made one: 128 + its number)."""
    code = e.code if isinstance(e.code, int) else 1
    res.code = code
    res.message = f"stopped (exit {code})"
    with contextlib.suppress(ValueError):
        res.message = f"interrupted ({signal.Signals(code - 128).name})"


class _Loop:
    """One bisection's steps: each commit git checks out is built and checked
    (:func:`run_step`) and marked good, bad or skip until git names the
    first bad commit; ``res`` collects the steps and the conclusion."""

    def __init__(self, src: Path, builder: Builder, check: Check, res: BisectResult,
                 log_dir: Path, progress: BisectProgress, build_timeout: float,
                 check_timeout: float) -> None:
        self.src, self.builder, self.check, self.res = src, builder, check, res
        self.log_dir, self.progress = log_dir, progress
        self.build_timeout, self.check_timeout = build_timeout, check_timeout
        self.tested: dict[str, StepOutcome] = {}

    def step(self) -> StepOutcome:
        """Build and check the commit checked out."""
        head = git(self.src, "rev-parse", "HEAD").strip()
        n = len(self.res.steps) + 1
        log = self.log_dir / f"step-{n:02d}-{head[:12]}.log"
        o = run_step(self.src, self.builder, self.check, log, build_timeout=self.build_timeout,
                     check_timeout=self.check_timeout, progress=self.progress)
        self.res.steps.append(o)
        self.tested[o.commit] = o
        return o

    def run(self, out: str, verify: str | None) -> None:
        """From ``git bisect start``'s output ``out`` to the conclusion;
        ``verify``: the --good commit, tested first."""
        if verify is not None and not self.verify_good(out, verify):
            return
        st = self.walk(out)
        if st is None:
            return
        if st.candidates:
            self.res.code = EXIT_NOT_FOUND
            self.res.candidates = st.candidates
            self.res.message = ("only skipped commits are left: the first bad commit is one "
                                f"of these {len(st.candidates)} (builds failed or checks could "
                                "not tell):")
            return
        assert st.first_bad is not None
        self.conclude(st.first_bad, verify)

    def verify_good(self, out: str, verify: str) -> bool:
        """Test the --good commit; False (and the result says why) if it is not good."""
        with signals_ignored():
            git(self.src, "checkout", "-q", "--detach", verify)
        self.progress.step(1, None, verify, git(self.src, "log", "-1", "--format=%s",
                                                verify).strip() + " (--good, to confirm)")
        o = self.step()
        if o.code != GOOD:
            self.res.code = EXIT_NOT_FOUND
            self.res.message = (f"the --good commit {verify[:12]} does not test good "
                                f"({o.verdict}: {o.summary}); nothing bisected")
            return False
        back = out_head(out)
        if back is not None:
            with signals_ignored():
                git(self.src, "checkout", "-q", "--detach", back)
        return True

    def walk(self, out: str) -> _State | None:
        """Mark each commit git checks out until it concludes; None when a
        check broke (the result says so), else git's last state."""
        while True:
            st = _parse(out)
            if st.first_bad or st.candidates:
                return st
            head = git(self.src, "rev-parse", "HEAD").strip()
            self.progress.step(len(self.res.steps) + 1, st.left, head,
                               git(self.src, "log", "-1", "--format=%s", head).strip())
            o = self.step()
            if o.code == ABORT:
                self.res.code = EXIT_CHECK_BROKEN
                self.res.message = f"bisect stopped at {o.commit[:12]}: {o.summary}"
                return None
            term = {GOOD: "good", SKIP: "skip"}.get(o.code, "bad")
            with signals_ignored():
                out = _bisect_cmd(self.src, term)

    def conclude(self, first_bad: str, verify: str | None) -> None:
        """The first bad commit into the result, tested if git did not."""
        res = self.res
        res.first_bad = first_bad
        res.subject = git(self.src, "log", "-1", "--format=%s", first_bad).strip()
        outcome = self.tested.get(first_bad)
        if outcome is None:
            # git concluded without testing it: the --bad commit itself.  Test it so the
            # summary can show what marks it (and catch a --bad that is not bad).
            with signals_ignored():
                git(self.src, "checkout", "-q", "--detach", first_bad)
            self.progress.step(len(res.steps) + 1, 0, first_bad,
                               res.subject + " (--bad, to confirm)")
            outcome = self.step()
            if outcome.code == GOOD:
                res.code = EXIT_NOT_FOUND
                res.message = (f"the --bad commit {first_bad[:12]} itself tests good "
                               f"({outcome.summary}): nothing in the range goes bad under "
                               "this check")
                res.outcome = outcome
                return
            if outcome.code != BAD:
                res.message = f"(the --bad commit could not be confirmed: {outcome.summary})"
        res.outcome = outcome
        res.code = EXIT_FOUND
        tried = [s for s in res.steps if s.code in (GOOD, BAD)]
        if tried and all(s.code == BAD for s in tried) and verify is None:
            res.message = ("note: every commit tested was bad; if that is unexpected, check "
                           "that --good is good (--verify-good tests it first)")


def out_head(out: str) -> str | None:
    """The commit ``git bisect`` just checked out, from its ``[sha] subject`` line."""
    m = re.search(r"^\[([0-9a-f]{40})\]", out, re.M)
    return m.group(1) if m else None


def _finish(src: Path, log_dir: Path) -> bool:
    """Save ``git bisect log``, then ``git bisect reset``; True if the reset worked."""
    with signals_ignored():
        with contextlib.suppress(GitError, OSError, proc_timeout()):
            (log_dir / "bisect-log.txt").write_text(git(src, "bisect", "log"))
        try:
            git(src, "bisect", "reset", timeout=300)
        except (GitError, proc_timeout()):
            return False
    return True


def proc_timeout() -> type[Exception]:
    import subprocess

    return subprocess.TimeoutExpired


def _write_summary(res: BisectResult) -> None:
    if res.log_dir is None:
        return
    with contextlib.suppress(OSError):
        (res.log_dir / "summary.txt").write_text("\n".join(res.report()) + "\n")
