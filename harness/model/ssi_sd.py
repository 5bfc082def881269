"""QEMU's ``ssi-sd``: the SSI peripheral that frames an SPI-mode SD card's bytes.

One byte in, one byte out per SSI frame (``hw/sd/ssi-sd.c``
``ssi_sd_transfer``; the framing PLS 7.3 and 7.5 describe):

* idle: a command's first byte (``01`` + index), then four argument bytes;
  the sixth byte (the CRC, never checked) runs the command on the card;
  one filler byte (N_CR = 1), then the response bytes, one more filler;
* then, if the card has data to send, the start block token 0xFE, the data
  (up to 512 bytes per block) and its CRC16 (PLS 4.5, computed over the bytes
  sent); a multiple block read repeats filler + token + block, any other ends
  with its first block; a 0x4C (CMD12's first byte) during a read
  ends it and starts CMD12, whose R1 comes one byte later (R1b, PLS 7.5.2.2);
* idle, 0xFE or 0xFC starts a write block: its bytes go to the card, and
  come back unchanged on MISO (ledger ``ssi-sd.write-echo``); two CRC bytes
  are skipped unchecked and the data response token 0x05 (accepted) follows,
  whatever the card did with the block (ledger ``ssi-sd.data-response-always-accepted``);
* idle, 0xFD (stop tran) sends CMD12 to the card; no busy byte follows
  (ledger ``ssi-sd.stop-tran-no-busy``);
* idle, 0xFF is a filler and answers 0xFF; CMD28/29/38 add one filler after
  their R1 (R1b).

Before 10.1 the card answers with its SD-mode payload and ``ssi-sd`` turns it
into R1/R2/R3/R7 (:func:`legacy_response`); since 10.1 the card frames them
(:class:`harness.model.sdcard_spi.SpiCard`).  An empty slot answers 0xFF.
"""

from __future__ import annotations

from enum import IntEnum

from harness.hwdefs import sd as S
from harness.hwdefs import sd_spi as T
from harness.hwdefs.sd import CardState
from harness.model.sdcard_spi import SpiCard

__all__ = ["SsiSd", "SsiSdMode", "legacy_response"]

BLOCK = 512
#: Commands whose R1 is followed by one busy filler (R1b) in ``ssi-sd``.
R1B_COMMANDS = frozenset(map(S.index, ("SET_WRITE_PROT", "CLR_WRITE_PROT", "ERASE")))
#: Commands whose answer ssi-sd frames as R7/R3 (R1 and four bytes).
_R1_AND_4 = frozenset({S.index("SEND_IF_COND"), T.index("READ_OCR")})
_SEND_STATUS, _READ_SINGLE = S.index("SEND_STATUS"), S.index("READ_SINGLE_BLOCK")
#: The command a 0x4C byte starts during a read: CMD12.
_CMD12_BYTE = T.CMD_START | 12


class SsiSdMode(IntEnum):
    """Where ``ssi-sd`` is in the byte stream."""

    CMD = 0
    CMDARG = 1
    PREP_RESP = 2
    RESPONSE = 3
    PREP_DATA = 4
    DATA_START = 5
    DATA_READ = 6
    DATA_CRC16 = 7
    DATA_WRITE = 8
    SKIP_CRC16 = 9


#: ``ssi-sd`` before 10.1: card status bit -> bit of its 16-bit R2 (R1 the high byte).
_LEGACY_STATUS = (
    (S.ERASE_RESET, 0x0200), (S.ILLEGAL_COMMAND, 0x0400), (S.COM_CRC_ERROR, 0x0800),
    (S.ERASE_SEQ_ERROR, 0x1000), (S.ADDRESS_ERROR, 0x2000), (S.CARD_IS_LOCKED, 0x0001),
    (S.LOCK_UNLOCK_FAILED | S.WP_ERASE_SKIP, 0x0002), (S.ERROR, 0x0004), (S.CC_ERROR, 0x0008),
    (S.CARD_ECC_FAILED, 0x0010), (S.WP_VIOLATION, 0x0020), (S.ERASE_PARAM, 0x0040),
    (S.OUT_OF_RANGE | S.CSD_OVERWRITE, 0x0080),
)


def legacy_response(cmd: int, payload: bytes) -> list[int]:
    """The SPI response ``ssi-sd`` (QEMU < 10.1) makes of the card's SD-mode
    payload: none: 0x04 (illegal); CMD8/CMD58: R1 0x01 whatever the state
    (ledger ``spi.version.r3-r7-idle``) and the four bytes; another length
    than 4: 0x04; a card status: R1 (R1 and a second byte for CMD13), "idle"
    when the state before the command was below transfer (CURRENT_STATE < 4),
    "parameter error" whenever the second byte is not 0."""
    if not payload:
        return [0x04]
    if cmd in _R1_AND_4:
        return [0x01, *payload[:4]]
    if len(payload) != 4:
        return [0x04]
    status = int.from_bytes(payload, "big")
    out = 0x0100 if (status >> 9) & 0xF < CardState.TRAN else 0
    for mask, bit in _LEGACY_STATUS:
        if status & mask:
            out |= bit
    if out & 0xFF:
        out |= 0x4000
    both = [out >> 8, out & 0xFF]
    return both if cmd == _SEND_STATUS else both[:1]


