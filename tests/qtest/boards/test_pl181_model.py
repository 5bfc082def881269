"""The ARM PL181 MMCI on vexpress-a9, as the model states it (no QEMU).

Facts from the PL180 TRM (ARM DDI 0172: register offsets, ID bytes, the
16-word FIFO, MCIINTR0/1 = status & mask), the SD Physical Layer spec (the
card's answers) and QEMU's ``hw/sd/pl181.c`` where the ledger says it departs
(``pl181.*``), each stated here from the model alone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.driver.pl181 import IRQENABLE, MmciHost
from harness.hwdefs import boards
from harness.hwdefs import pl181 as P
from harness.ledger import LEDGER
from harness.ledger.entry import parse_version
from harness.machine import CardImage, Machine
from harness.model.board_targets import model_target_for
from harness.model.pl181 import Pl181
from harness.model.pl181_target import Pl181ModelTarget
from harness.profile import NEWEST, BuildProfile

_ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
V72, V100, V111 = (replace(_ARM, version=parse_version(v)) for v in ("7.2.22", "10.0.13",
                                                                       "11.1.3"))
RELEASES = pytest.mark.parametrize("profile", [V72, V100, V111], ids=["7.2", "10.0", "11.1"])
BOARD = boards.by_name("vexpress-a9")
_ST = P.MCISTATUS


def _model(profile: BuildProfile = V111, *, card: bool = True) -> Pl181ModelTarget:
    image = CardImage.null(16 << 20) if card else None
    return Pl181ModelTarget(Machine.for_board(BOARD.name, image=image), profile=profile)


def _st(*names: str) -> int:
    return _ST.mask(*names)


def _rd(t: Pl181ModelTarget, reg: P.Register | int) -> int:
    return t.read(P.mmci(reg), 4)


def test_layout_is_the_trms() -> None:
    """TRM 3.2: offsets; 3.3.11 the status bits; 3.3.16 the FIFO window."""
    assert [r.offset for r in (P.MCIPOWER, P.MCICLOCK, P.MCIARGUMENT, P.MCICOMMAND,
                               P.MCIRESPCMD, P.MCIRESPONSE[0], P.MCIRESPONSE[3],
                               P.MCIDATATIMER, P.MCIDATALENGTH, P.MCIDATACTRL, P.MCIDATACNT,
                               P.MCISTATUS, P.MCICLEAR, P.MCIMASK0, P.MCIMASK1, P.MCISELECT,
                               P.MCIFIFOCNT)] == [
        0x00, 0x04, 0x08, 0x0C, 0x10, 0x14, 0x20, 0x24, 0x28, 0x2C, 0x30, 0x34, 0x38, 0x3C,
        0x40, 0x44, 0x48]
    assert (_st("CmdRespEnd"), _st("DataEnd"), _st("DataBlockEnd"), _st("RxDataAvlbl")) == (
        1 << 6, 1 << 8, 1 << 10, 1 << 21)
    assert (P.FIFO_START, P.FIFO_END, P.FIFO_DEPTH) == (0x80, 0xC0, 16)
    assert P.mmci(P.MCISTATUS) - P.sysreg(P.SYS_MCI) == 0x5034 - 0x48


def test_the_board_is_its_own() -> None:
    """vexpress.c: MMCI at 0x10005000 (window base + 0x5000), MCIINTR0 on GIC SPI 9."""
    assert BOARD.base + P.MMCI_WINDOW.start == 0x1000_5000
    assert (BOARD.irq.kind, BOARD.irq.line, BOARD.group) == ("in", 9, "mmci")
    assert BOARD not in boards.SDHCI_BOARDS and "mmci" in boards.OWN_GROUPS
    assert model_target_for(BOARD) is Pl181ModelTarget


def test_ids_and_system_registers() -> None:
    """TRM 3.3.17-18: part 0x181, designer ARM, PrimeCell ID; SYS_MCI bit 0 a card."""
    t = _model()
    assert [_rd(t, P.PERIPH_ID + 4 * i) for i in range(8)] == list(P.ID_BYTES)
    assert t.read(P.sysreg(P.SYS_ID), 4) == 0x1190_F500  # vexpress.c sys_id (HBI-0190)
    assert t.read(P.sysreg(P.SYS_MCI), 4) == 1
    assert _model(card=False).read(P.sysreg(P.SYS_MCI), 4) == 0


def test_what_registers_keep() -> None:
    """Ledger pl181.clock-keeps-clkdiv-only, mask-keeps-32-bits, select-unimplemented,
    command-completes-in-write; DataLength 16 bits, Power 8 (TRM 3.3.1, 3.3.8)."""
    t = _model()
    for reg, kept in ((P.MCIPOWER, 0xFF), (P.MCICLOCK, 0xFF), (P.MCIDATALENGTH, 0xFFFF),
                      (P.MCIMASK0, 0xFFFF_FFFF), (P.MCISELECT, 0), (P.MCIARGUMENT, 0xFFFF_FFFF)):
        t.write(P.mmci(reg), 4, 0xFFFF_FFFF)
        assert _rd(t, reg) == kept, reg.name
    t.write(P.mmci(P.MCICOMMAND), 4, 0xFFFF_FBFF)  # all but Enable: stored, not run
    assert _rd(t, P.MCICOMMAND) == 0xFFFF_FBFF and _rd(t, P.MCISTATUS) == 0
    t.write(P.mmci(P.MCISTATUS), 4, 0xFFFF_FFFF)
    assert _rd(t, P.MCISTATUS) == 0


def test_every_command_ends_in_data_end() -> None:
    """Ledger pl181.data-end-without-data and respcmd-zero: CMD0 without a
    response is CmdSent with DataEnd and DataBlockEnd; Enable reads back 0."""
    t = _model()
    t.write(P.mmci(P.MCICOMMAND), 4, P.MCICOMMAND.mask("Enable"))
    assert _rd(t, P.MCISTATUS) == _st("CmdSent", "DataEnd", "DataBlockEnd")
    assert _rd(t, P.MCICOMMAND) == 0
    t.write(P.mmci(P.MCICLEAR), 4, 0xFFFF_FFFF)
    assert _rd(t, P.MCISTATUS) == 0
    h = MmciHost(t)
    r = h.command(8, 0x1AA)
    assert r.response == [0x1AA, 0, 0, 0] and _rd(t, P.MCIRESPCMD) == 0


@RELEASES
def test_identification_and_long_responses(profile: BuildProfile) -> None:
    """PLS 4.2: the card identifies; a long response's Response3 bit 0 is 0
    (TRM 3.3.6); a long response asked of a short answer is CmdTimeOut."""
    t = _model(profile)
    h = MmciHost(t)
    r = h.init()
    assert r["acmd41"].r1 & (1 << 31) and r["cmd3"].ok and h.rca
    assert r["cmd2"].ok and r["cmd2"].response[3] & 1 == 0 and any(r["cmd2"].response[:3])
    assert h.command(13, h.rca << 16, long=True).timeout
    assert h.command(60).timeout  # reserved: the card does not answer


def test_read_fills_the_fifo_and_counts_the_card_side() -> None:
    """QEMU: a 512-byte read fills 16 words at once; DataCnt counts the card side,
    FifoCnt is ceil(DataCnt / 4) (ledger pl181.fifocnt-from-datacnt); a FIFO read
    defers the refill until Status is read (pl181.fifo-refill-after-status), whose
    value is from before it."""
    t = _model()
    h = MmciHost(t)
    h.init()
    h.start_data(512, 512, read=True)
    h.start_command(17, 0)
    full = _st("RxActive", "RxFifoHalfFull", "RxFifoFull", "RxDataAvlbl")
    assert _rd(t, P.MCISTATUS) & ~0x7FF == full
    assert (_rd(t, P.MCIDATACNT), _rd(t, P.MCIFIFOCNT)) == (448, 112)
    _rd(t, P.FIFO_START)
    assert _rd(t, P.MCIDATACNT) == 448  # no refill yet
    assert _rd(t, P.MCISTATUS) & ~0x7FF == _st("RxActive", "RxFifoHalfFull", "RxDataAvlbl")
    assert _rd(t, P.MCIDATACNT) == 444 and _rd(t, P.MCISTATUS) & ~0x7FF == full
    for _ in range(127):
        _rd(t, P.FIFO_START)
        _rd(t, P.MCIFIFOCNT)
    assert _rd(t, P.MCISTATUS) == _st("CmdRespEnd", "DataEnd", "DataBlockEnd")
    assert _rd(t, P.MCIDATACTRL) & 1 == 0  # Enable cleared: DataCnt 0, FIFO empty
    assert _rd(t, P.FIFO_START) == 0  # empty: 0


def test_write_drains_at_once_and_data_block_end_comes_with_data_end() -> None:
    """QEMU: each FIFO word goes to the card at once (TxFifoEmpty throughout);
    one DataBlockEnd for three blocks, with DataEnd (ledger
    pl181.data-block-end-at-data-end); the blocks reach the card."""
    t = _model()
    h = MmciHost(t)
    h.init()
    data = bytes(range(256)) * 6
    x = h.write(25, 4 * 512, data, stop=True)
    assert x.status & _st("DataEnd", "DataBlockEnd") == _st("DataEnd", "DataBlockEnd")
    assert all(fifocnt == (datacnt + 3) // 4 for fifocnt, datacnt in x.counts)
    assert t.image_read(4 * 512, len(data)) == data
    assert h.read(18, 4 * 512, blocks=3, stop=True).data == data


def test_interrupt_outputs_are_status_and_masks() -> None:
    """TRM chapter 2, "Interrupt logic": MCIINTR0 = status & Mask0, MCIINTR1 = status & Mask1."""
    t = _model()
    t.write(P.mmci(P.MCIMASK1), 4, _st("CmdSent"))
    t.write(P.mmci(P.MCICOMMAND), 4, P.MCICOMMAND.mask("Enable"))
    assert t.irq1_level() and not t.irq_level()
    t.write(P.mmci(P.MCIMASK0), 4, IRQENABLE)
    assert t.irq_level() and t.irq_events() == [True]
    t.write(P.mmci(P.MCICLEAR), 4, _st("CmdSent", "DataEnd"))
    assert not t.irq_level() and not t.irq1_level() and t.irq_events() == [False]


def test_pending_is_never_sent_and_interrupt_is() -> None:
    """Ledger pl181.pending-and-interrupt-commands."""
    t = _model()
    cmd = P.MCICOMMAND
    MmciHost(t).command(0, rsp=False)
    t.write(P.mmci(P.MCICLEAR), 4, 0x7FF)
    t.write(P.mmci(P.MCIARGUMENT), 4, 0x1AA)
    t.write(P.mmci(P.MCICOMMAND), 4, 8 | cmd.mask("Enable", "Response", "Pending"))
    assert _rd(t, P.MCISTATUS) == 0 and _rd(t, P.MCICOMMAND) == 8 | cmd.mask("Response",
                                                                              "Pending")
    t.write(P.mmci(P.MCICOMMAND), 4, 8 | cmd.mask("Enable", "Response", "Interrupt"))
    assert _rd(t, P.MCISTATUS) & _st("CmdRespEnd")


def test_reset_keeps_clock_and_fifo() -> None:
    """Ledger pl181.reset-keeps-clock-and-fifo: QEMU's reset clears the rest."""
    t = _model()
    h = MmciHost(t)
    h.init()
    h.start_data(512, 512, read=True)
    h.start_command(17, 0)
    t.mmci.reset()
    assert len(t.mmci.fifo) == 16 and _rd(t, P.MCICLOCK) == h.clkdiv
    assert (_rd(t, P.MCISTATUS), _rd(t, P.MCIDATACNT), _rd(t, P.MCIMASK0)) == (0, 0, 0)


