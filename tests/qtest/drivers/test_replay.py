"""The committed recordings: their provenance, and their replay on the model alone.

No test here boots a guest: the recordings are data (``sdqtest drivers record``
made them).  The replay's fidelity is held to the recording itself: the model,
mirroring the build the recording was made on, must answer the driver's reads as
that build answered the real driver, but for a value QEMU draws at random (the
RCA, PLS 4.2.2) and a status whose answer depends on how much virtual time a TCG
guest let pass (interrupt status, present state: at most one read in a hundred).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness import images
from harness.hwdefs import bcm2835_sdhost as BS
from harness.hwdefs import sdhci as H
from harness.machine import CardImage, Machine
from harness.model.board_targets import model_target_for
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.scenarios import REGISTRY, drivers
from harness.scenarios.drivers_hosts import HOSTS
from harness.target import Target

RECORDINGS = drivers.recordings()
#: Registers whose recorded answer depends on the time the guest let pass, by host.
TIMED = {"sdhci": {H.NORINTSTS.offset, H.PRNSTS.offset}}
#: Registers that read back the last command written (Linux's bcm2835.c reads
#: SDCMD before each request): in a trimmed phase, the recorded answer may be
#: that of a request the trimming dropped.
ECHO = {"sdhost": {BS.host(BS.SDCMD)}}
#: Linux's sdhci lights the LED (HOSTCTL's LEDCTL) for each request and puts it
#: out after (sdhci.c, the mmc core's LED trigger): in a trimmed phase, a read may
#: show the LED as a request the trimming dropped left it.
LED = {"sdhci": (H.HOSTCTL.offset, H.HOSTCTL_LED)}


def test_there_are_recordings_and_each_is_a_scenario_of_the_group() -> None:
    assert RECORDINGS
    for rec in RECORDINGS:
        sc = REGISTRY[rec["name"]]
        assert sc.group == drivers.GROUP and sc.image == rec["image"]
        assert rec["driver"] in sc.doc or sc.params["driver"] == rec["driver"]


@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda r: r["name"])
def test_each_recording_names_its_source_and_what_the_guest_did(rec: dict[str, Any]) -> None:
    src = rec["source"]
    uboot = "uboot_guest" in src  # U-Boot over its console: no kernel command line
    assert src["guest"]["kernel_package"].startswith("u-boot-" if uboot else "linux-image-")
    assert src["guest"]["kernel_package_version"]
    assert src["console_commands"] if uboot else src["kernel_command_line"]
    assert src["qemu"]["version"] and src["qemu"]["package"].startswith("Debian")
    assert src["machine"] and src["controller"] and src["accel"] == "tcg"
    local = tuple("/" + d + "/" for d in ("tmp", "root", "home"))  # the recorder's paths
    assert not any(d in a for a in src["command"] for d in local)
    if not uboot:
        assert src["command"][src["command"].index("-append") + 1] == src["kernel_command_line"]
    for ph in rec["phases"]:
        assert ph["did"] and ph["ops"], ph["name"]
        assert rec["guest_results"][ph["name"]]["ok"]


class Seen(drivers.Replay):
    """A replay that keeps every read's answer with the operation it belongs to."""

    def __init__(self, target: Target, recording: dict[str, Any]) -> None:
        super().__init__(target, recording)
        self.seen: list[tuple[tuple[str, int], int, int]] = []

    def read(self, off: int, size: int) -> int:
        v = super().read(off, size)
        self.seen.append((self.where, off, v))
        return v


def _model(rec: dict[str, Any], tmp: Path) -> ModelTarget:
    """The model on a copy of the recording's card, mirroring Debian's build it was
    recorded on (the sd-card and sdhci-pci defaults of a Debian build)."""
    img = tmp / "card.img"
    shutil.copyfile(images.ensure(rec["image"]), img)
    version = tuple(int(x) for x in rec["source"]["qemu"]["version"].split("."))
    profile = BuildProfile(version=version,  # type: ignore[arg-type]
                           sd_card_properties={"spec_version": "3"},
                           sdhci_properties={"sd-spec-version": "2"},
                           machine_types=(rec["source"]["machine"],) if rec.get("board")
                           else ())
    machine = (Machine.for_board(rec["board"], image=CardImage(img)) if rec.get("board")
               else Machine(type=rec["source"]["machine"], image=CardImage(img)))
    return model_target_for(machine.board_def)(machine, profile=profile)


