"""Reproducers from the field: QEMU's own formats, read without running them.

Two forms reach us from QEMU's fuzzers and bug reports:

* a ``-qtest stdio`` trace whose ``#`` comment header holds the QEMU
  command line (``# qemu-system-x86_64 -M q35 ... -qtest stdio``);
* the shell form of QEMU bug reports::

      cat << EOF | qemu-system-x86_64 -display none -machine accel=qtest \\
          -m 512M -device sdhci-pci -device sd-card,drive=d0 \\
          -drive if=none,index=0,file=null-co://,format=raw,id=d0 -qtest stdio
      outl 0xcf8 0x80001010
      ...
      EOF

The command line is split with :mod:`shlex`, never executed.
:func:`machine_from_argv` turns it into a :class:`~harness.machine.Machine`
when it only builds what the harness knows (machine type, RAM, sdhci-pci,
sd-card, a null-co or file drive); anything else is kept as extra QEMU
options, and the model then does not run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from harness.machine import DEFAULT_RAM, CardImage, Machine, PropValue

_HEREDOC = re.compile(r"<<\s*-?\s*(['\"]?)(\w+)\1")
#: QEMU's null-co block driver is 1 GiB unless told otherwise.
NULL_CO_SIZE = 1 << 30
_IGNORED_FLAGS = {"-nodefaults", "-nographic", "-no-reboot", "-no-shutdown", "-S"}
_IGNORED_OPTS = {"-display", "-qtest", "-qtest-log", "-accel", "-serial", "-monitor",
                 "-vga", "-audio", "-cpu", "-smp", "-name", "-L", "-trace", "-d", "-D"}
_SIZE = re.compile(r"^(\d+)([kKmMgGtT]?)[bB]?$")


@dataclass
class FieldInput:
    """The qtest commands of a reproducer and the QEMU command line it names."""

    lines: list[str]
    argv: list[str] | None = None
    form: str = "trace"  #: "trace", "header" or "shell"
    notes: list[str] = field(default_factory=list)


def _is_qemu(word: str) -> bool:
    return "qemu-system" in Path(word).name or Path(word).name.startswith("qemu-")


def _commands(lines: list[str]) -> list[str]:
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def parse(text: str) -> FieldInput:
    """Split a reproducer into its qtest commands and QEMU arguments."""
    raw = text.splitlines()
    for i, line in enumerate(raw):
        m = _HEREDOC.search(line)
        if m and "|" in line and ("qemu" in line or line.rstrip().endswith("\\")):
            cmd = line.split("|", 1)[1]
            j = i
            while cmd.rstrip().endswith("\\") and j + 1 < len(raw):
                j += 1
                cmd = cmd.rstrip()[:-1] + " " + raw[j]
            end = m.group(2)
            body: list[str] = []
            for k in range(j + 1, len(raw)):
                if raw[k].strip() == end:
                    break
                body.append(raw[k])
            words = shlex.split(cmd, comments=False)
            while words and not _is_qemu(words[0]):
                words.pop(0)  # "env VAR=..", "timeout 10", "./build/"
            return FieldInput(_commands(body), words or None, "shell")
    argv: list[str] | None = None
    for line in raw:
        s = line.strip()
        if not s.startswith("#"):
            if s:
                break
            continue
        try:
            split = shlex.split(s.lstrip("#").strip())
        except ValueError:
            continue
        at = next((k for k, w in enumerate(split) if _is_qemu(w)), None)
        if at is not None and argv is None:
            argv = split[at:]
    return FieldInput(_commands(raw), argv, "header" if argv else "trace")


def _size(text: str) -> int:
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"size {text!r}")
    mult = {"": 1 << 20, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    n = int(m.group(1))
    unit = m.group(2).lower()
    if unit == "" and n >= 1 << 20:  # a byte count
        return n
    return n * mult[unit]


def _options(text: str) -> tuple[str, dict[str, str]]:
    """``name,k=v,...`` as QEMU's option parser reads it (``,,`` is a comma)."""
    parts = re.split(r"(?<!,),(?!,)", text)
    head, opts = parts[0].replace(",,", ","), {}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        opts[k] = v.replace(",,", ",")
    return head, opts


