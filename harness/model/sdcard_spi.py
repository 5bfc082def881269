"""The SD card in SPI mode, as QEMU's ``sd-card`` with ``spi=on`` (before 9.1)
or ``sd-card-spi`` (since) behaves: the same card as :class:`SDCard`, with
SPI mode's command table and responses (PLS chapter 7).

What SPI mode changes (PLS 7.2, 7.3), and how QEMU does it (``hw/sd/sd.c``):

* the card leaves idle through CMD1 or ACMD41 and has no RCA (7.2.1); QEMU
  powers the card up at reset (``sd_set_ocr`` in SPI mode) and, before
  10.1, goes straight to transfer state on either command; since 10.1
  ACMD41 (and CMD1) take the SD-mode path to *ready* and refuse a second
  one (ledger ``spi.version.acmd41-ready``);
* CMD9/CMD10 send CSD/CID as a 16-byte data block (7.2.6): QEMU 7.2 from
  transfer state; 9.1-10.0 only from stand-by, which SPI mode never
  reaches, so both are illegal (ledger ``spi.version.cxd-standby``); 10.1
  and later from any state, moving to transfer;
* CMD13 answers R2 (7.3.2.3): QEMU 7.2 an R1 that ``ssi-sd`` widens to two
  bytes; 9.1-10.0 a 16-byte CSD as R2 that ``ssi-sd`` cannot frame and
  answers 0x04 (ledger ``spi.version.cmd13-r2-csd``); 10.1 and later R2;
* CMD58 answers R3 and CMD59 R1; CRC checking stays off whatever CMD59
  says (ledger ``spi.crc-never-checked``);
* the response bytes: before 10.1 ``sd_do_command`` returns the SD-mode
  payload and ``ssi-sd`` converts it (:func:`harness.model.ssi_sd.legacy_response`);
  since 10.1 the card frames R1 (bit 0: idle *after* the command), R2, R3
  and R7 itself, and an illegal command or one without a response leaves
  its one byte unwritten (:data:`UNDEFINED`, ledger ``spi.illegal-r1-stale``).
"""

from __future__ import annotations

from typing import ClassVar

from harness.hwdefs import sd as S
from harness.hwdefs.sd import SD_APP_COMMANDS, SD_COMMANDS, CardState
from harness.hwdefs.sd_spi import SPI_ONLY_COMMANDS
from harness.ledger import boundaries
from harness.model import sd_data
from harness.model.commands import CommandRow, CommandTable, Rsp, Support
from harness.model.sd_commands import SD
from harness.model.sdcard import R3_MASK, SDCard

__all__ = ["SPI", "UNDEFINED", "SpiCard"]

#: A response byte the card leaves unwritten (QEMU: uninitialised stack).
UNDEFINED = -1
#: CMD9 and CMD10: the registers QEMU 7.2 sends from its data buffer.
_CSD_CID = frozenset(map(S.index, ("SEND_CSD", "SEND_CID")))

_I, _V = Support.IMPLEMENTED, Support.VERSION


def _r(i: int, note: str = "", support: Support = _I) -> CommandRow:
    spec = SPI_ONLY_COMMANDS.get(i) or SD_COMMANDS[i]
    return CommandRow(spec, support, note)


def _a(i: int, note: str = "") -> CommandRow:
    return CommandRow(SD_APP_COMMANDS[i], _I, note)


#: PLS 7.3.1.3 Table 7-3 as QEMU's SPI protocol table (``sd_proto_spi``,
#: and the SPI cases of its command switch) implements it.
SPI = CommandTable("SPI", (
    _r(0, "R1; resets the card"), _r(1, "SEND_OP_COND: leaves idle", _V),
    _r(6), _r(8, "R7: R1 and the echoed VHS/check pattern"),
    _r(9, "CSD as a data block", _V), _r(10, "CID as a data block", _V),
    _r(12), _r(13, "R2", _V), _r(16), _r(17), _r(18), _r(24), _r(25), _r(27),
    _r(28), _r(29), _r(30), _r(32), _r(33), _r(38), _r(42), _r(55), _r(56),
    _r(58, "R3: R1 and the OCR"), _r(59, "R1; QEMU never checks a CRC"),
), (
    _a(13, "R2, then the SD status block"), _a(22), _a(23), _a(41, "R1: leaves idle"),
    _a(42), _a(51),
))


