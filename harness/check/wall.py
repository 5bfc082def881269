"""Where a check's wall time goes: ``check --profile``.

The check's own process goes through phases one after the other (probing
the builds, the scenario runs, waiting for the compat matrix and the
realize cases that ran beside them, writing the report): :meth:`Wall.phase`
times each, and what no phase claims (imports, selecting the runs) is shown
as the rest, so the phases add up to the wall time.  During the scenario
runs, each of the ``N`` workers' seconds are split by what it did: launching,
resetting and closing QEMUs (:class:`harness.qemu.pool.PoolStats`), the runs
themselves by kind (x86 scenarios, the explore group's replay, migrations,
boards), and idle: between two runs (forking, waiting on this process,
closing its pool as it ends) or at the end, with nothing left while
another worker finishes (a poor schedule shows here).  The worker columns
are seconds of one worker's wall time, so with ``N`` workers they add up
to ``N`` times the phase.

The wire time is what the check's qtest commands would cost back to back
at the pipelined rate ``bench qtest`` measures (one QEMU, one register read
per command): the floor a check that only talked to QEMU would reach.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.hwdefs.boards import board_for
from harness.qemu.pool import PoolStats

#: Run kinds, in the order the profile shows them.
KINDS = ("x86 scenarios", "explore replay", "migration", "boards")


def kind_of(group: str, machine: str) -> str:
    """The profile's kind of a run of ``group`` on ``machine``."""
    if group == "migration":
        return "migration"
    if group == "explore":
        return "explore replay"
    if machine == "q35" or machine.startswith("pc"):
        return "x86 scenarios"
    return "boards"


@dataclass
class Workers:
    """What the scenario workers did: seconds by activity, summed over workers."""

    jobs: int = 1
    elapsed: float = 0.0
    pool: PoolStats = field(default_factory=PoolStats)
    #: Seconds of the runs themselves (less their launches and resets), by kind.
    runs: dict[str, float] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)
    idle_end: float = 0.0
    commands: int = 0
    #: Each board's runs: seconds (their launches and resets included) and count.
    by_board: dict[str, tuple[float, int]] = field(default_factory=dict)

    def add_run(self, group: str, machine: str, seconds: float, pool: PoolStats,
                commands: int) -> None:
        k = kind_of(group, machine)
        own = max(seconds - pool.launch_seconds - pool.reset_seconds - pool.close_seconds, 0.0)
        self.runs[k] = self.runs.get(k, 0.0) + own
        self.count[k] = self.count.get(k, 0) + 1
        board = board_for(machine)
        if board is not None:
            secs, n = self.by_board.get(board.name, (0.0, 0))
            self.by_board[board.name] = (secs + seconds, n + 1)
        self.pool.add(pool)
        self.commands += commands

    @property
    def idle_between(self) -> float:
        busy = (sum(self.runs.values()) + self.pool.launch_seconds + self.pool.reset_seconds
                + self.pool.close_seconds)
        return max(self.jobs * self.elapsed - busy - self.idle_end, 0.0)


