"""The OMAP1 MMC/SD host on sx1, as the model states it (no QEMU).

Facts from Linux's ``drivers/mmc/host/omap.c`` (register indices << 2, the
status bits it defines, the FIFO levels its PIO path programs), the SD
Physical Layer spec (the card's answers), the board's source
(``hw/arm/omap1.c``, ``hw/arm/omap_sx1.c``) and QEMU's ``hw/sd/omap_mmc.c``
where the ledger says it departs (``omap.*``), each stated from the model.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.driver.omap_mmc import OmapHost, cmd_word
from harness.hwdefs import boards
from harness.hwdefs import omap_mmc as O
from harness.hwdefs.fields import Register
from harness.images import BLOCK
from harness.ledger import LEDGER
from harness.ledger.entry import parse_version
from harness.machine import CardImage, Machine
from harness.model import omap_mmc as model_omap
from harness.model.board_targets import model_target_for
from harness.model.omap_target import OmapModelTarget
from harness.profile import NEWEST, BuildProfile

_ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
V72, V100, V111 = (replace(_ARM, version=parse_version(v)) for v in ("7.2.22", "10.0.13",
                                                                       "11.1.3"))
RELEASES = pytest.mark.parametrize("profile", [V72, V100, V111], ids=["7.2", "10.0", "11.1"])
BOARD = boards.by_name("sx1")
_ST = O.MMC_STAT
_W = O.ACCESS_SIZE


def _model(profile: BuildProfile = V111, *, card: bool = True) -> OmapModelTarget:
    image = CardImage.null(16 << 20) if card else None
    return OmapModelTarget(Machine.for_board(BOARD.name, image=image), profile=profile)


def _rd(t: OmapModelTarget, reg: Register) -> int:
    return t.read(reg.offset, _W)


def _wr(t: OmapModelTarget, reg: Register, value: int) -> None:
    t.write(reg.offset, _W, value)


def _st(*names: str) -> int:
    return _ST.mask(*names)


def test_layout_is_linuxs() -> None:
    """omap.c: OMAP_MMC_REG_* indices << 2 (reg_shift 2 on 15xx/16xx), the status bits."""
    indices = {O.MMC_CMD: 0x00, O.MMC_ARGL: 0x01, O.MMC_ARGH: 0x02, O.MMC_CON: 0x03,
               O.MMC_STAT: 0x04, O.MMC_IE: 0x05, O.MMC_CTO: 0x06, O.MMC_DTO: 0x07,
               O.MMC_DATA: 0x08, O.MMC_BLEN: 0x09, O.MMC_NBLK: 0x0A, O.MMC_BUF: 0x0B,
               O.MMC_SDIO: 0x0D, O.MMC_REV: 0x0F, O.MMC_RSP[0]: 0x10, O.MMC_RSP[7]: 0x17,
               O.MMC_IOSR: 0x18, O.MMC_SYSC: 0x19, O.MMC_SYSS: 0x1A}
    assert all(reg.offset == i << 2 for reg, i in indices.items())
    assert [_st(n) for n in ("CERR", "CIRQ", "OCRB", "AE", "AF", "CCRC", "CTO", "DCRC", "DTO",
                             "EOFB", "BRS", "CB", "EOC")] == [
        1 << 14, 1 << 13, 1 << 12, 1 << 11, 1 << 10, 1 << 8, 1 << 7, 1 << 6, 1 << 5, 1 << 4,
        1 << 3, 1 << 2, 1 << 0]
    assert cmd_word(17, read=True, ctype=O.TYPE_ADTC) == 17 | 1 << 8 | 3 << 12 | 1 << 15


def test_the_board_is_its_own() -> None:
    """omap1.c: the host at 0xfffb7800 on ih[1] input OMAP_INT_OQN (23); sx1's 32 MiB SDRAM."""
    assert (BOARD.base, BOARD.irq.kind, BOARD.irq.line, BOARD.irq.nth) == (
        0xFFFB_7800, "in", 23, 1)
    assert (BOARD.ram_base, BOARD.ram, BOARD.group) == (0x1000_0000, 32 << 20, "omap")
    assert BOARD not in boards.SDHCI_BOARDS and "omap" in boards.OWN_GROUPS
    assert model_target_for(BOARD) is OmapModelTarget
    assert LEDGER[BOARD.reset_keeps].device == "omap"


