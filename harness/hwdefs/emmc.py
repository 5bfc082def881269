"""eMMC register layouts and commands as data (JEDEC JESD84-B51 as publicly described).

The EXT_CSD (512 bytes, read with CMD8 SEND_EXT_CSD) is a modes segment
(bytes 0..191, some written by CMD6 SWITCH) and a properties segment
(bytes 192..511, read only).  :data:`EXT_CSD` lists the fields by name,
index, width and whether the standard lets CMD6 write them; the RPMB data
frame (:data:`RPMB_FRAME`) and the eMMC command set (:data:`EMMC_COMMANDS`)
are tables too.  Nothing here is QEMU's: what QEMU does with them is the
model's business (:mod:`harness.model.emmc`).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import IntEnum

from harness.hwdefs.sd import CmdType, Resp, SpecCommand

EXT_CSD_BYTES = 512
#: First byte of the properties segment (read only, JESD84-B51 7.4).
PROPERTIES_SEGMENT = 192


@dataclass(frozen=True)
class ExtCsdField:
    """One EXT_CSD field: ``width`` bytes from ``index``, least significant
    byte first (multi-byte fields such as SEC_COUNT are little-endian)."""

    name: str
    index: int
    width: int = 1
    #: the standard lets CMD6 SWITCH write it (R/W, R/W/E, R/W/E_P, W/E_P)
    writable: bool = False

    def get(self, ext_csd: bytes) -> int:
        return int.from_bytes(ext_csd[self.index:self.index + self.width], "little")


def _f(name: str, index: int, width: int = 1, w: bool = False) -> ExtCsdField:
    return ExtCsdField(name, index, width, w)


#: EXT_CSD fields (JESD84-B51 Table "Extended CSD"); every byte not listed is reserved.
EXT_CSD: tuple[ExtCsdField, ...] = (
    # Modes segment
    _f("CMDQ_MODE_EN", 15, w=True),
    _f("FLUSH_CACHE", 32, w=True),
    _f("CACHE_CTRL", 33, w=True),
    _f("POWER_OFF_NOTIFICATION", 34, w=True),
    _f("PACKED_FAILURE_INDEX", 35),
    _f("PACKED_COMMAND_STATUS", 36),
    _f("CONTEXT_CONF", 37, 15, w=True),
    _f("EXT_PARTITIONS_ATTRIBUTE", 52, 2, w=True),
    _f("EXCEPTION_EVENTS_STATUS", 54, 2),
    _f("EXCEPTION_EVENTS_CTRL", 56, 2, w=True),
    _f("DYNCAP_NEEDED", 58),
    _f("CLASS_6_CTRL", 59, w=True),
    _f("INI_TIMEOUT_EMU", 60),
    _f("DATA_SECTOR_SIZE", 61),
    _f("USE_NATIVE_SECTOR", 62, w=True),
    _f("NATIVE_SECTOR_SIZE", 63),
    _f("VENDOR_SPECIFIC_FIELD", 64, 64),
    _f("PROGRAM_CID_CSD_DDR_SUPPORT", 130),
    _f("PERIODIC_WAKEUP", 131, w=True),
    _f("TCASE_SUPPORT", 132, w=True),
    _f("PRODUCTION_STATE_AWARENESS", 133, w=True),
    _f("SEC_BAD_BLK_MGMNT", 134, w=True),
    _f("ENH_START_ADDR", 136, 4, w=True),
    _f("ENH_SIZE_MULT", 140, 3, w=True),
    _f("GP_SIZE_MULT", 143, 12, w=True),
    _f("PARTITION_SETTING_COMPLETED", 155, w=True),
    _f("PARTITIONS_ATTRIBUTE", 156, w=True),
    _f("MAX_ENH_SIZE_MULT", 157, 3),
    _f("PARTITIONING_SUPPORT", 160),
    _f("HPI_MGMT", 161, w=True),
    _f("RST_N_FUNCTION", 162, w=True),
    _f("BKOPS_EN", 163, w=True),
    _f("BKOPS_START", 164, w=True),
    _f("SANITIZE_START", 165, w=True),
    _f("WR_REL_PARAM", 166),
    _f("WR_REL_SET", 167, w=True),
    _f("RPMB_SIZE_MULT", 168),
    _f("FW_CONFIG", 169, w=True),
    _f("USER_WP", 171, w=True),
    _f("BOOT_WP", 173, w=True),
    _f("BOOT_WP_STATUS", 174),
    _f("ERASE_GROUP_DEF", 175, w=True),
    _f("BOOT_BUS_CONDITIONS", 177, w=True),
    _f("BOOT_CONFIG_PROT", 178, w=True),
    _f("PARTITION_CONFIG", 179, w=True),
    _f("ERASED_MEM_CONT", 181),
    _f("BUS_WIDTH", 183, w=True),
    _f("STROBE_SUPPORT", 184),
    _f("HS_TIMING", 185, w=True),
    _f("POWER_CLASS", 187, w=True),
    _f("CMD_SET_REV", 189),
    _f("CMD_SET", 191, w=True),
    # Properties segment
    _f("EXT_CSD_REV", 192),
    _f("CSD_STRUCTURE", 194),
    _f("DEVICE_TYPE", 196),
    _f("DRIVER_STRENGTH", 197),
    _f("OUT_OF_INTERRUPT_TIME", 198),
    _f("PARTITION_SWITCH_TIME", 199),
    _f("PWR_CL_52_195", 200),
    _f("PWR_CL_26_195", 201),
    _f("PWR_CL_52_360", 202),
    _f("PWR_CL_26_360", 203),
    _f("MIN_PERF_R_4_26", 205),
    _f("MIN_PERF_W_4_26", 206),
    _f("MIN_PERF_R_8_26_4_52", 207),
    _f("MIN_PERF_W_8_26_4_52", 208),
    _f("MIN_PERF_R_8_52", 209),
    _f("MIN_PERF_W_8_52", 210),
    _f("SEC_COUNT", 212, 4),
    _f("SLEEP_NOTIFICATION_TIME", 216),
    _f("S_A_TIMEOUT", 217),
    _f("PRODUCTION_STATE_AWARENESS_TIMEOUT", 218),
    _f("S_C_VCCQ", 219),
    _f("S_C_VCC", 220),
    _f("HC_WP_GRP_SIZE", 221),
    _f("REL_WR_SEC_C", 222),
    _f("ERASE_TIMEOUT_MULT", 223),
    _f("HC_ERASE_GRP_SIZE", 224),
    _f("ACC_SIZE", 225),
    _f("BOOT_SIZE_MULT", 226),
    _f("BOOT_INFO", 228),
    _f("SEC_TRIM_MULT", 229),
    _f("SEC_ERASE_MULT", 230),
    _f("SEC_FEATURE_SUPPORT", 231),
    _f("TRIM_MULT", 232),
    _f("INI_TIMEOUT_AP", 241),
    _f("BKOPS_STATUS", 246),
    _f("POWER_OFF_LONG_TIME", 247),
    _f("GENERIC_CMD6_TIME", 248),
    _f("CACHE_SIZE", 249, 4),
    _f("S_CMD_SET", 504),
)

FIELDS: dict[str, ExtCsdField] = {f.name: f for f in EXT_CSD}


def field_at(index: int) -> ExtCsdField | None:
    """The field covering byte ``index`` (None: a reserved byte)."""
    for f in EXT_CSD:
        if f.index <= index < f.index + f.width:
            return f
    return None


#: Bytes CMD6 may write under the standard.
WRITABLE_BYTES: frozenset[int] = frozenset(
    i for f in EXT_CSD if f.writable for i in range(f.index, f.index + f.width))

PARTITION_CONFIG = FIELDS["PARTITION_CONFIG"].index
BOOT_SIZE_MULT = FIELDS["BOOT_SIZE_MULT"].index
RPMB_SIZE_MULT = FIELDS["RPMB_SIZE_MULT"].index
SEC_COUNT = FIELDS["SEC_COUNT"].index
#: BOOT_SIZE_MULT and RPMB_SIZE_MULT count 128 KiB units.
SIZE_MULT_UNIT = 128 << 10


class Partition(IntEnum):
    """PARTITION_CONFIG bits 2:0 (PARTITION_ACCESS)."""

    USER = 0
    BOOT1 = 1
    BOOT2 = 2
    RPMB = 3
    GP1 = 4
    GP2 = 5
    GP3 = 6
    GP4 = 7


PARTITION_ACCESS_MASK = 0x07
BOOT_PARTITION_ENABLE_MASK = 0x38
BOOT_ACK = 0x40


class SwitchAccess(IntEnum):
    """CMD6 argument bits 25:24 (JESD84-B51 6.6.1)."""

    COMMAND_SET = 0
    SET_BITS = 1
    CLEAR_BITS = 2
    WRITE_BYTE = 3


def switch_arg(access: int, index: int, value: int, cmd_set: int = 0) -> int:
    """The CMD6 argument: access 25:24, index 23:16, value 15:8, command set 2:0."""
    return ((access & 3) << 24) | ((index & 0xFF) << 16) | ((value & 0xFF) << 8) | (cmd_set & 7)


#: R1 card status bit SWITCH_ERROR (JESD84-B51 6.13): CMD6 refused.
SWITCH_ERROR = 1 << 7
#: OCR bit 30:29 access mode "sector" (block addressing, devices over 2 GiB).
OCR_SECTOR_MODE = 0b10 << 29
#: CMD1 argument a host at 2.7-3.6 V offers with sector mode (JESD84-B51 5.3.3).
CMD1_HOST_OCR = OCR_SECTOR_MODE | 0x00FF8000
#: CMD5 argument bit 15: 1 sleep, 0 awake.
CMD5_SLEEP = 1 << 15


class EmmcState(IntEnum):
    """eMMC device states in R1 CURRENT_STATE (JESD84-B51 6.13)."""

    IDLE = 0
    READY = 1
    IDENT = 2
    STBY = 3
    TRAN = 4
    DATA = 5
    RCV = 6
    PRG = 7
    DIS = 8
    BTST = 9
    SLP = 10


# -- RPMB (JESD84-B51 6.6.22) -------------------------------------------------


@dataclass(frozen=True)
class FrameField:
    name: str
    offset: int
    width: int


#: The 512-byte RPMB data frame; multi-byte numbers are big-endian.
RPMB_FRAME: tuple[FrameField, ...] = (
    FrameField("stuff", 0, 196),
    FrameField("key_mac", 196, 32),
    FrameField("data", 228, 256),
    FrameField("nonce", 484, 16),
    FrameField("write_counter", 500, 4),
    FrameField("address", 504, 2),
    FrameField("block_count", 506, 2),
    FrameField("result", 508, 2),
    FrameField("req_resp", 510, 2),
)
FRAME: dict[str, FrameField] = {f.name: f for f in RPMB_FRAME}
RPMB_FRAME_BYTES = 512
#: The MAC covers the frame from the data field to its end (284 bytes).
RPMB_MAC_START = FRAME["data"].offset
RPMB_DATA_BYTES = 256


class RpmbRequest(IntEnum):
    PROGRAM_KEY = 1
    READ_COUNTER = 2
    AUTH_WRITE = 3
    AUTH_READ = 4
    READ_RESULT = 5
    AUTH_CONFIG_WRITE = 6
    AUTH_CONFIG_READ = 7


def rpmb_response(req: int) -> int:
    """The response type of request ``req`` (the request code in the high byte)."""
    return (req & 0xFF) << 8


class RpmbResult(IntEnum):
    OK = 0
    GENERAL_FAILURE = 1
    AUTH_FAILURE = 2
    COUNTER_FAILURE = 3
    ADDRESS_FAILURE = 4
    WRITE_FAILURE = 5
    READ_FAILURE = 6
    NO_KEY = 7


#: Result bit 7: the write counter has expired.
RPMB_COUNTER_EXPIRED = 0x80


def rpmb_frame(**fields: bytes | int) -> bytes:
    """A 512-byte frame from fields by name (ints big-endian, bytes as given)."""
    out = bytearray(RPMB_FRAME_BYTES)
    for name, value in fields.items():
        f = FRAME[name]
        raw = value.to_bytes(f.width, "big") if isinstance(value, int) else bytes(value)
        if len(raw) > f.width:
            raise ValueError(f"RPMB frame field {name} holds {f.width} bytes, not {len(raw)}")
        out[f.offset:f.offset + len(raw)] = raw
    return bytes(out)


def rpmb_mac(key: bytes, frames: list[bytes]) -> bytes:
    """HMAC-SHA256 under ``key`` over bytes 228..511 of each frame, in order
    (JESD84-B51 6.6.22: the MAC of a multi-frame response covers them all)."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        h.update(f[RPMB_MAC_START:RPMB_FRAME_BYTES])
    return h.digest()


