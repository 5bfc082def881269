"""The eMMC model alone: registers, CMD6, partitions, sleep, deviations, tables."""

from __future__ import annotations

import pytest

from harness.hwdefs import emmc as E
from harness.hwdefs.sd import CardState
from harness.machine import CardImage, Machine
from harness.model import emmc_defaults
from harness.model.clock import VirtualClock
from harness.model.emmc import EmmcCard, check_emmc_sizes
from harness.model.target import ModelTarget
from harness.profile import BuildProfile

BOOT = 128 << 10
SIZE = 2 * BOOT + (4 << 20)
P100 = BuildProfile((10, 0, 13), emmc_properties={"boot-config": "0",
                                                  "boot-partition-size": "0"})


def tran(c: EmmcCard, rca: int = 7) -> None:
    c.do_command(0, 0)
    c.do_command(1, E.CMD1_HOST_OCR)
    c.do_command(2, 0)
    c.do_command(3, rca << 16)
    c.do_command(7, rca << 16)
    assert c.state == CardState.TRAN


def make(**kw: object) -> EmmcCard:
    return EmmcCard(VirtualClock(), size=SIZE, boot_partition_size=BOOT, **kw)  # type: ignore[arg-type]


def test_identification_uses_the_host_rca() -> None:
    c = make()
    assert c.rca == 1
    c.do_command(0, 0)
    assert c.do_command(1, 0)[0] & 0x80 == 0  # enquiry: not powered up yet
    r = c.do_command(1, E.CMD1_HOST_OCR)
    assert r[0] & 0x80 and c.state == CardState.READY
    assert len(c.do_command(2, 0)) == 16
    r3 = c.do_command(3, 0x1234 << 16)
    assert len(r3) == 4 and c.rca == 0x1234 and c.state == CardState.STBY
    assert c.do_command(7, 0x1234 << 16)
    assert c.state == CardState.TRAN


def test_ext_csd_sizes_and_partition_config() -> None:
    c = make(boot_config=0x48)
    ext = c.ext_csd_bytes
    assert E.FIELDS["SEC_COUNT"].get(ext) == (4 << 20) // 512
    assert ext[E.BOOT_SIZE_MULT] == 1 and ext[E.RPMB_SIZE_MULT] == 0
    assert ext[E.PARTITION_CONFIG] == 0x48


def test_switch_write_set_clear_and_refusals() -> None:
    c = make()
    tran(c)
    c.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 185, 1))
    c.do_command(6, E.switch_arg(E.SwitchAccess.SET_BITS, 185, 6))
    c.do_command(6, E.switch_arg(E.SwitchAccess.CLEAR_BITS, 185, 2))
    assert c.ext_csd[185] == 5
    r = c.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 200, 1))
    assert int.from_bytes(r, "big") & E.SWITCH_ERROR
    # QEMU: SWITCH_ERROR stays; strict: cleared after it is reported
    assert int.from_bytes(c.do_command(13, 7 << 16), "big") & E.SWITCH_ERROR
    s = make(strict=True)
    tran(s)
    s.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 200, 1))
    assert not int.from_bytes(s.do_command(13, 7 << 16), "big") & E.SWITCH_ERROR
    r = s.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 160, 0))
    assert int.from_bytes(r, "big") & E.SWITCH_ERROR and s.ext_csd[160] == 7


def test_partitions_map_to_image_offsets() -> None:
    c = make()
    tran(c)
    for part, start in ((0, 2 * BOOT), (1, 0), (2, BOOT)):
        c.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 179, part))
        c.store.write(512, bytes([part + 1]) * 512)  # type: ignore[union-attr]
        assert c.image_read(start + 512, 1) == bytes([part + 1])
    r = c.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 179, 3))  # no RPMB
    assert int.from_bytes(r, "big") & E.SWITCH_ERROR and c.partition == 2


def test_gp_partition_block_access_is_fatal() -> None:
    c = make()
    tran(c)
    c.do_command(6, E.switch_arg(E.SwitchAccess.WRITE_BYTE, 179, 4))
    c.do_command(17, 0)
    assert c.fatal and "aborts" in c.fatal


def test_sleep_drops_commands_and_cmd0_is_fatal() -> None:
    c = make()
    tran(c)
    c.do_command(7, 0)
    assert c.do_command(5, (7 << 16) | E.CMD5_SLEEP)
    assert c.sleeping
    assert c.do_command(13, 7 << 16) == b"" and c.do_command(5, 7 << 16) == b""
    assert c.fatal is None
    c.do_command(0, 0x1234)  # any argument: QEMU asserts on the mode before looking
    assert c.fatal and "aborts" in c.fatal
    s = make(strict=True)
    tran(s)
    s.do_command(7, 0)
    s.do_command(5, (7 << 16) | E.CMD5_SLEEP)
    assert s.do_command(0, 0x1234) == b"" and s.sleeping
    assert s.do_command(5, 7 << 16) and not s.sleeping and s.state == CardState.STBY