def test_no_card_times_out() -> None:
    """No medium: every command expecting a response is CmdTimeOut; SYS_MCI 0."""
    t = _model(card=False)
    h = MmciHost(t)
    h.probe()
    assert h.command(0, rsp=False).ok
    assert h.command(8, 0x1AA).timeout
    assert t.read(P.sysreg(P.SYS_MCI), 4) == 0


def test_ledger_entries_exist() -> None:
    keys = [k for k in LEDGER if k.startswith("pl181.")]
    assert len(keys) == 13 and all(LEDGER[k].device == "pl181" for k in keys)


def test_check_board_runs_what_applies() -> None:
    """``check --board vexpress-a9`` runs the mmci group and its real drivers'
    recordings (Linux's mmci); no other board runs the mmci group."""
    from harness.check import boards as check_boards
    from harness.scenarios import all_scenarios

    scs = list(all_scenarios().values())
    assert {sc.group for sc in check_boards.applicable(scs, [BOARD.name])} == {"mmci", "drivers"}
    assert "mmci" not in {sc.group for sc in check_boards.applicable(scs, ["zynq"])}
    mmci = next(sc for sc in scs if sc.group == "mmci")
    assert check_boards.skip_reason(mmci, BOARD.machine, V72) is None
    assert "PL181" in str(check_boards.skip_reason(mmci, "xilinx-zynq-a9", V111))


