"""Turning trace events into the drivers group's operations, on small made-up traces
whose right conversion follows from the SD and SDHC specifications."""

from __future__ import annotations

import json
from pathlib import Path

from harness import images
from harness.hwdefs import sdhci as H
from harness.hwdefs.layouts import layout
from harness.scenarios import drivers
from harness.scenarios import drivers_convert as C
from harness.scenarios.drivers_trace import Event, TraceAccess, TraceCommand, TraceDescriptor

BASE = 0xFEBFE000
RECIPE = images.recipe("sdsc-16m")


def r(off: int, value: int, size: int = 4, us: int = 0) -> TraceAccess:
    return TraceAccess("r", BASE + off, size, value, us)


def w(off: int, value: int, size: int = 4, us: int = 0) -> TraceAccess:
    return TraceAccess("w", BASE + off, size, value, us)


def cmd(index: int, flags: int = 0x1A) -> TraceAccess:
    """CMDREG write issuing ``index`` (SDHC 2.2.7: index in bits 13:8)."""
    return w(H.CMDREG.offset, index << 8 | flags, 2)


def ctx(image: bytes = b"") -> C.ConvertContext:
    return C.ConvertContext(BASE, image or bytes(RECIPE.size), RECIPE, {"p": b"\x5a\xa5\xc3\x3c"})


def rebased(events: list[Event]) -> list[Event]:
    return [r for r in (C._rebase(e, BASE) for e in events) if r is not None]


def ops(events: list[Event], c: C.ConvertContext | None = None) -> list[object]:
    c = c or ctx()
    return C.convert_phase(rebased(events), c)


def test_the_rca_the_card_published_is_written_back_symbolically() -> None:
    c = ctx()
    out = ops([cmd(3), r(0x10, 0xB3680500),  # R6 (PLS 4.9.5): RCA 0xb368 in bits 31:16
               w(0x08, 0xB3680000), cmd(7),   # CMD7 addressed by that RCA
               w(0x08, 0xB3680000), cmd(17)], c)  # a block address that looks like it
    assert c.rca == 0xB368
    assert str(out[2]).startswith("a 0x0  #") and "CMD7" in str(out[2])
    assert str(out[4]).startswith("w4 0x08 0xb3680000")


def test_a_poll_becomes_an_until_and_repeats_stay_reads() -> None:
    out = ops([r(0x2F, 1, 1), r(0x2F, 1, 1), r(0x2F, 0, 1),  # SWRST until the bit clears
               r(0x24, 0x1FF0000), r(0x24, 0x1FF0000)])        # PRNSTS read twice
    assert str(out[0]).startswith("u1 0x2f 0x1 0x0 19")
    assert str(out[1]).startswith("r4 0x24 *2  # PRNSTS =0x1ff0000")


def test_the_time_the_guest_let_pass_goes_with_the_access() -> None:
    c = ctx()
    out = ops([r(0x24, 0, us=1000), w(0x2E, 0xE, 1, us=1012)], c)
    assert out == ["r4 0x24  # PRNSTS =0x0", "w1 0x2e 0xe +12  # TIMEOUTCON"]


def test_an_adma_write_carries_the_data_the_card_holds_after_the_boot() -> None:
    image = bytearray(RECIPE.size)
    image[0x900000:0x900000 + 1024] = b"\x5a\xa5\xc3\x3c" * 256
    c = ctx(bytes(image))
    out = ops([w(0x58, 0x121C9200), w(0x08, 0x900000), cmd(25, 0x3A),
               TraceCommand(25, 0x900000), TraceDescriptor(0x2A000100, 512, 0x21),
               TraceDescriptor(0x2A005000, 512, 0x21)], c)
    adma = out[0]
    assert isinstance(adma, dict)
    # buffers packed page by page, each at its offset in its page
    assert adma["adma"] == [[0x100, 512, 0x21], [0x1000, 512, 0x21]]
    assert adma["block"] == 0x900000 // 512 and adma["data"] == [["f", "5aa5c33c", 2]]
    assert out[1].startswith("w4 0x58 @table")
    assert c.end_unseen  # the last descriptor fetched had no End: the driver's own end
    assert rebased([w(0x100, 1)]) == []  # another controller's window
    assert drivers.block_data(adma["data"]) == bytes(image[0x900000:0x900400])


def test_data_runs_round_trip() -> None:
    blocks = [images.pattern_block(40), images.pattern_block(41), bytes(512),
              bytes(512), b"\x01\x02" + bytes(300) + b"\x55\xaa" + bytes(208)]
    data = b"".join(blocks)
    runs = C.encode_data(data, 40, RECIPE, {})
    assert [x[0] for x in runs] == ["i", "z", "s"]
    assert runs[0] == ["i", 40, 2] and runs[1] == ["z", 2]
    assert drivers.block_data(runs) == data


def _request(kind: list[int]) -> list[Event]:
    out: list[Event] = []
    for c in kind:
        out += [cmd(c), TraceCommand(c, 0), r(0x30, 1)]
    return [*out, r(0x30, 0)]  # the interrupt handler's last read: nothing pending


def test_requests_end_with_the_handler_and_long_phases_are_trimmed() -> None:
    evs = [e for _ in range(6) for e in _request([18, 12])] + _request([32, 33, 38])
    reqs = C.requests(rebased(evs))
    assert [q.kind for q in reqs] == ["18,12"] * 6 + ["32,33,38"]
    kept, dropped = C.trim(reqs, 2)
    assert [q.kind for q in kept] == ["18,12", "18,12", "32,33,38"] and dropped == {"18,12": 4}


def test_a_multi_block_transfer_is_one_request_until_its_stop() -> None:
    evs: list[Event] = [cmd(25), TraceCommand(25, 0), r(0x30, 0), cmd(12), TraceCommand(12, 0),
                        r(0x30, 0)]
    assert [q.kind for q in C.requests(rebased(evs))] == ["25,12"]


