"""A field command line as the replay runs it: what must change, and nothing else.

The command line is read as a whole first (:func:`split_options`): its
drives, its devices and which device uses which drive.  Only then is each
change decided, and each is said in one line (:attr:`Normalised.notes`):

* ``-drive if=sd`` on a PC machine (QEMU 6.0 and later refuse it: "machine
  type does not support if=sd"; PC boards have no SD bus of their own)
  becomes ``if=none``.  When a ``-device sd-card,drive=ID`` already uses
  the drive, that is all; when no device uses it, one ``-device
  sd-card,drive=ID`` is added (one controller: QEMU plugs the card into its
  bus).  An ARM board's ``if=sd`` is the board's own card: kept.
* ``-enable-kvm``, ``-accel kvm`` and ``accel=kvm`` go only when KVM is
  not usable: no usable ``/dev/kvm`` on this host, or a build without KVM.
* A machine type the build lacks becomes the nearest it has.
* A command line that names no accelerator gets ``-accel qtest`` (QEMU
  would otherwise pick TCG, run the firmware, and refuse ``clock_step``).
  ``accel=qtest`` as written (``accel=qtest,`` too) is kept.
* ``-nographic`` goes only when it would put a serial port on stdio, where
  the replay's qtest is (no ``-nodefaults`` and no ``-serial``).
* ``qemu-system-i386`` runs as the build's x86_64 binary (same PC
  machines), ``qemu-system-arm`` as its ``qemu-system-aarch64``.

Always, as-is too: the build's binary, ``-qtest stdio`` on the replay's
pipes, ``-display none``, ``-qtest-log none``, and a user's image file
opened with ``snapshot=on`` (never written).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

#: QEMU options that take no argument (``qemu-options.hx``).
FLAGS = frozenset({
    "-nodefaults", "-nographic", "-no-reboot", "-no-shutdown", "-S", "-enable-kvm",
    "-snapshot", "-no-acpi", "-no-hpet", "-s", "-no-user-config", "-daemonize",
    "-full-screen", "-usb", "-only-migratable", "-preconfig", "-no-fd-bootchk",
    "-win2k-hack", "-enable-fips", "-no-quit", "-no-kvm", "-nouserconfig"})
#: Devices that take an SD card's drive.
CARD_DEVICES = ("sd-card", "sd-card-spi", "emmc")


@dataclass
class Option:
    """One option of a command line: ``-drive`` and its value (None: a flag;
    ``name`` empty: a stray word such as a kernel image path)."""

    name: str
    value: str | None = None

    def words(self) -> list[str]:
        head = [self.name] if self.name else []
        return head + ([self.value] if self.value is not None else [])


def split_options(argv: list[str]) -> list[Option]:
    """``argv[1:]`` as options with their values (``--opt`` is ``-opt``)."""
    out: list[Option] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        name = a[1:] if a.startswith("--") else a
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if not name.startswith("-"):
            out.append(Option("", a))
        elif name in FLAGS or nxt is None or (nxt.startswith("-")
                                              and not re.fullmatch(r"-\d.*", nxt)):
            out.append(Option(name))
        else:
            out.append(Option(name, nxt))
            i += 1
        i += 1
    return out


def parts(value: str) -> list[str]:
    """``a,b=c,d`` split as QEMU's option parser does (``,,`` is a comma)."""
    return re.split(r"(?<!,),(?!,)", value)


def _keys(value: str) -> dict[str, str]:
    return {k: v for k, _, v in (p.partition("=") for p in parts(value)[1:] if p)}


def _drive_keys(value: str) -> dict[str, str]:
    return {k: v for k, _, v in (p.partition("=") for p in parts(value) if p)}


_NO_KVM = "KVM is not usable here (no usable /dev/kvm, or a build without KVM)"


@dataclass
class Normalised:
    """A field command line as the replay runs it, and what was changed."""

    argv: list[str]
    notes: list[str] = field(default_factory=list)


def kvm_usable() -> bool:
    """Whether this host lets QEMU use KVM (``/dev/kvm`` readable and writable)."""
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


