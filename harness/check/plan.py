"""Which machine types each scenario runs on.

``q35`` for every group but ``compat``; the test suite also runs
:data:`PC_SUBSET` on ``pc`` (i440FX: another PCI host, IRQ routing and
RAM layout).  The compat group runs on the
machine types either side of each change in the model's compat table
(:data:`harness.model.compat.COMPAT_TABLE`): the last machine version an
entry applies to and the next one, plus the build's newest ``pc-q35``.
"""

from __future__ import annotations

from harness.hwdefs.boards import OWN_GROUPS
from harness.model.compat import COMPAT_TABLE, KNOWN_MACHINE_TYPES, machine_version
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario


def boundaries() -> tuple[str, ...]:
    """Machine versions either side of each sd-card compat change, oldest
    first: ``("9.0", "9.1", "11.0", "11.1")`` for today's table."""
    known = sorted({mv[:2] for t in KNOWN_MACHINE_TYPES
                    if t.startswith("pc-q35-") and (mv := machine_version(t)) is not None})
    out: list[tuple[int, int]] = []
    for e in sorted(COMPAT_TABLE, key=lambda e: e.upto):
        if e.device != "sd-card":
            continue
        out.append(e.upto)
        out += [v for v in known if v > e.upto][:1]
    return tuple(f"{major}.{minor}" for major, minor in dict.fromkeys(out))


def machines_for(build: QemuBuild, sc: Scenario) -> list[str]:
    """The machine types ``sc`` runs on with ``build`` when none is asked for
    (none for a board controller's own group, ``spi`` among them, nor for a
    recording made on a board: its card is a board's, ``check --board``)."""
    if sc.group in OWN_GROUPS or sc.params.get("board"):
        return []
    if sc.group != "compat":
        return ["q35"]
    q35 = build.versioned_machines("q35")
    wanted = [f"pc-q35-{v}" for v in boundaries()] + q35[-1:]
    return list(dict.fromkeys(m for m in wanted if m in q35))


#: Scenarios the test suite also runs on the ``pc`` machine: one or two per
#: group where the machine can matter (register window, PCI interrupt, DMA
#: into guest RAM, the card image), short ones.
PC_SUBSET = (
    "reset-values-v3", "access-sizes", "pio-read-7", "sdma-write-7", "adma2-read-32",
    "adma2-chains", "erase-ranges-sdsc-16m", "card-registers", "irq-during-transfers",
    "qcow2-read-write-erase", "mmc_test-19-22-high-memory", "capacity-sdhc-4g",
)
