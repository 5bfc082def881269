"""Where each recorded controller's driver traffic lies in a trace, as data.

A recording's trace (:mod:`harness.scenarios.drivers_trace`) holds QEMU's memory
core view of every CPU access to every MMIO region, by absolute address and
region name.  For each controller family a recording can come from, a
:class:`HostTrace` says which regions belong to the board's window (the one a
check's Target sees: :data:`harness.hwdefs.boards.BOARDS`), which offsets of them
are kept, how a write starts a command, where the argument and the short
response are (the RCA, PLS 4.9.5) and which offsets are data ports (each read
moves data: never a polling loop; a run of writes is one ``d`` operation).

Why the memory core's events for every controller, and not each model's own
(``allwinner_sdhost_read``, ``bcm2835_sdhost_read``, the ``pl181_*`` events):
those are emitted by the code under test and exist in some controllers only
(PL181 has none for register accesses); ``memory_region_ops_read``/``_write``
have one format for every region from QEMU 7.2 to 11.1 and also show the
accesses to the blocks beside the controller that the driver uses (the
Versatile Express card detect in ``SYS_MCI``, the BCM2835 GPIO function select
that routes the card).  A DMA engine's accesses to a data port (Linux's bcm2835
driver moves multi-block data through the BCM2835 DMA controller, which QEMU
runs in the CPU's thread) show in the trace as the CPU's would and are replayed
as CPU accesses: the controller sees the same reads and writes of its FIFO.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.hwdefs import allwinner as AW
from harness.hwdefs import bcm2835_sdhost as BS
from harness.hwdefs import pl181 as PL
from harness.hwdefs import sdhci as H
from harness.hwdefs import sifive_spi as SP
from harness.hwdefs.fields import Register


@dataclass(frozen=True)
class HostTrace:
    """One controller family's traffic in a trace and in the board's window."""

    name: str
    #: region name -> window offsets kept (None: the region's first 4 KiB).
    regions: tuple[tuple[str, frozenset[int] | None], ...]
    #: window offset of the command register, and the bit that starts a command.
    cmd_reg: int
    cmd_start: int
    #: bits of a command write that make it no card command (Allwinner's clock update).
    cmd_not: int
    arg_reg: int
    rsp0_reg: int
    #: window offsets of the data ports.
    data_ports: frozenset[int]
    #: window offset -> register name, for the reader.
    names: tuple[tuple[int, str], ...]
    #: the accesses ``(kind, window offset)`` with which the driver starts a request
    #: (the first after the previous request's last command is its start).
    starts: frozenset[tuple[str, int]] = frozenset()
    #: ... of which a write of 0 is none (an interrupt mask the handler clears).
    starts_nonzero: frozenset[int] = frozenset()
    #: a multi-block command with this bit set stops itself (auto stop): no CMD12 follows.
    autostop: int = 0

    def keep(self, region: str, window_offset: int) -> bool:
        """Whether an access of ``region`` at ``window_offset`` is the driver's to this host."""
        for name, offsets in self.regions:
            if name == region:
                return (offsets is None and 0 <= window_offset < 0x10000) or (
                    offsets is not None and window_offset in offsets)
        return False

    def starts_request(self, kind: str, offset: int, value: int) -> bool:
        """Whether the access is one the driver starts a request with."""
        return (kind, offset) in self.starts and (value != 0 or offset not in
                                                   self.starts_nonzero)

    def command(self, offset: int, size: int, value: int) -> int | None:
        """The command index a write issues, else None."""
        if offset != self.cmd_reg or not value & self.cmd_start or value & self.cmd_not:
            return None
        return value & 0x3F

    def reg_name(self, offset: int, size: int) -> str:
        """The register(s) an access spans, by name."""
        found = [n for off, n in self.names if offset <= off < offset + size]
        return "+".join(found) or next((n for off, n in self.names if off == offset), "?")


def _names(regs: tuple[Register, ...], at: int = 0) -> tuple[tuple[int, str], ...]:
    return tuple((at + r.offset, r.name) for r in regs)


#: Versatile Express A9: the system registers at 0 (SYS_MCI only: card detect and
#: write protect), the PL181 at 0x5000 (its FIFO answers at 0x80..0xBC, TRM 3.3.16).
PL181 = HostTrace(
    "pl181", (("pl181", None), ("arm-sysctl", frozenset({PL.sysreg(PL.SYS_MCI)}))),
    PL.mmci(PL.MCICOMMAND), PL.MCICOMMAND.mask("Enable"), 0, PL.mmci(PL.MCIARGUMENT),
    PL.mmci(PL.MCIRESPONSE[0]), frozenset(PL.mmci(o) for o in range(PL.FIFO_START,
                                                                      PL.FIFO_END, 4)),
    _names((*PL.MMCI_REGISTERS, PL.MCIFIFO, *PL.PERIPH_ID_REGISTERS), PL.MMCI_WINDOW.start)
    + _names((PL.SYS_MCI,)),
    # Linux drivers/mmc/host/mmci.c: mmci_start_data writes MMCIDATATIMER first,
    # mmci_start_command reads MMCICOMMAND first
    starts=frozenset({("w", PL.mmci(PL.MCIDATATIMER)), ("r", PL.mmci(PL.MCICOMMAND))}))
