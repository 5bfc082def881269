"""Recordings of controllers that are no SDHCI: trace lines, requests, data ports,
folded PIO loops, the Allwinner's descriptor chains, and their replay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import images
from harness.guest import record_board, record_uboot
from harness.hwdefs import allwinner as AW
from harness.hwdefs import pl181 as PL
from harness.machine import CardImage, Machine
from harness.model.board_targets import model_target_for
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.scenarios import drivers, drivers_idma, drivers_pio
from harness.scenarios.drivers_convert import ConvertContext
from harness.scenarios.drivers_hosts import HOSTS, PL181, SUNXI, SUNXI_A10
from harness.scenarios.drivers_trace import (
    IdmaDescriptor,
    Mark,
    TraceAccess,
    TraceCommand,
    parse_line,
)

LINE = ("2026-01-01T00:00:00.000010Z memory_region_ops_{k} cpu 0 mr 0x55 addr {a:#x} "
        "value {v:#x} size 4 name '{n}'")
BASE = 0x1000_0000  # vexpress-a9's window


def _ctx() -> ConvertContext:
    return ConvertContext(BASE, bytes(1 << 20), images.recipe("sdsc-16m"), {})


def test_accesses_of_the_hosts_regions_and_marks_at_their_address() -> None:
    regions = tuple(n for n, _ in PL181.regions)
    mark = record_board.BOARDS["vexpress-a9"].mark
    a = parse_line(LINE.format(k="read", a=0x10005034, v=0x400, n="pl181"), regions, mark)
    assert a == TraceAccess("r", 0x10005034, 4, 0x400, a.us if isinstance(a, TraceAccess) else 0,
                            "pl181")
    assert parse_line(LINE.format(k="write", a=mark, v=3, n="pl031"), regions, mark) == Mark(3)
    # the same RTC's interrupt mask write is no mark, and the RTC is no region kept
    assert parse_line(LINE.format(k="write", a=0x1001700C, v=1, n="pl031"), regions,
                      mark) is None
    idma = ("2026-01-01T00:00:00Z allwinner_sdhost_process_desc desc_addr 0x7f040010 "
            "desc_size 65536 is_write 1 max_bytes 65536")
    assert parse_line(idma) == IdmaDescriptor(0x7F040010, 65536)


def test_only_the_windows_registers_are_kept_and_commands_follow_their_issue() -> None:
    evs = [TraceAccess("r", BASE + 0x48, 4, 1, region="arm-sysctl"),   # SYS_MCI: kept
           TraceAccess("r", BASE + 0x5C, 4, 7, region="arm-sysctl"),   # SYS_24MHZ: not
           TraceAccess("w", BASE + 0x5008, 4, 0x1AA, region="pl181"),
           TraceAccess("w", BASE + 0x500C, 4, 0x448, region="pl181"),  # Enable | CMD8
           TraceAccess("w", BASE + 0x500C, 4, 0, region="pl181")]      # no command
    out = drivers_pio.rebase(evs, BASE, PL181)
    assert [e.offset for e in out if isinstance(e, TraceAccess)] == [0x48, 0x5008, 0x500C, 0x500C]
    assert out[3] == TraceCommand(8, 0x1AA) and not isinstance(out[-1], TraceCommand)


def _request(cmd: int, arg: int = 0, data: bool = False) -> list[TraceAccess | TraceCommand]:
    """mmci.c's request: the data setup, the command register read, argument, issue."""
    setup = [TraceAccess("w", PL.mmci(PL.MCIDATATIMER), 4, 0x1000)] if data else []
    return [*setup, TraceAccess("r", PL.mmci(PL.MCICOMMAND), 4, 0),
            TraceAccess("w", PL.mmci(PL.MCIARGUMENT), 4, arg),
            TraceAccess("w", PL.mmci(PL.MCICOMMAND), 4, 0x440 | cmd), TraceCommand(cmd, arg),
            TraceAccess("r", PL.mmci(PL.MCISTATUS), 4, 0x40)]


def test_requests_start_where_the_driver_starts_one() -> None:
    evs = [*_request(18, 0x800, data=True), *_request(12), *_request(13),
           *_request(32), *_request(33), *_request(38)]
    reqs = drivers_pio.requests(evs, PL181)
    assert [r.kind for r in reqs] == ["18,12", "13", "32,33,38"]
    # the data setup of a request is its own, not the tail of the one before
    assert reqs[1].events[0] == TraceAccess("r", PL.mmci(PL.MCICOMMAND), 4, 0)
    assert reqs[0].events[0].offset == PL.mmci(PL.MCIDATATIMER)  # type: ignore[union-attr]


