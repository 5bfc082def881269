"""Driver logic on a scripted fake Target: bounded waits, error reporting,
register encodings, Buffer Data Port access pattern, ADMA2 tables, recorder.

The fake is a byte-addressed register file with write hooks; expected values
come from the SD Host Controller Simplified Specification 3.00.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from harness.driver import (
    Adma2Desc,
    AdmaOptions,
    DriverTimeout,
    HostDriver,
    RecordingTarget,
    Transfer,
    plan_adma2,
)
from harness.hwdefs import sdhci as H
from harness.hwdefs.sd import Resp
from harness.target import Target
from tests.qtest.fakes import FakeTarget

Hook = Callable[[int, int, int], None]


def test_fake_is_a_target() -> None:
    assert isinstance(FakeTarget(), Target)


def test_reset_that_never_clears_times_out_bounded() -> None:
    t = FakeTarget()
    d = HostDriver(t, timeout_steps=50)
    with pytest.raises(DriverTimeout) as e:
        d.reset()
    assert t.steps == 50
    assert e.value.snapshot is not None and "PRNSTS" in e.value.snapshot


def test_setup_sequence_follows_spec_order() -> None:
    t = FakeTarget()
    t.self_clearing_reset()

    def clk(o: int, s: int, v: int) -> None:  # Internal Clock Stable follows Enable
        if v & H.CLKCON_INTCLK_EN:
            t.set(H.CLKCON.offset, 1, t.get(H.CLKCON.offset, 1) | H.CLKCON_INTCLK_STABLE)

    t.hooks[H.CLKCON.offset] = clk
    t.set(H.CAPAB.offset, 4, H.CAPAREG_DEFAULT)
    t.set(H.HCVER.offset, 2, H.hcver(2))
    d = HostDriver(t)
    d.setup(freq_hz=400_000)
    w = [(o, v) for o, _s, v in t.writes]
    assert w[0] == (H.SWRST.offset, H.SWRST_ALL)
    # Voltage first, then bus power (3.3): 3.3 V = 111b in bits 3:1.
    i = w.index((H.PWRCON.offset, 0x0E))
    assert w[i + 1] == (H.PWRCON.offset, 0x0F)
    # 52 MHz base, v2 divisor: 256 -> 203 kHz <= 400 kHz; 128 -> 406 kHz > 400 kHz.
    clk_writes = [v for o, v in w if o == H.CLKCON.offset]
    assert clk_writes == [0x8001, 0x8005]


def test_command_timeout_is_reported_with_registers() -> None:
    t = FakeTarget()
    t.self_clearing_reset()
    t.set(H.PRNSTS.offset, 4, H.PRNSTS_CARD_PRESENT)
    d = HostDriver(t, timeout_steps=30)
    res = d.command(13, 0x12340000, Resp.R1)
    assert res.timeout == "cmd"
    assert res.error and not res.ok
    assert res.snapshot is not None and res.snapshot["PRNSTS"] == H.PRNSTS_CARD_PRESENT
    assert res.recovered == ["cmd"]
    assert t.steps == 30
    # CMDREG for R1: 48-bit, CRC and index checks, index 13 (2.2.6).
    assert (H.CMDREG.offset, 2, (13 << 8) | 0x1A) in t.writes


def test_command_error_is_observed_and_cleared() -> None:
    t = FakeTarget()
    t.self_clearing_reset()
    t.hooks[H.CMDREG.offset + 1] = lambda o, s, v: t.raise_status(0, H.EIS_CMDTOUT)
    d = HostDriver(t)
    res = d.command(8, 0x1AA, Resp.R7)
    assert res.errintsts == H.EIS_CMDTOUT
    assert res.norintsts & H.NIS_ERRINT
    assert res.timeout is None and res.error
    assert (H.ERRINTSTS.offset, 2, H.EIS_CMDTOUT) in t.writes
    assert res.recovered == ["cmd"]


def test_r2_response_is_realigned() -> None:
    t = FakeTarget()
    rsp = (0x33221100, 0x77665544, 0xBBAA9988, 0x00EEDDCC)

    def issue(o: int, s: int, v: int) -> None:
        for i, r in enumerate(rsp):
            t.set(H.RSPREG0.offset + 4 * i, 4, r)
        t.raise_status(H.NIS_CMDCMPL)

    t.hooks[H.CMDREG.offset + 1] = issue
    d = HostDriver(t)
    res = d.command(2, 0, Resp.R2)
    assert res.ok
    # RSPREG0..3 hold R[127:8]; the register value has CRC7/end bit at 7:0.
    assert res.r2 == 0x00EEDDCCBBAA998877665544_33221100 << 8
    assert (H.CMDREG.offset, 2, (2 << 8) | 0x09) in t.writes
    assert t.status() == 0  # Command Complete was cleared (W1C)


class PioFake(FakeTarget):
    """Serves one read transfer through BDATA, counting byte positions."""

    def __init__(self, payload: bytes, block_size: int) -> None:
        super().__init__()
        self.payload = payload
        self.bs = block_size
        self.pos = 0
        self.hooks[H.CMDREG.offset + 1] = self._issue
        self.read_hooks[H.BDATA.offset] = self._bdata

    def _issue(self, o: int, s: int, v: int) -> None:
        self.set(H.PRNSTS.offset, 4, H.PRNSTS_BUFRDRDY)  # Buffer Read Enable (2.2.9)
        self.raise_status(H.NIS_CMDCMPL | H.NIS_RBUFRDY)

    def _bdata(self, offset: int, size: int) -> int:
        assert offset - H.BDATA.offset == self.pos % 4, "non-sequential BDATA access"
        chunk = self.payload[self.pos:self.pos + size]
        n_before = self.pos // self.bs
        self.pos = min(self.pos + size, (n_before + 1) * self.bs)
        if self.pos % self.bs == 0:
            self.pos = self.pos  # block done
            if self.pos >= len(self.payload):
                self.raise_status(H.NIS_TRNSCMPL)
            else:
                self.raise_status(H.NIS_RBUFRDY)
        return int.from_bytes(chunk.ljust(size, b"\0"), "little")


@pytest.mark.parametrize("access,bs,expected", [
    (4, 7, [(0x20, 4), (0x20, 2), (0x22, 1)]),
    (2, 6, [(0x20, 2), (0x22, 2), (0x20, 2)]),
    (1, 3, [(0x20, 1), (0x21, 1), (0x22, 1)]),
])
def test_pio_access_pattern(access: int, bs: int, expected: list[tuple[int, int]]) -> None:
    payload = bytes(range(1, bs + 1))
    t = PioFake(payload, bs)
    d = HostDriver(t)
    res = d.command(17, 0, Resp.R1, Transfer(read=True, block_size=bs, pio_access=access))
    assert res.ok, res.describe()
    assert res.data == payload
    assert [r for r in t.reads if r[0] == H.BDATA.offset or 0x20 < r[0] < 0x24] == expected
    # BLKSIZE: 512 KiB boundary (7) and the block size (2.2.2); TRNMOD: read, count enabled.
    assert (H.BLKSIZE.offset, 2, 0x7000 | bs) in t.writes
    assert (H.TRNMOD.offset, 2, H.TRNMOD_READ | H.TRNMOD_BLKCNT_EN) in t.writes


def test_adma2_descriptor_encoding() -> None:
    # 1.13.4: attr in bits 5:0, length in 31:16, address in 63:32; 65536 -> 0.
    d = Adma2Desc.tran(0x12345678, 65536, end=True, intr=True)
    lo, hi = struct.unpack("<II", d.encode())
    assert hi == 0x12345678
    assert lo >> 16 == 0
    assert lo & 0x3F == 0x01 | 0x02 | 0x04 | 0x20
    assert struct.unpack("<I", Adma2Desc.link(0x2000).encode()[:4])[0] & 0x3F == 0x31


def test_adma2_plan_links_nops_and_segments() -> None:
    opts = AdmaOptions(max_segment=512, nop_every=1, link_every=2, link_stride=0x100,
                       interrupt="last")
    plan = plan_adma2(0x1000, 0x8000, 3 * 512, opts)
    assert plan.segments == [(0x8000, 512), (0x8200, 512), (0x8400, 512)]
    kinds = [(a, d.attr & H.ADMA_ACT_MASK, d.attr & (H.ADMA_END | H.ADMA_INT))
             for a, d in plan.descriptors]
    T, N, L = H.ADMA_ACT_TRAN, H.ADMA_ACT_NOP, H.ADMA_ACT_LINK
    assert kinds == [
        (0x1000, T, 0), (0x1008, N, 0), (0x1010, L, 0),
        (0x1100, T, 0), (0x1108, N, 0), (0x1110, L, 0),
        (0x1200, T, H.ADMA_END | H.ADMA_INT),
    ]
    assert [a for a, _ in plan.tables] == [0x1000, 0x1100, 0x1200]
    assert plan.descriptors[2][1].addr == 0x1100


def test_recording_target_logs_everything() -> None:
    t = FakeTarget()
    t.self_clearing_reset()
    rec = RecordingTarget(t)
    d = HostDriver(rec)
    rec.mark("reset")
    d.reset()
    ev = rec.since("reset")
    assert ev[0].op == "write" and ev[0].args == (H.SWRST.offset, 1, H.SWRST_ALL)
    assert ev[1].op == "read" and ev[1].result == 0
    assert rec.register_traffic()[0] == ("write", H.SWRST.offset, 1, H.SWRST_ALL)
    assert isinstance(rec, Target)
    assert "write(0x2f, 0x1, 0x1)" in str(ev[0])
