"""The pytest plugin never turns a build it cannot probe into skips, and is
active only in sessions that ask for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLUGIN = ["-p", "harness.pytest_plugin"]


def _pytest(tmp_path: Path, binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_uses_qemu.py").write_text(
        "def test_needs_qemu(qemu_build):\n    assert qemu_build is not None\n")
    env = dict(os.environ, QTEST_QEMU_BINARY=binary)
    env.pop("PYTEST_PLUGINS", None)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args, str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_failing_probe_errors_the_session(tmp_path: Path) -> None:
    # /bin/true runs and exits at once: the probe fails, as for a broken build.
    r = _pytest(tmp_path, "/bin/true", *PLUGIN)
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5), out
    assert "cannot probe /bin/true" in out
    assert "skipped" not in out and "passed" not in out


def test_a_missing_binary_errors_the_session(tmp_path: Path) -> None:
    r = _pytest(tmp_path, str(tmp_path / "no-such-qemu"), *PLUGIN)
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5), out
    assert "does not exist" in out and "skipped" not in out


def test_tests_that_need_no_qemu_still_run(tmp_path: Path) -> None:
    """A bisect step runs its own test file under the plugin with the build
    being bisected as $QTEST_QEMU_BINARY: tests that never ask for a build run."""
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = dict(os.environ, QTEST_QEMU_BINARY="/bin/true")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *PLUGIN,
                        str(tmp_path / "test_plain.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    assert "cannot probe /bin/true" in r.stdout  # said in the header all the same


def test_a_session_that_does_not_ask_gets_no_plugin(tmp_path: Path) -> None:
    """Installing sdqtest registers no pytest11 entry point: another project's
    session probes no QEMU (the broken binary would stop it) and has no
    ``--sdq-qemu`` option and no ``qemu_build`` fixture."""
    r = _pytest(tmp_path, "/bin/true")
    out = r.stdout + r.stderr
    assert "cannot probe" not in out and "sdqtest:" not in out, out
    assert "fixture 'qemu_build' not found" in out, out
    r = _pytest(tmp_path, "/bin/true", "--sdq-qemu", "11.1")
    assert r.returncode == 4 and "unrecognized arguments: --sdq-qemu" in r.stderr, r.stderr


def test_an_ini_file_can_ask_for_it(tmp_path: Path) -> None:
    """``addopts = -p harness.pytest_plugin`` in the ini file: the options take
    their ``--sdq-`` names."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p harness.pytest_plugin\n")
    r = _pytest(tmp_path, "/bin/true", "--sdq-machine", "q35")
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5) and "cannot probe /bin/true" in out, out
