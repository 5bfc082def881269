"""The Allwinner SD/MMC host on orangepi-pc, as the model states it (no QEMU).

Facts from the H3 Datasheet 1.2 section 5.3 (offsets, reset values, the
descriptor layout), the board's QEMU source (hw/arm/allwinner-h3.c: MMC0 at
0x01c0f000 on GIC SPI 60, SDRAM at 0x40000000), the SD Physical Layer spec
(CMD8's echo, R2's word order) and QEMU's allwinner-sdhost.c as the ledger
describes it (``sunxi.*``).  Last, the mutant the check must catch, paired
model against model: a controller that leaves OWN set in the descriptors it
used.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from harness.check import boards as check_boards
from harness.check.lockstep import Divergence, LockstepTarget
from harness.check.sunxi_transfer import SunxiTracker, window_register
from harness.driver.allwinner import ACD, CC, DTC, RE, SunxiHost
from harness.hwdefs import allwinner as A
from harness.hwdefs import boards
from harness.images import BLOCK
from harness.ledger import LEDGER
from harness.ledger.entry import parse_version
from harness.machine import CardImage, Machine
from harness.model import allwinner as M
from harness.model.allwinner_target import AwModelTarget
from harness.model.board_targets import model_target_for
from harness.profile import NEWEST, BuildProfile
from harness.scenarios import Context, all_scenarios

BOARD = boards.by_name("orangepi-pc")
_ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
V72, V111 = (replace(_ARM, version=parse_version(v)) for v in ("7.2.22", "11.1.3"))
SIZE = 16 << 20


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(random.Random(5).randbytes(SIZE))
    return p


def _model(image: Path, profile: BuildProfile = V111) -> AwModelTarget:
    return AwModelTarget(Machine.for_board(BOARD.name, image=CardImage(image)),
                         profile=profile)


def test_board_and_layout_are_the_sources() -> None:
    """allwinner-h3.c: TYPE_AW_SDHOST_SUN5I at 0x01c0f000, GIC SPI 60, SDRAM
    0x40000000, 1 GiB (orangepi.c); H3 Datasheet 5.3.7: the offsets."""
    assert (BOARD.base, BOARD.irq.line, BOARD.ram_base, BOARD.ram) == (
        0x01C0_F000, 60, 0x4000_0000, 1 << 30)
    assert BOARD.controller == "allwinner-sdhost-sun5i" and BOARD.group == "sunxi"
    assert BOARD not in boards.SDHCI_BOARDS and model_target_for(BOARD) is AwModelTarget
    assert (A.SD_CMDR.offset, A.SD_RISR.offset, A.SD_STAR.offset, A.SD_IDST.offset,
            A.SD_FIFO.offset) == (0x18, 0x38, 0x3C, 0x88, 0x200)
    assert A.VARIANTS["allwinner-sdhost-sun5i"].max_desc_size == 1 << 16
    assert A.VARIANTS["allwinner-sdhost-sun4i"].fifo_at_0x100
    assert A.DES0.field("OWN").mask == 1 << 31 and A.DES0.field("LD").mask == 1 << 2


def test_reset_values(image: Path) -> None:
    """The datasheet's reset values; SD_STAR is QEMU's (ledger sunxi.no-fifo):
    CARD_PRESENT and FIFO_EMPTY."""
    h = SunxiHost(_model(image))
    assert (h.rd(A.SD_GCTL), h.rd(A.SD_TMOR), h.rd(A.SD_BKSR), h.rd(A.SD_BYCR),
            h.rd(A.SD_FWLR), h.rd(A.SD_A12A), h.rd(A.SD_HWRST)) == (
        0x300, 0xFFFF_FF40, 0x200, 0x200, 0x000F_0000, 0xFFFF, 1)
    assert h.rd(A.SD_STAR) == 0x104
    assert h.reset() == 0  # self-clearing at once (sunxi.reset-bits-noop)
    assert h.t.read(A.SD_CKCR.offset, 2) == 0 and h.t.read(A.SD_SAMP_DL.offset, 4) == 0


def test_init_and_responses(image: Path) -> None:
    """PLS 4.3.13: CMD8 echoes 0x1AA; a long response lands with SD_RESP3 the
    first word (its top byte CID's MID), as sunxi_mmc_finalize_request reads it."""
    t = _model(image)
    h = SunxiHost(t)
    h.setup()
    h.command(0, rsp="")
    assert h.command(8, 0x1AA).r1 & 0xFFF == 0x1AA
    rca = h.init_card()
    assert rca and h.rca == rca
    h.command(7, 0)
    cid = h.command(10, rca << 16, rsp="r2")
    assert cid.ok and cid.resp[3] >> 24 == t.card.cid[0]
    h.clear()
    short = h.command(13, rca << 16, rsp="r2")  # short answer, long asked: RE, no CC
    assert short.risr & RE and not short.risr & CC


def test_pio_and_autostop(image: Path) -> None:
    """Data through SD_FIFO equals the image; DTC then the auto CMD12's ACD."""
    t = _model(image)
    h = SunxiHost(t)
    h.setup()
    h.init_card()
    r = h.pio_read(18, 3 * BLOCK, 2 * BLOCK, autostop=True)
    assert r.data == image.read_bytes()[3 * BLOCK:5 * BLOCK]
    assert r.risr & (DTC | ACD) == DTC | ACD
    # SD_RESP0 is the auto CMD12's R1: the state it was received in, data (PLS 4.10.1)
    assert (h.rd(A.SD_RESP0) >> 9) & 0xF == 5


def test_autostop_at_zero_is_immediate(image: Path) -> None:
    """sunxi.autostop-at-zero: with the counter 0 CMD12 goes with the command."""
    h = SunxiHost(_model(image))
    h.setup()
    h.init_card()
    h.wr(A.SD_BYCR, 0)
    h.wr(A.SD_CMDR, h.flags(13, "r1") | (1 << 12))
    assert h.rd(A.SD_RISR) & ACD


def test_idmac_chain_and_writeback(image: Path) -> None:
    """A chain of two descriptors: RAM holds the image's blocks, OWN is cleared
    (H3 5.3.4.2), DES1 0 comes back 0x10000 (sunxi.idmac-writeback), SD_IDST
    NOR_INT_SUM|RX_INT, SD_BYCR 0 (sunxi.bycr-counts-down)."""
    t = _model(image)
    h = SunxiHost(t)
    h.setup()
    h.init_card()
    addrs = h.descriptors([BLOCK, 1 << 16])
    h.wr(A.SD_BKSR, BLOCK)
    h.wr(A.SD_BYCR, 3 * BLOCK)
    h.start_dma(False)
    h.command(18, 0, data="read", autostop=True)
    assert t.mem_read(h.buf_base, 3 * BLOCK) == image.read_bytes()[:3 * BLOCK]
    des = [M.Descriptor.unpack(t.mem_read(a, A.DESC_SIZE)) for a in addrs]
    assert not des[0].status & (1 << 31) and des[1].size == 1 << 16
    assert (h.rd(A.SD_IDST), h.rd(A.SD_BYCR)) == (0x102, 0)
    assert h.rd(A.SD_RISR) & (DTC | ACD | (1 << 16)) == DTC | ACD | (1 << 16)


def test_idmac_ignores_own_and_idmac_enb_and_registers_keep_writes(image: Path) -> None:
    """sunxi.idmac-gctl-only: a descriptor without OWN is used, with SD_DMAC 0;
    sunxi.registers-keep-any-write: SD_RESP1 keeps a write, SD_MISR clears SD_RISR;
    sunxi.unimplemented-registers: SD_CHDA reads 0."""
    t = _model(image)
    h = SunxiHost(t)
    h.setup()
    h.init_card()
    t.mem_write(h.desc_base, M.Descriptor(1 << 2, BLOCK, h.buf_base, 0).pack())
    h.wr(A.SD_BKSR, BLOCK)
    h.wr(A.SD_BYCR, BLOCK)
    h.wr(A.SD_GCTL, h.rd(A.SD_GCTL) | (1 << 5))  # DMA_ENB only, SD_DMAC left 0
    h.command(17, 2 * BLOCK, data="read")
    assert t.mem_read(h.buf_base, BLOCK) == image.read_bytes()[2 * BLOCK:3 * BLOCK]
    assert h.rd(A.SD_CHDA) == 0
    h.wr(A.SD_RESP1, 0x1234_5678)
    assert h.rd(A.SD_RESP1) == 0x1234_5678
    h.wr(A.SD_MISR, DTC)
    assert not h.rd(A.SD_RISR) & DTC


@pytest.mark.parametrize(("profile", "raises"), [(V72, 2), (V111, 1)], ids=["7.2", "11.1"])
def test_line_is_the_value_before_10_0(image: Path, profile: BuildProfile,
                                       raises: int) -> None:
    """sunxi.version.irq-level-value: on 7.2 DTC joining a pending CC raises again."""
    t = _model(image, profile)
    h = SunxiHost(t)
    h.setup()
    h.init_card()
    t.irq_events()
    h.pio_read(17, 0, BLOCK, imask=0xFFFF_FFFF)
    assert t.irq_events() == [True] * raises


def test_card_absent(image: Path) -> None:
    """An ejected medium: CARD_REMOVE, CARD_PRESENT 0, a command unanswered (RE)."""
    t = _model(image)
    h = SunxiHost(t)
    h.setup()
    t.set_card_inserted(False)
    assert h.rd(A.SD_RISR) & (1 << 31) and not h.rd(A.SD_STAR) & (1 << 8)
    assert h.command(8, 0x1AA).risr & RE
    t.set_card_inserted(True)
    assert h.rd(A.SD_RISR) & (1 << 30)


def test_cubieboard_is_the_sun4i_variant(image: Path) -> None:
    """allwinner-a10.c: TYPE_AW_SDHOST_SUN4I at 0x01c0f000 on input 32 of the
    A10's interrupt controller; the data port at 0x100 (U-Boot before sun6i)
    and at 0x200 too (sunxi.sun4i-fifo-also-at-0x200); DES1 0 is 8 KiB."""
    cb = boards.by_name("cubieboard")
    assert (cb.base, cb.irq.line, cb.irq.qom_type, cb.ram_base) == (
        0x01C0_F000, 32, "allwinner-a10", 0x4000_0000)
    t = AwModelTarget(Machine.for_board(cb.name, image=CardImage(image)), profile=V111)
    h = SunxiHost(t)
    assert h.fifo == 0x100 and h.max_len == 8 << 10
    h.setup()
    h.init_card()
    h.wr(A.SD_BYCR, 2 * BLOCK)
    h.command(17, 0, data="read")
    words = [t.read(0x100, 4), t.read(0x200, 4)]
    assert words == [int.from_bytes(image.read_bytes()[i:i + 4], "little") for i in (0, 4)]
    h.manual_stop()
    h.clear()
    (addr,) = h.descriptors([8 << 10])
    h.wr(A.SD_BYCR, BLOCK)
    h.start_dma(False)
    h.command(17, 0, data="read")
    assert M.Descriptor.unpack(t.mem_read(addr, A.DESC_SIZE)).size == 8 << 10


def test_bpim2u_is_the_a64_variant(image: Path) -> None:
    """allwinner-r40.c: TYPE_AW_SDHOST_SUN50I_A64 mmc0 at 0x01c0f000 on GIC SPI 32;
    SD_SAMP_DL resets to 0x2000 and holds what Linux writes (sunxi_mmc_calibrate)."""
    bp = boards.by_name("bpim2u")
    assert (bp.base, bp.irq.line, bp.irq.qom_type) == (0x01C0_F000, 32, "arm_gic")
    t = AwModelTarget(Machine.for_board(bp.name, image=CardImage(image)), profile=V111)
    h = SunxiHost(t)
    assert h.rd(A.SD_SAMP_DL) == 0x2000 and h.calibrate and h.max_len == 1 << 16
    h.setup()
    assert h.rd(A.SD_SAMP_DL) == 1 << 7


def test_tracker_names_registers_and_commands() -> None:
    tr = SunxiTracker()
    assert window_register(0x88) == "SD_IDST (+0x088)"
    assert "outside" in window_register(0x1000)
    tr.before("write", (A.SD_CAGR.offset, 4, 0x200), 1)
    assert tr.before("write", (A.SD_CMDR.offset, 4, (1 << 31) | (1 << 9) | 17), 2) \
        .startswith("CMD17")
    assert tr.command is not None and tr.command.arg == 0x200 and tr.command.data


def test_ledger_and_check_know_the_group() -> None:
    assert {"sunxi.no-fifo", "sunxi.idmac-writeback", "sunxi.version.irq-level-value"} \
        <= set(LEDGER)
    sc = all_scenarios()["sunxi-pio-read"]
    assert check_boards.skip_reason(sc, "orangepi-pc", NEWEST) is None
    assert "Allwinner" in str(check_boards.skip_reason(sc, "xilinx-zynq-a9", NEWEST))


class OwnKept(AwModelTarget):
    """The mutant ``sunxi-descriptor-keeps-own``: the IDMAC writes each
    descriptor back with OWN still set."""

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        used = self.host._descriptor

        def keep_own(addr: int, is_write: bool, left: int) -> tuple[int, M.Descriptor]:
            n, desc = used(addr, is_write, left)
            desc.status |= 1 << 31
            self.memory.write(addr, desc.pack())
            return n, desc

        self.host._descriptor = keep_own  # type: ignore[method-assign]


def test_the_mutant_is_caught_model_against_model(image: Path) -> None:
    """The sunxi group catches the mutant at the first descriptor read back."""
    machine = Machine.for_board(BOARD.name, image=CardImage(image))
    t = LockstepTarget(AwModelTarget(machine, profile=V111), OwnKept(machine, profile=V111))
    ctx = Context(profile=NEWEST, machine=BOARD.machine, image="sdsc-16m")
    with pytest.raises(Divergence) as e:
        all_scenarios()["sunxi-idma-read"].fn(t, ctx)
    assert e.value.step.op == "mem_read" and e.value.step.args[0] == BOARD.ram_base + (16 << 20)
