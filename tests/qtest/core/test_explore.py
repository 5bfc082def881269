"""The model-driven search (issue #19): tracer, probes, search, tables, corpus group."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from harness.driver.host import HostDriver
from harness.driver.ops import CARD_BLOCKS, DMA_BASE, PROBED, apply, generate, mutate
from harness.explore import report, search, tables
from harness.explore.search import Entry, ModelRunner, bare, cover
from harness.explore.tracer import MODEL_DIR, ArcTracer, CoverageTracer, CTracerArcs
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.scenarios import REGISTRY
from harness.scenarios import explore as group

SETUP = {"op": "setup", "freq": 400_000}
INIT = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}


class Spy:
    """A Target wrapper recording register accesses."""

    def __init__(self, inner: ModelTarget) -> None:
        self.inner = inner
        self.reads: list[tuple[int, int]] = []
        self.writes: list[tuple[int, int, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read(self, offset: int, size: int) -> int:
        self.reads.append((offset, size))
        return self.inner.read(offset, size)

    def write(self, offset: int, size: int, value: int) -> None:
        self.writes.append((offset, size, value))
        self.inner.write(offset, size, value)


def _model() -> ModelTarget:
    r = ModelRunner(trace=False)
    return ModelTarget(r.machine, image=r.image)


def test_probe_reads_every_side_effect_free_register_and_cmd13_on_request() -> None:
    spy = Spy(_model())
    d = HostDriver(spy, timeout_steps=16)  # type: ignore[arg-type]
    apply(d, spy, SETUP)  # type: ignore[arg-type]
    apply(d, spy, INIT)  # type: ignore[arg-type]
    spy.reads.clear()
    spy.writes.clear()
    apply(d, spy, {"op": "probe", "status": False})  # type: ignore[arg-type]
    read = {off for off, _ in spy.reads}
    assert H.BDATA.offset not in read  # reading it would move data
    for reg in PROBED:
        assert reg.offset in read, reg.name
    assert not spy.writes  # a probe without status changes nothing
    apply(d, spy, {"op": "probe", "status": True})  # type: ignore[arg-type]
    cmds = [v >> 8 & 0x3F for off, size, v in spy.writes if off == H.CMDREG.offset]
    assert cmds == [13]


def test_tracers_record_model_arcs_only() -> None:
    r = ModelRunner(trace=False)
    for tracer in (ArcTracer(), CoverageTracer(), CTracerArcs()):
        with tracer:
            r.run([SETUP], probes=False)
        assert tracer.arcs
        assert all(name.startswith(MODEL_DIR) for name, _, _ in tracer.arcs)
        # the controller's register write dispatch ran (sdhci.py)
        assert any(name.endswith("sdhci.py") for name, _, _ in tracer.arcs)


def test_the_direct_c_tracer_records_what_coverage_records() -> None:
    ops = [SETUP, INIT, {"op": "rw", "read": True, "block": 3, "count": 2, "bs": 512,
                         "mode": "adma2", "stop": "auto", "pio_access": 4, "skew": 0,
                         "boundary": 4096, "max_segment": 512}]
    got = []
    for tracer in (CoverageTracer(), CTracerArcs()):
        r = ModelRunner(snapshots=0)
        r.tracer = tracer
        r.run(ops)
        got.append(tracer.arcs)
    assert got[0] == got[1] and got[0]


def test_a_run_forked_from_a_snapshot_ends_as_a_fresh_run() -> None:
    rng = random.Random(11)
    inputs = [generate(random.Random(f"11:{i}"), 8) for i in range(6)]
    inputs += [mutate(rng, inputs[i % 6], inputs, max_len=10) for i in range(8)]
    fresh, forked = ModelRunner(snapshots=0), ModelRunner()
    for ops in inputs:
        a = fresh.run(ops)
        arcs = fresh.tracer.arcs
        b = forked.run(ops, keep=True)
        assert (a.ops, a.ok, a.why) == (b.ops, b.ok, b.why)
        assert {f for f in a.features if not search.is_arc(f)} == \
            {f for f in b.features if not search.is_arc(f)}
        assert forked.tracer.arcs == arcs
    assert forked.forked  # the mutations started from snapshots


def test_a_run_records_probes_and_states() -> None:
    run = ModelRunner().run([SETUP, INIT])
    assert run.ok
    assert [o["op"] for o in run.ops] == ["setup", "probe", "init", "probe"]
    assert run.ops[1]["status"] is False  # idle card: CMD13 not accepted (PLS 4.10.1)
    assert run.ops[3]["status"] is True   # transfer state: it is
    states = [f for f in run.features if not search.is_arc(f) and f[0] == "state"]
    assert {f[1] for f in states} == {"setup", "init"}
    assert any(search.is_arc(f) for f in run.features)


def test_acmd22_before_a_write_is_reuse_dependent_and_not_kept() -> None:
    acmd22 = {"op": "cmd", "index": 22, "arg": 0, "app": True,
              "data": {"read": True, "bs": 4, "count": 1, "mode": "pio"}}
    write = {"op": "cmd", "index": 24, "arg": 0, "app": False,
             "data": {"read": False, "bs": 512, "count": 1, "mode": "pio"}}
    r = ModelRunner(trace=False)
    before = r.run([SETUP, INIT, acmd22], probes=False)
    assert not before.ok and before.why.startswith("ReuseDependent")
    assert r.run([SETUP, INIT, write, acmd22], probes=False).ok


def test_search_is_a_function_of_the_seed() -> None:
    a, fa, sa = search.search(7, count=5, plateau=5, with_tables=False)
    b, fb, sb = search.search(7, count=5, plateau=5, with_tables=False)
    assert [e.ops for e in a] == [e.ops for e in b]
    assert fa == fb
    assert a, "five inputs on a fresh map keep at least one"
    c, _, _ = search.search(8, count=5, plateau=5, with_tables=False)
    assert [e.ops for e in c] != [e.ops for e in a]
    for e in a:  # what was kept still reaches what it was kept for
        assert ModelRunner().run(bare(e.ops)).features >= set()
        assert len(bare(e.ops)) <= search.MAX_OPS + 2


def test_cover_keeps_every_feature_with_fewer_inputs() -> None:
    f = [("arc", "x", i, i + 1) for i in range(6)]
    es = [Entry(0, [], 1, 0, frozenset(f[:2])), Entry(1, [], 1, 0, frozenset(f[1:3])),
          Entry(2, [], 1, 0, frozenset(f[:4])), Entry(3, [], 1, 0, frozenset(f[4:]))]
    got = cover(es)
    assert [e.index for e in got] == [2, 3]
    assert set().union(*(e.features for e in got)) == set(f)


def test_cover_spends_its_limit_on_arcs_the_library_does_not_take() -> None:
    """With the library's arcs known, the one pick a limit of 1 allows is the
    input bringing the arc nothing else takes, not the one with the most."""
    f = [("arc", "x", i, i + 1) for i in range(6)]
    es = [Entry(0, [], 1, 0, frozenset(f[:5])), Entry(1, [], 1, 0, frozenset(f[4:]))]
    assert [e.index for e in cover(es, 1)] == [0]
    assert [e.index for e in cover(es, 1, known=frozenset(f[:5]))] == [1]


def test_tables_cover_every_command_in_every_state_and_address_bounds() -> None:
    cs = tables.command_states()
    specs = [c for t in (S.SD_COMMANDS, S.SD_APP_COMMANDS) for c in t.values()
             if not c.reserved]
    assert len(cs) == len(specs) * len(tables.STATE_PREFIXES)
    last = [i[-1] for i in tables.address_bounds()]
    for index in tables.ADDRESSED:
        args = {o["arg"] for o in last if o["index"] == index}
        assert args == {(CARD_BLOCKS - 1) * 512, CARD_BLOCKS * 512}
    fields = tables.register_fields()
    blkgap = [i[-1]["value"] for i in fields if i[-1]["off"] == H.BLKGAP.offset]
    assert 0 in blkgap and 1 in blkgap


def test_corpus_inputs_become_scenarios_of_the_explore_group(tmp_path: Path) -> None:
    corpus = tmp_path / "c.json"
    ops = [SETUP, {"op": "probe", "status": False}, INIT]
    corpus.write_text(json.dumps({"seed": 1, "inputs": [
        {"name": "explore-test-only-1", "index": 4, "new": 2, "ops": ops}]}))
    try:
        assert group.register(corpus) == 1
        sc = REGISTRY["explore-test-only-1"]
        assert sc.group == group.GROUP
        spy = Spy(_model())
        sc.fn(spy, None)  # type: ignore[arg-type]
        assert spy.reads  # it drove the target
    finally:
        REGISTRY.pop("explore-test-only-1", None)


def test_committed_corpus_replays_on_the_model() -> None:
    data = group.load()
    assert data["inputs"], "the explore group has a corpus"
    r = ModelRunner(trace=False)
    for e in data["inputs"][:5]:
        assert r.run(bare(e["ops"])).ok, e["name"]


def test_report_combines_scenario_and_explore_branches() -> None:
    def rep(executed: list[list[int]], missing: list[list[int]]) -> dict[str, Any]:
        fn = {"executed_branches": executed, "missing_branches": missing}
        return {"files": {f"{MODEL_DIR}/sdcard.py": {"functions": {"SDCard.f": fn}}}}

    regions = report.combine(rep([[1, 2]], [[1, 3], [4, 5]]), rep([[1, 2], [1, 3]], [[4, 5]]))
    (r,) = regions
    assert r.branches == {(1, 2), (1, 3), (4, 5)}
    assert r.scenarios == {(1, 2)} and r.explore == {(1, 3)} and r.never == {(4, 5)}
    text = report.render(regions)
    assert "never 1" in text and "line 4 -> line 5" in text


def test_start_leaves_the_transfer_running_and_pio_moves_its_data() -> None:
    model = _model()
    d = HostDriver(model, timeout_steps=16)
    apply(d, model, SETUP)
    apply(d, model, INIT)
    apply(d, model, {"op": "start", "index": 17, "bs": 512, "count": 1, "offset": 0,
                     "block": 2, "mode": "pio", "auto12": False, "blkcnt_en": True,
                     "boundary": 0})
    prnsts = model.read(H.PRNSTS.offset, 4)
    assert prnsts & H.PRNSTS_BUFRDRDY and prnsts & H.PRNSTS_DATINHIBIT  # SDHC 2.2.9
    apply(d, model, {"op": "pio", "write": False, "n": 128, "size": 4})
    assert model.read(H.NORINTSTS.offset, 2) & H.NIS_TRNSCMPL
    assert not model.read(H.PRNSTS.offset, 4) & H.PRNSTS_DATINHIBIT


def test_tables_reset_every_phase_and_size_every_offset() -> None:
    rs = tables.resets_in_phases()
    assert len({json.dumps(i) for i in rs}) == len(rs)  # no input twice
    assert {i[-1].get("what") for i in rs} >= {H.SWRST_ALL, H.SWRST_CMD, H.SWRST_DAT}
    so = tables.sizes_and_offsets()
    assert {(i[2]["bs"], i[2]["offset"]) for i in so} == {
        (b, o) for b in tables.BLOCK_SIZES for o in tables.OFFSETS}


def test_variant_inputs_carry_their_machine_into_the_group(tmp_path: Path) -> None:
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps({"seed": 1, "inputs": [
        {"name": "explore-test-only-2", "index": 1, "new": 1, "variant": "sdhci-v3",
         "sdhci": {"sd-spec-version": 3}, "sd_card": {}, "ops": [SETUP]}]}))
    try:
        group.register(corpus)
        assert REGISTRY["explore-test-only-2"].sdhci == {"sd-spec-version": 3}
    finally:
        REGISTRY.pop("explore-test-only-2", None)
    m = search.variant_machine("sdhci-v3")
    assert dict(m.sdhci_props) == {"sd-spec-version": 3}


def _run_ops(ops: list[dict[str, Any]], profile: Any = None) -> ModelTarget:
    runner = ModelRunner(trace=False) if profile is None else ModelRunner(profile, trace=False)
    d = runner._fresh()
    for op in ops:
        apply(d, d.target, op)
    model: ModelTarget = d.target  # type: ignore[assignment]
    return model


def test_lock_table_locks_the_card_and_a_bare_forced_erase_unlocks_it() -> None:
    """PLS 4.3.7: set a password, lock while replacing it; 4.3.7.3: the
    forced erase is the flags byte alone (CMD16(1)), which clears the
    password and the lock (QEMU >= 9.1 takes a 512-byte block: ``pad``)."""
    locked = _run_ops(tables.STATE_PREFIXES["locked"])
    card: Any = locked.card
    assert card.locked and card.pwd == tables._PWD_B
    erase = {"op": "lock", "flags": S.LOCK_ERASE, "pwd": "", "pwd_len": None, "pad": True,
             "bare": True}
    card = _run_ops([*tables.STATE_PREFIXES["locked"], erase]).card
    assert not card.locked and card.pwd == b""
    two_bytes = dict(erase, bare=False)  # flags and PWD_LEN: refused
    assert _run_ops([*tables.STATE_PREFIXES["locked"], two_bytes]).card.locked


def test_csd_operation_sets_temporary_write_protection_and_a_write_sees_it() -> None:
    """CMD27 with the CSD read by CMD9 and TMP_WRITE_PROTECT set (PLS 5.3):
    CMD24's R1 reports WP_VIOLATION (QEMU then writes anyway on the builds
    of ledger ``sd.wp-write-proceeds``); a flipped read-only byte is
    refused with CSD_OVERWRITE."""
    wp = {"op": "csd", "set": 0x10, "clear": 0, "flip": None}
    d = ModelRunner(trace=False)._fresh()
    for op in (SETUP, INIT, wp):
        apply(d, d.target, op)
    card: Any = d.target.card
    assert card.csd[14] & 0x10 and not card.card_status & S.CSD_OVERWRITE
    r = d.cmd(24, 8 * 512, data=_one_block())
    assert r.r1 & S.WP_VIOLATION
    flipped: Any = _run_ops([SETUP, INIT, {"op": "csd", "set": 0x10, "clear": 0, "flip": 0}])
    assert flipped.card.csd[14] & 0x10 == 0
    assert flipped.card.card_status & S.CSD_OVERWRITE


def _one_block() -> Any:
    from harness.driver.results import Mode, Transfer

    return Transfer(read=False, block_size=512, block_count=1, mode=Mode.PIO, data=bytes(512))


def test_a_probe_asks_acmd22_where_the_written_block_count_changed() -> None:
    run = ModelRunner(trace=False).run([SETUP, INIT, tables._write(1), tables._write(2)])
    probes = [o for o in run.ops if o["op"] == "probe"]
    assert [bool(p.get("written")) for p in probes] == [False, False, True, True]
    states = sorted((f for f in run.features if f[1] == "rw"), key=str)
    assert len(states) == 2  # written-block count 1 and 2: two abstract states


def test_an_input_safe_on_the_newest_profile_may_not_be_on_7_2() -> None:
    """After CMD16(1), the newest profile's CMD25 (CMD23 first, 3 blocks of
    1895 bytes) clears the written-block count and 7.2's refuses it before
    doing so: ACMD22 then reads what a reused 7.2 carried over (found as
    ``explore-067`` diverging inside the group only), so it is not kept."""
    acmd22 = {"op": "cmd", "index": 22, "arg": 0, "app": True,
              "data": {"read": True, "bs": 4, "count": 1, "mode": "pio"}}
    write = {"op": "rw", "read": False, "block": 25, "count": 3, "bs": 1895, "mode": "adma2",
             "stop": "cmd23", "pio_access": 2, "skew": 0, "boundary": 524288,
             "max_segment": 65536}
    ops = [SETUP, dict(INIT, block_len=1), write, acmd22]
    assert ModelRunner(trace=False).run(ops, probes=False).ok
    assert not search.reuse_safe(search.explore_machine(), ops)
    assert search.reuse_safe(search.explore_machine(), [SETUP, INIT, tables._write(1), acmd22])


def test_report_classes_machine_construction_and_branches_into_a_raise(tmp_path: Path) -> None:
    path = str(Path(MODEL_DIR) / "sdcard.py")
    why, out = report.classify(path, 1, "SDCard.__init__")
    assert out and why.startswith("machine construction")
    src = tmp_path / "rule.py"
    src.write_text("def rule(x):\n    if x > 3:\n        raise ValueError('bad x')\n"
                   "    return x\n")
    why, out = report.classify(str(src), 2, "rule", 3)
    assert out and "raises" in why
    why, out = report.classify(str(src), 2, "rule", 4)
    assert not out and why.startswith("unknown")


def test_report_classes_the_strict_side_of_a_deviation_only_where_qemus_side_ran(
        tmp_path: Path) -> None:
    """A branch on the spec-following side of ``if self.qemu(key)`` (its
    ``else``, the statements after a body that returns, the body of ``if
    not self.qemu(key)`` or of ``if strict``) is out of the default check's
    reach only when the ``if`` ran and never went that way."""
    src = tmp_path / "rule.py"
    src.write_text("def rule(self, x):\n"            # 1
                   "    if self.qemu('k'):\n"        # 2
                   "        return 1\n"              # 3
                   "    if x:\n"                     # 4
                   "        return 2\n"              # 5
                   "    return 3\n"                  # 6
                   "def other(self, strict, x):\n"   # 7
                   "    if strict:\n"                # 8
                   "        if x:\n"                 # 9
                   "            return 4\n"          # 10
                   "    return 5\n")                 # 11
    qemu_only = frozenset({(2, 3), (8, 11)})
    why, out = report.classify(str(src), 4, "rule", 5, qemu_only)
    assert out and "spec-following side" in why
    why, out = report.classify(str(src), 9, "other", 10, qemu_only)
    assert out and "spec-following side" in why
    both = qemu_only | {(2, 4), (8, 9)}  # the strict side ran too (another profile)
    assert not report.classify(str(src), 4, "rule", 5, both)[1]
    assert not report.classify(str(src), 9, "other", 10, both)[1]
    assert not report.classify(str(src), 4, "rule", 5, frozenset())[1]  # the if never ran


def test_report_classes_a_deviation_combined_with_another_test_or_behind_a_predicate(
        tmp_path: Path) -> None:
    """``if self.qemu(k) or x: return`` leaves what follows to the strict
    model (the deviation alone runs the body); ``if a and not self.qemu(k)``
    never runs its body on QEMU's side; a method whose first statement is
    ``if self.qemu(k): return True`` answers True there, so ``if not
    self.ok()`` never runs its body either.  ``if self.qemu(k) and x`` says
    nothing: both of its ways are QEMU's."""
    src = tmp_path / "rule.py"
    src.write_text("def ok(self):\n"                    # 1
                   "    if self.qemu('k') or self.x:\n"  # 2
                   "        return True\n"              # 3
                   "    if self.y:\n"                   # 4
                   "        return False\n"             # 5
                   "    return True\n"                  # 6
                   "def use(self, a):\n"                # 7
                   "    if not self.ok():\n"            # 8
                   "        a = 1\n"                    # 9
                   "    if a and not self.qemu('j'):\n" # 10
                   "        a = 2\n"                    # 11
                   "    if self.qemu('j') and a:\n"     # 12
                   "        a = 3\n"                    # 13
                   "    return a\n")                    # 14
    ran = frozenset({(2, 3), (8, 10), (10, 12), (12, 14)})
    for line, to in ((4, 5), (8, 9), (10, 11)):
        why, out = report.classify(str(src), line, "use", to, ran)
        assert out and "spec-following side" in why, (line, to)
    assert "spec-following side" not in report.classify(str(src), 12, "use", 13, ran)[0]
    assert not report.classify(str(src), 8, "use", 9, ran | {(8, 9)})[1]