@RELEASES
def test_reset_values_and_widths(profile: BuildProfile) -> None:
    """REV 1, BUF AFL 0x1F, SYSS RSTD; other widths read 0 (ledger
    omap.version.badwidth-logged: before 11.0 the zero boot flash at the offset)."""
    t = _model(profile)
    values = {off: t.read(off, _W) for off in range(0, 0x70, 4)}
    assert {k: v for k, v in values.items() if v} == {
        O.MMC_BUF.offset: 0x1F00, O.MMC_REV.offset: 1, O.MMC_SYSS.offset: 1}
    assert [t.read(O.MMC_REV.offset, n) for n in (1, 4, 8)] == [0, 0, 0]
    t.write(O.MMC_ARGL.offset, 4, 0x1234_5678)
    assert _rd(t, O.MMC_ARGL) == 0


def test_register_fields() -> None:
    """Ledger omap.register-fields: CLKD 8 bits, SDIO's read-back moves, BLEN/NBLK counters."""
    t = _model()
    _wr(t, O.MMC_CON, 0xFFFF)
    assert _rd(t, O.MMC_CON) == 0xBCFF  # DW, MODE, POW, BE, CLKD 7:0
    _wr(t, O.MMC_SDIO, 0xFFFF)
    assert _rd(t, O.MMC_SDIO) == 0x2020 | 0b101
    _wr(t, O.MMC_BLEN, 0xFFFF)
    _wr(t, O.MMC_NBLK, 0x0001)
    assert (_rd(t, O.MMC_BLEN), _rd(t, O.MMC_NBLK)) == (0x800, 2)
    _wr(t, O.MMC_IE, 0xFFFF)
    assert _rd(t, O.MMC_IE) == 0x7FFF


def test_commands_need_pow_and_init_is_eoc_only() -> None:
    """Ledger omap.con-pow-clear-keeps-line: MMC_CMD ignored without POW;
    INIT with index 0 sets EOC without a card command."""
    t = _model()
    _wr(t, O.MMC_CMD, cmd_word(8))
    assert (_rd(t, O.MMC_STAT), _rd(t, O.MMC_CMD)) == (0, 0)
    _wr(t, O.MMC_CON, O.MMC_CON.mask("POW"))
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    assert _rd(t, O.MMC_STAT) == _st("EOC")
    assert t.card.state.name == "IDLE"


def test_command_clears_status_and_cmd12_busy() -> None:
    """Ledger omap.command-clears-status: CTO of a refused command goes with the
    next good one; CMD12 ending a transfer sets EOC and CB."""
    t = _model()
    h = OmapHost(t)
    h.init()
    _wr(t, O.MMC_CMD, cmd_word(60))
    assert _rd(t, O.MMC_STAT) == _st("CTO")
    _wr(t, O.MMC_CMD, cmd_word(13))  # arg 512 from CMD16: not the RCA, no answer
    _wr(t, O.MMC_ARGH, h.rca)
    _wr(t, O.MMC_CMD, cmd_word(13))
    assert _rd(t, O.MMC_STAT) == _st("EOC")
    _wr(t, O.MMC_CMD, cmd_word(12))  # tran: refused (PLS 4.8)
    assert _rd(t, O.MMC_STAT) == _st("CTO")
    stop = h.read(18, 0, blocks=2, stop=True).stop
    assert stop is not None and stop.status == _st("EOC", "CB")


@RELEASES
def test_short_response_words(profile: BuildProfile) -> None:
    """RSP7/RSP6 the answer's bytes 0-3 (Linux resp[0] = RSP6 | RSP7 << 16); RSP0..RSP5
    zero from 10.0 on, unknown before (ledger omap.version.short-response-stack-bytes)."""
    t = _model(profile)
    h = OmapHost(t)
    h.init()
    r = h.command(13, h.rca << 16)
    assert (r.r1 >> 9) & 0xF == 4
    assert t.mmc.rsp_unknown == (set(range(6)) if profile is V72 else set())
    assert all(_rd(t, O.MMC_RSP[i]) == 0 for i in range(6))


