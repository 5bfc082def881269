"""The SD card in SPI mode, ssi-sd and the PL022, as the model states them (no QEMU).

Facts from the SD Physical Layer Simplified Specification chapter 7 and the
PL022 TRM, and the release differences the model states from QEMU's sources
(ledger ``spi.*``, ``ssi-sd.*``, ``pl022.*``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.driver.spi import SpiHost
from harness.hwdefs import boards
from harness.hwdefs import pl022 as P
from harness.hwdefs import sd_spi as T
from harness.ledger import LEDGER
from harness.ledger.entry import parse_version
from harness.machine import Machine
from harness.model.spi_target import SpiModelTarget
from harness.profile import NEWEST, BuildProfile

_ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
V72, V100, V111 = (replace(_ARM, version=parse_version(v)) for v in ("7.2.22", "10.0.13",
                                                                       "11.1.3"))
RELEASES = pytest.mark.parametrize("profile", [V72, V100, V111], ids=["7.2", "10.0", "11.1"])


def _model(profile: BuildProfile, size: int = 16 << 20) -> SpiModelTarget:
    return SpiModelTarget(Machine.for_board("lm3s6965evb"), profile=profile, size=size)


def test_frames_and_crcs_are_the_specs() -> None:
    """PLS 7.3.1.1: CMD0's frame ends 0x95, CMD8 0x1AA's 0x87; PLS 4.5: the CRC16
    of 512 bytes of 0xFF is 0x7FA1."""
    assert T.command_frame(0, 0) == bytes.fromhex("400000000095")
    assert T.command_frame(8, 0x1AA) == bytes.fromhex("48000001aa87")
    assert T.crc16(b"\xff" * 512) == 0x7FA1


def test_the_board_is_spi_and_its_registers_are_the_trms() -> None:
    b = boards.by_name("lm3s6965evb")
    assert b.spi and b not in boards.SDHCI_BOARDS
    assert (P.SSPDR.offset, P.SSPSR.offset, P.SSPICR.offset, P.SSPDMACR.offset) == (
        0x08, 0x0C, 0x20, 0x24)
    assert P.ssp(P.SSPDR) - P.gpio(P.GPIODATA) == 0x1000 + 0x08 - 0x3FC


@RELEASES
def test_init_answers_as_the_spec_says(profile: BuildProfile) -> None:
    """PLS 7.2.1: CMD0 R1 0x01; CMD8 echoes the check pattern; ACMD41 leaves idle;
    CMD58's OCR has the power-up bit."""
    h = SpiHost(_model(profile))
    r = h.init()
    assert r["cmd0"].raw == [0x01]
    assert r["cmd8"].raw[3:] == [0x01, 0xAA]
    assert r["acmd41"].r1 == 0x00
    assert r["cmd58"].raw[1] & 0x80


@RELEASES
def test_release_differences(profile: BuildProfile) -> None:
    """ledger spi.version.*: CMD58's R1 after init (0x01 before 10.1), CMD9 (illegal
    in 9.1-10.0), CMD17 straight after init (illegal from 10.1: the card is ready)."""
    h = SpiHost(_model(profile))
    r = h.init()
    assert r["cmd58"].r1 == (0x00 if profile is V111 else 0x01)
    assert h.command(17, 0, end=False).r1 == 0x00 or profile is V111
    h.fill(600)
    rsp, block = h.read_register(9)
    assert (block is None) == (profile is V100)
    if block is not None:
        assert block.crc_ok and len(block.data) == 16
    r2 = h.command(13, rlen=2).raw
    assert r2[0] & 0x04 if profile is V100 else r2 == [0x00, 0x00]


@RELEASES
def test_read_and_write_blocks(profile: BuildProfile) -> None:
    """PLS 7.3.3: a written block reads back with a valid CRC16; the data response
    is 0x05 (accepted); CMD25 with 0xFC tokens ends with 0xFD."""
    t = _model(profile)
    h = SpiHost(t)
    h.init()
    h.read_register(9)  # illegal on 10.0: its flag shows in CMD24's R1 (spi.r1-illegal-of-previous)
    data = bytes(range(256)) * 2
    assert h.command(24, 3 * 512).r1 in (0, 0x04)
    token, echo = h.write_block(data)
    assert token == T.DATA_ACCEPTED and echo == list(data)  # ledger ssi-sd.write-echo
    assert h.command(25, 4 * 512).r1 == 0
    for _ in range(2):
        assert h.write_block(data[::-1], T.TOKEN_MULTI_WRITE)[0] == T.DATA_ACCEPTED
    h.stop_tran()
    assert t.image_read(3 * 512, 512) == data and t.image_read(5 * 512, 512) == data[::-1]
    assert h.command(18, 3 * 512, end=False).r1 == 0
    blocks = [h.read_block() for _ in range(3)]
    h.command(12, busy=True)
    assert [b.data for b in blocks] == [data, data[::-1], data[::-1]]
    assert all(b.crc_ok for b in blocks)


