"""The scenario library on ARM boards' SD controllers (``sdqtest check --board``).

A board run is a scenario on a board's machine type (:mod:`harness.hwdefs.boards`)
with the board's own controller and card: the same Target interface, the
registers at the board's MMIO base, the interrupt as qtest intercepts it there.
What does not apply to a board is skipped with its reason, one rule per reason
(:func:`skip_reason`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.hwdefs import sdhci as H
from harness.hwdefs.boards import BOARDS, OWN_GROUPS, Board, board_for, by_name, run_key
from harness.model.target import CONTROLLERS
from harness.profile import BuildProfile
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario

__all__ = ["DEFAULT_BOARDS", "DEFAULT_GROUPS", "SPI_GROUP", "absent_machines", "applicable",
           "binary_family", "board_names", "default_scenarios", "in_default", "machines_for",
           "not_run", "skip_reason"]

#: Groups that need a PC: the compat matrix of versioned pc machine types, the
#: migration matrix (run on pc machine types), the eMMC device (``-device emmc``
#: on sdhci-pci's bus: a board plugs its own SD card).
PC_GROUPS = {
    "compat": "the sd-card compat properties of versioned pc machine types "
              "(a board's machine type is not versioned)",
    "migration": "the migration matrix runs on pc machine types",
}
#: The group of real drivers' recordings (harness.scenarios.drivers): each runs on
#: the machine it was recorded on (a PC's, or its board's param ``board``).
DRIVERS_GROUP = "drivers"


#: The boards the default ``sdqtest check`` runs: at least one for every
#: controller file of hw/sd.  The model mirrors every board's controller;
#: smdkc210 and fuji-emmc run with ``--board`` (smdkc210's S3C variant is
#: the SDHCI that zynq runs, with a few registers of its own; fuji-emmc is
#: ast2600's wrapper with an eMMC).  lm3s6965evb (SPI mode), vexpress-a9
#: (the PL181's mmci group), orangepi-pc (the sunxi group), raspi2b's SDHOST
#: (the sdhost group, 10.0 and later) and sx1 (the omap group, a fresh launch
#: each) cost a few seconds a build each; icicle (the Cadence SD4HC, RISC-V
#: builds: its registers and drivers groups) and ast2600 (the Aspeed wrapper:
#: its registers group) run some groups only (:data:`DEFAULT_GROUPS`);
#: sifive_u (the spi group through SiFive's SPI controller) about a second a
#: build.  ``check --profile`` prints each
#: board's share of the check's wall time.
DEFAULT_BOARDS: tuple[str, ...] = ("zynq", "raspi3b", "mcimx7d", "quanta-gbs", "lm3s6965evb",
                                   "vexpress-a9", "orangepi-pc", "raspi2b", "sx1", "icicle",
                                   "sifive_u", "ast2600")
#: Boards of the default check that run only some groups there (``--board``
#: runs them all): their SDHCI slots are the generic sysbus one zynq's
#: library run already covers; what is their own (icicle's Host Register Set
#: and its reset, hw/sd/cadence_sdhci.c; ast2600's wrapper registers,
#: hw/sd/aspeed_sdhci.c) is in the registers group, about a tenth of the
#: library's runs; and in the drivers group, each board's real driver (Linux's
#: sdhci-cadence with the HRS, sdhci-of-aspeed through the wrapper), about a
#: second a build each.
DEFAULT_GROUPS: dict[str, frozenset[str]] = {"icicle": frozenset({"registers", "drivers"}),
                                             "ast2600": frozenset({"registers", "drivers"})}
#: Groups the default check leaves to ``--board``: the explore corpus is
#: searched on sdhci-pci, and its inputs on every board build would take as
#: long as the whole PC check.
NOT_BY_DEFAULT = frozenset({"explore"})


def default_scenarios(selected: Sequence[Scenario], chosen: bool) -> list[Scenario]:
    """What the default check runs on the boards: a selection the user made
    (``chosen``: ``--group``/``--scenario``) as it is; else the library less
    what never runs on a board (the PC groups, the eMMC device) and
    :data:`NOT_BY_DEFAULT`."""
    if chosen:
        return list(selected)
    return [sc for sc in selected if sc.group not in PC_GROUPS
            and sc.group not in NOT_BY_DEFAULT and sc.card == "sd-card"
            and (sc.group != DRIVERS_GROUP or sc.params.get("board"))]


def in_default(sc: Scenario, machine: str) -> bool:
    """Scenario ``sc`` runs on ``machine`` in the default check (:data:`DEFAULT_GROUPS`)."""
    board = board_for(machine)
    only = DEFAULT_GROUPS.get(board.name) if board is not None else None
    return only is None or sc.group in only


def on_its_bus(sc: Scenario, machine: str) -> bool:
    """Scenario ``sc`` is for the controller of ``machine``'s card: a board's
    own group (``Board.group``: ``spi`` for a card in SPI mode) on that
    board (but a scenario of that group written for another controller,
    ``params["variant"]``), the SDHCI library on the others; a real driver's recording on the
    board it was made on only."""
    board = board_for(machine)
    if board is None:
        return True
    if sc.group == DRIVERS_GROUP:
        return sc.params.get("board") == board.name
    if board.group:  # its group, less the scenarios of another controller of that group
        return sc.group == board.group and sc.params.get("variant", board.variant) == \
            board.variant
    return sc.group not in OWN_GROUPS


def applicable(selected: Sequence[Scenario], names: Sequence[str]) -> list[Scenario]:
    """``check --board`` without ``--group``/``--scenario``: the library less
    the SDHCI groups when every board named has its card in SPI mode, less
    the ``spi`` group when none has (the rest is skipped run by run)."""
    machines = [run_key(by_name(n)) for n in names]
    return [sc for sc in selected if any(on_its_bus(sc, m) for m in machines)]


def board_names(names: Sequence[str]) -> list[str]:
    """``--board`` values checked and expanded (``all``: every board), in table order."""
    wanted = {n for a in names for n in a.split(",") if n}
    if "all" in wanted or not wanted:
        return [b.name for b in BOARDS]
    for n in sorted(wanted):
        by_name(n)  # KeyError names the known boards
    return [b.name for b in BOARDS if b.name in wanted]


def machines_for(build: QemuBuild, names: Sequence[str]) -> list[str]:
    """The machines (:func:`~harness.hwdefs.boards.run_key`) of boards ``names`` that
    ``build`` offers and can run (see :func:`not_run`)."""
    return [run_key(by_name(n)) for n in names if build.offers(by_name(n).machine)
            and board_only_reason(by_name(n), build.profile) is None]


def binary_family(binary: str) -> str:
    """``riscv``, ``arm`` (qemu-system-arm and -aarch64 alike) or the binary's name."""
    name = binary.rsplit("/", 1)[-1]
    if "riscv" in name:
        return "riscv"
    return "arm" if "arm" in name or "aarch64" in name else name


