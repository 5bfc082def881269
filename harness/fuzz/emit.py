"""Reproducers of a finding, for people with and without sdqtest.

For one (shrunk) outcome, in a directory of its own:

* ``repro.qtest``: QEMU's qtest trace with the machine in its header
  (``sdqtest replay`` reads it);
* ``repro.sh``: the same trace fed to QEMU with ``-qtest stdio``;
* ``test_fuzz_<slug>.py``: a pytest regression test that runs the input
  through the harness on every selected build and fails while the finding
  is there;
* ``repro.c``: a C test function in the style of QEMU's ``tests/qtest/``
  (``qtest_init``, ``qtest_writel``, ``qtest_memwrite``, ``qtest_clock_step``
  ...), its last check the model's answer, to paste into a QEMU test file;
* ``finding.json``: signature, build, reason, the input's operations.
"""

from __future__ import annotations

import base64
import json
import pprint
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.fuzz.ops import Op, describe
from harness.fuzz.run import CRASH, DIVERGE, HANG, FuzzOutcome
from harness.fuzz.signature import slug
from harness.qemu.argv import replay_script
from harness.replay.engine import reproducer_header

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
        words = line.split()
        m = _REG_LINE.match(line)
        if m:
            fn = f"{_C_CALL[m.group(1)]}{_C_SIZE[m.group(2)]}"
            if m.group(4) is not None:
                body.append(f"    {fn}(s, {m.group(3)}, {m.group(4)});")
            elif last and expect is not None and expect[0] == "value":
                body.append(f"    g_assert_cmphex({fn}(s, {m.group(3)}), ==, {expect[1]:#x});")
            else:
                body.append(f"    {fn}(s, {m.group(3)});")
        elif words[0] in ("b64write", "write") and len(words) == 4:
            data = _mem_data(words)
            if data and data.count(data[0]) == len(data):
                body.append(f"    qtest_memset(s, {words[1]}, {data[0]:#04x}, {words[2]});")
            else:
                arr = f"data{i}"
                decls += _c_bytes(arr, data)
                body.append(f"    qtest_memwrite(s, {words[1]}, {arr}, sizeof({arr}));")
        elif words[0] in ("b64read", "read"):
            body.append(f"    qtest_memread(s, {words[1]}, buf, {words[2]});")
            if last and expect is not None and expect[0].startswith("byte@"):
                at = int(expect[0][5:])
                body.append(f"    g_assert_cmphex(buf[{at:#x}], ==, {expect[1]:#04x});")
        elif words[0] == "memset":
            body.append(f"    qtest_memset(s, {words[1]}, {words[3]}, {words[2]});")
        elif words[0] == "clock_step":
            body.append(f"    qtest_clock_step(s, {words[1]});" if len(words) > 1
                        else "    qtest_clock_step_next(s);")
        elif words[0] == "irq_intercept_in":
            body.append(f"    qtest_irq_intercept_in(s, {_c_string(words[1])});")
        elif words[0] == "irq_intercept_out" and len(words) == 3:  # a board's named output
            body.append(f"    qtest_irq_intercept_out_named(s, {_c_string(words[1])}, "
                        f"{_c_string(words[2])});")
        elif words[0] == "irq_intercept_out":
            body.append(f"    qtest_irq_intercept_out(s, {_c_string(words[1])});")
        else:
            body.append(f"    /* not translated: {line} */")
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


def expectation(out: FuzzOutcome) -> tuple[str, int] | None:
    """What the model answers to the failing step, in :func:`c_function`'s terms."""
    d = out.divergence
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
    if d.kind == "irq" and out.irq_line is not None:
        return (f"irq@{out.irq_line}", int(s.irq_model))
    return None


def write(out: FuzzOutcome, ops: Sequence[Op], sig: str, build: str, directory: Path, *,
          runs: int = 0, original_len: int = 0) -> Path:
    """Write every reproducer of the finding ``sig`` into ``directory/<slug>``."""
    name = slug(sig)
    d = directory / name
    d.mkdir(parents=True, exist_ok=True)
    what = (f"sdqtest fuzz finding {sig} on QEMU {build}: {out.reason}\n"
            f"input of {len(ops)} operations:\n" + "\n".join(f"  {describe(o)}" for o in ops))
    assert out.machine is not None
    trace_file = d / "repro.qtest"
    trace_file.write_text(reproducer_header(out.machine, what) + "\n".join(out.trace) + "\n")
    sh = d / "repro.sh"
    ends = {CRASH: ["QEMU crashes at the last command."],
            HANG: ["QEMU stops answering at the last command."]}.get(out.status, [])
    sh.write_text(replay_script(
        out.replay_argv, '"$(dirname "$0")/repro.qtest"',
        [f"sdqtest fuzz finding {sig} on QEMU {build} ({out.machine.type})",
         out.reason.splitlines()[0] if out.reason else "", *ends]))
    sh.chmod(0o755)
    fn = "test_sdhci_fuzz_" + re.sub(r"[^0-9a-z]", "_", name.lower())
    note = {DIVERGE: "the model's answer to the last step is asserted",
            CRASH: f"QEMU crashes at the last step ({out.crash_site})",
            HANG: "QEMU stops answering at the last step"}.get(out.status, out.status)
    comment = (f"sdqtest fuzz finding {sig}\non QEMU {build}: "
               f"{(out.reason.splitlines() or [''])[0]}\n{note}.\n"
               "The card image is sdqtest's sdsc-16m recipe (any 16 MiB image serves for "
               "register-level findings).")
    (d / "repro.c").write_text(c_function(fn, out.trace, out.replay_argv,
                                          expect=expectation(out), comment=comment))
    (d / f"test_fuzz_{name.replace('-', '_')}.py").write_text(pytest_text(sig, build, ops, out))
    info: dict[str, Any] = {
        "signature": sig, "build": build, "status": out.status, "reason": out.reason,
        "crash_site": out.crash_site, "error_site": out.error_site, "spec": out.spec,
        "divergence": out.divergence.to_json() if out.divergence else None,
        "ops": list(ops), "shrink_runs": runs, "original_len": original_len,
        "trace_lines": len(out.trace),
    }
    (d / "finding.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
    if out.divergence is not None:
        (d / "divergence.txt").write_text(out.divergence.render() + "\n")
    return d


def pytest_text(sig: str, build: str, ops: Sequence[Op], out: FuzzOutcome) -> str:
    """A pytest regression test that runs ``ops`` on each selected build,
    on the machine type the finding was on (a PC's, or a board's)."""
    machine = out.machine.type if out.machine is not None else "q35"
    return (
        f'"""sdqtest fuzz finding {sig}, first seen on QEMU {build}.\n\n'
        f"{(out.reason.splitlines() or [''])[0]}\n\n"
        "The test fails while model and QEMU still disagree on this input.\n"
        'Run it with the sdqtest plugin: pytest -p harness.pytest_plugin [--sdq-qemu B]."""\n\n'
        "from harness.fuzz.run import OK, execute\n"
        "from harness.fuzz.signature import signature\n"
        "from harness.qemu.builds import QemuBuild\n\n"
        f"OPS = {pprint.pformat(list(ops), width=96)}\n"
        f"MACHINE = {machine!r}\n\n\n"
        f"def test_fuzz_finding(qemu_build: QemuBuild) -> None:\n"
        "    out = execute(qemu_build.binary, qemu_build.profile, OPS, machine_type=MACHINE,\n"
        "                  name=qemu_build.name)\n"
        "    assert out.status == OK, f\"{signature(out)}: {out.reason}\"\n"
    )