def test_report_classes_a_local_assigned_from_a_deviation(tmp_path: Path) -> None:
    """``ok = self.qemu(k) or x`` assigned once decides ``if ok:`` as the
    test itself would: the branch past its body (no ``else``) is the strict
    model's when every run went into the body, and ``if not ok and y:``
    never runs its body; a name assigned twice decides nothing."""
    src = tmp_path / "rule.py"
    src.write_text("def f(self, y):\n"                   # 1
                   "    ok = self.qemu('k') or y\n"      # 2
                   "    if ok:\n"                        # 3
                   "        self.a = 1\n"                # 4
                   "    if not ok and y:\n"              # 5
                   "        self.a = 2\n"                # 6
                   "    two = self.qemu('k')\n"          # 7
                   "    two = y\n"                       # 8
                   "    if two:\n"                       # 9
                   "        self.a = 3\n")               # 10
    ran = frozenset({(3, 4), (5, 7), (9, 10)})
    assert report.classify(str(src), 3, "f", 5, ran) == (
        "the spec-following side of a deviation whose QEMU side every profile takes "
        "(--strict)", True)
    assert "spec-following side" in report.classify(str(src), 5, "f", 6, ran)[0]
    assert not report.classify(str(src), 9, "f", -1, ran)[1]
    assert not report.classify(str(src), 3, "f", 5, ran | {(3, 5)})[1]