class SpiCard(SDCard):
    """An SD memory card in SPI mode (see the module docstring).

    :meth:`do_command` returns what QEMU's ``sd_do_command`` hands
    ``ssi-sd``: the SD-mode payload before 10.1, the SPI response since,
    with :data:`UNDEFINED` for a byte the card does not write.
    """

    commands: ClassVar[CommandTable] = SPI
    #: The last response's one byte was left unwritten (QEMU >= 10.1).
    undefined: bool = False

    @property
    def frames_spi(self) -> bool:
        """The card frames SPI responses itself (``spi_r2``,
        ``sd_response_size``): from boundary ``sd.state-and-size-rules`` on
        (10.2.2, 11.0.3 and 11.1.1 do, 10.0.13 does not)."""
        return self.version >= boundaries.SD_STATE_AND_SIZE_RULES.since

    def reset(self) -> None:
        """SD reset, then power-up complete at once (QEMU ``sd_set_ocr`` in SPI mode)."""
        super().reset()
        self._powerup()

    def do_spi(self, cmd: int, arg: int) -> list[int]:
        """The response bytes of CMD``cmd`` (see the class docstring)."""
        self.undefined = False
        out = list(self.do_command(cmd, arg))
        return [UNDEFINED] if self.frames_spi and self.undefined else out

    def _finish(self, cmd: int, rtype: Rsp, state_before: CardState | None = None) -> bytes:
        if not self.frames_spi:
            return super()._finish(cmd, rtype, state_before)
        framed: list[int] = []
        if rtype in (Rsp.R1, Rsp.R1B):
            framed = [self._r1()]
        elif rtype is Rsp.R2_CSD:  # CMD13's SPI R2 (QEMU spi_r2): R1 first, as QEMU
            framed = [self._r1()]
            framed.append(self._r2_second())
        elif rtype is Rsp.R3:
            framed = [self._r1(), *((self.ocr & R3_MASK).to_bytes(4, "big"))]
        elif rtype is Rsp.R7:
            framed = [self._r1(), *(self.vhs.to_bytes(4, "big"))]
        super()._finish(cmd, rtype, state_before)  # the status bookkeeping
        self.undefined = not framed
        return bytes(framed)

    def _r1(self) -> int:
        """PLS 7.3.2.1 R1 as QEMU >= 10.1 builds it: bit 0 the state after the
        command, bit 6 BLOCK_LEN_ERROR (the spec: parameter error); the
        clear-on-read bits are cleared."""
        st = self.card_status
        r1 = int(self.state == CardState.IDLE)
        for bit, mask in ((1, S.ERASE_RESET), (2, S.ILLEGAL_COMMAND), (3, S.COM_CRC_ERROR),
                          (4, S.ERASE_SEQ_ERROR), (5, S.ADDRESS_ERROR),
                          (6, S.BLOCK_LEN_ERROR)):
            if st & mask:
                r1 |= 1 << bit
        self.card_status &= ~S.status_mask(S.ClearCondition.C)
        return r1

    def _r2_second(self) -> int:
        """PLS 7.3.2.3 Figure 7-10: R2's second byte from the card status, as
        QEMU reads it *after* R1 cleared the clear-on-read bits, so its error
        bits never show (ledger ``spi.r2-after-clear``)."""
        st = self.card_status
        out = 0
        for bit, mask in ((0, S.CARD_IS_LOCKED), (1, S.LOCK_UNLOCK_FAILED | S.WP_ERASE_SKIP),
                          (2, S.ERROR), (3, S.CC_ERROR), (4, S.CARD_ECC_FAILED),
                          (5, S.WP_VIOLATION), (6, S.ERASE_PARAM), (7, S.OUT_OF_RANGE)):
            if st & mask:
                out |= 1 << bit
        return out

    def read_byte(self) -> int:
        """QEMU 7.2 sends CMD9/CMD10's 16 bytes from its data buffer
        (``sd_read_byte`` cases 9 and 10); later releases as any buffer."""
        if (self.legacy and self.state == CardState.DATA and self.current_cmd in _CSD_CID
                and self.inserted):
            ret = sd_data.get(self, self.xfer.buf)
            if self.xfer.offset >= 16:
                self.state = CardState.TRAN
            return ret
        return super().read_byte()

    # -- SPI mode's own commands ---------------------------------------------

    @SPI.handles(0)
    def _spi_go_idle(self, arg: int) -> Rsp:
        """CMD0 (PLS 7.2.1): reset to idle, R1."""
        if self.state != CardState.INACTIVE:
            self.reset()
        return Rsp.R1

    @SPI.handles(1)
    def _spi_send_op_cond(self, arg: int) -> Rsp:
        """CMD1 (PLS 7.2.1): start initialisation, as ACMD41."""
        return self._spi_acmd41(arg)

    @SPI.handles(41, app=True)
    def _spi_acmd41(self, arg: int) -> Rsp:
        """ACMD41 (PLS 7.2.1): the card leaves idle, R1.  Before 10.1 QEMU goes
        to transfer state from any state; since, only from idle, to ready."""
        if not self.frames_spi:
            self.state = CardState.TRAN
            return Rsp.R1
        if self.state != CardState.IDLE:
            return Rsp.ILLEGAL
        self.state = CardState.READY
        return Rsp.R1

    @SPI.handles(8)
    def _spi_send_if_cond(self, arg: int) -> Rsp:
        """CMD8 (PLS 7.3.1.4): R7; a VHS that is not exactly one bit is still
        answered in SPI mode (VHS 0)."""
        rsp = self._cmd_send_if_cond(arg)
        return Rsp.R7 if rsp is Rsp.R0 else rsp

    def _spi_cxd(self, data: bytes) -> Rsp:
        if self.version < boundaries.SD_PROTOCOL_REWORK.since:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            self.xfer.buf[:16] = data
            return self._legacy_to(CardState.DATA, None)
        if not self.frames_spi:
            return Rsp.ILLEGAL  # 9.1-10.0 want stand-by, never reached in SPI mode
        self.state = CardState.TRAN
        return self._to_sending(0, data, 16)

    @SPI.handles(9)
    def _spi_send_csd(self, arg: int) -> Rsp:
        """CMD9 (PLS 7.2.6): the CSD as a data block (versions: module docstring)."""
        return self._spi_cxd(bytes(self.csd_reg))

    @SPI.handles(10)
    def _spi_send_cid(self, arg: int) -> Rsp:
        """CMD10 (PLS 7.2.6): the CID as a data block."""
        return self._spi_cxd(bytes(self.cid))

    @SPI.handles(13)
    def _spi_send_status(self, arg: int) -> Rsp:
        """CMD13 (PLS 7.3.2.3): R2 in data-transfer mode (versions: module docstring)."""
        if not self._in_data_transfer_mode():
            return Rsp.ILLEGAL
        return Rsp.R1 if self.version < boundaries.SD_PROTOCOL_REWORK.since else Rsp.R2_CSD

    @SPI.handles(13, app=True)
    def _spi_acmd_sd_status(self, arg: int) -> Rsp:
        """ACMD13 (PLS 7.3.1.3): the 64-byte SD status as a data block after R2
        (since 10.1; before, ssi-sd widens the R1 of any index 13 to two bytes)."""
        rsp = self._acmd_sd_status(arg)
        return Rsp.R2_CSD if self.frames_spi and rsp is not Rsp.ILLEGAL else rsp

    @SPI.handles(58)
    def _spi_read_ocr(self, arg: int) -> Rsp:
        """CMD58 (PLS 7.3.1.3): the OCR in R3, in any state."""
        return Rsp.R3

    @SPI.handles(59)
    def _spi_crc_on_off(self, arg: int) -> Rsp:
        """CMD59 (PLS 7.2.2): CRC on/off; QEMU keeps no setting (it checks no CRC)."""
        return Rsp.R1


SPI.inherit(SpiCard, SD, 6, 12, 16, 17, 18, 24, 25, 27, 28, 29, 30, 32, 33, 38, 42, 55, 56)
SPI.inherit(SpiCard, SD, 22, 23, 42, 51, app=True)
