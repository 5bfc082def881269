"""The SD card model against the SD Physical Layer Specification (PLS) tables.

Expected values are derived from the spec (state tables, register layouts,
status bit definitions), not from the model's own output.
"""

from __future__ import annotations

import pytest

from harness.hwdefs import sd as S
from harness.model.clock import VirtualClock
from harness.model.sdcard import CardState, SDCard
from harness.profile import BuildProfile

P72 = BuildProfile((7, 2, 0), (), {"spec_version": "2"})
P100 = BuildProfile((10, 0, 13), (), {"spec_version": "3"})
P111 = BuildProfile((11, 1, 3), (), {"spec_version": "3"})
PSERIES = BuildProfile((11, 1, 50), (), {"spec_version": "3", "erase-blocks-as-zero": "true"})

RDY = 1 << 8  # READY_FOR_DATA


def st(state: int, extra: int = 0) -> bytes:
    """An R1 payload: CURRENT_STATE = state, READY_FOR_DATA, plus extra bits."""
    return ((state << 9) | RDY | extra).to_bytes(4, "big")


def make(size: int = 1 << 20, profile: BuildProfile = P111, **kw: object) -> SDCard:
    return SDCard(VirtualClock(), size=size, profile=profile, **kw)  # type: ignore[arg-type]


def to_transfer(card: SDCard) -> int:
    """Identification flow (PLS 4.2): CMD0, CMD8, ACMD41, CMD2, CMD3, CMD7."""
    card.do_command(0, 0)
    if card.spec_version >= 2:
        assert card.do_command(8, 0x1AA) == bytes.fromhex("000001aa")
    card.do_command(55, 0)
    r3 = card.do_command(41, 0x40FF8000)
    assert r3[0] & 0x80  # power up done
    assert card.do_command(2, 0) == card.cid
    r6 = card.do_command(3, 0)
    rca = int.from_bytes(r6[:2], "big")
    assert rca == card.rca
    assert card.do_command(7, rca << 16) == st(3)
    assert card.state is CardState.TRAN
    return rca


# -- identification -------------------------------------------------------------


def test_idle_state_and_illegal_commands() -> None:
    c = make()
    assert c.state is CardState.IDLE
    assert c.do_command(0, 0) == b""  # CMD0: no response
    assert c.do_command(2, 0) == b""  # CMD2 illegal in idle: no response
    assert c.do_command(55, 0) == st(0, S.ILLEGAL_COMMAND | S.APP_CMD)
    # ILLEGAL_COMMAND (type B) is gone after the next valid command.
    assert c.do_command(55, 0) == st(0, S.APP_CMD)
    assert c.expecting_acmd


def test_cmd8_echo_and_mismatch() -> None:
    c = make()
    assert c.do_command(8, 0x1AA) == bytes.fromhex("000001aa")
    assert c.do_command(8, 0x0AA) == b""  # no voltage bit: no response
    assert c.do_command(8, 0x3AA) == b""  # two voltage bits: no response


def test_cmd8_strict_only_vhs_0001() -> None:
    c = make(strict=True)
    assert c.do_command(8, 0x2AA) == b""
    assert c.do_command(8, 0x1AA) == bytes.fromhex("000001aa")
    q = make()
    assert q.do_command(8, 0x1000AA) == (0x1000AA).to_bytes(4, "big")


def test_acmd41_enquiry_powers_up_after_timer() -> None:
    clock = VirtualClock()
    c = SDCard(clock, size=4 << 30)
    c.do_command(55, 0)
    r3 = c.do_command(41, 0)
    assert r3 == bytes.fromhex("00ffff00")  # busy, no CCS yet
    assert c.state is CardState.IDLE
    clock.step(499_999)
    c.do_command(55, 0)
    assert c.do_command(41, 0)[0] & 0x80 == 0
    clock.step(1)
    c.do_command(55, 0)
    r3 = c.do_command(41, 0)
    assert r3 == bytes.fromhex("c0ffff00")  # ready + CCS (SDHC)
    assert c.state is CardState.IDLE  # enquiry does not leave idle
    c.do_command(55, 0)
    c.do_command(41, 0x40FF8000)
    assert c.state is CardState.READY


