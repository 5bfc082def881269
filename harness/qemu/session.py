"""One QEMU process under qtest, with QMP, that never outlives the harness.

``QemuSession`` is a context manager.  QEMU runs with ``-accel qtest`` (or,
for a build without the qtest accelerator, ``-accel tcg -S``: registers and
memory work, virtual time does not move), ``-nodefaults -display none``, and
its qtest and QMP channels on unix sockets inside a private 0700 directory
where the harness listens and QEMU connects, as QEMU's own libqtest does.

No path leaves QEMU running: the context exit, ``close()``, an atexit hook,
SIGINT/SIGTERM/SIGHUP handlers that unwind (installed even where the
harness inherited them ignored), and, should the harness be killed
outright, ``PR_SET_PDEATHSIG`` in the child.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from qemu.qmp.legacy import QEMUMonitorProtocol

from harness.errors import QemuError as QemuError
from harness.errors import QemuGone
from harness.machine import Machine
from harness.qemu import sanitizer
from harness.qemu.argv import qemu_argv
from harness.qemu.qtest import QtestClient
from harness.target import ClockUnavailable


class QemuLaunchError(QemuError):
    """QEMU could not be started or refused its command line."""


class QemuDied(QemuGone):
    """QEMU exited or was killed while the session was using it."""

    def __init__(
        self,
        returncode: int | None,
        stderr: str,
        qtest_log: Sequence[str],
        argv: Sequence[str],
    ) -> None:
        self.returncode = returncode
        self.signal = -returncode if returncode is not None and returncode < 0 else None
        self.stderr = stderr
        #: The first AddressSanitizer/UBSan report on stderr (a sanitizer build).
        self.sanitizer = sanitizer.first(stderr)
        self.assertion = None if self.sanitizer else find_assertion(stderr)
        self.qtest_log = list(qtest_log)
        self.argv = list(argv)
        if self.signal is not None:
            how = f"killed by {signal.Signals(self.signal).name}"
        else:
            how = f"exited with status {returncode}"
        text = f"QEMU {how}"
        if self.sanitizer:
            text += f": {self.sanitizer.summary()}"
        elif self.assertion:
            text += f": {self.assertion}"
        elif stderr.strip():
            text += f": {stderr.strip().splitlines()[-1]}"
        if self.qtest_log:
            text += f" (after {len(self.qtest_log)} qtest commands, last: {self.qtest_log[-1]!r})"
        super().__init__(text)


_ASSERT_RE = re.compile(r"(assertion|Assertion|ERROR:|Aborted|core dumped)")


def find_assertion(stderr: str) -> str | None:
    """The first assertion/abort line of QEMU's stderr, if any."""
    for line in stderr.splitlines():
        if _ASSERT_RE.search(line):
            return line.strip()
    return None


# -- never leave a QEMU behind -------------------------------------------------

_live: weakref.WeakSet[QemuSession] = weakref.WeakSet()
_live_lock = threading.Lock()
_PR_SET_PDEATHSIG = 1
#: fallocate(2) FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE.
_FALLOC_PUNCH = 0x02 | 0x01
_libc = ctypes.CDLL(None, use_errno=True)


def _set_pdeathsig() -> None:  # runs in the child before exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


#: For other launchers of QEMU (the ``-qtest stdio`` replay): the child dies with us.
set_pdeathsig = _set_pdeathsig

#: util-linux's ``setpriv``, which sets the death signal and then execs.
_SETPRIV = "setpriv"


