"""A :class:`~harness.target.Target` over QEMU's ``-qtest stdio`` on pipes.

A bug reproducer must survive the bug: QEMU may abort half way (an
assertion) or stop answering.  :class:`harness.qemu.stdio.StdioQtest` waits
with a deadline on every line and always reaps its child, so a reproducer
run here never hangs and leaves no process.  Every command sent is kept
(:attr:`StdioTarget.trace`): with the machine header it is a trace that
``sdqtest replay`` and ``qemu-system-x86_64 -qtest stdio`` take as is.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import QemuError, QemuGone
from harness.machine import Machine
from harness.qemu import pci, sanitizer
from harness.qemu.argv import qemu_argv
from harness.qemu.qtest import (
    b64read_lines,
    b64write_lines,
    fmt_clock_step,
    fmt_in,
    fmt_mmio_read,
    fmt_mmio_write,
    fmt_out,
    parse_int,
)
from harness.qemu.stdio import StdioQtest, StdioTimeout
from harness.target import check_access, check_clock_step, check_memory

_IRQ = re.compile(r"^IRQ (raise|lower) (\d+)$")


class StdioTarget:
    """sdhci-pci of ``machine`` on ``binary``, reached through qtest on pipes.

    QEMU that exits or stops answering raises :class:`QemuGone`; its exit
    status and stderr stay readable (:meth:`close`, :attr:`stderr`)."""

    def __init__(self, binary: str | Path, machine: Machine, *, timeout: float = 10.0,
                 name: str | None = None) -> None:
        self.name = name or f"qemu:{Path(binary).name}"
        self.machine = machine
        self.bar0 = machine.bar0
        self.timeout = timeout
        self.trace: list[str] = []
        self.levels: dict[int, bool] = {}
        self.irq_line = 0
        self.stderr = ""
        self.status: int | None = None
        self._seen = 0
        argv = qemu_argv(binary, machine, qtest="stdio", qtest_log="none", snapshot=True)
        self._ch = StdioQtest(argv, env=sanitizer.environment())
        self._closed = False
        try:
            self._setup_pci()
        except BaseException:
            self.close()
            raise

    # -- the wire ---------------------------------------------------------------------

    def command(self, line: str) -> str:
        """Send one qtest line; its ``OK`` answer.  Raises :class:`QemuGone`
        when QEMU exited or hung, :class:`QemuError` for a refused command."""
        self.trace.append(line)
        try:
            answer = self._ch.command(line, self.timeout)
        except StdioTimeout as e:
            self._ch.kill()
            raise QemuGone(f"QEMU hung: no answer to {line!r} within {self.timeout:g} s") from e
        self._irq_lines()
        if answer is None:
            raise QemuGone(f"QEMU exited at {line!r}")
        if not answer.startswith("OK"):
            raise QemuError(f"qtest {line!r} answered {answer!r}")
        return answer

    def _irq_lines(self) -> None:
        for text in self._ch.other[self._seen:]:
            m = _IRQ.match(text.strip())
            if m:
                self.levels[int(m.group(2))] = m.group(1) == "raise"
        self._seen = len(self._ch.other)

    # the few QtestClient calls harness.qemu.pci.PciConfig makes
    def out(self, size: int, port: int, value: int) -> None:
        self.command(fmt_out(size, port, value))

    def in_(self, size: int, port: int) -> int:
        return parse_int(self.command(fmt_in(size, port)))

    def _setup_pci(self) -> None:
        """Find sdhci-pci on bus 0, map BAR0, enable memory and bus mastering,
        watch its INTx on the IOAPIC (as :class:`harness.qemu.target.QemuTarget`)."""
        cfg = pci.PciConfig(self)  # type: ignore[arg-type]  # duck-typed: out, in_
        up = pci.enable_sdhci(cfg, cfg.scan_bus0(), self.bar0)
        if up is None:
            raise QemuError("no sdhci-pci (1b36:0007) on PCI bus 0")
        self.irq_line = up[1]
        self.command("irq_intercept_in ioapic")

    # -- Target -----------------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        return parse_int(self.command(fmt_mmio_read(size, self.bar0 + offset)))

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        self.command(fmt_mmio_write(size, self.bar0 + offset, value & ((1 << (8 * size)) - 1)))

    def mem_read(self, addr: int, length: int) -> bytes:
        import base64

        check_memory(addr, length)
        return b"".join(base64.b64decode(self.command(line).split()[1])
                        for line in b64read_lines(addr, length))

    def mem_write(self, addr: int, data: bytes) -> None:
        check_memory(addr, len(data))
        for line in b64write_lines(addr, data):
            self.command(line)

    def clock_step(self, ns: int | None = None) -> int:
        check_clock_step(ns)
        return parse_int(self.command(fmt_clock_step(ns)))

    def irq_level(self) -> bool:
        return self.levels.get(self.irq_line, False)

    def image_read(self, offset: int, length: int) -> bytes:
        raise QemuError("a bug reproducer reads the card through the controller only")

    def close(self) -> None:
        """Stop QEMU (if it still runs) and reap it; keep its status and stderr."""
        if self._closed:
            return
        self._closed = True
        self.status = self._ch.close()
        self.stderr = self._ch.stderr()
        self._ch.__exit__(None, None, None)

    def __enter__(self) -> StdioTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