class SsiSd:
    """``ssi-sd`` with ``card`` on its SD bus (see the module docstring).

    :meth:`transfer` takes one byte from the SSI master and returns the
    byte the card side drives (``harness.model.sdcard_spi.UNDEFINED``
    where QEMU sends an unwritten byte)."""

    def __init__(self, card: SpiCard) -> None:
        self.card = card
        self.reset()

    def reset(self) -> None:
        """Device reset (QEMU ``ssi_sd_reset``)."""
        self.mode = SsiSdMode.CMD
        self.cmd = 0
        self.cmdarg = bytearray(4)
        self.response: list[int] = [0] * 5
        self.crc = 0
        self.read_bytes = 0
        self.write_bytes = 0
        self.arglen = 0
        self.response_pos = 0
        self.stopping = False

    def _run(self, cmd: int, arg: int) -> tuple[list[int], bool]:
        """The response bytes of a command and whether a busy filler follows
        (R1b: since 10.1 always for :data:`R1B_COMMANDS`, before only after a
        card status)."""
        card = self.card
        if card.frames_spi:
            return card.do_spi(cmd, arg) or [0x04], cmd in R1B_COMMANDS
        payload = card.do_command(cmd, arg)
        status = len(payload) == 4 and cmd not in _R1_AND_4
        return legacy_response(cmd, payload), status and cmd in R1B_COMMANDS

    def transfer(self, val: int) -> int:
        """One SSI frame (``val`` from the master)."""
        card = self.card
        if not card.inserted:
            return T.FILL
        if SsiSdMode.PREP_DATA <= self.mode <= SsiSdMode.DATA_CRC16 and val == _CMD12_BYTE:
            self.mode = SsiSdMode.CMD
            self.stopping = True
        handler = _HANDLERS[self.mode]
        return handler(self, val)

    def _in_cmd(self, val: int) -> int:
        if val == T.FILL:
            return T.FILL
        if val in (T.TOKEN_SINGLE, T.TOKEN_MULTI_WRITE):
            self.mode = SsiSdMode.DATA_WRITE
            return T.FILL
        if val == T.TOKEN_STOP_TRAN:
            payload = (self.card.do_spi(12, 0) if self.card.frames_spi
                       else list(self.card.do_command(12, 0)))
            self.arglen = 1
            self.response[0] = 0 if not payload else T.FILL
            return T.FILL
        self.cmd = val & 0x3F
        self.mode = SsiSdMode.CMDARG
        self.arglen = 0
        return T.FILL

    def _in_cmdarg(self, val: int) -> int:
        if self.arglen < 4:
            self.cmdarg[self.arglen] = val
            self.arglen += 1
            return T.FILL
        resp, busy = self._run(self.cmd, int.from_bytes(self.cmdarg, "big"))
        self.arglen = len(resp)
        self.response = (resp + [0] * 5)[:max(5, len(resp))]
        if busy:
            self.stopping = True
        self.mode = SsiSdMode.PREP_RESP
        self.response_pos = 0
        return T.FILL

    def _in_prep_resp(self, val: int) -> int:
        self.mode = SsiSdMode.RESPONSE
        return T.FILL

    def _in_response(self, val: int) -> int:
        if self.response_pos < self.arglen:
            out = self.response[self.response_pos]
            self.response_pos += 1
            return out
        if self.stopping:
            self.stopping = False
            self.mode = SsiSdMode.CMD
            return T.FILL
        self.mode = SsiSdMode.DATA_START if self.card.data_ready() else SsiSdMode.CMD
        return T.FILL

    def _in_prep_data(self, val: int) -> int:
        self.mode = SsiSdMode.DATA_START
        return T.FILL

    def _in_data_start(self, val: int) -> int:
        self.mode = SsiSdMode.DATA_READ
        self.response_pos = 0
        return T.TOKEN_SINGLE

    def _in_data_read(self, val: int) -> int:
        byte = self.card.read_byte() & 0xFF
        self.read_bytes += 1
        self.crc = T.crc16(bytes([byte]), self.crc)
        if not self.card.data_ready() or self.read_bytes == BLOCK:
            self.mode = SsiSdMode.DATA_CRC16
        return byte

    def _in_data_crc16(self, val: int) -> int:
        out = self.crc >> 8
        self.crc = (self.crc << 8) & 0xFFFF
        self.response_pos += 1
        if self.response_pos == 2:
            more = self.read_bytes == BLOCK and self.cmd != _READ_SINGLE
            self.mode = SsiSdMode.PREP_DATA if more else SsiSdMode.CMD
            self.read_bytes = 0
            self.response_pos = 0
        return out

    def _in_data_write(self, val: int) -> int:
        self.card.write_byte(val)
        self.write_bytes += 1
        if not self.card.receive_ready() or self.write_bytes == BLOCK:
            self.mode = SsiSdMode.SKIP_CRC16
            self.response_pos = 0
        return val

    def _in_skip_crc16(self, val: int) -> int:
        self.response_pos += 1
        if self.response_pos == 2:
            self.mode = SsiSdMode.RESPONSE
            self.write_bytes = 0
            self.arglen = 1
            self.response[0] = T.DATA_ACCEPTED
            self.response_pos = 0
        return T.FILL


_HANDLERS = {
    SsiSdMode.CMD: SsiSd._in_cmd, SsiSdMode.CMDARG: SsiSd._in_cmdarg,
    SsiSdMode.PREP_RESP: SsiSd._in_prep_resp, SsiSdMode.RESPONSE: SsiSd._in_response,
    SsiSdMode.PREP_DATA: SsiSd._in_prep_data, SsiSdMode.DATA_START: SsiSd._in_data_start,
    SsiSdMode.DATA_READ: SsiSd._in_data_read, SsiSdMode.DATA_CRC16: SsiSd._in_data_crc16,
    SsiSdMode.DATA_WRITE: SsiSd._in_data_write, SsiSdMode.SKIP_CRC16: SsiSd._in_skip_crc16,
}
