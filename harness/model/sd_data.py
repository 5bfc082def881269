"""The card's data paths: erase, lock/unlock, and the byte-wise data transfer.

Functions on a :class:`DataCard` (what the data path uses of
:class:`~harness.model.sdcard.SDCard`, declared here so that the
dependency points one way: sdcard imports this module, never the reverse).
The block buffer and transfer position are the data path's own
:class:`DataBuffer`.  "PLS" is the SD Physical
Layer Simplified Specification.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs.sd import CardState
from harness.model.blockstore import BlockStore

BLOCK = 512
INVALID_ADDRESS = 0xFFFFFFFF
CSD_COPY, CSD_PERM_WP, CSD_TMP_WP = 0x40, 0x20, 0x10
#: The commands the data path tells apart (QEMU ``sd_read_byte``/``sd_write_byte``).
_SWITCH_FUNC, _READ_SINGLE, _TUNING = map(S.index, ("SWITCH_FUNC", "READ_SINGLE_BLOCK",
                                                   "SEND_TUNING_BLOCK"))
_WRITE_SINGLE, _WRITE_MULTIPLE = map(S.index, ("WRITE_BLOCK", "WRITE_MULTIPLE_BLOCK"))
_PROGRAM_CSD, _LOCK_UNLOCK, _GEN_CMD, _SEND_WRITE_PROT = map(
    S.index, ("PROGRAM_CSD", "LOCK_UNLOCK", "GEN_CMD", "SEND_WRITE_PROT"))
_SD_STATUS, _SEND_NUM_WR_BLOCKS, _SEND_SCR = (
    S.index(n, app=True) for n in ("SD_STATUS", "SEND_NUM_WR_BLOCKS", "SEND_SCR"))
#: CMD26, reserved for manufacturers in PLS 4.7.4: QEMU < 9.1 took it as the
#: PROGRAM_CID eMMC defines (ledger sd.version.cmd26).
_PROGRAM_CID = E.index("PROGRAM_CID")


@dataclass
class DataBuffer:
    """The data path's own state: the block buffer and where the current
    transfer stands in it (QEMU keeps these across card resets)."""

    buf: bytearray = field(default_factory=lambda: bytearray(BLOCK))
    start: int = 0   #: card byte address of the transfer (or of the next block)
    offset: int = 0  #: bytes moved so far in the current block / data block
    size: int = 0    #: bytes in the data block of a >= 9.1 command


class DataCard(Protocol):
    """What the data path uses of the card (implemented by
    :class:`harness.model.sdcard.SDCard`)."""

    xfer: DataBuffer
    state: CardState
    card_status: int
    current_cmd: int
    blk_len: int
    blk_written: int
    multi_blk_cnt: int
    erase_start: int
    erase_end: int
    pwd: bytes
    wp_groups: set[int]
    write_blocked: bool
    fatal: str | None
    fatal_key: str | None
    store: BlockStore | None
    #: The CSD image; CMD27, the COPY bit and a forced erase change it.
    csd_reg: bytearray

    @property
    def inserted(self) -> bool: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def legacy(self) -> bool: ...
    @property
    def locked(self) -> bool: ...
    @property
    def high_capacity(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def erase_value(self) -> int: ...
    @property
    def wp_group_shift(self) -> int: ...
    @property
    def cid(self) -> bytes: ...
    @property
    def scr(self) -> bytes: ...
    @property
    def sd_status(self) -> bytes: ...

    def qemu(self, key: str) -> bool:
        """Follow QEMU (True) or the specification for deviation ``key``."""
        ...

    def xfer_len(self) -> int: ...

    def range_ok(self, addr: int, length: int) -> bool: ...

    def wp_addr(self, addr: int) -> bool: ...

    def load(self, addr: int, n: int) -> None: ...


def _blockers(card: DataCard) -> int:
    """Status bits that stop the data path (QEMU: ADDRESS_ERROR, WP_VIOLATION;
    strict mode adds OUT_OF_RANGE, which it reports instead of ADDRESS_ERROR)."""
    extra = 0 if card.qemu("sd.out-of-range-as-address-error") else S.OUT_OF_RANGE
    return S.ADDRESS_ERROR | S.WP_VIOLATION | extra


def erase(card: DataCard) -> None:
    """Erase [start, end] inclusive; SDSC skips protected groups and sets
    WP_ERASE_SKIP (PLS 4.3.5).  Erased data reads 0xFF, or 0x00 with
    erase-blocks-as-zero (the erase series)."""
    if INVALID_ADDRESS in (card.erase_start, card.erase_end):
        card.card_status |= S.ERASE_SEQ_ERROR
        card.erase_start = card.erase_end = INVALID_ADDRESS
        return
    start, end = card.erase_start, card.erase_end
    sdsc = not card.high_capacity
    if not sdsc:
        start <<= 9
        end <<= 9
    qemu_range = card.qemu("sd.erase-range")
    if not qemu_range and sdsc:
        start &= ~(BLOCK - 1)
        end &= ~(BLOCK - 1)
    bad = (start > card.size or end > card.size) if qemu_range else (
        start >= card.size or end >= card.size)
    card.erase_start = card.erase_end = INVALID_ADDRESS
    if bad:
        card.card_status |= S.OUT_OF_RANGE
        return
    if card.qemu("sd.csd-copy-bit-on-write"):
        card.csd_reg[14] |= CSD_COPY
    if end < start:
        return
    count = (end - start) // BLOCK + 1
    shift = card.wp_group_shift
    k = 0
    while k < count:
        addr = start + k * BLOCK
        if sdsc:
            group = addr >> shift
            k_last = min(count - 1, (((group + 1) << shift) - 1 - start) // BLOCK)
            if group in card.wp_groups:
                card.card_status |= S.WP_ERASE_SKIP
                k = k_last + 1
                continue
        else:
            k_last = count - 1
        first = addr
        stop = start + k_last * BLOCK + BLOCK
        if stop > card.size:  # the final 512-byte step past the end is dropped
            stop -= BLOCK
        if card.store is not None and stop > first:
            card.store.fill(first, stop - first, card.erase_value)
        k = k_last + 1


def lock_command(card: DataCard) -> None:
    """Apply a lock/unlock data block (PLS 4.3.7.1-4.3.7.3)."""
    d = card.xfer.buf
    erase, lock = bool(d[0] & 0x08), bool(d[0] & 0x04)
    clr_pwd, set_pwd = bool(d[0] & 0x02), bool(d[0] & 0x01)
    pwd_len = d[1] if card.blk_len > 1 else 0
    cur = len(card.pwd)
    if erase:
        if (not card.locked or card.blk_len > 1 or set_pwd or clr_pwd or lock
                or card.readonly or card.csd_reg[14] & CSD_PERM_WP):
            card.card_status |= S.LOCK_UNLOCK_FAILED
            return
        card.wp_groups.clear()
        card.csd_reg[14] &= ~CSD_TMP_WP
        card.card_status &= ~S.CARD_IS_LOCKED
        card.pwd = b""
        if not card.qemu("sd.force-erase-keeps-data") and card.store is not None:
            card.store.fill(0, card.size, card.erase_value)
        return
    if not card.qemu("sd.lock-pwd-len"):
        _lock_strict(card, lock, clr_pwd, set_pwd, pwd_len)
        return
    if card.blk_len < 2 + pwd_len or pwd_len <= cur or pwd_len > cur + 16:
        card.card_status |= S.LOCK_UNLOCK_FAILED
        return
    if cur and bytes(d[2:2 + cur]) != card.pwd:
        card.card_status |= S.LOCK_UNLOCK_FAILED
        return
    new_len = pwd_len - cur
    locked = card.locked
    if ((new_len and not set_pwd) or (clr_pwd and (set_pwd or lock))
            or (lock and not cur and not set_pwd)
            or (not set_pwd and not clr_pwd and ((locked and lock)
                                                 or (not locked and not lock)))):
        card.card_status |= S.LOCK_UNLOCK_FAILED
        return
    # Past these checks SET_PWD is set and CLR_PWD clear (QEMU's order of
    # checks): PWD_LEN exceeds the current length, so new_len >= 1, which
    # is refused without SET_PWD, and CLR_PWD is refused with SET_PWD.  A
    # password is cleared only by the forced erase here (or --strict).
    card.pwd = bytes(d[2 + cur:2 + cur + new_len])
    if lock:
        card.card_status |= S.CARD_IS_LOCKED
    else:
        card.card_status &= ~S.CARD_IS_LOCKED


def _lock_strict(card: DataCard, lock: bool, clr_pwd: bool, set_pwd: bool, pwd_len: int) -> None:
    """PLS 4.3.7.1-4.3.7.2: set (old+new), clear, lock and unlock by password."""
    d = card.xfer.buf
    cur = len(card.pwd)
    fail = card.blk_len < 2 + pwd_len or bytes(d[2:2 + cur]) != card.pwd
    if set_pwd:
        new_len = pwd_len - cur
        fail = fail or clr_pwd or not 1 <= new_len <= 16
        if not fail:
            card.pwd = bytes(d[2 + cur:2 + pwd_len])
    else:
        fail = fail or pwd_len != cur or not cur
        if not fail and clr_pwd:
            fail = lock
            if not fail:
                card.pwd = b""
        elif not fail:
            fail = lock == card.locked
    if fail:
        card.card_status |= S.LOCK_UNLOCK_FAILED
        return
    if lock:
        card.card_status |= S.CARD_IS_LOCKED
    else:
        card.card_status &= ~S.CARD_IS_LOCKED


def write_byte(card: DataCard, value: int) -> None:
    """One data byte from the host (QEMU ``sd_write_byte``)."""
    if card.fatal is not None or not card.inserted or card.state != CardState.RCV:
        return
    if card.card_status & _blockers(card):
        return
    value &= 0xFF
    cc = card.current_cmd
    if cc == _WRITE_MULTIPLE:
        write_multiple_byte(card, value)
        return
    if card.legacy:
        limit = {_WRITE_SINGLE: card.blk_len, _PROGRAM_CID: 16, _PROGRAM_CSD: 16,
                 _LOCK_UNLOCK: card.blk_len, _GEN_CMD: card.blk_len}
        if cc not in limit:
            return
        put(card, value)
        if card.xfer.offset < limit[cc]:
            return
    else:
        if cc not in _RECEIVING:
            if card.qemu("sd.command-during-transfer"):
                card.fatal = f"QEMU aborts: data byte while the last command is CMD{cc}"
                card.fatal_key = "sd.command-during-transfer"
            return
        put(card, value)
        if card.xfer.offset < card.xfer.size:
            return
    card.state = CardState.TRAN
    if cc == _WRITE_SINGLE:
        commit(card, card.xfer.start, card.xfer.offset)
    elif cc == _PROGRAM_CID:
        program_cid(card)
    elif cc == _PROGRAM_CSD:
        program_csd(card)
    elif cc == _LOCK_UNLOCK:
        lock_command(card)


def write_multiple_byte(card: DataCard, value: int,
                        program: Callable[[int, int], None] | None = None) -> None:
    """One byte of a multiple-block write; a full block is programmed
    (:func:`commit`, or ``program(addr, length)`` instead), then
    the address moves on and the block count (CMD23) runs down."""
    n = card.xfer_len()
    if card.xfer.offset == 0:
        if not card.range_ok(card.xfer.start, n):
            return
        if card.size <= S.SDSC_MAX and card.wp_addr(card.xfer.start):
            card.card_status |= S.WP_VIOLATION
            return
    put(card, value)
    if card.xfer.offset >= n:
        if program is None:
            commit(card, card.xfer.start, card.xfer.offset)
        else:
            program(card.xfer.start, card.xfer.offset)
        card.xfer.start += n
        card.xfer.offset = 0
        if card.multi_blk_cnt:
            card.multi_blk_cnt -= 1
            if card.multi_blk_cnt == 0:
                card.state = CardState.TRAN


def program_cid(card: DataCard) -> None:
    if bytes(card.xfer.buf[:16]) != bytes(card.cid):
        card.card_status |= S.CSD_OVERWRITE


def program_csd(card: DataCard) -> None:
    """CMD27 data (PLS 5.3): only byte 14 bits 7:2 and the CRC are writable;
    OTP bits (COPY, PERM_WRITE_PROTECT) cannot be cleared."""
    mask = bytes(14) + b"\xfc\xfe"
    new = card.xfer.buf[:16]
    for i in range(16):
        if (card.csd_reg[i] | mask[i]) != (new[i] | mask[i]):
            card.card_status |= S.CSD_OVERWRITE
    if card.csd_reg[14] & ~new[14] & (CSD_COPY | CSD_PERM_WP):
        card.card_status |= S.CSD_OVERWRITE
    if not card.card_status & S.CSD_OVERWRITE:
        for i in range(16):
            card.csd_reg[i] = (card.csd_reg[i] | mask[i]) & new[i]


def commit(card: DataCard, addr: int, length: int) -> None:
    """Program a received block (PLS 4.3.4) unless the write is refused."""
    blocked = card.write_blocked and not card.qemu("sd.wp-write-proceeds")
    if card.store is not None and not blocked:
        card.store.write(addr, bytes(card.xfer.buf[:length]))
    card.blk_written += 1
    if card.qemu("sd.csd-copy-bit-on-write"):
        card.csd_reg[14] |= CSD_COPY


def put(card: DataCard, value: int) -> None:
    if card.xfer.offset < BLOCK:
        card.xfer.buf[card.xfer.offset] = value
    card.xfer.offset += 1


def get(card: DataCard, src: bytes | bytearray) -> int:
    off = card.xfer.offset
    card.xfer.offset += 1
    return src[off] if off < len(src) else 0


#: Commands whose data the card sends byte by byte (CMD18 aside; QEMU
#: ``sd_read_byte``): any other command in the data state sends zeros.
#: CMD8 is eMMC's SEND_EXT_CSD (the SD card's CMD8 has no data).
SENDING_COMMANDS = frozenset(
    [*map(S.index, ("SWITCH_FUNC", "SEND_CSD", "SEND_CID", "READ_SINGLE_BLOCK",
                    "SEND_TUNING_BLOCK", "SEND_WRITE_PROT", "GEN_CMD")),
     *(S.index(n, app=True) for n in ("SD_STATUS", "SEND_NUM_WR_BLOCKS", "SEND_SCR")),
     E.index("SEND_EXT_CSD")])
_READ_MULTIPLE_BLOCK = S.index("READ_MULTIPLE_BLOCK")
#: Commands whose data the card takes byte by byte (CMD25 aside; QEMU
#: ``sd_write_byte``): a data byte for any other aborts QEMU >= 9.1.
_RECEIVING = frozenset(map(S.index, ("WRITE_BLOCK", "PROGRAM_CSD", "LOCK_UNLOCK", "GEN_CMD")))


def read_byte(card: DataCard) -> int:
    """One data byte to the host (QEMU ``sd_read_byte``); 0x00 when the
    card has nothing to send."""
    if card.fatal is not None or not card.inserted or card.state != CardState.DATA:
        return 0
    if card.card_status & _blockers(card):
        return 0
    io_len = BLOCK if card.high_capacity else card.blk_len
    cc = card.current_cmd
    if cc == _READ_MULTIPLE_BLOCK:
        return read_multiple_byte(card, io_len)
    if card.legacy:
        return legacy_read(card, cc, io_len)
    if cc not in SENDING_COMMANDS:
        return 0
    ret = get(card, card.xfer.buf)
    if card.xfer.offset >= card.xfer.size:
        card.state = CardState.TRAN
    return ret


def legacy_read(card: DataCard, cc: int, io_len: int) -> int:
    if cc == _TUNING:
        if card.xfer.offset >= 63:
            card.state = CardState.TRAN
        return get(card, S.TUNING_BLOCK_4BIT)
    if cc == _READ_SINGLE and card.xfer.offset == 0:
        card.load(card.xfer.start, io_len)
    if cc == _GEN_CMD and card.xfer.offset == 0:
        card.xfer.buf[:card.blk_len] = b"\xec" * card.blk_len
    src: bytes | bytearray = card.xfer.buf
    if cc == _SD_STATUS:
        src, end = card.sd_status, 64
    elif cc == _SEND_SCR:
        src, end = card.scr, 8
    else:
        ends = {_SWITCH_FUNC: 64, _READ_SINGLE: io_len, _SEND_NUM_WR_BLOCKS: 4,
                _SEND_WRITE_PROT: 4, _GEN_CMD: card.blk_len}
        if cc not in ends:
            return 0
        end = ends[cc]
    ret = get(card, src)
    if card.xfer.offset >= end:
        card.state = CardState.TRAN
    return ret


def read_multiple_byte(card: DataCard, io_len: int) -> int:
    if card.xfer.offset == 0:
        if not card.range_ok(card.xfer.start, io_len):
            return 0
        card.load(card.xfer.start, io_len)
    return next_block_byte(card, io_len)


def next_block_byte(card: DataCard, io_len: int) -> int:
    """One byte of a multiple-block read from the loaded buffer; at the end
    of a block the address moves on and the block count (CMD23) runs down."""
    ret = get(card, card.xfer.buf)
    if card.xfer.offset >= io_len:
        card.xfer.start += io_len
        card.xfer.offset = 0
        if card.multi_blk_cnt:
            card.multi_blk_cnt -= 1
            if card.multi_blk_cnt == 0:
                card.state = CardState.TRAN
    return ret
