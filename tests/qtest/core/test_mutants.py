"""The mutant catalogue and the guards of ``sdqtest mutants`` (the proofs
themselves need a QEMU tree and a build: ``sdqtest mutants --qemu-src``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.bisect import mutants


def test_catalogue_is_well_formed() -> None:
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) == len(set(names))
    for m in mutants.MUTANTS:
        assert m.anchor and m.anchor != m.replacement
        assert m.path.startswith("hw/sd/")
        assert m.check_args[0] == "--group" and m.check_args[1]
        # every promise of the check that a mutant stands for is named
        assert "#11 item" in m.stands_for


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
    assert mutants.baseline_args(mutants.MUTANTS)[0] == "--group"


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