_HAS_KVM: dict[str, bool] = {}


def build_has_kvm(binary: str) -> bool:
    """Whether the QEMU ``binary`` was built with KVM (``-accel help`` lists
    it; a build configured without it refuses ``-enable-kvm``: "invalid
    accelerator kvm")."""
    if binary not in _HAS_KVM:
        try:
            out = subprocess.run([binary, "-accel", "help"], capture_output=True, text=True,
                                 timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _HAS_KVM[binary] = "kvm" in out.split()
    return _HAS_KVM[binary]


def is_arm(argv: list[str]) -> bool:
    """A board's command line: ``qemu-system-arm``/``-aarch64``, or
    ``qemu-system-riscv64`` (the RISC-V boards)."""
    name = Path(argv[0]).name
    return "aarch64" in name or "-arm" in name or "riscv" in name


def _nearest_machine(want: str, machines: Collection[str]) -> str | None:
    """The build's machine type closest to ``want``: same family
    (``pc-q35-*``, ``pc-i440fx-*``), the oldest version not older than the
    one asked, else the newest; else the family's alias (q35, pc)."""
    m = re.fullmatch(r"(pc-q35-|pc-i440fx-|pc-)(\d+)\.(\d+)", want)
    if not want.startswith("pc") and want != "q35":
        return None  # not a PC machine: nothing near it
    family = "q35" if "q35" in want else "pc"
    if m:
        prefix = "pc-i440fx-" if m.group(1) == "pc-" else m.group(1)
        v = (int(m.group(2)), int(m.group(3)))
        have = sorted((tuple(int(x) for x in t[len(prefix):].split(".")), t) for t in machines
                      if re.fullmatch(re.escape(prefix) + r"\d+\.\d+", t))
        newer = [t for ver, t in have if ver >= v]
        if newer:
            return newer[0]
        if have:
            return have[-1][1]
    return family if family in machines else None


@dataclass
class _Line:
    """What the whole command line holds, read before any change."""

    options: list[Option]
    arm: bool
    #: drive ids some ``-device ...,drive=ID`` uses
    used: set[str] = field(default_factory=set)
    #: every ``-drive``'s id
    ids: set[str] = field(default_factory=set)
    accel: bool = False  #: it names an accelerator
    stdio_serial: bool = True  #: -nographic would put a serial port on stdio

    @classmethod
    def read(cls, argv: list[str]) -> _Line:
        line = cls(split_options(argv), is_arm(argv))
        for o in line.options:
            v = o.value or ""
            if o.name == "-device":
                drive = _keys(v).get("drive")
                if drive:
                    line.used.add(drive)
            elif o.name == "-drive" and "id" in _drive_keys(v):
                line.ids.add(_drive_keys(v)["id"])
            elif o.name in ("-accel", "-enable-kvm") or (
                    o.name in ("-machine", "-M") and "accel" in _drive_keys(v)):
                line.accel = True
            elif o.name in ("-nodefaults", "-serial"):
                line.stdio_serial = False
        return line


def normalise(argv: list[str], binary: str, *, machines: Collection[str] | None = None,
              as_is: bool = False, kvm: bool | None = None) -> Normalised:
    """``argv`` as the replay runs ``binary`` on it, each change said in
    ``notes`` (the module's rules; ``as_is``: only the ones made always).
    ``machines`` are the build's machine types, ``kvm`` whether KVM is
    usable (default: :func:`kvm_usable`)."""
    kvm = kvm_usable() if kvm is None else kvm
    line = _Line.read(argv)
    notes: list[str] = []
    name = Path(argv[0]).name
    if name != Path(binary).name and not as_is and ("i386" in name or name.endswith("-arm")):
        notes.append(f"{name} replaced by {Path(binary).name} (it has the same machines)")
    out = [binary]
    accel = line.accel
    given = set(line.ids)  # ids taken: a new one is none of them
    for o in line.options:
        n, v = o.name, o.value or ""
        if n in ("-qtest", "-qtest-log", "-display"):
            continue  # the replay's own
        if as_is:
            out += _snapshot(o).words()
        elif n == "-nographic" and line.stdio_serial:
            notes.append("-nographic dropped: without -nodefaults or -serial it puts a serial "
                         "port on stdio, where the replay's qtest is")
        elif (n == "-enable-kvm" or (n == "-accel" and v.split(",")[0] == "kvm")) and not kvm:
            notes.append(f"{' '.join(o.words())} dropped: {_NO_KVM}")
            accel = False
        elif n in ("-machine", "-M"):
            val, dropped = _machine(v, machines, kvm, notes)
            accel = accel and not dropped
            if val:
                out += [n, val]
        elif n == "-drive" and "if=sd" in parts(v) and not line.arm:
            out += _sd_drive(v, line.used, given, notes)
        else:
            out += _snapshot(o).words()
    if not accel and not as_is:
        notes.append("no accelerator named: -accel qtest added (QEMU would pick TCG, run "
                     "the firmware and refuse clock_step)")
        out += ["-accel", "qtest"]
    return Normalised(out + ["-display", "none", "-qtest", "stdio", "-qtest-log", "none"],
                      notes)


def _machine(val: str, machines: Collection[str] | None, kvm: bool,
             notes: list[str]) -> tuple[str, bool]:
    """``-machine VAL`` as the replay runs it: ``accel=kvm`` dropped when KVM
    is not usable, a machine type the build lacks replaced by the nearest
    it has; anything else as written.  And whether the accelerator went."""
    ps = parts(val)
    dropped = False
    if not kvm and any(p.startswith("accel=kvm") for p in ps):
        notes.append(f"-machine {val}: accel=kvm dropped: {_NO_KVM}")
        ps = [p for p in ps if not p.startswith("accel=")]
        dropped = True
    key = 0 if ps and "=" not in ps[0] else next(
        (k for k, p in enumerate(ps) if p.startswith("type=")), -1)
    if machines is not None and key >= 0 and ps[key]:
        mtype = ps[key].removeprefix("type=")
        if mtype not in machines:
            near = _nearest_machine(mtype, machines)
            if near is not None:
                notes.append(f"machine type {mtype} is not in this build: {near} instead")
                ps[key] = near if key == 0 else f"type={near}"
    return ",".join(ps), dropped


def _sd_drive(val: str, used: set[str], given: set[str], notes: list[str]) -> list[str]:
    """An ``if=sd`` drive on a PC machine: ``if=none``, and a card for it
    unless a device already uses it (a drive without an id gets one no drive
    has, ``given`` holding the ids taken)."""
    ps = ["if=none" if p == "if=sd" else p for p in parts(val)]
    did = _drive_keys(val).get("id")
    if not did:
        did = next(f"sd{k}" for k in range(len(used) + len(given) + 1)
                   if f"sd{k}" not in used | given)
        given.add(did)
        ps.append(f"id={did}")
    new = _snapshot(Option("-drive", ",".join(ps))).value or ""
    why = "(QEMU 6.0+ has no if=sd on PC machines)"
    if did in used:
        notes.append(f"-drive {val}: if=sd becomes if=none {why}; the -device that "
                     f"names drive={did} is its card")
        return ["-drive", new]
    notes.append(f"-drive {val}: if=sd becomes if=none, plus -device sd-card,drive={did} "
                 f"{why}")
    return ["-drive", new, "-device", f"sd-card,drive={did}"]


def _snapshot(o: Option) -> Option:
    """A ``-drive`` on a user's file opened with ``snapshot=on`` (never written)."""
    if o.name != "-drive" or o.value is None:
        return o
    keys = _drive_keys(o.value)
    f = keys.get("file", "")
    if f and not f.startswith("null-co") and keys.get("snapshot", "off") not in ("on", "true"):
        return Option(o.name, o.value + ",snapshot=on")
    return o


def replay_argv(argv: list[str], binary: str) -> list[str]:
    """``argv`` as the replay runs it (:func:`normalise`, its notes left out)."""
    return normalise(argv, binary).argv
