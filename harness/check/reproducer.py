"""A divergence's reproducer, one function for every machine, PC or board.

:func:`write_reproducer` writes ``STEM.qtest`` (QEMU's qtest trace with the
machine in its header: ``sdqtest replay`` reads it), ``STEM.sh`` (QEMU
replaying the trace with ``-qtest stdio``, for people without sdqtest) and,
when asked, ``STEM.c``: a C test function in the style of QEMU's
``tests/qtest/`` (``qtest_init``, ``qtest_writel``, ``qtest_memwrite``,
``qtest_clock_step`` ...), its last check the model's answer
(:func:`expectation`), to paste into a QEMU test file.  The check, the
review and the explore shrink (:mod:`harness.check.explore_shrink`) write
through it; the fuzzer's finding directories (:mod:`harness.fuzz.emit`)
use its C translation.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from harness.check.divergence import Divergence
from harness.check.testbench import QemuSide
from harness.machine import reproducer_header
from harness.qemu.argv import replay_script

_C_CALL = {"out": "qtest_out", "in": "qtest_in", "write": "qtest_write", "read": "qtest_read"}
_REG_LINE = re.compile(r"^(out|in|write|read)([bwlq]) (\S+)(?: (\S+))?$")
_C_SIZE = {"b": "b", "w": "w", "l": "l", "q": "q"}


def qtest_init_args(argv: Sequence[str]) -> str:
    """The arguments of a replay command line that ``qtest_init`` takes:
    without the binary, ``-accel qtest`` and ``-qtest stdio`` (libqtest
    adds its own)."""
    out: list[str] = []
    it = iter(argv[1:])
    for a in it:
        if a in ("-accel", "-qtest"):
            nxt = next(it, "")
            if nxt in ("qtest", "stdio"):
                continue
            out += [a, nxt]
            continue
        out.append(a)
    return " ".join(shlex.quote(a) for a in out)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _c_bytes(name: str, data: bytes) -> list[str]:
    lines = [f"    static const uint8_t {name}[] = {{"]
    for i in range(0, len(data), 12):
        lines.append("        " + " ".join(f"0x{b:02x}," for b in data[i:i + 12]))
    lines.append("    };")
    return lines


def _mem_data(words: list[str]) -> bytes:
    if words[0] == "b64write":
        return base64.b64decode(words[3])
    length = int(words[2], 0)
    return bytes.fromhex(words[3][2:].ljust(2 * length, "0")[: 2 * length])


def _c_line(i: int, line: str, expect: tuple[str, int] | None, decls: list[str]
            ) -> list[str]:
    """The C lines of trace line ``i`` (``expect``: the model's answer, for
    the last line; memory written goes to ``decls`` as an array)."""
    words = line.split()
    m = _REG_LINE.match(line)
    if m:
        fn = f"{_C_CALL[m.group(1)]}{_C_SIZE[m.group(2)]}"
        if m.group(4) is not None:
            return [f"    {fn}(s, {m.group(3)}, {m.group(4)});"]
        if expect is not None and expect[0] == "value":
            return [f"    g_assert_cmphex({fn}(s, {m.group(3)}), ==, {expect[1]:#x});"]
        return [f"    {fn}(s, {m.group(3)});"]
    if words[0] in ("b64write", "write") and len(words) == 4:
        data = _mem_data(words)
        if data and data.count(data[0]) == len(data):
            return [f"    qtest_memset(s, {words[1]}, {data[0]:#04x}, {words[2]});"]
        decls += _c_bytes(f"data{i}", data)
        return [f"    qtest_memwrite(s, {words[1]}, data{i}, sizeof(data{i}));"]
    if words[0] in ("b64read", "read"):
        out = [f"    qtest_memread(s, {words[1]}, buf, {words[2]});"]
        if expect is not None and expect[0].startswith("byte@"):
            out.append(f"    g_assert_cmphex(buf[{int(expect[0][5:]):#x}], ==, {expect[1]:#04x});")
        return out
    if words[0] == "memset":
        return [f"    qtest_memset(s, {words[1]}, {words[3]}, {words[2]});"]
    if words[0] == "clock_step":
        return [f"    qtest_clock_step(s, {words[1]});" if len(words) > 1
                else "    qtest_clock_step_next(s);"]
    if words[0] == "irq_intercept_in":
        return [f"    qtest_irq_intercept_in(s, {_c_string(words[1])});"]
    if words[0] == "irq_intercept_out" and len(words) == 3:  # a board's named output
        return [f"    qtest_irq_intercept_out_named(s, {_c_string(words[1])}, "
                f"{_c_string(words[2])});"]
    if words[0] == "irq_intercept_out":
        return [f"    qtest_irq_intercept_out(s, {_c_string(words[1])});"]
    return [f"    /* not translated: {line} */"]


def c_function(name: str, trace: Sequence[str], argv: Sequence[str], *,
               expect: tuple[str, int] | None = None, comment: str = "") -> str:
    """A libqtest C function replaying ``trace``.  ``expect`` is what the
    model answers to the trace's last line: ``("value", v)`` for a register
    read, ``("byte@N", v)`` for byte N of a memory read, ``("irq@N", level)``
    for interrupt line N after it."""
    body: list[str] = []
    decls: list[str] = []
    buf = max([int(w.split()[2], 0) for w in trace
               if w.split()[0] in ("read", "b64read")] or [0])
    if buf:
        decls.append(f"    static uint8_t buf[{buf:#x}];")
    for i, line in enumerate(trace):
        last = i == len(trace) - 1
        body += _c_line(i, line, expect if last else None, decls)
        if last and expect is not None and expect[0].startswith("irq@"):
            body.append(f"    g_assert({'' if expect[1] else '!'}qtest_get_irq(s, "
                        f"{int(expect[0][4:])}));")
    head = [f"/*\n * {ln}" if k == 0 else f" * {ln}" for k, ln in
            enumerate(comment.splitlines() or [name])] + [" */"]
    return "\n".join([
        *head,
        f"static void {name}(void)",
        "{",
        *decls,
        f"    QTestState *s = qtest_init({_c_string(qtest_init_args(argv))});",
        "",
        *body,
        "",
        "    qtest_quit(s);",
        "}",
        "",
    ])


def expectation(d: Divergence | None, irq_line: int | None = None) -> tuple[str, int] | None:
    """What the model answers to the failing step of ``d``, in
    :func:`c_function`'s terms (``irq_line``: the interrupt input QEMU
    routes the controller to, for an interrupt difference)."""
    if d is None:
        return None
    s = d.step
    if d.kind == "result" and s.op == "read" and isinstance(s.model, int):
        return ("value", s.model)
    if d.kind == "memory" and isinstance(s.model, bytes) and isinstance(s.qemu, bytes):
        last = (len(s.model) - 1) // (1 << 16) * (1 << 16)  # QemuTarget's 64 KiB b64reads
        diff = [i for i, (a, b) in enumerate(zip(s.model, s.qemu, strict=False)) if a != b]
        if diff and diff[0] >= last:
            return (f"byte@{diff[0] - last}", s.model[diff[0]])
    if d.kind == "irq" and irq_line is not None:
        return (f"irq@{irq_line}", int(s.irq_model))
    return None


def write_reproducer(d: Divergence, qemu: QemuSide, out_dir: Path, stem: str,
                     upto: int | None = None, c: bool = False) -> Path:
    """``STEM.qtest`` (the machine in its header, then the commands; the
    first ``upto`` of them, for a difference a run went on past) and
    ``STEM.sh`` (QEMU replaying them, for people without sdqtest); with
    ``c``, ``STEM.c`` too (:func:`c_function`).  The script's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = out_dir / f"{stem}.qtest"
    header = reproducer_header(qemu.machine, f"sdqtest scenario {d.scenario}; divergence at "
                               f"step {d.step.index}:\n  {d.step.describe(sides=d.sides)}")
    lines = qemu.trace if upto is None else qemu.trace[:upto]
    trace.write_text(header + "\n".join(lines) + "\n")
    script = out_dir / f"{stem}.sh"
    script.write_text(replay_script(
        qemu.replay_argv(), shlex.quote(str(trace)),
        [f"Replays sdqtest scenario {d.scenario} on QEMU {qemu.machine.type}; divergence at "
         f"step {d.step.index}:", f"  {d.step.describe(sides=d.sides)}",
         "QEMU prints one answer per command; the last one is what the "
         f"{d.sides.reference}",
         "disagreed with."]))
    script.chmod(0o755)
    if c:
        name = "test_sdqtest_" + re.sub(r"[^0-9a-z]", "_", stem.lower())
        (out_dir / f"{stem}.c").write_text(c_function(
            name, lines, qemu.replay_argv(), expect=expectation(d, getattr(qemu, "irq_line", None)),
            comment=f"sdqtest scenario {d.scenario}: {d.summary()}"))
    return script
