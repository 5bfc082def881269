"""Every distinct behaviour change of a review, most harmful first.

The direct comparison runs on two golden models in lockstep (base the
reference, "patched" a model with rules broken on purpose: another CID, an
extra status bit, a lost block), so no QEMU build is needed: each change
is one difference of the run, the run goes on past each, and
``--first-only`` keeps only the first.  Grouping across runs, the harm
order, the model's word, a benchmark's failed check as a finding, and the
patch attribution by signature are checked on made-up results.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from harness.check.divergence import Divergence
from harness.check.lockstep import LockstepTarget
from harness.check.scoreboard import DATA, IDENTITY, STATUS, Difference, harm
from harness.check.step import Step
from harness.driver import HostDriver
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.qemu.builds import QemuBuild
from harness.review import cache, classify, direct, findings, report, run, wrap
from harness.review import props as P
from harness.review.direct import DIFFERS, DirectDifference, DirectResult
from harness.review.speed import Comparison
from harness.scenarios import Context, Scenario
from harness.target import Target

DMA = 0x0100_0000
LOST = 9  # the block the broken card lost


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(random.Random(3).randbytes(4 << 20))
    return p


class Patched(ModelTarget):
    """Three changes a guest sees: the CID's product revision (identity),
    Block Gap Event set in every NORINTSTS read (status), and block
    :data:`LOST` of the card reading zeros (data)."""

    def __init__(self, *a: Any, cid: bool = True, status: bool = True, data: bool = True,
                 **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.status = status
        card: Any = self.card
        if data:
            card.store.write(LOST * 512, bytes(512))
        if cid:
            reset = card.reset

            def other_prv() -> None:
                reset()
                cid_ = bytearray(card._cid)
                cid_[9] ^= 0x11
                card._cid = cid_
            card.reset = other_prv
            other_prv()

    def read(self, offset: int, size: int) -> int:
        v = super().read(offset, size)
        if self.status and offset <= H.NORINTSTS.offset < offset + size:
            v |= H.NIS_BLKGAP << (8 * (H.NORINTSTS.offset - offset))
        return v


def _scenario(t: Target, ctx: Context) -> None:
    d = HostDriver(t, dma_base=DMA)
    d.init()
    d.read_blocks(8, 4)  # PIO through the data port: block LOST differs


SC = Scenario("three-changes", "demo", _scenario)


def _context() -> Context:
    return Context(BuildProfile(version=(11, 1, 1)), "q35", "none")


def _direct(image: Path, limit: int, **kw: Any) -> DirectResult:
    res = DirectResult(SC.name, "q35", direct.SAME)
    base = ModelTarget(image=image)
    lock = LockstepTarget(base, Patched(image=image, **kw),
                          scoreboard=direct.DirectScoreboard(limit, base))
    direct.compare(res, lock, SC, _context())
    return res


def test_the_run_goes_on_past_each_change_and_keeps_each_once(image: Path) -> None:
    res = _direct(image, 16)
    assert res.status == DIFFERS
    harms = [d.harm for d in res.differences]
    assert harms[0] == STATUS and res.differences[0].first  # NORINTSTS after CMD0
    assert {IDENTITY, STATUS, DATA} <= set(harms), [d.signature for d in res.differences]
    assert len({d.signature for d in res.differences}) == len(res.differences)
    assert not any(d.first for d in res.differences[1:])
    assert "more distinct differences" in res.reason
    # the first difference's fields are a first-only run's
    assert res.step == res.differences[0].step and res.lines == res.differences[0].lines
    data = next(d for d in res.differences if d.harm == DATA)
    assert data.signature.startswith("result:BDATA") and "CMD18" in data.signature
    assert data.run_steps > data.step > res.step


def test_first_only_keeps_only_the_first_difference(image: Path) -> None:
    many, one = _direct(image, 16), _direct(image, 1)
    assert [d.signature for d in one.differences] == [many.differences[0].signature]
    assert one.reason == many.differences[0].reason.replace("difference", "first difference", 1)
    assert one.stopped == ""


def test_a_clean_pair_is_same(image: Path) -> None:
    res = _direct(image, 16, cid=False, status=False, data=False)
    assert res.status == direct.SAME and res.differences == []


def _row(key: str, diffs: list[DirectDifference]) -> classify.ReviewRow:
    name, machine = key.split("@")
    d = DirectResult(name, machine, DIFFERS, diffs[0].reason, differences=diffs)
    return classify.classify_one(key, classify.ModelEvidence("agree"),
                                 classify.ModelEvidence("diverge"), d)


def _diff(sig: str, first: bool, steps: int = 100) -> DirectDifference:
    step = Step(10, "read", (0x10, 4), 1, 0, False, False)
    d = Divergence(step, "result", [], signature=sig, sides=direct.BASE_PATCHED)
    return DirectDifference(Difference(d, sig, first, run_steps=steps),
                            traces=(f"/r/{sig[:5]}-base.sh", "/r/p.sh"))


CID = "result:RSPREG1.PRV | CMD2 ALL_SEND_CID | -"
BLKGAP = "result:NORINTSTS.BLKGAP | CMD17 READ_SINGLE_BLOCK | -"
BDATA = "result:BDATA.BDATA | CMD18 READ_MULTIPLE_BLOCK | -"
IRQ = "irq:model=R/1,qemu=/0 | CMD24 WRITE_BLOCK | -"


def _rows() -> list[classify.ReviewRow]:
    return [_row("a@q35", [_diff(CID, True, 300), _diff(BLKGAP, False), _diff(BDATA, False)]),
            _row("a@pc-q35-11.0", [_diff(CID, True, 300), _diff(BLKGAP, False)]),
            _row("b@q35", [_diff(CID, True, 50), _diff(IRQ, False)]),
            _row("c@q35", [_diff(BLKGAP, True, 80)])]


def test_findings_are_distinct_signatures_data_first_then_status_then_identity() -> None:
    got = findings.group(_rows())
    assert [f.signature for f in got] == [BDATA, BLKGAP, IRQ, CID]
    assert [f.harm for f in got] == [DATA, STATUS, STATUS, IDENTITY]
    cid = got[-1]
    assert len(cid.runs) == 3 and cid.first_in == 3
    assert (cid.example() or ("",))[0] == "b@q35"  # the shortest run
    blkgap = got[1]
    assert blkgap.first_in == 1 and (blkgap.example() or ("",))[0] == "c@q35"  # comes first


def test_the_model_word_per_finding() -> None:
    got = {f.signature: f for f in findings.group(_rows())}
    wc = findings.what_command
    base = {"a@q35": classify.ModelEvidence("diverge", "", (wc(BLKGAP),)),
            "b@q35": classify.ModelEvidence("diverge", "", (findings.swapped(wc(IRQ)),))}
    patched = {"a@q35": classify.ModelEvidence("diverge", "", (wc(BDATA), wc(BLKGAP))),
               "b@q35": classify.ModelEvidence("agree")}
    assert findings.judge(got[BDATA], base, patched) == findings.AGREES_BASE
    assert findings.judge(got[IRQ], base, patched) == findings.AGREES_PATCHED
    assert findings.judge(got[BLKGAP], base, patched) == findings.NEITHER
    assert findings.judge(got[CID], base, patched) == findings.NO_RULE
    assert findings.swapped("irq:model=R/1,qemu=/0 | x") == "irq:model=/0,qemu=R/1 | x"


def _build(name: str) -> QemuBuild:
    profile = BuildProfile(version=(11, 1, 1), machine_types=("pc-q35-11.1",),
                           sd_card_properties={}, sdhci_properties={}, has_qtest_accel=True)
    return QemuBuild(name, Path(f"/nonexistent/{name}"), profile, has_sdhci_pci=True)


def _review() -> run.Review:
    rv = run.Review(_build("base"), _build("patched"), title="demo")
    rv.rows = _rows()
    erase = Comparison("erase 64 MiB", "s", False, [7.0] * 5, [0.1] * 5,
                       note="patched's erase did not erase the range: block 131071 reads "
                       "b'\\x00'", failed={"patched": "the erase did not erase the range: "
                                                     "block 131071 reads b'\\x00'"},
                       reproducers=["/r/bench/erase-64m-patched.sh"])
    rv.speed = [erase]
    rv.findings = sorted(findings.group(rv.rows) + findings.from_bench(rv.speed),
                         key=findings.rank)
    return rv


def test_a_failed_benchmark_check_is_a_data_finding_with_its_reproducer() -> None:
    rv = _review()
    bench = [f for f in rv.findings if f.bench]
    assert len(bench) == 1 and bench[0].harm == DATA and not bench[0].runs
    assert [f.harm for f in rv.findings][:2] == [DATA, DATA]
    lines = [f.text for f in report.findings(rv)]
    assert "erase 64 MiB" in lines[1] and "/r/bench/erase-64m-patched.sh" in lines[1]
    assert not any(t.startswith("speed:") for t in lines)  # never only a speed remark
    both = Comparison("erase 64 MiB", "s", False, failed={"base": "x", "patched": "x"})
    assert findings.from_bench([both]) == []  # both builds fail alike: not the patch's


def test_the_report_lists_each_finding_with_its_evidence(tmp_path: Path) -> None:
    rv = _review()
    text = report.render(rv)
    lines = text.splitlines()
    assert lines[2] == "== Findings: 5 problems, 0 other changes"
    assert lines[3].startswith("1. PROBLEM: data: result:BDATA.BDATA | CMD18")
    assert "1 run (`a`), after earlier ones in 1" in lines[3]
    assert lines[4].startswith("2. PROBLEM: data: benchmark erase 64 MiB")
    assert lines[7].startswith("5. PROBLEM: identity: result:RSPREG1.PRV | CMD2")
    assert "3 runs (`a`, `b`), the first difference in 3" in lines[7]
    assert "irq:base=R/1,patched=/0" in text  # the sides named as a reviewer reads them
    assert "shortest: `b@q35` (50 steps), the run's first difference" in text
    assert "reproducers: base /r/resul-base.sh, patched /r/p.sh" in text
    report.write(rv, tmp_path)
    assert '"behaviour_findings"' in (tmp_path / "report.json").read_text()


def test_rows_take_their_earliest_findings_patch() -> None:
    rv = _review()
    by = {f.signature: f for f in rv.findings}
    by[CID].patch, by[BLKGAP].patch, by[IRQ].patch, by[BDATA].patch = "[1/3]", "[2/3]", \
        "[2/3]", "[3/3]"
    rv.props = [P.PropChange("sd-card", "x", P.ADDED, None, "on", False, {}, {}, "off",
                             ["d@q35"], "[2/3]")]
    rv.rows.append(classify.classify_one("d@q35", classify.ModelEvidence("agree"),
                                         classify.ModelEvidence("agree"),
                                         DirectResult("d", "q35", DIFFERS), "sd-card x=on"))
    run.rows_patches(rv, ["[1/3]", "[2/3]", "[3/3]"])
    assert {r.key: r.patch for r in rv.rows} == {"a@q35": "[1/3]", "a@pc-q35-11.0": "[1/3]",
                                                 "b@q35": "[1/3]", "c@q35": "[2/3]",
                                                 "d@q35": "[2/3]"}


def test_each_finding_is_the_first_patch_whose_build_shows_its_signature(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rv = _review()
    rv.findings = [f for f in rv.findings if not f.bench]
    shows = {"p1": {CID}, "p2": {CID, BLKGAP, IRQ}}  # the data bug: only the last build
    asked: list[tuple[str, list[tuple[str, str]]]] = []

    def fake_run_all(base: Any, step: Any, pairs: list[tuple[str, str]], jobs: int = 1,
                     report_dir: Any = None, limit: int = 16) -> list[DirectResult]:
        asked.append((str(step.binary), pairs))
        return [DirectResult(n, m, DIFFERS, differences=[
            _diff(s, i == 0) for i, s in enumerate(sorted(shows[str(step.binary)]))])
            for n, m in pairs]
    monkeypatch.setattr(run, "probe", lambda binary, name: _build_at(binary))
    monkeypatch.setattr(wrap, "seeded", lambda binary, d, g=(): binary)
    monkeypatch.setattr(direct, "run_all", fake_run_all)
    opts = run.ReviewOptions([], jobs=1, report_dir=tmp_path, bench=False)
    run.attribute(rv, [("[1/3]", Path("p1")), ("[2/3]", Path("p2")), ("[3/3]", Path("p3"))],
                  opts, lambda s: None)
    assert {f.signature: f.patch for f in rv.findings} == {
        CID: "[1/3]", BLKGAP: "[2/3]", IRQ: "[2/3]", BDATA: "[3/3]"}
    # each finding's shortest run only, each run once per build
    assert asked[0] == ("p1", [("a", "q35"), ("c", "q35"), ("b", "q35")])
    assert asked[1][1] == [("a", "q35"), ("c", "q35"), ("b", "q35")] or len(asked) == 2


def _build_at(binary: Path) -> QemuBuild:
    return dataclasses.replace(_build("step"), binary=binary)


def test_the_base_check_cache_keeps_what_differed(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(cache, "cache_dir", lambda: tmp_path)
    v = {"a@q35": classify.ModelEvidence("diverge", "why", (CID,))}
    k1, k16 = cache.key_of("d", [("a", "q35")], 1), cache.key_of("d", [("a", "q35")], 16)
    assert k1 != k16  # a first-only check is another check
    cache.store(k16, v)
    assert cache.load(k16) == v


def test_a_binary_rebuilt_in_place_gets_a_new_wrapper(tmp_path: Path) -> None:
    """What a build answers is kept by the file run: a wrapper of the same
    text kept the old build's answers after a rebuild in place."""
    binary = tmp_path / "qemu-system-x86_64"
    binary.write_bytes(b"old build")
    first = wrap.seeded(binary, tmp_path / "w", ["sd-card.spec_version=3"])
    old = first.read_text()
    binary.write_bytes(b"new build, same path")
    again = wrap.seeded(binary, tmp_path / "w", ["sd-card.spec_version=3"])
    assert again == first and again.read_text() != old and "# wrapped build: " in old


