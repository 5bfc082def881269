"""The SiFive SPI conversion (harness.scenarios.drivers_spi) on small synthetic traces:
commands decoded from txdata, requests, lines, folded FIFO loads, long transfers cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import images
from harness.guest import record_board, record_uboot
from harness.hwdefs import sd_spi as T
from harness.hwdefs import sifive_spi as SP
from harness.scenarios import drivers, drivers_spi
from harness.scenarios.drivers_convert import ConvertContext
from harness.scenarios.drivers_hosts import HOSTS, SIFIVE_SPI
from harness.scenarios.drivers_trace import Event, TraceAccess, TraceCommand

TX, RX = SP.TXDATA.offset, SP.RXDATA.offset


def _a(kind: str, reg: SP.Register | int, value: int) -> TraceAccess:
    off = reg if isinstance(reg, int) else reg.offset
    return TraceAccess(kind, off, 4, value, region="sifive.spi")


def xfer(tx: bytes, rx: bytes | None = None) -> list[Event]:
    """One spi-sifive transfer as Linux makes it: sckdiv, fmt, then FIFO loads of
    8 bytes (txdata read-then-write pairs, rxmark, ip, the rxdata reads)."""
    rx = b"\xff" * len(tx) if rx is None else rx
    out: list[Event] = [_a("w", SP.SCKDIV, 1), _a("w", SP.FMT, 0x80000)]
    for k in range(0, len(tx), 8):
        chunk = tx[k:k + 8]
        for b in chunk:
            out += [_a("r", TX, 0), _a("w", TX, b)]
        out += [_a("w", SP.RXMARK, len(chunk) - 1), _a("r", SP.IP, 3)]
        out += [_a("r", RX, v) for v in rx[k:k + len(chunk)]]
    return out


def message(*xfers: list[Event]) -> list[Event]:
    """A message: csdef first (its start), chip select held, released at the end."""
    out: list[Event] = [_a("w", SP.CSDEF, 1), _a("w", SP.CSID, 0), _a("w", SP.SCKMODE, 0),
                        _a("w", SP.CSMODE, 2)]
    for x in xfers:
        out += x
    return out + [_a("w", SP.CSMODE, 0)]


def _frame(index: int, arg: int = 0) -> bytes:
    return bytes(T.command_frame(index, arg))


def _ctx() -> ConvertContext:
    return ConvertContext(0, bytes(1 << 20), images.recipe("sdsc-16m"), {})


def test_the_decoder_finds_commands_but_not_in_a_written_data_block() -> None:
    dec = drivers_spi.SpiDecoder()
    got = [dec.byte(b) for b in b"\xff" + _frame(24, 0x200)]
    assert got[-1] == TraceCommand(24, 0x200) and got[:-1] == [None] * 6
    # the block: a byte that looks like CMD17 inside it is data
    block = b"\x51" + bytes(511) + b"\x12\x34"
    assert dec.byte(drivers_spi.TOKEN_SINGLE) == "block"
    assert [dec.byte(b) for b in block] == [None] * len(block)
    # after CMD25, Stop Tran ends the transfer
    assert [dec.byte(b) for b in _frame(25, 8)][-1] == TraceCommand(25, 8)
    assert dec.byte(drivers_spi.STOP_TRAN) == "stop"


def test_a_request_starts_at_the_message_that_sends_its_command() -> None:
    evs = (message(xfer(b"\xff" * 10)) + message(xfer(_frame(0) + b"\xff\xff"))
           + message(xfer(_frame(13) + b"\xff\xff")))
    d = drivers_spi.decode(evs)
    reqs = drivers_spi.requests(d)
    assert [r.kind for r in reqs] == ["", "0", "13"]
    second = reqs[1].events[0]
    assert isinstance(second, TraceAccess) and second.offset == SP.CSDEF.offset


def test_a_multi_block_write_is_one_request_until_stop_tran() -> None:
    blk = bytes([drivers_spi.TOKEN_MULTI]) + b"\x40" * 512 + b"\0\0"
    evs = (message(xfer(_frame(25, 16) + b"\xff")) + message(xfer(blk))
           + message(xfer(blk)) + message(xfer(bytes([drivers_spi.STOP_TRAN]) + b"\xff"))
           + message(xfer(_frame(13) + b"\xff")))
    reqs = drivers_spi.requests(drivers_spi.decode(evs))
    assert [r.kind for r in reqs] == ["25", "13"]


def _read_request(blocks: int) -> list[Event]:
    """CMD18 with ``blocks`` blocks (token, 512 bytes, CRC each), then CMD12."""
    evs = message(xfer(_frame(18, 0x4000) + b"\xff\xff", b"\xff" * 7 + b"\x00\xff"))
    for k in range(blocks):
        evs += message(xfer(b"\xff", b"\xfe"), xfer(b"\xff" * 514, bytes([k]) * 514))
    return evs + message(xfer(_frame(12) + b"\xff\xff", b"\xff" * 7 + b"\x00\xff"))


def test_a_long_read_keeps_its_first_blocks_then_its_end() -> None:
    reqs = drivers_spi.requests(drivers_spi.decode(_read_request(5)))
    assert [r.kind for r in reqs] == ["18,12"]
    short, dropped = drivers_spi.shorten(reqs[0])
    assert dropped == 3 and short.kind == "18,12"
    d = drivers_spi.decode([e for e in short.events if not isinstance(e, TraceCommand)])
    assert len(d.blocks) == drivers_spi.BLOCKS_KEPT
    # the cut leaves the card where it was: CMD12 right after a block's CRC
    k = next(i for i, e in enumerate(short.events) if isinstance(e, TraceCommand)
             and e.index == 12)
    before = [e for e in short.events[:k] if isinstance(e, TraceAccess) and e.offset == RX]
    assert before[-len(_frame(12)) - 1].value == 1  # block 2's last CRC byte
    assert drivers_spi.shorten(drivers_spi.requests(drivers_spi.decode(
        _read_request(2)))[0])[1] == 0


def test_lines_fold_a_blocks_fifo_loads_and_keep_response_bytes() -> None:
    ops = drivers_spi.convert_phase(drivers_spi.decode(_read_request(1)), _ctx(), SIFIVE_SPI)
    folded = drivers_spi.fold(ops, drivers_spi.FOLD_WIDEST)
    assert any(o.startswith("t4 0x0048 0x52 0x0*2 0x40 0x0 ") and "CMD18 0x4000" in o
               for o in ops)
    assert "r4 0x004c *8  # rxdata =0xff*7 0x0" in ops
    rep = [o for o in folded if isinstance(o, dict)]
    assert rep and rep[0]["repeat"] == 64 and rep[0]["ops"] == [
        "t4 0x0048 0xff*8  # txdata: 8 bytes, read =0x0", "w4 0x0054 0x7  # rxmark",
        "r4 0x0074  # ip =0x3", "r4 0x004c *8  # rxdata: 8 bytes"]


def test_the_converted_phase_says_what_it_kept() -> None:
    evs = _read_request(4) + _read_request(4) + _read_request(3)
    out = drivers_spi.convert({"read-4k": evs}, _ctx(), 1, SIFIVE_SPI)
    ph = out[0]
    assert ph["kept"]["commands"] == ["18,12", "18,12"] and ph["dropped"] == {"18,12": 1}
    assert ph["kept"]["blocks_left_out"] == 2 + 1
    assert ph["recorded"]["commands"] == 6


class _Log:
    """A target that records the accesses made on it."""

    def __init__(self) -> None:
        self.ops: list[tuple[Any, ...]] = []

    def read(self, off: int, size: int) -> int:
        self.ops.append(("r", off))
        return 0

    def write(self, off: int, size: int, value: int) -> None:
        self.ops.append(("w", off, value))

    def clock_step(self, ns: int) -> None:
        self.ops.append(("clock", ns))


def test_the_replay_reads_then_writes_each_byte_of_a_t_line() -> None:
    assert HOSTS["sifive-spi"] is SIFIVE_SPI
    rec = {"name": "x", "host": "sifive-spi", "phases": []}
    r = drivers.Replay.__new__(drivers.Replay)
    r.target, r.recording, r.host, r.last_cmd, r.rca = _Log(), rec, SIFIVE_SPI, None, 0  # type: ignore[assignment]
    r.line("t4 0x0048 0x40 0x0*2 +3  # txdata: 3 bytes, read =0x0")
    assert r.target.ops == [("clock", 3000), ("r", TX), ("w", TX, 0x40), ("r", TX),  # type: ignore[attr-defined]
                            ("w", TX, 0), ("r", TX), ("w", TX, 0)]


def test_sifive_u_boots_opensbi_with_qemus_own_device_tree() -> None:
    b = record_board.BOARDS["sifive_u"]
    build = type("B", (), {"binary": Path("/q/qemu-system-riscv64")})()
    argv = record_board.argv(build, b, Path("vmlinux"), Path("unused.dtb"),  # type: ignore[arg-type]
                             Path("initrd"), Path("card.img"), "console=ttySIF0", Path("t.log"))
    assert argv[argv.index("-bios") + 1] == "default" and "-dtb" not in argv
    assert b.host == "sifive-spi" and b.arch == "riscv64"


def test_sifive_u_u_boot_proper_sits_where_the_spl_reads_it(tmp_path: Path) -> None:
    u = record_uboot.UBOOT["sifive_u"]
    image = tmp_path / "recipe.img"
    image.write_bytes(bytes(4 << 20))
    itb = tmp_path / u.target / u.image
    itb.parent.mkdir()
    itb.write_bytes(b"FIT image")
    loads = record_uboot._card(u, itb, image, tmp_path / "card.img")
    assert loads == ["-bios", str(itb.parent / "u-boot-spl.bin")]
    card = (tmp_path / "card.img").read_bytes()
    assert card[0x822 * 512:0x822 * 512 + 9] == b"FIT image" and len(card) == 4 << 20


def test_a_frame_that_ends_a_fifo_load_names_its_command() -> None:
    """U-Boot's spi-sifive sends a command's six bytes as one load of their own."""
    ops = drivers_spi.convert_phase(drivers_spi.decode(message(xfer(_frame(16, 0x200)))),
                                    _ctx(), SIFIVE_SPI)
    assert any(o.startswith("t4 0x0048 0x50") and o.endswith("; CMD16 0x200") for o in ops)
