"""Boards where things go wrong: a build that cannot start a board, and a
finding on a board, which gets a replay script as a PC finding does.

The build that cannot start quanta-gbs-bmc is made here from an installed
ARM build, the way a source build without firmware blobs (Debian's ``+ds``
tarball) is: the same binary (hard-linked, or copied), its libraries and
modules, and its data directory without ``npcm7xx_bootrom.bin``.  What the
check then reports is QEMU's own message, which the test reads from that
binary's stderr, run by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.check.boards import binary_family
from harness.fuzz import emit
from harness.fuzz.run import ERROR, execute
from harness.hwdefs import boards
from harness.qemu.builds import QemuBuild, probe
from harness.qemu.cannot_run import board_refusal
from tests.qtest.core.schema_subset import validate, validate_check

ROOT = Path(__file__).resolve().parents[3]
ROM = "npcm7xx_bootrom.bin"
QEMU_SAYS = f"Could not find ROM image '{ROM}'"
#: Setup, initialisation and a status probe: enough commands for a trace.
OPS = [{"op": "setup", "freq": 400000},
       {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512},
       {"op": "probe", "status": True}]


def without_rom(build: QemuBuild, where: Path) -> Path:
    """``build``'s binary in ``where/bin`` with a data directory lacking the
    NPCM7xx boot ROM (an installed build's layout: ``bin/qemu-bundle``)."""
    bundle = build.binary.parent / "qemu-bundle"
    data = bundle / "usr" / "share" / "qemu"
    if not (data / ROM).is_file():
        pytest.skip(f"{build.name}: not an installed build with {ROM} in {data}")
    (where / "bin").mkdir(parents=True)
    (where / "root" / "usr" / "share" / "qemu").mkdir(parents=True)
    binary = where / "bin" / build.binary.name
    try:
        os.link(build.binary, binary)
    except OSError:
        shutil.copy2(build.binary, binary)
    (where / "bin" / "qemu-bundle").symlink_to(where / "root")
    (where / "root" / "usr" / "lib").symlink_to((bundle / "usr" / "lib").resolve())
    for f in data.iterdir():
        if f.name != ROM:
            (where / "root" / "usr" / "share" / "qemu" / f.name).symlink_to(f.resolve())
    return binary


def test_the_build_without_the_rom_is_what_qemu_says(arm_build: QemuBuild,
                                                     tmp_path: Path) -> None:
    """QEMU's words, by hand: the board starts on the build, not on its copy
    without the ROM; :func:`board_refusal` says what QEMU says."""
    binary = without_rom(arm_build, tmp_path)
    p = subprocess.run([str(binary), "-machine", "quanta-gbs-bmc", "-accel", "qtest",
                        "-display", "none", "-nodefaults", "-qtest", "stdio"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and QEMU_SAYS in p.stderr, p.stderr
    assert board_refusal(binary, "quanta-gbs") == QEMU_SAYS
    assert board_refusal(arm_build.binary, "quanta-gbs") is None
    assert board_refusal(binary, "zynq") is None


def test_qemu_list_names_a_board_the_build_cannot_start(arm_build: QemuBuild,
                                                       tmp_path: Path) -> None:
    from harness.commands.qemu import board_lines

    fake = probe(without_rom(arm_build, tmp_path))
    lines = [ln for ln in board_lines(fake) if "board quanta-gbs " in ln]
    assert lines == [f"[{fake.name}] board quanta-gbs (quanta-gbs-bmc): cannot run on this "
                     f"build: {QEMU_SAYS}"]
    assert not [ln for ln in board_lines(arm_build) if "board quanta-gbs " in ln]
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "harness.cli", "qemu", "list", "--qemu",
                        str(fake.binary), "--json", "-"], capture_output=True, text=True,
                       timeout=120, env=e, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    said = lines[0].split("] ", 1)[1]  # the build's name is the path probed here
    assert said in p.stderr  # the text went to stderr, the JSON to stdout
    doc = json.loads(p.stdout)
    validate(doc, "qemu-list")
    # quanta-gbs, and any board of its target whose machine type the build
    # lacks (7.2: bpim2u); a RISC-V board is not an ARM build's to run
    absent = [b for b in boards.BOARDS if not fake.offers(b.machine)
              and binary_family(b.binary) == binary_family(str(fake.binary))]
    assert doc["summary"]["boards_cannot_run"] == 1 + len(absent)
    assert [c for c in doc["builds"][0]["cannot_run"] if c["board"] == "quanta-gbs"] == [
        {"board": "quanta-gbs", "machine": "quanta-gbs-bmc", "reason": QEMU_SAYS}]


def test_a_board_the_build_cannot_start_is_counted_apart(arm_build: QemuBuild,
                                                         tmp_path: Path) -> None:
    """Every quanta-gbs run is ``cannot-run`` with QEMU's message, none is
    unexplained, zynq on the same build agrees, and the check passes."""
    binary = without_rom(arm_build, tmp_path / "build")
    out = tmp_path / "out.json"
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.pop("QTEST_QEMU_BINARY", None)
    p = subprocess.run([sys.executable, "-m", "harness.cli", "check", "--board",
                        "quanta-gbs,zynq", "--qemu", str(binary), "--group", "card",
                        "--json", str(out), "--report-dir", str(tmp_path / "r")],
                       capture_output=True, text=True, timeout=600, env=e, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    validate_check(doc)
    gbs = [r for r in doc["results"] if r["machine"] == "quanta-gbs-bmc"
           and r["status"] != "skipped"]
    why = f"cannot run on this build: {QEMU_SAYS}"
    assert gbs and all(r["status"] == "cannot-run" and r["reason"] == why for r in gbs), gbs
    zynq = [r["status"] for r in doc["results"] if r["machine"] == "xilinx-zynq-a9"]
    assert "agree" in zynq and "cannot-run" not in zynq
    s = doc["summary"]
    assert s["cannot_run"] == len(gbs) and s["unexplained"] == 0
    assert s["cannot_run_on_build"] == [{"build": doc["results"][0]["build"],
                                         "machine": "quanta-gbs-bmc", "reason": why}]
    assert f"{len(gbs)} cannot run on this build" in p.stdout and QEMU_SAYS in p.stdout


def _replayed(script: Path, binary: Path) -> list[str]:
    """QEMU's answers to the script's trace (its stdout)."""
    p = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, QEMU=str(binary), REPLAY_SECONDS="3"))
    return p.stdout.splitlines()


def test_a_board_finding_gets_a_replay_script(arm_build: QemuBuild, tmp_path: Path) -> None:
    """A board run written as the fuzzer writes a finding: the script
    builds the board's machine with its card as ``-drive if=sd`` (snapshot),
    and QEMU answers every command of the trace when it is run."""
    out = execute(arm_build.binary, arm_build.profile, OPS, machine_type="xilinx-zynq-a9",
                  name=arm_build.name)
    assert out.trace and out.machine is not None and out.machine.board == "zynq"
    d = emit.write(out, OPS, "board-replay-test", arm_build.name, tmp_path)
    script = (d / "repro.sh").read_text()
    assert "-machine xilinx-zynq-a9" in script and "-qtest stdio" in script
    assert "if=sd,index=0" in script and "snapshot=on" in script and "sdhci-pci" not in script
    answers = [ln for ln in _replayed(d / "repro.sh", arm_build.binary)
               if not ln.startswith("IRQ")]
    commands = [ln for ln in (d / "repro.qtest").read_text().splitlines()
                if ln and not ln.startswith("#")]
    assert len(answers) == len(commands) and all(a.startswith("OK") for a in answers), answers
    assert "MACHINE = 'xilinx-zynq-a9'" in next(d.glob("test_fuzz_*.py")).read_text()
    assert "qtest_init(\"-machine xilinx-zynq-a9" in (d / "repro.c").read_text()


def test_a_board_qemu_cannot_start_still_gets_its_script(arm_build: QemuBuild,
                                                         tmp_path: Path) -> None:
    """The crash of issue 41 (``IndexError`` in ``shell_line``): a run whose
    QEMU never started has no session to ask for its command line.  The
    line is the machine's all the same, and the reproducers are written."""
    binary = without_rom(arm_build, tmp_path / "build")
    out = execute(binary, arm_build.profile, OPS, machine_type="quanta-gbs-bmc")
    assert out.status == ERROR and QEMU_SAYS in out.reason and not out.trace
    d = emit.write(out, OPS, "board-cannot-start", arm_build.name, tmp_path)
    script = (d / "repro.sh").read_text()
    assert "-machine quanta-gbs-bmc" in script and str(binary) in script


def test_an_explore_divergence_on_a_board_is_shrunk_on_that_board(
        arm_build: QemuBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's shrink phase runs the input again through the check's own
    runner on the run's machine type, the board (here one that agrees:
    nothing to shrink, nothing written)."""
    import harness.scenarios as scenarios
    from harness.check import explore_shrink, runner
    from harness.check.divergence import Divergence
    from harness.check.step import Step
    from harness.check.testbench import RunSpec
    from harness.scenarios import explore

    seen: list[str] = []
    real = runner.run

    def spy(build: QemuBuild, sc: scenarios.Scenario, machine: str,
            opts: runner.RunOptions) -> runner.Result:
        seen.append(machine)
        return real(build, sc, machine, opts)

    monkeypatch.setattr(runner, "run", spy)
    name = next(e["name"] for e in explore.load()["inputs"] if "variant" not in e)
    sc = scenarios.all_scenarios()[name]
    d = Divergence(Step(3, "read", (0x24, 4), 1, 0, False, False), "result", [],
                   signature="result:PRNSTS.CMDINHIBIT | no command | -")
    res = runner.Result(arm_build.name, name, explore.GROUP, "xilinx-zynq-a9", runner.DIVERGE,
                        divergence=d)
    got = explore_shrink.phase([(RunSpec(arm_build, sc, "xilinx-zynq-a9"), res)], tmp_path, 2)
    assert seen == ["xilinx-zynq-a9"]
    assert got == [explore_shrink.NotShrunk(arm_build.name, name)]
    assert not (tmp_path / "explore-findings").exists()