def test_one_what_one_patch_under_several_commands_is_one_summary_line() -> None:
    rv = _review()
    blkgap25 = BLKGAP.replace("CMD17 READ_SINGLE_BLOCK", "CMD25 WRITE_MULTIPLE_BLOCK")
    rv.rows.append(_row("e@q35", [_diff(blkgap25, False)]))
    rv.findings = findings.group(rv.rows)
    for f in rv.findings:
        f.patch = "[2/3]" if f.harm == STATUS else "[1/3]"
    lines = [f.text for f in report.findings(rv)]
    status = [t for t in lines if t.startswith("status:")]
    assert len(status) == 2, lines  # the interrupt events are another what
    assert status[0].startswith("status: result:NORINTSTS.BLKGAP in CMD17 READ_SINGLE_BLOCK, "
                                "CMD25 WRITE_MULTIPLE_BLOCK [[2/3]]: 4 runs")
    assert "decoded: [2] [4]" in status[0]
    assert len(rv.findings) == 5  # each signature is still a finding of its own


def test_guest_memory_read_back_different_is_data() -> None:
    assert harm("result:mem_read | CMD18 READ_MULTIPLE_BLOCK | -") == DATA
    assert harm("result:RSPREG1.RSP | ACMD2 (undefined) | ident") == IDENTITY
    assert harm(BLKGAP) == STATUS