def not_run(builds: Sequence[QemuBuild], names: Sequence[str]) -> list[str]:
    """One line per build and board that runs no scenario, with the reason:
    a machine type the build lacks (:func:`absent_machines`: it cannot run
    on the build), or what keeps the harness from running it there; none for
    a build of another target (a RISC-V build and an ARM board) when a build
    of the board's own target is among ``builds``."""
    out = [f"[{b}] board {by_name(n).name} ({m}): cannot run on this build: {why}"
           for b, n, m, why in absent_machines(builds, names)]
    for b in builds:
        for n in names:
            board = by_name(n)
            why = board_only_reason(board, b.profile) if b.offers(board.machine) else None
            if why is not None:
                out.append(f"[{b.name}] board {n} ({board.machine}): not run: {why}")
    return out


def absent_machines(builds: Sequence[QemuBuild], names: Sequence[str]
                    ) -> list[tuple[str, str, str, str]]:
    """``(build, board, machine type, why)`` of each board whose machine type
    a build does not offer (QEMU's ``query-machines`` answer lacks it), but
    for a build of another target when one of the board's own is among
    ``builds`` (an ARM board on a RISC-V build)."""
    families = {binary_family(str(b.binary)) for b in builds}

    def elsewhere(b: QemuBuild, board: Board) -> bool:
        own = binary_family(board.binary)
        return own in families and binary_family(str(b.binary)) != own

    return [(b.name, n, by_name(n).machine,
             f"no machine type {by_name(n).machine} (the build's query-machines)")
            for b in builds for n in names
            if not b.offers(by_name(n).machine) and not elsewhere(b, by_name(n))]


def _recorded_elsewhere(sc: Scenario, board: Board | None) -> str | None:
    """Why a recording does not run on ``board`` (None: a PC): it was made on
    another machine, whose controller has its own driver."""
    mine = sc.params.get("board")
    if mine is None and board is not None:
        return ("a recording of Linux's sdhci-pci driver, made on pc machine types (a "
                "board's controller has its own driver)")
    if mine is not None and (board is None or board.name != mine):
        return f"a recording made on board {mine} (its controller's own driver)"
    return None


