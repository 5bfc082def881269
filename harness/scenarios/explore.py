"""The explore group: the model-driven search's covering corpus, replayed.

``sdqtest explore --write`` runs the search on the model alone
(:mod:`harness.explore.search`) and writes ``explore_corpus.json`` beside
this module: operation sequences, each kept because it took a branch of
the model or reached an abstract state no other did, shrunk, with a probe
after every operation (every side-effect-free register, the DMA arena,
CMD13 where the card is addressed).  Here each becomes one scenario of
group ``explore`` (``explore-NNN``), so every ``sdqtest check`` compares
model and QEMU in lockstep on them, the image at the end as for any
scenario.  The corpus is data, not code: it is a function of the search's
seed and the model's code (its ``model_digest`` records which);
``sdqtest explore --status`` says whether it is up to date.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.driver.host import HostDriver
from harness.driver.ops import Op, apply
from harness.hwdefs import sdhci as H
from harness.paths import package_data
from harness.scenarios.registry import Context, Scenario, add
from harness.target import Target

#: The kept inputs, shipped as package data (``sdqtest explore --write`` rewrites
#: it in a checkout).
CORPUS = package_data("scenarios", "explore_corpus.json")
GROUP = "explore"
#: The group whose scenarios the check runs migrating (harness.scenarios.migration).
MIGRATION_GROUP = "migration"
#: The parameter that marks a corpus input registered in another group.
FROM_CORPUS = "explore_corpus"
#: Polls the driver makes before it gives up a wait: the search's value,
#: so that a replay waits exactly as the input did when it was kept.
DRIVER_POLLS = 16


def load(path: Path = CORPUS) -> dict[str, Any]:
    """The corpus file (an empty corpus when there is none)."""
    if not path.is_file():
        return {"inputs": []}
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def replay(ops: list[Op], target: Target,
           migrate: Callable[[str], None] | None = None) -> None:
    """Run one corpus input on ``target`` (model, QEMU or the lockstep);
    at a ``migrate`` operation, ``migrate(label)`` (a migration run's point)."""
    d = HostDriver(target, timeout_steps=DRIVER_POLLS)
    for i, op in enumerate(ops):
        if op["op"] == "migrate" and migrate is not None:
            migrate(f"step-{i}")
        else:
            apply(d, target, op)


def migrates(ops: list[Op]) -> bool:
    return any(o["op"] == "migrate" for o in ops)


def absolute_dma(ops: list[Op]) -> bool:
    """``ops`` write an address of their own into SDMA System Address or ADMA
    System Address (a raw register write, or a ``start`` with an absolute
    address): an address of the PC's layout, not the driver's, which on a
    board lies in its RAM."""
    regs = ((H.SDMASYSAD.offset, H.SDMASYSAD.offset + H.SDMASYSAD.width),
            (H.ADMASYSADDR.offset, H.ADMASYSADDR.offset + H.ADMASYSADDR.width))
    return any(o["op"] == "write" and any(o["off"] < hi and o["off"] + o["size"] > lo
                                          for lo, hi in regs)
               or o["op"] == "start" and any(o.get(k) for k in ("sdma_addr", "table_addr",
                                                                "abs"))
               for o in ops)


def _scenario(name: str, ops: list[Op], doc: str, sdhci: dict[str, Any] | None = None,
              sd_card: dict[str, Any] | None = None, group: str = GROUP) -> Scenario:
    def fn(target: Target, ctx: Context) -> None:
        replay(ops, target, ctx.migrate_point if group != GROUP else None)

    params: dict[str, Any] = {"absolute_dma": absolute_dma(ops)}
    if group != GROUP:  # a corpus input in the migration group: still the corpus's
        params["point"], params[FROM_CORPUS] = name, True
    # the migration group's copy migrates (its own QEMU processes): without
    # the flag the check ran it as one lockstep run and its migrate
    # operations did nothing (since the run kind became Scenario.migrates)
    return Scenario(name, group, fn, doc, sdhci=sdhci or {}, sd_card=sd_card or {},
                    params=params, migrates=group != GROUP, needs_clock=group != GROUP)


def register(path: Path = CORPUS) -> int:
    """Register one scenario per corpus input; the number registered."""
    data = load(path)
    for entry in data["inputs"]:
        n = sum(1 for o in entry["ops"] if o["op"] != "probe")
        on = f" on {entry['variant']} {entry.get('sdhci')} {entry.get('sd_card')}" \
            if "variant" in entry else ""
        doc = (f"Explored input {entry['index']} (seed {data.get('seed')}): {n} "
               f"operations{on} that first reached {entry['new']} branches or states of "
               "the model")
        add(_scenario(entry["name"], entry["ops"], doc + ".", entry.get("sdhci"),
                      entry.get("sd_card")))
        if migrates(entry["ops"]):  # its migration points, run where the check migrates
            add(_scenario(f"migrate-{entry['name']}", entry["ops"],
                          doc + ", migrated to the same build at each migrate operation.",
                          entry.get("sdhci"), entry.get("sd_card"), MIGRATION_GROUP))
    return len(data["inputs"])


register()