def test_read_fills_the_fifo_past_afl() -> None:
    """A read's FIFO fills to AFL + 1 words (AF), refilled as it is read; the
    words are the block's bytes, little endian; BRS at the block's end."""
    t = _model()
    h = OmapHost(t)
    h.init()
    t.card.store.write(0, bytes(range(256)) * 2)
    for reg, v in ((O.MMC_NBLK, 0), (O.MMC_BLEN, BLOCK - 1), (O.MMC_BUF, 0x0700)):
        _wr(t, reg, v)
    _wr(t, O.MMC_ARGL, 0)
    _wr(t, O.MMC_ARGH, 0)
    _wr(t, O.MMC_CMD, cmd_word(17, ctype=O.TYPE_ADTC, read=True))
    assert (t.mmc.fifo_len, _rd(t, O.MMC_BLEN)) == (8, BLOCK - 16)
    assert _rd(t, O.MMC_STAT) & _st("AF")
    words = [_rd(t, O.MMC_DATA) for _ in range(BLOCK // 2)]
    assert words[:2] == [0x0100, 0x0302] and _rd(t, O.MMC_STAT) & _st("BRS")
    assert _rd(t, O.MMC_DATA) == words[-32] and t.mmc.fifo_len == 0  # the ring's old word


def test_write_by_ae_reaches_the_image() -> None:
    """A write command sets AE (FIFO below AEL); each word goes to the card at
    once; BRS at the end, AE cleared; the image holds the block."""
    t = _model()
    h = OmapHost(t)
    h.init()
    payload = bytes((i * 3) & 0xFF for i in range(BLOCK))
    x = h.write(24, 2 * BLOCK, payload)
    assert x.command.ok and x.command.status & _st("AE", "BRS") == _st("AE", "BRS")
    assert t.image_read(2 * BLOCK, BLOCK) == payload
    assert not _rd(t, O.MMC_STAT) & _st("AE")


def test_irq_and_pow_clear_keeps_the_line() -> None:
    """The line is STAT & IE; STAT write-1-to-clear lowers it; CON without POW
    zeroes STAT and leaves it raised (ledger omap.con-pow-clear-keeps-line)."""
    t = _model()
    _wr(t, O.MMC_CON, O.MMC_CON.mask("POW"))
    _wr(t, O.MMC_IE, _st("EOC"))
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    assert t.irq_level()
    _wr(t, O.MMC_STAT, _st("EOC"))
    assert not t.irq_level()
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    _wr(t, O.MMC_CON, 0)
    assert _rd(t, O.MMC_STAT) == 0 and t.irq_level()
    _wr(t, O.MMC_IE, _st("EOC"))
    assert not t.irq_level()


@RELEASES
def test_srts_resets_the_card_before_10_0(profile: BuildProfile) -> None:
    """Ledger omap.version.srts-card-kept and omap.reset-keeps-sdio-be-fifo."""
    t = _model(profile)
    h = OmapHost(t)
    h.init()
    _wr(t, O.MMC_SDIO, O.MMC_SDIO.mask("AKE_ERR"))
    _wr(t, O.MMC_CON, h.dsor | O.MMC_CON.mask("POW", "BE"))
    word = t.mmc.fifo[0]
    _wr(t, O.MMC_SYSC, O.MMC_SYSC.mask("SRTS"))
    assert (_rd(t, O.MMC_CON), _rd(t, O.MMC_SDIO), _rd(t, O.MMC_BUF)) == (
        O.MMC_CON.mask("BE"), O.MMC_SDIO.mask("AKE_ERR"), 0x1F00)
    assert _rd(t, O.MMC_DATA) == word
    assert (t.card.rca == 0) is (profile is V72)


def test_ejected_card_times_out() -> None:
    """Ledger omap.no-card-detect: no CD; CMD8 with no medium is CTO."""
    t = _model()
    t.set_card_inserted(False)
    h = OmapHost(t)
    h.set_ios()
    assert h.command(8, 0x1AA).timeout
    assert not _rd(t, O.MMC_STAT) & _st("CD")


class _Cmd12NotBusy(model_omap.OmapMmc):
    """The mutant ``omap-cmd12-no-card-busy`` (harness.bisect.mutants) as a model:
    CMD12 sets EOC alone."""

    def _command(self, value: int) -> None:
        super()._command(value)
        if O.MMC_CMD.field("INDX").get(value) == 12:
            self.status &= ~_st("CB")


def test_the_mutant_is_caught_by_pairing_with_a_broken_model() -> None:
    """The omap group, the model on one side and the model with the mutant's rule
    broken on the other, diverges at the MMC_STAT read after CMD12 (the
    build-based row needs an ARM source build: docs/boards.md)."""
    from harness.check.lockstep import Divergence, LockstepTarget
    from harness.scenarios import all_scenarios
    from harness.scenarios.registry import Context

    model, broken = _model(), _model()
    broken.mmc = _Cmd12NotBusy(broken.card)
    t = LockstepTarget(model, broken)
    sc = all_scenarios()["omap-read-multi"]
    with pytest.raises(Divergence) as caught:
        sc.fn(t, Context(V111, BOARD.machine, sc.image, sc.params))  # type: ignore[arg-type]
    step = caught.value.step
    assert step.op == "read" and step.args[0] == O.MMC_STAT.offset
    assert step.model == step.qemu | _st("CB")


def test_dma_requests_replace_af_ae_and_stay_raised() -> None:
    """With TXDE the transmit request replaces AE; when the write's last word has
    gone the request stays raised (ledger omap.dma-request-left-raised)."""
    t = _model()
    for reg, v in ((O.MMC_CON, O.MMC_CON.mask("POW")), (O.MMC_NBLK, 0), (O.MMC_BLEN, 3),
                   (O.MMC_BUF, 0x0086)):
        _wr(t, reg, v)
    _wr(t, O.MMC_CMD, cmd_word(24, ctype=O.TYPE_ADTC))
    assert t.mmc.dma["tx"] and not _rd(t, O.MMC_STAT) & _st("AE")
    for _ in range(2):
        _wr(t, O.MMC_DATA, 0xFFFF)
    assert _rd(t, O.MMC_STAT) & _st("BRS") and t.mmc.dma["tx"]


class _AdtcNever(model_omap.OmapMmc):
    """The mutant ``omap-adtc-type-mismatch`` as a model: the TYPE field compared
    with a value it cannot hold (the regression of upstream's "hw/sd/omap_mmc:
    Don't use sd_cmd_type_t"), so no command starts a transfer."""

    def _command(self, value: int) -> None:
        super()._command(value & ~O.MMC_CMD.mask("TYPE"))


def test_the_adtc_mutant_is_caught_by_pairing_with_a_broken_model() -> None:
    """A CMD17 whose transfer never starts: the lockstep stops at the first
    MMC_STAT read after the command (no AF), or at MMC_DATA."""
    from harness.check.lockstep import Divergence, LockstepTarget
    from harness.scenarios import all_scenarios
    from harness.scenarios.registry import Context

    model, broken = _model(), _model()
    broken.mmc = _AdtcNever(broken.card)
    t = LockstepTarget(model, broken)
    sc = all_scenarios()["omap-read-single"]
    with pytest.raises(Divergence) as caught:
        sc.fn(t, Context(V111, BOARD.machine, sc.image, sc.params))  # type: ignore[arg-type]
    step = caught.value.step
    assert step.op == "read" and step.args[0] in (O.MMC_STAT.offset, O.MMC_DATA.offset)


def test_the_command_follower_names_registers_and_commands() -> None:
    """The report's lines: the register an access reaches; a command only once
    MMC_CON.POW is set (QEMU ignores MMC_CMD before), an application command
    after CMD55, the MMC_DATA words since."""
    from harness.check.omap_transfer import OmapTracker, window_register

    assert window_register(O.MMC_STAT.offset) == "MMC_STAT (+0x010)"
    assert window_register(O.MMC_STAT.offset + 2) == "+0x012 (no register)"  # QEMU's exact decode
    assert window_register(0x7FE) == "+0x7fe (no register)"
    tr = OmapTracker()
    assert tr.before("write", (O.MMC_CMD.offset, _W, cmd_word(55)), 0) == ""
    tr.before("write", (O.MMC_CON.offset, _W, O.MMC_CON.mask("POW")), 1)
    tr.before("write", (O.MMC_ARGH.offset, _W, 0x1234), 2)
    assert tr.before("write", (O.MMC_CMD.offset, _W, cmd_word(55)), 3).startswith("CMD55")
    name = tr.before("write", (O.MMC_CMD.offset, _W, cmd_word(51, ctype=O.TYPE_ADTC,
                                                              read=True)), 4)
    assert name.startswith("ACMD51")
    tr.before("read", (O.MMC_DATA.offset, _W), 5)
    assert tr.command is not None and (tr.command.arg, tr.command.words) == (0x1234_0000, 1)