def _recorded(rec: dict[str, Any]) -> list[tuple[tuple[str, int], int | None]]:
    """Each read's recorded answer in replay order (None: a poll's, any number)."""
    out: list[tuple[tuple[str, int], int | None]] = []
    for ph in rec["phases"]:
        for i, one in enumerate(ph["ops"]):
            if isinstance(one, dict) and "repeat" in one:
                for op in one["ops"] * one["repeat"]:
                    out += _recorded_line(op, (ph["name"], i))
            elif isinstance(one, str):
                out += _recorded_line(one, (ph["name"], i))
    return out


def _recorded_line(op: str, where: tuple[str, int]) -> list[tuple[tuple[str, int], int | None]]:
    """The recorded answers of one line's reads."""
    if op[0] == "t":  # SiFive SPI's txdata: read (the one value after "read ="), then write
        body, comment = op.split("#", 1)
        n = sum(int(w.partition("*")[2] or 1) for w in body.split()[2:] if w[0] != "+")
        return [(where, int(comment.split("read =")[1].split(";")[0], 16))] * n
    if op[0] == "r":
        times = re.search(r" \*(\d+)", op)
        comment = op.split("#", 1)[1]  # a data port's words: not kept
        if "=" in comment:  # one value, or a run of them (V*n V ...: SPI's rxdata)
            values = [int(v, 16) for w in comment.rsplit("=", 1)[1].split()
                      for v in [w.partition("*")[0]] * int(w.partition("*")[2] or 1)]
            return [(where, v) for v in values] if len(values) > 1 else \
                [(where, values[0])] * (int(times[1]) if times else 1)
        return [(where, None)] * (int(times[1]) if times else 1)
    return [(where, None)] if op[0] == "u" else []


@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda r: r["name"])
def test_the_model_answers_the_driver_as_the_recording_build_did(
        rec: dict[str, Any], tmp_path: Path) -> None:
    t = _model(rec, tmp_path)
    replay = Seen(t, rec)
    replay.run()
    assert replay.polls_unmet == []
    seen: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for where, off, v in replay.seen:
        seen.setdefault(where, []).append((off, v))
    wanted: dict[tuple[str, int], list[int | None]] = {}
    for where, value in _recorded(rec):
        wanted.setdefault(where, []).append(value)
    assert set(seen) <= set(wanted)
    differ = []
    reads = len(replay.seen)
    for where, values in wanted.items():
        got = seen.get(where, [])
        if None in values:  # a poll: read as often as it took
            assert got, where
            continue
        assert len(got) == len(values), where
        differ += [(where, off, v, w) for (off, v), w in zip(got, values, strict=True)
                   if v != w]
    host = HOSTS[rec.get("host", "sdhci")]
    if "uboot_guest" in rec["source"]:  # U-Boot had set host and card up before the first mark
        setup = next(i for i, op in enumerate(rec["phases"][0]["ops"])
                     if isinstance(op, str) and re.search(r"\bCMD8\b", op.split("#")[-1]))
        differ = [d for d in differ if d[0][0] != "probe" or d[0][1] > setup]
    cmd3 = sum(op.endswith(" CMD3") for ph in rec["phases"] for op in ph["ops"]
               if isinstance(op, str))
    rca = [d for d in differ if d[1] == host.rsp0_reg and d[2] & 0xFFFF == d[3] & 0xFFFF]
    timed = [d for d in differ if d[1] in TIMED.get(host.name, ())]
    echo = [d for d in differ if d[1] in ECHO.get(host.name, ())
            or (d[1], d[2] ^ d[3]) == LED.get(host.name)]
    dropped = sum(sum(ph["dropped"].values()) for ph in rec["phases"])
    assert len(rca) <= cmd3 and len(timed) <= reads // 100 and len(echo) <= dropped, differ
    assert sorted(rca + timed + echo) == sorted(differ), differ


