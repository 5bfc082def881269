"""The eMMC device on the SD bus, as QEMU's ``emmc`` behaves.

Built on the SD card model (:class:`~harness.model.sdcard.SDCard`): the
bus calls, the byte-wise data path (:mod:`harness.model.sd_data`), the
block store and the card status are the same; what differs is here: the
eMMC command set (JESD84-B51 6.10.4, :data:`harness.hwdefs.emmc.EMMC_COMMANDS`)
dispatched through its table (:data:`harness.model.emmc_commands.EMMC`),
CMD1 power-up, the host-assigned RCA (CMD3), CSD/CID/EXT_CSD contents,
CMD6 SWITCH of EXT_CSD bytes, partition access through PARTITION_CONFIG,
sleep (CMD5) and RPMB frames.

Image layout (found by experiment on QEMU 11.1.3: a block-numbered pattern
read, and distinct blocks written, through each partition; see
``tests/qtest/crosscheck/test_emmc.py``): the image file holds boot
partition 1, boot partition 2, the RPMB partition, then the user area,
each ``boot-partition-size`` / ``rpmb-partition-size`` bytes long; the user
area is the rest of the file.
PARTITION_ACCESS moves every block access to its partition's start in the
file; addresses are checked against the user area's size whatever the
partition (deviation ``emmc.partition-range``).

RPMB (JESD84-B51 6.6.22): with PARTITION_ACCESS = 3, CMD25 blocks are
request frames and CMD18 blocks are result frames; the MAC is HMAC-SHA256
under the programmed key over frame bytes 228..511 of every frame of a
response.  Where QEMU departs from the standard it is named in
:mod:`harness.ledger.emmc`.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs.emmc import Partition, RpmbRequest, RpmbResult, rpmb_mac
from harness.hwdefs.sd import CardState, crc7
from harness.ledger import boundaries
from harness.model import emmc_defaults, sd_data
from harness.model.blockstore import BlockStore
from harness.model.clock import VirtualClock
from harness.model.commands import Rsp
from harness.model.deviations import Deviations, Strictness
from harness.model.emmc_commands import EMMC
from harness.model.sd_commands import SD
from harness.model.sd_registers import PRV_BEFORE_SERIES, PRV_WITH_SERIES
from harness.model.sdcard import BLOCK, SDCard
from harness.profile import NEWEST, BuildProfile

KIB = 1 << 10
MAX_BOOT_SIZE = 255 * E.SIZE_MULT_UNIT
MAX_RPMB_SIZE = 128 * E.SIZE_MULT_UNIT
#: ACMD41/CMD1 argument bits that make a request (not an enquiry).
_OCR_REQUEST_BITS = 0x00FFFFFF
_OCR_QEMU_VDD = 0x00FFFF00
#: The commands the eMMC's own paths tell apart (JESD84-B51 command table).
_GO_IDLE, _SLEEP_AWAKE = E.index("GO_IDLE_STATE"), E.index("SLEEP_AWAKE")
_READ_MULTIPLE, _WRITE_MULTIPLE = E.index("READ_MULTIPLE_BLOCK"), E.index("WRITE_MULTIPLE_BLOCK")
_PROGRAM_CID = E.index("PROGRAM_CID")


def check_emmc_sizes(image_size: int, boot: int, rpmb: int) -> None:
    """QEMU's realize rules for the image and partition sizes (``ValueError``)."""
    if boot % E.SIZE_MULT_UNIT or not 0 <= boot <= MAX_BOOT_SIZE:
        raise ValueError(f"invalid boot partition size {boot}: a multiple of 128 KiB up to "
                         "32640 KiB; QEMU refuses it too")
    if rpmb % E.SIZE_MULT_UNIT or not 0 <= rpmb <= MAX_RPMB_SIZE:
        raise ValueError(f"invalid RPMB partition size {rpmb}: a multiple of 128 KiB up to "
                         "16 MiB; QEMU refuses it too")
    user = image_size - 2 * boot - rpmb
    if user < 0:
        raise ValueError("eMMC image smaller than its boot and RPMB partitions "
                         "(QEMU refuses it too)")
    if user > S.SDSC_MAX:
        if user % BLOCK:
            raise ValueError(f"invalid eMMC user area {user}: above 2 GiB a multiple of 512 "
                             "(QEMU refuses it too)")
    elif user and user & (user - 1):
        raise ValueError(f"invalid eMMC user area {user}: up to 2 GiB a power of 2 "
                         "(QEMU refuses it too)")


