"""The SDHCI controller model: sdhci-pci as QEMU implements it.

Registers follow ``harness.hwdefs.sdhci``; behaviour follows QEMU's
``hw/sd/sdhci.c`` as observed (the model is written from the SD Host
Controller Simplified Specification 3.00 and those observations).  Where
QEMU departs from the specification the model follows QEMU, or the
specification in strict mode; see :mod:`harness.ledger.sdhci`.  Version
differences are selected by ``profile.version``:

* before 10.0: SDMA raises DMA Interrupt only when it stops at a buffer
  boundary; an SDMA started by an SDMASYSAD write takes the multi-block path
  whenever Multi Block Select is set (boundary ``sdhci.sdma-rework``);
* from 11.1.2: without UHS, HOSTCTL2 bit 12 alone is writable
  (boundary ``sdhci.hostctl2-v4en-without-uhs``).

ADMA runs at most five descriptors per step and continues 100 ns later on
the shared VirtualClock, or earlier when any register access runs the
pending step first, as QEMU's transfer timer does.  Two model-only devices
keep Python fast without changing what a guest sees: a chain that only
repeats Nop/Link descriptors is parked (re-armed on the same 100 ns grid by
a guest memory write, or run by a register access), and more than
``step_budget`` timer steps without guest interaction stop the transfer and
set ``hung`` (QEMU would keep spinning).

Accesses: :meth:`SDHCI.read` / :meth:`SDHCI.write` take what QEMU's
MemoryRegionOps receive: 1, 2 or 4 bytes, naturally aligned, offsets within
the 256-byte window.  Larger or misaligned guest accesses are split by the
memory core before they get here (see ``harness.model.target``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping

from harness.hwdefs import sdhci as H
from harness.hwdefs.boards import ByVariant
from harness.hwdefs.fields import Register
from harness.ledger import boundaries
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.sdhci_dma import SdhciDma
from harness.model.sdhci_state import (
    GAP_READ,
    GAP_WRITE,
    INSERTION_DELAY_NS,
    NOT_STOPPED,
    U8,
    U16,
    U32,
    U64,
    SDBusCard,
    SDHCIConfigError,
)
from harness.profile import NEWEST, BuildProfile

__all__ = ["CONTROLLERS", "SDHCI", "SDHCIConfigError", "SDBusCard"]

#: The controller model of each SDHCI register layout (``Board.variant``),
#: bound with ``@CONTROLLERS.controller(variant)`` on the model's class.
CONTROLLERS: ByVariant[type[SDHCI]] = ByVariant("SDHCI model")

_TRANSFER_BITS = H.PRNSTS_READ_ACTIVE | H.PRNSTS_WRITE_ACTIVE


@CONTROLLERS.controller("sdhci")
class SDHCI(SdhciDma):
    """sdhci-pci: the controller, its buffer and its interrupt line.

    ``card`` is the SD card on the controller's bus (``None``: empty bus),
    ``memory`` what its DMA reaches.  ``sd_spec_version``, ``capareg``,
    ``maxcurr`` and ``uhs_mode`` are the device properties (left at None:
    the model's defaults for ``machine`` on ``profile``'s version, see
    :func:`harness.model.compat.defaults_for`); bad values raise
    :class:`SDHCIConfigError` as realize fails in QEMU.
    """

    #: Transfer Complete after a response with busy (R1b) without data
    #: (2.2.17); QEMU's i.MX controllers leave it out (``SDHCI_QUIRK_NO_BUSY_IRQ``).
    busy_irq = True

    def __init__(self, clock: VirtualClock, card: SDBusCard | None, memory: GuestMemory, *,
                 profile: BuildProfile = NEWEST, sd_spec_version: int | str | None = None,
                 capareg: int | str | None = None, maxcurr: int | str | None = None,
                 uhs_mode: int | str | None = None, strict: Strictness = False,
                 machine: str | None = None, pending_insert_quirk: bool = False,
                 wp_inverted: bool = False, vendor: int | str | None = None) -> None:
        #: The property ``vendor`` (up to QEMU 10.2; 0: none).
        self.vendor = 0 if vendor is None else int(str(vendor), 0)
        super().__init__(clock, card, memory, profile=profile, sd_spec_version=sd_spec_version,
                         capareg=capareg, maxcurr=maxcurr, uhs_mode=uhs_mode, strict=strict,
                         machine=machine)
        #: The sysbus property ``wp-inverted`` (QEMU 10.0 and later; Aspeed's
        #: EVBs set it): the board's write-protect signal is active low, so
        #: Write Protect Switch Pin Level reads inverted.
        self.wp_inverted = bool(wp_inverted)
        #: The sysbus property a Raspberry Pi sets (hw/arm/bcm2835_peripherals.c):
        #: after a power-on reset (not a Software Reset), the first write that
        #: enables Card Insertion status latches a Card Insertion interrupt.
        self.pending_insert_quirk = bool(pending_insert_quirk)
        self.reset()
        self.pending_insert = self.pending_insert_quirk

    @classmethod
    def board_capareg(cls, props: Mapping[str, object], profile: BuildProfile) -> int:
        """Capabilities of this controller as a board sets ``props`` on a
        build of ``profile`` (a variant whose value changes by version says so)."""
        return int(str(props["capareg"]), 0)

    # -- resets and card events (2.2.16; QEMU's set_inserted/set_readonly) --

    def reset(self) -> None:
        """Power-on reset and Software Reset For All: timers stopped, every
        register but capabilities/version cleared, card state re-sampled."""
        if self._insert_timer is not None:
            self._insert_timer.cancel()
            self._insert_timer = None
        self.cancel_transfer_timer()
        self._clear_registers()
        self.pending_insert = False  # only a power-on reset arms the quirk
        self.set_inserted(self.card_inserted())
        self.set_readonly(self.card_readonly())
        fsl = boundaries.SDHCI_VENDOR_FSL.since
        if self.vendor == H.VENDOR_FSL and self.profile.version >= fsl:
            # after the card's state is re-sampled: no Card Insertion latched
            self.norintstsen = H.FSL_RESET_NORINTSTSEN
            self.errintstsen = H.FSL_RESET_ERRINTSTSEN

    def set_inserted(self, level: bool) -> None:
        """The card was inserted (``level``) or removed.

        An insertion while Card Removal is still pending is reported one
        second later, once the guest has acknowledged the removal.
        """
        if self.norintsts & H.NIS_CARDREM and level:
            self._arm_insert_timer()
            return
        if level:
            self.prnsts = H.PRNSTS_CARD_PRESENT
            self.set_nis(H.NIS_CARDINS)
        else:
            self.prnsts = H.PRNSTS_NO_CARD
            self.pwrcon &= ~H.PWRCON_POWER_ON
            self.clkcon &= ~H.CLKCON_SDCLK_EN
            self.set_nis(H.NIS_CARDREM)
        self.update_irq()

    def _arm_insert_timer(self) -> None:
        if self._insert_timer is not None:
            self._insert_timer.cancel()
        self._insert_timer = self.clock.schedule(INSERTION_DELAY_NS, self._insertion_timer)

    def _insertion_timer(self) -> None:
        self._insert_timer = None
        if self.norintsts & H.NIS_CARDREM:
            self._arm_insert_timer()
            return
        self.prnsts = H.PRNSTS_CARD_PRESENT
        self.set_nis(H.NIS_CARDINS)
        self.update_irq()

    def set_readonly(self, level: bool) -> None:
        """Write Protect Switch Pin Level (2.2.9): 1 when the card is
        writable, unless the board inverts the signal (``wp_inverted``)."""
        if level != self.wp_inverted:
            self.prnsts &= ~H.PRNSTS_WRITEPROTECT
        else:
            self.prnsts |= H.PRNSTS_WRITEPROTECT

    def card_changed(self) -> None:
        """The card's medium changed: report insertion/removal, then the
        write-protect state of an inserted card."""
        inserted = self.card_inserted()
        self.set_inserted(inserted)
        if inserted:
            self.set_readonly(self.card_readonly())

    def _software_reset(self, value: int) -> None:
        if self.qemu("sdhci.swrst-single-bit"):
            if value == H.SWRST_ALL:
                self.reset()
            elif value == H.SWRST_CMD:
                self._reset_cmd()
            elif value == H.SWRST_DAT:
                self._reset_dat()
            return
        if value & H.SWRST_ALL:
            self.reset()
            return
        if value & H.SWRST_CMD:
            self._reset_cmd()
        if value & H.SWRST_DAT:
            self._reset_dat()

    def _reset_cmd(self) -> None:
        self.prnsts &= ~H.PRNSTS_CMDINHIBIT
        self.norintsts &= ~H.NIS_CMDCMPL

    def _reset_dat(self) -> None:
        self.data_count = 0
        self.prnsts &= ~(H.PRNSTS_BUFWRRDY | H.PRNSTS_BUFRDRDY | _TRANSFER_BITS
                         | H.PRNSTS_DATINHIBIT | H.PRNSTS_DATLINEACTIVE)
        self.blkgap &= ~(H.BLKGAP_STOP | H.BLKGAP_CONTINUE)
        self.stopped_state = NOT_STOPPED
        self.sdma_paused = False
        self.norintsts &= ~(H.NIS_WBUFRDY | H.NIS_RBUFRDY | H.NIS_DMAINT | H.NIS_TRNSCMPL
                            | H.NIS_BLKGAP)
        if not self.qemu("sdhci.dat-reset-keeps-adma"):
            self.cancel_transfer_timer()
            self.adma1_length = None

    # -- commands (2.2.6, 1.5) ----------------------------------------------

    def can_issue_command(self) -> bool:
        """SD clock on, and no DAT-line command while the DAT line is busy or
        stopped at a block gap (abort commands excepted for R1b)."""
        clk = H.CLKCON_INTCLK_EN | H.CLKCON_INTCLK_STABLE | H.CLKCON_SDCLK_EN
        if self.clkcon & clk != clk:
            return False
        if self.prnsts & H.PRNSTS_DATINHIBIT or self.stopped_state:
            if self.cmdreg & H.CMD_DATA_PRESENT:
                return False
            if (_RSPTYP.get(self.cmdreg) == H.RSP_48_BUSY
                    and (self.cmdreg & H.CMD_TYPE_ABORT) != H.CMD_TYPE_ABORT):
                return False
        return True

    def send_command(self) -> None:
        """Issue CMDREG/ARGUMENT to the card, store the response, raise
        Command Complete (or Command Timeout), start the data phase."""
        if self.qemu("sdhci.errintsts-cleared-by-cmd"):
            self.errintsts = 0
            self.acmd12errsts = 0
        resp = self.card_command(self.cmdreg >> 8, self.argument)
        timeout = False
        rsp_type = _RSPTYP.get(self.cmdreg)
        if rsp_type:
            # A response rewrites the registers (SDHC 2.2.7); on a timeout
            # they keep what they held, an undefined Auto CMD12 value too.
            if len(resp) in (4, 16):
                self.rspreg3_undefined = False
            if len(resp) == 4:
                self.rspreg = [int.from_bytes(resp, "big"), 0, 0, 0]
            elif len(resp) == 16:
                self.rspreg = [int.from_bytes(resp[11:15], "big"),
                               int.from_bytes(resp[7:11], "big"),
                               int.from_bytes(resp[3:7], "big"),
                               int.from_bytes(resp[0:3], "big")]
            else:
                timeout = True
                self.raise_error(H.EIS_CMDTOUT)
            if self.busy_irq and rsp_type == H.RSP_48_BUSY and (
                    not timeout or self.qemu("sdhci.cmd-timeout-cmdcmpl")):
                self.set_nis(H.NIS_TRNSCMPL)
        if not timeout or self.qemu("sdhci.cmd-timeout-cmdcmpl"):
            self.set_nis(H.NIS_CMDCMPL)
        self.update_irq()
        if not timeout and self.block_size and self.cmdreg & H.CMD_DATA_PRESENT:
            self.data_count = 0
            self.data_transfer()

    # -- data phase dispatch ------------------------------------------------

    def data_transfer(self) -> None:
        """Start/continue the transfer per DMA Enable and DMA Select (1.7)."""
        if self.trnmod & H.TRNMOD_DMA:
            kind = self.hostctl1 & H.HOSTCTL_DMA_MASK
            cap = self.capareg
            if kind == H.HOSTCTL_DMA_SDMA:
                self.sdma_transfer()
            elif kind == H.HOSTCTL_DMA_ADMA1:
                if cap & H.CAPAB.mask("ADMA1"):
                    self.do_adma()
            elif kind == H.HOSTCTL_DMA_ADMA2_32:
                if cap & H.CAPAB.mask("ADMA2"):
                    self.do_adma()
            elif cap & H.CAPAB.mask("ADMA2") and cap & H.CAPAB.mask("BUS64BIT"):
                self.do_adma()
            return
        if self.trnmod & H.TRNMOD_READ and self.card_data_ready():
            self.prnsts |= (H.PRNSTS_READ_ACTIVE | H.PRNSTS_DATINHIBIT
                            | H.PRNSTS_DATLINEACTIVE)
            self.read_block_from_card()
        elif self.trnmod & H.TRNMOD_READ and not self.qemu("sdhci.pio-read-not-ready"):
            self.raise_error(H.EIS_DATTOUT)
            self.update_irq()
        else:
            self.prnsts |= (H.PRNSTS_WRITE_ACTIVE | H.PRNSTS_DATLINEACTIVE
                            | H.PRNSTS_BUFWRRDY | H.PRNSTS_DATINHIBIT)
            self.write_block_to_card()

    # -- PIO (1.7.1, 2.2.8) -------------------------------------------------

    def _multi(self) -> bool:
        return bool(self.trnmod & H.TRNMOD_MULTI)

    def _cnt_en(self) -> bool:
        return bool(self.trnmod & H.TRNMOD_BLKCNT_EN)

    def read_block_from_card(self) -> None:
        """Fill the buffer with one block and raise Buffer Read Ready."""
        if self._multi() and self._cnt_en() and self.blkcnt == 0:
            return
        tuning = H.HOSTCTL2.field("EXECTUNING")
        if tuning.get(self.hostctl2):
            self.hostctl2 = tuning.put(self.hostctl2, 0) | H.HOSTCTL2.mask("SMPLCLKSEL")
            self.prnsts &= ~(H.PRNSTS_DATLINEACTIVE | H.PRNSTS_READ_ACTIVE
                             | H.PRNSTS_DATINHIBIT)
            self.update_irq()
            return
        bs = self.block_size
        self.fifo[:bs] = self.card_read(bs)
        self.prnsts |= H.PRNSTS_BUFRDRDY
        self.set_nis(H.NIS_RBUFRDY)
        if not self._multi() or self.blkcnt == 1:
            self.prnsts &= ~H.PRNSTS_DATLINEACTIVE
        if self.stopped_state == GAP_READ and self._multi() and self.blkcnt != 1:
            self.prnsts &= ~H.PRNSTS_DATLINEACTIVE
            self.set_nis(H.NIS_BLKGAP)
        self.update_irq()

    def read_run(self, count: int) -> list[int]:
        """Up to ``count`` 32-bit Buffer Data Port reads (2.2.8) that stay
        inside the current block, taken at once: the values :meth:`read`
        would give, in order, and the buffer index moved past them.  It
        stops before the read that ends the block (which fetches the next
        one or ends the transfer), and gives none where the next read would
        do more than take bytes (a transfer step pending, no buffer ready, a
        buffer index off the dword the access expects).  A front end whose
        data port is not the standard one overrides this."""
        if not self.prnsts & H.PRNSTS_BUFRDRDY or self.data_count & 3 or self.transfer_pending():
            return []
        dc = self.data_count
        n = min(count, (min(self.block_size - 1, self.buf_maxsz) - dc) // 4)
        if n <= 0:
            return []
        self.timer_steps = 0
        self.data_count = dc + 4 * n
        return list(struct.unpack_from(f"<{n}I", self.fifo, dc))

    def read_dataport(self, size: int) -> int:
        """Take ``size`` bytes from the buffer; the last byte of a block ends
        the access and fetches the next block (or ends the transfer)."""
        if not self.prnsts & H.PRNSTS_BUFRDRDY:
            return 0
        dc = self.data_count
        if dc + size < self.block_size and dc + size <= self.buf_maxsz:
            # Inside the block (the loop's every check passes): the bytes at once.
            self.data_count = dc + size
            return int.from_bytes(self.fifo[dc:dc + size], "little")
        value = 0
        for i in range(size):
            if self.data_count >= self.buf_maxsz:
                self.hung = "buffer index past the controller's buffer (QEMU asserts)"
                return value
            value |= self.fifo[self.data_count] << (8 * i)
            self.data_count += 1
            if self.data_count >= self.block_size:
                self.prnsts &= ~H.PRNSTS_BUFRDRDY
                self.data_count = 0
                if self._cnt_en():
                    self.blkcnt = (self.blkcnt - 1) & U16
                if (not self._multi() or (self._cnt_en() and self.blkcnt == 0)
                        or (self.stopped_state == GAP_READ
                            and not self.prnsts & H.PRNSTS_DATLINEACTIVE)):
                    self.end_transfer()
                else:
                    self.read_block_from_card()
                break
        return value

    def write_block_to_card(self) -> None:
        """Send the buffered block to the card, or signal Buffer Write Ready
        when the buffer is (still) free."""
        if self.prnsts & H.PRNSTS_BUFWRRDY:
            self.set_nis(H.NIS_WBUFRDY)
            self.update_irq()
            return
        if self._cnt_en():
            if self.blkcnt == 0:
                return
            self.blkcnt -= 1
        self.card_write(bytes(self.fifo[:self.block_size]))
        self.prnsts |= H.PRNSTS_BUFWRRDY
        if not self._multi() or (self._cnt_en() and self.blkcnt == 0):
            self.end_transfer()
        else:
            self.set_nis(H.NIS_WBUFRDY)
        if self.stopped_state == GAP_WRITE and self._multi() and self.blkcnt > 0:
            self.prnsts &= ~H.PRNSTS_WRITE_ACTIVE
            self.set_nis(H.NIS_BLKGAP)
            self.end_transfer()
        self.update_irq()

    def write_dataport(self, value: int, size: int) -> None:
        """Put ``size`` bytes into the buffer; a full block goes to the card."""
        if not self.prnsts & H.PRNSTS_BUFWRRDY:
            return
        dc = self.data_count
        if dc + size < self.block_size and dc + size <= self.buf_maxsz:
            # Inside the block (the loop's every check passes): the bytes at once.
            self.fifo[dc:dc + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
            self.data_count = dc + size
            return
        for _ in range(size):
            if self.data_count >= self.buf_maxsz:
                self.hung = "buffer index past the controller's buffer (QEMU asserts)"
                return
            self.fifo[self.data_count] = value & 0xFF
            self.data_count += 1
            value >>= 8
            if self.data_count >= self.block_size:
                self.data_count = 0
                self.prnsts &= ~H.PRNSTS_BUFWRRDY
                if self.prnsts & H.PRNSTS_WRITE_ACTIVE:
                    self.write_block_to_card()

    def _bdata_sequential(self, byte: int) -> bool:
        """The Buffer Data Port must be accessed at the byte that comes next."""
        return (self.data_count & 3) == byte

    # -- block gap (2.2.12) -------------------------------------------------

    def _blkgap_write(self, value: int) -> None:
        if value & H.BLKGAP_STOP and self.blkgap & H.BLKGAP_STOP:
            return
        self.blkgap = value & H.BLKGAP_STOP
        if not self.qemu("sdhci.blkgap-rw-bits"):
            self.blkgap |= value & _BLKGAP_RW
        if (value & H.BLKGAP_CONTINUE and self.stopped_state
                and not self.blkgap & H.BLKGAP_STOP):
            if self.stopped_state == GAP_READ:
                self.prnsts |= H.PRNSTS_DATLINEACTIVE | H.PRNSTS_READ_ACTIVE
                self.read_block_from_card()
            else:
                self.prnsts |= H.PRNSTS_DATLINEACTIVE | H.PRNSTS_WRITE_ACTIVE
                self.write_block_to_card()
            self.stopped_state = NOT_STOPPED
        elif not self.stopped_state and value & H.BLKGAP_STOP:
            if self.prnsts & H.PRNSTS_READ_ACTIVE:
                self.stopped_state = GAP_READ
            elif self.prnsts & H.PRNSTS_WRITE_ACTIVE:
                self.stopped_state = GAP_WRITE

    # -- MMIO ---------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        """A 1/2/4-byte aligned read inside the register window."""
        self.timer_steps = 0
        self.resume_pending_transfer()
        base = offset & ~3
        if base == H.BDATA.offset:
            if self._bdata_sequential(offset - base):
                return self.read_dataport(size)
            return 0
        reader = _WORD_READERS.get(base)
        word = 0 if reader is None else reader(self)
        return (word >> ((offset & 3) * 8)) & ((1 << (size * 8)) - 1)

    def read_outside(self, offset: int, size: int) -> int:
        """A read outside the register window: what a board maps there (a
        wrapper's own registers); nothing here, so QEMU's unassigned memory
        (reads 0)."""
        return 0

    def write_outside(self, offset: int, size: int, value: int) -> None:
        """A write outside the register window (see :meth:`read_outside`): dropped."""

    def _read_prnsts(self) -> int:
        """Present State with the live DAT[3:0] and CMD line levels (2.2.9)."""
        return (self.prnsts & _NOT_LINE_LEVELS | self.dat_lines() << _DATLVL_LSB
                | int(self.cmd_line()) << _CMDLVL_LSB)

    def write(self, offset: int, size: int, value: int) -> None:
        """A 1/2/4-byte aligned write inside the register window."""
        self.write_unmasked(offset, size, value & ((1 << (size * 8)) - 1))

    def write_unmasked(self, offset: int, size: int, value: int) -> None:
        """:meth:`write` with ``value`` taken as given, bits beyond ``size``
        included, as ``sdhci_write`` takes what a vendor front end hands it
        (the i.MX one ORs bits in after the memory core sized the access)."""
        shift = 8 * (offset & 3)
        width = (1 << (size * 8)) - 1
        mask = ~(width << shift) & U32
        value = (value << shift) & U32
        self.timer_steps = 0
        self.resume_pending_transfer()
        handler = _WORD_WRITERS.get(offset & ~3)
        if handler is not None:
            handler(self, offset, shift, mask, value, size)

    # Each writer takes the whole 32-bit word holding the access, as sdhci's
    # MMIO handler does: ``mask`` keeps the bits not written, ``value`` holds
    # the written ones, both positioned in the word.

    @staticmethod
    def _mw(reg: int, mask: int, value: int, width: int) -> int:
        """Keep the bits of ``reg`` under ``mask``, OR in ``value``, truncate."""
        return ((reg & mask) | value) & width

    def _w_sysad(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self.transferring() and self.qemu("sdhci.sdma-sysad-ignored-while-active"):
            return
        self.sdmasysad = self._mw(self.sdmasysad, mask, value, U32)
        if (not mask & _lane(H.SDMASYSAD, 3) and self.blkcnt and self.block_size
                and self.hostctl1 & H.HOSTCTL_DMA_MASK == H.HOSTCTL_DMA_SDMA):
            if self.qemu("sdhci.sdma-sysad-starts-transfer") or self.sdma_paused:
                self.sdma_paused = False
                self.sdma_transfer(from_sysad=True)

    def _w_blksize(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self.transferring():
            return
        old = self.blksize
        self.blksize = self._mw(self.blksize, mask, value & _BLKSIZE_WRITABLE, U16)
        self.blkcnt = self._mw(self.blkcnt, mask >> _BLKCNT_SH, value >> _BLKCNT_SH, U16)
        if self.block_size > self.buf_maxsz:
            self.blksize = (self.blksize & ~H.BLKSIZE_SIZE_MASK) | self.buf_maxsz
        if old != self.blksize:
            self.data_count = 0

    def _w_argument(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        self.argument = self._mw(self.argument, mask, value, U32)

    def _w_trnmod(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if not self.capareg & H.CAPAB.mask("SDMA"):
            value &= ~H.TRNMOD_DMA
        if self.prnsts & H.PRNSTS_DATINHIBIT:
            if self.qemu("sdhci.trnmod-inhibit-or"):
                mask |= U16
            else:
                mask |= U16
                value &= ~U16
        self.trnmod = self._mw(self.trnmod, mask, value & _TRNMOD_WRITABLE, U16)
        cmd = value >> _CMDREG_SH
        if not self.qemu("sdhci.reserved-bits-writable"):
            cmd &= ~_CMDREG_RSVD
        self.cmdreg = self._mw(self.cmdreg, mask >> _CMDREG_SH, cmd, U16)
        if mask & _lane(H.CMDREG, 1) or not self.can_issue_command():
            return
        self.send_command()

    def _w_bdata(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self._bdata_sequential(offset - H.BDATA.offset):
            self.write_dataport(value >> shift, size)

    def _w_hostctl(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if not mask & _lane(H.BLKGAP):
            self._blkgap_write((value >> _BLKGAP_SH) & U8)
        self.hostctl1 = self._mw(self.hostctl1, mask, value, U8)
        pwr = (value >> _PWRCON_SH) & U8
        wak = (value >> _WAKCON_SH) & U8
        if not self.qemu("sdhci.reserved-bits-writable"):
            pwr &= ~_PWRCON_RSVD
            wak &= ~_WAKCON_RSVD
        self.pwrcon = self._mw(self.pwrcon, mask >> _PWRCON_SH, pwr, U8)
        self.wakcon = self._mw(self.wakcon, mask >> _WAKCON_SH, wak, U8)
        supported = _VOLTAGE_CAPS.get(_BUSVOLT.get(self.pwrcon), 0)
        if not self.prnsts & H.PRNSTS_CARDINSERTED or not self.capareg & supported:
            self.pwrcon &= ~H.PWRCON_POWER_ON

    def _w_clkcon(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if not mask & _lane(H.SWRST):
            self._software_reset((value >> _SWRST_SH) & U8)
        clk = value & U16
        tmo = (value >> _TIMEOUTCON_SH) & U8
        if not self.qemu("sdhci.reserved-bits-writable"):
            clk &= ~_CLKCON_RSVD[self.sd_spec_version]
            tmo &= ~_TIMEOUTCON_RSVD
        self.clkcon = self._mw(self.clkcon, mask, clk, U16)
        self.timeoutcon = self._mw(self.timeoutcon, mask >> _TIMEOUTCON_SH, tmo, U8)
        if self.clkcon & H.CLKCON_INTCLK_EN:
            self.clkcon |= H.CLKCON_INTCLK_STABLE
        else:
            self.clkcon &= ~H.CLKCON_INTCLK_STABLE

    def _sync_errint(self) -> None:
        if self.errintsts:
            self.norintsts |= H.NIS_ERRINT
        else:
            self.norintsts &= ~H.NIS_ERRINT

    def _w_norintsts(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self.norintstsen & H.NIS_CARDINT:
            value &= ~H.NIS_CARDINT
        self.norintsts &= (mask | ~value) & U16
        self.errintsts &= ((mask >> _ERR_SH) | ~(value >> _ERR_SH)) & U16
        self._sync_errint()
        self.update_irq()

    def _w_norintstsen(self, offset: int, shift: int, mask: int, value: int,
                       size: int) -> None:
        if not self.qemu("sdhci.reserved-bits-writable"):
            value &= ~_STSEN_RSVD[self.sd_spec_version]
        self.norintstsen = self._mw(self.norintstsen, mask, value & U16, U16)
        self.errintstsen = self._mw(self.errintstsen, mask >> _ERR_SH, value >> _ERR_SH, U16)
        self.norintsts &= self.norintstsen
        self.errintsts &= self.errintstsen
        self._sync_errint()
        if self.pending_insert and self.norintstsen & H.NIS_CARDINS:
            self.norintsts |= H.NIS_CARDINS  # the pending-insert quirk (see __init__)
            self.pending_insert = False
        self.update_irq()

    def _w_norintsigen(self, offset: int, shift: int, mask: int, value: int,
                       size: int) -> None:
        if not self.qemu("sdhci.reserved-bits-writable"):
            value &= ~_SIGEN_RSVD[self.sd_spec_version]
        self.norintsigen = self._mw(self.norintsigen, mask, value & U16, U16)
        self.errintsigen = self._mw(self.errintsigen, mask >> _ERR_SH, value >> _ERR_SH, U16)
        self.update_irq()

    def _w_acmd12(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self.qemu("sdhci.acmd12errsts-writable"):
            self.acmd12errsts = self._mw(self.acmd12errsts, mask, value & U16, U16)
        uhs = self.uhs_mode >= 1
        if not uhs and not self.qemu("sdhci.hostctl2-needs-uhs"):
            uhs = self.sd_spec_version >= 3
        hc2_mask = mask >> _HOSTCTL2_SH
        hc2 = value >> _HOSTCTL2_SH
        if not uhs:
            if (self.profile.version >= boundaries.HOSTCTL2_V4EN.since
                    and self.qemu("sdhci.reserved-bits-writable")):
                # QEMU 11.1.2 and later (upstream's "Accept version 4
                # enable without UHS-I"): without UHS, HOSTCTL2 bit 12
                # (Host Version 4 Enable in SDHC 4.10, reserved in 3.00)
                # alone is writable; other bits ignore it.
                v4 = H.HOSTCTL2_V4EN
                self.hostctl2 = (self.hostctl2 & ~(v4 & ~hc2_mask)) | (hc2 & v4 & ~hc2_mask)
            return
        if not self.qemu("sdhci.reserved-bits-writable"):
            hc2 &= ~_HOSTCTL2_RSVD
        self.hostctl2 = self._mw(self.hostctl2, hc2_mask, hc2, U16)
        if self.card is not None:
            self.card.set_voltage(1800 if _V18EN.get(self.hostctl2) else 3300)

    def _w_feaer(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        self.acmd12errsts = (self.acmd12errsts | value) & U16
        self.errintsts |= (value >> _ERR_SH) & self.errintstsen
        if self.acmd12errsts:
            self.errintsts |= H.EIS_ACMDERR
        if self.errintsts:
            self.norintsts |= H.NIS_ERRINT
        self.update_irq()

    def _w_admaerr(self, offset: int, shift: int, mask: int, value: int, size: int) -> None:
        if self.qemu("sdhci.admaerr-writable"):
            self.admaerr = self._mw(self.admaerr, mask, value, U8)

    def _w_admasysaddr(self, offset: int, shift: int, mask: int, value: int,
                       size: int) -> None:
        """Either 32-bit half of the 64-bit ADMA System Address."""
        if offset - H.ADMASYSADDR.offset < 4:
            self.admasysaddr = (self.admasysaddr & ((U32 << 32) | mask)) | value
        else:
            self.admasysaddr = (((self.admasysaddr & (U32 | (mask << 32))) | (value << 32))
                                & U64)


# -- register dispatch, keyed by the register map ----------------------------

Reader = Callable[[SDHCI], int]
Writer = Callable[[SDHCI, int, int, int, int, int], None]


def _sh(reg: Register) -> int:
    """Bit position of ``reg`` in its 32-bit word."""
    return 8 * (reg.offset & 3)


def _lane(reg: Register, byte: int = 0) -> int:
    """The byte lane of byte ``byte`` of ``reg`` in its 32-bit word."""
    return U8 << (8 * ((reg.offset + byte) & 3))


_BLKCNT_SH = _sh(H.BLKCNT)
_CMDREG_SH = _sh(H.CMDREG)
_PWRCON_SH = _sh(H.PWRCON)
_BLKGAP_SH = _sh(H.BLKGAP)
_WAKCON_SH = _sh(H.WAKCON)
_TIMEOUTCON_SH = _sh(H.TIMEOUTCON)
_SWRST_SH = _sh(H.SWRST)
_HOSTCTL2_SH = _sh(H.HOSTCTL2)
#: The error half of each interrupt register pair (2.2.17-2.2.22, 2.2.29).
_ERR_SH = _sh(H.ERRINTSTS)
if not _ERR_SH == _sh(H.ERRINTSTSEN) == _sh(H.ERRINTSIGEN) == _sh(H.FEERR):
    raise ValueError("the error registers must share their position in the word")

#: Transfer Mode bits sdhci keeps: all but Auto CMD23 (2.2.5).
_TRNMOD_WRITABLE = H.TRNMOD.defined() & ~H.TRNMOD_ACMD23
_BLKSIZE_WRITABLE = H.BLKSIZE.defined()
_NOT_LINE_LEVELS = ~H.PRNSTS_LINE_LEVELS
_DATLVL_LSB = H.PRNSTS.field("DATLVL").lsb
_CMDLVL_LSB = H.PRNSTS.field("CMDLVL").lsb
_BUSVOLT = H.PWRCON.field("BUSVOLT")
_RSPTYP = H.CMDREG.field("RSPTYP")
#: Block Gap Control bits QEMU drops, the specification keeps (2.2.12).
_BLKGAP_RW = H.BLKGAP.mask("RDWAITCTL", "INTATGAP")
_V18EN = H.HOSTCTL2.field("V18EN")
#: SD Bus Voltage Select value -> the CAPAB bit that supports it (2.2.11, 2.2.26).
_VOLTAGE_CAPS = {7: H.CAPAB.mask("V33"), 6: H.CAPAB.mask("V30"), 5: H.CAPAB.mask("V18")}

# Bits the specification reserves (2.2), which QEMU keeps instead
# ("sdhci.reserved-bits-writable"); all from the register map.
_CMDREG_RSVD = H.CMDREG.reserved()
_PWRCON_RSVD = H.PWRCON.reserved()
_WAKCON_RSVD = H.WAKCON.reserved()
_TIMEOUTCON_RSVD = H.TIMEOUTCON.reserved()
#: Clock Control by sd-spec-version: bits 7:5 came with 3.00.
_CLKCON_RSVD = {v: H.CLKCON.reserved(v) for v in (2, 3)}
#: Host Control 2 with UHS is the register of 3.00, whatever sd-spec-version.
_HOSTCTL2_RSVD = H.HOSTCTL2.reserved(3)
#: The Normal/Error Interrupt Status Enable pair as one word, by
#: sd-spec-version (2.2.19, 2.2.20): normal 15:13 and error 11 reserved, and
#: before 3.00 also Re-Tuning Event (normal 12) and Tuning Error (error 10).
_STSEN_RSVD = {v: H.NORINTSTSEN.reserved(v) | H.ERRINTSTSEN.reserved(v) << _ERR_SH
               for v in (2, 3)}
#: The Signal Enable pair likewise (2.2.21, 2.2.22).
_SIGEN_RSVD = {v: H.NORINTSIGEN.reserved(v) | H.ERRINTSIGEN.reserved(v) << _ERR_SH
               for v in (2, 3)}

#: What a guest reads from each register (unlisted: reads 0).
READERS: dict[Register, Reader] = {
    H.SDMASYSAD: lambda s: s.sdmasysad,
    H.BLKSIZE: lambda s: s.blksize,
    H.BLKCNT: lambda s: s.blkcnt,
    H.ARGUMENT: lambda s: s.argument,
    H.TRNMOD: lambda s: s.trnmod,
    H.CMDREG: lambda s: s.cmdreg,
    H.RSPREG0: lambda s: s.rspreg[0],
    H.RSPREG1: lambda s: s.rspreg[1],
    H.RSPREG2: lambda s: s.rspreg[2],
    H.RSPREG3: lambda s: s.rspreg[3],
    H.PRNSTS: SDHCI._read_prnsts,
    H.HOSTCTL: lambda s: s.hostctl1,
    H.PWRCON: lambda s: s.pwrcon,
    H.BLKGAP: lambda s: s.blkgap,
    H.WAKCON: lambda s: s.wakcon,
    H.CLKCON: lambda s: s.clkcon,
    H.TIMEOUTCON: lambda s: s.timeoutcon,
    H.NORINTSTS: lambda s: s.norintsts,
    H.ERRINTSTS: lambda s: s.errintsts,
    H.NORINTSTSEN: lambda s: s.norintstsen,
    H.ERRINTSTSEN: lambda s: s.errintstsen,
    H.NORINTSIGEN: lambda s: s.norintsigen,
    H.ERRINTSIGEN: lambda s: s.errintsigen,
    H.ACMD12ERRSTS: lambda s: s.acmd12errsts,
    H.HOSTCTL2: lambda s: s.hostctl2,
    H.CAPAB: lambda s: s.capareg,
    H.MAXCURR: lambda s: s.maxcurr,
    H.ADMAERR: lambda s: s.admaerr,
    H.ADMASYSADDR: lambda s: s.admasysaddr,
    H.SLOT_INT_STATUS: lambda s: int(s.slotint()),
    H.HCVER: lambda s: s.hcver,
}

#: The writer of each 32-bit word, by the register the word starts with (an
#: 8-byte register's writer takes both of its words; unlisted: writes ignored).
WRITERS: dict[Register, Writer] = {
    H.SDMASYSAD: SDHCI._w_sysad,
    H.BLKSIZE: SDHCI._w_blksize,        # and BLKCNT
    H.ARGUMENT: SDHCI._w_argument,
    H.TRNMOD: SDHCI._w_trnmod,          # and CMDREG
    H.BDATA: SDHCI._w_bdata,
    H.HOSTCTL: SDHCI._w_hostctl,        # and PWRCON, BLKGAP, WAKCON
    H.CLKCON: SDHCI._w_clkcon,          # and TIMEOUTCON, SWRST
    H.NORINTSTS: SDHCI._w_norintsts,    # and ERRINTSTS
    H.NORINTSTSEN: SDHCI._w_norintstsen,  # and ERRINTSTSEN
    H.NORINTSIGEN: SDHCI._w_norintsigen,  # and ERRINTSIGEN
    H.ACMD12ERRSTS: SDHCI._w_acmd12,    # and HOSTCTL2
    H.FEAER: SDHCI._w_feaer,            # and FEERR
    H.ADMAERR: SDHCI._w_admaerr,
    H.ADMASYSADDR: SDHCI._w_admasysaddr,
}


def _placed(reader: Reader, shift: int) -> Reader:
    """``reader``'s value moved ``shift`` bits up (down when negative)."""
    if shift == 0:
        return reader
    if shift > 0:
        return lambda s: reader(s) << shift
    return lambda s: reader(s) >> -shift


def _combined(parts: list[Reader]) -> Reader:
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        first, second = parts
        return lambda s: first(s) | second(s)

    def read(s: SDHCI) -> int:
        value = 0
        for part in parts:
            value |= part(s)
        return value
    return read


def _word_readers() -> dict[int, Reader]:
    """Word offset -> reader of the 32-bit word (the OR of its registers)."""
    out: dict[int, list[Reader]] = {}
    for reg, reader in READERS.items():
        for base in range(reg.offset & ~3, reg.offset + reg.width, 4):
            out.setdefault(base, []).append(_placed(reader, 8 * (reg.offset - base)))
    return {base: _combined(parts) for base, parts in out.items()}


def _word_writers() -> dict[int, Writer]:
    out: dict[int, Writer] = {}
    for reg, writer in WRITERS.items():
        if reg.offset & 3:
            raise ValueError(f"{reg.name} does not start a 32-bit word")
        for base in range(reg.offset, reg.offset + reg.width, 4):
            if base in out:
                raise ValueError(f"two writers for the word at {base:#x}")
            out[base] = writer
    return out


_WORD_READERS = _word_readers()
_WORD_WRITERS = _word_writers()