def test_acmd41_non_enquiry_is_immediate_and_sdsc_has_no_ccs() -> None:
    c = make(1 << 20)
    c.do_command(55, 0)
    assert c.do_command(41, 0x00FF8000) == bytes.fromhex("80ffff00")
    assert c.state is CardState.READY
    assert not c.high_capacity


def test_acmd41_strict_hcs_and_voltage() -> None:
    c = make(4 << 30, strict=True)
    c.do_command(55, 0)
    c.do_command(41, 0x00FF8000)  # no HCS: an SDHC card stays busy
    assert c.state is CardState.IDLE and not c.ocr & S.OCR_BUSY
    c.do_command(55, 0)
    c.do_command(41, 0x40000080)  # only the low-voltage bit: mismatch -> inactive
    assert c.state is CardState.INACTIVE


def test_r6_and_r2_and_select() -> None:
    c = make()
    rca = to_transfer(c)
    assert c.do_command(13, rca << 16) == st(4)
    assert c.do_command(13, (rca ^ 1) << 16) == b""  # other card: no response
    assert c.do_command(7, 0) == st(4)  # deselect -> stand-by
    assert c.state is CardState.STBY
    assert c.do_command(9, rca << 16) == c.csd
    assert c.do_command(10, rca << 16) == c.cid
    assert c.do_command(9, (rca ^ 1) << 16) == b""
    c.do_command(7, rca << 16)
    assert c.do_command(9, rca << 16) == b""  # SEND_CSD illegal in transfer
    assert c.do_command(15, (rca ^ 1) << 16) == b""
    assert c.state is CardState.TRAN
    assert c.do_command(15, rca << 16) == b""
    assert c.state is CardState.INACTIVE
    assert c.do_command(0, 0) == b"" and c.state is CardState.INACTIVE


def test_rca_versions() -> None:
    old = make(profile=P72)
    to_transfer(old)
    assert old.rca == 0x4567
    old.do_command(7, 0)
    assert old.do_command(3, 0)[:2] == (0x4567 * 2).to_bytes(2, "big")
    new = make()
    new.rca_source = lambda: 0xBEEF
    to_transfer(new)
    assert new.rca == 0xBEEF


# -- registers --------------------------------------------------------------------


def test_cid_fields() -> None:
    for prof, prv in ((P111, 1), (PSERIES, 2)):
        c = make(profile=prof)
        d = S.CID.decode(S.register_value(c.cid))
        assert d["MID"] == 0xAA and d["OID"] == int.from_bytes(b"XY", "big")
        assert d["PNM"].to_bytes(5, "big") == b"QEMU!"
        assert d["PRV"] == prv and d["PSN"] == 0xDEADBEEF
        assert (d["MDT_YEAR"], d["MDT_MONTH"]) == (6, 2)
        assert d["CRC"] == S.crc7(c.cid[:15]) and d["ONE"] == 1


@pytest.mark.parametrize("size", [1 << 20, 64 << 20, 1 << 30, 2 << 30])
def test_csd_v1_capacity(size: int) -> None:
    c = make(size)
    d = S.CSD_V1.decode(S.register_value(c.csd))
    assert d["CSD_STRUCTURE"] == 0
    cap = (d["C_SIZE"] + 1) * (1 << (d["C_SIZE_MULT"] + 2)) * (1 << d["READ_BL_LEN"])
    assert cap == size
    assert d["READ_BL_LEN"] == (10 if size == 2 << 30 else 9)
    assert d["CCC"] & (1 << 6)  # class 6 (write protection) on SDSC
    assert d["CRC"] == S.crc7(c.csd[:15])


@pytest.mark.parametrize("size", [4 << 30, (2 << 30) + (512 << 10), 64 << 30])
def test_csd_v2_capacity(size: int) -> None:
    c = make(size)
    d = S.CSD_V2.decode(S.register_value(c.csd))
    assert d["CSD_STRUCTURE"] == 1 and d["READ_BL_LEN"] == 9 and d["TAAC"] == 0x0E
    assert (d["C_SIZE"] + 1) * (512 << 10) == size
    assert not d["CCC"] & (1 << 6)
    assert c.capacity_class == ("SDXC" if size > 32 << 30 else "SDHC")