def test_data_ports_runs_and_polls() -> None:
    fifo = PL.mmci(PL.MCIFIFO)
    evs = [TraceAccess("r", fifo, 4, v) for v in (1, 2, 3)]
    evs += [TraceAccess("w", fifo, 4, v) for v in (5, 5, 5, 6)]
    evs += [TraceAccess("r", PL.mmci(PL.MCISTATUS), 4, v) for v in (0x400, 0x400, 0x500)]
    ops = drivers_pio.convert_phase(evs, _ctx(), PL181)
    assert ops[0].startswith(f"r4 {fifo:#06x} *3  # MCIFIFO: 3 words")
    assert ops[1].startswith(f"d4 {fifo:#06x} 0x5*3 0x6  # MCIFIFO: 4 words")
    assert ops[2].startswith("u4 0x5034 0x100 0x100 19  # MCIStatus: polled 3 times")


def test_a_pio_loop_is_folded_without_its_delays() -> None:
    loop = ["r4 0x003c +2  # SD_STAR =0x20100", "r4 0x0200 *1 +1  # SD_FIFO: 1 words"]
    ops = ["w4 0x0018 0x80003352  # SD_CMDR CMD18", *loop * 6, "r4 0x0038  # SD_RISR =0x4"]
    out = drivers_pio.fold(ops)
    assert out == [ops[0], {"repeat": 6, "ops": ["r4 0x003c  # SD_STAR =0x20100",
                                                "r4 0x0200 *1  # SD_FIFO: 1 words"]}, ops[-1]]
    assert drivers_pio.fold(ops[:5]) == ops[:5]  # too short to fold


def test_linux_sunxi_descriptors_as_sunxi_mmc_init_idma_des_writes_them() -> None:
    words = drivers_idma.descriptor_words([65536, 512], 0x100, [0x1000, 0x20000])
    d = [int.from_bytes(words[i:i + 4], "little") for i in range(0, 32, 4)]
    own, ch, dic, fd, ld, er = (AW.DES0.field(n).mask for n in ("OWN", "CH", "DIC", "FD",
                                                                 "LD", "ER"))
    assert d[:4] == [own | ch | dic | fd, 0, 0x1000, 0x110]  # 64 KiB: size 0
    assert d[4:] == [own | ch | ld | er, 512, 0x20000, 0]


def test_a_data_command_gets_its_chain_and_a_pio_one_none() -> None:
    issue = TraceAccess("w", AW.SD_CMDR.offset, 4, 0x80003352)  # CMD_LOAD, DATA_TRANS, CMD18
    evs = [issue, TraceCommand(18, 0x880000), IdmaDescriptor(0x7F040000, 4096),
           IdmaDescriptor(0x7F040010, 512), TraceAccess("r", AW.SD_RISR.offset, 4, 4)]
    made = drivers_idma.special(evs, 0, issue, _ctx())
    assert made is not None and made[0] == {"idma": [[0, 4096], [4096, 512]], "cmd": 18}
    assert made[1].startswith("w4 0x0018 0x80003352")
    assert drivers_idma.special([issue, TraceCommand(18, 0)], 0, issue, _ctx()) is None
    dlba = TraceAccess("w", AW.SD_DLBA.offset, 4, 0x7F040000)
    assert drivers_idma.special([dlba], 0, dlba, _ctx()) == ["w4 0x0084 @table  # SD_DLBA"]


def _board_model(board: str, tmp: Path) -> ModelTarget:
    img = tmp / "card.img"
    shutil.copyfile(images.ensure("sdsc-16m"), img)
    machine = Machine.for_board(board, image=CardImage(img))
    profile = BuildProfile(version=(11, 1, 3), sd_card_properties={"spec_version": "3"},
                           machine_types=(machine.type,))
    return model_target_for(machine.board_def)(machine, profile=profile)


def test_a_replayed_fifo_write_and_idma_chain_reach_the_model(tmp_path: Path) -> None:
    t = _board_model("orangepi-pc", tmp_path)
    rec = {"name": "t", "host": "sunxi", "phases": []}
    replay = drivers.Replay(t, rec)
    replay.op("d4 0x0200 0x5d200512*2 0x1")
    replay.op({"repeat": 2, "ops": ["r4 0x003c", "w4 0x0038 0x4"]})
    replay.op({"idma": [[0, 512]], "cmd": 24, "block": 5, "data": [["z", 1]]})
    d = replay.driver
    assert t.mem_read(d.desc_area + 8, 4) == (d.data_area).to_bytes(4, "little")
    assert t.mem_read(d.data_area, 512) == bytes(512)
    with pytest.raises(KeyError):
        drivers.Replay(t, {**rec, "host": "nonesuch"})


def test_every_recording_board_has_a_host_and_u_boot_its_commands() -> None:
    for b in record_board.BOARDS.values():
        assert b.host in HOSTS
    assert SUNXI.command(AW.SD_CMDR.offset, 4, 0x80202000) is None  # a clock update
    assert set(record_uboot.UBOOT) <= set(record_board.BOARDS)
    for commands, did in record_uboot.PHASES.values():
        assert commands and did


