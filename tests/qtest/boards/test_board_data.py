"""The board table, the board machine description, what a board run skips, and
the model's board-only behaviour (no QEMU)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.check import boards as check_boards
from harness.check import session
from harness.check.lockstep import TRACKERS, tracker_for
from harness.check.session import CheckRequest
from harness.check.transfer import CommandTracker
from harness.driver.layout import DRIVER_LAYOUTS, HOSTS, StandardLayout, layout_for
from harness.hwdefs import boards
from harness.hwdefs import sdhci as H
from harness.machine import CardImage, Machine
from harness.model.board_targets import TARGETS, model_target_for
from harness.model.target import CONTROLLERS, ModelTarget
from harness.profile import NEWEST, parse_version
from harness.qemu.argv import qemu_argv
from harness.scenarios import all_scenarios
from harness.scenarios.registry import Scenario

#: The newest build's profile with the boards' machine types (an ARM build's).
ARM = replace(NEWEST, machine_types=tuple(sorted(b.machine for b in boards.BOARDS)))


def test_board_table_names_are_unique_and_found() -> None:
    names = [b.name for b in boards.BOARDS]
    assert len(set(names)) == len(names)
    for b in boards.BOARDS:
        assert boards.by_name(b.name) is b
        assert boards.board_for(boards.run_key(b)) is b
        assert boards.machine_type(boards.run_key(b)) == b.machine
        assert b in boards.boards_of(b.machine)
        assert b.source and b.notes
        assert b.irq.kind in ("in", "out")
    with pytest.raises(KeyError, match="unknown board 'nope'"):
        boards.by_name("nope")
    assert boards.board_for("q35") is None
    assert boards.machine_type("q35") == "q35"


def test_raspi3b_has_two_boards_named_apart_in_runs() -> None:
    """raspi3b's SDHCI keeps the machine type as its runs' name; its SDHOST board's
    runs are named by the board (hw/arm/bcm2835_peripherals.c builds both)."""
    sdhci, sdhost = boards.boards_of("raspi3b")
    assert (sdhci.name, sdhost.name) == ("raspi3b", "raspi3b-sdhost")
    assert boards.run_key(sdhci) == "raspi3b" and boards.board_for("raspi3b") is sdhci
    assert boards.run_key(sdhost) == "raspi3b-sdhost"
    assert boards.board_for("raspi3b-sdhost") is sdhost
    assert sdhost.variant == sdhost.group == boards.by_name("raspi2b").variant
    from harness.qemu.builds import QemuBuild

    arm = QemuBuild("11.1-arm", Path("/c/11.1-arm/bin/qemu-system-aarch64"),
                    replace(ARM, machine_types=("raspi3b",)))
    assert check_boards.machines_for(arm, ["raspi3b", "raspi3b-sdhost"]) == \
        ["raspi3b", "raspi3b-sdhost"]
    sc = next(s for s in all_scenarios().values() if s.group == "sdhost")
    assert check_boards.on_its_bus(sc, "raspi3b-sdhost")
    assert not check_boards.on_its_bus(sc, "raspi3b")
    assert "raspi3b-sdhost" not in check_boards.DEFAULT_BOARDS


def test_board_machine_round_trips_and_builds_its_command_line(tmp_path: Path) -> None:
    img = tmp_path / "card.img"
    m = Machine.for_board("zynq", card={"spec_version": 2}, image=CardImage(img))
    assert m.type == "xilinx-zynq-a9" and m.bar0 == 0xE010_0000
    assert dict(m.sdhci_props) == {"sd-spec-version": 2, "capareg": 0x69EC0080}
    assert Machine.loads(m.dumps()) == m
    argv = qemu_argv("qemu-system-arm", m)
    assert argv[argv.index("-machine") + 1] == "xilinx-zynq-a9"
    assert f"if=sd,index=0,id=sdcard,file={img},format=raw" in argv
    assert "sd-card.spec_version=2" in argv
    assert "-device" not in argv  # the board makes its own controller and card
    assert "board" not in Machine().to_json()  # a PC machine's JSON is unchanged


def test_board_machine_refuses_what_the_board_does_not_have() -> None:
    with pytest.raises(ValueError, match="machine type xilinx-zynq-a9"):
        Machine(type="q35", board="zynq")
    with pytest.raises(ValueError, match="own generic-sdhci"):
        Machine(type="xilinx-zynq-a9", board="zynq", card_kind="emmc")
    with pytest.raises(ValueError, match="unknown board"):
        Machine(type="q35", board="nope")


def test_board_names_expand_and_check() -> None:
    assert check_boards.board_names([]) == [b.name for b in boards.BOARDS]
    assert check_boards.board_names(["all"]) == [b.name for b in boards.BOARDS]
    assert check_boards.board_names(["raspi3b,zynq"]) == ["zynq", "raspi3b"]
    with pytest.raises(KeyError):
        check_boards.board_names(["zynq", "pc"])


def test_groups_that_need_a_pc_are_skipped_with_their_reason() -> None:
    scs = all_scenarios()
    v11 = NEWEST
    why = {name: check_boards.skip_reason(sc, "xilinx-zynq-a9", v11) for name, sc in scs.items()}
    for name, sc in scs.items():
        if sc.group in ("compat", "migration"):
            assert "pc machine types" in str(why[name])
        elif sc.group == "drivers":  # a recording runs where it was made
            assert ("pc machine types" in str(why[name])) != bool(sc.params.get("board"))
            assert why[name]
        elif sc.group == "spi":
            assert "SPI mode" in str(why[name])
        elif sc.group in boards.OWN_GROUPS:  # another board controller's own group
            assert "--board" in str(why[name])
        elif sc.card == "emmc":
            assert "creates its own SD card" in str(why[name])
        elif sc.params.get("variant"):  # another controller's own registers
            assert "own registers" in str(why[name])
        elif sc.sdhci and sc.sdhci != {"sd-spec-version": 2}:
            assert "sdhci-pci properties" in str(why[name])
        else:
            assert why[name] is None, name
    assert all(check_boards.skip_reason(sc, "q35", v11) is None for sc in scs.values()
               if sc.group not in boards.OWN_GROUPS and not sc.params.get("variant")
               and not sc.params.get("board"))


def test_a_controllers_own_registers_run_on_its_boards_only() -> None:
    """A scenario naming a controller variant runs on the boards with that
    controller and is skipped, with the boards named, everywhere else."""
    scs = all_scenarios()
    for name, variant in (("usdhc-vendor-registers", "usdhc"), ("npcm-vendor-window", "npcm")):
        sc = scs[name]
        assert sc.params["variant"] == variant
        for b in boards.BOARDS:
            why = check_boards.skip_reason(sc, b.machine, NEWEST)
            if b.variant == variant:
                assert why is None, (name, b.name)
            else:
                assert why is not None, (name, b.name)
        assert "only" in str(check_boards.skip_reason(sc, "q35", NEWEST))


def test_raspi_on_qemu_7_2_is_not_run_and_every_layout_is_modelled() -> None:
    raspi = boards.by_name("raspi3b")
    old = replace(ARM, version=parse_version("7.2.22"))
    assert "named GPIO" in str(check_boards.board_only_reason(raspi, old))
    for b in boards.BOARDS:  # S3C, Nuvoton and uSDHC included
        assert check_boards.board_only_reason(b, NEWEST) is None, b.name


def test_every_controller_variant_has_a_model_a_tracker_and_a_driver() -> None:
    """Each ``Board.variant`` (and the PC's ``sdhci``) is bound in each
    per-variant registry: an SDHCI layout has its controller model, the
    SDHCI command tracker and the SDHCI driver (its layout); any other
    controller its own model target, tracker and host driver, and a
    scenario group of its own."""
    groups = {sc.group for sc in all_scenarios().values()}  # every group's host imported
    for v in sorted(boards.VARIANTS):
        board = next((b for b in boards.BOARDS if b.variant == v), None)
        if v in CONTROLLERS:
            assert v not in TARGETS and v not in TRACKERS and v not in HOSTS, v
            assert model_target_for(board) is ModelTarget
            assert isinstance(tracker_for(board, None), CommandTracker)
            assert isinstance(layout_for(board), DRIVER_LAYOUTS.get(v, StandardLayout))
        else:
            assert v in TARGETS and v in TRACKERS and v in HOSTS, v
            assert board is not None and board.group in groups, v
            assert model_target_for(board) is TARGETS[v]
            assert type(tracker_for(board, None)) is TRACKERS[v]
    assert set(DRIVER_LAYOUTS) <= set(CONTROLLERS)


def test_a_registry_refuses_an_unknown_or_doubly_bound_variant() -> None:
    reg: boards.ByVariant[int] = boards.ByVariant("test entry")
    with pytest.raises(ValueError, match="no board has a 'nosuch' controller"):
        reg.controller("nosuch")
    reg.controller("pl181")(1)
    with pytest.raises(ValueError, match="bound twice"):
        reg.controller("pl181")(2)
    assert reg["pl181"] == 1 and "spi" not in reg
    with pytest.raises(KeyError, match="none for the 'spi' controller"):
        reg["spi"]


def _norintsts(t: ModelTarget) -> int:
    return t.read(H.NORINTSTS.offset, 2)


def test_model_pending_insert_quirk_fires_once_after_power_on() -> None:
    """hw/sd/sdhci.c: with pending-insert-quirk (the Pi's), the first enable of
    Card Insertion status after a power-on reset latches Card Insertion; a
    Software Reset For All does not re-arm it; sdhci-pci has no such quirk."""
    pi = ModelTarget(Machine.for_board("raspi3b", image=CardImage.null(16 << 20)), profile=ARM)
    assert _norintsts(pi) == 0
    pi.write(H.NORINTSTSEN.offset, 2, H.NIS_CARDINS)
    assert _norintsts(pi) & H.NIS_CARDINS
    pi.write(H.NORINTSTS.offset, 2, H.NIS_CARDINS)
    pi.write(H.NORINTSTSEN.offset, 2, 0)
    pi.write(H.NORINTSTSEN.offset, 2, H.NIS_CARDINS)
    assert not _norintsts(pi) & H.NIS_CARDINS  # once only
    pi.write(H.SWRST.offset, 1, H.SWRST_ALL)
    pi.write(H.NORINTSTSEN.offset, 2, H.NIS_CARDINS)
    assert not _norintsts(pi) & H.NIS_CARDINS  # a software reset does not re-arm it
    pc = ModelTarget(Machine(image=CardImage.null(16 << 20)))
    pc.write(H.NORINTSTSEN.offset, 2, H.NIS_CARDINS)
    assert not _norintsts(pc) & H.NIS_CARDINS


def test_zynq_model_reports_the_board_capabilities() -> None:
    """hw/arm/xilinx_zynq.c: capareg 0x69ec0080 and spec 2.00 (HCVER 0x..01)."""
    t = ModelTarget(Machine.for_board("zynq", image=CardImage.null(16 << 20)), profile=ARM)
    assert t.read(H.CAPAB.offset, 4) == 0x69EC0080
    assert t.read(H.HCVER.offset, 2) & 0xFF == 1


def _request(*argv: str) -> CheckRequest:
    """The check request of ``sdqtest check ARGV``."""
    from harness import cli
    from harness.commands import check

    return check.request(cli.build_parser().parse_args(["check", *argv]))


@pytest.mark.parametrize("argv, env, runs_boards", [
    ((), {}, True),
    (("--group", "data"), {}, True),
    (("--no-boards",), {}, False),
    (("--qemu", "11.1"), {}, False),
    ((), {"QTEST_QEMU_BINARY": "/usr/bin/qemu-system-x86_64"}, False),
    (("--machine", "pc"), {}, False),
    (("--strict",), {}, False),
])
def test_the_default_check_runs_the_modelled_boards(
        monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...], env: dict[str, str],
        runs_boards: bool) -> None:
    """With no build named (as ``./sdqtest check`` runs), the check also
    runs the boards the model mirrors on the installed ARM builds; naming a
    build, a machine type, strict mode or ``--no-boards`` leaves them out."""
    monkeypatch.delenv("QTEST_QEMU_BINARY", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(session, "select_board_builds", lambda specs: ["7.2-arm", "11.1-arm"])
    selected = list(all_scenarios().values())
    picked = session.board_selection(_request(*argv), selected)
    assert bool(picked.builds) is runs_boards
    if runs_boards:
        assert picked.names == ["zynq", "raspi3b", "mcimx7d", "quanta-gbs", "lm3s6965evb",
                                "vexpress-a9", "orangepi-pc", "raspi2b", "sx1", "icicle",
                                "sifive_u", "ast2600"] == list(check_boards.DEFAULT_BOARDS)
        assert picked.paired  # each board its bus's scenarios
        assert picked.default == (not argv)  # and icicle, ast2600 their registers group only


def _in_the_default_check(name: str) -> tuple[list[Scenario], set[str]]:
    """The default check's board scenarios, and the names of those board ``name``
    runs there (of its bus, in its default groups)."""
    lib = check_boards.default_scenarios(list(all_scenarios().values()), chosen=False)
    machine = boards.by_name(name).machine
    return lib, {sc.name for sc in lib if check_boards.in_default(sc, machine)
                 and check_boards.on_its_bus(sc, machine)}


def test_icicle_runs_its_registers_and_drivers_groups_only_by_default() -> None:
    """The default check runs the Cadence board's registers group (its HRS
    scenarios and the SDHCI's register scenarios) and its real driver's
    recording, not the library the generic SDHCI already gets on zynq;
    ``--board icicle`` runs it all."""
    lib, kept = _in_the_default_check("icicle")
    assert {"cadence-host-registers", "cadence-software-reset"} <= kept
    assert {sc.group for sc in lib if sc.name in kept} == {"registers", "drivers"}
    assert {sc.params.get("board") for sc in lib if sc.name in kept
            and sc.group == "drivers"} == {"icicle"}
    zynq = boards.by_name("zynq").machine
    assert all(check_boards.in_default(sc, zynq) for sc in lib)


def test_every_controller_file_of_hw_sd_has_a_board_in_the_default_check() -> None:
    """Each controller file of hw/sd is behind at least one board of the
    default check, and that board runs the scenarios of the file's own
    registers there (the Aspeed wrapper's on ast2600, the Cadence HRS on
    icicle), and on ast2600 the real driver's recording, which goes through
    the wrapper."""
    variants = {boards.by_name(n).variant for n in check_boards.DEFAULT_BOARDS}
    assert {"pl181", "omap-mmc", "allwinner", "sdhost", "cadence", "aspeed", "npcm",
            "usdhc"} <= variants
    lib, kept = _in_the_default_check("ast2600")
    assert {"aspeed-wrapper-registers", "linux-6.1.0-sdhci-of-aspeed-ast2600-evb"} <= kept
    assert {sc.group for sc in lib if sc.name in kept} == {"registers", "drivers"}


def test_the_default_board_scenarios_leave_out_pc_emmc_and_explore() -> None:
    """The whole library on a board less what can never run there and the
    explore corpus; a selection the user made is kept as made."""
    lib = list(all_scenarios().values())
    got = check_boards.default_scenarios(lib, chosen=False)
    groups = {sc.group for sc in got}
    assert groups and not groups & {"compat", "migration", "explore"}
    assert all(sc.card == "sd-card" for sc in got)
    assert {"data", "commands", "registers", "interrupts"} <= groups
    explore = [sc for sc in lib if sc.group == "explore"]
    assert check_boards.default_scenarios(explore, chosen=True) == explore


def test_the_default_check_without_arm_builds_runs_the_pc_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ARM builds that cannot be installed leave the boards out with a note;
    the x86 check is not lost for them."""
    from harness.errors import SdqtestError

    def fail(specs: object) -> list[object]:
        raise SdqtestError("apt-get failed")

    monkeypatch.delenv("QTEST_QEMU_BINARY", raising=False)
    monkeypatch.setattr(session, "select_board_builds", fail)
    picked = session.board_selection(_request(), list(all_scenarios().values()))
    assert not picked.builds and "apt-get failed" in picked.note


def test_state_a_reset_keeps_is_a_ledger_entry() -> None:
    """A board the pool never reuses says why, with the ledger's word for it."""
    from harness.ledger import entry
    for b in boards.BOARDS:
        if b.reset_keeps:
            assert entry(b.reset_keeps).key == b.reset_keeps, b.name


def test_a_board_is_not_reported_as_not_run_on_a_build_of_another_target() -> None:
    """With ARM and RISC-V builds both selected, icicle is not "not run" on
    the ARM build nor zynq on the RISC-V one; with only a build of another
    target, the board still gets its line (nothing else would say why)."""
    from harness.qemu.builds import QemuBuild

    arm = QemuBuild("11.1-arm", Path("/c/11.1-arm/bin/qemu-system-aarch64"),
                    replace(ARM, machine_types=("xilinx-zynq-a9",)))
    riscv = QemuBuild("11.1-riscv", Path("/c/11.1-riscv/bin/qemu-system-riscv64"),
                      replace(ARM, machine_types=("microchip-icicle-kit",)))
    assert check_boards.not_run([arm, riscv], ["zynq", "icicle"]) == []
    only_arm = check_boards.not_run([arm], ["zynq", "icicle"])
    assert len(only_arm) == 1 and "board icicle" in only_arm[0]
    assert check_boards.binary_family("qemu-system-arm") == "arm"


def test_a_riscv_board_line_is_a_board_line() -> None:
    """A finding on icicle replays on the RISC-V builds as a board's command
    line (its ``-drive if=sd`` kept), not on the PC builds."""
    from harness.replay import rewrite

    assert rewrite.is_arm(["/c/11.1-riscv/bin/qemu-system-riscv64", "-M", "microchip-icicle-kit"])
    assert not rewrite.is_arm(["qemu-system-x86_64"])
