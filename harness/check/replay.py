"""Replay a qtest trace on a QEMU build, and on the model where it can.

A trace is what ``-qtest stdio`` reads: one command per line.  Ours come
from divergence reports; others from QEMU's fuzzers and bug reports.  QEMU
runs under a pty (pexpect), fed one line at a time; the replay reports
whether QEMU crashed (signal, assertion text) and at which line.

When the trace touches nothing but the sdhci-pci function (its PCI config
space, its BAR, guest RAM and the clock), the same register and memory
operations run on the model too, and every register read QEMU answered is
compared with the model's answer.

Our reproducers carry the machine they were recorded on in their header, a
``# machine: {JSON}`` comment line (see :mod:`harness.machine`): machine
type, RAM, device properties and card image (opened with ``snapshot=on``,
never written).  A trace without one replays on :data:`DEFAULT_MACHINE`.
"""

from __future__ import annotations

import base64
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pexpect

from harness.errors import UsageError
from harness.machine import CardImage, Machine
from harness.profile import BuildProfile
from harness.qemu.argv import qemu_argv

#: The machine of a trace without a header: q35, the controller and a card
#: on QEMU's null block driver (no image needed).
DEFAULT_MACHINE = Machine(image=CardImage.null(16 << 20))

_HEADER = "# machine: "

_ANSWER = re.compile(r"^(OK|FAIL|ERR)\b.*$", re.M)
_SDHCI_IDS = 0x0007_1B36
_REG = re.compile(r"^(read|write)([bwlq]) (0x[0-9a-fA-F]+|\d+)(?: (0x[0-9a-fA-F]+|\d+))?$")
_SIZES = {"b": 1, "w": 2, "l": 4, "q": 8}


@dataclass
class ReplayResult:
    lines: int = 0
    answered: int = 0
    crashed: bool = False
    signal: int | None = None
    exit_status: int | None = None
    output_tail: str = ""
    answers: list[tuple[str, str]] = field(default_factory=list)
    model_diffs: list[str] = field(default_factory=list)
    model_checked: bool = False
    model_reason: str = ""

    def summary(self) -> str:
        if self.crashed:
            how = (f"signal {signal.Signals(self.signal).name}" if self.signal
                   else f"exit status {self.exit_status}")
            return f"QEMU crashed ({how}) at trace line {self.answered + 1} of {self.lines}"
        return f"no crash: {self.answered} of {self.lines} commands answered"


def read_trace(path: Path) -> list[str]:
    """Command lines of a trace; blank lines and ``#`` comments dropped."""
    out = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def reproducer_header(machine: Machine, what: str = "") -> str:
    """The comment lines that start a reproducer trace: ``what`` and the
    machine it was recorded on."""
    lines = [f"# {ln}" for ln in what.splitlines()] if what else []
    return "".join(f"{ln}\n" for ln in [*lines, _HEADER + machine.dumps()])


class ReplayError(UsageError, ValueError):
    """A trace's header cannot be used."""


def machine_of(trace_path: Path) -> Machine | None:
    """The machine a reproducer's header records, or None without one."""
    for raw in trace_path.read_text().splitlines():
        line = raw.strip()
        if line.startswith(_HEADER):
            try:
                return Machine.loads(line[len(_HEADER):])
            except (ValueError, TypeError, KeyError) as e:
                raise ReplayError(f"{trace_path}: bad machine header: {e}") from e
        if line and not line.startswith("#"):
            return None
    return None


def replay_machine(trace_path: Path, machine_type: str | None = None, *,
                   own_devices: bool = False) -> Machine:
    """The machine to replay ``trace_path`` on: its header's, else the
    default; ``machine_type`` overrides the type.  A recorded card image
    that is gone raises :class:`ReplayError`, unless QEMU gets the user's
    own devices (``own_devices``): the model then gets the default card."""
    m = machine_of(trace_path) or DEFAULT_MACHINE
    if machine_type is not None:
        m = m.replace(type=machine_type)
    if m.image is not None and m.image.path is not None and not m.image.path.is_file():
        if not own_devices:
            raise ReplayError(f"the card image {m.image.path} recorded in {trace_path} does "
                              "not exist; pass --qemu-args to replay on other devices")
        m = m.replace(image=DEFAULT_MACHINE.image)
    return m


