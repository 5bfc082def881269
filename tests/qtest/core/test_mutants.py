"""The mutant catalogue and the guards of ``sdqtest mutants`` (the proofs
themselves need a QEMU tree and a build: ``sdqtest mutants --qemu-src``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.bisect import mutants


def test_catalogue_is_well_formed() -> None:
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) == len(set(names))
    for m in mutants.MUTANTS:
        assert m.anchor and m.anchor != m.replacement
        assert m.path.startswith("hw/sd/")
        assert "--group" in m.check_args or "--scenario" in m.check_args
        # every promise of the check that a mutant stands for is named
        assert "#11 item" in m.stands_for or "#41 item" in m.stands_for


def test_an_anchor_must_occur_exactly_once() -> None:
    m = mutants.MUTANTS[0]
    assert mutants.applicable(m, f"x {m.anchor} y")
    assert not mutants.applicable(m, "nothing here")
    assert not mutants.applicable(m, f"{m.anchor}\n{m.anchor}")


def test_first_finding_names_the_failing_result() -> None:
    out = "[11.1 q35] pio-read-7: DIVERGE\n  divergence in pio-read-7 at step 4: ...\n"
    assert mutants.first_finding(out).startswith("[11.1 q35] pio-read-7: DIVERGE")
    assert mutants.first_finding("all agree\n") == ""


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)


class _Stop(Exception):
    """Raised by :func:`_builder_kwargs`'s builder: ``prove`` goes no further."""


def _commit(tree: Path, *paths: str) -> None:
    """``paths`` written in ``tree`` (made a git tree first if it is none) and committed."""
    for p in paths:
        (tree / p).parent.mkdir(parents=True, exist_ok=True)
        (tree / p).write_text("a\n")
    if not (tree / ".git").exists():
        _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")