def test_scr_versions_and_series() -> None:
    def scr(card: SDCard) -> dict[str, int]:
        return S.SCR.decode(S.register_value(card.scr))

    v3 = scr(make())
    assert (v3["SD_SPEC"], v3["SD_SPEC3"], v3["SD_BUS_WIDTHS"]) == (2, 1, 0b0101)
    assert v3["DATA_STAT_AFTER_ERASE"] == 0 and v3["CMD_SUPPORT"] == 0
    v2 = scr(make(spec_version=2))
    assert (v2["SD_SPEC"], v2["SD_SPEC3"]) == (2, 0)
    v1 = scr(make(profile=P100, spec_version=1))
    assert v1["SD_SPEC"] == 1
    assert scr(make(profile=PSERIES))["DATA_STAT_AFTER_ERASE"] == 0
    assert scr(make(profile=PSERIES, erase_blocks_as_zero=False))["DATA_STAT_AFTER_ERASE"] == 1
    strict = scr(make(strict=True))
    assert strict["DATA_STAT_AFTER_ERASE"] == 1 and strict["CMD_SUPPORT"] == 0b10


def _read_after(card: SDCard, rca: int, cmd: int, arg: int, n: int, app: bool = False) -> bytes:
    if app:
        assert card.do_command(55, rca << 16)
    r = card.do_command(cmd, arg)
    assert r[:4] == st(4, S.APP_CMD if app else 0), (cmd, r.hex())
    assert card.data_ready()
    data = card.read_data(n)
    assert card.state is CardState.TRAN
    return data


def test_acmd51_acmd13_acmd6_acmd22() -> None:
    c = make()
    rca = to_transfer(c)
    assert _read_after(c, rca, 51, 0, 8, app=True) == c.scr
    c.do_command(55, rca << 16)
    assert c.do_command(6, 2) == st(4, S.APP_CMD)
    ssr = _read_after(c, rca, 13, 0, 64, app=True)
    assert S.SD_STATUS.decode(int.from_bytes(ssr, "big"))["DAT_BUS_WIDTH"] == 2
    c.do_command(25, 0)
    c.write_data(bytes(512 * 3))
    c.do_command(12, 0)
    qemu = _read_after(c, rca, 22, 0, 4, app=True)
    assert int.from_bytes(qemu, "little") == 3  # QEMU: host byte order
    s = make(strict=True)
    rca = to_transfer(s)
    s.do_command(24, 0)
    s.write_data(bytes(512))
    assert int.from_bytes(_read_after(s, rca, 22, 0, 4, app=True), "big") == 1


def test_cmd6_switch_status() -> None:
    c = make()
    rca = to_transfer(c)
    data = _read_after(c, rca, 6, 0x00FFFFF1, 64)
    d = S.SWITCH_STATUS.decode(int.from_bytes(data, "big"))
    assert d["FG1_SUPPORT"] == 0x8003 and d["FG2_SUPPORT"] == 0x8043
    assert d["FG1_SELECT"] == 1 and d["FG2_SELECT"] == 0xF  # QEMU echoes the argument
    s = make(strict=True)
    rca = to_transfer(s)
    d = S.SWITCH_STATUS.decode(int.from_bytes(_read_after(s, rca, 6, 0x00FFFF2F, 64), "big"))
    assert d["FG1_SELECT"] == 0 and d["FG2_SELECT"] == 0xF  # group 2 func 2 unsupported


def test_cmd19_tuning_and_spec_version() -> None:
    c = make()
    rca = to_transfer(c)
    assert _read_after(c, rca, 19, 0, 64) == S.TUNING_BLOCK_4BIT
    old = make(spec_version=2)
    to_transfer(old)
    assert old.do_command(19, 0) == b"" and old.do_command(23, 1) == b""


# -- data ---------------------------------------------------------------------------


def test_sdsc_byte_addressing_and_block_length() -> None:
    c = make(1 << 20)
    rca = to_transfer(c)
    c.do_command(24, 1024)
    c.write_data(bytes(range(256)) * 2)
    assert c.image_read(1024, 4) == bytes([0, 1, 2, 3])
    assert c.do_command(16, 8) == st(4)
    assert _read_after(c, rca, 17, 1026, 8) == bytes(range(2, 10))
    # BLOCK_LEN_ERROR is an "R" error: in this command's own response (PLS 4.10.1).
    assert c.do_command(16, 513) == st(4, S.BLOCK_LEN_ERROR)
    assert c.do_command(13, rca << 16) == st(4)
    assert c.blk_len == 8


