"""SiFive's SPI controller on sifive_u, as the model states it (no QEMU).

Facts from the FU540-C000 Manual ("Serial Peripheral Interface": the register
map, the 8-entry FIFOs, the watermarks, ``rxdata.empty``, ``fmt.dir``), from
hw/riscv/sifive_u.c (SPI2 at 0x10050000 on PLIC source 6, ``ssi-sd`` on chip
select 0) and QEMU's departures (ledger ``sifive-spi.*``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.check import boards as check_boards
from harness.driver.sifive_spi import SifiveSpiPort
from harness.driver.spi import SpiHost, port_for
from harness.hwdefs import boards
from harness.hwdefs import sd_spi as T
from harness.hwdefs import sifive_spi as S
from harness.ledger import LEDGER
from harness.ledger.entry import parse_version
from harness.machine import Machine
from harness.model.sifive_spi import QEMU_RESET, SifiveSpi
from harness.model.sifive_spi_target import SifiveSpiModelTarget
from harness.profile import NEWEST, BuildProfile
from harness.scenarios import all_scenarios

_ALL = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
V72, V100, V111 = (replace(_ALL, version=parse_version(v)) for v in ("7.2.22", "10.0.13",
                                                                       "11.1.3"))
RELEASES = pytest.mark.parametrize("profile", [V72, V100, V111], ids=["7.2", "10.0", "11.1"])
_EMPTY = S.RXDATA.mask("empty")


def _model(profile: BuildProfile = V111) -> SifiveSpiModelTarget:
    return SifiveSpiModelTarget(Machine.for_board("sifive_u"), profile=profile, size=16 << 20)


def test_board_and_register_map_are_the_sources() -> None:
    b = boards.by_name("sifive_u")
    assert b.spi and b.group == "spi" and b not in boards.SDHCI_BOARDS
    assert (b.base, b.irq.line, b.irq.qom_type) == (0x1005_0000, 6, "riscv.sifive.plic")
    assert b.binary == "qemu-system-riscv64" and ("-bios", "none") == b.args
    offsets = {r.name: r.offset for r in S.REGISTERS}
    assert offsets == {"sckdiv": 0x00, "sckmode": 0x04, "csid": 0x10, "csdef": 0x14,
                       "csmode": 0x18, "delay0": 0x28, "delay1": 0x2C, "fmt": 0x40,
                       "txdata": 0x48, "rxdata": 0x4C, "txmark": 0x50, "rxmark": 0x54,
                       "fctrl": 0x60, "ffmt": 0x64, "ie": 0x70, "ip": 0x74}
    assert not set(S.RESERVED) & set(offsets.values())
    assert isinstance(port_for(_model()), SifiveSpiPort)


def test_reset_departs_from_the_manual_where_the_ledger_says() -> None:
    """ledger sifive-spi.reset-values: delay0.sckcs and fmt.len differ from the
    manual's reset; every other field the manual gives agrees."""
    t = _model()
    differ = {(reg.name, name) for reg, name, value in S.MANUAL_RESET
              if reg.field(name).get(t.read(reg.offset, 4)) != value}
    assert differ == {("delay0", "sckcs"), ("fmt", "len")}
    assert "sifive-spi.reset-values" in LEDGER
    assert t.read(S.DELAY0.offset, 4) == QEMU_RESET["delay0"] == 0x1001
    assert t.read(S.RXDATA.offset, 4) == _EMPTY and t.read(S.TXDATA.offset, 4) == 0


@RELEASES
def test_card_initialises_through_the_port(profile: BuildProfile) -> None:
    """PLS 7.2.1 through SiFive's controller: CMD0 R1 0x01, CMD8 echoes 0x1AA,
    ACMD41 leaves idle, a CSD block with a valid CRC16 (not on 10.0, whose CMD9
    is illegal outside stand-by: ledger spi.version.cxd-standby)."""
    h = SpiHost(_model(profile))
    r = h.init()
    assert r["cmd0"].raw == [0x01] and r["cmd8"].raw[3:] == [0x01, 0xAA]
    assert r["acmd41"].r1 == 0x00
    _rsp, block = h.read_register(9)
    assert (block is None) == (profile is V100)
    assert block is None or block.crc_ok


def test_chip_select_follows_csmode() -> None:
    """ledger sifive-spi.cs-mode-level: AUTO sends bytes to no card (they come
    back 0); HOLD, OFF and the reserved 1 select it; with csdef bit 0 clear a
    csmode write leaves the line alone."""
    t = _model()
    h = SpiHost(t)
    h.setup()
    assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff") == [0] * 8
    for mode in (S.CSMODE_HOLD, S.CSMODE_OFF, 1):
        t.write(S.CSMODE.offset, 4, mode)
        assert not t.cs_level
        h.deselect()
        assert t.cs_level
    t.write(S.CSDEF.offset, 4, 0)
    h.select()
    assert t.cs_level
    t.write(S.CSDEF.offset, 4, 1)  # csdef alone drives nothing
    assert t.cs_level
    t.write(S.CSID.offset, 4, 0)  # a csid write does: HOLD, stored while csdef was 0
    assert not t.cs_level
    assert h.command(0).raw == [0x01]


