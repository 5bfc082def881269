"""Base and patched QEMUs from a source tree, on a scratch clone.

The user's tree is never written: the series is applied on a ``git clone
--shared`` of it (its objects borrowed, nothing of the tree changed) under the
work directory, one build directory for every commit, built incrementally by
the bisect builder (:class:`harness.provision.build.QemuTreeBuilder`), each
binary copied out under ``bins/<commit>/`` so that a later review of the same
commits builds nothing.  Patches are applied with ``git am
--committer-date-is-author-date`` and a fixed committer, so a patch on a base
gives the same commit every time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.provision.build import BINARY, QemuTreeBuilder
from harness.review.series import Series, SeriesError

_COMMITTER = {"GIT_COMMITTER_NAME": "sdqtest review", "GIT_COMMITTER_EMAIL": "review@sdqtest",
              "GIT_AUTHOR_NAME": "sdqtest review", "GIT_AUTHOR_EMAIL": "review@sdqtest"}
#: Seconds one build may take (a first build of a tree, without ccache, ~40 min here).
BUILD_TIMEOUT = 3600.0


@dataclass
class Built:
    """A commit's binary, and how it was had."""

    commit: str
    binary: Path
    seconds: float
    cached: bool


@dataclass
class Scratch:
    """The scratch clone of ``src`` under ``root``: the clone (named as the
    tree), the build directory (:attr:`build_name`, and ``-gcov``),
    ``bins/``, ``logs/``."""

    src: Path
    root: Path
    jobs: int = 2
    coverage: bool = False
    builds: list[Built] = field(default_factory=list)
    #: The build directory's name beside the clone.  ccache (with ``base_dir``
    #: above both) serves a build whose source and build paths relative to
    #: each other are those of an earlier build: naming the clone after the
    #: tree and the build directory after the base's build directory makes
    #: the first build of the clone hit the cache for every unchanged file.
    build_name: str = "build"

    @property
    def clone(self) -> Path:
        return self.root / (self.src.name or "src")

    def git(self, *args: str, tree: Path | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(["git", "-C", str(tree or self.clone), *args], capture_output=True,
                           text=True, timeout=600, env={**os.environ, **(env or {})})
        if check and r.returncode != 0:
            last = (r.stderr.strip() or r.stdout.strip() or "failed").splitlines()[-1]
            raise SeriesError(f"git {args[0]}: {last}")
        return r

    def prepare(self, base: str) -> str:
        """The clone (made once), ``base`` of the user's tree resolved and checked out."""
        if not (self.src / ".git").exists():
            raise SeriesError(f"{self.src} is not a git tree (the series is applied on a "
                              "clone of it)")
        sha = self.git("rev-parse", "--verify", f"{base}^{{commit}}", tree=self.src).stdout.strip()
        if not (self.clone / ".git").is_dir():
            self.root.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(self.src),
                            str(self.clone)], check=True, capture_output=True, timeout=600)
        if self.git("cat-file", "-e", sha, check=False).returncode != 0:
            self.git("fetch", "-q", str(self.src.resolve()), sha)
        self._no_am()
        self.git("checkout", "-q", "--force", "--detach", sha)
        self._subprojects()
        return sha

    def _no_am(self) -> None:
        """No ``git am`` left half done in the clone (an interrupted review)."""
        self.git("am", "--abort", check=False)
        shutil.rmtree(self.clone / ".git" / "rebase-apply", ignore_errors=True)

    def _subprojects(self) -> None:
        """The tree's subprojects git does not track (a release tarball
        carries them; a git tree downloads them at configure time): copied
        into the clone once, so the clone configures offline as the tree does."""
        listed = self.git("ls-files", "--others", "--ignored", "--exclude-standard",
                          "--directory", "subprojects", tree=self.src, check=False).stdout
        for rel in listed.split():
            src, dst = self.src / rel.rstrip("/"), self.clone / rel.rstrip("/")
            if not src.exists() or src.name == ".wraplock":
                continue
            if src.is_dir() and dst.is_dir() and not (dst / "meson.build").exists():
                shutil.rmtree(dst)  # what a failed download left: not the subproject
            if dst.exists():
                continue
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst)

    def apply(self, series: Series, base: str) -> list[str]:
        """Each patch's commit, on ``base``; a patch that does not apply is
        one line naming it (the clone is put back on ``base``)."""
        if series.base or all(p.commit for p in series.patches):
            return [p.commit for p in series.patches]
        self._no_am()
        self.git("checkout", "-q", "--force", "--detach", base)
        out: list[str] = []
        for i, p in enumerate(series.patches, 1):
            assert p.text is not None
            r = subprocess.run(["git", "-C", str(self.clone), "am", "-q", "--keep-cr",
                                "--committer-date-is-author-date"], input=p.text,
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, **_COMMITTER})
            if r.returncode != 0:
                why = next((ln for ln in (r.stderr + r.stdout).splitlines()
                            if ln.startswith(("error:", "fatal:"))), "git am failed")
                self._no_am()
                self.git("checkout", "-q", "--force", "--detach", base)
                raise SeriesError(f"patch {series.label(i)} does not apply on "
                                  f"{base[:12]}: {why}")
            out.append(self.git("rev-parse", "HEAD").stdout.strip())
        return out

    def build(self, commit: str, label: str) -> Built:
        """``commit``'s binary: the copy kept from an earlier build, else an
        incremental build; a failed build is one line naming ``label``."""
        kind = "gcov" if self.coverage else "plain"
        bins = self.root / "bins" / f"{commit}-{kind}"
        if (bins / BINARY).is_file():
            b = Built(commit, bins / BINARY, 0.0, True)
            self.builds.append(b)
            return b
        build_dir = self.root / (f"{self.build_name}-gcov" if self.coverage else self.build_name)
        self.git("checkout", "-q", "--force", "--detach", commit)
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{commit[:12]}-{kind}.log"
        builder = QemuTreeBuilder(build_dir, jobs=self.jobs, coverage=self.coverage)
        t0 = time.monotonic()
        with open(log_path, "w") as log:
            res = builder.build(self.clone, commit, log, BUILD_TIMEOUT)
        if not res.ok or res.binary is None:
            raise SeriesError(f"{label}: the build failed: {res.message} (log: {log_path})")
        if self.coverage:  # counts land beside the objects: the build dir's own binary
            b = Built(commit, res.binary, time.monotonic() - t0, False)
        else:
            bins.mkdir(parents=True, exist_ok=True)
            shutil.copy2(res.binary, bins / (BINARY + ".tmp"))
            (bins / (BINARY + ".tmp")).replace(bins / BINARY)
            for name in ("qemu-bundle", "pc-bios"):  # firmware, found beside the binary
                link = bins / name
                if (build_dir / name).exists() and not link.is_symlink():
                    link.symlink_to(build_dir / name)
            b = Built(commit, bins / BINARY, time.monotonic() - t0, False)
        self.builds.append(b)
        return b
