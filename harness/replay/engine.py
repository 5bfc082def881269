"""Replay a qtest trace on a QEMU build, and on the model where it can.

A trace is what ``-qtest stdio`` reads: one command per line.  Ours come
from divergence reports; others from QEMU's fuzzers and bug reports.  QEMU
reads it on pipes (no line length limit), one command at a time; the
replay reports whether QEMU refused its command line, crashed (signal,
assertion text, sanitizer report) or hung, and at which line.

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
import binascii
import re
import signal
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path
from typing import Any

from harness.errors import QemuError, UsageError
from harness.hwdefs.pci import COMMAND_MEMORY, SDHCI_PCI
from harness.hwdefs.sdhci import REGISTER_WINDOW
from harness.machine import REPRODUCER_HEADER, CardImage, Machine
from harness.paths import package_data
from harness.profile import BuildProfile
from harness.qemu import sanitizer
from harness.qemu.argv import qemu_argv
from harness.qemu.session import find_assertion
from harness.qemu.stdio import StdioQtest, StdioTimeout
from harness.replay import field, rewrite

#: The machine of a trace without a header: q35, the controller and a card
#: on QEMU's null block driver (no image needed).
DEFAULT_MACHINE = Machine(image=CardImage.null(16 << 20))

_SDHCI_IDS = 0x0007_1B36
_REG = re.compile(r"^(read|write)([bwlq]) (0x[0-9a-fA-F]+|\d+)(?: (0x[0-9a-fA-F]+|\d+))?$")
_SIZES = {"b": 1, "w": 2, "l": 4, "q": 8}
CONFIG_ADDRESS, CONFIG_DATA = 0xCF8, 0xCFC  #: PCI configuration mechanism #1 ports


#: What a replay on QEMU came to (:attr:`ReplayResult.verdict`).
CLEAN, REFUSED, CRASHED, HUNG, SANITIZER, EXITED = (
    "clean", "refused", "crashed", "hung", "sanitizer", "exited")


@dataclass
class ReplayResult:
    lines: int = 0
    answered: int = 0
    #: QEMU died of a signal, an assertion or a sanitizer report after the
    #: trace started (a finding), as opposed to refusing its command line.
    crashed: bool = False
    signal: int | None = None
    exit_status: int | None = None
    output_tail: str = ""
    answers: list[tuple[str, str]] = _field(default_factory=list)
    model_diffs: list[str] = _field(default_factory=list)
    model_checked: bool = False
    model_reason: str = ""
    #: sdhci-pci's devfn on bus 0, scanned after the trace (None: not found).
    sdhci_devfn: int | None = None
    #: Register and memory reads the model answered and compared.
    model_reads: int = 0
    #: The model's exception on a trace line (a model bug, as a fuzz ``error``).
    model_error: str = ""
    #: Reads where the model took QEMU's random draw (``ModelTarget.reconcile``).
    model_adopted: list[str] = _field(default_factory=list)
    verdict: str = CLEAN
    #: QEMU's own message when it refused its command line (exited before
    #: answering the first command, without a signal or a sanitizer report).
    refusal: str = ""
    #: The assertion or abort line of QEMU's stderr, if any.
    assertion: str = ""
    #: Sanitizer reports on QEMU's stderr (leaks at exit left out).
    reports: list[sanitizer.Report] = _field(default_factory=list)
    stderr: str = ""
    timeout: float = 0.0
    #: What the trace normalisation changed (:mod:`harness.replay.field`).
    rewrites: list[str] = _field(default_factory=list)

    @property
    def finding(self) -> bool:
        """A crash, a hang or a sanitizer report (refusals are not findings)."""
        return self.verdict in (CRASHED, HUNG, SANITIZER)

    def _at(self) -> str:
        line = min(self.answered + 1, self.lines)
        return (f"at trace line {line} of {self.lines}" if self.answered < self.lines
                else f"after the last of {self.lines} trace lines")

    def summary(self) -> str:
        if self.verdict == REFUSED:
            return f"refused: {self.refusal}"
        if self.verdict == SANITIZER:
            r = self.reports[0]
            more = f" (+{len(self.reports) - 1} more reports)" if len(self.reports) > 1 else ""
            went_on = (" (QEMU went on: halt_on_error=0)"
                       if self.answered == self.lines else "")
            return f"{r.summary()} {self._at()}{more}{went_on}"
        if self.verdict == CRASHED:
            how = (f"signal {signal.Signals(self.signal).name}" if self.signal
                   else f"exit status {self.exit_status}")
            text = f"QEMU crashed ({how}) {self._at()}"
            return text + (f": {self.assertion}" if self.assertion else "")
        if self.verdict == HUNG:
            return f"QEMU hung: no answer within {self.timeout:g} s {self._at()}"
        if self.verdict == EXITED:
            return (f"QEMU exited (status {self.exit_status}) {self._at()}, "
                    f"{self.answered} commands answered")
        return f"no crash: {self.answered} of {self.lines} commands answered"


#: The verdicts of a replay with the model's say (:func:`verdict`).
VERDICTS = ("clean", "crash", "hang", "sanitizer report", "model disagrees", "refused",
            "exited")


def verdict(res: ReplayResult) -> str:
    """One word for a replay: QEMU's outcome, and when QEMU served the whole
    trace, whether the model (if :func:`replay_model` ran) disagreed."""
    if res.verdict == SANITIZER:
        return "sanitizer report"
    if res.verdict == CRASHED:
        return "crash"
    if res.verdict == HUNG:
        return "hang"
    if res.verdict in (REFUSED, EXITED):
        return res.verdict
    return "model disagrees" if res.model_diffs or res.model_error else "clean"


def read_trace(path: Path) -> list[str]:
    """Command lines of a trace; blank lines and ``#`` comments dropped.  A
    bug report's shell form (``cat << EOF | qemu-system-x86_64 ...``) gives
    the lines of its here-document (:mod:`harness.replay.field`)."""
    return field.parse(path.read_text()).lines


#: The field corpus: public bug reports' reproducers as their reporters
#: wrote them, one file each, its source in a ``.note`` file beside it.
FIELD_DIR = package_data("replay", "field")
NOTE_SUFFIX = ".note"


def field_corpus(directory: Path = FIELD_DIR) -> list[Path]:
    """The reproducers of the field corpus, by name (their notes left out)."""
    return sorted(p for p in directory.iterdir()
                  if p.is_file() and p.suffix in (".qtest", ".sh", ".txt"))


def field_note(path: Path) -> dict[str, str]:
    """The ``key: value`` lines of the note beside a field reproducer."""
    note = path.with_suffix(NOTE_SUFFIX)
    out: dict[str, str] = {}
    for line in note.read_text().splitlines() if note.is_file() else []:
        key, sep, value = line.partition(": ")
        if sep and re.fullmatch(r"[a-z-]+", key):
            out[key] = value
    return out


def field_argv(path: Path) -> list[str] | None:
    """The QEMU command line a field reproducer names (shell form or a
    comment header), or None (ours record a machine instead)."""
    if machine_of(path) is not None:
        return None
    return field.parse(path.read_text()).argv


class ReplayError(UsageError, ValueError):
    """A trace's header cannot be used."""