def test_report_classes_the_no_card_side_and_the_patched_series(tmp_path: Path) -> None:
    """The branch not taken of ``if self.card is not None:`` whose body ran
    is the machine without a card; ``self.series`` is a patched build's
    property (``BuildProfile.has_erase_blocks_as_zero``)."""
    src = tmp_path / "rule.py"
    src.write_text("def f(self):\n    if self.card is not None:\n        self.x = 1\n"
                   "    if self.series:\n        self.x = 2\n")
    why, out = report.classify(str(src), 2, "f", 4, frozenset({(2, 3)}))
    assert out and "without a card" in why
    assert "without a card" not in report.classify(str(src), 2, "f", 3, frozenset({(2, 4)}))[0]
    why, out = report.classify(str(src), 4, "f", 5, frozenset({(4, -1)}))
    assert out and "another build" in why


def test_report_classes_boards_outside_the_default_check_and_lockstep_glue() -> None:
    from harness.check.boards import DEFAULT_BOARDS
    from harness.hwdefs.boards import by_name

    files = report.board_only_files()
    assert "sdhci_s3c.py" in files and "smdkc210" in files["sdhci_s3c.py"]
    assert not {"sdhci.py", "sdhci_npcm.py", "sdhci_usdhc.py"} & set(files)
    assert all(by_name(b).variant != "s3c" for b in DEFAULT_BOARDS)
    why, out = report.classify(str(Path(MODEL_DIR) / "sdhci_s3c.py"), 1, "S3cSdhci.read")
    assert out and "--board" in why
    assert report.classify(str(Path(MODEL_DIR) / "blockstore.py"), 1, "BlockStore.touched")[1]
    # only the lockstep calls reconcile; card_medium runs in the targets' __init__
    spi = str(Path(MODEL_DIR) / "spi_target.py")
    assert "lockstep" in report.classify(spi, 1, "SpiModelTarget.reconcile")[0]
    target = str(Path(MODEL_DIR) / "target.py")
    assert report.classify(target, 1, "card_medium")[0].startswith("machine construction")


