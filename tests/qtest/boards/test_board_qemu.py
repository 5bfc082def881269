"""Each board's controller under qtest on the ARM builds, then scenarios in lockstep.

The expectations are the boards' QEMU sources (:mod:`harness.hwdefs.boards`):
the capabilities and spec version each board sets, the controller at its MMIO
base, its interrupt line seen where the board wires it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.check import boards as check_boards
from harness.check import runner
from harness.check.testbench import RunSpec
from harness.hwdefs import aspeed, boards, npcm
from harness.hwdefs import sdhci as H
from harness.ledger import LEDGER
from harness.ledger.boundaries import USDHC_SPEC_3
from harness.machine import CardImage, Machine
from harness.qemu.board import BoardError
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool, reuse_key
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from tests.qtest.boards import variant_facts

pytestmark = pytest.mark.qemu

#: Short scenarios that together touch registers, PIO, SDMA, ADMA2 and the line.
SCENARIOS = ("w1c-interrupt-status", "access-sizes", "pio-read-7", "sdma-write-7",
             "adma2-read-32", "irq-during-transfers", "card-registers", "reset-all-mid-transfer")


@pytest.fixture(scope="module")
def board_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _target(build: QemuBuild, board: boards.Board, tmp_path: Path) -> QemuTarget:
    if not build.offers(board.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {board.machine}")
    img = tmp_path / "card.img"
    img.write_bytes(b"")
    with img.open("r+b") as f:
        f.truncate(16 << 20)
    return QemuTarget(build.binary, Machine.for_board(board.name, image=CardImage(img)),
                      name=build.name)


def _capareg(board: boards.Board, build: QemuBuild) -> int:
    """The capabilities the board sets; Aspeed's wrapper has one value for
    every SoC before 10.0 (7.2.22's hw/sd/aspeed_sdhci.h), the SoC's after."""
    if board.variant == "aspeed":
        return (aspeed.CAPAREG_BEFORE_10_0 if build.profile.version < (10, 0)
                else aspeed.CAPAREG_AST2600)
    return int(board.sdhci_props["capareg"])


def _spec_version(board: boards.Board, build: QemuBuild) -> int:
    """The specification version HCVER reports: i.MX uSDHC's is 3 only since
    10.0 (hw/sd/sdhci.c imx_usdhc_init; 7.2 keeps the common default 2); the
    Nuvoton wrapper's reset writes HCVER 0x1002 (3.00) over a 2.00 SDHCI."""
    if board.variant == "usdhc":
        return 2 if build.profile.version < USDHC_SPEC_3.since else 3
    if board.variant == "npcm":
        return (npcm.RESET_VALUES["hcver"] & 0xFF) + 1
    return int(board.sdhci_props["sd-spec-version"])


@pytest.mark.parametrize("board", boards.SDHCI_BOARDS, ids=lambda b: b.name)
def test_controller_at_the_board_base_with_its_interrupt(
        board_build: QemuBuild, board: boards.Board, tmp_path: Path) -> None:
    """CAPAB and HCVER at the board's base are what the board sets; CMD0's
    Command Complete raises the line where the board wires it and clearing
    the status lowers it."""
    need = board.irq.min_version
    if board_build.profile.version[:2] < need:
        with pytest.raises(BoardError, match="cannot intercept the named GPIO"):
            _target(board_build, board, tmp_path)
        return
    with _target(board_build, board, tmp_path) as t:
        caps = t.read(H.CAPAB.offset, 4) | t.read(H.CAPAB.offset + 4, 4) << 32
        assert caps == _capareg(board, board_build)
        assert t.read(H.HCVER.offset, 2) & 0xFF == _spec_version(board, board_build) - 1
        if board.variant == "npcm":  # its reset's Present State says no card
            assert t.read(H.PRNSTS.offset, 4) & ~H.PRNSTS_LINE_LEVELS \
                == npcm.RESET_VALUES["prnsts"] & ~H.PRNSTS_LINE_LEVELS
            t.write(H.SWRST.offset, 1, H.SWRST_ALL)
        assert t.read(H.PRNSTS.offset, 4) & H.PRNSTS_CARDINSERTED
        t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
        t.write(H.NORINTSIGEN.offset, 4, 0xFFFF_FFFF)
        t.irq_events()  # the pending-insert quirk (raspi) may have raised it
        t.write(H.NORINTSTS.offset, 4, 0xFFFF_FFFF)
        assert not t.irq_level()
        t.write(H.PWRCON.offset, 1, 0x0F)
        t.write(H.CLKCON.offset, 2, 0x0007)
        t.write(H.ARGUMENT.offset, 4, 0)
        t.write(H.CMDREG.offset, 2, 0)  # CMD0, no response
        assert t.read(H.NORINTSTS.offset, 2) & H.NIS_CMDCMPL
        assert t.irq_level() and t.irq_events()[-1] is True
        t.write(H.NORINTSTS.offset, 2, H.NIS_CMDCMPL)
        assert not t.irq_level() and t.irq_events() == [False]


def test_usdhc_vendor_register_is_the_imx_one(arm_build: QemuBuild, tmp_path: Path) -> None:
    """hw/sd/sdhci.c usdhc_read/usdhc_write: VENDOR_SPEC (0xC0) keeps the low
    half of what is written (deviation usdhc.vendor-spec-16bit), the
    tuning/DLL registers read 0, MIX_CTRL (0x48) holds the transfer mode
    without sending a command; the generic SDHCI has nothing at 0xC0."""
    assert "usdhc.vendor-spec-16bit" in LEDGER
    with _target(arm_build, boards.by_name("mcimx7d"), tmp_path) as t:
        t.write(0xC0, 4, 0x2000_0100)
        assert t.read(0xC0, 4) == 0x0000_0100
        assert t.read(0x60, 4) == 0 and t.read(0xCC, 4) == 0
        t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
        t.write(0x48, 4, 0x0000_0013)  # MIX_CTRL: the transfer mode, no command sent
        assert t.read(0x48, 4) == 0  # and it reads 0
        assert not t.read(H.PRNSTS.offset, 4) & H.PRNSTS_CMDINHIBIT
        assert not t.read(H.NORINTSTS.offset, 2) & H.NIS_CMDCMPL
    with _target(arm_build, boards.by_name("zynq"), tmp_path) as t:
        t.write(0xC0, 4, 0x2000_0100)
        assert t.read(0xC0, 4) == 0


@pytest.mark.parametrize("board", boards.SDHCI_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("name", SCENARIOS)
def test_scenarios_agree_on_the_board(board_build: QemuBuild, board: boards.Board, name: str,
                                      board_pool: QemuPool) -> None:
    if not board_build.offers(board.machine):
        pytest.skip(f"QEMU {board_build.name} has no machine type {board.machine}")
    why = check_boards.board_only_reason(board, board_build.profile)
    if why is not None:
        pytest.skip(why)
    sc = all_scenarios()[name]
    skip = check_boards.skip_reason(sc, board.machine, board_build.profile)
    if skip is not None:
        pytest.skip(skip)
    res = runner.run(board_build, sc, board.machine, runner.RunOptions(pool=board_pool))
    assert res.status in (runner.AGREE, runner.QUIRK, runner.SKIP), res.reason
    if res.status == runner.SKIP:
        pytest.skip(res.reason)


#: eMMC scenarios for the board whose card is an eMMC (fuji-emmc): identity,
#: EXT_CSD, CMD6 refusals, erase, the boot partitions, an RPMB write.
EMMC_SCENARIOS = ("emmc-identification", "emmc-ext-csd", "emmc-switch-refused",
                  "emmc-erase-trim", "emmc-boot-switch-absent", "emmc-rpmb-write-read")


@pytest.mark.parametrize("name", EMMC_SCENARIOS)
def test_emmc_scenarios_agree_on_the_emmc_board(arm_build: QemuBuild, name: str,
                                               board_pool: QemuPool) -> None:
    board = boards.by_name("fuji-emmc")
    if not arm_build.offers(board.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {board.machine}")
    why = check_boards.board_only_reason(board, arm_build.profile)
    if why is not None:
        assert arm_build.profile.emmc_properties is None  # only a build without emmc
        pytest.skip(why)
    sc = all_scenarios()[name]
    spec = RunSpec(arm_build, sc, board.machine)
    if spec.skip_reason() is not None:
        pytest.skip(spec.skip_reason())
    res = runner.run(arm_build, sc, board.machine, runner.RunOptions(pool=board_pool))
    assert res.status in (runner.AGREE, runner.QUIRK), res.reason


def _driven(build: QemuBuild, name: str, tmp_path: Path) -> QemuTarget:
    board = boards.by_name(name)
    if build.profile.version[:2] < board.irq.min_version:
        pytest.skip(f"QEMU {build.name}'s qtest cannot watch board {name}'s interrupt")
    return _target(build, board, tmp_path)


def test_s3c_control_registers_on_qemu(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the S3C model states (tests/qtest/boards/variant_facts.py)."""
    with _driven(arm_build, "smdkc210", tmp_path) as t:
        variant_facts.s3c_control_registers(t)


def test_aspeed_slot_on_qemu(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the Aspeed model states: capabilities and write-protect level by version."""
    with _driven(arm_build, "ast2600", tmp_path) as t:
        variant_facts.aspeed_slot(t, arm_build.profile.version)


def test_aspeed_wrapper_on_qemu(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the Aspeed model states of the wrapper's own registers."""
    with _driven(arm_build, "ast2600", tmp_path) as t:
        variant_facts.aspeed_wrapper(t, arm_build.profile.version)


def test_npcm_wrapper_on_qemu(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the Nuvoton model states: reset values, window, Software Reset."""
    with _driven(arm_build, "quanta-gbs", tmp_path) as t:
        variant_facts.npcm_wrapper(t)


def test_cadence_hrs_on_qemu(riscv_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the Cadence model states: the HRS below the SDHCI, HRS00.SWR
    resetting the SDHCI and the card on its bus."""
    with _driven(riscv_build, "icicle", tmp_path) as t:
        variant_facts.cadence_hrs(t)
    with _driven(riscv_build, "icicle", tmp_path) as t:
        variant_facts.cadence_software_reset(t)


def test_usdhc_layout_on_qemu(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The facts the uSDHC model states: PROT_CTRL, BLK_ATT, VEND_SPEC/PRES_STATE,
    MIX_CTRL and CMD_XFR_TYP, no busy interrupt."""
    with _driven(arm_build, "mcimx7d", tmp_path) as t:
        variant_facts.usdhc_layout(t)
    with _driven(arm_build, "mcimx7d", tmp_path) as t:
        variant_facts.usdhc_command_takes_mix_ctrl(t)


#: A write left stuck on zynq (its capabilities have no ADMA1, so the ADMA1
#: transfer never starts), a CMD13 probe, then the transfer resumed by SDMA:
#: the operations of an explored input (harness.driver.ops).
STUCK_WRITE_OPS: list[dict[str, Any]] = [
    {"op": "setup", "freq": 400000},
    {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512},
    {"op": "start", "index": 24, "bs": 2, "count": 1, "offset": 0, "block": 10,
     "mode": "adma1", "auto12": False, "blkcnt_en": True, "boundary": 5},
    {"op": "probe", "status": True},
    {"op": "rw", "read": False, "block": 5, "count": 7, "bs": 16, "mode": "sdma",
     "stop": "auto", "pio_access": 1, "skew": 0, "boundary": 8192, "max_segment": 4096},
]


def test_an_abort_the_model_predicts_is_the_ledger_bug(arm_build: QemuBuild,
                                                      board_pool: QemuPool) -> None:
    """QEMU >= 9.1 aborts on the resumed write's data byte
    (sd.command-during-transfer) at the step the model says: the run is
    that known QEMU bug, not an unexplained crash.  7.2 goes on, and agrees."""
    from harness.scenarios.explore import _scenario

    board = boards.by_name("zynq")
    sc = _scenario("stuck-write-probed", STUCK_WRITE_OPS, "test")
    res = runner.run(arm_build, sc, board.machine, runner.RunOptions(pool=board_pool))
    if arm_build.profile.version >= (9, 1):
        assert res.status == runner.QUIRK, res.reason
        assert [k for k, u in res.known.items() if u.met] == ["sd.command-during-transfer"]
        assert "where the model says" in res.reason
    else:
        assert res.status == runner.AGREE, res.reason


def test_a_reused_board_trace_starts_as_a_fresh_one(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The interrupt intercept outlives ``system_reset``, so a reused board
    process does not send it again; its qtest trace must still start with
    it, or a reproducer written from a reused run would replay on a fresh
    QEMU without the line intercepted."""
    board = boards.by_name("zynq")
    if not arm_build.offers(board.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {board.machine}")
    img = tmp_path / "card.img"
    img.write_bytes(bytes(16 << 20))
    machine = Machine.for_board(board.name, image=CardImage(img))
    with QemuPool() as pool:
        t = pool.acquire(arm_build.binary, machine)
        fresh = list(t.trace)
        assert fresh and fresh[0].startswith("irq_intercept_")
        t.read(H.NORINTSTS.offset, 2)
        pool.release(t)
        u = pool.acquire(arm_build.binary, machine)
        assert u is t and list(u.trace) == fresh
        pool.release(u)


@pytest.mark.parametrize("board", boards.SDHCI_BOARDS, ids=lambda b: b.name)
def test_a_reused_board_process_starts_with_its_ram_zeroed(
        board_build: QemuBuild, board: boards.Board, tmp_path: Path) -> None:
    """What one run leaves in guest RAM is not there for the next: in every
    RAM region the board maps (main RAM, on-chip memories such as zynq's
    OCM), the model starts from zeros.  A board that allocates its RAM
    itself (smdkc210: no ``default_ram_id``) is never reused; the others
    are, and come back zeroed (explore-069 on smdkc210 and explore-054 on
    zynq followed stale ADMA descriptors before)."""
    if not board_build.offers(board.machine):
        pytest.skip(f"QEMU {board_build.name} has no machine type {board.machine}")
    why = check_boards.board_only_reason(board, board_build.profile)
    if why is not None:
        pytest.skip(why)
    img = tmp_path / "card.img"
    img.write_bytes(bytes(16 << 20))
    machine = Machine.for_board(board.name, image=CardImage(img))
    probes = [board.ram_base + (16 << 20), board.ram_base + machine.ram - 16,
              *(base + size - 16 for base, size in board.other_ram)]
    with QemuPool() as pool:
        t = pool.acquire(board_build.binary, machine)
        for addr in probes:
            t.mem_write(addr, b"\xa5" * 16)
            assert t.mem_read(addr, 16) == b"\xa5" * 16, hex(addr)
        pool.release(t)
        u = pool.acquire(board_build.binary, machine)
        reusable = reuse_key(board_build.binary, machine) is not None
        assert (u is t) == reusable and not (reusable and board.ram_own)
        for addr in probes:
            assert u.mem_read(addr, 16) == bytes(16), hex(addr)
        pool.release(u)