def machine_of(trace_path: Path) -> Machine | None:
    """The machine a reproducer's header records, or None without one."""
    for raw in trace_path.read_text().splitlines():
        line = raw.strip()
        if line.startswith(REPRODUCER_HEADER):
            try:
                return Machine.loads(line[len(REPRODUCER_HEADER):])
            except (ValueError, TypeError, KeyError) as e:
                raise ReplayError(f"{trace_path}: bad machine header: {e}") from e
        if line and not line.startswith("#"):
            return None
    return None


def replay_machine(trace_path: Path, machine_type: str | None = None, *,
                   own_devices: bool = False,
                   machines: Collection[str] | None = None) -> Machine:
    """The machine to replay ``trace_path`` on: its header's, else the
    default; ``machine_type`` overrides the type.  A recorded card image
    that is gone raises :class:`ReplayError`, unless QEMU gets the user's
    own devices (``own_devices``): the model then gets the default card.
    ``machines`` are the build's machine types, for a field command line's
    nearest one (:func:`harness.replay.rewrite.normalise`).  A field command
    line the model cannot mirror (:func:`field_machine`) gives the default."""
    m = machine_of(trace_path)
    if m is None:
        try:
            argv = field.parse(trace_path.read_text()).argv
        except ValueError as e:
            raise ReplayError(f"{trace_path}: {e}") from e
        if argv is not None:
            m = field_machine(argv, machines)
    m = m or DEFAULT_MACHINE
    if machine_type is not None:
        m = m.replace(type=machine_type)
    if m.image is not None and m.image.path is not None and not m.image.path.is_file():
        if not own_devices:
            raise ReplayError(f"the card image {m.image.path} recorded in {trace_path} does "
                              "not exist; pass --qemu-args to replay on other devices")
        m = m.replace(image=DEFAULT_MACHINE.image)
    return m


