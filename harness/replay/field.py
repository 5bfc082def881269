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
#: QEMU options that take no argument (``qemu-options.hx``): never read the
#: next word as their value.
_IGNORED_FLAGS = {"-nodefaults", "-nographic", "-no-reboot", "-no-shutdown", "-S",
                  "-enable-kvm", "-snapshot", "-no-acpi", "-no-hpet", "-s", "-no-user-config",
                  "-daemonize", "-full-screen", "-usb", "-only-migratable", "-preconfig",
                  "-no-fd-bootchk", "-win2k-hack", "-enable-fips", "-no-quit"}
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
    """A QEMU binary's name (``qemu-system-x86_64``, ``./build/qemu-system-i386``,
    ``qemu-kvm``), not a word that merely starts so (``qemu-devel,``)."""
    return re.fullmatch(r"qemu-(system-[A-Za-z0-9_]+|kvm)", Path(word).name) is not None


#: ``-qtest-log`` lines: ``[R +0.012345] outl 0xcf8 ...`` (received),
#: ``[S +0.012345] OK`` (sent), ``[I 0.000001] OPENED`` (information).
_LOGGED = re.compile(r"^\[([RSI]) \+?\d+(?:\.\d+)?\]\s*")
_ANSWER_WORDS = ("OK", "FAIL", "ERR")
_RECEIVED = re.compile(r"\[R \+?\d+(?:\.\d+)?\]\s*(.*?)(?=\s*\[[SRI] \+?\d|$)")


def _commands(lines: list[str]) -> list[str]:
    """The qtest commands of ``lines``: comments and blank lines dropped;
    a ``-qtest-log`` transcript reduced to the commands QEMU received
    (answers, information lines, QEMU's and a sanitizer's messages, the
    trace and log lines around them dropped)."""
    logged = any(_LOGGED.match(ln.strip()) for ln in lines)
    out = []
    for raw in lines:
        ln = raw.strip()
        if not ln or ln.startswith("#"):
            continue
        if logged:  # one per line, or several in a log pasted flat
            out += [r.strip() for r in _RECEIVED.findall(ln) if r.strip()]
            continue
        out.append(ln)
    return out


#: The first words of qtest commands (QEMU's ``system/qtest.c`` protocol).
QTEST_VERBS = frozenset({
    "outb", "outw", "outl", "inb", "inw", "inl", "readb", "readw", "readl", "readq",
    "writeb", "writew", "writel", "writeq", "read", "write", "b64read", "b64write",
    "memset", "clock_step", "clock_set", "irq_intercept_in", "irq_intercept_out",
    "set_irq_in", "endianness", "module_load", "rtas"})


def _loose_commands(raw: list[str], skip: set[int]) -> list[str]:
    """The qtest commands of a report that gives them apart from its QEMU
    command line (a commit message: the commands, then ``$ qemu ...
    -qtest stdio``): the lines, other than ``skip``, that start with a
    qtest verb."""
    out = []
    for k, ln in enumerate(raw):
        words = ln.split()
        if k not in skip and words and words[0] in QTEST_VERBS:
            out.append(" ".join(words))
    return out


def _joined(raw: list[str], i: int) -> tuple[str, int]:
    """Line ``i`` with its backslash continuation lines (a ``# comment``
    after the backslash, or a comment line amid them, left out), and the
    index of its last line."""
    cmd, j = raw[i], i
    while True:
        stripped = re.sub(r"\\\s+#.*$", lambda _: "\\", cmd.rstrip())
        if not stripped.endswith("\\") or j + 1 >= len(raw):
            return stripped, j
        j += 1
        while j + 1 < len(raw) and raw[j].strip().startswith("#"):
            j += 1
        cmd = stripped[:-1] + " " + raw[j]


def _qemu_words(cmd: str) -> list[str] | None:
    """The QEMU command of a shell command line: from the QEMU binary on,
    without redirections and the rest of a pipeline."""
    try:
        words = shlex.split(cmd, comments=True)
    except ValueError:
        return None
    at = next((k for k, w in enumerate(words) if _is_qemu(w)), None)
    if at is None:
        return None
    out: list[str] = []
    it = iter(words[at:])
    for w in it:
        if w in ("|", "&&", ";", "||", "2>&1"):
            break
        if w in ("<", ">", "2>", ">>", "<<", "<<<"):
            next(it, None)
            continue
        if re.match(r"^\d?[<>]", w):
            continue
        out.append(w)
    return out


def _heredoc(raw: list[str], i: int, m: re.Match[str],
             files: dict[str, list[str]]) -> tuple[FieldInput | None, int]:
    """The here-document starting on line ``i``: the reproducer when QEMU
    reads it (``cat << EOF | qemu ...``, ``qemu ... << EOF``), else None,
    its body kept in ``files`` when written to one (``cat << EOF > FILE``);
    and the line after it."""
    cmd, j = _joined(raw, i)
    body, k = _heredoc_body(raw, j, m.group(2))
    redirect = re.search(r">\s*(\S+)", cmd[m.end():])
    words = None
    if "|" in cmd[m.end():]:
        words = _qemu_words(cmd.split("|", 1)[1])
    elif _is_qemu_line(cmd[:m.start()]):
        words = _qemu_words(cmd[:m.start()] + cmd[m.end():])
    elif redirect:
        files[redirect.group(1)] = body
    return (FieldInput(_commands(body), words, "shell") if words else None), k + 1


