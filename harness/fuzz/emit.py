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

import json
import pprint
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.check.reproducer import c_function, expectation
from harness.fuzz.ops import Op, describe
from harness.fuzz.run import CRASH, DIVERGE, HANG, FuzzOutcome
from harness.fuzz.signature import slug
from harness.machine import reproducer_header
from harness.qemu.argv import replay_script


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
    (d / "repro.c").write_text(c_function(fn, out.trace, out.replay_argv, comment=comment,
                                          expect=expectation(out.divergence, out.irq_line)))
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