def test_sdhc_block_addressing() -> None:
    c = make(4 << 30)
    rca = to_transfer(c)
    c.do_command(24, 3)  # block 3
    c.write_data(b"\x5a" * 512)
    assert c.image_read(3 * 512, 512) == b"\x5a" * 512
    assert c.do_command(28, 0) == b""  # class 6 illegal on SDHC
    assert c.do_command(13, rca << 16) == st(4, S.ILLEGAL_COMMAND)
    assert _read_after(c, rca, 17, 3, 512) == b"\x5a" * 512


def test_multi_block_with_cmd23_and_cmd12() -> None:
    c = make(1 << 20)
    rca = to_transfer(c)
    assert c.do_command(23, 2) == st(4)
    assert c.do_command(25, 512) == st(4)
    c.write_data(b"\x01" * 512 + b"\x02" * 512)
    assert c.state is CardState.TRAN  # stopped by the count
    c.do_command(18, 512)
    assert c.read_data(1024) == b"\x01" * 512 + b"\x02" * 512
    assert c.state is CardState.DATA
    assert c.do_command(12, 0) == st(5)
    assert c.state is CardState.TRAN
    assert c.do_command(12, 0) == b""  # CMD12 in transfer: illegal
    assert c.do_command(13, rca << 16) == st(4, S.ILLEGAL_COMMAND)


def test_out_of_range() -> None:
    c = make(1 << 20)
    rca = to_transfer(c)
    assert c.do_command(17, 1 << 20) == st(4, S.ADDRESS_ERROR)  # QEMU: ADDRESS_ERROR
    assert c.state is CardState.TRAN
    c.do_command(18, (1 << 20) - 512)
    assert c.read_data(512) == b"\x00" * 512
    c.read_byte()
    assert c.do_command(12, 0) == st(5, S.ADDRESS_ERROR)
    s = make(1 << 20, strict=True)
    to_transfer(s)
    assert s.do_command(17, 1 << 20) == st(4, S.OUT_OF_RANGE)
    del rca


def test_read_byte_without_data_is_zero() -> None:
    c = make()
    assert c.read_byte() == 0
    c.write_byte(5)
    assert not c.data_ready() and not c.receive_ready()


# -- write protection and erase ---------------------------------------------------------


def test_write_protect_groups_sdsc() -> None:
    c = make(8 << 20)
    rca = to_transfer(c)
    assert c.do_command(28, 2 << 20) == st(4)  # protect group 1 (2 MiB groups in QEMU)
    c.do_command(16, 4)
    bits = _read_after(c, rca, 30, 0, 4)
    assert int.from_bytes(bits, "little") == 0b10
    c.do_command(16, 512)
    assert c.do_command(24, (2 << 20) + 512) == st(4, S.WP_VIOLATION)
    c.write_data(b"\x77" * 512)
    # QEMU writes anyway (the violation bit was cleared by the R1 read).
    assert c.image_read((2 << 20) + 512, 1) == b"\x77"
    assert c.do_command(29, 2 << 20) == st(4)
    assert c.wp_groups == set()


def test_write_protect_strict_blocks_write() -> None:
    c = make(8 << 20, strict=True)
    to_transfer(c)
    c.do_command(28, 0)
    assert c.do_command(24, 512) == st(4, S.WP_VIOLATION)
    c.write_data(b"\x77" * 512)
    assert c.image_read(512, 1) == b"\x00"


def test_erase_inclusive_sdsc_bytes_and_wp_skip() -> None:
    c = make(8 << 20)
    rca = to_transfer(c)
    c.do_command(24, 0)
    c.write_data(b"\x11" * 512)
    c.do_command(28, 4 << 20)  # protect group 2
    c.do_command(32, 0)
    c.do_command(33, (6 << 20) - 512)  # through the last block of group 2, inclusive
    assert c.do_command(38, 0) == st(4, S.WP_ERASE_SKIP)
    assert c.do_command(13, rca << 16) == st(4)
    assert c.image_read(0, 4 << 20) == b"\xff" * (4 << 20)
    assert c.image_read(4 << 20, 2 << 20) == bytes(2 << 20)  # protected: untouched
    assert c.image_read(6 << 20, 1) == b"\x00"


