"""A divergence of the check's explore group, shrunk into the fuzzer's reproducers.

An explore input is already short (shrunk on the model to what it first
covered), but not to what makes it diverge.  Here it is re-run through the
fuzzer's lockstep (:func:`harness.fuzz.run.execute`, the same machine and
driver polls as the explore group), shrunk by delta debugging while the
*same signature* fails, and written as the fuzzer writes a finding: the
decoded divergence, ``repro.qtest``, ``repro.sh``, ``repro.c`` (libqtest)
and a pytest test (:func:`harness.fuzz.emit.write`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.driver.ops import Op
from harness.fuzz import emit
from harness.fuzz.run import FuzzOutcome, execute
from harness.fuzz.shrink import shrink_ops
from harness.fuzz.signature import signature
from harness.qemu.builds import QemuBuild
from harness.scenarios.explore import DRIVER_POLLS


@dataclass
class Shrunk:
    signature: str
    directory: Path
    before: int                      #: operations of the corpus input
    after: int                       #: operations of the shrunk one
    runs: int
    reason: str


def shrink_divergence(build: QemuBuild, ops: list[Op], out_dir: Path, *,
                      calls: int = 60, machine_type: str = "q35") -> Shrunk | None:
    """Shrink ``ops`` (an explore input that diverged on ``build``, on
    ``machine_type``: a PC's, or a board's with its own controller) and
    write its reproducers under ``out_dir``; None if it does not fail when
    re-run alone (the check's run stays the evidence)."""
    def go(cand: list[Op]) -> FuzzOutcome:
        return execute(build.binary, build.profile, cand, polls=DRIVER_POLLS,
                       machine_type=machine_type)

    def run(cand: list[Op]) -> str:
        return signature(go(cand))

    first = go(ops)
    sig = signature(first)
    if not sig:
        return None
    shrunk, runs = shrink_ops(ops, lambda c: run(c) == sig, stop_at=first.op_index,
                              calls=calls)
    final = go(shrunk)
    if signature(final) != sig:
        shrunk, final = ops, first
    d = emit.write(final, shrunk, sig, build.name, out_dir, runs=runs, original_len=len(ops))
    return Shrunk(sig, d, len(ops), len(shrunk), runs, (final.reason.splitlines() or [""])[0])