def replay_qemu(binary: Path, trace: list[str], machine: Machine,
                args: list[str] | None = None, timeout: float = 10.0) -> ReplayResult:
    """Feed ``trace`` to QEMU building ``machine`` (the card image opened
    with ``snapshot=on``); ``args`` replaces the machine's devices."""
    argv = qemu_argv(binary, machine, qtest="stdio", qtest_log="none", snapshot=True,
                     devices=args)
    res = ReplayResult(lines=len(trace))
    child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", timeout=timeout,
                          echo=False, codec_errors="replace")
    child.delaybeforesend = None
    try:
        for line in trace:
            child.sendline(line)
            idx = child.expect([_ANSWER, pexpect.EOF, pexpect.TIMEOUT])
            if idx != 0:
                break
            res.answers.append((line, str(child.after).strip()))
            res.answered += 1
        else:
            child.sendeof()
    finally:
        res.output_tail = (child.before or "")[-2000:] if isinstance(child.before, str) else ""
        if child.isalive():
            child.terminate(force=True)
        child.close(force=True)
        res.exit_status = child.exitstatus
        res.signal = child.signalstatus
        res.crashed = res.answered < res.lines and (
            child.signalstatus is not None or (child.exitstatus not in (0, None)))
    return res


def replay_model(res: ReplayResult, profile: BuildProfile, machine: Machine) -> None:
    """Run the trace's sdhci-pci operations on the model of ``machine``;
    compare reads."""
    from harness.model.target import ModelTarget

    bar: int | None = None
    cf8 = 0
    sdhci_devfn: int | None = None
    try:
        model = ModelTarget(machine, profile=profile)
    except ValueError as e:
        res.model_reason = f"the model cannot mirror this machine: {e}"
        return
    try:
        for line, answer in res.answers:
            words = line.split()
            if words[0] == "outl" and int(words[1], 0) == 0xCF8:
                cf8 = int(words[2], 0)
                continue
            if words[0] == "inl" and int(words[1], 0) == 0xCFC and (cf8 & 0xFC) == 0:
                if int(answer.split()[1], 0) == _SDHCI_IDS:
                    sdhci_devfn = (cf8 >> 8) & 0xFF
                continue
            if words[0] == "outl" and int(words[1], 0) == 0xCFC:
                if sdhci_devfn is not None and (cf8 >> 8) & 0xFF == sdhci_devfn \
                        and cf8 & 0xFC == 0x10:
                    bar = int(words[2], 0) & ~0xF
                continue
            if words[0] in ("outb", "outw", "inb", "inw", "inl", "irq_intercept_in",
                            "irq_intercept_out", "endianness"):
                continue
            m = _REG.match(line)
            if m and bar is not None and bar <= int(m.group(3), 0) < bar + 0x100:
                off, size = int(m.group(3), 0) - bar, _SIZES[m.group(2)]
                if m.group(1) == "write":
                    model.write(off, size, int(m.group(4), 0))
                else:
                    got = model.read(off, size)
                    want = int(answer.split()[1], 0)
                    if got != want:
                        res.model_diffs.append(
                            f"{line}: QEMU {want:#x}, model {got:#x}")
                continue
            if words[0] == "clock_step":
                model.clock_step(int(words[1], 0) if len(words) > 1 else None)
                continue
            if words[0] in ("write", "b64write", "read", "b64read", "memset"):
                addr, length = int(words[1], 0), int(words[2], 0)
                if addr + length > machine.ram:
                    res.model_reason = f"trace touches memory outside RAM: {line!r}"
                    return
                if words[0] == "write":
                    data = bytes.fromhex(words[3][2:].ljust(2 * length, "0")[: 2 * length])
                    model.mem_write(addr, data)
                elif words[0] == "b64write":
                    model.mem_write(addr, base64.b64decode(words[3]))
                elif words[0] == "memset":
                    model.mem_write(addr, bytes([int(words[3], 0)]) * length)
                else:
                    tail = answer.split()[1]
                    want_b = (bytes.fromhex(tail[2:]) if words[0] == "read"
                              else base64.b64decode(tail))
                    if model.mem_read(addr, length) != want_b:
                        res.model_diffs.append(f"{line}: guest memory differs")
                continue
            if m:
                res.model_reason = f"trace touches MMIO outside the sdhci BAR: {line!r}"
                return
            res.model_reason = f"trace uses {words[0]!r}, which the model does not replay"
            return
        res.model_checked = bar is not None
        if bar is None:
            res.model_reason = "trace never maps the sdhci-pci BAR"
    finally:
        model.close()