def skip_reason(sc: Scenario, machine: str, profile: BuildProfile) -> str | None:
    """Why scenario ``sc`` does not run on ``machine`` (a board's), or None."""
    board = board_for(machine)
    if sc.group in OWN_GROUPS and (board is None or board.group != sc.group):
        return (f"drives {_OWN_GROUP_NEEDS.get(sc.group, 'a board controller')} "
                f"(--board {', '.join(b.name for b in BOARDS if b.group == sc.group)})")
    if sc.group == DRIVERS_GROUP:
        why = _recorded_elsewhere(sc, board)
        if why is not None:
            return why
    only = sc.params.get("variant")  # a controller's own registers (scenarios.vendor_registers)
    if only is not None and (board is None or board.variant != only):
        return (f"writes the {only} controller's own registers: board(s) "
                f"{', '.join(b.name for b in BOARDS if b.variant == only)} only")
    if board is None:
        return None
    if board.group and sc.group not in (board.group, DRIVERS_GROUP):  # a recording made here
        return (f"an SDHCI scenario: board {board.name} has no SDHCI (its card is behind "
                f"a {board.controller}; the {board.group} group runs)")
    if sc.group in PC_GROUPS:
        return PC_GROUPS[sc.group]
    if board.group:  # its own group: no SDHCI properties or capabilities to weigh
        return board_only_reason(board, profile)
    if sc.card != board.card_kind:
        return (f"an {sc.card} device: board {board.name} creates its own "
                f"{_CARD_NAMES.get(board.card_kind, board.card_kind)}")
    differ = sorted(k for k, v in sc.sdhci.items() if board.sdhci_props.get(k) != v)
    if differ:  # the same values as the board's are the board's own controller
        props = ", ".join(f"{k}={_show(sc.sdhci[k])}" for k in differ)
        return (f"sets sdhci-pci properties ({props}); board {board.name} fixes its "
                "controller's")
    caps = _caps(board, profile)
    lacks = [m for m in DMA_KINDS if m in sc.name and not caps & H.CAPAB.mask(m.upper())]
    if lacks:
        return (f"tests {'/'.join(lacks).upper()}: board {board.name}'s controller "
                f"reports no {'/'.join(lacks).upper()} (capareg {caps:#x}); the "
                "driver moves the other scenarios' DMA transfers by PIO there")
    if sc.name in SDMA_BOUNDARY_EVENTS and board.variant == "usdhc":
        return (f"counts DMA Interrupts at a 4 KiB SDMA boundary: board {board.name}'s "
                "uSDHC has no SDMA Buffer Boundary field (i.MX 7 RM BLK_ATT; QEMU forces "
                "512 KiB: usdhc.blk-att-boundary-forced)")
    if board.ram_base != 0 and sc.params.get("absolute_dma"):
        return (f"writes a DMA address of its own into SDMA/ADMA System Address (near the "
                f"PC's DMA area); board {board.name}'s RAM starts at {board.ram_base:#x}")
    return board_only_reason(board, profile)


#: The scenario group of the SD card in SPI mode (harness.scenarios.spi).
SPI_GROUP = "spi"
#: What a board's own group needs, for its skip reason elsewhere.
_OWN_GROUP_NEEDS: dict[str, str] = {
    SPI_GROUP: "an SD card in SPI mode: a board with an SSI controller",
    "mmci": "an ARM PL181 MMCI: a board with one",
    "sunxi": "an Allwinner SD/MMC host (allwinner-sdhost)",
    "sdhost": "the BCM2835 SDHOST: a raspi board with the card routed to it",
    "omap": "an OMAP1 MMC/SD host (omap-mmc)",
}
#: Scenarios whose expectations count the DMA Interrupts of a programmed
#: SDMA buffer boundary (the data of the others does not depend on it).
SDMA_BOUNDARY_EVENTS = frozenset({"boundary-sdma-4k"})
#: DMA kinds a scenario named after one tests (``sdma-read-7``, ``adma2-chains``).
DMA_KINDS = ("sdma", "adma2")


_CARD_NAMES = {"sd-card": "SD card", "emmc": "eMMC"}


def _show(value: object) -> str:
    return f"{value:#x}" if isinstance(value, int) and not isinstance(value, bool) \
        and value > 9 else str(value)


def _caps(board: Board, profile: BuildProfile) -> int:
    return CONTROLLERS[board.variant].board_capareg(board.sdhci_props, profile)


def scenario_profile(machine: str, profile: BuildProfile) -> BuildProfile:
    """The build as a scenario's requirements see it on ``machine``: a board
    that plugs its own eMMC needs no user-creatable ``emmc`` (10.1), only
    the device (hw/arm/aspeed.c creates it with qdev_new)."""
    board = board_for(machine)
    if board is None or board.card_kind != "emmc" or profile.emmc_properties is None:
        return profile
    return dataclasses.replace(profile, emmc_pluggable=True)


def board_only_reason(board: Board, profile: BuildProfile) -> str | None:
    """Why no scenario runs on ``board`` with a build of ``profile``, or None."""
    if board.card_kind == "emmc" and profile.emmc_properties is None:
        return (f"board {board.name}: this build has no emmc device, the board plugs an "
                "sd-card into its eMMC slot (the SD boards cover that controller)")
    need = board.irq.min_version
    if profile.version[:2] < need:
        return (f"board {board.name}: this build's qtest cannot intercept the named GPIO "
                f"{board.irq.name} (needs {need[0]}.{need[1]} or later)")
    return None
