"""Live migration of a :class:`~harness.qemu.target.QemuTarget` to another process.

A migration point moves the machine under test, mid-run, from the QEMU
process serving the target to a new one, of the same or another build,
started with the same :class:`~harness.machine.Machine` (its command line
from :func:`harness.qemu.argv.qemu_argv` only) plus ``-incoming``:

1. the source's state is written to a file (``migrate`` to
   ``exec:cat > FILE``; ``query-migrate`` until ``completed`` or
   ``failed``); the source, running, stops when the save completes;
2. the source quits, so the card image (the target's private copy) is
   complete on disk before the destination opens it;
3. the destination loads the stream (``-incoming "exec:cat FILE"``); a
   stream it refuses makes it exit with the reason on stderr, which is
   raised as :class:`MigrationRefused`;
4. the destination runs on its own once loaded (the stream says the
   source was running), and its virtual clock, which under qtest is not
   part of the migrated state and restarts at 0, is set to where the
   source's was (``clock_set``), so that migrated timer deadlines keep
   their meaning;
5. the IOAPIC input is intercepted again (interception is per process);
6. to the same build, the destination is saved again at once and its SD
   devices' vmstate fields compared with the source's, by name
   (:mod:`harness.qemu.vmstate`; issue #34: every field must survive).

Known QEMU behaviour (QEMU 7.2 to 11.1): ``sdhci-pci`` migrates the SDHCI
registers but not its PCI function (its ``vmstate`` has no PCI device
section), so on the destination BAR0, the command register and the
interrupt line register are back at their reset values and the controller
is unreachable.  The registers the guest had written are compared after
the load (:attr:`Migration.pci_lost` names the ones that were lost) and
written again, so that the SD card and SDHCI state can still be checked.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import QemuError
from harness.hwdefs import pci as P
from harness.qemu import pci, vmstate
from harness.qemu.session import QemuLaunchError, QemuSession
from harness.qemu.target import QemuTarget, copy_image

#: Seconds a save or a load may take (a 128 MiB guest saves in ~0.1 s).
MIGRATE_TIMEOUT = 30.0
#: The PCI configuration registers of sdhci-pci the harness writes, by size.
PCI_REGISTERS: tuple[tuple[str, int, int], ...] = (
    ("BAR0", P.BAR0, 4), ("COMMAND", P.COMMAND, 2), ("INTERRUPT_LINE", P.INTERRUPT_LINE, 1))


class MigrationRefused(QemuError):
    """QEMU could not save or load the state: the text is QEMU's own reason."""

    def __init__(self, stage: str, reason: str) -> None:
        self.stage = stage    #: "save" or "load"
        self.reason = reason  #: QEMU's error text
        super().__init__(f"migration refused at {stage}: {reason}")


@dataclass
class Migration:
    """What one migration did: enough for a reproducer without sdqtest."""

    label: str
    source: str                    #: source binary
    destination: str               #: destination binary
    stream: Path                   #: the saved state
    source_argv: list[str]
    destination_argv: list[str] = field(default_factory=list)
    #: Every qtest command the source was sent (the run up to the point).
    trace_before: list[str] = field(default_factory=list)
    #: Virtual time on the source when it stopped, in ns.
    clock_ns: int = 0
    #: ``NAME: source VALUE, destination VALUE`` of each PCI register lost.
    pci_lost: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: A copy of the card image as it was at the point (for a reproducer).
    image: Path | None = None
    #: Same build: the SD devices' vmstate fields the destination, saved
    #: again right after it loaded, wrote otherwise than the source
    #: (:func:`harness.qemu.vmstate.lost`); why they were not compared.
    vmstate_lost: list[str] = field(default_factory=list)
    vmstate_note: str = ""


class _Backoff:
    """Pauses between two status polls: 1 ms, doubling up to 20 ms (a
    small machine's save or load is done in a few milliseconds; a fixed
    10-20 ms pause was most of a migration's wait)."""

    def __init__(self) -> None:
        self.seconds = 0.001

    def sleep(self) -> None:
        time.sleep(self.seconds)
        self.seconds = min(2 * self.seconds, 0.02)


def save(session: QemuSession, stream: Path, *, timeout: float = MIGRATE_TIMEOUT) -> None:
    """Write ``session``'s state to ``stream``; the machine stops when the
    save completes (it was running: the destination then starts running
    as soon as it has loaded the state)."""
    session.qmp_cmd("migrate", uri=f"exec:cat > {shlex.quote(str(stream))}")
    deadline = time.monotonic() + timeout
    pause = _Backoff()
    while True:
        info = session.qmp_cmd("query-migrate")
        status = info.get("status")
        if status == "completed":
            return
        if status in ("failed", "cancelled"):
            raise MigrationRefused("save", str(info.get("error-desc", status)))
        if time.monotonic() > deadline:
            raise MigrationRefused("save", f"not completed within {timeout:g} s "
                                   f"(status {status})")
        pause.sleep()