def _builder_kwargs(tree: Path, build: Path, m: mutants.Mutant, tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """What ``prove`` asks of the tree builder for mutant ``m`` in ``build``."""
    made: list[dict[str, object]] = []

    class FakeBuilder:
        def __init__(self, **kw: object) -> None:
            made.append(kw)
            raise _Stop

    monkeypatch.setattr(mutants, "QemuTreeBuilder", FakeBuilder)
    with pytest.raises(_Stop), open(tmp_path / "log", "w") as log:
        mutants.prove(tree, build, (m,), log, tmp_path / "r")
    return made[0]


def test_refuses_a_tree_that_is_not_git_or_has_local_changes(tmp_path: Path) -> None:
    tree = tmp_path / "qemu"
    (tree / "hw" / "sd").mkdir(parents=True)
    for m in mutants.MUTANTS:
        (tree / m.path).write_text(m.anchor + "\n")
    with pytest.raises(mutants.MutantError, match="not a git tree"):
        mutants.prove(tree, tmp_path / "b", mutants.MUTANTS, open(tmp_path / "log", "w"),
                      tmp_path / "r")
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (tree / mutants.MUTANTS[0].path).write_text("local change\n")
    with pytest.raises(mutants.MutantError, match="local changes"):
        mutants.prove(tree, tmp_path / "b", mutants.MUTANTS, open(tmp_path / "log", "w"),
                      tmp_path / "r")


def test_a_check_that_stops_on_the_mutant_catches_it() -> None:
    # a QEMU that dies at start, or a driver error that stops the check, is red
    # for a packager: caught, with the line that says why
    assert mutants.verdict(3, "sdqtest: QEMU error: QEMU exited at start with status -11") \
        == "caught"
    assert mutants.verdict(2, "sdqtest: error: ACMD41: CMD55(0x0) ... [CMDTOUT]") == "caught"
    assert mutants.verdict(124, "check did not finish in 600 s") == "timed out"
    # an explained difference in a clean run is no finding
    clean = "[10.2.2] boundary-sdma-4k: SDMA read of 9 blocks: data differs from the image\n"
    assert mutants.verdict(0, clean) == "MISSED (exit 0)"
    assert mutants.first_finding(clean + "[10.2.2 q35] x: DIVERGE\n") == "[10.2.2 q35] x: DIVERGE"


def test_failing_groups_read_the_summary_table() -> None:
    out = ("group           10.2.2\n--------------  ------\ncommands        9 agree, 1 DIVERGE\n"
           "data            34 agree\nexplore         79 agree, 1 CRASH\n")
    assert mutants.failing_groups(out) == "commands: 1 DIVERGE; explore: 1 CRASH"
    x86 = tuple(m for m in mutants.MUTANTS if mutants.target(m) == mutants.X86)
    assert mutants.baseline_args(x86)[0] == "--group"


def test_reach_mutants_name_their_kind_and_the_group_that_replays_it() -> None:
    from harness.bisect.mutants_reach import REACH
    from harness.explore import reach

    assert len({m.name for m in REACH}) == len(REACH)
    kinds = {m.stands_for.split("kind ")[1].rstrip(")") for m in REACH}
    # one regression per kind; restart is issue #43's (mutants_cve)
    assert kinds == set(reach.goal()) - {"restart"}
    for m in REACH:
        assert m.path.startswith("hw/sd/") and m.anchor != m.replacement
        assert m.check_args in (("--group", "explore"), ("--group", "migration"))


def test_cve_mutants_apply_once_to_the_sources_and_name_their_group() -> None:
    """Issue #43's regressions: one edit each, where the kind's group runs."""
    from pathlib import Path

    from harness.bisect.mutants import applicable
    from harness.bisect.mutants_cve import CVE

    assert len({m.name for m in CVE}) == len(CVE)
    assert {m.check_args[1] for m in CVE} == {"explore", "restart", "migration"}
    src = Path.home() / ".cache/sdqtest/source/11.1.1/src"
    for m in CVE:
        assert m.path.startswith("hw/sd/") and m.anchor != m.replacement
        if (src / m.path).is_file():  # Debian's 11.1.1 source, where it is unpacked
            assert applicable(m, (src / m.path).read_text()), m.name
def _mutant(path: str, *args: str) -> mutants.Mutant:
    return mutants.Mutant("m-" + path.rsplit("/", 1)[-1], "test", path, "a", "b", args, "")


def test_a_board_mutant_is_checked_on_aarch64() -> None:
    by_name = {m.name: m for m in mutants.MUTANTS}
    # named by its check's --board, or by a file only ARM SoCs compile
    for name in ("pl181-response3-keeps-end-bit", "allwinner-descriptor-keeps-own",
                 "aspeed-info-reset-sticks"):
        assert mutants.target(by_name[name]) == mutants.AARCH64
    assert mutants.target(by_name["capareg-default-drops-high-speed"]) == mutants.X86
    assert mutants.target(_mutant("hw/sd/sd.c", "--group", "spi", "--board",
                                  "lm3s6965evb")) == mutants.AARCH64
    assert mutants.target(_mutant("hw/sd/cadence_sdhci.c", "--group", "x")) == mutants.RISCV64
    # an ARM file's mutant that names no board runs on the default check's boards
    from harness.check.boards import DEFAULT_BOARDS

    m = _mutant("hw/sd/pl181.c", "--group", "mmci")
    assert mutants.check_args(m) == ("--group", "mmci", "--board", ",".join(DEFAULT_BOARDS))
    assert mutants.check_args(by_name["sd-spec-version-default-2"]) == ("--group", "compat")


def test_baseline_runs_pool_the_x86_groups_and_keep_each_board_check() -> None:
    runs = mutants.baseline_runs(mutants.MUTANTS)
    assert runs[0] == (mutants.X86, ("--group", "compat,data,interrupts,registers"))
    assert runs[1:] == [  # each distinct board check once, on its emulator
        *dict.fromkeys((mutants.AARCH64, m.check_args) for m in mutants.MUTANTS
                       if mutants.target(m) == mutants.AARCH64),
        *dict.fromkeys((mutants.RISCV64, m.check_args) for m in mutants.MUTANTS
                       if mutants.target(m) == mutants.RISCV64)]
    only_arm = tuple(m for m in mutants.MUTANTS if "pl181" in m.name)
    assert mutants.baseline_runs(only_arm) == [(mutants.AARCH64, only_arm[0].check_args)]


def test_prove_builds_arm_and_gives_each_check_its_emulator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "qemu"
    (tree / "hw" / "sd").mkdir(parents=True)
    chosen = (_mutant("hw/sd/sdhci.c", "--group", "data"),
              _mutant("hw/sd/pl181.c", "--group", "mmci", "--board", "vexpress-a9"),
              _mutant("hw/sd/cadence_sdhci.c", "--group", "registers"),
              _mutant("hw/sd/omap_mmc.c", "--board", "sx1"))
    for m in chosen[:3]:  # this tree has no omap_mmc.c
        (tree / m.path).write_text("a\n")
    _commit(tree)
    made: list[dict[str, object]] = []
    checked: list[tuple[str, tuple[str, ...]]] = []

    class FakeBuilder:
        retry_configure = True

        def __init__(self, **kw: object) -> None:
            made.append(kw)

        def build(self, src: Path, commit: str, log: object, timeout: float) -> object:
            return type("R", (), {"ok": True, "binary": tmp_path / "qemu-system-x86_64"})()

    def fake_check(binary: Path, args: tuple[str, ...], *_: object) -> tuple[int, str]:
        checked.append((binary.name, args))
        caught = len(checked) > 4 and (tree / "hw/sd/pl181.c").read_text() == "b\n"
        return (1, "mmci   1 DIVERGE\n") if caught else (0, "all agree")

    monkeypatch.setattr(mutants, "QemuTreeBuilder", FakeBuilder)
    monkeypatch.setattr(mutants, "run_check", fake_check)
    with open(tmp_path / "log", "w") as log:
        out = mutants.prove(tree, tmp_path / "b", chosen, log, tmp_path / "r",
                            say=open(tmp_path / "say", "w"))
    assert made[0]["arm"] is True and made[0]["x86"] is True and made[0]["riscv"] is True
    assert [o.status for o in out] == ["agrees", "MISSED (exit 0)", "caught",
                                       "MISSED (exit 0)", "not applicable"]
    assert "0 times" in out[4].detail
    assert checked == [("qemu-system-x86_64", ("--group", "data")),
                       ("qemu-system-aarch64", chosen[1].check_args),
                       ("qemu-system-aarch64", chosen[3].check_args),
                       ("qemu-system-riscv64", chosen[2].check_args),
                       ("qemu-system-x86_64", ("--group", "data")),
                       ("qemu-system-aarch64", chosen[1].check_args),
                       ("qemu-system-riscv64", chosen[2].check_args)]
    # each baseline run's output is kept apart
    assert (tmp_path / "r" / "baseline").is_dir()
    assert all((tree / m.path).read_text() == "a\n" for m in chosen[:3])


def test_an_x86_set_builds_no_arm_target(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "qemu"
    _commit(tree, "hw/sd/sd.c")
    made = _builder_kwargs(tree, tmp_path / "b", _mutant("hw/sd/sd.c", "--group", "data"),
                           tmp_path, monkeypatch)
    assert made["arm"] is False and made["x86"] is True
    _commit(tree, "hw/sd/pl181.c")
    made = _builder_kwargs(tree, tmp_path / "b", _mutant("hw/sd/pl181.c", "--board", "x"),
                           tmp_path, monkeypatch)
    assert made["arm"] is True and made["x86"] is False  # the boards alone: no x86


def test_a_build_dir_that_already_makes_more_emulators_keeps_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A board mutant on a coverage build of three targets: the build stays
    configured as it is (no reconfigure for aarch64 alone), gcov included;
    a build that lacks an emulator the set needs is configured for the set."""
    import json

    tree = tmp_path / "qemu"
    _commit(tree, "hw/sd/pl181.c")
    build = tmp_path / "b"
    build.mkdir()
    stamp = build / ".sdqtest-configure.json"
    board = _mutant("hw/sd/pl181.c", "--board", "x")
    for targets, want in (
            ("x86_64-softmmu,aarch64-softmmu,riscv64-softmmu", (True, True, True)),
            ("x86_64-softmmu", (False, True, False))):
        stamp.write_text(json.dumps({"flags": [f"--target-list={targets}", "--enable-gcov"]}))
        made = _builder_kwargs(tree, build, board, tmp_path, monkeypatch)
        assert (made["x86"], made["arm"], made["riscv"]) == want
        assert made["coverage"] is True


def test_a_tree_builder_makes_the_emulators_asked_for() -> None:
    from harness.provision.build import QemuTreeBuilder

    def b(**kw: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        t = QemuTreeBuilder(build_dir=Path("/nonexistent"), **kw)
        return t.system_targets, t.binaries

    assert b() == (("x86_64-softmmu",), ("qemu-system-x86_64",))
    assert b(arm=True) == (("x86_64-softmmu", "aarch64-softmmu"),
                           ("qemu-system-x86_64", "qemu-system-aarch64"))
    assert b(arm=True, x86=False) == (("aarch64-softmmu",), ("qemu-system-aarch64",))
    assert b(x86=False) == (("x86_64-softmmu",), ("qemu-system-x86_64",))  # never nothing


def test_the_board_mutants_apply_to_qemu_11_1_1() -> None:
    """Each anchor of a board mutant occurs once in Debian's 11.1.1 source,
    where ``sdqtest qemu build 11.1.1 --fetch-only`` unpacks it."""
    from harness.paths import cache_dir

    src = cache_dir() / "source" / "11.1.1" / "src"
    if not (src / "hw" / "sd").is_dir():
        pytest.skip(f"no QEMU 11.1.1 source at {src} (sdqtest qemu build 11.1.1 --fetch-only)")
    for m in mutants.MUTANTS:
        if mutants.target(m) == mutants.AARCH64:
            assert mutants.applicable(m, (src / m.path).read_text()), m.name


def test_every_mutants_check_is_a_request_of_the_session(tmp_path: Path) -> None:
    """The check runs in-process: each mutant's arguments (and the automatic
    mutants') become a check request, on the mutant's binary."""
    from harness.bisect import automut

    arg_sets = {mutants.check_args(m) for m in mutants.MUTANTS}
    arg_sets |= {automut.CHECK_ARGS, automut.board_check_args()}
    for args in arg_sets:
        rq = mutants.check_request(Path("/b/qemu"), args, tmp_path)
        assert rq.qemu == ("/b/qemu",) and rq.report_dir == tmp_path
        if "--group" in args:
            assert rq.groups == tuple(args[args.index("--group") + 1].split(","))
        assert rq.no_boards == ("--no-boards" in args)
        assert (rq.boards is not None) == ("--board" in args)
    with pytest.raises(mutants.UsageError, match="--bogus"):
        mutants.check_request(Path("/b/qemu"), ("--bogus",), tmp_path)


def test_a_check_past_its_time_is_timed_out(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    def slow(rq: object, progress: Callable[[str], None]) -> object:
        progress("one run done")
        raise AssertionError("the deadline did not stop the check")

    monkeypatch.setattr(mutants.session, "run", slow)
    rc, out = mutants.run_check(Path("/b/qemu"), ("--group", "data"), tmp_path, -1.0)
    assert (rc, out) == (124, "check did not finish in -1 s")
    assert mutants.verdict(rc, out) == "timed out"
