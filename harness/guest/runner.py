"""One guest boot: the QEMU command line, the console read with timeouts, QEMU always killed.

The console is read with pexpect; every protocol line (:mod:`harness.guest.protocol`)
is taken as it comes, and the whole console is kept in a log file.  Timeouts: the boot
timeout runs until ``SDQTEST-HELLO``; each job has its own from its ``SDQTEST-START``.
QEMU runs under ``setpriv --pdeathsig KILL`` (util-linux), so it dies with the harness
even when the harness is killed outright; every other exit path kills it explicitly.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pexpect

from harness.errors import GuestError
from harness.guest import cpio
from harness.guest.protocol import Message, ProtocolError, Transcript, parse_line
from harness.machine import CardImage, Machine
from harness.qemu.argv import device_args

#: Kernel command line the harness always gives (the user's ``--append`` follows it).
BASE_APPEND = "console=ttyS0,115200 panic=-1 loglevel=4 sdqtest.wait=30"
KVM_GET_API_VERSION = 0xAE00


class GuestRunError(GuestError):
    """A boot that failed: which job overran, and what the guest did until then."""

    def __init__(self, message: str, job: str | None = None) -> None:
        super().__init__(message)
        self.job = job  #: the job that overran its timeout, if that is the cause
        self.run: GuestRun | None = None  #: what the guest did until then


def guest_machine(image: Path, fmt: str, *, erase_blocks_as_zero: bool | None = None,
                  memory_mib: int = 512) -> Machine:
    """The guest's machine: q35 with ``memory_mib`` of RAM, sdhci-pci and an
    sd-card on ``image`` (cache ``none``: the guest's direct I/O reaches the file)."""
    card = {} if erase_blocks_as_zero is None else {"erase-blocks-as-zero": erase_blocks_as_zero}
    return Machine("q35", ram=memory_mib << 20, card=card,
                   image=CardImage(image, format=fmt, cache="none"))


def qemu_argv(binary: Path | str, *, image: Path, fmt: str, kernel: Path, initrd: Path,
              append: str, accel: str, erase_blocks_as_zero: bool | None = None,
              memory_mib: int = 512, firmware: Sequence[str] = ()) -> list[str]:
    """THE guest command line: :func:`guest_machine`'s devices (written by the
    project's one :func:`~harness.qemu.argv.device_args`), the kernel and
    initramfs, the console on stdio; nothing else (``-nodefaults``) but the
    ``firmware`` search options (:func:`harness.provision.firmware.search_args`)."""
    machine = guest_machine(image, fmt, erase_blocks_as_zero=erase_blocks_as_zero,
                            memory_mib=memory_mib)
    cpu = ["-cpu", "host"] if accel == "kvm" else []
    return [
        str(binary), "-machine", machine.type, "-accel", accel, *cpu,
        "-m", str(memory_mib), "-smp", "1", "-nodefaults", "-no-user-config",
        "-display", "none", "-no-reboot", "-serial", "stdio", "-monitor", "none",
        *device_args(machine),
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", append, *firmware,
    ]


def kvm_usable() -> bool:
    """Whether ``/dev/kvm`` opens read-write and answers its API version (12)."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, KVM_GET_API_VERSION) == 12
    except OSError:
        return False
    finally:
        os.close(fd)


def with_extras(initrd: Path, files: dict[str, bytes], out: Path) -> Path:
    """``initrd`` with a second gzip newc archive of ``files`` appended (the kernel
    unpacks both); the original file is not touched."""
    entries = [cpio.directory(d) for d in sorted({str(Path(p).parent) for p in files}) if d != "."]
    entries += [cpio.file(p, data) for p, data in sorted(files.items())]
    with open(out, "wb") as f, open(initrd, "rb") as src:
        shutil.copyfileobj(src, f)
        f.write(b"\0" * (-f.tell() % 4))
        f.write(cpio.gz_archive(entries))
    return out


# -- never leave a guest behind ------------------------------------------------------

_live: weakref.WeakSet[pexpect.spawn[str]] = weakref.WeakSet()


def _kill_live() -> None:
    for child in list(_live):
        _kill(child)


atexit.register(_kill_live)


def _kill(child: pexpect.spawn[str]) -> None:
    if child.isalive():
        child.kill(9)
    try:
        child.close(force=True)
    except (OSError, pexpect.ExceptionPexpect):
        pass


def _deathsig_prefix() -> list[str]:
    exe = shutil.which("setpriv", path=os.pathsep.join([os.environ.get("PATH", ""),
                                                      "/usr/bin", "/bin"]))
    return [exe, "--pdeathsig", "KILL", "--"] if exe else []


# -- one run -------------------------------------------------------------------------


@dataclass
class GuestRun:
    """What one boot produced: the transcript, times, the console log."""

    transcript: Transcript
    console_log: Path
    argv: list[str]
    accel: str
    boot_s: float = 0.0  #: QEMU start to SDQTEST-HELLO (host clock)
    job_host_s: dict[str, float] = field(default_factory=dict)  #: START to RESULT/ERROR
    total_s: float = 0.0
    exit_status: int | None = None


def _tail(log: Path, n: int = 3) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[-300:]


def _panic(log: Path) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if "Kernel panic" in ln:
            before = [x.split("] ", 1)[-1] for x in lines[max(0, i - 2):i] if x.strip()]
            return " | ".join([*before, ln.split("] ", 1)[-1]])[:300]
    return ""


def run(argv: Sequence[str], *, accel: str, console_log: Path, boot_timeout: float,
        job_timeout: Callable[[str], float], idle_timeout: float = 120.0,
        on_message: Callable[[Message], None] | None = None) -> GuestRun:
    """Boot the guest of ``argv`` and read its console until ``SDQTEST-DONE``.

    Raises :class:`GuestRunError` (one line) when the guest says nothing within the
    boot timeout, a job overruns its timeout, QEMU exits early, or the guest
    reports an error before any job ran.  QEMU is dead when this returns."""
    full = [*_deathsig_prefix(), *argv]
    t = Transcript()
    res = GuestRun(t, console_log, list(argv), accel)
    console_log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(console_log, "w", encoding="utf-8", errors="replace") as logf:
        try:
            child = pexpect.spawn(full[0], full[1:], encoding="utf-8", codec_errors="replace",
                                  timeout=boot_timeout, echo=False, env={"LC_ALL": "C"},
                                  dimensions=(24, 500))
        except pexpect.ExceptionPexpect as e:
            raise GuestRunError(f"cannot start QEMU: {e}") from None
        _live.add(child)
        child.logfile_read = logf
        try:
            try:
                _converse(child, t, res, start, boot_timeout, job_timeout, idle_timeout,
                          on_message)
            except GuestRunError as e:
                e.run = res
                raise
            try:  # /init powers off after DONE; give it a moment
                child.expect(pexpect.EOF, timeout=20)
            except pexpect.TIMEOUT:
                pass
        finally:
            _kill(child)
            _live.discard(child)
            res.exit_status = child.exitstatus
            res.total_s = time.monotonic() - start
            logf.flush()
    return res


def _timed_out(child: pexpect.spawn[str], t: Transcript, res: GuestRun, saw_output: bool,
               boot_timeout: float, what: str, current: str | None) -> NoReturn:
    """The guest said nothing in time: ``what`` it was waiting for."""
    if t.hello is None and not saw_output and not child.before:
        raise GuestRunError(f"no output on the guest console within the boot timeout "
                            f"({boot_timeout:g} s): wrong kernel, or no console=ttyS0 in "
                            f"its command line?")
    raise GuestRunError(f"{what}; console: {_tail(res.console_log)}", current)


def _exited(child: pexpect.spawn[str], t: Transcript, res: GuestRun) -> NoReturn:
    """QEMU exited before the guest said it was done: a panic, or why not."""
    text = (child.before or "").strip()
    if child.logfile_read is not None:
        child.logfile_read.flush()
    panic = _panic(res.console_log)
    if panic:
        raise GuestRunError(f"kernel panic: {panic}")
    raise GuestRunError(
        "QEMU exited before SDQTEST-DONE"
        + (" (no SDQTEST-HELLO: did /init start?)" if t.hello is None else "")
        + f"; console: {text[-300:] or _tail(res.console_log)}")


def _converse(child: pexpect.spawn[str], t: Transcript, res: GuestRun, start: float,
              boot_timeout: float, job_timeout: Callable[[str], float], idle_timeout: float,
              on_message: Callable[[Message], None] | None) -> None:
    current: str | None = None
    job_start = 0.0
    saw_output = False
    while not t.done:
        if t.hello is None:
            left = boot_timeout - (time.monotonic() - start)
            what = f"no SDQTEST-HELLO within the boot timeout ({boot_timeout:g} s)"
        elif current is not None:
            limit = job_timeout(current)
            left = limit - (time.monotonic() - job_start)
            what = f"job {current} did not finish within its timeout ({limit:g} s)"
        else:
            left = idle_timeout
            what = f"the guest said nothing for {idle_timeout:g} s between jobs"
        idx = child.expect([r"[^\n]*\n", pexpect.EOF, pexpect.TIMEOUT],
                           timeout=max(0.1, left))
        if idx == 2:
            _timed_out(child, t, res, saw_output, boot_timeout, what, current)
        if idx == 1:
            _exited(child, t, res)
        saw_output = True
        line = str(child.after)
        if "Kernel panic" in line:
            if child.logfile_read is not None:
                child.logfile_read.flush()
            raise GuestRunError(f"kernel panic: {_panic(res.console_log) or line.strip()[:200]}")
        try:
            msg = parse_line(line)
        except ProtocolError as e:
            t.protocol_errors.append(str(e))
            continue
        if msg is None:
            continue
        now = time.monotonic()
        if msg.kind == "HELLO":
            res.boot_s = now - start
        elif msg.kind == "START":
            current, job_start = msg.job, now
        elif msg.kind in ("RESULT", "ERROR") and msg.job == current:
            res.job_host_s[current] = now - job_start
            current = None
        t.feed(msg)
        if on_message is not None:
            on_message(msg)
        if msg.kind == "ERROR" and msg.job == "boot":
            raise GuestRunError(f"guest: {msg.payload['error']}")