def test_a_multi_block_transfer_with_auto_cmd12_ends_with_its_own_interrupt() -> None:
    """Transfer Mode ACMDEN = 1 (SDHC 2.2.5): the controller sends CMD12 itself and
    no CMD12 is traced; the request ends with the handler's read as a single block's
    (the Aspeed slots, whose device tree sets ``sdhci,auto-cmd12``)."""
    auto12 = H.TRNMOD.mask("MULTI") | H.TRNMOD.mask("BLKCNTEN") | 1 << 2
    one = [w(H.TRNMOD.offset, auto12, 2), cmd(25), TraceCommand(25, 0), r(0x30, 0)]
    assert [q.kind for q in C.requests(rebased(one + one))] == ["25", "25"]
    plain = [w(H.TRNMOD.offset, auto12 & ~(1 << 2), 2), cmd(25), TraceCommand(25, 0),
             r(0x30, 0), cmd(12), TraceCommand(12, 0), r(0x30, 0)]
    assert [q.kind for q in C.requests(rebased(one + plain))] == ["25", "25,12"]


def test_a_wrappers_registers_below_the_sdhci_are_kept_and_named() -> None:
    """A board whose Target window starts below the SDHCI (the Aspeed wrapper's
    0x100 bytes, hw/sd/aspeed_sdhci.c): its accesses are kept at negative offsets,
    named by the board's layout, and read back by the replay's line parser."""
    lay = layout("aspeed")
    low = C.window_start(lay)
    assert low == -0x100
    evs = [TraceAccess("r", BASE - 0x100, 4, 0x30000), TraceAccess("w", BASE - 0x200, 4, 1)]
    kept = [e for e in (C._rebase(ev, BASE, low) for ev in evs) if e is not None]
    assert [e.offset for e in kept if isinstance(e, TraceAccess)] == [-0x100]
    c = ctx()
    c.layout = lay
    line = C.convert_phase(kept, c)[0]
    assert line == "r4 -0x100  # SDC_INFO =0x30000"
    m = drivers._OP.match(line)
    assert m is not None and int(m["off"], 16) == -0x100


def test_the_s3c_control_registers_are_named_in_its_layout() -> None:
    """Exynos 4210 UM: CONTROL2/3/4 at 0x80, 0x84, 0x8c, in the standard map's
    reserved space (harness.hwdefs.s3c), named by smdkc210's layout."""
    assert C.reg_name(0x80, 4) == "?"
    assert [C.reg_name(o, 4, layout("s3c")) for o in (0x80, 0x84, 0x8C)] == \
        ["CONTROL2", "CONTROL3", "CONTROL4"]
    c = ctx()
    c.layout = layout("s3c")
    assert C.convert_phase(rebased([r(0x80, 0)]), c) == ["r4 0x80  # CONTROL2 =0x0"]


def test_dump_is_json_with_one_operation_per_line(tmp_path: Path) -> None:
    rec = {"format": 1, "name": "x", "phases": [
        {"name": "probe", "ops": ["w1 0x2f 0x1  # SWRST", {"adma": [[0, 512, 33]], "cmd": 17}]}]}
    text = C.dump(rec)
    assert json.loads(text) == rec
    assert '   {"adma":[[0,512,33]],"cmd":17}' in text.splitlines()


def test_the_cadence_host_registers_stay_below_the_sdhci() -> None:
    """icicle's Cadence SD4HC: the HRS (region ``cadence.sdhci``) 0x200 below the
    SDHCI is kept at negative offsets, named by the board's layout, and replayed
    there; below the HRS is not the controller's."""
    hrs = BASE - 0x200
    events: list[Event] = [TraceAccess("r", hrs + 0x18, 4, 0, 0, "cadence.sdhci"),
                           TraceAccess("w", hrs + 0x18, 4, 0x2, 0, "cadence.sdhci"),
                           TraceAccess("r", hrs - 0x4, 4, 0, 0, "cadence.sdhci"),
                           r(0x24, 0x1FF0000)]
    c = ctx()
    c.layout = layout("cadence")
    low = C.window_start(c.layout)
    assert low == -0x200
    mine = [e for e in (C._rebase(ev, BASE, low) for ev in events) if e is not None]
    out = C.convert_phase(mine, c)
    assert out[:2] == ["r4 -0x1e8  # HRS06 =0x0", "w4 -0x1e8 0x2  # HRS06"]
    assert str(out[2]).startswith("r4 0x24  # PRNSTS") and len(out) == 3
    m = drivers._OP.match(str(out[1]))
    assert m is not None and int(m["off"], 16) == -0x1E8


def test_pio_through_bdata_is_one_line_per_block() -> None:
    """Without DMA a driver moves a block as 128 longword accesses of the Buffer Data
    Port (SDHC 2.2.9): a read run is ``r4 0x20 *N`` (the words compared, not kept), a
    write run ``d4 0x20`` with the words written, a repeated word as ``V*n``; a data
    port run is never a poll, however its values change."""
    words = [0x5D200512] * 126 + [1, 2]
    out = ops([r(0x24, 0x1FF0A06), *(r(0x20, v) for v in words),
               r(0x24, 0x1FF0506), *(w(0x20, v) for v in words), r(0x30, 0x2)])
    assert out == ["r4 0x24  # PRNSTS =0x1ff0a06", "r4 0x20 *128  # BDATA: 128 words",
                   "r4 0x24  # PRNSTS =0x1ff0506",
                   "d4 0x20 0x5d200512*126 0x1 0x2  # BDATA: 128 words",
                   "r4 0x30  # NORINTSTS+ERRINTSTS =0x2"]
