"""A throw-away git repository whose commits "build" a wrapper around a real QEMU.

For the bisect helper's own tests and demos: every commit has an executable
``sdqtest-build`` at its root (the recipe the helper runs) and a
``config.sh`` that the recipe reads.  A commit's config can add ``-global``
options (changing a real device default), a delay before QEMU starts, or
make the build fail.  The wrapper ``exec``s the real binary, so QEMU's pid
and its firmware lookup are the real ones.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

RECIPE_TEXT = """#!/bin/sh
# sdqtest-build: "builds" a qemu-system-x86_64 wrapper from config.sh
set -e
. ./config.sh
if [ -n "$BROKEN" ]; then
    echo "error: this commit does not build ($BROKEN)" >&2
    exit 1
fi
[ -z "$BUILD_SLEEP" ] || sleep "$BUILD_SLEEP"
out="$SDQTEST_BUILD_DIR/qemu-system-x86_64"
{
    echo '#!/bin/sh'
    [ -z "$DELAY" ] || echo "sleep $DELAY"
    echo "exec $QEMU $GLOBALS \\"\\$@\\""
} > "$out.tmp"
chmod +x "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
"""


@dataclass
class Commit:
    """One commit's configuration."""

    message: str
    globals: Sequence[str] = ()
    delay: float = 0.0
    broken: str = ""
    build_sleep: float = 0.0
    extra_files: dict[str, str] = field(default_factory=dict)


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="sdqtest", GIT_AUTHOR_EMAIL="sdqtest@example.invalid",
               GIT_COMMITTER_NAME="sdqtest", GIT_COMMITTER_EMAIL="sdqtest@example.invalid",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent), LC_ALL="C")
    r = subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
                       capture_output=True, text=True, timeout=60, env=env, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def config_text(qemu: Path, c: Commit) -> str:
    globs = " ".join(f"-global {shlex.quote(g)}" for g in c.globals)
    values = {
        "QEMU": str(qemu),
        "GLOBALS": globs,
        "DELAY": f"{c.delay:g}" if c.delay else "",
        "BROKEN": c.broken,
        "BUILD_SLEEP": f"{c.build_sleep:g}" if c.build_sleep else "",
    }
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def make_repo(repo: Path, qemu: Path, commits: Sequence[Commit],
              branch: str = "main") -> list[str]:
    """Create ``repo`` with one commit per entry; returns their shas, oldest first."""
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", branch)
    recipe = repo / "sdqtest-build"
    recipe.write_text(RECIPE_TEXT)
    recipe.chmod(0o755)
    shas = []
    for c in commits:
        (repo / "config.sh").write_text(config_text(qemu, c))
        for name, text in c.extra_files.items():
            (repo / name).write_text(text)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", c.message)
        shas.append(_git(repo, "rev-parse", "HEAD").strip())
    return shas