def field_machine(argv: list[str], machines: Collection[str] | None = None) -> Machine | None:
    """The machine a field command line builds, as the model mirrors it, or
    None when it cannot (no sdhci-pci: an ARM board's, another device's)."""
    if rewrite.is_arm(argv):
        return None
    try:
        m, _ = field.machine_from_argv(
            rewrite.normalise(argv, "qemu", machines=machines, kvm=False).argv)
    except ValueError:
        return None
    return m


@dataclass
class Plan:
    """How a trace file replays on one build."""

    trace: list[str]
    machine: Machine
    #: QEMU's whole command line (a field reproducer's), or None: built
    #: from ``machine`` (and ``devices``).
    argv: list[str] | None
    devices: list[str] | None = None
    #: The reproducer's form and every rewrite made to it, one line each.
    notes: list[str] = _field(default_factory=list)
    form: str = "trace"
    #: Why the model cannot replay it ("": it can).
    model_reason: str = ""


def plan(path: Path, binary: Path, machines: Collection[str] | None = None, *,
         machine_type: str | None = None, qemu_args: list[str] | None = None,
         as_is: bool = False, kvm: bool | None = None) -> Plan:
    """The trace at ``path`` made ready for ``binary`` (whose machine types
    are ``machines``): its commands, the model's machine, QEMU's command
    line and the rewrites said (:func:`harness.replay.rewrite.normalise`;
    ``as_is`` makes none; ``kvm``: whether KVM is usable, default probed).
    Raises :class:`ReplayError` for a trace that cannot be replayed."""
    if not path.is_file():
        raise ReplayError(f"trace {path} does not exist")
    try:
        fi = field.parse(path.read_text(errors="replace"))
    except ValueError as e:
        raise ReplayError(f"{path}: {e}") from e
    if not fi.lines:
        raise ReplayError(f"{path}: no qtest commands in it")
    machine = replay_machine(path, machine_type, own_devices=bool(qemu_args),
                             machines=machines)
    argv = None
    notes = list(fi.notes)
    if qemu_args is None and machine_of(path) is None and fi.argv is not None:
        if kvm is None:
            kvm = rewrite.kvm_usable() and rewrite.build_has_kvm(str(binary))
        n = rewrite.normalise(fi.argv, str(binary), machines=machines, as_is=as_is, kvm=kvm)
        argv, notes = n.argv, notes + n.notes
        if field_machine(fi.argv, machines) is None:
            why = ("an ARM board's command line" if rewrite.is_arm(fi.argv)
                   else "no sdhci-pci the model can mirror")
            return Plan(fi.lines, machine, argv, None, notes, fi.form,
                        f"the model cannot mirror this machine: {why}")
    return Plan(fi.lines, machine, argv, qemu_args, notes, fi.form)