def test_report_runs_the_library_on_the_default_boards_models() -> None:
    """The board runs of the default check, on the model alone: the NPCM
    wrapper's reset values are read by the library's register scenarios."""
    import pytest

    from harness.scenarios import all_scenarios

    profiles = [p for p in report._board_profiles([])  # a build that has the board
                if "quanta-gbs-bmc" in p.machine_types][-1:]
    if not profiles:
        pytest.skip("no ARM QEMU build installed (sdqtest qemu install --arm)")
    library = [s for s in all_scenarios().values() if s.group == "registers"]
    errors: dict[str, str] = {}
    cov = report.measure(lambda: errors.update(
        report.run_on_boards(library, profiles, ["quanta-gbs"])))
    assert errors == {}
    npcm = next(f for p, f in cov["files"].items() if p.endswith("sdhci_npcm.py"))
    assert npcm["summary"]["covered_lines"] > 0


def test_media_change_table_reaches_the_delayed_insertion() -> None:
    """An insertion while Card Removal is pending is reported a second
    later, once the guest acknowledged the removal (QEMU's sdhci insertion
    timer); an eject in a transfer phase is one input per phase."""
    ins = tables.media_changes()
    pending = next(i for i in ins if i[2:] == [tables._EJECT, tables._INSERT,
                                               tables._ACK_REMOVAL, tables._PAST_DELAY])
    model = _run_ops(pending[:-1])
    assert not model.read(H.NORINTSTS.offset, 2) & H.NIS_CARDINS
    model = _run_ops(pending)
    assert model.read(H.NORINTSTS.offset, 2) & H.NIS_CARDINS
    assert model.read(H.PRNSTS.offset, 4) & H.PRNSTS_CARD_PRESENT == H.PRNSTS_CARD_PRESENT
    assert len({json.dumps(i) for i in ins}) == len(ins)


