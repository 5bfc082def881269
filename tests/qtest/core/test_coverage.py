"""The gcov reader, on a toy program laid out like a meson build of QEMU.

The counts are known from the program itself (a loop of three, a function
never called, a branch taken one way), not from the reader's output.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check import coverage
from harness.hwdefs.boards import BOARDS

TOY = """\
static int twice(int x)
{
    return 2 * x;
}

int never_called(int x)
{
    return x + 1;
}

int main(int argc, char **argv)
{
    int sum = 0;
    for (int i = 0; i < 3; i++) {
        sum += twice(i);
    }
    if (argc > 5) {
        sum = never_called(sum);
    }
    return sum == 6 ? 0 : 1;
}
"""

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("gcov") is None,
                                reason="needs gcc and gcov (apt-get install gcc)")


def _toy_build(tmp_path: Path, run: bool) -> Path:
    """``src/hw/sd/toy.c`` and ``src/hw/misc/other.c`` built in ``build/``
    with meson's object naming (``libsystem.a.p/hw_sd_toy.c.o``)."""
    src = tmp_path / "src" / "hw" / "sd"
    src.mkdir(parents=True)
    (src / "toy.c").write_text(TOY)
    other = tmp_path / "src" / "hw" / "misc"
    other.mkdir(parents=True)
    (other / "other.c").write_text("int other(void) { return 1; }\n")
    build = tmp_path / "build"
    objs = build / "libsystem.a.p"
    objs.mkdir(parents=True)
    for rel, obj in (("hw/sd/toy.c", "hw_sd_toy.c.o"), ("hw/misc/other.c", "hw_misc_other.c.o")):
        subprocess.run(["gcc", "--coverage", "-O0", "-c", f"../src/{rel}",
                        "-o", f"libsystem.a.p/{obj}"], cwd=build, check=True)
    subprocess.run(["gcc", "--coverage", "-o", "qemu-system-x86_64",
                    "libsystem.a.p/hw_sd_toy.c.o", "libsystem.a.p/hw_misc_other.c.o"],
                   cwd=build, check=True)
    if run:
        subprocess.run([str(build / "qemu-system-x86_64")], cwd=build, check=True)
    return build


@pytest.fixture(scope="module")
def toy_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _toy_build(tmp_path_factory.mktemp("toy"), run=True)


def test_counts_of_a_known_program(toy_build: Path) -> None:
    cb = coverage.CoverageBuild(toy_build)
    assert [p.name for p in cb.notes()] == ["hw_sd_toy.c.gcno"]  # hw/misc is not measured
    cov = cb.measure()
    assert list(cov.files) == ["hw/sd/toy.c"]
    toy = cov.files["hw/sd/toy.c"]
    lines = TOY.splitlines()
    body_of_twice = lines.index("    return 2 * x;") + 1
    body_of_never = lines.index("    return x + 1;") + 1
    assert toy.lines[body_of_twice] == 3
    assert toy.lines[body_of_never] == 0
    assert toy.functions["twice"].calls == 3
    assert not toy.functions["never_called"].executed
    assert [fn.name for _, fn in cov.never_executed()] == ["never_called"]
    # 'if (argc > 5)' went one way only
    if_line = next(i for i, t in enumerate(lines, 1) if "argc > 5" in t)
    assert sorted(c > 0 for c in toy.branches[if_line]) == [False, True]
    assert ("hw/sd/toy.c", body_of_twice) in cov.lines_hit()
    assert ("hw/sd/toy.c", body_of_never) not in cov.lines_hit()


def test_reset_starts_at_zero_and_unrun_build_reads_as_zero(toy_build: Path,
                                                             tmp_path: Path) -> None:
    shutil.copytree(toy_build, tmp_path / "build")
    shutil.copytree(toy_build.parent / "src", tmp_path / "src")
    cb = coverage.CoverageBuild(tmp_path / "build")
    assert cb.counts()
    cb.reset()
    assert not cb.counts()
    toy = cb.measure().files["hw/sd/toy.c"]
    assert toy.lines and toy.lines_hit == 0