def replay_qemu(binary: Path, trace: list[str], machine: Machine,
                args: list[str] | None = None, timeout: float = 10.0, *,
                argv: list[str] | None = None) -> ReplayResult:
    """Feed ``trace`` to QEMU building ``machine`` (the card image opened
    with ``snapshot=on``); ``args`` replaces the machine's devices, ``argv``
    the whole command line (a field reproducer's, see
    :func:`harness.replay.rewrite.replay_argv`).  QEMU's ``-qtest stdio`` is on
    pipes (:mod:`harness.qemu.stdio`: no line length limit).  When QEMU
    survives the trace, PCI bus 0 is scanned after it for sdhci-pci (the
    trace's own answers are complete by then), so that the model knows
    which function's BAR the trace programs.

    The verdict: ``refused`` when QEMU exits before answering the first
    command with neither a signal nor a sanitizer report (its command line,
    a missing device or image); ``sanitizer`` when its stderr holds an
    AddressSanitizer/UBSan report (also when QEMU went on, as with
    ``halt_on_error=0``); ``crashed`` for a signal, an assertion or a
    non-zero exit after the trace started; ``hung`` when a command got no
    answer within ``timeout`` seconds."""
    if argv is None:
        argv = qemu_argv(binary, machine, qtest="stdio", qtest_log="none", snapshot=True,
                         devices=args)
    res = ReplayResult(lines=len(trace), timeout=timeout)
    try:
        ch = StdioQtest(argv, env=sanitizer.environment())
    except QemuError as e:
        raise ReplayError(str(e)) from e
    with ch:
        gone = False
        for line in trace:
            try:
                answer = ch.command(line, timeout)
            except StdioTimeout:
                res.verdict = HUNG
                ch.kill()
                break
            if answer is None:
                gone = True
                break
            res.answers.append((line, answer))
            res.answered += 1
        else:
            res.sdhci_devfn = _probe_sdhci(ch, timeout)
        status = ch.close()
        res.stderr = ch.stderr()
        stopped = ch.stopped_by_us
    _judge(res, status, gone=gone, stopped=stopped)
    return res


def _judge(res: ReplayResult, status: int | None, *, gone: bool, stopped: bool) -> None:
    """``res``'s verdict from QEMU's exit ``status`` (negative: a signal), its
    stderr, whether it went before the trace's end (``gone``) and whether
    the replay had to stop it (:func:`replay_qemu`)."""
    res.output_tail = res.stderr[-2000:]
    res.exit_status = None if status is None or status < 0 else status
    res.signal = -status if status is not None and status < 0 else None
    res.reports = [r for r in sanitizer.parse(res.stderr) if r.tool != "LeakSanitizer"]
    res.assertion = find_assertion(res.stderr) or ""
    if res.reports:
        res.verdict = SANITIZER
    elif res.verdict == HUNG:
        pass
    elif stopped and res.answered == res.lines:
        res.verdict = CLEAN  # it served the whole trace; we ended it
    elif res.signal is not None or res.assertion:
        res.verdict = CRASHED
    elif gone and res.answered == 0:
        res.verdict = REFUSED
        res.refusal = refusal_message(res.stderr) or (
            f"QEMU exited with status {res.exit_status} before its first qtest command")
    elif gone and res.exit_status not in (0, None):
        res.verdict = CRASHED
    elif gone:
        res.verdict = EXITED
    res.crashed = res.verdict in (CRASHED, SANITIZER)


#: QEMU's messages start with its program's name (the basename of its
#: ``argv[0]``: QEMU's ``error_init``).
_PROGRAM = re.compile(r"^(qemu-[\w-]+): (.*)$")
_ARGUMENT = re.compile(r"^(-{1,2}[a-z][\w-]*(?: \S.*?)?): (.*)$")


@dataclass(frozen=True)
class Refusal:
    """QEMU's own words on a command line it refused: the error line it
    printed (``qemu-system-x86_64: -device sd-card,drive=d: Drive 'd' is
    already in use by another device``), without the program's name, and
    the argument it names (QEMU's ``error_report`` prefixes the option in
    force, see its ``loc_push_*``)."""

    message: str
    argument: str = ""

    def __str__(self) -> str:
        return self.message + (f" (QEMU names {self.argument})" if self.argument else "")