def test_erase_first_and_last_block_sdhc() -> None:
    size = 4 << 30
    c = make(size)
    to_transfer(c)
    last = size // 512 - 1
    c.do_command(32, last)
    c.do_command(33, last)
    c.do_command(38, 0)
    assert c.image_read(size - 513, 2) == b"\x00\xff"
    c.do_command(32, 0)
    c.do_command(33, 0)
    c.do_command(38, 0)
    assert c.image_read(0, 513) == b"\xff" * 512 + b"\x00"


def test_erase_errors() -> None:
    c = make(1 << 20)
    rca = to_transfer(c)
    assert c.do_command(38, 0) == st(4, S.ERASE_SEQ_ERROR)
    c.do_command(32, 0)
    c.do_command(33, (1 << 20) + 512)
    assert c.do_command(38, 0) == st(4, S.OUT_OF_RANGE)
    assert c.do_command(13, rca << 16) == st(4)


def test_erase_series_patterns() -> None:
    for prof, kw, value in ((P111, {}, 0xFF), (PSERIES, {}, 0x00),
                            (PSERIES, {"erase_blocks_as_zero": False}, 0xFF)):
        c = make(1 << 20, prof, **kw)
        to_transfer(c)
        c.do_command(24, 0)
        c.write_data(b"\x42" * 512)
        c.do_command(32, 0)
        c.do_command(33, 511)
        c.do_command(38, 0)
        assert c.image_read(0, 512) == bytes([value]) * 512


def test_erase_blocks_as_zero_needs_series() -> None:
    with pytest.raises(ValueError, match="erase-blocks-as-zero"):
        make(profile=P111, erase_blocks_as_zero=True)


def test_erase_reset_strict() -> None:
    c = make(1 << 20, strict=True)
    rca = to_transfer(c)
    c.do_command(32, 0)
    assert c.do_command(16, 512) == st(4, S.ERASE_RESET)  # out of sequence
    c.do_command(33, 511)
    assert c.do_command(38, 0) == st(4, S.ERASE_SEQ_ERROR)
    assert c.do_command(13, rca << 16) == st(4)


# -- lock / unlock ------------------------------------------------------------------------


def _cmd42(card: SDCard, flags: int, pwd: bytes, total: int | None = None) -> None:
    card.do_command(42, 0)
    block = bytes([flags, len(pwd)]) + pwd
    n = total if total is not None else card.blk_len
    card.write_data(block + bytes(max(0, n - len(block))))


def test_lock_unlock_flow_qemu() -> None:
    c = make(1 << 20)
    rca = to_transfer(c)
    _cmd42(c, 0x01, b"abcd", 512)  # set password (QEMU >= 9.1 takes 512 bytes)
    assert c.pwd == b"abcd" and not c.locked
    _cmd42(c, 0x04, b"abcd", 512)  # lock with the password alone: QEMU refuses
    assert not c.locked
    assert c.do_command(13, rca << 16) == st(4, S.LOCK_UNLOCK_FAILED)
    _cmd42(c, 0x05, b"abcdefgh", 512)  # QEMU: set a new password and lock
    assert c.locked and c.pwd == b"efgh"
    assert c.do_command(13, rca << 16) == st(4, S.CARD_IS_LOCKED)
    assert c.do_command(17, 0) == b""  # class 2 refused while locked
    assert c.do_command(13, rca << 16) == st(4, S.CARD_IS_LOCKED | S.ILLEGAL_COMMAND)
    c.do_command(55, rca << 16)
    assert c.do_command(51, 0) == b""  # ACMD51 refused while locked
    _cmd42(c, 0x00, b"wrong", 512)
    assert c.do_command(13, rca << 16) == st(4, S.CARD_IS_LOCKED | S.LOCK_UNLOCK_FAILED)
    _cmd42(c, 0x01, b"efghijkl", 512)  # QEMU unlocks only while setting a password
    assert not c.locked and c.pwd == b"ijkl"


