"""What each offset of a board's Target window reaches, per controller layout, as data.

A Target addresses its controller through one window of offsets; on most
boards that is the SDHCI's standard register file (SD Host Controller
Simplified Specification 2.1, :mod:`harness.hwdefs.sdhci`), on others it
holds the blocks the board wires to the card: the PL181 MMCI and the
Versatile Express system registers, the PL022 SSP and the PL061 GPIO port,
the BCM2835 SDHOST and the GPIO block, the Allwinner SMHC alone.  A
:class:`Layout` is that window as a list of :class:`Window` s, each a block's
registers (declared in the block's own hwdefs module) placed at the block's
start; :data:`LAYOUTS` holds one per :attr:`harness.hwdefs.boards.Board.variant`.
Reports name a register access with it (the lockstep's step lines, decoded
fields and finding signatures, the trackers' ``register:`` lines).

The SDHCI variants keep the standard map and add their vendor registers:
the uSDHC's own (:data:`harness.hwdefs.usdhc.OWN_REGISTERS`, in place of
the standard ones they replace), the NPCM7xx wrapper's window, the S3C
control registers, the Aspeed wrapper's registers below slot 0's window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.hwdefs import (
    allwinner,
    aspeed,
    cadence,
    npcm,
    omap_mmc,
    pl022,
    pl181,
    s3c,
    sdhci,
    sifive_spi,
    usdhc,
)
from harness.hwdefs import bcm2835_sdhost as sdhost
from harness.hwdefs.fields import Field, Register

if TYPE_CHECKING:
    from harness.hwdefs.boards import Board

__all__ = ["LAYOUTS", "Alias", "Layout", "Window", "layout", "layout_of"]


@dataclass(frozen=True)
class Alias:
    """``register`` answering at every ``stride`` bytes of ``[start, end)`` of
    its block (a data FIFO mirrored over a range); ``address``, when given,
    is a field of the access's offset that selects what it reaches (PL061
    GPIODATA: address bits [9:2] mask the pins), shown in :meth:`Layout.where`."""

    register: Register
    start: int
    end: int
    stride: int = 4
    address: Field | None = None


@dataclass(frozen=True)
class Window:
    """One block's registers, its offset 0 at ``start`` of the Target's window.

    ``word``: the block decodes its registers by aligned words of that many
    bytes (an APB peripheral's 32-bit registers, whatever bits they use): a
    register then covers its whole word.  ``label`` names the block in
    :meth:`Layout.where` (empty: the controller's own registers)."""

    label: str
    start: int
    size: int
    registers: tuple[Register, ...]
    word: int = 1
    aliases: tuple[Alias, ...] = ()

    def placed(self) -> list[tuple[Register, Alias | None]]:
        """Each register (each alias, at each of its offsets) at its offset in
        the Target's window, as wide as a word at least."""
        out: list[tuple[Register, Alias | None]] = [
            (self._place(r, r.offset), None) for r in self.registers]
        for a in self.aliases:
            out += [(self._place(a.register, off), a) for off in range(a.start, a.end, a.stride)]
        return out

    def _place(self, reg: Register, offset: int) -> Register:
        width = max(reg.width, self.word)
        if self.start == 0 and offset == reg.offset and width == reg.width:
            return reg
        return replace(reg, offset=self.start + offset, width=width)


class Layout:
    """A controller layout: its windows, and the register at each byte.

    Where windows overlap, the first declared wins (a vendor register over
    the standard one it replaces).  ``data_port``, ``responses`` and
    ``identity`` name the registers a finding's harm is judged by
    (:func:`harness.check.scoreboard.harm`)."""

    def __init__(self, name: str, windows: tuple[Window, ...], *, data_port: str = "",
                 responses: tuple[str, ...] = (), identity: tuple[str, ...] = ()) -> None:
        self.name = name
        self.windows = windows
        self.data_port = data_port
        self.responses = responses
        self.identity = identity
        self._by_byte: dict[int, Register] = {}
        self._alias: dict[int, Alias] = {}
        for w in windows:
            for reg, alias in w.placed():
                for b in range(reg.offset, reg.offset + reg.width):
                    if b not in self._by_byte:
                        self._by_byte[b] = reg
                        if alias is not None:
                            self._alias[b] = alias

    def register_at(self, offset: int) -> Register | None:
        """The register whose bytes include ``offset``, or None for a hole."""
        return self._by_byte.get(offset)

    def registers_in(self, offset: int, size: int) -> tuple[Register, ...]:
        """Every register an access of ``size`` bytes at ``offset`` touches,
        in address order (each placed at its offset in the Target's window)."""
        out: list[Register] = []
        for a in range(offset, offset + size):
            r = self._by_byte.get(a)
            if r is not None and r not in out:
                out.append(r)
        return tuple(out)

    def where(self, offset: int) -> str:
        """``MCIStatus (MMCI +0x034)``: what ``offset`` reaches, in its block."""
        for w in self.windows:
            if w.start <= offset < w.start + w.size:
                break
        else:
            labels = " and ".join(w.label for w in self.windows if w.label) or "controller's"
            return f"{offset:#x}: outside the {labels} window{'s' * (' and ' in labels)}"
        inner = offset - w.start
        at = f"{w.label} +{inner:#05x}".lstrip()
        reg = self._by_byte.get(offset)
        if reg is None or not w.start <= reg.offset < w.start + w.size:
            return f"{at} (no register)"
        alias = self._alias.get(offset)
        if alias is not None and alias.address is not None:
            at += f", {alias.address.name} {alias.address.get(inner):#04x}"
        return f"{reg.name} ({at})"


_SDHCI = Window("", 0, 0x100, sdhci.REGISTERS)
_SDHCI_RSP = tuple(r.name for r in (sdhci.RSPREG0, sdhci.RSPREG1, sdhci.RSPREG2, sdhci.RSPREG3))
_SDHCI_ID = tuple(r.name for r in (sdhci.CAPAB, sdhci.MAXCURR, sdhci.HCVER,
                                   sdhci.SLOT_INT_STATUS))


def _sdhci(name: str, before: tuple[Window, ...] = (), after: tuple[Window, ...] = (),
           identity: tuple[Register, ...] = ()) -> Layout:
    """The standard SDHCI map with a variant's windows ``before`` it (which win
    where they overlap) and ``after`` it (which fill its holes)."""
    return Layout(name, (*before, _SDHCI, *after), data_port=sdhci.BDATA.name,
                  responses=_SDHCI_RSP, identity=(*_SDHCI_ID, *(r.name for r in identity)))


_GPIODATA = Alias(pl022.GPIODATA, 0, pl022.GPIODIR.offset,
                  address=Field("pins", 2, 8, doc="PL061 TRM 3.3.1: the pins an access reaches"))

#: One layout per ``Board.variant`` (the PC's sdhci-pci: ``sdhci``).
LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (
    _sdhci("sdhci"),
    _sdhci("usdhc", before=(Window("", 0, 0x100, usdhc.OWN_REGISTERS),)),
    _sdhci("npcm", after=(Window("", 0, 0x100, (*npcm.PRSTVALS, npcm.BOOTTOCTRL)),)),
    _sdhci("s3c", after=(Window("", 0, 0x100, tuple(s3c.VENDOR_REGISTERS.values())),)),
    _sdhci("aspeed", before=(Window("wrapper", -aspeed.SLOT_STRIDE, aspeed.SLOT_STRIDE,
                                    aspeed.WRAPPER_REGISTERS, word=4),),
           identity=(aspeed.SDC_S0_CAP1, aspeed.SDC_S0_CAP2, aspeed.SDC_S0_MAXCURR,
                     aspeed.SDC_S1_CAP1, aspeed.SDC_S1_CAP2, aspeed.SDC_S1_MAXCURR)),
    _sdhci("cadence", before=(Window("HRS", -cadence.SRS_BASE, cadence.HRS_SIZE,
                                     cadence.HRS_REGISTERS, word=4),)),
    # The card's data and its responses share SSPDR: no data port of its own.
    Layout("spi", (Window("PL061", pl022.GPIO_WINDOW.start, len(pl022.GPIO_WINDOW),
                          (pl022.GPIODIR,), word=4, aliases=(_GPIODATA,)),
                   Window("PL022", pl022.SSP_WINDOW.start, len(pl022.SSP_WINDOW),
                          (*pl022.SSP_REGISTERS, *pl022.SSP_ID_REGISTERS), word=4)),
           identity=tuple(r.name for r in pl022.SSP_ID_REGISTERS)),
    Layout("pl181", (Window("system registers", pl181.SYSREG_WINDOW.start,
                            len(pl181.SYSREG_WINDOW), (pl181.SYS_ID, pl181.SYS_MCI), word=4),
                     Window("MMCI", pl181.MMCI_WINDOW.start, len(pl181.MMCI_WINDOW),
                            (*pl181.MMCI_REGISTERS, *pl181.PERIPH_ID_REGISTERS), word=4,
                            aliases=(Alias(pl181.MCIFIFO, pl181.FIFO_START, pl181.FIFO_END),))),
           data_port=pl181.MCIFIFO.name, responses=tuple(r.name for r in pl181.MCIRESPONSE),
           identity=tuple(r.name for r in pl181.PERIPH_ID_REGISTERS)),
    Layout("allwinner", (Window("", 0, allwinner.WINDOW, allwinner.REGISTERS, word=4),),
           data_port=allwinner.SD_FIFO.name,
           responses=tuple(r.name for r in (allwinner.SD_RESP0, allwinner.SD_RESP1,
                                            allwinner.SD_RESP2, allwinner.SD_RESP3))),
    Layout("sdhost", (Window("GPIO", sdhost.GPIO_WINDOW.start, len(sdhost.GPIO_WINDOW),
                             sdhost.GPIO_REGISTERS, word=4),
                      Window("SDHOST", sdhost.SDHOST_WINDOW.start, len(sdhost.SDHOST_WINDOW),
                             sdhost.REGISTERS, word=4)),
           data_port=sdhost.SDDATA.name, responses=tuple(r.name for r in sdhost.SDRSP)),
    Layout("omap-mmc", (Window("", 0, omap_mmc.WINDOW, omap_mmc.MMC_REGISTERS),),
           data_port=omap_mmc.MMC_DATA.name, responses=tuple(r.name for r in omap_mmc.MMC_RSP)),
    # As the PL022's: the card's bytes and responses share txdata/rxdata.
    Layout("sifive-spi", (Window("", 0, sifive_spi.WINDOW, sifive_spi.REGISTERS, word=4),)),
)}


def layout(name: str) -> Layout:
    """The layout called ``name`` (a ``Board.variant``)."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise KeyError(f"no register layout {name!r} (known: {', '.join(LAYOUTS)})") from None


def layout_of(board: Board | None) -> Layout:
    """The layout of ``board``'s controller (``None``: the PC's sdhci-pci)."""
    return layout(board.variant if board is not None else "sdhci")