def refusal(stderr: str) -> Refusal | None:
    """QEMU's error line among its stderr, which also holds ``-trace`` output,
    ``-d`` logs without ``-D``, qtest's log and warnings: only lines that
    start with the program's name count, warnings last; an unprefixed line
    right after an error (QEMU's hint, ``Use -machine help ...``) is kept."""
    errors: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    for k, ln in enumerate(lines):
        m = _PROGRAM.match(ln)
        if m is None:
            continue
        rest, arg = m.group(2), ""
        a = _ARGUMENT.match(rest)
        if a is not None:
            arg, rest = a.group(1), a.group(2)
        if rest.startswith("warning: "):
            warnings.append((rest, arg))
            continue
        nxt = lines[k + 1] if k + 1 < len(lines) else ""
        if nxt and _PROGRAM.match(nxt) is None and re.match(r"^[A-Z][a-z]+ ", nxt):
            rest += f" ({nxt.strip()})"
        errors.append((rest, arg))
    found = errors or warnings
    if not found:
        return None
    return Refusal(*found[0])


def refusal_message(stderr: str) -> str:
    """QEMU's complaint about its command line, on one line (:func:`refusal`),
    or "" when it printed none."""
    r = refusal(stderr)
    return "" if r is None else str(r)


def _probe_sdhci(ch: StdioQtest, timeout: float) -> int | None:
    """The devfn of sdhci-pci on bus 0, read through config space."""
    for devfn in range(256):
        answer: str | None = None
        for line in (f"outl 0xcf8 {0x8000_0000 | devfn << 8:#x}", "inl 0xcfc"):
            try:
                answer = ch.command(line, timeout)
            except StdioTimeout:
                return None
            if answer is None:
                return None
        words = (answer or "").split()
        if len(words) > 1 and words[0] == "OK" and int(words[1], 0) == _SDHCI_IDS:
            return devfn
    return None


@dataclass
class _PciShadow:
    """What the trace did to sdhci-pci's config space that decides where
    its BAR0 is mapped (PCI 3.0 6.2.5.1; QEMU ``pci_bar_address``): the
    Memory Space enable bit and BAR0's address bits; and the config
    address latch at 0xcf8 (its low bits ORed into the offset, as QEMU's
    ``pci_host_data_write`` does)."""

    devfn: int | None
    ram: int
    #: Where RAM below 4 GiB ends (QEMU's PC machines move the rest above
    #: 4 GiB: :func:`harness.model.memory.ram_ranges`); default ``ram``.
    low_ram: int = -1
    cf8: int = 0
    config: bytearray = _field(default_factory=lambda: bytearray(64))

    def __post_init__(self) -> None:
        if self.low_ram < 0:
            self.low_ram = self.ram

    def access(self, port: int, size: int) -> int | None:
        """Config offset of a data-port access to sdhci-pci, or None."""
        if not self.cf8 >> 31 or (self.cf8 >> 16) & 0xFF or self.devfn is None \
                or (self.cf8 >> 8) & 0xFF != self.devfn:
            return None
        return (self.cf8 & 0xFF) | (port & 3)

    def write(self, port: int, size: int, value: int) -> None:
        off = self.access(port, size)
        if off is None:
            return
        for i in range(size):
            if off + i < len(self.config):
                self.config[off + i] = (value >> (8 * i)) & 0xFF

    @property
    def bar(self) -> int | None:
        """Where BAR0's 256 bytes are mapped, or None when they are not."""
        command = int.from_bytes(self.config[4:6], "little")
        if not command & COMMAND_MEMORY:
            return None
        addr = int.from_bytes(self.config[0x10:0x14], "little") & SDHCI_PCI.bar0_mask
        if addr == 0 or addr + REGISTER_WINDOW - 1 >= 0xFFFF_FFFF or addr < self.low_ram:
            return None  # unmapped, or under RAM (RAM wins)
        return addr


