"""A fuzz campaign: generate or mutate, run, keep, shrink, report.

Input ``i`` of a campaign is drawn from ``random.Random(f"{seed}:{i}")``
and the corpus as it stands, so a seed replays the same campaign (the same
builds, the same corpus).  ``--shard K/N`` keeps the inputs whose key falls
in shard K, so N machines run disjoint parts of one campaign.

An input is kept in the corpus when it reaches something no earlier input
did: new lines of QEMU when a coverage callback is given (``new_coverage``,
the coverage build's count of newly executed lines), else new model states
(operation kind, card state, interrupt status, consulted deviations).  A
finding is shrunk, deduplicated by signature and written as reproducers.
A failure on a reused (pooled) QEMU counts only when the same input fails
again on a fresh one; shrinking runs every candidate on a fresh QEMU too,
so a reproducer never depends on what earlier inputs left behind.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.check.ddmin import shrink_ops
from harness.check.shard import shard_of
from harness.fuzz import emit
from harness.fuzz.corpus import Corpus
from harness.fuzz.ops import Op, generate, mutate
from harness.fuzz.run import OK, PREDICTED, FuzzOutcome, execute
from harness.fuzz.signature import signature
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool


@dataclass
class Found:
    signature: str
    status: str
    directory: Path
    original_len: int
    shrunk_len: int
    shrink_runs: int
    reason: str


@dataclass
class Stats:
    build: str
    execs: int = 0
    seconds: float = 0.0
    shrink_runs: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    found: list[Found] = field(default_factory=list)
    #: Signatures seen again (already in the corpus's findings).
    repeats: dict[str, int] = field(default_factory=dict)
    #: Failures that did not fail again on a fresh QEMU (state carried over
    #: on a reused process, or flaky): not reported as findings.
    unconfirmed: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    coverage: int | None = None
    #: Findings whose shrinking the time budget cut short, one line each.
    unshrunk: list[str] = field(default_factory=list)
    #: Each input's operations and lockstep steps, in the order they ran.
    lengths: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.execs / self.seconds if self.seconds else 0.0

    def shape(self) -> str:
        """The inputs' sizes, as a rate must be read beside them: operations
        and lockstep steps per input, median, quartiles and most."""
        if not self.lengths:
            return "no inputs ran"
        return (f"inputs of {_quartiles(self.lengths)} operations, "
                f"{_quartiles(self.steps)} lockstep steps")


def _quartiles(xs: list[int]) -> str:
    """``median (quartiles q1-q3, at most max)`` of ``xs``."""
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else xs * 3
    return f"{q2:g} (quartiles {q1:g}-{q3:g}, at most {max(xs)})"


@dataclass
class Campaign:
    build: QemuBuild
    corpus: Corpus
    seed: int = 0
    strict: bool = False
    shard: tuple[int, int] = (1, 1)
    machine: str = "q35"
    shrink_calls: int = 60
    new_coverage: Callable[[], int | None] | None = None
    #: Lends QEMU processes reset between inputs (None: a launch per input).
    pool: QemuPool | None = None
    progress: Callable[[str], None] | None = None
    max_len: int = 24
    #: ``optimistic`` (inputs run ahead on the model's answers, on the pool's
    #: QEMUs) or ``step`` (:func:`harness.fuzz.run.execute`).
    lockstep: str = "optimistic"
    #: The share of a ``seconds`` budget kept for shrinking once something
    #: is found: exploring stops that much before the end, and shrinking
    #: stops at the end (what it had not finished is said in
    #: :attr:`Stats.unshrunk`).
    shrink_share: float = 0.25
    _features: set[tuple[Any, ...]] = field(default_factory=set)

    def execute(self, ops: list[Op]) -> FuzzOutcome:
        return execute(self.build.binary, self.build.profile, ops, machine_type=self.machine,
                       strict=self.strict, name=self.build.name, pool=self.pool,
                       lockstep=self.lockstep)

    def execute_fresh(self, ops: list[Op]) -> FuzzOutcome:
        """``ops`` on a QEMU launched for them alone (never the pool's): a
        finding, and each shrinking step, must fail from a fresh launch's
        state, as its reproducers and generated tests run.  Without a pool
        (or with a disabled one) every run is a fresh launch already:
        :meth:`execute`."""
        if self.pool is None or not self.pool.enabled:
            return self.execute(ops)
        return execute(self.build.binary, self.build.profile, ops, machine_type=self.machine,
                       strict=self.strict, name=self.build.name)

    def run(self, *, seconds: float | None = None, count: int | None = None) -> Stats:
        """Run until ``seconds`` have passed or ``count`` inputs ran."""
        return self._run(seconds, count)

    def _run(self, seconds: float | None, count: int | None) -> Stats:
        st = Stats(self.build.name)
        pool = self.corpus.inputs()
        t0 = time.monotonic()
        k, n = self.shard
        i = 0
        # With a time budget, findings are shrunk after exploring, in the
        # budget's last share; without one, as they are found.
        pending: dict[str, tuple[list[Op], FuzzOutcome]] = {}
        while True:
            st.seconds = time.monotonic() - t0
            reserve = seconds * self.shrink_share if seconds is not None and pending else 0.0
            if (seconds is not None and st.seconds >= seconds - reserve) or (
                    count is not None and st.execs >= count):
                break
            key = f"{self.seed}:{i}"
            i += 1
            if n > 1 and shard_of(key, n) != k - 1:
                continue
            rng = random.Random(key)
            if pool and rng.random() < 0.6:
                ops = mutate(rng, rng.choice(pool), pool)
            else:
                ops = generate(rng, self.max_len)
            out = self.execute(ops)
            st.execs += 1
            st.lengths.append(len(ops))
            st.steps.append(out.steps)
            st.by_status[out.status] = st.by_status.get(out.status, 0) + 1
            if self._keep(out, st):
                self.corpus.add_input(ops)
                pool.append(ops)
                st.kept += 1
            sig = signature(out)
            if sig and seconds is not None and not self.corpus.known(sig):
                if sig not in pending:
                    pending[sig] = (ops, out)
                else:
                    st.repeats[sig] = st.repeats.get(sig, 0) + 1
            elif sig:
                self._finding(sig, ops, out, st)
            if self.progress:
                st.seconds = time.monotonic() - t0
                self.progress(self.status_line(st))
        for j, (sig, (ops, out)) in enumerate(pending.items()):
            assert seconds is not None
            left = t0 + seconds - time.monotonic()  # an equal share of what is left each
            self._finding(sig, ops, out, st, deadline=time.monotonic() + left / (len(pending) - j))
        st.seconds = time.monotonic() - t0
        return st

    def status_line(self, st: Stats) -> str:
        cov = "-" if st.coverage is None else str(st.coverage)
        return (f"[{st.build}] {st.execs} execs, {st.rate:.1f}/s, {len(st.found)} new findings "
                f"({sum(st.repeats.values())} repeats), corpus +{st.kept}, coverage {cov}")

    def _keep(self, out: FuzzOutcome, st: Stats) -> bool:
        if out.status not in (OK, PREDICTED):
            return False
        new: int | None = None
        if self.new_coverage is not None:
            new = self.new_coverage()
            if new is not None:
                st.coverage = (st.coverage or 0) + new
        if new is None:
            new = len(out.features - self._features)
        self._features |= out.features
        return new > 0

    def _finding(self, sig: str, ops: list[Op], out: FuzzOutcome, st: Stats,
                 deadline: float | None = None) -> None:
        if self.corpus.known(sig):
            self.corpus.seen(sig)
            st.repeats[sig] = st.repeats.get(sig, 0) + 1
            return
        if self.pool is not None and self.pool.enabled:
            again = self.execute_fresh(ops)
            if signature(again) != sig:  # the reused process's state, or flaky
                st.unconfirmed[sig] = st.unconfirmed.get(sig, 0) + 1
                return
            out = again
        if self.progress:
            self.progress(f"[{st.build}] shrinking {sig} ({len(ops)} operations)")

        cut: list[bool] = []

        def fails(cand: list[Op]) -> bool:
            if deadline is not None and time.monotonic() >= deadline:
                cut.append(True)  # out of time: every candidate "passes", shrinking ends
                return False
            return signature(self.execute_fresh(cand)) == sig

        shrunk, runs = shrink_ops(ops, fails, stop_at=out.op_index, calls=self.shrink_calls)
        runs -= len(cut)
        if cut:
            st.unshrunk.append(f"{sig}: shrinking stopped at the time budget with "
                               f"{len(shrunk)} of {len(ops)} operations left")
        st.shrink_runs += runs
        final = self.execute_fresh(shrunk)
        if signature(final) != sig:  # flaky: keep the original
            shrunk, final = ops, out
        d = emit.write(final, shrunk, sig, self.build.name, self.corpus.findings_dir,
                       runs=runs, original_len=len(ops))
        self.corpus.record(sig, self.build.name, d, status=final.status,
                           reason=(final.reason.splitlines() or [""])[0],
                           ops=len(shrunk), seed=self.seed)
        st.found.append(Found(sig, final.status, d, len(ops), len(shrunk), runs,
                              (final.reason.splitlines() or [""])[0]))