@dataclass
class Wall:
    """The phases of one check, as they happen (see the module doc)."""

    start: float = field(default_factory=time.monotonic)
    phases: dict[str, float] = field(default_factory=dict)
    workers: Workers = field(default_factory=Workers)
    #: Seconds and QEMU launches of the work beside the runs (own process).
    beside: dict[str, tuple[float, int]] = field(default_factory=dict)
    beside_jobs: int = 0
    #: The phase under way and when it began (:meth:`mark`).
    current: str | None = None
    since: float = 0.0

    def mark(self, name: str | None, beside_jobs: int | None = None) -> None:
        """End the phase under way and begin ``name`` (None: none)."""
        now = time.monotonic()
        if self.current is not None:
            self.phases[self.current] = self.phases.get(self.current, 0.0) + now - self.since
        self.current, self.since = name, now
        if beside_jobs is not None:
            self.beside_jobs = beside_jobs

    def side(self, name: str, seconds: float, launches: int, jobs: int) -> None:
        """Count work done beside the runs (the compat matrix, the realize cases)."""
        secs, n = self.beside.get(name, (0.0, 0))
        self.beside[name] = (secs + seconds, n + launches)
        self.beside_jobs = jobs

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase ``name`` (added to an earlier one of that name)."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - t0

    def lines(self, per_command: float | None = None) -> list[str]:
        """The profile as lines: phases, the workers' split, the side work,
        and the wire-time ratio when ``per_command`` (seconds) is known."""
        self.mark(None)
        total = time.monotonic() - self.start
        rows = [(name, secs) for name, secs in self.phases.items()]
        rows.append(("unclaimed by any phase",
                     max(total - sum(self.phases.values()), 0.0)))
        out = [f"where the check's {total:.1f} s of wall time went:"]
        out += [f"  {name:54} {secs:7.1f} s  {100 * secs / max(total, 1e-9):5.1f}%"
                for name, secs in rows]
        out += self._worker_lines()
        for name, (secs, launches) in self.beside.items():
            out.append(f"  beside the runs ({self.beside_jobs} workers of its own): {name} "
                       f"{secs:.1f} s for {launches} items (a QEMU each, unless kept)")
        w = self.workers
        if per_command and w.commands:
            wire = w.commands * per_command
            out.append(f"qtest wire time: {w.commands} commands x {per_command * 1e6:.1f} us "
                       f"(pipelined, measured now) = {wire:.2f} s; wall time / wire time "
                       f"= {total / wire:.1f}x")
        return out

    def _worker_lines(self) -> list[str]:
        w = self.workers
        if not w.elapsed:
            return []
        p = w.pool
        parts = [(f"launching QEMUs ({p.launched})", p.launch_seconds),
                 (f"resetting QEMUs ({p.reused})", p.reset_seconds),
                 ("closing QEMUs", p.close_seconds)]
        parts += [(f"{k} ({w.count[k]} runs)", w.runs[k]) for k in KINDS if k in w.runs]
        parts += [("idle between runs (fork, hand-over, exit)", w.idle_between),
                  ("idle at the end (nothing left to take)", w.idle_end)]
        out = [f"  the scenario runs, {w.jobs} workers x {w.elapsed:.1f} s "
               f"(seconds per worker):"]
        out += [f"    {name:52} {secs / w.jobs:7.1f} s  "
                f"{100 * secs / max(w.jobs * w.elapsed, 1e-9):5.1f}%" for name, secs in parts]
        if w.by_board:
            out.append("  each board's runs, launches and resets included (seconds per worker):")
            out += [f"    {f'{name} ({n} runs)':52} {secs / w.jobs:7.1f} s  "
                    f"{100 * secs / max(w.jobs * w.elapsed, 1e-9):5.1f}%"
                    for name, (secs, n) in sorted(w.by_board.items(), key=lambda kv: -kv[1][0])]
        return out


#: The current check's clock (a new one per :func:`start`).
CLOCK = Wall()


def start(phase: str | None = None) -> Wall:
    """A fresh clock for a check starting now, in ``phase``."""
    global CLOCK
    CLOCK = Wall()
    CLOCK.mark(phase)
    return CLOCK


def print_profile(wanted: bool, clock: Wall, builds: list[Any]) -> None:
    """``check --profile``: the profile on standard output (the wire rate
    measured on the first build), if ``wanted``."""
    if not wanted:
        return
    clock.mark("measuring the pipelined qtest rate (for the profile)")
    per = per_command_seconds(builds[0].binary) if builds else None
    print("\n" + "\n".join(clock.lines(per)))


def per_command_seconds(binary: Path, ops: int = 2000) -> float | None:
    """Seconds per qtest command, pipelined 256 deep (``bench qtest``'s
    way: one sdhci-pci register read each), on a QEMU of ``binary``; None
    when it cannot be had."""
    from harness.qemu.session import QemuError
    from harness.qemu.target import QemuTarget

    reg = 0xFE  # HOST_VERSION, as bench qtest reads it

    try:
        with QemuTarget(binary) as t:
            t.read_many([(reg, 2)] * 256)  # warm up
            t0 = time.perf_counter()
            for _ in range(ops // 256):
                t.read_many([(reg, 2)] * 256)
            return (time.perf_counter() - t0) / (256 * (ops // 256))
    except (QemuError, OSError):
        return None