def replay_model(res: ReplayResult, profile: BuildProfile, machine: Machine,
                 model: Any = None) -> None:
    """Run the trace's sdhci-pci operations on the model of ``machine``;
    compare reads.

    The controller's BAR0 is wherever the trace maps it through config
    space (``outl 0xcf8``/``0xcfc``), only while Memory Space is enabled,
    as QEMU maps it; register accesses reach the model through ``readX``/
    ``writeX`` and through guest-memory commands (``write``, ``b64write``
    ...: QEMU's fuzzers use those for MMIO too) that fall in the BAR.  The
    function is the one the trace reads the IDs of, else the one the scan
    after the trace found.  Accesses elsewhere outside RAM are not compared
    (counted in ``model_reason``).  ``model`` replaces the model with any
    object of the same methods (a recorder of the operations)."""
    from harness.model.target import ModelTarget

    if model is None:
        try:
            model = ModelTarget(machine, profile=profile)
        except ValueError as e:
            res.model_reason = f"the model cannot mirror this machine: {e}"
            return
    run = _ModelReplay(res, machine, model)
    try:
        for line, answer in res.answers:
            try:
                if not run.step(line, answer):
                    return
            except (binascii.Error, ValueError, IndexError, KeyError) as e:
                res.model_reason = (f"{line[:60]}: cannot use QEMU's answer "
                                    f"{answer[:40]!r} ({type(e).__name__}: {e})")
                return
            except Exception as e:  # noqa: BLE001 - a model bug: the finding, said
                res.model_error = f"{line[:60]}: the model raised {type(e).__name__}: {e}"
                res.model_reason = res.model_error
                return
        run.finish()
    finally:
        model.close()


