"""QEMU process lifecycle: start, death, hangs, bad input, no leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.qtest import QtestTimeout
from harness.qemu.session import QemuDied, QemuLaunchError, QemuSession
from harness.qemu.target import QemuTarget, QemuTargetError
from harness.target import ClockUnavailable
from tests.qtest.signals import inherit

pytestmark = pytest.mark.qemu


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_session_starts_answers_and_cleans_up(qemu_build: QemuBuild) -> None:
    with QemuSession(qemu_build.binary) as s:
        assert s.qtest.endianness() == "little"
        assert s.qmp_cmd("query-status")["status"] in ("running", "prelaunch", "paused")
        pid = s.proc.pid  # type: ignore[union-attr]
        sockdir = s.dir
        assert sockdir is not None and (sockdir.stat().st_mode & 0o777) == 0o700
    assert not _alive(pid)
    assert not sockdir.exists()


def test_accelerator_matches_probe(qemu_build: QemuBuild) -> None:
    with QemuSession(qemu_build.binary) as s:
        assert s.has_clock == qemu_build.profile.has_qtest_accel
        if s.has_clock:
            t0 = s.clock_step(1)
            assert s.clock_step(1000) == t0 + 1000
        else:
            with pytest.raises(ClockUnavailable):
                s.clock_step(1000)


def test_qemu_killed_mid_test_is_reported(qemu_build: QemuBuild) -> None:
    with QemuSession(qemu_build.binary) as s:
        s.qtest.endianness()
        os.kill(s.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        with pytest.raises(QemuDied) as ei:
            s.qtest.endianness()
        assert ei.value.signal == signal.SIGKILL
        assert ei.value.qtest_log[-1] == "endianness"


def test_qemu_assertion_text_is_captured(qemu_build: QemuBuild) -> None:
    # "read ADDR 0" trips g_assert(len) in QEMU's qtest.c; our client would
    # refuse it, so send the raw bytes to show what a crash report carries.
    with QemuSession(qemu_build.binary) as s:
        s.qtest.trace.append("read 0x0 0x0")
        s.qtest._sendall(b"read 0x0 0x0\n")
        with pytest.raises(QemuDied) as ei:
            s.qtest._read_answer()
        assert ei.value.signal == signal.SIGABRT
        assert ei.value.assertion and "len" in ei.value.assertion


def test_hung_qemu_times_out_and_is_killed(qemu_build: QemuBuild) -> None:
    with QemuSession(qemu_build.binary, timeout=1.0) as s:
        pid = s.proc.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(QtestTimeout):
            s.qtest.endianness()
        assert time.monotonic() - t0 < 5
        assert not _alive(pid)


def test_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(QemuLaunchError, match="does not exist"):
        QemuSession(tmp_path / "nope").start()


def test_unknown_machine_type(qemu_build: QemuBuild) -> None:
    with pytest.raises(QemuLaunchError, match="machine"):
        QemuSession(qemu_build.binary, Machine.bare("pc-q35-0.1")).start()


def test_bad_image_size_is_refused_and_image_untouched(
    qemu_build: QemuBuild, tmp_path: Path
) -> None:
    img = tmp_path / "odd.img"
    img.write_bytes(b"\xa5" * (3 * 1024 * 1024))  # 3 MiB: not a power of two
    before = img.read_bytes()
    with pytest.raises(QemuLaunchError, match="(?i)sd card size|power of 2"):
        QemuTarget(qemu_build.binary, Machine(image=CardImage(img)))
    assert img.read_bytes() == before


def test_missing_image(qemu_build: QemuBuild, tmp_path: Path) -> None:
    with pytest.raises(QemuTargetError, match="does not exist"):
        QemuTarget(qemu_build.binary, Machine(image=CardImage(tmp_path / "missing.img")))


def test_binary_without_sdhci_pci(qemu_build: QemuBuild, tmp_path: Path) -> None:
    # A machine with no PCI bus cannot hold sdhci-pci: QEMU refuses the device.
    with pytest.raises(QemuLaunchError):
        QemuTarget(qemu_build.binary, Machine("none"))


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN],
                         ids=["inherited-default", "inherited-ignored"])
def test_interrupted_harness_leaves_no_qemu(qemu_build: QemuBuild, tmp_path: Path,
                                            inherited: signal.Handlers) -> None:
    """SIGTERM, SIGINT and SIGHUP of a harness process, and SIGKILL of it: no
    QEMU survives, whether the harness inherited those signals at their
    default or ignored (a background job, nohup)."""
    script = tmp_path / "victim.py"
    script.write_text(textwrap.dedent(f"""
        import faulthandler, signal, sys, time
        faulthandler.register(signal.SIGUSR1)  # where it is, should it not exit
        from harness.qemu.session import QemuSession, install_signal_handlers
        install_signal_handlers()
        with QemuSession({str(qemu_build.binary)!r}) as s:
            print(s.proc.pid, flush=True)
            time.sleep(60)
    """))
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL):
        err = tmp_path / f"victim-{sig.name}.err"
        with err.open("w") as stderr:
            p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                 stderr=stderr, env=env, preexec_fn=inherit(inherited))
        assert p.stdout is not None
        qemu_pid = int(p.stdout.readline())
        assert _alive(qemu_pid)
        p.send_signal(sig)
        # The harness's close escalates quit -> SIGTERM -> SIGKILL over up to
        # ~12 s when QEMU is slow to exit (a loaded CI machine): allow that.
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGUSR1)  # its stacks into its stderr, then gone
            time.sleep(1)
            p.kill()
            raise AssertionError(f"harness did not exit within 30 s of {sig.name}; its "
                                 f"stderr:\n{err.read_text()[-4000:]}") from None
        deadline = time.monotonic() + 5
        while _alive(qemu_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(qemu_pid), f"QEMU survived {sig.name} of the harness"


@pytest.mark.parametrize("wrapper", ["setpriv", "no-such-setpriv"],
                         ids=["setpriv", "preexec-fallback"])
def test_a_killed_harness_leaves_no_qemu_either_way_of_spawning(
        qemu_build: QemuBuild, tmp_path: Path, wrapper: str) -> None:
    """QEMU dies with a harness killed outright whether it was spawned
    through ``setpriv --pdeathsig`` or, without it, a ``preexec_fn``; and
    either way the process is QEMU itself, the harness's own child (the
    wrapper exec'd it), so its exit status and signals are QEMU's."""
    script = tmp_path / "victim.py"
    script.write_text(textwrap.dedent(f"""
        import os, time
        from harness.qemu import session
        session._SETPRIV = {wrapper!r}
        with session.QemuSession({str(qemu_build.binary)!r}) as s:
            print(s.proc.pid, os.getpid(), flush=True)
            time.sleep(60)
    """))
    root = Path(__file__).resolve().parents[3]
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert p.stdout is not None
    qemu_pid, harness_pid = map(int, p.stdout.readline().split())
    with open(f"/proc/{qemu_pid}/stat") as f:
        assert int(f.read().rsplit(")", 1)[1].split()[1]) == harness_pid  # its parent
    assert os.path.samefile(f"/proc/{qemu_pid}/exe", qemu_build.binary)
    p.kill()
    p.wait(10)
    deadline = time.monotonic() + 5
    while _alive(qemu_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(qemu_pid), "QEMU survived the harness's SIGKILL"


class _Unkillable:
    """A QEMU that answers nothing and is never reaped (an uninterruptible
    sleep on a loaded machine): every wait on it times out."""

    pid, returncode, args = 0, None, ["qemu"]

    def __init__(self, waits: list[tuple[str, float]]) -> None:
        self.waits = waits

    def poll(self) -> None:
        return None

    def kill(self) -> None:
        self.waits.append(("SIGKILL", 0.0))

    def terminate(self) -> None:
        self.waits.append(("SIGTERM", 0.0))

    def wait(self, timeout: float) -> int:
        self.waits.append(("wait", timeout))
        raise subprocess.TimeoutExpired("qemu", timeout)


def test_close_waits_once_for_a_qemu_that_will_not_die(monkeypatch: pytest.MonkeyPatch) -> None:
    """quit, the exit grace, SIGTERM and 2 s, SIGKILL and one reap wait: the
    teardown's own kill sends SIGKILL again but does not wait a second time
    (it did, 5 s more, which a harness interrupted on a loaded machine spent
    on top of the rest)."""
    from harness.qemu import session

    waits: list[tuple[str, float]] = []

    def wait_exit(proc: object, timeout: float) -> int:
        waits.append(("wait", timeout))
        raise subprocess.TimeoutExpired("qemu", timeout)

    monkeypatch.setattr(session, "wait_exit", wait_exit)
    s = QemuSession("/nonexistent/qemu")
    s.proc = _Unkillable(waits)  # type: ignore[assignment]
    s.close()
    grace = session.exit_grace()
    assert waits == [("wait", grace), ("SIGTERM", 0.0), ("wait", 2), ("SIGKILL", 0.0),
                     ("wait", session.KILL_REAP), ("SIGKILL", 0.0)]