#: Raspberry Pi 2: the GPIO block at 0 (function select, levels), the SDHOST at 0x2000.
SDHOST = HostTrace(
    "sdhost", (("bcm2835-sdhost", None), ("bcm2835_gpio", None)),
    BS.host(BS.SDCMD), BS.SDCMD.mask("NEW_FLAG"), 0, BS.host(BS.SDARG), BS.host(BS.SDRSP[0]),
    frozenset({BS.host(BS.SDDATA)}),
    _names(BS.REGISTERS, BS.SDHOST_WINDOW.start) + _names(BS.GPIO_REGISTERS),
    # Linux drivers/mmc/host/bcm2835.c bcm2835_request reads SDEDM first
    starts=frozenset({("r", BS.host(BS.SDEDM))}))
#: Allwinner SMHC (sun5i on the H3): the window is the controller's.
SUNXI = HostTrace(
    "sunxi", (("allwinner-sdhost", None),),
    AW.SD_CMDR.offset, AW.SD_CMDR.mask("CMD_LOAD"), AW.SD_CMDR.mask("PRG_CLK"),
    AW.SD_CAGR.offset, AW.SD_RESP0.offset, frozenset({AW.SD_FIFO.offset}), _names(AW.REGISTERS),
    # Linux drivers/mmc/host/sunxi-mmc.c sunxi_mmc_request: a data request writes
    # REG_BLKSZ first, any request sets REG_IMASK (the handler clears it: 0);
    # U-Boot's drivers/mmc/sunxi_mmc.c writes no mask: the argument comes first
    starts=frozenset({("w", AW.SD_BKSR.offset), ("w", AW.SD_IMKR.offset),
                      ("w", AW.SD_CAGR.offset)}),
    starts_nonzero=frozenset({AW.SD_IMKR.offset}),
    autostop=AW.SD_CMDR.mask("STOP_CMD_FLAG"))
#: The A10's SMHC (QEMU's sun4i variant): the FIFO answers at 0x100 too, where
#: U-Boot's sunxi_mmc of a sun4i build moves its data.
SUNXI_A10 = replace(SUNXI, name="sunxi-a10",
                    data_ports=frozenset({AW.SD_FIFO.offset, AW.SD_THLDC.offset}),
                    names=tuple((o, "SD_FIFO" if o == AW.SD_THLDC.offset else n)
                                for o, n in SUNXI.names))
#: SDHCI (the PC's sdhci-pci, the i.MX uSDHC): conversion keeps its own code
#: (:mod:`harness.scenarios.drivers_convert`); the replay needs the registers below.
SDHCI = HostTrace(
    "sdhci", (("sdhci", None),), H.CMDREG.offset, 0, 0, H.ARGUMENT.offset, H.RSPREG0.offset,
    frozenset({H.BDATA.offset}), ())

#: The Cadence SD4HC (icicle): the SDHCI (region ``sdhci``) and the Host Register
#: Set below it (region ``cadence.sdhci``, hw/sd/cadence_sdhci.c), converted as an
#: SDHCI whose window starts at the SRS (the HRS at negative offsets, as the
#: board's Target has it: :mod:`harness.model.sdhci_cadence`).
CADENCE = replace(SDHCI, name="cadence", regions=(("sdhci", None), ("cadence.sdhci", None)))
#: The Aspeed SD controller (ast2600): a slot's SDHCI (region ``sdhci``) and the
#: wrapper's own registers 0x100 below it (region ``aspeed.sdhci``,
#: hw/sd/aspeed_sdhci.c), likewise at negative offsets.
ASPEED = replace(SDHCI, name="aspeed", regions=(("sdhci", None), ("aspeed.sdhci", None)))
#: The families converted by the SDHCI converter (:mod:`harness.scenarios.drivers_convert`)
#: and replayed as an SDHCI (their recordings name no ``host``).
SDHCI_FAMILY = frozenset({SDHCI.name, CADENCE.name, ASPEED.name})


#: SiFive's SPI controller (sifive_u's SPI2) with the card in SPI mode behind it:
#: no command, argument or response register (the card's commands are bytes of
#: TXDATA, :mod:`harness.scenarios.drivers_spi` decodes them); no RCA (no CMD3 in
#: SPI mode, PLS 7.3.1.3); the data ports are TXDATA and RXDATA.  Linux's
#: ``spi-sifive`` starts each SPI message by writing csdef.
SIFIVE_SPI = HostTrace(
    "sifive-spi", (("sifive.spi", None),), -1, 0, 0, -1, -1,
    frozenset({SP.TXDATA.offset, SP.RXDATA.offset}), _names(SP.REGISTERS),
    starts=frozenset({("w", SP.CSDEF.offset)}))

HOSTS = {h.name: h for h in (SDHCI, PL181, SDHOST, SUNXI, SUNXI_A10, CADENCE, ASPEED,
                              SIFIVE_SPI)}