class _ModelReplay:
    """:func:`replay_model`'s walk of a trace over the model, one line at a time."""

    def __init__(self, res: ReplayResult, machine: Machine, model: Any) -> None:
        self.res, self.machine, self.model = res, machine, model
        from harness.model.memory import ram_ranges

        self.ranges = ram_ranges(machine.ram, machine.type)
        self.pci = _PciShadow(res.sdhci_devfn, machine.ram, self.ranges[0][1])
        self.ever_mapped = False
        #: accesses outside RAM and the BAR: not compared
        self.outside = 0

    def in_bar(self, addr: int, length: int) -> int | None:
        bar = self.pci.bar
        if bar is not None and bar <= addr and addr + length <= bar + REGISTER_WINDOW:
            return addr - bar
        return None

    def step(self, line: str, answer: str) -> bool:
        """One trace line on the model; False when the model cannot go on."""
        words = line.split()
        op = words[0]
        if op in ("outb", "outw", "outl", "inb", "inw", "inl"):
            self._port(op, words, answer)
        elif op in ("irq_intercept_in", "irq_intercept_out", "endianness"):
            pass
        elif (m := _REG.match(line)) is not None:
            self._register(m, line, answer)
        elif op == "clock_step":
            self.model.clock_step(int(words[1], 0) if len(words) > 1 else None)
        elif op in ("write", "b64write", "read", "b64read", "memset"):
            self._memory(op, words, line, answer)
        else:
            self.res.model_reason = f"trace uses {op!r}, which the model does not replay"
            return False
        return True

    def _port(self, op: str, words: list[str], answer: str) -> None:
        """Config space through 0xcf8/0xcfc: where BAR0 is, which function."""
        pci, port = self.pci, int(words[1], 0)
        if op.startswith("out"):
            value, size = int(words[2], 0), _SIZES[op[-1]]
            if port == CONFIG_ADDRESS and size == 4:
                pci.cf8 = value
            elif CONFIG_DATA <= port < CONFIG_DATA + 4:
                pci.write(port, size, value)
            self.ever_mapped |= pci.bar is not None
        elif pci.devfn is None and op == "inl" and port == CONFIG_DATA \
                and pci.cf8 >> 31 and (pci.cf8 & 0xFC) == 0 \
                and int(answer.split()[1], 0) == _SDHCI_IDS:
            pci.devfn = (pci.cf8 >> 8) & 0xFF

    def _register(self, m: re.Match[str], line: str, answer: str) -> None:
        """A ``readX``/``writeX``: on the model when it falls in the BAR."""
        res, model = self.res, self.model
        addr, size = int(m.group(3), 0), _SIZES[m.group(2)]
        off = self.in_bar(addr, size)
        if off is None:
            self.outside += 1
            return
        if m.group(1) == "write":
            model.write(off, size, int(m.group(4), 0))
            return
        res.model_reads += 1
        got = model.read(off, size)
        want = int(answer.split()[1], 0)
        reconcile = getattr(model, "reconcile", None)
        if got != want and reconcile is not None and reconcile("read", (off, size), got, want):
            # a value QEMU draws at random (the RCA since 9.1), adopted
            # as the lockstep does (ModelTarget.reconcile)
            res.model_adopted.append(f"{line}: QEMU {want:#x}, model {got:#x}")
        elif got != want:
            res.model_diffs.append(f"{line}: QEMU {want:#x}, model {got:#x}")

    def _memory(self, op: str, words: list[str], line: str, answer: str) -> None:
        """A guest-memory command: MMIO when in the BAR, else guest RAM."""
        from harness.model.target import split_access

        res, model = self.res, self.model
        addr, length = int(words[1], 0), int(words[2], 0)
        off = self.in_bar(addr, length)
        if off is not None:  # MMIO through the memory commands
            _mmio_bytes(model, split_access, off, op, words, answer, line, res)
            return
        if not any(lo <= addr and addr + length <= hi for lo, hi in self.ranges):
            self.outside += 1
            return
        if op == "write":
            model.mem_write(addr, _hex_data(words[3], length))
        elif op == "b64write":
            model.mem_write(addr, base64.b64decode(words[3]))
        elif op == "memset":
            model.mem_write(addr, bytes([int(words[3], 0)]) * length)
        else:
            res.model_reads += 1
            tail = answer.split()[1]
            want_b = bytes.fromhex(tail[2:]) if op == "read" else base64.b64decode(tail)
            if model.mem_read(addr, length) != want_b:
                res.model_diffs.append(f"{line}: guest memory differs")

    def finish(self) -> None:
        """Whether the model was compared at all, and what it was not compared on."""
        res = self.res
        res.model_checked = self.ever_mapped
        if not self.ever_mapped:
            res.model_reason = ("trace never maps the sdhci-pci BAR"
                                + ("" if self.pci.devfn is not None else
                                   " (no sdhci-pci found on bus 0)"))
        elif self.outside:
            res.model_reason = (f"{self.outside} accesses outside RAM and the sdhci-pci BAR "
                                "were not compared")


def _hex_data(text: str, length: int) -> bytes:
    return bytes.fromhex(text[2:].ljust(2 * length, "0")[: 2 * length])


def _mmio_bytes(model: Any, split: Any, off: int, op: str, words: list[str], answer: str,
                line: str, res: ReplayResult) -> None:
    """A guest-memory command on the BAR: the accesses QEMU's memory core
    makes of it (pieces of at most 4 bytes, aligned), little endian."""
    length = int(words[2], 0)
    if op in ("write", "b64write", "memset"):
        data = (_hex_data(words[3], length) if op == "write"
                else base64.b64decode(words[3]) if op == "b64write"
                else bytes([int(words[3], 0)]) * length)
        for o, n in split(off, len(data)):
            model.write(o, n, int.from_bytes(data[o - off:o - off + n], "little"))
        return
    res.model_reads += 1
    got = b"".join(model.read(o, n).to_bytes(n, "little") for o, n in split(off, length))
    tail = answer.split()[1]
    want = bytes.fromhex(tail[2:]) if op == "read" else base64.b64decode(tail)
    if got != want:
        res.model_diffs.append(f"{line}: QEMU {want.hex()}, model {got.hex()}")