@functools.cache
def _setpriv() -> str | None:
    """``setpriv``'s path if it can set the parent-death signal, else None
    (asked once per process; a forked worker inherits the answer)."""
    path = shutil.which(_SETPRIV)
    if path is None:
        return None
    try:
        ok = subprocess.run([path, "--pdeathsig", "KILL", "true"], stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return path if ok else None


def spawn(argv: Sequence[str], *, stderr: Any,
          env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    """Start ``argv`` (stdin and stdout on /dev/null) so that it dies with
    this process (``PR_SET_PDEATHSIG``).  Through ``setpriv --pdeathsig``
    where it is installed: the death signal is set in the exec'd process
    either way, but a ``preexec_fn`` makes Python fork the whole harness
    (its page tables copied, then copy-on-write faults) where ``setpriv``
    goes through vfork: 6 ms less of the harness's CPU a launch from a
    45 MB check worker, 15 ms from a 300 MB process (2026-12-02)."""
    wrapper = _setpriv()
    if wrapper is not None:
        return subprocess.Popen([wrapper, "--pdeathsig", "KILL", "--", *argv],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr, close_fds=True, env=env)
    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=stderr, preexec_fn=_set_pdeathsig, close_fds=True, env=env)


def _kill_all_live() -> None:
    with _live_lock:
        sessions = list(_live)
    for s in sessions:
        s.kill()


atexit.register(_kill_all_live)


def _raise_system_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


#: What a harness process does on each signal it must stop cleanly on.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def install_signal_handlers() -> None:
    """SIGINT raises ``KeyboardInterrupt``, SIGTERM and SIGHUP
    ``SystemExit(128 + n)``, so context managers run and no QEMU is left.

    Whatever the process inherited: a job started in the background
    (``cmd &``, some CI runners) has SIGINT ignored, ``nohup`` SIGHUP, and
    an ignored signal would leave the harness unstoppable but by SIGKILL.
    Only from the main thread; a handler of another program's (pytest's
    own) is left in place.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _STOP_SIGNALS:
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.SIG_IGN, None):
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                          else _raise_system_exit)


# -- the session -----------------------------------------------------------------


_BARE_Q35 = Machine.bare("q35")


def socket_dir() -> Path:
    """A new private directory for a session's sockets, under ``$TMPDIR``
    (honoured as given: Python would fall back to /tmp silently); one that
    cannot be made, or whose socket paths would be too long, raises
    :class:`QemuLaunchError` saying what to set."""
    base = os.environ.get("TMPDIR") or tempfile.gettempdir()
    try:
        d = Path(tempfile.mkdtemp(prefix="sdqtest-", dir=base))
    except OSError as e:
        raise QemuLaunchError(
            f"cannot create a private socket directory under {base}: "
            f"{e.strerror}; set TMPDIR to a writable directory"
        ) from e
    if len(str(d)) > 90:  # sun_path holds 108 bytes
        d.rmdir()
        raise QemuLaunchError(
            f"socket directory {d} is too long for a unix socket path; "
            "set TMPDIR to a shorter directory")
    return d


class QemuSession:
    """A QEMU process with a qtest client and a QMP monitor, building ``machine``
    (default: a bare q35, no devices).

    ``accel`` is ``"qtest"``, ``"tcg"`` (``-accel tcg -S``: no virtual time)
    or ``"auto"`` (qtest, falling back to tcg when the build lacks it).
    ``incoming`` is a migration URI the machine's state is loaded from
    (``-incoming``; see :mod:`harness.qemu.migrate`).
    """

    def __init__(
        self,
        binary: str | os.PathLike[str],
        machine: Machine = _BARE_Q35,
        *,
        accel: str = "auto",
        timeout: float = 10.0,
        launch_timeout: float = 20.0,
        incoming: str | None = None,
        ram_file: bool = False,
    ) -> None:
        self.binary = str(binary)
        #: Migration URI QEMU loads its state from (``-incoming``), if any.
        self.incoming = incoming
        #: Guest RAM in a shared file the harness can zero (:meth:`scrub_ram`).
        self.ram_file_wanted = ram_file
        self.ram_file: Path | None = None
        self._ram_fd: int | None = None
        self.machine = machine
        self.accel_request = accel
        self.timeout = timeout
        self.launch_timeout = launch_timeout
        self.accel = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.qtest: QtestClient
        self.qmp: QEMUMonitorProtocol
        self.dir: Path | None = None
        #: QEMU's stderr when the last launch failed (its directory is gone).
        self.failed_stderr = ""
        self.argv: list[str] = []
        self._stderr_file: Any = None
        self._listener: socket.socket | None = None
        #: SIGKILL sent and waited for once (:meth:`kill`).
        self._killed = False

    # -- lifecycle -------------------------------------------------------------

    def __enter__(self) -> QemuSession:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        if not os.path.isfile(self.binary) or not os.access(self.binary, os.X_OK):
            raise QemuLaunchError(
                f"QEMU binary {self.binary} does not exist or is not executable "
                "(install builds with 'sdqtest qemu install' or pass --qemu PATH)"
            )
        order = {"auto": ["qtest", "tcg"], "qtest": ["qtest"], "tcg": ["tcg"]}.get(
            self.accel_request
        )
        if order is None:
            raise ValueError(f"accel must be auto, qtest or tcg, not {self.accel_request!r}")
        for i, accel in enumerate(order):
            try:
                self._launch(accel)
                self.accel = accel
                return
            except QemuLaunchError as e:
                self.failed_stderr = self.stderr()  # the directory goes with the teardown
                self._teardown()
                last = i == len(order) - 1
                if last or not _no_such_accel(str(e)):
                    raise

    def _launch(self, accel: str) -> None:
        self._killed = False
        self.dir = socket_dir()
        qtest_path = self.dir / "qtest.sock"
        qmp_path = self.dir / "qmp.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(qtest_path))
        listener.listen(1)
        self._listener = listener
        self.qmp = QEMUMonitorProtocol(str(qmp_path), server=True)
        self.argv = qemu_argv(self.binary, self.machine, accel=accel,
                              qtest=f"unix:{qtest_path}", qtest_log="/dev/null", qmp=qmp_path,
                              incoming=self.incoming)
        if self.ram_file_wanted:
            self.argv[1:1] = self._ram_file_args()
        self._stderr_file = open(self.dir / "stderr.log", "w+b")  # noqa: SIM115
        try:
            self.proc = spawn(self.argv, stderr=self._stderr_file,
                              env=sanitizer.environment())  # a sanitizer build: no leak report
        except OSError as e:
            raise QemuLaunchError(f"cannot run {self.binary}: {e.strerror}") from e
        with _live_lock:
            _live.add(self)
        deadline = time.monotonic() + self.launch_timeout
        listener.settimeout(0.05)
        conn: socket.socket | None = None
        while conn is None:
            try:
                conn, _ = listener.accept()
            except (TimeoutError, BlockingIOError):
                if self.proc.poll() is not None:
                    raise QemuLaunchError(self._launch_failure()) from None
                if time.monotonic() > deadline:
                    raise QemuLaunchError(
                        f"QEMU did not connect to qtest within {self.launch_timeout:g} s"
                    ) from None
        listener.close()
        self._listener = None
        self.qtest = QtestClient(
            conn,
            timeout=self.timeout,
            on_eof=self._stream_ended,
            on_timeout=self.kill,
        )
        try:
            self.qmp.accept(timeout=max(1.0, deadline - time.monotonic()))
        except Exception as e:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
            if self.proc.poll() is not None:
                raise QemuLaunchError(self._launch_failure()) from e
            raise QemuLaunchError(f"QEMU's QMP monitor did not answer: {e}") from e
        self.qmp.settimeout(self.timeout)
        if self.ram_file is not None:  # QEMU has it mapped: keep an fd, drop the name
            self._ram_fd = os.open(self.ram_file, os.O_RDWR)
            self.ram_file.unlink(missing_ok=True)

    def _ram_file_args(self) -> list[str]:
        """Options backing guest RAM with a shared file (on tmpfs when there
        is one): the same RAM to the guest and devices, but the harness can
        zero it by punching the file (:meth:`scrub_ram`)."""
        shm = Path("/dev/shm")
        where = shm if shm.is_dir() and os.access(shm, os.W_OK) else self.dir
        fd, name = tempfile.mkstemp(prefix="sdqtest-ram-", dir=where)
        self.ram_file = Path(name)
        try:
            os.ftruncate(fd, self.machine.ram)
        finally:
            os.close(fd)
        return ["-object", f"memory-backend-file,id=sdqtest-ram,size={self.machine.ram},"
                f"mem-path={self.ram_file},share=on", "-machine", "memory-backend=sdqtest-ram"]

    def scrub_ram(self) -> None:
        """Zero guest RAM at once: punch the whole RAM file (its pages read
        as zero again, as at launch).  Only with ``ram_file``.  The file's
        name is removed once QEMU has mapped it, so nothing is left behind."""
        if self._ram_fd is None:
            raise QemuError("this QEMU's RAM is not in a file sdqtest can scrub")
        if _libc.fallocate(self._ram_fd, _FALLOC_PUNCH, ctypes.c_long(0),
                           ctypes.c_long(self.machine.ram)) != 0:
            raise QemuError(f"cannot scrub guest RAM: {os.strerror(ctypes.get_errno())}")

    def _launch_failure(self) -> str:
        """QEMU's own error, first line and hints, without the binary prefix."""
        lines = [ln.strip() for ln in self.stderr().splitlines() if ln.strip()]
        if not lines:
            return f"QEMU exited at start with status {self.proc and self.proc.returncode}"
        text = " ".join(ln.removeprefix(self.binary + ": ") for ln in lines[:4])
        return f"QEMU refused to start: {text}"

    def stderr(self) -> str:
        if self.dir is None:
            return ""
        try:
            return (self.dir / "stderr.log").read_text(errors="replace")
        except OSError:
            return ""

    def check_alive(self) -> None:
        """Raise :class:`QemuDied` if the process has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            trace = self.qtest.trace if hasattr(self, "qtest") else []
            raise QemuDied(self.proc.returncode, self.stderr(), trace, self.argv)

    def _stream_ended(self) -> None:
        """The qtest stream closed: QEMU is exiting; report how it ended."""
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        self.check_alive()

    def kill(self) -> None:
        """Kill the process at once (no QMP), and reap it: up to
        :data:`KILL_REAP` seconds, once.  A process that outlives that (in
        an uninterruptible sleep on a loaded machine) has its SIGKILL
        pending; a second call does not wait for it again (``close`` ends
        in ``_teardown``, which kills too), so the harness's own exit stays
        bounded whatever QEMU does."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            if self._killed:
                return
            self._killed = True
            with contextlib.suppress(subprocess.TimeoutExpired):
                wait_exit(self.proc, KILL_REAP)

    def close(self) -> None:
        """Ask QEMU to quit, then escalate; always reap and clean up."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.qmp.settimeout(2.0)
                self.qmp.cmd("quit")
            try:
                wait_exit(self.proc, exit_grace())
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(2)
                except subprocess.TimeoutExpired:
                    self.kill()
        self._teardown()

    def _teardown(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            self.qmp.close()
        if hasattr(self, "qtest"):
            with contextlib.suppress(OSError):
                self.qtest._sock.close()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        if self.ram_file is not None:
            self.ram_file.unlink(missing_ok=True)
            self.ram_file = None
        if self._ram_fd is not None:
            os.close(self._ram_fd)
            self._ram_fd = None
        with _live_lock:
            _live.discard(self)

    # -- conveniences ------------------------------------------------------------

    @property
    def can_scrub(self) -> bool:
        return self._ram_fd is not None

    @property
    def has_clock(self) -> bool:
        return self.accel == "qtest"

    def clock_step(self, ns: int | None = None) -> int:
        if not self.has_clock:
            raise ClockUnavailable(
                f"{self.binary} has no qtest accelerator: virtual time cannot move "
                "(install a build with 'sdqtest qemu install')"
            )
        return self.qtest.clock_step(ns)

    def system_reset(self) -> None:
        """QMP ``system_reset``, returning once QEMU has done it (its
        ``RESET`` event): the request itself is served by the main loop."""
        self.qmp.clear_events()
        self.qmp_cmd("system_reset")
        if self._next_event("RESET", time.monotonic() + self.timeout) is None:
            raise QemuError(f"no RESET event from QEMU within {self.timeout:g} s")

    def wait_events(self, name: str, devices: set[str], timeout: float | None = None
                    ) -> set[str]:
        """Wait (up to ``timeout``, default the session's) for a QMP event
        ``name`` naming each of ``devices`` (its ``data.device``); the ones
        that never came."""
        left_over = set(devices)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while left_over:
            event = self._next_event(name, deadline)
            if event is None:
                break
            left_over.discard(str(event.get("data", {}).get("device", "")))
        return left_over

    def _next_event(self, name: str, deadline: float) -> dict[str, Any] | None:
        """The next QMP event ``name`` before ``deadline`` (``time.monotonic``),
        or None; a QEMU that died meanwhile raises (:meth:`check_alive`)."""
        while True:
            left = deadline - time.monotonic()
            try:
                event = self.qmp.pull_event(wait=max(left, 0.001))
            except Exception:
                self.check_alive()
                return None
            if event is not None and event.get("event") == name:
                return dict(event)
            if left <= 0:
                return None

    def qmp_cmd(self, name: str, **args: Any) -> Any:
        """Run a QMP command; a QMP error raises :class:`QemuError`."""
        try:
            reply = self.qmp.cmd_raw(name, args or None)
        except Exception as e:
            self.check_alive()
            raise QemuError(f"QMP {name} failed: {e}") from e
        if "error" in reply:
            raise QemuError(f"QMP {name}: {reply['error'].get('desc', reply['error'])}")
        return reply["return"]


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """``proc.wait(timeout)``, woken the moment the process exits (a pidfd
    polled) instead of Python's sleeps of up to 50 ms between polls, which
    left a quitting QEMU's close 6 ms longer on average (measured on 20
    launches, 2026-12-02)."""
    if proc.returncode is not None or not hasattr(os, "pidfd_open"):
        return proc.wait(timeout)
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # already reaped, or no pidfd in this kernel
        return proc.wait(timeout)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    return proc.wait(1)


#: Seconds :meth:`QemuSession.kill` waits, once, for a killed QEMU to be reaped.
KILL_REAP = 5.0


def exit_grace() -> float:
    """Seconds a quitting QEMU gets before SIGTERM: 3, or ``$SDQTEST_EXIT_GRACE``
    (a gcov build writes its counts at exit, and a killed one writes none)."""
    try:
        return max(3.0, float(os.environ.get("SDQTEST_EXIT_GRACE", "3")))
    except ValueError:
        return 3.0


def _no_such_accel(message: str) -> bool:
    m = message.lower()
    return "accel" in m and ("invalid" in m or "not" in m or "unknown" in m)