def frame_get(frame: bytes, name: str) -> bytes:
    f = FRAME[name]
    return bytes(frame[f.offset:f.offset + f.width])


def frame_int(frame: bytes, name: str) -> int:
    return int.from_bytes(frame_get(frame, name), "big")


# -- commands (JESD84-B51 6.10.4) -------------------------------------------------


_BC, _BCR, _AC, _ADTC = CmdType.BC, CmdType.BCR, CmdType.AC, CmdType.ADTC
_N, _R1, _R1B, _R2, _R3 = Resp.NONE, Resp.R1, Resp.R1B, Resp.R2, Resp.R3

#: One eMMC command as the standard defines it (the SD rows' type).
EMMC_COMMANDS: dict[int, SpecCommand] = {c.index: c for c in (
    SpecCommand(0, "GO_IDLE_STATE", 0, _BC, _N),
    SpecCommand(1, "SEND_OP_COND", 0, _BCR, _R3),
    SpecCommand(2, "ALL_SEND_CID", 0, _BCR, _R2),
    SpecCommand(3, "SET_RELATIVE_ADDR", 0, _AC, _R1),
    SpecCommand(4, "SET_DSR", 0, _BC, _N),
    SpecCommand(5, "SLEEP_AWAKE", 0, _AC, _R1B),
    SpecCommand(6, "SWITCH", 0, _AC, _R1B),
    SpecCommand(7, "SELECT_DESELECT_CARD", 0, _AC, _R1B),
    SpecCommand(8, "SEND_EXT_CSD", 0, _ADTC, _R1),
    SpecCommand(9, "SEND_CSD", 0, _AC, _R2),
    SpecCommand(10, "SEND_CID", 0, _AC, _R2),
    SpecCommand(11, "READ_DAT_UNTIL_STOP", 1, _ADTC, _R1),  # obsolete since v4.5
    SpecCommand(12, "STOP_TRANSMISSION", 0, _AC, _R1B),
    SpecCommand(13, "SEND_STATUS", 0, _AC, _R1),
    SpecCommand(14, "BUSTEST_R", 0, _ADTC, _R1),
    SpecCommand(15, "GO_INACTIVE_STATE", 0, _AC, _N),
    SpecCommand(16, "SET_BLOCKLEN", 2, _AC, _R1),
    SpecCommand(17, "READ_SINGLE_BLOCK", 2, _ADTC, _R1),
    SpecCommand(18, "READ_MULTIPLE_BLOCK", 2, _ADTC, _R1),
    SpecCommand(19, "BUSTEST_W", 0, _ADTC, _R1),
    SpecCommand(20, "WRITE_DAT_UNTIL_STOP", 3, _ADTC, _R1),  # obsolete since v4.5
    SpecCommand(21, "SEND_TUNING_BLOCK", 2, _ADTC, _R1),
    SpecCommand(23, "SET_BLOCK_COUNT", 2, _AC, _R1),
    SpecCommand(24, "WRITE_BLOCK", 4, _ADTC, _R1),
    SpecCommand(25, "WRITE_MULTIPLE_BLOCK", 4, _ADTC, _R1),
    SpecCommand(26, "PROGRAM_CID", 4, _ADTC, _R1),
    SpecCommand(27, "PROGRAM_CSD", 4, _ADTC, _R1),
    SpecCommand(28, "SET_WRITE_PROT", 6, _AC, _R1B),
    SpecCommand(29, "CLR_WRITE_PROT", 6, _AC, _R1B),
    SpecCommand(30, "SEND_WRITE_PROT", 6, _ADTC, _R1),
    SpecCommand(31, "SEND_WRITE_PROT_TYPE", 6, _ADTC, _R1),
    SpecCommand(35, "ERASE_GROUP_START", 5, _AC, _R1),
    SpecCommand(36, "ERASE_GROUP_END", 5, _AC, _R1),
    SpecCommand(38, "ERASE", 5, _AC, _R1B),
    SpecCommand(39, "FAST_IO", 9, _AC, _R1),
    SpecCommand(40, "GO_IRQ_STATE", 9, _BCR, _R1),
    SpecCommand(42, "LOCK_UNLOCK", 7, _ADTC, _R1),
    SpecCommand(49, "SET_TIME", 0, _ADTC, _R1),
    SpecCommand(55, "APP_CMD", 8, _AC, _R1),
    SpecCommand(56, "GEN_CMD", 8, _ADTC, _R1),
)}


def index(name: str) -> int:
    """The index of the eMMC command ``name`` (``"SEND_EXT_CSD"``)."""
    for c in EMMC_COMMANDS.values():
        if c.name == name:
            return c.index
    raise KeyError(f"no eMMC command {name!r} in JESD84-B51")


def command_name(index: int) -> str:
    """``"CMD8 SEND_EXT_CSD"`` style name (eMMC has no application commands)."""
    c = EMMC_COMMANDS.get(index)
    return f"CMD{index} {c.name}" if c else f"CMD{index} (undefined)"


def command_resp(index: int) -> Resp:
    """The standard's response type of CMD``index`` (R1 for an undefined index)."""
    c = EMMC_COMMANDS.get(index)
    return c.resp if c is not None else Resp.R1


#: CMD38 argument: 0 erase, 1 trim, 3 discard (JESD84-B51 6.6.9).
ERASE_ARG_ERASE, ERASE_ARG_TRIM, ERASE_ARG_DISCARD = 0x0, 0x1, 0x3