def test_receive_fifo_watermarks_and_dir() -> None:
    """The manual: an 8-entry receive FIFO, ``rxdata.empty`` past it; ip.rxwm
    while more than rxmark entries wait, ip.txwm while fewer than txmark (the
    transmit FIFO is empty at once in QEMU); the line is ip & ie; fmt.dir set
    writes nothing into the receive FIFO."""
    t = _model()
    t.write(S.RXMARK.offset, 4, 3)
    t.write(S.IE.offset, 4, S.IE.mask("rxwm"))
    for i in range(4):
        t.write(S.TXDATA.offset, 4, i)
    assert t.read(S.IP.offset, 4) == S.IP.mask("rxwm") and t.irq_level()
    for i in range(6):
        t.write(S.TXDATA.offset, 4, i)
    assert [t.read(S.RXDATA.offset, 4) for _ in range(9)] == [0] * 8 + [_EMPTY]
    assert t.irq_events() == [True, False]
    t.write(S.IE.offset, 4, S.IE.mask("txwm"))
    t.write(S.TXMARK.offset, 4, 1)
    assert t.irq_level()
    t.write(S.TXMARK.offset, 4, 0)
    assert not t.irq_level()
    t.write(S.FMT.offset, 4, S.FMT.mask("dir"))
    t.write(S.TXDATA.offset, 4, 0xFF)
    assert t.read(S.RXDATA.offset, 4) == _EMPTY


def test_refused_writes_and_accesses() -> None:
    """QEMU refuses csid >= 1, csdef >= 2, csmode > 3, watermarks >= 8, rxdata, ip,
    fctrl, ffmt and reserved offsets; it takes aligned 32-bit accesses only
    (a 64-bit one is two of them)."""
    spi = SifiveSpi(lambda v: 0, lambda level: None)
    before = dict(spi.regs)
    for reg, value in ((S.CSID, 1), (S.CSDEF, 2), (S.CSMODE, 4), (S.TXMARK, 8),
                       (S.RXMARK, 8), (S.IP, 3), (S.FCTRL, 1), (S.FFMT, 7)):
        spi.write(reg.offset, value)
    for off in S.RESERVED:
        spi.write(off, 0xFFFF_FFFF)
    assert spi.regs == before
    t = _model()
    t.write(S.SCKDIV.offset, 1, 0x55)
    t.write(S.SCKDIV.offset + 2, 2, 0x55)
    assert t.read(S.SCKDIV.offset, 4) == 3 and t.read(S.SCKDIV.offset, 2) == 0
    t.write(S.DELAY0.offset, 8, 0x0000_0007_0002_0003)
    assert (t.read(S.DELAY0.offset, 4), t.read(S.DELAY1.offset, 4)) == (0x0002_0003, 7)
    assert t.read(S.SCKDIV.offset, 8) == 3


def test_only_an_undefined_byte_is_adopted() -> None:
    """ledger spi.illegal-r1-stale on this controller: the byte after an illegal
    command's filler is adopted from QEMU, at rxdata, nowhere else."""
    t = _model(V111)
    h = SpiHost(t)
    h.setup()
    h.select()
    h.command(0)
    h.xfer_all(T.command_frame(60, 0))
    h.xfer(T.FILL)
    t.write(S.TXDATA.offset, 4, T.FILL)
    assert t.may_adopt("read", (S.RXDATA.offset, 4))
    value = t.read(S.RXDATA.offset, 4)
    assert t.reconcile("read", (S.RXDATA.offset, 4), value, 0x01)
    assert not t.reconcile("read", (S.RXDATA.offset, 4), 0xFF, 0x01)


def test_the_spi_group_runs_there_less_the_pl022s() -> None:
    """``check --board sifive_u``: the spi group less spi-ssp-fifo (the PL022's),
    with SiFive's own two, and the real drivers recorded there; lm3s6965evb never
    runs SiFive's."""
    scs = list(all_scenarios().values())
    mine = {sc.name for sc in check_boards.applicable(scs, ["sifive_u"])}
    spi = {sc.name for sc in scs if sc.group == "spi"}
    recorded = {sc.name for sc in scs if sc.group == "drivers"
                and sc.params.get("board") == "sifive_u"}
    assert mine == (spi - {"spi-ssp-fifo"}) | recorded
    assert {"spi-sifive-registers", "spi-sifive-fifo"} <= mine
    pl022 = {sc.name for sc in check_boards.applicable(scs, ["lm3s6965evb"])}
    assert pl022 == spi - {"spi-sifive-registers", "spi-sifive-fifo"}
