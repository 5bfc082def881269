"""The SD memory card (SD mode), as QEMU's ``sd-card`` device behaves.

Driven through the same calls QEMU's sdbus makes: :meth:`SDCard.do_command`,
:meth:`~SDCard.write_byte`/:meth:`~SDCard.read_byte` (and the ``*_data``
loops), :meth:`~SDCard.data_ready`/:meth:`~SDCard.receive_ready`.  Rules cite
the SD Physical Layer Simplified Specification ("PLS").  Where QEMU departs
from it the model follows QEMU and the departure is a switch of
the ledger (:mod:`harness.ledger.sd`); ``strict=True`` follows the spec.
Differences between QEMU versions are the ledger's ``sd.version.*``
entries (:mod:`harness.ledger.versions`), chosen by ``profile.version``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from harness.hwdefs import sd as S
from harness.hwdefs.sd import CardState
from harness.ledger import boundaries
from harness.model import sd_data
from harness.model.blockstore import BlockStore
from harness.model.clock import TimerHandle, VirtualClock
from harness.model.commands import CommandTable, Rsp
from harness.model.compat import defaults_for
from harness.model.deviations import Deviations, Strictness
from harness.model.sd_commands import SD
from harness.model.sd_registers import (
    PRV_BEFORE_SERIES,
    PRV_WITH_SERIES,
    build_cid,
    build_csd,
    build_scr,
    build_switch_status,
)
from harness.profile import NEWEST, BuildProfile

#: The first release whose ``sd_read_data`` takes a controller's chunk whole.
V_11_1 = (11, 1)
#: Ledger: a chunk read at or past the generic buffer's length (11.1).
GENERIC_PAST_SIZE = "sd.generic-read-past-size"

__all__ = ["SDCard", "Rsp", "CardState", "check_image_size", "check_spec_version"]

BLOCK = 512
INVALID_ADDRESS = 0xFFFFFFFF
OCR_POWER_DELAY_NS = 500_000  #: enquiry ACMD41 power-up delay QEMU models
OCR_QEMU_VDD = 0x00FFFF00
#: The commands an erase sequence allows between its steps (PLS 4.3.5).
_ERASE_SEQUENCE = frozenset(map(S.index, ("SEND_STATUS", "ERASE_WR_BLK_START",
                                          "ERASE_WR_BLK_END", "ERASE")))
#: What a locked card accepts besides classes 0 and 7 (PLS 4.3.7.5).
_LOCKED_CMDS = frozenset(map(S.index, ("SET_BLOCKLEN", "APP_CMD")))
_LOCKED_ACMDS = frozenset(S.index(n, app=True) for n in ("SD_SEND_OP_COND", "SET_CLR_CARD_DETECT"))
_READ_SINGLE, _READ_MULTIPLE = S.index("READ_SINGLE_BLOCK"), S.index("READ_MULTIPLE_BLOCK")
_WRITE_SINGLE, _WRITE_MULTIPLE = S.index("WRITE_BLOCK"), S.index("WRITE_MULTIPLE_BLOCK")
#: The multiple-block commands, open until CMD12.
_MULTIPLE = frozenset({_READ_MULTIPLE, _WRITE_MULTIPLE})
R3_MASK = 0x00FFFF00 | (1 << 24) | (1 << 29) | S.OCR_CCS | S.OCR_BUSY


def check_spec_version(spec_version: int, profile: BuildProfile) -> None:
    """QEMU accepts spec_version 2 and 3, and 1 before 10.1 (PLS versions
    1.10, 2.00, 3.01); anything else fails realize."""
    ok = {2, 3} | ({1} if profile.version < boundaries.SD_STATE_AND_SIZE_RULES.since else set())
    if spec_version not in ok:
        raise ValueError(
            f"sd-card spec_version {spec_version} is not supported by QEMU "
            f"{'.'.join(map(str, profile.version))} (accepts {sorted(ok)}): "
            "QEMU refuses it too ('Invalid SD card Spec version')")


def check_image_size(size: int, profile: BuildProfile) -> None:
    """QEMU's realize-time size rule.

    Before 10.1 any non-zero size must be a power of 2; from 10.1 a size up
    to 2 GiB must be a power of 2 and a larger one a multiple of 512 KiB.
    """
    if size <= 0:
        return
    if profile.version >= boundaries.SD_STATE_AND_SIZE_RULES.since and size > S.SDSC_MAX:
        if size % (512 << 10):
            raise ValueError(
                f"invalid SD card size {size}: above 2 GiB the size has to be a multiple "
                "of 512 KiB; QEMU refuses it too ('Invalid SD card size')")
        return
    if size & (size - 1):
        rules = profile.version >= boundaries.SD_STATE_AND_SIZE_RULES.since
        raise ValueError(
            f"invalid SD card size {size}: the size has to be a power of 2"
            f"{' up to 2 GiB' if rules else ''}; "
            "QEMU refuses it too ('Invalid SD card size')")


class SDCard:
    """An SD memory card in SD mode (no SPI, no eMMC).

    ``image`` is a raw image opened read-only (never written; writes stay in
    memory); ``size`` alone makes an all-zero card; neither means an empty
    slot (``inserted`` False).  ``spec_version`` and ``erase_blocks_as_zero``
    left at None take the model's defaults for ``machine`` on ``profile``'s
    version (see :func:`harness.model.compat.defaults_for`).  ``readonly`` is the
    write-protect switch the host controller sees; QEMU refuses read-only
    drives at realize, so a QEMU card always reports False.  ``strict``
    follows the spec where QEMU deviates (:mod:`harness.ledger.sd`).
    """

    #: The protocol's command table the dispatcher looks commands up in.
    commands: ClassVar[CommandTable] = SD

    def __init__(self, clock: VirtualClock, image: str | Path | None = None,
                 size: int | None = None, *, spec_version: int | None = None,
                 erase_blocks_as_zero: bool | None = None, profile: BuildProfile = NEWEST,
                 machine: str | None = None, strict: Strictness = False,
                 readonly: bool = False) -> None:
        self.clock = clock
        self.profile = profile
        self.version = profile.version
        self.machine = machine
        self.strict = strict
        self.dev = Deviations(("sd",), strict)
        defaults = defaults_for(machine, profile)
        self.series = profile.has_erase_blocks_as_zero
        if erase_blocks_as_zero is not None and not self.series:
            raise ValueError(
                "erase_blocks_as_zero needs the erase series: this build has no "
                "'erase-blocks-as-zero' property (QEMU refuses the property too)")
        default_spec = defaults["spec_version"]
        assert isinstance(default_spec, int)
        self.spec_version = int(spec_version if spec_version is not None else default_spec)
        check_spec_version(self.spec_version, profile)
        self.erase_blocks_as_zero: bool | None = None
        if self.series:
            self.erase_blocks_as_zero = bool(
                erase_blocks_as_zero if erase_blocks_as_zero is not None
                else defaults["erase-blocks-as-zero"])
        self.store: BlockStore | None = None
        if image is not None or size is not None:
            self.store = BlockStore(image, size)
            check_image_size(self.store.size, profile)
        self._inserted = self.store is not None
        self.readonly = readonly
        self._init_runtime()
        self.reset()

    def _init_runtime(self) -> None:
        """State that lives outside the registers and survives resets (shared
        with the eMMC device, :mod:`harness.model.emmc`)."""
        #: Source of CMD3's random RCA (QEMU >= 9.1); replace to mirror a run.
        self._rca_rng = random.Random(0x5D)
        self.rca_source: Callable[[], int] = self._draw_rca
        #: The RCA the card had when the last CMD3 replaced it.
        self.previous_rca = 0
        #: Set when QEMU would abort (a failed assertion); the card is then dead.
        self.fatal: str | None = None
        #: The ledger's QEMU bug behind :attr:`fatal`, where one is.
        self.fatal_key: str | None = None
        # Internal transfer state QEMU keeps across resets.
        self.xfer = sd_data.DataBuffer()
        self.current_cmd = 0
        #: Response type of the last command (R1 vs R1b is not visible in the bytes).
        self.last_rsp = Rsp.R0
        self.blk_written = 0
        self.vhs = 0
        #: Signalling voltage the host selected (set_voltage), in mV.
        self.signal_mv = 3300
        self._timer: TimerHandle | None = None
        self.pwd = b""

    def _draw_rca(self) -> int:
        """The next RCA of the card's own generator (a bound method, not a
        closure: a copy of the card draws from its own copy)."""
        return self._rca_rng.getrandbits(16)

    # -- properties --------------------------------------------------------

    @property
    def legacy(self) -> bool:
        """QEMU before the command-table rework (7.2 behaviour, < 9.1)."""
        return self.version < boundaries.SD_PROTOCOL_REWORK.since

    @property
    def inserted(self) -> bool:
        return self._inserted

    @inserted.setter
    def inserted(self, value: bool) -> None:
        """Insert (resets the card, as a media change does) or eject."""
        if value and self.store is None:
            raise ValueError("no medium to insert: the card has neither image nor size")
        was = self._inserted
        self._inserted = bool(value)
        if value and not was:
            self.reset()

    @property
    def size(self) -> int:
        """Card capacity in bytes (the image rounded down to 512 bytes)."""
        return 0 if self.store is None else (self.store.size // BLOCK) * BLOCK

    @property
    def capacity_class(self) -> str:
        return S.capacity_class(self.size)

    @property
    def high_capacity(self) -> bool:
        """OCR CCS: block addressing (set at power-up for cards over 2 GiB)."""
        return bool(self.ocr & S.OCR_CCS)

    @property
    def cid(self) -> bytes:
        return bytes(self._cid)

    @property
    def csd(self) -> bytes:
        return bytes(self.csd_reg)

    @property
    def scr(self) -> bytes:
        return bytes(self._scr)

    @property
    def ocr_bytes(self) -> bytes:
        return self.ocr.to_bytes(4, "big")

    @property
    def sd_status(self) -> bytes:
        return bytes(self._sd_status)

    @property
    def locked(self) -> bool:
        return bool(self.card_status & S.CARD_IS_LOCKED)

    @property
    def erase_value(self) -> int:
        """Byte an erased block reads back: 0x00 with erase-blocks-as-zero, else 0xFF."""
        return 0x00 if self.erase_blocks_as_zero else 0xFF

    @property
    def wp_group_shift(self) -> int:
        """log2 of the write-protect group size: QEMU 2 MiB; the CSD advertises
        (WP_GRP_SIZE+1)*(SECTOR_SIZE+1) write blocks (PLS 5.3.2)."""
        if self.dev.qemu("sd.wp-group-size"):
            return 21
        return (10 if self.size == S.SDSC_MAX else 9) + 6 + 7

    def image_read(self, offset: int, length: int) -> bytes:
        """Current card contents (what the guest would read)."""
        if self.store is None:
            return bytes(length)
        return self.store.read(offset, length)

    def qemu(self, key: str) -> bool:
        """Follow QEMU (True) or the specification for deviation ``key``."""
        return self.dev.qemu(key)

    def migrated(self) -> None:
        """The card as a migration's destination has it: QEMU >= 9.1 keeps
        the data block's length (``data_size``) out of ``sd_vmstate``, so the
        destination's is 0 and the card stops after one more byte or chunk
        (ledger ``sd.data-size-not-migrated``)."""
        if not self.legacy and self.qemu("sd.data-size-not-migrated"):
            self.xfer.size = 0

    # -- reset and registers -----------------------------------------------

    def reset(self) -> None:
        """Device reset (also what CMD0 does): PLS 4.2.1 / QEMU ``sd_reset``.

        The power-up timer, the transfer buffer and its length survive, as in QEMU.
        """
        self.state = CardState.IDLE
        self.rca = 0
        self.ocr = OCR_QEMU_VDD if self.qemu("sd.ocr-reserved-voltage-bits") else S.OCR_VDD_2V7_3V6
        data_stat = False
        if self.series:
            data_stat = not self.erase_blocks_as_zero
        elif not self.qemu("sd.scr-data-stat-after-erase"):
            data_stat = True
        cmd23_bit = self.spec_version >= 3 and not self.qemu("sd.scr-cmd23-support")
        self._scr = build_scr(self.spec_version, data_stat, cmd23_bit)
        self._cid = build_cid(PRV_WITH_SERIES if self.series else PRV_BEFORE_SERIES)
        self.csd_reg = build_csd(self.size)
        self._reset_session()

    def _reset_session(self) -> None:
        """What every reset clears, SD and eMMC alike: status, protection,
        erase range, block length and count, the lock password if volatile."""
        self.card_status = S.READY_FOR_DATA
        self._sd_status = bytearray(64)
        self.wp_groups: set[int] = set()
        self.function_group = [0] * 6
        self.erase_start = INVALID_ADDRESS
        self.erase_end = INVALID_ADDRESS
        self._erase_seq = 0  # strict: 1 after CMD32, 2 after CMD33
        self.blk_len = BLOCK
        self.multi_blk_cnt = 0
        self.expecting_acmd = False
        self.write_blocked = False
        if self.qemu("sd.lock-password-volatile"):
            self.pwd = b""
        elif self.pwd:
            self.card_status |= S.CARD_IS_LOCKED

    def _powerup(self) -> None:
        """Power-up complete (PLS 4.2.3): busy bit set, CCS for cards over 2 GiB.
        Only ever on a card not yet powered up (QEMU's ``sd_ocr_powerup``
        asserts it): ACMD41/CMD1 cancel the timer before powering up at once
        and start it only while the busy bit is clear, a reset clears the bit."""
        self.ocr |= S.OCR_BUSY
        if self.size > S.SDSC_MAX:
            self.ocr |= S.OCR_CCS

    # -- the command path ----------------------------------------------------

    def do_command(self, cmd: int, arg: int) -> bytes:
        """Send a command; returns the response payload as QEMU's sd_do_command
        does: b"" (none/illegal), 4 bytes, or 16 bytes for R2.  No CRC is
        checked: QEMU's check is disabled and SDHCI passes none."""
        if self.fatal is not None or not self._inserted:
            return b""
        cmd &= 0x3F
        arg &= 0xFFFFFFFF
        if self.state == CardState.INACTIVE and not self.legacy:  # "inactive": >= 9.1
            self.current_cmd = 0
            return b""
        if self.locked and not self._valid_while_locked(cmd):
            self.card_status |= S.ILLEGAL_COMMAND
            self.expecting_acmd = False
            return self._finish(cmd, Rsp.ILLEGAL)
        last_state = self.state
        if not self.qemu("sd.erase-reset-never"):
            self._strict_erase_sequence(cmd)
        if self.expecting_acmd:
            self.expecting_acmd = False
            rtype = self._app_command(cmd, arg)
        else:
            rtype = self._normal_command(cmd, arg)
        if rtype is Rsp.ILLEGAL:
            self.card_status |= S.ILLEGAL_COMMAND
        else:
            self.card_status &= ~S.CURRENT_STATE
            self.card_status |= (int(last_state) << 9) & (
                0xFFFFFFFF if self.legacy else S.CURRENT_STATE)
            if self.legacy:
                self.current_cmd = cmd
        return self._finish(cmd, rtype, last_state)

    def _finish(self, cmd: int, rtype: Rsp, state_before: CardState | None = None) -> bytes:
        self.last_rsp = rtype
        out = b""
        if rtype in (Rsp.R1, Rsp.R1B):
            out = self.card_status.to_bytes(4, "big")
            self.card_status &= ~S.status_mask(S.ClearCondition.C)
        elif rtype is Rsp.R2_CID:
            out = bytes(self._cid)
        elif rtype is Rsp.R2_CSD:
            out = bytes(self.csd_reg)
        elif rtype is Rsp.R3:
            out = (self.ocr & R3_MASK).to_bytes(4, "big")
        elif rtype is Rsp.R6:
            out = ((self.rca << 16) | S.r6_status(self.card_status)).to_bytes(4, "big")
            self.card_status &= ~(S.status_mask(S.ClearCondition.C) & 0xC81FFF)
        elif rtype is Rsp.R7:
            out = self.vhs.to_bytes(4, "big")
        elif rtype is Rsp.R0 and not self.legacy and self.qemu("sd.command-during-transfer"):
            self.xfer.start = 0
            self.xfer.offset = 0
        if rtype is not Rsp.ILLEGAL:
            self.card_status &= ~S.status_mask(S.ClearCondition.B)
        if not self.legacy:
            if self.qemu("sd.command-during-transfer"):
                self.current_cmd = 0 if rtype is Rsp.ILLEGAL else cmd
            elif (rtype is not Rsp.ILLEGAL and self.state in (CardState.DATA, CardState.RCV)
                  and self.state != state_before):
                self.current_cmd = cmd
        return out

    def _valid_while_locked(self, cmd: int) -> bool:
        """PLS 4.3.7.5: a locked card accepts classes 0 and 7, CMD16, CMD55,
        ACMD41 and ACMD42 only."""
        if self.expecting_acmd:
            return cmd in _LOCKED_ACMDS
        if cmd in _LOCKED_CMDS:
            return True
        legacy = self._legacy_classes()
        if legacy is not None:  # ledger "sd.version.class-table"
            return legacy[cmd] in (0, 7)
        row = self.commands.cmd.get(cmd)
        return row is not None and row.in_proto and row.cls in (0, 7)

    def _strict_erase_sequence(self, cmd: int) -> None:
        """Strict PLS 4.3.5: other commands inside an erase sequence reset it."""
        if self._erase_seq and not self.expecting_acmd and cmd not in _ERASE_SEQUENCE:
            self._erase_seq = 0
            self.erase_start = self.erase_end = INVALID_ADDRESS
            self.card_status |= S.ERASE_RESET

    def _normal_command(self, cmd: int, arg: int) -> Rsp:
        self.card_status &= ~S.APP_CMD
        if self.multi_blk_cnt and cmd not in _MULTIPLE:
            if self.qemu("sd.command-during-transfer") or self.state not in (
                    CardState.DATA, CardState.RCV):
                self.multi_blk_cnt = 0
        row = self.commands.cmd.get(cmd)
        if row is None:
            return Rsp.ILLEGAL
        legacy = self._legacy_classes()
        cls = legacy[cmd] if legacy is not None else row.cls
        if cls == 6 and self.high_capacity:
            return Rsp.ILLEGAL  # class 6 is SDSC only (PLS 4.3.4, CCC of CSD v2)
        return self.commands.handler(row)(self, arg)

    def _app_command(self, cmd: int, arg: int) -> Rsp:
        """An ACMD with a row runs its handler (security ACMDs: illegal);
        any other index runs the regular command (PLS 4.3.9)."""
        self.card_status |= S.APP_CMD
        row = self.commands.acmd.get(cmd)
        if row is not None:
            return self.commands.handler(row)(self, arg)
        return self._normal_command(cmd, arg)

    def _legacy_classes(self) -> tuple[int, ...] | None:
        """QEMU before 9.1 looked classes up in a fixed table, not in the
        rows (ledger "sd.version.class-table")."""
        return self.commands.legacy_classes if self.legacy else None

    # -- helpers -------------------------------------------------------------

    def _in_data_transfer_mode(self) -> bool:
        return self.state in S.DATA_TRANSFER_MODE_STATES

    def _rca_same(self, arg: int) -> bool:
        return (arg >> 16) == self.rca

    def _address(self, arg: int) -> int:
        """Byte address: SDSC takes bytes, SDHC/SDXC blocks (PLS 4.3.14)."""
        return arg << 9 if self.high_capacity else arg

    def xfer_len(self) -> int:
        """Block length of read/write commands (PLS 4.3.2: fixed 512 on SDHC)."""
        if self.high_capacity and not self.qemu("sd.sdhc-block-length"):
            return BLOCK
        return self.blk_len

    def range_ok(self, addr: int, length: int) -> bool:
        if addr + length > self.size:
            self.card_status |= (S.ADDRESS_ERROR if self.qemu("sd.out-of-range-as-address-error")
                                 else S.OUT_OF_RANGE)
            return False
        return True

    def wp_addr(self, addr: int) -> bool:
        return (addr >> self.wp_group_shift) in self.wp_groups

    def _to_sending(self, start: int, data: bytes | None, size: int,
                    own_state_check: bool = True) -> Rsp:
        """Enter sending-data with a prepared buffer (QEMU >= 9.1).  QEMU
        9.1-10.0 forgot the state check for callers without their own
        (ledger "sd.version.sendingdata-state")."""
        if self.state != CardState.TRAN:
            lax = (not own_state_check
                   and self.version < boundaries.SD_STATE_AND_SIZE_RULES.since
                   and self.qemu("sd.data-command-any-state"))
            if not lax:
                return Rsp.ILLEGAL
        self.state = CardState.DATA
        self.xfer.start = start
        self.xfer.offset = 0
        if data is not None:
            self.xfer.buf[:len(data)] = data
        if size:
            self.xfer.size = size
        return Rsp.R1

    def _to_receiving(self, start: int, size: int) -> Rsp:
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self.state = CardState.RCV
        self.xfer.start = start
        self.xfer.offset = 0
        self.xfer.size = size or BLOCK
        return Rsp.R1

    def _legacy_to(self, state: CardState, start: int | None = 0) -> Rsp:
        self.state = state
        if start is not None:
            self.xfer.start = start
        self.xfer.offset = 0
        return Rsp.R1

    def _wide(self, value: int) -> bytes:
        """A 32-bit data value as QEMU sends it (host order) or the spec (MSB first)."""
        if self.qemu("sd.wide-data-byte-order"):
            return (value & 0xFFFFFFFF).to_bytes(4, "little")
        return (value & 0xFFFFFFFF).to_bytes(4, "big")

    # -- class 0: basic (PLS 4.7.4 Table 4-22) --------------------------------

    @SD.handles(0)
    def _cmd_go_idle(self, arg: int) -> Rsp:
        """CMD0 (PLS 4.2.1): software reset to idle, no response."""
        if self.state != CardState.INACTIVE:
            self.reset()
        return Rsp.R0

    @SD.handles(2)
    def _cmd_all_send_cid(self, arg: int) -> Rsp:
        """CMD2 (PLS 4.2.3): ready -> identification, CID in R2."""
        if self.state != CardState.READY:
            return Rsp.ILLEGAL
        self.state = CardState.IDENT
        return Rsp.R2_CID

    @SD.handles(3)
    def _cmd_send_relative_addr(self, arg: int) -> Rsp:
        """CMD3 (PLS 4.2.4): publish a new RCA in R6, go to stand-by."""
        if self.state not in (CardState.IDENT, CardState.STBY):
            return Rsp.ILLEGAL
        self.state = CardState.STBY
        self.previous_rca = self.rca
        if self.legacy:  # ledger "sd.version.rca": < 9.1 steps by 0x4567
            self.rca = (self.rca + 0x4567) & 0xFFFF
        else:
            self.rca = self.rca_source() & 0xFFFF
        return Rsp.R6

    @SD.handles(6)
    def _cmd_switch_function(self, arg: int) -> Rsp:
        """CMD6 (PLS 4.3.10): 64-byte switch function status."""
        if not self._in_data_transfer_mode():
            return Rsp.ILLEGAL
        if not self.legacy and self.state != CardState.TRAN:  # "cmd6-state": >= 9.1
            return Rsp.ILLEGAL
        status, self.function_group = build_switch_status(
            arg, self.function_group, not self.qemu("sd.cmd6-status-echoes-arg"))
        if self.legacy:
            self.xfer.buf[:64] = status
            return self._legacy_to(CardState.DATA)
        return self._to_sending(0, status, 64)

    @SD.handles(7)
    def _cmd_select(self, arg: int) -> Rsp:
        """CMD7 (PLS 4.3.1 / Table 4-42): select toggles stby<->tran.  The
        spec's dis<->prg toggle has no case here: the card is never
        programming (QEMU's card commits a write block as it arrives and
        returns to tran, so no state leads to prg or dis)."""
        same = self._rca_same(arg)
        st = self.state
        if st == CardState.STBY:
            if not same:
                return Rsp.R0
            self.state = CardState.TRAN
            return Rsp.R1B
        if st in (CardState.TRAN, CardState.DATA):
            if same:
                return Rsp.ILLEGAL
            self.state = CardState.STBY
            return Rsp.R1B
        return Rsp.ILLEGAL

    @SD.handles(8)
    def _cmd_send_if_cond(self, arg: int) -> Rsp:
        """CMD8 (PLS 4.3.13): voltage check, R7 echo; no response on mismatch."""
        if self.spec_version < 2:
            return Rsp.ILLEGAL
        if self.state != CardState.IDLE:
            return Rsp.ILLEGAL
        self.vhs = 0
        if self.qemu("sd.cmd8-vhs"):
            high = arg >> 8
            if not high or (high & (high - 1)):
                return Rsp.R0
            self.vhs = arg
        else:
            if (arg >> 8) & 0xF != 0b0001:
                return Rsp.R0
            self.vhs = arg & 0xFFF
        return Rsp.R7

    @SD.handles(9)
    def _cmd_send_csd(self, arg: int) -> Rsp:
        """CMD9 (PLS 4.7.4): CSD in R2, stand-by state only."""
        if self.state != CardState.STBY:
            return Rsp.ILLEGAL
        return Rsp.R2_CSD if self._rca_same(arg) else Rsp.R0

    @SD.handles(10)
    def _cmd_send_cid(self, arg: int) -> Rsp:
        """CMD10 (PLS 4.7.4): CID in R2, stand-by state only."""
        if self.state != CardState.STBY:
            return Rsp.ILLEGAL
        return Rsp.R2_CID if self._rca_same(arg) else Rsp.R0

    @SD.handles(12)
    def _cmd_stop(self, arg: int) -> Rsp:
        """CMD12 (PLS 4.3.3/4.3.4): end a multiple block transfer."""
        if self.state == CardState.DATA:
            self.state = CardState.TRAN
            return Rsp.R1B
        if self.state == CardState.RCV:
            self.state = CardState.TRAN
            return Rsp.R1B if self.legacy else Rsp.R1
        return Rsp.ILLEGAL

    @SD.handles(13)
    def _cmd_send_status(self, arg: int) -> Rsp:
        """CMD13 (PLS 4.10.1): status in R1, data-transfer mode only."""
        if not self._in_data_transfer_mode():
            return Rsp.ILLEGAL
        return Rsp.R1 if self._rca_same(arg) else Rsp.R0

    @SD.handles(15)
    def _cmd_go_inactive(self, arg: int) -> Rsp:
        """CMD15 (PLS 4.2.5): addressed card goes inactive, no response."""
        if not self._in_data_transfer_mode():
            return Rsp.ILLEGAL
        if self._rca_same(arg):
            self.state = CardState.INACTIVE
        return Rsp.R0

    # -- class 2: block read (PLS 4.3.3) -------------------------------------

    @SD.handles(16)
    def _cmd_set_blocklen(self, arg: int) -> Rsp:
        """CMD16 (PLS 4.3.2): block length, at most 512 bytes."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        if arg > BLOCK:
            self.card_status |= S.BLOCK_LEN_ERROR
        else:
            self.blk_len = arg
        return Rsp.R1

    @SD.handles(17)
    def _cmd_read_single(self, arg: int) -> Rsp:
        """CMD17 (PLS 4.3.3): one block from the address."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        n = self.xfer_len()
        if not self.range_ok(addr, n):
            return Rsp.R1
        if self.legacy:  # "cmd17-length": < 9.1 loads io_len at the first read
            return self._legacy_to(CardState.DATA, addr)
        self.load(addr, n)
        return self._to_sending(addr, None, n)

    def load(self, addr: int, n: int) -> None:
        if self.store is not None and n and self.store.in_range(addr, n):
            self.xfer.buf[:n] = self.store.read(addr, n)

    @SD.handles(18)
    def _cmd_read_multiple(self, arg: int) -> Rsp:
        """CMD18 (PLS 4.3.3): blocks until CMD12 or the CMD23 count."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        if not self.range_ok(addr, self.xfer_len()):
            return Rsp.R1
        return self._legacy_to(CardState.DATA, addr)

    @SD.handles(19)
    def _cmd_send_tuning(self, arg: int) -> Rsp:
        """CMD19 (PLS 4.2.4.5): the 64-byte tuning pattern (spec 3.01 cards)."""
        if self.spec_version < 3:
            return Rsp.ILLEGAL
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            return self._legacy_to(CardState.DATA, None)
        return self._to_sending(0, S.TUNING_BLOCK_4BIT, 64, own_state_check=False)

    @SD.handles(23)
    def _cmd_set_block_count(self, arg: int) -> Rsp:
        """CMD23 (PLS 4.3.3): block count of the next CMD18/CMD25."""
        if self.spec_version < 3:
            return Rsp.ILLEGAL
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self.multi_blk_cnt = arg
        return Rsp.R1

    # -- class 4: block write (PLS 4.3.4) ------------------------------------

    def _wp_check(self, addr: int) -> None:
        if self.size <= S.SDSC_MAX and self.wp_addr(addr):
            self.card_status |= S.WP_VIOLATION
            self.write_blocked = True
        if self.csd_reg[14] & (sd_data.CSD_PERM_WP | sd_data.CSD_TMP_WP):
            self.card_status |= S.WP_VIOLATION
            self.write_blocked = True

    @SD.handles(24)
    def _cmd_write_single(self, arg: int) -> Rsp:
        """CMD24 (PLS 4.3.4): one block to the address."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        n = self.xfer_len()
        if not self.range_ok(addr, n):
            return Rsp.R1
        self.write_blocked = False
        self._wp_check(addr)
        self.blk_written = 0
        if self.legacy:
            return self._legacy_to(CardState.RCV, addr)
        return self._to_receiving(addr, n)

    @SD.handles(25)
    def _cmd_write_multiple(self, arg: int) -> Rsp:
        """CMD25 (PLS 4.3.4): blocks until CMD12 or the CMD23 count."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        if not self.range_ok(addr, self.xfer_len()):
            return Rsp.R1
        self._legacy_to(CardState.RCV, addr)
        self.blk_written = 0
        self.write_blocked = False
        self._wp_check(addr)
        return Rsp.R1

    @SD.handles(26)
    def _cmd_program_cid(self, arg: int) -> Rsp:
        """CMD26: reserved for manufacturers; QEMU < 9.1 accepted 16 CID bytes
        (ledger "sd.version.cmd26")."""
        if not self.legacy or self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        return self._legacy_to(CardState.RCV)

    @SD.handles(27)
    def _cmd_program_csd(self, arg: int) -> Rsp:
        """CMD27 (PLS 4.3.4): program the CSD's writable bits."""
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            return self._legacy_to(CardState.RCV)
        return self._to_receiving(0, 16)

    # -- class 6: write protection (PLS 4.3.6, SDSC only) --------------------

    def _set_clr_wp(self, arg: int, protect: bool) -> Rsp:
        if self.size > S.SDSC_MAX:
            return Rsp.ILLEGAL
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        if not self.range_ok(addr, 1):
            return Rsp.R1B
        group = addr >> self.wp_group_shift
        if protect:
            self.wp_groups.add(group)
        else:
            self.wp_groups.discard(group)
        return Rsp.R1B if self.legacy else Rsp.R1

    @SD.handles(28)
    def _cmd_set_write_prot(self, arg: int) -> Rsp:
        """CMD28 (PLS 4.3.6): protect the group holding the address."""
        return self._set_clr_wp(arg, True)

    @SD.handles(29)
    def _cmd_clr_write_prot(self, arg: int) -> Rsp:
        """CMD29 (PLS 4.3.6): unprotect the group holding the address."""
        return self._set_clr_wp(arg, False)

    def wp_bits(self, addr: int) -> int:
        """CMD30 payload: bit i = group i after the one holding ``addr``
        (groups past the end read 0, PLS 4.3.6)."""
        shift = self.wp_group_shift
        out = 0
        for i in range(32):
            a = addr + (i << shift)
            if a >= self.size:
                continue
            if (a >> shift) in self.wp_groups:
                out |= 1 << i
        return out

    @SD.handles(30)
    def _cmd_send_write_prot(self, arg: int) -> Rsp:
        """CMD30 (PLS 4.3.6): 32 write-protect bits from the address."""
        if self.size > S.SDSC_MAX:
            return Rsp.ILLEGAL
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        addr = self._address(arg)
        if not self.range_ok(addr, self.blk_len):
            return Rsp.R1
        data = self._wide(self.wp_bits(arg))
        if self.legacy:
            self.xfer.buf[:4] = data
            return self._legacy_to(CardState.DATA, addr)
        return self._to_sending(addr, data, 4)

    # -- class 5: erase (PLS 4.3.5) ------------------------------------------

    @SD.handles(32)
    def _cmd_erase_start(self, arg: int) -> Rsp:
        """CMD32 (PLS 4.3.5): first erase address (bytes SDSC, blocks SDHC)."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self.erase_start = arg
        self._erase_seq = 1
        return Rsp.R1

    @SD.handles(33)
    def _cmd_erase_end(self, arg: int) -> Rsp:
        """CMD33 (PLS 4.3.5): last erase address, inclusive."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self.erase_end = arg
        self._erase_seq = 2 if self._erase_seq else 0
        return Rsp.R1

    @SD.handles(38)
    def _cmd_erase(self, arg: int) -> Rsp:
        """CMD38 (PLS 4.3.5): erase the selected range."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self._erase_seq = 0
        if self.csd_reg[14] & (sd_data.CSD_PERM_WP | sd_data.CSD_TMP_WP):
            self.card_status |= S.WP_VIOLATION
            return Rsp.R1B
        sd_data.erase(self)
        return Rsp.R1B

    # -- class 7: lock card (PLS 4.3.7) --------------------------------------

    @SD.handles(42)
    def _cmd_lock_unlock(self, arg: int) -> Rsp:
        """CMD42 (PLS 4.3.7): receive the lock/unlock data block (its length:
        ledger "sd.version.cmd42-length", < 9.1 CMD16 length, >= 9.1 512 bytes)."""
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            return self._legacy_to(CardState.RCV)
        n = 0 if self.qemu("sd.cmd42-data-length") else self.blk_len
        return self._to_receiving(0, n)

    # -- class 8: application specific (PLS 4.3.9) ---------------------------

    @SD.handles(55)
    def _cmd_app_cmd(self, arg: int) -> Rsp:
        """CMD55 (PLS 4.3.9): the next command is an ACMD."""
        if self.state in (CardState.READY, CardState.IDENT, CardState.INACTIVE):
            return Rsp.ILLEGAL
        if not self._rca_same(arg):
            return Rsp.R0
        self.expecting_acmd = True
        self.card_status |= S.APP_CMD
        return Rsp.R1

    @SD.handles(56)
    def _cmd_gen_cmd(self, arg: int) -> Rsp:
        """CMD56 (PLS 4.3.12): vendor block; writes ignored; reads zeros
        (>= 9.1) or 0xEC (< 9.1): ledger "sd.version.cmd56"."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        if self.legacy:
            return self._legacy_to(CardState.DATA if arg & 1 else CardState.RCV, None)
        if arg & 1:
            self.xfer.buf[:] = bytes(BLOCK)
            size = 0 if self.qemu("sd.cmd56-stale-length") else (self.blk_len or BLOCK)
            return self._to_sending(0, None, size)
        return self._to_receiving(0, 0)

    @SD.handles(6, app=True)
    def _acmd_set_bus_width(self, arg: int) -> Rsp:
        """ACMD6 (PLS 4.3.9): bus width, kept in SD status DAT_BUS_WIDTH."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self._sd_status[0] = (self._sd_status[0] & 0x3F) | ((arg & 3) << 6)
        return Rsp.R1

    @SD.handles(13, app=True)
    def _acmd_sd_status(self, arg: int) -> Rsp:
        """ACMD13 (PLS 4.10.2): 64-byte SD status."""
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            return self._legacy_to(CardState.DATA)
        return self._to_sending(0, bytes(self._sd_status), 64, own_state_check=False)

    @SD.handles(22, app=True)
    def _acmd_send_num_wr_blocks(self, arg: int) -> Rsp:
        """ACMD22 (PLS 4.3.9): blocks written by the last write command."""
        data = self._wide(self.blk_written)
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            self.xfer.buf[:4] = data
            return self._legacy_to(CardState.DATA)
        return self._to_sending(0, data, 4, own_state_check=False)

    @SD.handles(23, app=True)
    def _acmd_set_wr_blk_erase_count(self, arg: int) -> Rsp:
        """ACMD23 (PLS 4.3.9): pre-erase count; accepted and ignored."""
        return Rsp.R1 if self.state == CardState.TRAN else Rsp.ILLEGAL

    @SD.handles(41, app=True)
    def _acmd_send_op_cond(self, arg: int) -> Rsp:
        """ACMD41 (PLS 4.2.3.1): OCR in R3; an enquiry (voltage window 0)
        starts a 0.5 ms power-up timer, any other argument powers up at once."""
        if self.state != CardState.IDLE:
            return Rsp.ILLEGAL
        window = arg & S.OCR_VOLTAGE_WINDOW
        hcs_ok = (self.qemu("sd.acmd41-hcs-ignored") or self.size <= S.SDSC_MAX
                  or bool(arg & S.ACMD41_HCS))
        if not self.ocr & S.OCR_BUSY and hcs_ok:
            if window:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                self._powerup()
            elif self._timer is None or not self._timer.pending:
                self._timer = self.clock.schedule(OCR_POWER_DELAY_NS, self._powerup)
        if self.ocr & window & S.OCR_VOLTAGE_WINDOW:
            if hcs_ok:
                self.state = CardState.READY
        elif window and not self.qemu("sd.acmd41-voltage-mismatch"):
            self.state = CardState.INACTIVE
        return Rsp.R3

    @SD.handles(42, app=True)
    def _acmd_set_clr_card_detect(self, arg: int) -> Rsp:
        """ACMD42 (PLS 4.3.9): card detect pull-up; accepted and ignored."""
        return Rsp.R1 if self.state == CardState.TRAN else Rsp.ILLEGAL

    @SD.handles(51, app=True)
    def _acmd_send_scr(self, arg: int) -> Rsp:
        """ACMD51 (PLS 5.6): the 8-byte SCR."""
        if self.legacy:
            if self.state != CardState.TRAN:
                return Rsp.ILLEGAL
            return self._legacy_to(CardState.DATA)
        return self._to_sending(0, bytes(self._scr), 8, own_state_check=False)

    # -- data path -------------------------------------------------------------

    # -- bus lines -------------------------------------------------------------

    def set_voltage(self, millivolts: int) -> None:
        """The host's signalling voltage (3300 or 1800 mV).  No effect: the
        model, like QEMU's card, has no 1.8 V signalling (PLS 4.2.4.2)."""
        self.signal_mv = millivolts

    @property
    def dat_lines(self) -> int:
        """DAT[3:0] levels: the card never holds a line low (no busy signalling)."""
        return 0xF

    @property
    def cmd_line(self) -> bool:
        """CMD line level: high between commands."""
        return True

    def data_ready(self) -> bool:
        """The card has data to send (sending-data state)."""
        return self.state == CardState.DATA

    def receive_ready(self) -> bool:
        """The card takes data (receiving-data state)."""
        return self.state == CardState.RCV

    def write_byte(self, value: int) -> None:
        """One data byte from the host (QEMU ``sd_write_byte``)."""
        sd_data.write_byte(self, value)

    def read_byte(self) -> int:
        """One data byte to the host (QEMU ``sd_read_byte``); 0x00 when the
        card has nothing to send."""
        return sd_data.read_byte(self)

    def write_data(self, data: bytes) -> None:
        """The same as :meth:`write_byte` for each byte, but the bytes inside
        a CMD24/CMD25 block (neither its first nor its last) are copied in
        one slice: nothing can change between them."""
        i = 0
        while i < len(data):
            n = self._span(len(data) - i, receiving=True)
            if n:
                off = self.xfer.offset
                self.xfer.buf[off:off + n] = data[i:i + n]
                self.xfer.offset += n
                i += n
            else:
                sd_data.write_byte(self, data[i])
                i += 1

    def read_chunk(self, length: int) -> bytes:
        """``length`` bytes asked for at once (QEMU ``sdbus_read_data``: the
        SDHCI's block, the Allwinner host's word; other controllers read byte
        by byte).  From 11.1 ``sd_read_data`` gives a generic read the chunk
        whole: where the read already stands at the generic buffer's length
        (a command during the transfer made that buffer the source), QEMU
        sends no byte and asserts; past it, it copies the whole chunk from
        there (ledger ``sd.generic-read-past-size``; the rule: nothing is
        sent, the card goes back to transfer).  Else :meth:`read_data`."""
        x = self.xfer
        if (self.version < V_11_1 or self.legacy or self.fatal is not None
                or not self._inserted or self.state != CardState.DATA
                or self.card_status & sd_data._blockers(self)
                or self.current_cmd not in sd_data.SENDING_COMMANDS or x.offset < x.size):
            return self.read_data(length)
        if not self.qemu("sd.generic-read-past-size"):
            self.state = CardState.TRAN
            return bytes(length)
        if x.offset == x.size:
            self.fatal = "QEMU asserts: sd_read_data sent no byte of the chunk (sdbus_read_data)"
            self.fatal_key = GENERIC_PAST_SIZE
            return bytes(length)
        out = bytes(x.buf[x.offset:x.offset + length]).ljust(length, b"\0")
        x.offset += length
        self.state = CardState.TRAN
        return out

    def read_data(self, length: int) -> bytes:
        """The same as :meth:`read_byte` ``length`` times, with the bytes
        inside a CMD17/CMD18 block (neither its first nor its last) sliced
        from the block buffer.  A card that sends nothing (no data state,
        blocked, ejected, dead) gives zeros and stays as it is."""
        if (self.fatal is not None or not self._inserted or self.state != CardState.DATA
                or self.card_status & sd_data._blockers(self)
                or (not self.legacy and self.current_cmd != _READ_MULTIPLE
                    and self.current_cmd not in sd_data.SENDING_COMMANDS)):
            return bytes(length)
        out = bytearray()
        while len(out) < length:
            n = self._span(length - len(out), receiving=False)
            if n:
                off = self.xfer.offset
                chunk = self.xfer.buf[off:off + n]
                out += chunk + bytes(n - len(chunk))
                self.xfer.offset += n
            else:
                out.append(sd_data.read_byte(self))
        return bytes(out)

    def _span(self, want: int, *, receiving: bool) -> int:
        """How many data bytes from here on a block transfer moves without a
        state change: 0 at a block's first or last byte, or for any other
        command, where the byte-wise path decides."""
        state = CardState.RCV if receiving else CardState.DATA
        if (self.fatal is not None or not self._inserted or self.state != state
                or self.xfer.offset == 0
                or self.card_status & sd_data._blockers(self)):
            return 0
        cc = self.current_cmd
        if receiving:
            if cc == _WRITE_MULTIPLE:
                end = self.xfer_len()
            elif cc == _WRITE_SINGLE:
                end = self.blk_len if self.legacy else self.xfer.size
            else:
                return 0
            end = min(end, BLOCK)
        else:
            io_len = BLOCK if self.high_capacity else self.blk_len
            if cc == _READ_MULTIPLE:
                end = io_len
            elif cc == _READ_SINGLE:
                end = io_len if self.legacy else self.xfer.size
            else:
                return 0
        return max(0, min(want, end - self.xfer.offset - 1))
