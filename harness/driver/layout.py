"""How the driver reaches the registers whose place a controller's layout
moves: the variant hook of the one driver written against Target.

:class:`StandardLayout` is the SD Host Controller Specification's (2.2.5,
2.2.6, 2.2.10); :class:`UsdhcLayout` programs an i.MX uSDHC as a uSDHC
driver does (Linux ``drivers/mmc/host/sdhci-esdhc-imx.c``; registers from
:mod:`harness.hwdefs.usdhc`): the transfer mode goes to MIX_CTRL, the command
is one 32-bit write of CMD_XFR_TYP with the command in its upper half, and
Host Control 1 is the PROT_CTRL layout (DTW, DMASEL at bits 9:8, no High
Speed Enable).  The driver asks and writes in standard terms; the layout
translates.
"""

from __future__ import annotations

from typing import Protocol

from harness.hwdefs import sdhci as H
from harness.hwdefs import usdhc as U
from harness.hwdefs.boards import Board, ByVariant
from harness.hwdefs.fields import Register

__all__ = ["HOSTS", "DRIVER_LAYOUTS", "StandardLayout", "UsdhcLayout", "layout_for"]


class _Registers(Protocol):
    def rd(self, reg: Register, size: int | None = None, *, byte: int = 0) -> int: ...

    def wr(self, reg: Register, value: int, size: int | None = None, *,
           byte: int = 0) -> None: ...


class StandardLayout:
    """The standard register layout (every SDHCI variant not in :data:`DRIVER_LAYOUTS`)."""

    #: Transfer Complete follows a busy response without data (2.2.17).
    busy_irq = True

    def host_control(self, c: _Registers) -> int:
        """Host Control 1 in the standard layout (2.2.10)."""
        return c.rd(H.HOSTCTL)

    def set_host_control(self, c: _Registers, value: int) -> None:
        c.wr(H.HOSTCTL, value)

    def issue(self, c: _Registers, trnmod: int | None, cmdreg: int) -> None:
        """Transfer Mode (when given), then the Command register write that
        issues the command (3.7.1.1 steps 5, 6)."""
        if trnmod is not None:
            c.wr(H.TRNMOD, trnmod)
        c.wr(H.CMDREG, cmdreg)


#: The layout of each SDHCI variant that moves registers (``Board.variant``),
#: bound with ``@DRIVER_LAYOUTS.controller(variant)`` on its class.
DRIVER_LAYOUTS: ByVariant[type[StandardLayout]] = ByVariant("driver register layout")
#: The host driver of each non-SDHCI controller (``Board.variant``), bound
#: with ``@HOSTS.controller(variant)`` on its class; its scenario group
#: (``Board.group``) drives it.
HOSTS: ByVariant[type] = ByVariant("host driver")

_DTW, _DMASEL = U.PROT_CTRL.field("DTW"), U.PROT_CTRL.field("DMASEL")
_STD_DMASEL = H.HOSTCTL.field("DMASEL")
#: PROT_CTRL bits with the standard meaning and place: LCTL, CDTL, CDSS.
_SAME = U.PROT_CTRL.mask("LCTL", "CDTL", "CDSS")


@DRIVER_LAYOUTS.controller("usdhc")
class UsdhcLayout(StandardLayout):
    """The i.MX uSDHC layout, programmed as Linux's esdhc-imx driver does."""

    #: Linux sets SDHCI_QUIRK_NO_BUSY_IRQ for the i.MX controllers: the end of
    #: busy is not an interrupt there.
    busy_irq = False

    def host_control(self, c: _Registers) -> int:
        """PROT_CTRL read back as standard Host Control 1 bits."""
        prot = c.rd(U.PROT_CTRL)
        dtw = _DTW.get(prot)
        out = prot & _SAME | _STD_DMASEL.put(0, _DMASEL.get(prot))
        if dtw == U.DTW_4BIT:
            out |= H.HOSTCTL_WIDTH4
        elif dtw == U.DTW_8BIT:
            out |= H.HOSTCTL_WIDTH8
        return out

    def set_host_control(self, c: _Registers, value: int) -> None:
        """Standard Host Control 1 bits as a 32-bit PROT_CTRL write that keeps
        the upper half (Block Gap, Wakeup Control); High Speed has no bit."""
        dtw = (U.DTW_8BIT if value & H.HOSTCTL_WIDTH8
               else U.DTW_4BIT if value & H.HOSTCTL_WIDTH4 else U.DTW_1BIT)
        prot = c.rd(U.PROT_CTRL) & ~0xFFFF
        prot |= value & _SAME | _DTW.put(0, dtw) | _DMASEL.put(0, _STD_DMASEL.get(value))
        c.wr(U.PROT_CTRL, prot)

    def issue(self, c: _Registers, trnmod: int | None, cmdreg: int) -> None:
        """The transfer mode into MIX_CTRL, then CMD_XFR_TYP with the command
        in its upper half (its lower half is reserved on the uSDHC)."""
        if trnmod is not None:
            c.wr(U.MIX_CTRL, trnmod)
        c.wr(U.CMD_XFR_TYP, cmdreg << 16)


def layout_for(board: Board | None) -> StandardLayout:
    """The layout of ``board``'s controller (None: sdhci-pci, standard)."""
    return DRIVER_LAYOUTS.get(board.variant if board is not None else "sdhci", StandardLayout)()