def _value(v: str) -> PropValue:
    return int(v, 0) if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", v) else v


def machine_from_argv(argv: list[str]) -> tuple[Machine, list[str]]:
    """The machine ``argv`` builds, and the options the harness does not
    model (empty when it mirrors the command line in full).

    Raises ``ValueError`` when the command line has no sdhci-pci."""
    mtype, ram = "pc", DEFAULT_RAM  # qemu-system-x86_64's default machine is pc
    sdhci: dict[str, PropValue] | None = None
    card: dict[str, PropValue] | None = None
    drives: dict[str, dict[str, str]] = {}
    card_drive = ""
    extra: list[str] = []
    it = iter(argv[1:])
    for a in it:
        opt = a if not a.startswith("--") else a[1:]
        if opt in _IGNORED_FLAGS:
            continue
        if opt in _IGNORED_OPTS:
            next(it, None)
            continue
        val = next(it, "")
        if opt in ("-machine", "-M"):
            head, opts = _options(val)
            if "=" in head:  # "-machine accel=qtest": no type given
                k, _, v = head.partition("=")
                opts[k], head = v, ""
            if head:
                mtype = head
            if "type" in opts:
                mtype = opts["type"]
        elif opt == "-m":
            head, opts = _options(val)
            ram = _size(opts.get("size", head))
        elif opt == "-device":
            head, opts = _options(val)
            opts.pop("id", None)
            if head == "sdhci-pci":
                for k in ("addr", "bus", "multifunction", "romfile"):
                    opts.pop(k, None)  # where it sits: the replay finds it
                sdhci = {k: _value(v) for k, v in opts.items()}
            elif head == "sd-card":
                card_drive = opts.pop("drive", "")
                card = {k: _value(v) for k, v in opts.items()}
            else:
                extra += [a, val]
        elif opt == "-drive":
            _, opts = _options("," + val)
            drives[opts.get("id", "")] = opts
        else:
            extra += [a, val]
    if sdhci is None:
        raise ValueError("the command line has no -device sdhci-pci")
    image: CardImage | None = None
    if card is not None and card_drive:
        d = drives.get(card_drive)
        if d is None:
            raise ValueError(f"sd-card drive {card_drive!r} is not defined")
        f = d.get("file", "")
        ro = d.get("readonly", "off") in ("on", "true", "yes")
        if f.startswith("null-co://") or d.get("driver") == "null-co":
            image = CardImage(size=_size(d["size"]) if "size" in d else NULL_CO_SIZE,
                              readonly=ro)
        elif f:
            image = CardImage(Path(f), format=d.get("format", "raw"), readonly=ro)
    return Machine(type=mtype, ram=ram, sdhci=sdhci, card=card, image=image), extra


def replay_argv(argv: list[str], binary: str) -> list[str]:
    """``argv`` as the replay runs it: ``binary`` instead of the reporter's,
    qtest on stdio with the qtest accelerator, and every drive backed by a
    file opened with ``snapshot=on`` (a user's image is never written)."""
    out = [binary]
    it = iter(argv[1:])
    for a in it:
        opt = a if not a.startswith("--") else a[1:]
        if opt in ("-qtest", "-qtest-log", "-accel", "-display"):
            next(it, None)
            continue
        if opt == "-nographic":
            continue
        if opt in ("-machine", "-M"):
            parts = [p for p in re.split(r"(?<!,),(?!,)", next(it, ""))
                     if p and not p.startswith("accel=")]
            if parts:
                out += [a, ",".join(parts)]
            continue
        if opt == "-drive":
            val = next(it, "")
            _, opts = _options("," + val)
            if opts.get("file") and not opts["file"].startswith("null-co") \
                    and opts.get("snapshot", "off") not in ("on", "true"):
                val += ",snapshot=on"
            out += [a, val]
            continue
        out.append(a)
    return out + ["-accel", "qtest", "-display", "none", "-qtest", "stdio", "-qtest-log", "none"]