def test_start_selects_each_adma_and_a_controller_without_it_moves_nothing() -> None:
    """``start`` with an ADMA DMA Select (SDHC 2.2.10) writes its descriptor
    table and the transfer completes on the timer; where the capabilities
    lack ADMA2 (variant ``no-adma``) it does not start (SDHC 2.2.26)."""
    ops = [SETUP, INIT, tables._start(18, "adma2", count=2), {"op": "clock", "ns": 1_000_000}]
    model = _run_ops(ops)
    assert model.read(H.NORINTSTS.offset, 2) & H.NIS_TRNSCMPL
    runner = ModelRunner(trace=False, machine=search.variant_machine("no-adma"))
    d = runner._fresh()
    for op in ops:
        apply(d, d.target, op)
    assert not d.target.read(H.NORINTSTS.offset, 2) & H.NIS_TRNSCMPL


def test_rca_mismatch_addresses_another_card_and_cmd7_then_leaves_stand_by_alone() -> None:
    """PLS 4.3.1 / Table 4-42: CMD7 with another card's RCA (``rca_xor``)
    leaves a card in stand-by where it is; with its own RCA it selects it."""
    other = [i for i in tables.rca_mismatches() if i[-1].get("rca_xor") and i[-1]["index"] == 7
             and i[:-1] == tables.STATE_PREFIXES["stby"]]
    assert len(other) == 1
    card: Any = _run_ops(other[0]).card
    assert card.state == S.CardState.STBY
    own = dict(other[0][-1], rca_xor=0)
    card = _run_ops([*tables.STATE_PREFIXES["stby"], own]).card
    assert card.state == S.CardState.TRAN