def test_a_run_only_the_model_check_compared_takes_the_patch_of_its_difference() -> None:
    rv = _review()
    for f in rv.findings:
        f.patch = "[1/3]" if f.signature == CID else "[3/3]"
    row = classify.classify_one("migrate-idle@q35", classify.ModelEvidence("agree"),
                                classify.ModelEvidence("diverge", "",
                                                       (findings.what_command(CID),)),
                                None)
    rv.rows.append(row)
    run.rows_patches(rv, ["[1/3]", "[2/3]", "[3/3]"])
    assert row.category == classify.CHANGED and row.patch == "[1/3]"


def test_unstable_runs_are_checked_again_and_say_why(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """The issue's "48 unstable": patched's model check diverged where the
    builds answer alike because the model expects the seed series' CID of
    any build with ``erase-blocks-as-zero``; checked again, they stay
    unstable and name the property."""
    rv = _review()
    rv.props = [P.PropChange("sd-card", "erase-blocks-as-zero", P.ADDED, None, "on", True,
                             {}, {}, "", [], "")]
    same = {k: DirectResult(k.split("@")[0], "q35", direct.SAME) for k in ("u@q35", "v@q35")}
    ck = run.Checked({k: classify.ModelEvidence("agree") for k in same},
                     {k: classify.ModelEvidence("diverge", "RSPREG1 at CMD2") for k in same},
                     _build("patched"), "k", kept=True)
    agree, diverge = classify.ModelEvidence("agree"), classify.ModelEvidence("diverge")
    again = [{"u@q35": agree, "v@q35": diverge}, {"u@q35": diverge, "v@q35": diverge}]
    monkeypatch.setattr(run, "_check", lambda sides, pairs, opts, progress: again)
    monkeypatch.setattr(cache, "cache_dir", lambda: tmp_path)
    opts = run.ReviewOptions([], jobs=1, report_dir=tmp_path, bench=False)
    rows = {r.key: r for r in run._settle_unstable(rv, ck, same, {}, opts, lambda s: None)}
    assert rows["u@q35"].category == classify.UNSTABLE
    assert "sd-card erase-blocks-as-zero" in rows["u@q35"].note
    assert rows["v@q35"].category == classify.BOTH  # base's kept verdict did not hold
    assert "in 1 base's kept verdict did not hold" in rv.notes[-1]
    assert "1 still unstable" in rv.notes[-1]


def test_the_model_expects_the_series_cid_of_any_build_with_its_property(image: Path) -> None:
    """Why the issue's review had unstable runs: a build with the seed
    series' ``erase-blocks-as-zero`` property gets the series' CID (PRV
    2.0) from the model, though the rebuilt series had no CID hunk."""
    plain = BuildProfile(version=(11, 1, 1), sd_card_properties={})
    series = BuildProfile(version=(11, 1, 1),
                          sd_card_properties={"erase-blocks-as-zero": "false"})
    a: Any = ModelTarget(image=image, profile=plain).card
    b: Any = ModelTarget(image=image, profile=series).card
    assert not a.series and b.series and bytes(a._cid) != bytes(b._cid)


def test_wrong_data_one_patch_brings_is_one_summary_line() -> None:
    """The data port, DMA memory and a benchmark's own check are three
    views of one patch's data bug: one problem line (each decoded apart)."""
    rv = _review()
    memory = BDATA.replace("result:BDATA.BDATA", "result:mem_read")
    rv.rows.append(_row("e@q35", [_diff(memory, False)]))
    rv.findings = sorted(findings.group(rv.rows) + findings.from_bench(rv.speed),
                         key=findings.rank)
    for f in rv.findings:
        f.patch = "[3/3]" if f.harm == DATA else "[1/3]"
    lines = [f.text for f in report.findings(rv)]
    data = [t for t in lines if t.startswith("data:")]
    assert len(data) == 1, lines
    assert data[0].startswith("data: result:BDATA.BDATA in CMD18 READ_MULTIPLE_BLOCK; "
                              "result:mem_read in CMD18 READ_MULTIPLE_BLOCK; benchmark erase")
    assert "[[3/3]]: 2 runs" in data[0] and "decoded: [1] [2] [3]" in data[0]
    # without a patch named, each what stays its own line
    for f in rv.findings:
        f.patch = ""
    assert len([f for f in report.findings(rv) if f.text.startswith("data:")]) == 3
