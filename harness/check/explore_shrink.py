"""The check's shrink phase: an explore divergence cut to what makes it diverge.

An explore input (:mod:`harness.scenarios.explore`) is already short, shrunk
on the model to what it first covered, but not to what makes QEMU differ.
After the runs, the check takes each explore divergence (a few per check)
and runs the input again through the same runner and testbench as every
scenario, on the same build and machine (a PC's, or a board's with its own
controller and card), with fewer operations: delta debugging
(:func:`harness.check.ddmin.shrink_ops`) keeps a candidate while its first
difference has the same signature (:mod:`harness.check.scoreboard`).  The
shortest input's run writes its reproducer as any divergence of the check
does (:func:`harness.check.reproducer.write_reproducer`, with the C test).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.check import runner
from harness.check.ddmin import shrink_ops
from harness.check.testbench import RunSpec
from harness.driver.ops import Op
from harness.qemu.pool import QemuPool
from harness.scenarios import Context, Scenario, explore
from harness.target import Target

#: Runs one shrink may make (each a QEMU reset and the input).
CALLS = 60


@dataclass(frozen=True)
class Shrunk:
    """An explore divergence shrunk: the run it came from, its signature,
    the input's length before and after, the runs it took, and the
    reproducer (the replay script) of the shortest input's run."""

    build: str
    scenario: str
    signature: str
    before: int
    after: int
    runs: int
    reproducer: str


@dataclass(frozen=True)
class NotShrunk:
    """An explore divergence that did not come back when its input ran
    alone (it depends on what earlier runs left on a reused QEMU)."""

    build: str
    scenario: str


def with_ops(sc: Scenario, ops: list[Op]) -> Scenario:
    """Explore scenario ``sc`` replaying ``ops`` instead of its corpus input."""
    def fn(target: Target, ctx: Context) -> None:
        explore.replay(ops, target)

    return replace(sc, fn=fn, params={**sc.params, "absolute_dma": explore.absolute_dma(ops)})


def first_signature(res: runner.Result) -> str:
    """The signature of a run's first difference ("" when it did not diverge)."""
    return res.divergence.signature if res.status == runner.DIVERGE and res.divergence else ""


Run = Callable[[Scenario, "runner.RunOptions"], runner.Result]


def shrink(spec: RunSpec, ops: list[Op], sig: str, report_dir: Path,
           run: Run | None = None, calls: int = CALLS) -> Shrunk | NotShrunk:
    """``ops`` (the input of explore run ``spec``, whose first difference
    is ``sig``) shrunk while its first difference stays ``sig``; the
    shortest input's reproducer under ``report_dir``."""
    pool = QemuPool()
    go = run or (lambda sc, opts: runner.run(spec.build, sc, spec.machine, opts))
    quiet = runner.RunOptions(pool=pool, max_differences=1)
    try:
        if first_signature(go(with_ops(spec.scenario, ops), quiet)) != sig:
            return NotShrunk(spec.build.name, spec.scenario.name)
        shrunk, runs = shrink_ops(
            ops, lambda cand: first_signature(go(with_ops(spec.scenario, cand), quiet)) == sig,
            calls=calls)
        final = go(with_ops(spec.scenario, shrunk),
                   runner.RunOptions(pool=pool, max_differences=1, report_dir=report_dir))
        if first_signature(final) != sig:  # not again: the whole input is the evidence
            shrunk, final = ops, go(with_ops(spec.scenario, ops),
                                    runner.RunOptions(max_differences=1, report_dir=report_dir))
    finally:
        pool.close()
    d = final.divergence
    return Shrunk(spec.build.name, spec.scenario.name, sig, len(ops), len(shrunk), runs + 2,
                  d.trace_file if d is not None else "")


def phase(ran: Sequence[tuple[RunSpec, runner.Result]], report_dir: Path, most: int,
          progress: Callable[[str], None] = lambda _t: None) -> list[Shrunk | NotShrunk]:
    """The shrink phase of a check: its first ``most`` explore divergences
    (``(run spec, result)`` of every run) shrunk, reproducers under
    ``report_dir/explore-findings``."""
    inputs: dict[str, Any] = {e["name"]: e for e in explore.load()["inputs"]}
    bad = [(s, r) for s, r in ran if s.scenario.group == explore.GROUP
           and s.scenario.name in inputs and first_signature(r)][:most]
    out: list[Shrunk | NotShrunk] = []
    for spec, res in bad:
        progress(f"shrinking {spec.build.name} {spec.scenario.name}")
        out.append(shrink(spec, list(inputs[spec.scenario.name]["ops"]), first_signature(res),
                          report_dir / "explore-findings"))
    progress("")
    return out
