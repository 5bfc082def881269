"""Random register traffic never makes the SDHCI model raise.

Any offset (inside, around and far outside the 256-byte window), any size
1/2/4/8, any value, interleaved with clock steps, guest memory writes
(descriptor tables, data) and card insertion/removal.  Afterwards every
register still reads as an integer of the right width.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.hwdefs import sdhci as H
from harness.machine import Machine
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from tests.qtest.model.sdhci_support import HAVE_SDCARD, StubCard, power_up

OLD = BuildProfile(version=(7, 2, 0), sdhci_properties={"sd-spec-version": "2"})

_HOT = sorted({r.offset for r in H.REGISTERS} | {0x0E, 0x0F, 0x2A, 0x2B, 0x2F, 0x32, 0x52,
                                                0x5C, 0x44, 0x4C})
_offsets = st.one_of(
    st.sampled_from(_HOT),
    st.integers(0, 0x10F),
    st.integers(-16, 1 << 20),
)
_values = st.one_of(
    st.integers(0, (1 << 64) - 1),
    st.sampled_from([0, 1, 2, 4, 0xFF, 0xFFFF, 0x7200, 0x0200 | 4 << 16, 0x10000,
                     H.cmdreg(17, H.RSP_48, data=True) << 16 | 0x0033,
                     H.cmdreg(18, H.RSP_48, data=True) << 16 | 0x0027,
                     H.cmdreg(25, H.RSP_48, data=True) << 16 | 0x0027,
                     H.cmdreg(12, H.RSP_48_BUSY, cmd_type=H.CMD_TYPE_ABORT) << 16,
                     H.HOSTCTL_DMA_ADMA2_32, H.HOSTCTL_DMA_ADMA1, H.HOSTCTL_DMA_ADMA2_64,
                     H.BLKGAP_STOP, H.BLKGAP_CONTINUE, 0x0007 | 0x0E << 16]),
)
_ATTRS = [0x21, 0x21, 0x23, 0x23, 0x27, 0x25, 0x01, 0x03, 0x31, 0x11, 0x00, 0x33, 0x20]
_desc = st.builds(
    lambda a, n, attr: H.adma2_desc32(a, n, attr),
    st.sampled_from([0, 0x1000, 0x2000, 0x7FFFF00, 0xFFFFFFFC]),
    st.sampled_from([1, 3, 512, 4096]),               # (0 = 64 KiB: see the transfer tests)
    st.one_of(st.sampled_from(_ATTRS), st.sampled_from(_ATTRS), st.integers(0, 0x7F)),
)
_xfer_op = st.tuples(
    st.just("xfer"), st.sampled_from([17, 18, 24, 25, 13, 12, 5]),
    st.one_of(st.integers(0, 0x3F), st.sampled_from([0x33, 0x37, 0x23, 0x27, 0x11, 0x01, 0x32,
                                                     0x22, 0x13])),
    st.sampled_from([0, 0x08, 0x10, 0x18]),
    st.sampled_from([0, 1, 3, 16, 512, 0x7200, 0x0FFF]), st.integers(0, 5),
    st.sampled_from([0, 0x1000, 0x3FF0, 0x7FFFF00]), st.lists(_desc, max_size=8),
    st.sampled_from([True, True, False]))
_op = st.one_of(
    _xfer_op,
    _xfer_op,
    st.tuples(st.just("port"), st.booleans(), st.integers(1, 300), st.sampled_from([1, 2, 4])),
    st.tuples(st.just("w"), _offsets, st.sampled_from([1, 2, 4, 8]), _values),
    st.tuples(st.just("r"), _offsets, st.sampled_from([1, 2, 4, 8])),
    st.tuples(st.just("step"), st.one_of(st.none(), st.integers(0, 2 * 10**9))),
    st.tuples(st.just("mem"), st.sampled_from([0, 0x1000, 0x1008, 0x2000]),
              st.lists(_desc, max_size=8)),
    st.tuples(st.just("card"), st.booleans()),
)


def _xfer(t: ModelTarget, op: tuple[Any, ...]) -> None:
    """A plausible data command: block size/count, DMA select, addresses."""
    _, index, mode, dma, blksize, count, addr, table, fresh = op
    if fresh:
        t.write(H.SWRST.offset, 1, H.SWRST_DAT)
        t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN | H.CLKCON_SDCLK_EN)
    if table:
        t.mem_write(0x1000, b"".join(table))
    t.write(H.BLKSIZE.offset, 4, blksize | count << 16)
    t.write(H.HOSTCTL.offset, 1, dma)
    t.write(H.ADMASYSADDR.offset, 8, 0x1000)
    t.write(H.SDMASYSAD.offset, 4, addr)
    rsp = H.RSP_48_BUSY if index == 12 else H.RSP_48
    t.write(H.TRNMOD.offset, 4, H.cmdreg(index, rsp, data=index != 12) << 16 | mode)


def _drive(t: ModelTarget, ops: list[tuple[Any, ...]]) -> None:
    # An ADMA chain that loops forever runs 10^7 steps per virtual second in
    # QEMU; keep the model's safety valve small so examples stay fast.
    t.sdhci.step_budget = 300
    for op in ops:
        kind = op[0]
        if kind == "w":
            t.write(op[1], op[2], op[3] & ((1 << (8 * op[2])) - 1))
        elif kind == "r":
            v = t.read(op[1], op[2])
            assert 0 <= v < 1 << (8 * op[2])
        elif kind == "step":
            t.clock_step(op[1])
        elif kind == "port":
            for _ in range(op[2]):
                if op[1]:
                    t.read(H.BDATA.offset, op[3])
                else:
                    t.write(H.BDATA.offset, op[3], 0xA5A5A5A5 & ((1 << (8 * op[3])) - 1))
        elif kind == "xfer":
            _xfer(t, op)
        elif kind == "mem":
            t.mem_write(op[1], b"".join(op[2]))
        else:
            try:
                t.set_card_inserted(op[1])
            except ValueError:
                pass                                  # a card without medium to insert
        assert isinstance(t.irq_level(), bool)
    for r in H.REGISTERS:
        assert 0 <= t.read(r.offset, r.width) < 1 << (8 * r.width)


_SETTINGS = settings(max_examples=100, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(ops=st.lists(_op, min_size=4, max_size=40), strict=st.booleans(),
       version=st.sampled_from([2, 3]), old=st.booleans(),
       powered=st.sampled_from([True, True, True, False]))
def test_random_traffic_stub_card(ops: list[tuple[Any, ...]], strict: bool, version: int,
                                  old: bool, powered: bool) -> None:
    t = ModelTarget(Machine(sdhci={"sd-spec-version": version, "capareg": 0x157834B4}),
                    card=StubCard(size=1 << 16), strict=strict,
                    profile=OLD if old else BuildProfile(version=(11, 1, 0)))
    if powered:
        power_up(t)
    _drive(t, ops)


@pytest.mark.skipif(not HAVE_SDCARD, reason="harness.model.sdcard not present")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, max_size=40), strict=st.booleans())
def test_random_traffic_real_card(ops: list[tuple[Any, ...]], strict: bool) -> None:
    t = ModelTarget(size=1 << 20, strict=strict)
    power_up(t)
    _drive(t, ops)


@_SETTINGS
@given(first=_xfer_op, ops=st.lists(_op, max_size=20), strict=st.booleans(),
       old=st.booleans())
def test_random_transfers_stub_card(first: tuple[Any, ...], ops: list[tuple[Any, ...]],
                                    strict: bool, old: bool) -> None:
    t = ModelTarget(Machine(sdhci={"capareg": 0x157834B4}), card=StubCard(size=1 << 16),
                    strict=strict, profile=OLD if old else BuildProfile(version=(11, 1, 0)))
    power_up(t)
    _drive(t, [first, *ops])