def _adma(rec: dict[str, Any]) -> bool:
    """An SDHCI recording whose driver moved data by ADMA2 (not PIO)."""
    return rec.get("host", "sdhci") == "sdhci" and any(
        isinstance(op, dict) and "adma" in op for ph in rec["phases"] for op in ph["ops"])


@pytest.mark.parametrize("rec", [r for r in RECORDINGS if _adma(r)], ids=lambda r: r["name"])
def test_the_last_table_is_rebuilt_with_the_drivers_own_end(
        rec: dict[str, Any], tmp_path: Path) -> None:
    """Linux's sdhci ends every ADMA2 table with a nop-end-valid descriptor (SDHC
    1.13.4: Valid, End, Act nop) QEMU never fetches, and the replay puts it back;
    with SDHCI_QUIRK_NO_ENDATTR_IN_NOPDESC (i.MX) the last descriptor carries End
    itself, and nothing follows it."""
    t = _model(rec, tmp_path)
    replay = drivers.Replay(t, rec)
    replay.run(phases=[rec["phases"][0]["name"]])
    last = [op for op in rec["phases"][0]["ops"] if isinstance(op, dict)][-1]
    n = len(last["adma"])
    table = t.mem_read(replay.driver.desc_area, 8 * (n + 1))
    first = last["adma"][0]
    assert table[:8] == H.adma2_desc32(replay.driver.data_area + first[0], first[1], first[2])
    if rec["adma_end"] == "nop-end":
        assert not last["adma"][-1][2] & H.ADMA_END
        assert table[8 * n:] == H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_END)
    else:
        assert rec["adma_end"] == "" and last["adma"][-1][2] & H.ADMA_END


@pytest.mark.parametrize("rec", [r for r in RECORDINGS if r.get("host", "sdhci") == "sdhci"
                                 and not _adma(r)], ids=lambda r: r["name"])
def test_a_pio_sdhci_recording_moves_its_blocks_through_bdata(rec: dict[str, Any]) -> None:
    """Without DMA (Linux's sdhci-iproc gives the BCM2835 capabilities without it)
    every block goes through the Buffer Data Port in 4-byte words, a run per block:
    the SCR (8 bytes), the CMD6 status (64) or a 512-byte block; the recording says
    it has no table."""
    assert rec["adma_end"] == "" and "PIO" in rec["adma_end_why"]
    lines = [o for ph in rec["phases"] for op in ph["ops"]
             for o in (op["ops"] if isinstance(op, dict) else [op])]
    data = [o for o in lines if o.startswith(("r4 0x20 ", "d4 0x20 "))]
    sizes = {4 * int(o.rsplit("BDATA: ", 1)[1].split()[0]) for o in data}
    assert data and sizes <= {8, 64, 512} and 512 in sizes
    assert any(o.startswith("d4 0x20 ") for o in data)


def test_an_unmet_wait_is_a_miss_a_real_driver_would_time_out_on(tmp_path: Path) -> None:
    rec = {**RECORDINGS[0], "phases": [{"name": "probe", "ops": [
        "w1 0x2f 0x1  # SWRST", "u1 0x2f 0x1 0x1 3  # SWRST: never set again"]}]}
    replay = drivers.Replay(_model(rec, tmp_path), rec)
    replay.run()
    assert len(replay.polls_unmet) == 1 and "a real driver times out" in replay.polls_unmet[0]


def test_block_data_refuses_an_unknown_run() -> None:
    with pytest.raises(drivers.FormatError):
        drivers.block_data([["q", 1]])
    assert drivers.block_data([["z", 1]]) == bytes(512)
