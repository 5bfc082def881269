"""Register layouts by board (harness.hwdefs.layouts) and the reports that use them.

The expectations are the manuals' offsets and names (SD Host Controller
Simplified Spec 2.1 section 2.1 for the SDHCI, the PL180 TRM chapter 3, the
H3 Datasheet 5.3.7, Linux's bcm2835.c, the PL022/PL061 TRMs, Linux's
sdhci-of-aspeed.c), written out here, not read back from the reports.
"""

from __future__ import annotations

import pickle

import pytest

from harness.check import pl181_transfer, sdhost_transfer, spi_transfer, sunxi_transfer
from harness.check.lockstep import Divergence, decode_difference
from harness.check.scoreboard import DATA, IDENTITY, STATUS, harm, signature
from harness.check.step import Step
from harness.hwdefs import boards, sdhci
from harness.hwdefs.layouts import LAYOUTS, layout, layout_of


def _divergence(offset: int, size: int, model: int, qemu: int, lay: str = "sdhci",
                command: str = "CMD17 READ_SINGLE_BLOCK") -> Divergence:
    step = Step(5, "read", (offset, size), model, qemu, False, False, layout=lay)
    d = Divergence(step, "result", [], decode_difference(step))
    d.signature = signature(d, command, "data")
    return d


def test_every_board_has_its_layout() -> None:
    assert layout_of(None).name == "sdhci"
    for b in boards.BOARDS:
        assert layout_of(b).name == b.variant
    with pytest.raises(KeyError, match="no register layout 'nope'"):
        layout("nope")


def test_a_pc_divergence_reads_as_it_always_did() -> None:
    """NORINTSTS at 0x30 (2.2.17: Transfer Complete bit 1) with ERRINTSTS
    at 0x32, read as one dword: the step line, the decoded fields and the
    signature in the SDHCI's names, exactly as before layouts existed."""
    d = _divergence(0x30, 4, 0x0001, 0x0003)
    assert d.step.describe() == "#5     read  NORINTSTS+ERRINTSTS@0x30/4 -> 0x3 (model 0x1)"
    assert d.fields == ["NORINTSTS: model NORINTSTS=0x0001 [CMDCMPL]",
                        "           QEMU  NORINTSTS=0x0003 [CMDCMPL TRNSCMPL]",
                        "    TRNSCMPL: model 0x0, QEMU 0x1"]
    assert d.signature == "result:NORINTSTS.TRNSCMPL | CMD17 READ_SINGLE_BLOCK | data"
    assert harm(d.signature) == STATUS
    assert harm(_divergence(0x20, 4, 1, 2).signature) == DATA  # BDATA, 2.2.9
    hole = Step(0, "read", (0x60, 4), 0, 0, False, False)
    assert hole.describe().endswith("(hole)@0x60/4 -> 0x0")


@pytest.mark.parametrize("variant", ["sdhci", "npcm", "s3c", "aspeed"])
def test_sdhci_variants_keep_every_standard_name(variant: str) -> None:
    """Every byte the standard map names keeps its register on the SDHCI
    variants; their vendor registers only fill its holes."""
    lay = layout(variant)
    for offset in range(0x100):
        assert lay.register_at(offset) is sdhci.register_at(offset) \
            or sdhci.register_at(offset) is None, hex(offset)


def test_vendor_registers_of_the_sdhci_variants() -> None:
    names = {v: lambda o, s, v=v: [r.name for r in layout(v).registers_in(o, s)]
             for v in LAYOUTS}
    assert names["npcm"](0x60, 2) == ["PRSTVALS0"] and names["npcm"](0x70, 4) == ["BOOTTOCTRL"]
    assert names["s3c"](0x80, 4) == ["CONTROL2"] and names["s3c"](0x8C, 4) == ["CONTROL4"]
    # i.MX 7 RM: PROT_CTRL replaces Host Control 1 and Power Control, MIX_CTRL
    # sits where Maximum Current was; Present State keeps its name.
    assert names["usdhc"](0x28, 4) == ["PROT_CTRL"] and names["usdhc"](0x48, 4) == ["MIX_CTRL"]
    assert names["usdhc"](0xC0, 4) == ["VEND_SPEC"] and names["usdhc"](0x24, 4) == ["PRNSTS"]
    # Aspeed's wrapper below slot 0's window (Linux ASPEED_SDC_INFO at 0x00).
    assert names["aspeed"](-0x100, 4) == ["SDC_INFO"] and names["aspeed"](-0x4, 4) == \
        ["SDC_IRQ_STAT"]
    assert names["sdhci"](-0x100, 4) == []