def parse_auth_key(text: str) -> bytes:
    """``auth-key``: 32 bytes as 64 hex digits (QEMU 11.x refuses anything else)."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise ValueError("emmc auth-key contains invalid characters (QEMU refuses it too)"
                         ) from None
    if len(key) != 32:
        raise ValueError("emmc auth-key must be 32 bytes in hex (QEMU refuses it too)")
    return key


class PartitionView:
    """The block store seen through PARTITION_ACCESS: offsets move to the
    selected partition's start in the image file."""

    def __init__(self, base: BlockStore, card: EmmcCard) -> None:
        self.base = base
        self.card = card

    @property
    def size(self) -> int:
        return self.base.size

    def _off(self, offset: int) -> int | None:
        start = self.card.partition_start()
        return None if start is None else start + offset

    def read(self, offset: int, length: int) -> bytes:
        o = self._off(offset)
        return bytes(length) if o is None else self.base.read(o, length)

    def in_range(self, offset: int, length: int) -> bool:
        o = self._off(offset)
        return o is not None and self.base.in_range(o, length)

    def write(self, offset: int, data: bytes) -> bool:
        o = self._off(offset)
        return o is not None and self.base.write(o, data)

    def fill(self, offset: int, length: int, value: int) -> bool:
        o = self._off(offset)
        return o is not None and self.base.fill(o, length, value)


def build_emmc_cid(prv: int = PRV_BEFORE_SERIES) -> bytearray:
    """The CID (JESD84-B51 7.2) with QEMU's identity: MID 0xAA, CBX 1 (BGA),
    OID 'X', PNM 'QEMU!!', PRV ``prv``, PSN 0xDEADBEEF, MDT February 2006.

    QEMU's sd.c fills the SD card's and the eMMC's PRV from one constant, so
    the erase series' 0x01 -> 0x02 reaches the eMMC too."""
    raw = bytearray(16)
    raw[0] = 0xAA
    raw[1] = 0b01
    raw[2] = ord("X")
    raw[3:9] = b"QEMU!!"
    raw[9] = prv
    raw[10:14] = (0xDEADBEEF).to_bytes(4, "big")
    raw[14] = (2 << 4) | (2006 - 1997)
    raw[15] = (crc7(bytes(raw[:15])) << 1) | 1
    return raw


def build_emmc_csd(user_size: int) -> bytearray:
    """The CSD (JESD84-B51 7.3) as QEMU fills it: CSD_STRUCTURE 3 (version in
    EXT_CSD), SPEC_VERS 4, 1 ms TAAC, 100 MHz TRAN_SPEED; up to 2 GiB C_SIZE
    in 512 KiB units (READ_BL_LEN 10), above it C_SIZE all ones."""
    raw = bytearray(16)
    raw[0] = (3 << 6) | (4 << 2)
    raw[1] = (1 << 3) | 6
    raw[3] = (1 << 3) | 3
    raw[4] = 0x0F
    if user_size <= S.SDSC_MAX:
        c_size = ((user_size >> 19) - 1) & 0xFFFFFFFF
        raw[5] = 0x5A
        raw[6] = 0x80 | ((c_size >> 10) & 0xF)
        raw[7] = (c_size >> 2) & 0xFF
    else:
        raw[5], raw[6], raw[7] = 0x59, 0x8F, 0xFF
    raw[8] = 0xFF
    raw[9] = 0xFF
    raw[10] = 0xDF
    raw[11] = 0xFF
    raw[12] = 0x92
    raw[13] = 0x60
    raw[15] = (crc7(bytes(raw[:15])) << 1) | 1
    return raw


