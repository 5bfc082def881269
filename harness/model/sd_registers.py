"""Construction of the card's registers: CID, CSD v1/v2, SCR, switch status.

Values are those QEMU's sd-card presents (observed behaviour), laid out
field by field from the SD Physical Layer Simplified Specification (PLS).
"""

from __future__ import annotations

from harness.hwdefs.fields import Register
from harness.hwdefs.sd import CID, CSD_V1, CSD_V2, SCR, SDSC_MAX, SWITCH_STATUS, crc7

#: QEMU's fake identity (PLS 5.2 fields).
CID_MID = 0xAA
CID_OID = b"XY"
CID_PNM = b"QEMU!"
CID_PSN = 0xDEADBEEF
CID_YEAR = 2006
CID_MONTH = 2
#: Product revision: 0x01, and 0x02 with the erase series (DATA_STAT_AFTER_ERASE reliable);
#: QEMU's eMMC takes the same constant (``emmc.build_emmc_cid``).
PRV_BEFORE_SERIES = 0x01
PRV_WITH_SERIES = 0x02


def _pack(reg: Register, values: dict[str, int]) -> int:
    v = 0
    for name, fv in values.items():
        v = reg.field(name).put(v, fv)
    return v


def _with_crc(value: int) -> bytearray:
    """128-bit register image whose last byte is CRC7 << 1 | 1 (PLS 5.2, 5.3)."""
    raw = bytearray(value.to_bytes(16, "big"))
    raw[15] = (crc7(bytes(raw[:15])) << 1) | 1
    return raw


def build_cid(prv: int) -> bytearray:
    """The CID register (PLS 5.2)."""
    return _with_crc(_pack(CID, {
        "MID": CID_MID,
        "OID": int.from_bytes(CID_OID, "big"),
        "PNM": int.from_bytes(CID_PNM, "big"),
        "PRV": prv,
        "PSN": CID_PSN,
        "MDT_YEAR": CID_YEAR - 2000,
        "MDT_MONTH": CID_MONTH,
    }))


def build_csd(size: int) -> bytearray:
    """CSD version 1.0 for SDSC (size <= 2 GiB, PLS 5.3.2), else 2.0 (PLS 5.3.3)."""
    if size <= SDSC_MAX:
        # A 2 GiB card needs READ_BL_LEN = 10 to express its capacity (PLS 5.3.2 note).
        bl = 10 if size == SDSC_MAX else 9
        c_size = ((size >> (9 + bl)) - 1) & 0xFFF  # C_SIZE_MULT = 7: mult 512
        return _with_crc(_pack(CSD_V1, {
            "CSD_STRUCTURE": 0, "TAAC": 0x26, "NSAC": 0x00, "TRAN_SPEED": 0x32,
            "CCC": 0x5F5, "READ_BL_LEN": bl, "READ_BL_PARTIAL": 1,
            "WRITE_BLK_MISALIGN": 1, "READ_BLK_MISALIGN": 1, "DSR_IMP": 0,
            "C_SIZE": c_size, "VDD_R_CURR_MIN": 7, "VDD_R_CURR_MAX": 7,
            "VDD_W_CURR_MIN": 7, "VDD_W_CURR_MAX": 7, "C_SIZE_MULT": 7,
            "ERASE_BLK_EN": 1, "SECTOR_SIZE": 63, "WP_GRP_SIZE": 127,
            "WP_GRP_ENABLE": 1, "R2W_FACTOR": 4, "WRITE_BL_LEN": bl,
            "WRITE_BL_PARTIAL": 1,
        }))
    value = _pack(CSD_V2, {
        "CSD_STRUCTURE": 1, "TAAC": 0x0E, "NSAC": 0x00, "TRAN_SPEED": 0x32,
        "CCC": 0x5B5, "READ_BL_LEN": 9, "ERASE_BLK_EN": 1, "SECTOR_SIZE": 0x7F,
        "WP_GRP_SIZE": 0, "WP_GRP_ENABLE": 0, "R2W_FACTOR": 2, "WRITE_BL_LEN": 9,
    })
    # C_SIZE is 22 bits; QEMU stores 24 (the two reserved bits above take overflow).
    value |= (((size // (512 << 10)) - 1) & 0xFFFFFF) << 48
    return _with_crc(value)


def build_scr(spec_version: int, data_stat_after_erase: bool, cmd23_bit: bool) -> bytearray:
    """The SCR register (PLS 5.6)."""
    return bytearray(_pack(SCR, {
        "SCR_STRUCTURE": 0,
        "SD_SPEC": 1 if spec_version == 1 else 2,
        "DATA_STAT_AFTER_ERASE": int(data_stat_after_erase),
        "SD_SECURITY": 2,
        "SD_BUS_WIDTHS": 0b0101,
        "SD_SPEC3": int(spec_version >= 3),
        "CMD_SUPPORT": 0b10 if cmd23_bit else 0,
    }).to_bytes(8, "big"))


#: Function group support bits (groups 1..6) QEMU advertises: group 1 (access
#: mode) 0 and 1 (high speed), group 2 (command system) 0, 1 and 6, others 0.
FG_SUPPORT = (0x8003, 0x8043, 0x8001, 0x8001, 0x8001, 0x8001)


def build_switch_status(arg: int, current: list[int], strict: bool) -> tuple[bytes, list[int]]:
    """CMD6 status block (PLS 4.3.10.4) and the function selection after it.

    ``arg`` bit 31 is the mode (1: switch); nibble i is the request for group i+1.
    QEMU echoes the requested nibbles; strict mode returns what the spec asks.
    """
    switch = bool(arg & 0x80000000)
    req = [(arg >> (4 * i)) & 0xF for i in range(6)]
    new = list(current)
    if strict:
        sel = []
        for i, r in enumerate(req):
            if r == 0xF:
                sel.append(current[i])
            elif FG_SUPPORT[i] & (1 << r):
                sel.append(r)
            else:
                sel.append(0xF)
        if switch and 0xF not in sel:
            new = sel
    else:
        sel = req
        if switch:
            new = [r if r != 0xF else current[i] for i, r in enumerate(req)]
    values = {"MAX_CURRENT": 1, "STRUCTURE_VERSION": 0}
    for i in range(6):
        values[f"FG{i + 1}_SUPPORT"] = FG_SUPPORT[i]
        values[f"FG{i + 1}_SELECT"] = sel[i]
    return _pack(SWITCH_STATUS, values).to_bytes(64, "big"), new
