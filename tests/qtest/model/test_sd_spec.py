"""Spec facts (harness.hwdefs.sd) and the card's command table, no QEMU needed."""

from __future__ import annotations

from harness.hwdefs import sd as S
from harness.model.commands import Support, illegal
from harness.model.sd_commands import SD
from harness.model.sdcard import SDCard


def test_crc7_known_vectors() -> None:
    # Command tokens with well-known CRCs (PLS 4.5 example: CMD0 arg 0 -> 0x4A).
    assert S.crc7(bytes([0x40, 0, 0, 0, 0])) == 0x4A
    assert S.crc7(bytes([0x51, 0, 0, 0, 0])) == 0x2A  # CMD17 arg 0
    assert S.crc7(bytes([0x48, 0, 0, 0x01, 0xAA])) == 0x43  # CMD8 0x1AA


def test_card_status_bits_and_clear_conditions() -> None:
    # PLS Table 4-42: bit positions.
    expect = {
        "OUT_OF_RANGE": 31, "ADDRESS_ERROR": 30, "BLOCK_LEN_ERROR": 29,
        "ERASE_SEQ_ERROR": 28, "ERASE_PARAM": 27, "WP_VIOLATION": 26, "CARD_IS_LOCKED": 25,
        "LOCK_UNLOCK_FAILED": 24, "COM_CRC_ERROR": 23, "ILLEGAL_COMMAND": 22,
        "CARD_ECC_FAILED": 21, "CC_ERROR": 20, "ERROR": 19, "CSD_OVERWRITE": 16,
        "WP_ERASE_SKIP": 15, "CARD_ECC_DISABLED": 14, "ERASE_RESET": 13,
        "READY_FOR_DATA": 8, "FX_EVENT": 6, "APP_CMD": 5, "AKE_SEQ_ERROR": 3,
    }
    for name, bit in expect.items():
        f = S.CARD_STATUS.field(name)
        assert (f.lsb, f.width) == (bit, 1), name
    cs = S.CARD_STATUS.field("CURRENT_STATE")
    assert (cs.lsb, cs.width) == (9, 4)
    # PLS Table 4-43: clear conditions.
    assert S.CARD_STATUS_CLEAR["ILLEGAL_COMMAND"] is S.ClearCondition.B
    assert S.CARD_STATUS_CLEAR["COM_CRC_ERROR"] is S.ClearCondition.B
    assert S.CARD_STATUS_CLEAR["CURRENT_STATE"] is S.ClearCondition.B
    assert S.CARD_STATUS_CLEAR["CARD_IS_LOCKED"] is S.ClearCondition.A
    assert S.CARD_STATUS_CLEAR["READY_FOR_DATA"] is S.ClearCondition.A
    for name in ("OUT_OF_RANGE", "ADDRESS_ERROR", "WP_VIOLATION", "APP_CMD", "ERASE_RESET",
                 "WP_ERASE_SKIP", "LOCK_UNLOCK_FAILED", "AKE_SEQ_ERROR"):
        assert S.CARD_STATUS_CLEAR[name] is S.ClearCondition.C, name
    assert S.status_mask(S.ClearCondition.B) == (1 << 23) | (1 << 22) | (0xF << 9)


def test_r6_status_packing() -> None:
    # PLS 4.9.5: R6 carries bits 23, 22, 19, 12:0 as 15, 14, 13, 12:0.
    st = (1 << 23) | (1 << 22) | (1 << 19) | (4 << 9) | (1 << 8) | (1 << 5)
    assert S.r6_status(st) == 0xE000 | (4 << 9) | (1 << 8) | (1 << 5)
    assert S.r6_status(1 << 31) == 0


def test_register_layouts_are_consistent() -> None:
    for reg, bits in ((S.CID, 128), (S.CSD_V1, 128), (S.CSD_V2, 128), (S.SCR, 64)):
        used = 0
        for f in reg.fields:
            assert f.lsb + f.width <= bits, (reg.name, f.name)
            assert not used & f.mask, (reg.name, f.name)
            used |= f.mask
    assert S.SCR.field("DATA_STAT_AFTER_ERASE").lsb == 55
    assert S.OCR.field("CCS").lsb == 30 and S.OCR.field("BUSY").lsb == 31


def test_tuning_block() -> None:
    assert len(S.TUNING_BLOCK_4BIT) == 64
    assert S.TUNING_BLOCK_4BIT[:4] == bytes([0xFF, 0x0F, 0xFF, 0x00])
    assert S.TUNING_BLOCK_4BIT[-1] == 0xDE


def test_command_names() -> None:
    assert S.command_name(17) == "CMD17 READ_SINGLE_BLOCK"
    assert S.command_name(41, app=True) == "ACMD41 SD_SEND_OP_COND"
    assert S.Resp.R2.length == 16 and S.Resp.R1B.length == 4 and S.Resp.NONE.length == 0


def test_capacity_classes() -> None:
    assert S.capacity_class(2 << 30) == "SDSC"
    assert S.capacity_class((2 << 30) + (512 << 10)) == "SDHC"
    assert S.capacity_class(32 << 30) == "SDHC"
    assert S.capacity_class(64 << 30) == "SDXC"


def test_command_table_covers_the_spec() -> None:
    """Every SD-mode command and ACMD the spec defines has a row saying what
    happens, bound to the spec's entry and to the card's handler."""
    for table, rows in ((S.SD_COMMANDS, SD.cmd), (S.SD_APP_COMMANDS, SD.acmd)):
        for index, spec in table.items():
            row = rows[index]
            assert row.support in Support
            assert row.spec is spec, index
            if row.support in (Support.IMPLEMENTED, Support.VERSION):
                handler = SD.handler(row)
                assert getattr(SDCard, handler.__name__) is handler, index
            else:
                assert SD.handler(row) is illegal, index
    assert set(SD.cmd) == set(range(64))
    assert set(SD.acmd) == set(S.SD_APP_COMMANDS)
    implemented = {i for i, r in SD.cmd.items() if r.support is Support.IMPLEMENTED}
    assert implemented == {0, 2, 3, 6, 7, 8, 9, 10, 12, 13, 15, 16, 17, 18, 19, 23, 24, 25,
                           27, 28, 29, 30, 32, 33, 38, 42, 55, 56}
    assert {i for i, r in SD.acmd.items() if r.support is Support.IMPLEMENTED} == {
        6, 13, 22, 23, 41, 42, 51}