def test_lock_unlock_flow_strict() -> None:
    c = make(1 << 20, strict=True)
    rca = to_transfer(c)
    c.do_command(16, 18)
    _cmd42(c, 0x01, b"abcd")  # set (PLS 4.3.7.1)
    assert c.pwd == b"abcd"
    _cmd42(c, 0x04, b"abcd")  # lock (PLS 4.3.7.2)
    assert c.locked
    assert c.do_command(13, rca << 16) == st(4, S.CARD_IS_LOCKED)
    _cmd42(c, 0x00, b"abcd")  # unlock
    assert not c.locked and c.pwd == b"abcd"
    _cmd42(c, 0x01, b"abcd" + b"xy")  # change: old + new
    assert c.pwd == b"xy"
    _cmd42(c, 0x02, b"xy")  # clear
    assert c.pwd == b""
    _cmd42(c, 0x04, b"")  # lock without password fails
    assert c.do_command(13, rca << 16) == st(4, S.LOCK_UNLOCK_FAILED)


def test_force_erase_and_reset_forgets_password() -> None:
    c = make(1 << 20)
    to_transfer(c)
    c.do_command(24, 0)
    c.write_data(b"\x33" * 512)
    _cmd42(c, 0x05, b"pw", 512)  # set + lock
    assert c.locked
    c.do_command(16, 1)
    _cmd42(c, 0x08, b"", 512)  # forced erase needs a 1-byte block length
    assert not c.locked and c.pwd == b""
    assert c.image_read(0, 1) == b"\x33"  # QEMU keeps the data
    _cmd42(c, 0x05, b"pw", 512)
    c.do_command(0, 0)  # QEMU: reset forgets the password
    assert not c.locked and c.pwd == b""
    s = make(1 << 20, strict=True)
    to_transfer(s)
    s.do_command(24, 0)
    s.write_data(b"\x33" * 512)
    s.do_command(16, 6)
    _cmd42(s, 0x05, b"pw")  # strict: the block has the CMD16 length
    assert s.locked
    s.do_command(0, 0)
    assert s.locked  # strict: the password survives reset
    s.do_command(55, 0)
    s.do_command(41, 0x00FF8000)
    s.do_command(2, 0)
    s.do_command(3, 0)
    s.do_command(7, s.rca << 16)
    s.do_command(16, 1)
    _cmd42(s, 0x08, b"")
    assert s.image_read(0, 1) == b"\xff"


def test_cmd42_length_by_version() -> None:
    old = make(1 << 20, P72)
    to_transfer(old)
    old.do_command(16, 6)
    _cmd42(old, 0x01, b"pwd1")  # 7.2: CMD16 length
    assert old.pwd == b"pwd1" and old.state is CardState.TRAN
    new = make(1 << 20)
    to_transfer(new)
    new.do_command(16, 6)
    _cmd42(new, 0x01, b"pwd1")
    assert new.state is CardState.RCV  # >= 9.1 still waits for 512 bytes


# -- versions, options, sizes ----------------------------------------------------------


def test_spec_version_option() -> None:
    with pytest.raises(ValueError, match="QEMU refuses it too"):
        make(spec_version=1)
    with pytest.raises(ValueError, match="QEMU refuses it too"):
        make(spec_version=4)
    c = make(profile=P72, spec_version=1)
    assert c.do_command(8, 0x1AA) == b""  # CMD8 illegal on a v1.10 card
    assert make(profile=P72).spec_version == 2
    assert make(profile=P111, machine="pc-q35-9.0").spec_version == 2
    assert make(profile=P111, machine="pc-q35-9.1").spec_version == 3


def test_size_rules_by_version() -> None:
    odd = (4 << 30) + (512 << 10)
    make(odd, P111)
    for prof in (P72, P100):
        with pytest.raises(ValueError, match="power of 2.*QEMU refuses it too"):
            make(odd, prof)
    with pytest.raises(ValueError, match="multiple of 512 KiB"):
        make((4 << 30) + 512, P111)
    with pytest.raises(ValueError, match="power of 2"):
        make(3 << 20, P111)