class _EndBitKept(Pl181):
    """The mutant ``pl181-response3-keeps-end-bit`` (harness.bisect.mutants) as a
    model: Response3 keeps bit 0 of a long response (TRM 3.3.6: always 0)."""

    def _do_command(self) -> None:
        super()._do_command()
        if self.status & _st("CmdRespEnd") and self.cmd & P.MCICOMMAND.mask("LongRsp"):
            self.response[3] |= 1  # the CRC7's end bit, which the card sends as 1


def test_the_mutant_is_caught_by_pairing_with_a_broken_model() -> None:
    """The mmci group, run with the model on one side and the model with the
    mutant's rule broken on the other, diverges at a read of MCIResponse3 (the
    build-based row needs an ARM source build: docs/boards.md)."""
    from harness.check.lockstep import Divergence, LockstepTarget
    from harness.scenarios import all_scenarios
    from harness.scenarios.registry import Context

    model, broken = _model(), _model()
    broken.mmci = _EndBitKept(broken.card)
    t = LockstepTarget(model, broken)
    sc = all_scenarios()["mmci-init"]
    with pytest.raises(Divergence) as caught:
        sc.fn(t, Context(V111, BOARD.machine, sc.image, sc.params))  # type: ignore[arg-type]
    step = caught.value.step
    assert step.op == "read" and step.args[0] == P.mmci(P.MCIRESPONSE[3])
    assert step.qemu == step.model | 1