def test_html_without_gcovr_is_refused_before_the_run(
        toy_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTML report is gcovr's: without gcovr, --html is a usage error
    raised before any check runs or any count is reset."""
    from harness.check import coverage_merge
    from harness.commands import coverage as command
    from harness.commands.common import parse_one
    from harness.errors import UsageError

    shutil.copytree(toy_build, tmp_path / "build")
    cb = coverage.CoverageBuild(tmp_path / "build")
    counts = sorted(p.name for p in cb.counts())
    monkeypatch.setattr(coverage_merge, "gcovr_command", lambda: None)
    args = parse_one(command.register, ["coverage", str(tmp_path / "build"),
                                        "--html", str(tmp_path / "html")])
    with pytest.raises(UsageError, match="gcovr is not installed"):
        command.run(args)
    assert sorted(p.name for p in cb.counts()) == counts and counts
    assert not (tmp_path / "html").exists()


def test_not_a_coverage_build(tmp_path: Path) -> None:
    with pytest.raises(coverage.CoverageError, match="enable-gcov"):
        coverage.CoverageBuild(tmp_path)


def test_tree_relative_paths() -> None:
    assert coverage.tree_relative("../../src/qemu-10.2.2/hw/sd/sd.c") == "hw/sd/sd.c"
    assert coverage.tree_relative("hw/sd/sdhci.c") == "hw/sd/sdhci.c"
    assert coverage.tree_relative("../include/hw/sd/sd.h") == "hw/sd/sd.h"
    assert coverage.tree_relative("../hw/misc/x.c") is None


def test_two_binaries_of_one_build_add_to_the_same_counts(tmp_path: Path) -> None:
    """QEMU builds hw/sd once (libsystem) into both system emulators: a run of
    either adds to one .gcda, which is how ``coverage`` merges x86 and ARM runs."""
    build = _toy_build(tmp_path, run=False)
    subprocess.run(["gcc", "--coverage", "-o", "qemu-system-aarch64",
                    "libsystem.a.p/hw_sd_toy.c.o", "libsystem.a.p/hw_misc_other.c.o"],
                   cwd=build, check=True)
    cb = coverage.CoverageBuild(build)
    assert cb.arm_binary == build / "qemu-system-aarch64"
    for exe in ("qemu-system-x86_64", "qemu-system-aarch64"):
        subprocess.run([str(build / exe)], cwd=build, check=True)
    f = cb.measure().files["hw/sd/toy.c"]
    assert f.functions["main"].calls == 2 and f.functions["twice"].calls == 6


def _fn(name: str, start: int, end: int, hit: bool) -> coverage.FunctionCoverage:
    return coverage.FunctionCoverage(name, start, end, int(hit), end - start + 1,
                                     end - start + 1 if hit else 0)


def test_the_reachable_set_takes_the_boards_in_when_they_ran() -> None:
    """sdhci-pci alone cannot reach the sysbus variant: left out; with the
    boards measured it is reachable (zynq), so its unrun lines count against."""
    f = coverage.FileCoverage("hw/sd/sdhci.c")
    for fn, hit in ((_fn("sdhci_read", 1, 4, True), True),
                    (_fn("sdhci_sysbus_realize", 10, 13, False), False)):
        f.functions[fn.name] = fn
        f.lines.update({n: int(hit) for n in range(fn.start, fn.end + 1)})
    cov = coverage.Coverage({"hw/sd/sdhci.c": f})
    assert coverage.reachable_rows(cov) == [["hw/sd/sdhci.c", "4/4", "100.0%", "1"]]
    assert coverage.reachable_rows(cov, boards=True) == [["hw/sd/sdhci.c", "4/8", "50.0%", "0"]]
    assert coverage.out_of_reach("hw/sd/sdhci.c", "sdhci_sysbus_realize") is not None
    assert coverage.out_of_reach("hw/sd/sdhci.c", "sdhci_sysbus_realize", boards=True) is None
    for o in coverage.OUT_OF_REACH:  # every board named is one the project drives
        assert all(b in {x.name for x in BOARDS} or b == "emmc groups" for b in o.boards), o