def test_realize_rules() -> None:
    check_emmc_sizes(SIZE, BOOT, 0)
    with pytest.raises(ValueError, match="power of 2"):
        check_emmc_sizes(SIZE + BOOT, BOOT, 0)
    with pytest.raises(ValueError, match="128 KiB"):
        check_emmc_sizes(SIZE, 1000, 0)
    with pytest.raises(ValueError, match="smaller"):
        check_emmc_sizes(BOOT, BOOT, 0)
    with pytest.raises(ValueError, match="no property rpmb"):
        EmmcCard(VirtualClock(), size=SIZE, rpmb_partition_size=BOOT, profile=P100)


def test_machine_and_target_build_an_emmc() -> None:
    m = Machine(card_kind="emmc", card={"boot-partition-size": BOOT},
                image=CardImage.null(SIZE))
    assert Machine.loads(m.dumps()) == m
    assert isinstance(ModelTarget(m).card, EmmcCard)
    with pytest.raises(ValueError, match="no emmc property"):
        ModelTarget(m.replace(card={"spec_version": 3}))
    with pytest.raises(ValueError, match="card kind"):
        Machine(card_kind="mmc")


def test_version_table() -> None:
    assert not emmc_defaults.has_emmc((7, 2, 0))
    assert set(emmc_defaults.expected_properties((10, 0, 13))) == {
        "boot-partition-size", "boot-config"}
    assert "auth-key" in emmc_defaults.expected_properties((11, 1, 3))
    assert emmc_defaults.surprises(P100) == []
    p111 = BuildProfile((11, 1, 3), emmc_properties={"drive": None, "boot-config": "0"},
                        emmc_pluggable=True)
    assert any("rpmb-partition-size" in s for s in emmc_defaults.surprises(p111))


def test_ext_csd_layout_is_consistent() -> None:
    """Fields do not overlap, fit in 512 bytes; CMD6 may write only the modes segment."""
    seen: set[int] = set()
    for f in E.EXT_CSD:
        span = set(range(f.index, f.index + f.width))
        assert not span & seen, f.name
        assert max(span) < E.EXT_CSD_BYTES
        seen |= span
    assert max(E.WRITABLE_BYTES) < E.PROPERTIES_SEGMENT
    assert E.field_at(179) is E.FIELDS["PARTITION_CONFIG"] and E.field_at(1) is None


def test_command_rows_follow_the_standard_table() -> None:
    """Every command QEMU's eMMC knows is one the standard defines; an
    implemented row is bound to the card's own method of that name (an
    eMMC override is never shadowed by the SD handler), any other row is
    illegal, and so are the SD security ACMDs."""
    from harness.model.commands import Support, illegal
    from harness.model.emmc_commands import EMMC

    for index, row in EMMC.cmd.items():
        assert row.spec is E.EMMC_COMMANDS[index], index
        handler = EMMC.handler(row)
        if row.support is Support.IMPLEMENTED:
            assert getattr(EmmcCard, handler.__name__) is handler, index
        else:
            assert handler is illegal, index
    assert EMMC.acmd and all(EMMC.handler(r) is illegal for r in EMMC.acmd.values())
    assert EMMC.handler(EMMC.cmd[12]).__qualname__ == "SDCard._cmd_stop"
    assert EMMC.handler(EMMC.cmd[23]).__qualname__ == "EmmcCard._cmd_set_block_count"


def test_inheriting_a_handler_the_card_overrides_is_refused() -> None:
    """``inherit`` binds the SD handler; a subclass override of it would
    never run, so the table refuses the binding."""
    from harness.model.commands import CommandTable, Rsp
    from harness.model.emmc_commands import COMMANDS
    from harness.model.sd_commands import SD

    class Card(EmmcCard):
        def _cmd_stop(self, arg: int) -> Rsp:
            return Rsp.R1

    with pytest.raises(ValueError, match="overrides"):
        CommandTable("test", COMMANDS).inherit(Card, SD, 12)
    with pytest.raises(ValueError, match="no row"):  # eMMC CMD19 BUSTEST_W: unimplemented
        CommandTable("test", COMMANDS).inherit(EmmcCard, SD, 19)
    with pytest.raises(ValueError, match="no handler"):
        CommandTable("test", COMMANDS).inherit(EmmcCard, SD, 4)