@pytest.mark.parametrize("board", sorted(record_uboot.UBOOT))
def test_each_u_boot_board_has_its_recording_naming_its_build(board: str) -> None:
    """One recording per board Debian's U-Boot is recorded on, naming the package,
    the U-Boot build (its directory under /usr/lib/u-boot) and the board."""
    u = record_uboot.UBOOT[board]
    recs = [r for r in drivers.recordings() if r["source"].get("uboot_guest") == board]
    assert len(recs) == 1, board
    rec = recs[0]
    src = rec["source"]
    assert rec["board"] == board and rec["host"] == record_board.BOARDS[board].host
    assert src["guest"]["kernel_package"] == f"{u.package}:{u.arch}"
    assert src["guest"]["modules"] == [u.target] and src["guest"]["uboot"] == u.image
    assert src["machine"] == record_board.BOARDS[board].machine
    assert src["phases"] == list(record_uboot.PHASES) == [p["name"] for p in rec["phases"]]
    assert src["console_commands"] == {p: list(c) for p, c in
                                       record_uboot.phase_commands(u).items()}


def test_u_boot_commands_use_the_boards_buffer_and_its_probe_opens_with_its_own() -> None:
    rpi = record_uboot.UBOOT["raspi2b"]
    cmds = record_uboot.phase_commands(rpi)
    assert cmds["probe"][:len(rpi.probe_first)] == rpi.probe_first
    assert all(f"{record_uboot.BUFFER:#x}" not in c for cs in cmds.values() for c in cs)
    assert "mmc read 0x1000000 0x4000 1" in cmds["read-512"]  # within raspi2b's DRAM
    opi = record_uboot.phase_commands(record_uboot.UBOOT["orangepi-pc"])
    assert opi == {p: c for p, (c, _d) in record_uboot.PHASES.items()}


def test_raspi3b_sdhost_starts_by_kernel_on_the_mini_uart_and_maps_to_its_board(
        tmp_path: Path) -> None:
    """rpi_3 by -kernel (hw/arm/raspi.c), its console the second serial port; the
    recording guests of raspi3b's two controllers map to their own check boards."""
    from harness.commands.drivers import _board_name

    u = record_uboot.UBOOT["raspi3b-sdhost"]
    assert u.arch == "arm64" and u.kernel and u.probe_first == record_uboot.SDHOST_RESTORE
    assert u.probe_first == record_uboot.UBOOT["raspi2b"].probe_first
    image = tmp_path / "recipe.img"
    image.write_bytes(bytes(1 << 20))
    ub = tmp_path / "u-boot.bin"
    ub.write_bytes(b"U-Boot")
    assert record_uboot._card(u, ub, image, tmp_path / "card.img") == ["-kernel", str(ub)]
    assert record_board.BOARDS["raspi3b-sdhost"].serial_index == 1
    assert _board_name("raspi3b-sdhost") == "raspi3b-sdhost"
    assert _board_name("raspi3b") == "raspi3b"
    assert _board_name("mcimx7d-sabre") == "mcimx7d"
    assert _board_name("raspi2b") == "raspi2b"


def test_the_trace_filter_drops_a_regions_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    """What QEMU writes to the FIFO (in any pieces, opened and closed again) reaches
    the trace but the dropped region's lines, up to the end mark."""
    trace = tmp_path / "trace.log"
    f = record_uboot.TraceFilter(("bcm2836-control",), trace)
    lines = [LINE.format(k="read", a=0x400000CC, v=0, n="bcm2836-control"),
             LINE.format(k="write", a=0x3F202000, v=0x8400, n="bcm2835-sdhost")]
    for _ in range(2):
        with open(f.pipe, "w") as w:
            w.write("\n".join(lines * 3) + "\n")
    f.close()
    assert trace.read_text().splitlines() == [lines[1]] * 6
    assert not f.pipe.exists()


def test_the_a10s_fifo_at_0x100_is_a_data_port_and_u_boot_uses_it() -> None:
    """QEMU's sun4i variant answers the FIFO at 0x100 (hw/sd/allwinner-sdhost.c,
    REG_SD_THLDC), where a sun4i build of U-Boot's sunxi_mmc moves its data."""
    off = AW.SD_THLDC.offset
    assert off in SUNXI_A10.data_ports and off not in SUNXI.data_ports
    assert SUNXI_A10.reg_name(off, 4) == "SD_FIFO"
    rec = next(r for r in drivers.recordings() if r["source"].get("uboot_guest") ==
               "cubieboard")
    lines = [op for ph in rec["phases"] for one in ph["ops"]
             for op in (one["ops"] if isinstance(one, dict) and "repeat" in one else [one])
             if isinstance(op, str)]
    assert any(op.startswith(f"r4 {off:#06x} *") for op in lines)
    assert not any(" 0x0200 " in op for op in lines)


def test_a_fifo_read_at_0x100_reaches_the_a10_models_fifo(tmp_path: Path) -> None:
    t = _board_model("cubieboard", tmp_path)
    replay = drivers.Replay(t, {"name": "t", "host": "sunxi-a10", "phases": []})
    assert replay.host is SUNXI_A10
    replay.op(f"r4 {AW.SD_THLDC.offset:#06x} *2  # SD_FIFO: 2 words")