def test_a_pl181_divergence_names_the_mmci_register() -> None:
    """MCIStatus at MMCI +0x034 (PL180 TRM 3.3.11, DataBlockEnd bit 10), the
    MMCI at 0x5000 of vexpress-a9's window; MCIFIFO at every word of 0x080..0x0BC."""
    d = _divergence(0x5034, 4, 0x100, 0x500, "pl181", "CMD17 READ_SINGLE_BLOCK")
    assert d.step.describe() == "#5     read  MCIStatus@0x5034/4 -> 0x500 (model 0x100)"
    assert d.fields[0] == "MCIStatus: model MCIStatus=0x00000100 [DataEnd]"
    assert d.fields[-1] == "    DataBlockEnd: model 0x0, QEMU 0x1"
    assert d.signature.startswith("result:MCIStatus.DataBlockEnd | ")
    fifo = _divergence(0x50BC, 4, 1, 2, "pl181")
    assert fifo.signature.startswith("result:MCIFIFO.Data | ") and harm(fifo.signature) == DATA
    rsp = _divergence(0x5014, 4, 1, 2, "pl181", "CMD2 ALL_SEND_CID")
    assert rsp.signature.startswith("result:MCIResponse0.Status | ")
    assert harm(rsp.signature) == IDENTITY
    # MCIPower is one byte of a 32-bit word: upper bits differing are unnamed, not lost.
    power = _divergence(0x5000, 4, 0x83, 0x183, "pl181")
    assert power.signature.startswith("result:MCIPower.(unnamed) | ")


def test_allwinner_sdhost_and_spi_divergences_name_their_registers() -> None:
    sunxi = _divergence(0x3C, 4, 0x4, 0x2_0000, "allwinner")  # H3 5.3.7: SD_STAR
    assert "read  SD_STAR@0x3c/4" in sunxi.step.describe()
    assert sunxi.signature.startswith("result:SD_STAR.FIFO_EMPTY+FIFO_LEVEL | ")
    assert harm(_divergence(0x200, 4, 1, 2, "allwinner").signature) == DATA  # SD_FIFO
    host = _divergence(0x2020, 4, 0, 1, "sdhost")  # Linux bcm2835.c: SDHSTS 0x20
    assert "read  SDHSTS@0x2020/4" in host.step.describe()
    assert host.signature.startswith("result:SDHSTS.DATA_FLAG | ")
    assert harm(_divergence(0x2040, 4, 1, 2, "sdhost").signature) == DATA  # SDDATA
    spi = _divergence(0x100C, 4, 0x3, 0x7, "spi")  # PL022 TRM 3.3.4: SSPSR RNE bit 2
    assert "read  SSPSR@0x100c/4" in spi.step.describe()
    assert spi.signature.startswith("result:SSPSR.RNE | ")


def test_the_trackers_name_registers_from_the_layouts() -> None:
    assert pl181_transfer.window_register(0x5084) == "MCIFIFO (MMCI +0x084)"
    assert pl181_transfer.window_register(0x5FE4) == "MCIPeriphID1 (MMCI +0xfe4)"
    assert pl181_transfer.window_register(0x48) == "SYS_MCI (system registers +0x048)"
    assert spi_transfer.window_register(0x0004) == "GPIODATA (PL061 +0x004, pins 0x01)"
    assert spi_transfer.window_register(0x1FF0) == "SSPPCellID0 (PL022 +0xff0)"
    assert sunxi_transfer.window_register(0x200) == "SD_FIFO (+0x200)"
    assert sdhost_transfer.window_register(0x2040) == "SDDATA (SDHOST +0x040)"
    assert sdhost_transfer.window_register(0x2044) == "SDHOST +0x044 (no register)"
    assert "outside" in sdhost_transfer.window_register(0x4000)


def test_a_step_keeps_its_layout_across_a_worker() -> None:
    d = pickle.loads(pickle.dumps(_divergence(0x5034, 4, 0x100, 0x500, "pl181")))
    assert d.step.layout == "pl181" and "MCIStatus@0x5034/4" in d.render()