def test_sendingdata_state_check_10_0_only() -> None:
    for prof, expect_sending in ((P72, False), (P100, True), (P111, False)):
        c = make(profile=prof)
        rca = to_transfer(c)
        c.do_command(7, 0)  # stand-by
        c.do_command(55, rca << 16)
        r = c.do_command(51, 0)
        assert (c.state is CardState.DATA) == expect_sending, prof.version
        assert (r != b"") == expect_sending


def test_cmd13_during_write_aborts_qemu() -> None:
    c = make()
    rca = to_transfer(c)
    c.do_command(24, 0)
    c.do_command(13, rca << 16)
    c.write_byte(1)
    assert c.fatal is not None
    assert c.do_command(13, rca << 16) == b""
    old = make(profile=P72)
    rca = to_transfer(old)
    old.do_command(24, 0)
    old.do_command(13, rca << 16)
    old.write_data(bytes(512))
    assert old.fatal is None and old.state is CardState.RCV
    s = make(strict=True)
    rca = to_transfer(s)
    s.do_command(24, 0)
    s.do_command(13, rca << 16)
    s.write_data(b"\x09" * 512)
    assert s.fatal is None and s.image_read(0, 1) == b"\x09"


def test_cmd26_by_version() -> None:
    old = make(profile=P72)
    to_transfer(old)
    assert old.do_command(26, 0) == st(4)
    new = make()
    to_transfer(new)
    assert new.do_command(26, 0) == b""


def test_image_file(tmp_path: object) -> None:
    from pathlib import Path

    img = Path(str(tmp_path)) / "sd.img"
    img.write_bytes(b"\xab" * (1 << 20))
    c = SDCard(VirtualClock(), img)
    rca = to_transfer(c)
    assert _read_after(c, rca, 17, 0, 512) == b"\xab" * 512
    c.do_command(24, 0)
    c.write_data(bytes(512))
    assert img.read_bytes()[:1] == b"\xab"
    assert c.image_read(0, 1) == b"\x00"


def test_eject_and_insert() -> None:
    c = make()
    to_transfer(c)
    c.inserted = False
    assert c.do_command(13, c.rca << 16) == b""
    c.inserted = True
    assert c.state is CardState.IDLE
    empty = SDCard(VirtualClock())
    assert not empty.inserted and empty.do_command(0, 0) == b""


# -- the spec's state table (PLS 4.8, Table 4-42 "card state transition") ------------------

_STATES = ("idle", "ready", "ident", "stby", "tran", "data", "rcv")
#: Commands with a response and the states where the spec makes them legal.
_LEGAL = {
    2: {"ready"}, 3: {"ident", "stby"}, 8: {"idle"}, 9: {"stby"}, 10: {"stby"},
    13: {"stby", "tran", "data", "rcv"}, 16: {"tran"}, 17: {"tran"}, 24: {"tran"},
    32: {"tran"}, 55: {"idle", "stby", "tran", "data", "rcv"},
}


def _card_in(state: str) -> SDCard:
    c = make(1 << 20)
    c.rca_source = lambda: 0x1234
    steps = [(55, 0), (41, 0x00FF8000), (2, 0), (3, 0), (7, 0x1234 << 16), (17, 0), (24, 0)]
    n = {"idle": 0, "ready": 2, "ident": 3, "stby": 4, "tran": 5, "data": 6}.get(state, 5)
    for cmd, arg in steps[:n]:
        c.do_command(cmd, arg)
    if state == "rcv":
        c.do_command(24, 0)
    return c


@pytest.mark.parametrize("state", _STATES)
@pytest.mark.parametrize("cmd", sorted(_LEGAL))
def test_state_table(state: str, cmd: int) -> None:
    c = _card_in(state)
    assert c.state.name.lower() == {"data": "data", "rcv": "rcv"}.get(state, state)
    arg = 0x1234 << 16 if cmd in (9, 10, 13, 55) and state != "idle" else 0
    r = c.do_command(cmd, 0x1AA if cmd == 8 else arg)
    assert (r != b"") == (state in _LEGAL[cmd]), (state, cmd, r.hex())