def test_ssp_fifo_loopback_and_interrupts() -> None:
    """PL022 TRM: 8-entry FIFOs, SSPSR TFE/TNF/RNE/RFF, loopback returns the frames,
    the TX interrupt with 4 or fewer queued, masked by SSPIMSC."""
    t = _model(V111)
    t.write(P.ssp(P.SSPCR0), 4, 7)
    assert t.read(P.ssp(P.SSPSR), 4) == P.SSPSR.mask("TFE", "TNF")
    for i in range(9):
        t.write(P.ssp(P.SSPDR), 4, i)
    assert t.read(P.ssp(P.SSPSR), 4) == P.SSPSR.mask("BSY")
    assert not t.irq_level()
    t.write(P.ssp(P.SSPCR1), 4, P.SSPCR1.mask("SSE", "LBM"))
    assert t.read(P.ssp(P.SSPSR), 4) == P.SSPSR.mask("TFE", "TNF", "RNE", "RFF")
    assert [t.read(P.ssp(P.SSPDR), 4) for _ in range(9)] == [*range(8), 0]
    t.write(P.ssp(P.SSPIMSC), 4, P.SSPIMSC.mask("TXIM"))
    assert t.irq_level() and t.irq_events() == [True]


def test_deselected_card_sees_nothing() -> None:
    h = SpiHost(_model(V111))
    h.setup()
    assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff") == [0] * 8
    h.select()
    assert h.command(0).raw == [0x01]


def test_only_an_undefined_byte_is_adopted() -> None:
    """ledger spi.illegal-r1-stale: from 10.1 an illegal command's R1 is not written;
    the model adopts QEMU's byte there, and nowhere else."""
    t = _model(V111)
    h = SpiHost(t)
    h.setup()
    h.select()
    h.command(0)
    h.xfer_all(T.command_frame(60, 0))
    h.xfer(T.FILL)
    assert t.may_adopt("read", (P.ssp(P.SSPDR), 4)) is False  # the N_CR filler
    t.write(P.ssp(P.SSPDR), 4, T.FILL)
    assert t.may_adopt("read", (P.ssp(P.SSPDR), 4))
    value = t.read(P.ssp(P.SSPDR), 4)
    assert t.reconcile("read", (P.ssp(P.SSPDR), 4), value, 0x01)
    assert t.adoptions == [(LEDGER["spi.illegal-r1-stale"].adopts, 0x01)]
    assert not t.reconcile("read", (P.ssp(P.SSPDR), 4), 0xFF, 0x01)


def test_check_board_runs_what_applies() -> None:
    """``check --board lm3s6965evb`` runs the spi group only; an SDHCI board never it."""
    from harness.check import boards as check_boards
    from harness.scenarios import all_scenarios

    scs = list(all_scenarios().values())
    assert {sc.group for sc in check_boards.applicable(scs, ["lm3s6965evb"])} == {"spi"}
    assert "spi" not in {sc.group for sc in check_boards.applicable(scs, ["zynq"])}
    # other board controllers' own groups, recordings of drivers made elsewhere,
    # and the spi group's scenarios of another SSI controller (sifive_u's)
    others = boards.OWN_GROUPS - {"spi"} | {"drivers"}
    assert len(check_boards.applicable(scs, ["zynq", "lm3s6965evb"])) == len(
        [sc for sc in scs if sc.group not in others
         and (sc.group != "spi" or sc.params.get("variant", "spi") == "spi")])
    assert "lm3s6965evb" in check_boards.DEFAULT_BOARDS  # seconds: in the default check
    assert check_boards.on_its_bus(next(sc for sc in scs if sc.group == "spi"), "lm3s6965evb")
    assert not check_boards.on_its_bus(next(sc for sc in scs if sc.group == "data"),
                                       "lm3s6965evb")
    assert not check_boards.on_its_bus(next(sc for sc in scs if sc.group == "spi"),
                                       "xilinx-zynq-a9")


@RELEASES
def test_block_length_error_in_r1(profile: BuildProfile) -> None:
    """ledger spi.r1-parameter-is-block-len: CMD16 beyond 512 answers R1 0x40 from
    10.1 (sd.c's BLOCK_LEN_ERROR), 0x00 before (ssi-sd drops the bit)."""
    h = SpiHost(_model(profile))
    h.init()
    h.read_register(9)
    h.command(16, 512)
    assert h.command(16, 4096).r1 == (0x40 if profile is V111 else 0x00)
