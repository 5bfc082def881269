"""Which worker runs what, and in which order: the check's scheduling.

A reused QEMU serves only runs of its own machine description
(:func:`harness.qemu.pool.reuse_key`), and keeps its card copy for the
next run on the same image.  Handed out one by one in the order given,
the runs of one description spread over every worker, and the runs that
need other device properties (the explore group's variants, the boards)
interleave, so a worker's few idle processes keep being closed and
launched again (0.15-0.3 s each).  Here the runs are grouped into
*chains*: the runs of one reuse key, by card image, each chain served by
one worker; chains go out longest first (an estimate of each run's
seconds: the last check's measured time on this machine, else a figure
per group), and a worker with nothing left takes the back half of the
longest chain still queued for another, so no worker sits idle while the
other finishes (longest processing time first, with stealing).

Nothing here changes what a run does: a reset is equal to a launch
(``tests/qtest/crosscheck/test_reuse.py``), so only the order and the
worker of each run change; results are reported in the order given.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import images, paths
from harness.check.testbench import RunSpec, scenario_machine
from harness.qemu.pool import reuse_key

#: Seconds a run of each group took, on average, in the default check
#: (``check --json``, 2026-12-02, 2 workers, load about 4): the estimate
#: for a run the cost file does not know.  A board's run counts
#: :data:`BOARD_FACTOR` times as much (its driver makes more steps).
GROUP_SECONDS = {
    "migration": 0.7, "images": 0.7, "commands": 0.3, "sizes": 0.3, "mmc_test": 0.26,
    "compat": 0.25, "spi": 0.23, "boundaries": 0.2, "emmc-commands": 0.24, "data": 0.15,
    "erase": 0.16, "interrupts": 0.14, "explore": 0.11, "card": 0.08, "registers": 0.05,
    "mmci": 0.4,  # vexpress-a9, a fresh launch each (check --board vexpress-a9 --json, 12-07)
    "sunxi": 0.2,
    "sdhost": 0.5,
    "omap": 0.25,  # sx1, a fresh launch each (check --board sx1: 6.1 s to 13.6 s for 39 runs)
}
DEFAULT_SECONDS = 0.15
BOARD_FACTOR = 1.2
#: What taking a chain costs beyond its runs: one launch.
LAUNCH_SECONDS = 0.25
#: A worker steals from another's chain only when the half it would take
#: is worth more than a launch.
STEAL_AT_LEAST = 2 * LAUNCH_SECONDS

CostKey = tuple[str, str, str]


def cost_key(r: RunSpec) -> CostKey:
    return (r.build.name, r.machine, r.scenario.name)


def cost_file() -> Path:
    """Where the last check's per-run seconds are kept (a cache: only the
    order of the runs depends on it)."""
    return paths.cache_dir() / "check-seconds.json"


def load_costs(path: Path | None = None) -> dict[CostKey, float]:
    """The seconds each run took last time, by build, machine and scenario
    (empty when the file is missing or unreadable)."""
    try:
        data = json.loads((path or cost_file()).read_text())
        return {(b, m, s): float(t) for b, m, s, t in data["runs"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def save_costs(seconds: dict[CostKey, float], path: Path | None = None) -> None:
    """Merge ``seconds`` into the cost file (written whole, then renamed)."""
    path = path or cost_file()
    merged = load_costs(path) | seconds
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".check-seconds-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"runs": [[*k, round(v, 4)] for k, v in sorted(merged.items())]}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the next check orders by the static figures


def estimate(r: RunSpec, known: dict[CostKey, float]) -> float:
    """The seconds ``r`` is expected to take."""
    got = known.get(cost_key(r))
    if got is not None:
        return got
    if r.skip_reason():
        return 0.0
    base = GROUP_SECONDS.get(r.scenario.group, DEFAULT_SECONDS)
    return base * (BOARD_FACTOR if r.machine != "q35" and not r.machine.startswith("pc")
                   else 1.0)


def group_key(r: RunSpec) -> Hashable | None:
    """The QEMU process ``r`` can share with other runs (its reuse key), or
    None: a run that launches its own (a migration, an eMMC, an SPI
    board), or none (a skip)."""
    sc = r.scenario
    if sc.migrates or r.skip_reason():
        return None
    return _reuse_key(str(r.build.binary), r.machine, sc.image, _frozen(sc.sdhci),
                      _frozen(sc.sd_card), sc.card)


def _frozen(props: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...] | None:
    return None if props is None else tuple(sorted(props.items()))


@functools.lru_cache(maxsize=4096)
def _reuse_key(binary: str, machine: str, image: str,
               sdhci: tuple[tuple[str, Any], ...] | None,
               card: tuple[tuple[str, Any], ...] | None, kind: str) -> Hashable | None:
    """:func:`reuse_key` of the machine a scenario with these devices builds
    (the same for every scenario that shares them: worked out once)."""
    sc = SimpleNamespace(sdhci=None if sdhci is None else dict(sdhci),
                         sd_card=None if card is None else dict(card), card=kind)
    fmt = images.recipe(image).format
    return reuse_key(binary, scenario_machine(sc, machine, Path(image), fmt))  # type: ignore[arg-type]


def chains(runs: Sequence[RunSpec], cost: Sequence[float]) -> list[list[int]]:
    """Indices of ``runs`` in chains: one per reuse key, its runs by card
    image (the costliest image first), each image's runs costliest first;
    a run with no key is a chain of its own.  Chains longest first."""
    by: dict[Hashable, dict[str, list[int]]] = {}
    alone: list[list[int]] = []
    for i, r in enumerate(runs):
        key = group_key(r)
        if key is None:
            alone.append([i])
        else:
            by.setdefault(key, {}).setdefault(r.scenario.image, []).append(i)
    out = alone
    for per_image in by.values():
        parts = [sorted(ix, key=lambda i: -cost[i]) for ix in per_image.values()]
        parts.sort(key=lambda ix: -sum(cost[i] for i in ix))
        out.append([i for ix in parts for i in ix])
    out.sort(key=lambda ix: -(sum(cost[i] for i in ix) + LAUNCH_SECONDS * (len(ix) > 1)))
    return out


class Schedule:
    """The chains handed to ``jobs`` workers: :meth:`next` is the run a
    worker should do next (None: it is done)."""

    def __init__(self, order: list[list[int]], cost: Sequence[float], jobs: int) -> None:
        self.cost = cost
        self.queued: deque[list[int]] = deque(order)
        self.own: list[deque[int]] = [deque() for _ in range(jobs)]
        #: Chains split to feed an idle worker (for the tests and the summary).
        self.steals = 0

    def next(self, w: int) -> int | None:
        mine = self.own[w]
        if not mine and self.queued:
            mine.extend(self.queued.popleft())
        if not mine:
            self._steal(w)
        return mine.popleft() if mine else None

    def _steal(self, w: int) -> None:
        """The back half (by cost) of the costliest chain queued for another worker."""
        left = [sum(self.cost[i] for i in q) for q in self.own]
        victim = max(range(len(self.own)), key=lambda v: left[v])
        q = self.own[victim]
        if victim == w or len(q) < 2 or left[victim] / 2 < STEAL_AT_LEAST:
            return
        took = 0.0
        back: list[int] = []
        while len(q) > 1 and took < left[victim] / 2:
            i = q.pop()
            back.append(i)
            took += self.cost[i]
        self.own[w].extend(reversed(back))
        self.steals += 1