def test_cmd17_length_on_sdhc_by_version() -> None:
    for prof, n in ((P72, 512), (P111, 8)):
        c = make(4 << 30, prof)
        to_transfer(c)
        c.do_command(16, 8)
        c.do_command(17, 0)
        c.read_data(n)
        assert c.state is CardState.TRAN, prof.version
    s = make(4 << 30, strict=True)  # PLS 4.3.2: SDHC blocks are 512 bytes whatever CMD16 says
    to_transfer(s)
    s.do_command(16, 8)
    s.do_command(17, 0)
    s.read_data(8)
    assert s.state is CardState.DATA


def test_cmd56_by_version() -> None:
    old = make(profile=P72)
    to_transfer(old)
    old.do_command(16, 4)
    old.do_command(56, 1)
    assert old.read_data(4) == b"\xec" * 4 and old.state is CardState.TRAN
    new = make()
    to_transfer(new)
    new.do_command(56, 1)
    assert new.read_data(1) == b"\x00"  # length: whatever the last data command set
    new.do_command(12, 0)
    new.do_command(56, 0)
    new.write_data(bytes(512))
    assert new.state is CardState.TRAN


def test_cmd6_outside_transfer_by_version() -> None:
    for prof, sends in ((P72, True), (P111, False)):
        c = make(profile=prof)
        to_transfer(c)
        c.do_command(7, 0)  # stand-by
        assert (c.do_command(6, 0) != b"") == sends
        assert c.data_ready() == sends


def test_status_clear_conditions() -> None:
    c = make()
    rca = to_transfer(c)
    c.do_command(55, rca << 16)
    # APP_CMD (C) appears in the ACMD's own response, then is cleared by the read.
    assert c.do_command(42, 1) == st(4, S.APP_CMD)
    assert c.do_command(13, rca << 16) == st(4)
    # CURRENT_STATE (B) is the state when the command arrived.
    c.do_command(17, 0)
    assert c.do_command(13, rca << 16) == st(5)


def test_no_response_rewinds_buffer_from_9_1() -> None:
    c = make()
    rca = to_transfer(c)
    c.do_command(24, 0)
    c.write_data(bytes(range(256)) * 2)
    c.do_command(17, 0)
    assert c.read_data(4) == bytes([0, 1, 2, 3])
    assert c.do_command(13, (rca ^ 1) << 16) == b""  # not addressed: no response
    assert c.read_byte() == 0  # QEMU >= 9.1 restarts the buffer
    s = make(strict=True)
    rca = to_transfer(s)
    s.do_command(24, 0)
    s.write_data(bytes(range(256)) * 2)
    s.do_command(17, 0)
    s.read_data(4)
    s.do_command(13, (rca ^ 1) << 16)
    assert s.read_byte() == 4


def test_powerup_timer_survives_reset() -> None:
    clock = VirtualClock()
    c = SDCard(clock, size=1 << 20)
    c.do_command(55, 0)
    c.do_command(41, 0)  # enquiry: timer armed
    c.do_command(0, 0)
    clock.step(500_000)
    assert c.ocr & S.OCR_BUSY  # QEMU's reset leaves the timer running


# -- read_data: the bulk path equals byte-wise reads ---------------------------------------


@pytest.mark.parametrize("setup", ["transfer", "cmd16-data", "cmd17", "cmd6"])
def test_read_data_equals_read_byte_loop(setup: str) -> None:
    """``read_data(n)`` is ``read_byte`` n times (found by sdqtest fuzz: the
    byte loop made a 64 K-block SDMA from a card sending nothing take minutes)."""
    cards = []
    for _ in range(2):
        c = make()
        rca = to_transfer(c)
        if setup == "cmd17":
            c.do_command(17, 512)
        elif setup == "cmd6":
            c.do_command(6, 0x00FFFFF1)
        elif setup == "cmd16-data":
            c.do_command(16, 8)
            c.do_command(13, rca << 16)  # no data: the card stays in transfer
        cards.append(c)
    bulk = cards[0].read_data(700)
    single = bytes(sd_data_read_byte(cards[1]) for _ in range(700))
    assert bulk == single
    assert cards[0].state == cards[1].state
    if setup in ("transfer", "cmd16-data"):
        assert bulk == bytes(700) and cards[0].state is CardState.TRAN


def sd_data_read_byte(card: SDCard) -> int:
    from harness.model import sd_data

    return sd_data.read_byte(card)