def build_ext_csd(user_size: int, boot: int, rpmb: int, boot_config: int,
                  rpmb_era: bool = True) -> bytearray:
    """The EXT_CSD QEMU presents after reset (every byte not set here is 0).

    ``rpmb_era``: a build with the RPMB partition (boundary
    ``emmc.rpmb-partition-size``, 10.1) says EXT_CSD_REV 5 (v4.41) with
    RPMB_SIZE_MULT and PARTITIONING_SUPPORT; before it, EXT_CSD_REV 3 and
    neither."""
    raw = bytearray(E.EXT_CSD_BYTES)
    F = E.FIELDS

    def put(name: str, value: int) -> None:
        f = F[name]
        raw[f.index:f.index + f.width] = (value & ((1 << (8 * f.width)) - 1)).to_bytes(
            f.width, "little")

    put("S_CMD_SET", 1)
    put("BOOT_SIZE_MULT", boot // E.SIZE_MULT_UNIT)
    put("ACC_SIZE", 1)
    put("HC_ERASE_GRP_SIZE", 1)
    put("ERASE_TIMEOUT_MULT", 1)
    put("REL_WR_SEC_C", 1)
    put("HC_WP_GRP_SIZE", 1)
    put("S_C_VCC", 1)
    put("S_C_VCCQ", 1)
    put("S_A_TIMEOUT", 1)
    put("SEC_COUNT", user_size >> 9)
    for name in ("MIN_PERF_R_4_26", "MIN_PERF_W_4_26", "MIN_PERF_R_8_26_4_52",
                 "MIN_PERF_W_8_26_4_52", "MIN_PERF_R_8_52", "MIN_PERF_W_8_52"):
        put(name, 0x46)
    put("DEVICE_TYPE", 0b11)
    put("CSD_STRUCTURE", 2)
    put("EXT_CSD_REV", 5 if rpmb_era else 3)
    if rpmb_era:
        put("RPMB_SIZE_MULT", rpmb // E.SIZE_MULT_UNIT)
        put("PARTITIONING_SUPPORT", 0b111)
    put("PARTITION_CONFIG", boot_config)
    return raw


class EmmcCard(SDCard):
    """An eMMC device (``-device emmc``) on the SD bus.

    ``image`` (raw, never written) or ``size`` is the whole image file:
    boot partitions, RPMB partition and user area.  ``boot_partition_size``,
    ``boot_config``, ``rpmb_partition_size`` and ``auth_key`` are QEMU's
    properties; a property ``profile``'s build lacks raises ``ValueError``
    (QEMU refuses it too).
    """

    is_emmc = True
    commands = EMMC

    def __init__(self, clock: VirtualClock, image: str | Path | None = None,
                 size: int | None = None, *, boot_partition_size: int | None = None,
                 boot_config: int | None = None, rpmb_partition_size: int | None = None,
                 auth_key: str | None = None, profile: BuildProfile = NEWEST,
                 machine: str | None = None, strict: Strictness = False) -> None:
        # SDCard.__init__ is not called: its size rule and sd-card property
        # defaults are not the eMMC's; the shared runtime state is (_init_runtime).
        have = profile.properties("emmc")
        for prop, value in (("boot-partition-size", boot_partition_size),
                            ("boot-config", boot_config),
                            ("rpmb-partition-size", rpmb_partition_size),
                            ("auth-key", auth_key)):
            if value is not None and prop not in have:
                raise ValueError(f"this build's emmc has no property {prop} "
                                 "(QEMU refuses it too)")
        self.clock = clock
        self.profile = profile
        self.version = profile.version
        self.machine = machine
        self.strict = strict
        self.dev = Deviations(("sd", "emmc"), strict)
        #: The erase series (seed 000) is in the build: detected, as for the
        #: SD card, from sd-card's ``erase-blocks-as-zero``.  Only the CID
        #: PRV follows it: the eMMC has no such property, and the model keeps
        #: its erase at 0xFF (assumed, no build with the series was at hand).
        self.series = profile.has_erase_blocks_as_zero
        self.spec_version = 3  # QEMU's emmc realize forces the SD v3.01 paths (CMD23)
        self.erase_blocks_as_zero = None
        self.boot_size = int(boot_partition_size if boot_partition_size is not None
                             else emmc_defaults.default("boot-partition-size"))
        self.boot_config = int(boot_config if boot_config is not None
                               else emmc_defaults.default("boot-config")) & 0xFF
        self.rpmb_size = int(rpmb_partition_size if rpmb_partition_size is not None
                             else emmc_defaults.default("rpmb-partition-size"))
        self.rpmb_key: bytes | None = None if auth_key is None else parse_auth_key(auth_key)
        self.rpmb_counter = 0
        self.rpmb_result = bytearray(E.RPMB_FRAME_BYTES)
        self.image_store: BlockStore | None = None
        self.store = None
        if image is not None or size is not None:
            self.image_store = BlockStore(image, size)
            check_emmc_sizes(self.image_store.size, self.boot_size, self.rpmb_size)
            self.store = PartitionView(self.image_store, self)  # type: ignore[assignment]
        self._inserted = self.store is not None
        self.readonly = False  # QEMU refuses read-only drives
        self._init_runtime()
        self.sleeping = False
        self.ext_csd = bytearray(E.EXT_CSD_BYTES)
        self.reset()

    # -- geometry --------------------------------------------------------------

    @property
    def size(self) -> int:
        """The user area in bytes: the image (whole blocks) less the boot and
        RPMB partitions."""
        if self.image_store is None:
            return 0
        return max(0, (self.image_store.size // BLOCK) * BLOCK
                   - 2 * self.boot_size - self.rpmb_size)

    @property
    def partition(self) -> int:
        """PARTITION_ACCESS of PARTITION_CONFIG."""
        return self.ext_csd[E.PARTITION_CONFIG] & E.PARTITION_ACCESS_MASK

    def partition_start(self) -> int | None:
        """Where the selected partition starts in the image file; ``None`` for
        a general purpose partition (QEMU aborts: the card turns fatal)."""
        p = self.partition
        starts = {Partition.USER: 2 * self.boot_size + self.rpmb_size, Partition.BOOT1: 0,
                  Partition.BOOT2: self.boot_size, Partition.RPMB: 2 * self.boot_size}
        if p not in starts:
            self.fatal = (f"QEMU aborts: block access with PARTITION_ACCESS {p} "
                          "(a general purpose partition it does not have)")
            self.fatal_key = "emmc.gp-partition-access"
            return None
        return starts[Partition(p)]

    def partition_size(self) -> int:
        p = self.partition
        return {Partition.USER: self.size, Partition.BOOT1: self.boot_size,
                Partition.BOOT2: self.boot_size, Partition.RPMB: self.rpmb_size}.get(
                    Partition(p), 0)

    def image_read(self, offset: int, length: int) -> bytes:
        """The whole image file as the device has left it."""
        if self.image_store is None:
            return bytes(length)
        return self.image_store.read(offset, length)

    @property
    def ext_csd_bytes(self) -> bytes:
        return bytes(self.ext_csd)

    # -- reset ---------------------------------------------------------------

    def reset(self) -> None:
        """Device reset (and CMD0): registers rebuilt, EXT_CSD back to its
        reset contents with PARTITION_CONFIG = ``boot-config``, RCA 1."""
        self.state = CardState.IDLE
        self.sleeping = False
        self.rca = 1
        self.ocr = _OCR_QEMU_VDD
        self._cid = build_emmc_cid(PRV_WITH_SERIES if self.series else PRV_BEFORE_SERIES)
        self.csd_reg = build_emmc_csd(self.size)
        if self.size > S.SDSC_MAX:
            self.ocr |= S.OCR_CCS  # sector addressing from reset (JESD84-B51 5.3.3)
        self.ext_csd = build_ext_csd(self.size, self.boot_size, self.rpmb_size, self.boot_config,
                                     self.version >= boundaries.EMMC_RPMB.since)
        self._scr = bytearray(8)
        self._reset_session()

    @property
    def erase_value(self) -> int:
        """Erased blocks read 0xFF (QEMU) or 0x00 as ERASED_MEM_CONT says (strict)."""
        return 0xFF if self.qemu("emmc.erased-content") else 0x00

    # -- command path ------------------------------------------------------------

    def do_command(self, cmd: int, arg: int) -> bytes:
        if self.fatal is not None or not self._inserted:
            return b""
        cmd &= 0x3F
        arg &= 0xFFFFFFFF
        if self.state == CardState.INACTIVE:
            self.current_cmd = 0
            return b""
        if self.sleeping and cmd != _GO_IDLE and (cmd != _SLEEP_AWAKE
                                                   or self.qemu("emmc.sleep-no-awake")):
            return self._finish(cmd, Rsp.R0)
        if self.locked and not self._valid_while_locked(cmd):
            self.card_status |= S.ILLEGAL_COMMAND
            self.expecting_acmd = False
            return self._finish(cmd, Rsp.ILLEGAL)
        last_state = self.state
        #: R1 reports the state the command found: Sleep (JESD84-B51 6.13) for
        #: the CMD5 that wakes the device (strict: QEMU never answers it)
        found = E.EmmcState.SLP if self.sleeping else int(last_state)
        if self.expecting_acmd:
            self.expecting_acmd = False
            rtype = self._app_command(cmd, arg)
        else:
            rtype = self._normal_command(cmd, arg)
        if self.fatal is not None:
            return b""
        if rtype is Rsp.ILLEGAL:
            self.card_status |= S.ILLEGAL_COMMAND
        else:
            self.card_status &= ~S.CURRENT_STATE
            self.card_status |= (int(found) << 9) & S.CURRENT_STATE
        out = self._finish(cmd, rtype, last_state)
        if rtype in (Rsp.R1, Rsp.R1B) and not self.qemu("emmc.switch-error-sticky"):
            self.card_status &= ~E.SWITCH_ERROR
        return out

    # -- handlers that differ from the SD card's ---------------------------------

    @EMMC.handles(0)
    def _cmd_go_idle(self, arg: int) -> Rsp:
        """CMD0: reset to idle.  Sleeping, QEMU aborts whatever the argument
        (deviation ``emmc.sleep-no-awake``); the standard takes 0 and
        0xF0F0F0F0 only."""
        if self.sleeping:
            if self.qemu("emmc.sleep-no-awake"):
                self.fatal = "QEMU aborts: CMD0 to a sleeping eMMC (device mode assertion)"
                self.fatal_key = "emmc.sleep-no-awake"
                return Rsp.R0
            if arg not in (0, 0xF0F0F0F0):
                return Rsp.R0
        self.reset()
        return Rsp.R0

    @EMMC.handles(1)
    def _cmd_send_op_cond(self, arg: int) -> Rsp:
        """CMD1 (JESD84-B51 6.4.2): OCR in R3; a request powers up at once, an
        enquiry (argument 0) after QEMU's 0.5 ms; a matching voltage moves the
        device to ready once powered up."""
        if self.state != CardState.IDLE:
            return Rsp.ILLEGAL
        if not self.ocr & S.OCR_BUSY:
            if arg & _OCR_REQUEST_BITS:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                self._powerup()
            elif self._timer is None or not self._timer.pending:
                self._timer = self.clock.schedule(500_000, self._powerup)
        if self.ocr & arg & _OCR_REQUEST_BITS:
            self.state = CardState.READY
        return Rsp.R3

    @EMMC.handles(3)
    def _cmd_set_relative_addr(self, arg: int) -> Rsp:
        """CMD3 (JESD84-B51 6.4.4): the host assigns the RCA; R1."""
        if self.state not in (CardState.IDENT, CardState.STBY):
            return Rsp.ILLEGAL
        self.state = CardState.STBY
        self.previous_rca = self.rca
        self.rca = arg >> 16
        return Rsp.R1

    @EMMC.handles(5)
    def _cmd_sleep_awake(self, arg: int) -> Rsp:
        """CMD5 (JESD84-B51 6.6.21): stand-by -> sleep with bit 15 set; awake
        (strict only, see ``emmc.sleep-no-awake``) back to stand-by."""
        if self.sleeping:
            if not arg & E.CMD5_SLEEP:
                self.sleeping = False
            return Rsp.R1B
        if self.state != CardState.STBY:
            return Rsp.ILLEGAL
        if arg & E.CMD5_SLEEP:
            self.sleeping = True
        return Rsp.R1B

    @EMMC.handles(6)
    def _cmd_switch(self, arg: int) -> Rsp:
        """CMD6 SWITCH (JESD84-B51 6.6.1): set bits, clear bits or write a byte
        of the EXT_CSD modes segment; R1b, SWITCH_ERROR when refused."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        access = (arg >> 24) & 3
        index = (arg >> 16) & 0xFF
        value = (arg >> 8) & 0xFF
        if index >= E.PROPERTIES_SEGMENT:
            self.card_status |= E.SWITCH_ERROR
            return Rsp.R1B
        if access == E.SwitchAccess.COMMAND_SET:
            return Rsp.R1B
        if index not in E.WRITABLE_BYTES and not self.qemu("emmc.switch-any-modes-byte"):
            self.card_status |= E.SWITCH_ERROR
            return Rsp.R1B
        b = self.ext_csd[index]
        if access == E.SwitchAccess.SET_BITS:
            b |= value
        elif access == E.SwitchAccess.CLEAR_BITS:
            b &= ~value & 0xFF
        else:
            b = value
        if index == E.PARTITION_CONFIG and not self._partition_ok(b & E.PARTITION_ACCESS_MASK):
            self.card_status |= E.SWITCH_ERROR
            return Rsp.R1B
        self.ext_csd[index] = b
        return Rsp.R1B

    def _partition_ok(self, part: int) -> bool:
        if self.version < boundaries.EMMC_RPMB.since and part < Partition.GP1:
            return True  # ledger emmc.version.absent-partition-refused: checked from 10.1
        if part in (Partition.BOOT1, Partition.BOOT2):
            return self.boot_size > 0
        if part == Partition.RPMB:
            return self.rpmb_size > 0
        if part >= Partition.GP1:
            return self.qemu("emmc.gp-partition-access")
        return True

    @EMMC.handles(8)
    def _cmd_send_ext_csd(self, arg: int) -> Rsp:
        """CMD8 SEND_EXT_CSD (JESD84-B51 6.6.4): the 512-byte EXT_CSD."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        return self._to_sending(self._address(arg), bytes(self.ext_csd), E.EXT_CSD_BYTES)

    @EMMC.handles(23)
    def _cmd_set_block_count(self, arg: int) -> Rsp:
        """CMD23 (JESD84-B51 6.6.16): block count of the next CMD18/CMD25, 16 bits."""
        if self.state != CardState.TRAN:
            return Rsp.ILLEGAL
        self.multi_blk_cnt = arg & 0xFFFF
        return Rsp.R1

    @EMMC.handles(26)
    def _cmd_program_cid(self, arg: int) -> Rsp:
        """CMD26 PROGRAM_CID: 16 bytes; anything but the CID itself sets CID_CSD_OVERWRITE."""
        return self._to_receiving(0, 16)

    @EMMC.handles(35)
    def _cmd_erase_start(self, arg: int) -> Rsp:
        """CMD35 ERASE_GROUP_START: as the SD card's CMD32."""
        return SDCard._cmd_erase_start(self, arg)

    @EMMC.handles(36)
    def _cmd_erase_end(self, arg: int) -> Rsp:
        """CMD36 ERASE_GROUP_END: as the SD card's CMD33."""
        return SDCard._cmd_erase_end(self, arg)

    def _range_limit_ok(self, addr: int, length: int) -> bool:
        """Strict ``emmc.partition-range``: the access stays inside the partition."""
        if self.qemu("emmc.partition-range") or self.partition == Partition.USER:
            return True
        if addr + length > self.partition_size():
            self.card_status |= S.OUT_OF_RANGE
            return False
        return True

    def range_ok(self, addr: int, length: int) -> bool:
        return super().range_ok(addr, length) and self._range_limit_ok(addr, length)

    # -- data path -----------------------------------------------------------------

    def _rpmb_selected(self) -> bool:
        return self.partition == Partition.RPMB

    def _special_write(self) -> bool:
        cc = self.current_cmd
        return cc == _PROGRAM_CID or (cc == _WRITE_MULTIPLE and self._rpmb_selected())

    def _special_read(self) -> bool:
        return self.current_cmd == _READ_MULTIPLE and self._rpmb_selected()

    def write_byte(self, value: int) -> None:
        if not self._special_write():
            sd_data.write_byte(self, value)
            return
        if self.fatal is not None or not self._inserted or self.state != CardState.RCV:
            return
        if self.card_status & sd_data._blockers(self):
            return
        value &= 0xFF
        if self.current_cmd == _PROGRAM_CID:
            sd_data.put(self, value)
            if self.xfer.offset >= self.xfer.size:
                self.state = CardState.TRAN
                sd_data.program_cid(self)
            return
        sd_data.write_multiple_byte(self, value, program=self._program_rpmb_frame)

    def _program_rpmb_frame(self, addr: int, length: int) -> None:
        """A received RPMB frame is a request to the RPMB engine, not data
        for the block store; it counts as a written block all the same."""
        self._rpmb_request(bytes(self.xfer.buf))
        self.blk_written += 1
        if self.qemu("sd.csd-copy-bit-on-write"):
            self.csd_reg[14] |= sd_data.CSD_COPY

    def read_byte(self) -> int:
        if not self._special_read():
            return sd_data.read_byte(self)
        if self.fatal is not None or not self._inserted or self.state != CardState.DATA:
            return 0
        if self.card_status & sd_data._blockers(self):
            return 0
        io_len = BLOCK if self.high_capacity else self.blk_len
        if self.xfer.offset == 0:
            if not self.range_ok(self.xfer.start, io_len):
                return 0
            self._rpmb_response()
        return sd_data.next_block_byte(self, io_len)

    def write_data(self, data: bytes) -> None:
        if self._special_write():
            for b in data:
                self.write_byte(b)
            return
        super().write_data(data)

    def read_data(self, length: int) -> bytes:
        if self._special_read():
            return bytes(self.read_byte() for _ in range(length))
        return super().read_data(length)

    # -- RPMB (JESD84-B51 6.6.22) ------------------------------------------------------

    def _rpmb_offset(self, address: int) -> int:
        return 2 * self.boot_size + address * E.RPMB_DATA_BYTES

    def _rpmb_address_ok(self, address: int, count: int) -> bool:
        """Strict ``emmc.rpmb-address-unchecked``: the half-sectors lie inside RPMB."""
        if self.qemu("emmc.rpmb-address-unchecked"):
            return True
        return (address + max(count, 1)) * E.RPMB_DATA_BYTES <= self.rpmb_size

    def _set_result(self, code: int) -> None:
        self.rpmb_result[508:510] = code.to_bytes(2, "big")

    def _rpmb_request(self, frame: bytes) -> None:
        """A request frame written with CMD25 in the RPMB partition."""
        req = E.frame_int(frame, "req_resp")
        if req != RpmbRequest.READ_RESULT:
            self.rpmb_result = bytearray(E.RPMB_FRAME_BYTES)
            self.rpmb_result[484:500] = E.frame_get(frame, "nonce")
            self._set_result(RpmbResult.OK)
            self.rpmb_result[510:512] = E.rpmb_response(req).to_bytes(2, "big")
            self._rpmb_execute(req, frame)
        if self.rpmb_counter == 0xFFFFFFFF:
            code = int.from_bytes(self.rpmb_result[508:510], "big")
            self._set_result(code | E.RPMB_COUNTER_EXPIRED)

    def _rpmb_execute(self, req: int, frame: bytes) -> None:
        if self.rpmb_key is None and req != RpmbRequest.PROGRAM_KEY:
            self._set_result(RpmbResult.NO_KEY)
            return
        if req == RpmbRequest.PROGRAM_KEY:
            if self.rpmb_key is not None:
                self._set_result(RpmbResult.WRITE_FAILURE)
                return
            self.rpmb_key = E.frame_get(frame, "key_mac")
        elif req == RpmbRequest.READ_COUNTER:
            self.rpmb_result[500:504] = self.rpmb_counter.to_bytes(4, "big")
        elif req == RpmbRequest.AUTH_WRITE:
            self._rpmb_write(frame)
        elif req == RpmbRequest.AUTH_READ:
            address = E.frame_int(frame, "address")
            self.rpmb_result[504:506] = address.to_bytes(2, "big")
            if not self._rpmb_address_ok(address, E.frame_int(frame, "block_count")):
                self._set_result(RpmbResult.ADDRESS_FAILURE)
        else:
            self._set_result(RpmbResult.GENERAL_FAILURE)

    def _rpmb_write(self, frame: bytes) -> None:
        assert self.rpmb_key is not None
        if self.multi_blk_cnt != 1:  # one frame per write, as QEMU supports
            self._set_result(RpmbResult.GENERAL_FAILURE)
            return
        if self.rpmb_counter == 0xFFFFFFFF:
            self._set_result(RpmbResult.WRITE_FAILURE)
            return
        if not hmac.compare_digest(rpmb_mac(self.rpmb_key, [frame]),
                                   E.frame_get(frame, "key_mac")):
            self._set_result(RpmbResult.AUTH_FAILURE)
            return
        if E.frame_int(frame, "write_counter") != self.rpmb_counter:
            self._set_result(RpmbResult.COUNTER_FAILURE)
            return
        address = E.frame_int(frame, "address")
        self.rpmb_result[504:506] = address.to_bytes(2, "big")
        if not self._rpmb_address_ok(address, 1):
            self._set_result(RpmbResult.ADDRESS_FAILURE)
            return
        store = self.image_store
        if store is None or not store.write(self._rpmb_offset(address),
                                            E.frame_get(frame, "data")):
            self._set_result(RpmbResult.WRITE_FAILURE)
        else:
            self.rpmb_counter += 1
        self.rpmb_result[500:504] = self.rpmb_counter.to_bytes(4, "big")

    def _rpmb_data(self, address: int) -> bytes | None:
        store = self.image_store
        off = self._rpmb_offset(address)
        if store is None or not store.in_range(off, E.RPMB_DATA_BYTES):
            return None
        return store.read(off, E.RPMB_DATA_BYTES)

    def _rpmb_response(self) -> None:
        """The next result frame read with CMD18 in the RPMB partition, into
        the transfer buffer: the last request's result, or a data frame of an
        authenticated read (the MAC in the last frame, over all of them)."""
        res = self.rpmb_result
        resp = int.from_bytes(res[510:512], "big")
        result = int.from_bytes(res[508:510], "big")
        key = self.rpmb_key if self.rpmb_key is not None else bytes(32)
        if (result & ~E.RPMB_COUNTER_EXPIRED == RpmbResult.OK
                and resp == E.rpmb_response(RpmbRequest.AUTH_READ)):
            address = int.from_bytes(res[504:506], "big")
            count = int.from_bytes(res[506:508], "big")
            if count == 0:
                count = self.multi_blk_cnt & 0xFFFF
                res[506:508] = count.to_bytes(2, "big")
                block = address
            else:
                block = (address + count - self.multi_blk_cnt) & 0xFFFFFFFF
            data = self._rpmb_data(block)
            if data is None:
                res[228:484] = bytes(256)
                self._set_result(RpmbResult.READ_FAILURE | (result & E.RPMB_COUNTER_EXPIRED))
            else:
                res[228:484] = data
            if self.multi_blk_cnt == 1:
                frames: list[bytes] = []
                for i in range(count - 1):
                    d = self._rpmb_data(address + i)
                    if d is None:
                        frames = []
                        break
                    frames.append(bytes(228) + d + bytes(res[484:512]))
                if count > 1 and not frames:
                    res[228:484] = bytes(256)
                    self._set_result(RpmbResult.AUTH_FAILURE)
                else:
                    res[196:228] = rpmb_mac(key, [*frames, bytes(res)])
        else:
            res[196:228] = rpmb_mac(key, [bytes(res)])
        self.xfer.buf[:E.RPMB_FRAME_BYTES] = res

    # -- what the scenarios and tests look at ------------------------------------------

    @property
    def rpmb_key_set(self) -> bool:
        return self.rpmb_key is not None


#: The handlers QEMU's eMMC protocol shares with the SD card's.
EMMC.inherit(EmmcCard, SD, 2, 7, 9, 10, 12, 13, 15, 16, 17, 18, 24, 25, 27, 28, 29, 30,
             38, 42, 55, 56)


def emmc_card_params(props: dict[str, object]) -> dict[str, object]:
    """QEMU emmc property names -> :class:`EmmcCard` keyword arguments."""
    names = {"boot-partition-size": "boot_partition_size", "boot-config": "boot_config",
             "rpmb-partition-size": "rpmb_partition_size", "auth-key": "auth_key"}
    out: dict[str, object] = {}
    for k, v in props.items():
        if k not in names:
            raise ValueError(f"the model has no emmc property {k!r}")
        if k == "auth-key":
            out[names[k]] = str(v)
        else:
            out[names[k]] = _size_value(v)
    return out


def _size_value(v: object) -> int:
    """A size or number as QEMU's property parser reads it (``128K``, ``1M``, 0x...)."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a number")
    if isinstance(v, int):
        return v
    text = str(v).strip()
    mult = {"k": KIB, "m": KIB ** 2, "g": KIB ** 3}.get(text[-1:].lower(), 1)
    if mult != 1:
        text = text[:-1]
    return int(text, 0) * mult