def test_a_start_with_a_link_to_itself_stays_parked_through_probes() -> None:
    """``start`` with ``link``: the table is one Link descriptor to itself
    (SDHC 1.13.4); the transfer stays in progress and parked, and a guest
    memory write meets it parked (the register reads of a probe step it)."""
    op = dict(tables._start(17, "adma2", count=1), link=True)
    model = _run_ops([SETUP, INIT, op, {"op": "probe", "status": True}])
    assert model.sdhci.adma_parked
    assert model.sdhci.prnsts & H.PRNSTS_DATINHIBIT == 0  # a Link moves no data
    model.mem_write(DMA_BASE + 0x200, bytes(8))
    assert not model.sdhci.adma_parked


def test_a_link_to_itself_parks_the_adma_and_a_memory_write_wakes_it() -> None:
    """SDHC 1.13.4: a chain of one Link descriptor to itself moves nothing;
    the model parks it (QEMU's timer would spin) until guest memory
    changes."""
    loop = tables.adma_chains()[0]
    model = _run_ops(loop[:3])
    assert model.sdhci.adma_parked
    assert not _run_ops(loop[:4]).sdhci.adma_parked


def test_the_search_meets_the_memory_the_check_replays_on() -> None:
    """The check replays an input on a lockstep, whose DMA arena the driver
    fills with its pattern; the search's model alone must hold the same
    bytes there (a descriptor linking into the arena reads the pattern, not
    zeros), or an input behaves otherwise in the check than when kept."""
    from harness.driver.arena import GUARD, pattern

    d = ModelRunner(trace=False, snapshots=0)._fresh()
    assert d.arena.fill and not d.arena.active  # filled, but nothing to compare
    d.arena.reserve(d.data_area, 512)
    got = d.target.mem_read(d.data_area - GUARD, 512 + 2 * GUARD)
    assert got == pattern(d.data_area - GUARD, 512 + 2 * GUARD) and any(got)
