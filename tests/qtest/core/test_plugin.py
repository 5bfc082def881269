"""The pytest plugin never turns a build it cannot probe into skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _pytest(tmp_path: Path, binary: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_uses_qemu.py").write_text(
        "def test_needs_qemu(qemu_build):\n    assert qemu_build is not None\n")
    env = dict(os.environ, QTEST_QEMU_BINARY=binary)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_failing_probe_errors_the_session(tmp_path: Path) -> None:
    # /bin/true runs and exits at once: the probe fails, as for a broken build.
    r = _pytest(tmp_path, "/bin/true")
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5), out
    assert "cannot probe /bin/true" in out
    assert "skipped" not in out and "passed" not in out


def test_a_missing_binary_errors_the_session(tmp_path: Path) -> None:
    r = _pytest(tmp_path, str(tmp_path / "no-such-qemu"))
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5), out
    assert "does not exist" in out and "skipped" not in out


def test_tests_that_need_no_qemu_still_run(tmp_path: Path) -> None:
    """A bisect step runs its own test file under the plugin with the build
    being bisected as $QTEST_QEMU_BINARY: tests that never ask for a build run."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = dict(os.environ, QTEST_QEMU_BINARY="/bin/true")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                        str(tmp_path / "test_plain.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    assert "cannot probe /bin/true" in r.stdout  # said in the header all the same