def _heredoc_body(raw: list[str], after: int, end: str) -> tuple[list[str], int]:
    body: list[str] = []
    k = after + 1
    while k < len(raw) and raw[k].strip() != end:
        body.append(raw[k])
        k += 1
    return body, k


def parse(text: str) -> FieldInput:
    """Split a reproducer into its qtest commands and QEMU arguments.

    Forms: ``cat << EOF | qemu ...`` and ``qemu ... << EOF`` (heredoc,
    with continuation lines and comments); ``cat << EOF > FILE`` and later
    ``qemu ... < FILE``; a ``-qtest stdio`` trace whose comment header holds
    the command line; a ``-qtest-log`` transcript (``[R +0.01] ...``)."""
    raw = text.splitlines()
    files: dict[str, list[str]] = {}
    #: the first QEMU command line that reads no here-document, and its lines
    bare: tuple[list[str] | None, set[int]] | None = None
    i = 0
    while i < len(raw):
        line = raw[i]
        if line.strip().startswith("#"):
            i += 1
            continue
        m = _HEREDOC.search(line)
        if m:
            found, i = _heredoc(raw, i, m, files)
            if found is not None:
                return found
            continue
        if _is_qemu_line(line):
            cmd, j = _joined(raw, i)
            if bare is None:
                bare = (_qemu_words(cmd), set(range(i, j + 1)))
            src = re.search(r"(?<![<\d])<\s*(\S+)", cmd)
            if src:
                name = src.group(1)
                if name not in files:
                    raise ValueError(f"the QEMU command reads {name}, which this "
                                     "reproducer does not write (cat << EOF > FILE)")
                words = _qemu_words(cmd)
                if words:
                    return FieldInput(_commands(files[name]), words, "shell-file",
                                      [f"qtest commands read from the here-document "
                                       f"written to {name}"])
            i = j + 1
            continue
        i += 1
    argv = _header_argv(raw)
    logged = any(_LOGGED.match(ln.strip()) for ln in raw)
    if argv is None and bare is not None and bare[0]:
        if logged:  # the command line at a prompt, then its -qtest-log output
            return FieldInput(_commands(raw), bare[0], "log")
        return FieldInput(_loose_commands(raw, bare[1]), bare[0], "shell-apart",
                          ["qtest commands given apart from the QEMU command line"])
    form = "log" if logged else "header" if argv else "trace"
    return FieldInput(_commands(raw), argv, form)


def _header_argv(raw: list[str]) -> list[str] | None:
    """The QEMU command line of a trace's leading ``#`` comment header."""
    for line in raw:
        s = line.strip()
        if not s.startswith("#"):
            if s and not _LOGGED.match(s):
                return None
            continue
        try:
            split = shlex.split(s.lstrip("#").strip())
        except ValueError:
            continue
        at = next((k for k, w in enumerate(split) if _is_qemu(w)), None)
        if at is not None:
            return split[at:]
    return None


def _is_qemu_line(cmd: str) -> bool:
    """A shell line that runs QEMU: a QEMU binary's name followed by an
    option (after a prompt such as ``$`` or ``➜ dir git:(master) ✗``)."""
    try:
        words = shlex.split(cmd, comments=True)
    except ValueError:
        words = cmd.split()
    return any(_is_qemu(w) and (k + 1 == len(words) or words[k + 1].startswith("-"))
               for k, w in enumerate(words))


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
        if not opt.startswith("-"):
            extra.append(a)  # a stray word (a kernel image path): kept, not a value
            continue
        val = next(it, "")
        if val.startswith("-") and not re.fullmatch(r"-\d.*", val):
            extra.append(a)  # an option without a value, then the next option
            it = iter([val, *it])
            continue
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
    image = _card_image(drives, card_drive) if card is not None and card_drive else None
    return Machine(type=mtype, ram=ram, sdhci=sdhci, card=card, image=image), extra


def _card_image(drives: dict[str, dict[str, str]], card_drive: str) -> CardImage | None:
    """The image of the drive ``card_drive`` (a null-co drive: its size)."""
    d = drives.get(card_drive)
    if d is None:
        raise ValueError(f"sd-card drive {card_drive!r} is not defined")
    f = d.get("file", "")
    ro = d.get("readonly", "off") in ("on", "true", "yes")
    if f.startswith("null-co://") or d.get("driver") == "null-co":
        return CardImage(size=_size(d["size"]) if "size" in d else NULL_CO_SIZE, readonly=ro)
    if f:
        return CardImage(Path(f), format=d.get("format", "raw"), readonly=ro)
    return None
