"""Coverage of several gcov builds merged, on the toy program of
``test_coverage``: two trees of the same source, each built for gcov and run
its own way (as an x86_64/aarch64 tree and a riscv64 tree would be).

The merged counts are known from the program: one run with no argument in
each tree, so ``twice`` is called 3 times per run; a third run with six
arguments in the second tree takes the ``argc > 5`` branch and calls
``never_called`` once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.check import coverage, coverage_merge
from tests.qtest.core.test_coverage import TOY, _toy_build

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("gcov") is None,
                                reason="needs gcc and gcov (apt-get install gcc)")


def _tree(where: Path, emulator: str, argv: list[str]) -> coverage.CoverageBuild:
    """A toy tree at ``where`` whose build holds ``emulator``, run with each
    of ``argv`` (one run per entry; an entry is the number of arguments)."""
    build = _toy_build(where, run=False)
    (build / "qemu-system-x86_64").rename(build / emulator)
    info = build / "meson-info"
    info.mkdir()
    (info / "meson-info.json").write_text(json.dumps(
        {"directories": {"source": str(where / "src"), "build": str(build)}}))
    (where / "src" / "hw" / "sd" / "absent.c").write_text("int absent(void) { return 0; }\n")
    for n in argv:
        subprocess.run([str(build / emulator), *["x"] * int(n)], cwd=build, check=False)
    return coverage.CoverageBuild(build)


def _line(text: str) -> int:
    return TOY.splitlines().index(text) + 1


@pytest.fixture(scope="module")
def two_trees(tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[coverage.CoverageBuild, coverage.CoverageBuild]:
    base = tmp_path_factory.mktemp("merge")
    return (_tree(base / "a", "qemu-system-aarch64", ["0"]),
            _tree(base / "r", "qemu-system-riscv64", ["0", "6"]))


def test_counts_of_two_trees_add_up(
        two_trees: tuple[coverage.CoverageBuild, coverage.CoverageBuild]) -> None:
    a, r = two_trees
    assert coverage_merge.emulators(a) == {"aarch64": a.build_dir / "qemu-system-aarch64"}
    assert list(coverage_merge.emulators(r)) == ["riscv64"]
    ma, mr = a.measure(), r.measure()
    merged = coverage_merge.merge([ma, mr])
    toy = merged.files["hw/sd/toy.c"]
    assert toy.lines[_line("    return 2 * x;")] == 3 + 6
    assert toy.lines[_line("    return x + 1;")] == 1          # only the riscv64 tree's
    assert toy.functions["main"].calls == 3
    assert toy.functions["never_called"].executed
    if_line = _line("    if (argc > 5) {")
    assert all(c > 0 for c in toy.branches[if_line])            # each tree one way
    assert not all(c > 0 for c in ma.files["hw/sd/toy.c"].branches[if_line])
    # the inputs are not changed by the merge
    assert ma.files["hw/sd/toy.c"].lines[_line("    return 2 * x;")] == 3


def test_every_file_of_the_tree_is_listed(
        two_trees: tuple[coverage.CoverageBuild, coverage.CoverageBuild]) -> None:
    a, r = two_trees
    root = coverage_merge.source_root(a)
    assert root == a.build_dir.parent / "src"
    files = coverage_merge.tree_files(root)
    assert files == ["hw/sd/absent.c", "hw/sd/toy.c"]
    merged = coverage_merge.merge([a.measure(), r.measure()])
    assert coverage_merge.not_built(merged, files) == ["hw/sd/absent.c"]


def test_different_sources_are_not_merged(tmp_path: Path) -> None:
    a = coverage.FileCoverage("hw/sd/x.c", tmp_path / "a.c", {1: 1})
    b = coverage.FileCoverage("hw/sd/x.c", tmp_path / "b.c", {1: 1})
    (tmp_path / "a.c").write_text("int a;\n")
    (tmp_path / "b.c").write_text("int a;\n")
    merged = coverage_merge.merge([coverage.Coverage({"hw/sd/x.c": a}),
                                   coverage.Coverage({"hw/sd/x.c": b})])
    assert merged.files["hw/sd/x.c"].lines == {1: 2}
    (tmp_path / "b.c").write_text("int b;\n")
    with pytest.raises(coverage.CoverageError, match="different sources"):
        coverage_merge.merge([coverage.Coverage({"hw/sd/x.c": a}),
                              coverage.Coverage({"hw/sd/x.c": b})])


@pytest.mark.skipif(coverage_merge.gcovr_command() is None,
                    reason="gcovr not installed (pip install 'sdqtest[bench]')")
def test_gcovr_merges_the_trees_into_html_and_cobertura(
        two_trees: tuple[coverage.CoverageBuild, coverage.CoverageBuild],
        tmp_path: Path) -> None:
    index, xml = coverage_merge.gcovr_report(list(two_trees), tmp_path / "out", "toy")
    assert index.is_file() and "toy.c" in index.read_text()
    lines = {int(e.get("number", 0)): int(e.get("hits", 0))
             for e in ET.parse(xml).getroot().iter("line")}
    assert lines[_line("    return 2 * x;")] == 9
    assert lines[_line("    return x + 1;")] == 1
    files = {e.get("filename") for e in ET.parse(xml).getroot().iter("class")}
    assert files == {"hw/sd/toy.c"}                               # hw/misc is not measured


def test_each_emulator_runs_its_part_of_the_default_check() -> None:
    """The default check's boards with the default check's groups (no
    ``explore``, icicle its ``registers`` and ``drivers`` only: docs/boards.md), the 32-bit
    ARM boards on qemu-system-aarch64 (a coverage build has no
    qemu-system-arm); named boards and ``all`` as ``check --board``."""
    from harness.check.boards import DEFAULT_BOARDS
    from harness.commands import coverage as command
    from harness.errors import UsageError
    from harness.hwdefs.boards import BOARDS

    x86 = Path("/b/qemu-system-x86_64")
    assert command.board_runs("x86_64", x86, "default") == [["check", "--qemu", str(x86)]]
    arm = Path("/b/qemu-system-aarch64")
    run, ast = command.board_runs("aarch64", arm, "default")
    # the Aspeed wrapper's own registers and the real driver's recording there
    assert ast[:4] == ["check", "--board", "ast2600", "--group"]
    assert sorted(ast[4].split(",")) == ["drivers", "registers"]
    assert ast[5:] == ["--allow-skips", "--qemu", str(arm)]
    assert run[:2] == ["check", "--board"] and run[3] == "--group"
    assert run[5:] == ["--allow-skips", "--qemu", str(arm)]
    names = run[2].split(",")
    assert {"zynq", "vexpress-a9", "sx1", "raspi3b"} <= set(names) <= set(DEFAULT_BOARDS)
    assert "icicle" not in names and "ast2600" not in names
    groups = run[4].split(",")
    assert {"data", "registers", "spi", "mmci"} <= set(groups)
    assert not {"explore", "compat", "migration"} & set(groups)
    # the user's own selection after '--': every group of the boards, theirs chosen
    (mine,) = command.board_runs("aarch64", arm, "default", chosen=True)
    assert mine[:2] == ["check", "--board"] and mine[3:] == ["--qemu", str(arm)]
    assert sorted(mine[2].split(",")) == sorted([*names, "ast2600"])
    assert command.board_runs("aarch64", arm, "ast2600")[0][2] == "ast2600"
    assert command.board_runs("aarch64", arm, "vexpress-a9") == [
        ["check", "--board", "vexpress-a9", "--qemu", str(arm)]]
    riscv = Path("/b/qemu-system-riscv64")
    icicle, sifive = command.board_runs("riscv64", riscv, "default")
    assert icicle == ["check", "--board", "icicle", "--group", "drivers,registers",
                      "--allow-skips", "--qemu", str(riscv)]  # and its real driver
    assert sifive[:3] == ["check", "--board", "sifive_u"] and "spi" in sifive[4].split(",")
    # a board of another emulator is not run on this one
    on_riscv = [b.name for b in BOARDS if b.binary == riscv.name]
    assert "icicle" in on_riscv
    assert command.board_runs("riscv64", riscv, "ast2600") == []
    assert command.board_runs("riscv64", riscv, "all") == [
        ["check", "--board", ",".join(on_riscv), "--qemu", str(riscv)]]
    assert "icicle" not in command.board_runs("aarch64", arm, "all")[0][2].split(",")
    with pytest.raises(UsageError, match="no board named nope"):
        command.board_runs("aarch64", arm, "nope")
    assert command._chosen(["--group=data"]) and command._chosen(["--scenario", "x"])
    assert not command._chosen(["-j", "2"])


def test_the_command_reports_the_merged_trees(
        two_trees: tuple[coverage.CoverageBuild, coverage.CoverageBuild], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from harness.commands import coverage as command
    from harness.commands.common import parse_one

    a, r = two_trees
    gcovr = coverage_merge.gcovr_command() is not None
    args = parse_one(command.register, ["coverage", str(a.build_dir), str(r.build_dir),
                                        "--no-run", "--json", str(tmp_path / "c.json"),
                                        *(["--html", str(tmp_path / "html")] if gcovr else [])])
    assert command.run(args) == 0
    out = capsys.readouterr().out
    assert "(aarch64, riscv64)" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.startswith("hw/sd/")}
    assert rows["hw/sd/absent.c"] == ["not", "built"]
    hit, total = rows["hw/sd/toy.c"][0].split("/")
    assert hit == total != "0"              # the merged trees ran every line, ...
    assert a.measure().files["hw/sd/toy.c"].lines_hit < int(total)  # ... one alone did not
    toy = json.loads((tmp_path / "c.json").read_text())["files"]["hw/sd/toy.c"]
    assert toy["lines_hit"] == toy["lines"]          # together the trees ran every line
    if gcovr:
        assert (tmp_path / "html" / "index.html").is_file()
        assert (tmp_path / "html" / "coverage.xml").is_file()