def start_destination(session: QemuSession) -> None:
    """Start ``session``, made with an incoming stream.  A QEMU that refuses
    the stream so soon that it exits while starting (before its monitor
    answers: how soon depends on the machine's speed) is a refused load with
    QEMU's reason, as when :func:`load` sees it exit."""
    try:
        session.start()
    except QemuLaunchError as e:
        if "load of migration failed" not in session.failed_stderr:
            raise
        raise MigrationRefused("load", load_error(session.failed_stderr)) from e


def load(session: QemuSession, *, timeout: float = MIGRATE_TIMEOUT) -> None:
    """Wait until ``session`` (started with ``incoming``) has loaded its
    state; a refused stream (QEMU exits) raises :class:`MigrationRefused`."""
    deadline = time.monotonic() + timeout
    pause = _Backoff()
    while True:
        try:
            status = session.qmp_cmd("query-status")["status"]
        except QemuError:
            status = "gone"
        if session.proc is not None and session.proc.poll() is not None:
            raise MigrationRefused("load", load_error(session.stderr()))
        if status not in ("inmigrate", "gone"):
            break
        if time.monotonic() > deadline:
            raise MigrationRefused("load", f"not loaded within {timeout:g} s")
        pause.sleep()
    info = session.qmp_cmd("query-migrate")
    if info.get("status") == "failed":
        raise MigrationRefused("load", str(info.get("error-desc", "failed")))


def load_error(stderr: str) -> str:
    """QEMU's reason for refusing a stream: its stderr lines but warnings,
    without the program name, joined."""
    lines = [ln.strip().split(": ", 1)[-1] if ln.startswith("qemu-system") else ln.strip()
             for ln in stderr.splitlines() if ln.strip() and "warning:" not in ln]
    return " | ".join(lines[-6:]) or "the destination exited without a message"


def _pci_values(t: QemuTarget) -> dict[str, int]:
    devfn = t.pci_function.devfn
    return {name: t.pci.read(0, devfn, off, size) for name, off, size in PCI_REGISTERS}


def migrate(t: QemuTarget, destination: str | Path, workdir: Path, label: str,
            *, timeout: float = MIGRATE_TIMEOUT) -> Migration:
    """Move ``t`` to a new process of ``destination`` (see the module text);
    ``t`` then drives the destination.  The stream is left in ``workdir``."""
    t0 = time.monotonic()
    n = len(list(workdir.glob("*.migstream")))
    stream = workdir / f"{n}-{label}.migstream"
    old = t.session
    rec = Migration(label, str(old.binary), str(destination), stream, list(old.argv),
                    trace_before=list(t.qtest.trace), clock_ns=t.now)
    before = _pci_values(t)
    save(old, stream, timeout=timeout)
    old.close()  # quits: the card image is complete on disk
    if t.image is not None and t.image != t.source_image:
        keep = workdir / f"{n}-image"
        keep.mkdir()
        rec.image = copy_image(t.image, keep)
    new = QemuSession(destination, old.machine, accel="qtest", timeout=old.timeout,
                      incoming=f"exec:cat {shlex.quote(str(stream))}")
    try:
        start_destination(new)
        rec.destination_argv = list(new.argv)
        load(new, timeout=timeout)
    except BaseException:
        with contextlib.suppress(Exception):
            rec.destination_argv = rec.destination_argv or list(new.argv)
        new.close()
        raise
    t.session, t.qtest, t.binary = new, new.qtest, Path(destination)
    t.pci = pci.PciConfig(new.qtest)
    devfn = t.pci_function.devfn
    after = _pci_values(t)
    for name, off, size in PCI_REGISTERS:
        if after[name] != before[name]:
            rec.pci_lost.append(f"{name}: source {before[name]:#x}, destination "
                                f"{after[name]:#x}")
            t.pci.write(0, devfn, off, size, before[name])
    new.qtest.irq_intercept_in("ioapic")
    if t.now:
        new.qtest.clock_set(t.now)
    if Path(destination).resolve() == Path(old.binary).resolve():
        round_trip(new, rec, workdir / f"{n}-{label}.again.migstream", timeout)
    rec.seconds = time.monotonic() - t0
    return rec


def round_trip(session: QemuSession, rec: Migration, again: Path, timeout: float) -> None:
    """Save the destination right after it loaded and compare its SD devices'
    fields with the source's stream (one build, one machine type: every
    field must come back as it went); the machine then runs on (``cont``:
    QEMU takes its block devices back after an outgoing migration)."""
    save(session, again, timeout=timeout)
    session.qmp_cmd("cont")
    try:
        rec.vmstate_lost = vmstate.lost(rec.stream.read_bytes(), again.read_bytes())
    except vmstate.StreamError as e:
        rec.vmstate_note = str(e)
