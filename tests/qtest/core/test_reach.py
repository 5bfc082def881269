"""Reach (issue #34): the lock and stop kinds' classes, inputs and corpus."""

from __future__ import annotations

from typing import Any

from harness.driver.host import SET_BLOCKLEN, HostDriver
from harness.driver.ops import apply
from harness.explore import reach, search, tables
from harness.explore.search import Entry, ModelRunner, bare, cover, variant_machine
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.scenarios import explore as group

SETUP = {"op": "setup", "freq": 400_000}
INIT = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}


def _driver() -> HostDriver:
    d = ModelRunner(trace=False)._fresh()
    for op in (SETUP, INIT):
        apply(d, d.target, op)
    return d


def _lock(d: HostDriver, flags: int, pwd: bytes) -> Any:
    apply(d, d.target, reach.lock_op(flags, pwd))
    return d.target.card  # type: ignore[attr-defined]


def _reached(inputs: list[list[dict[str, Any]]]) -> set[Any]:
    r = ModelRunner(trace=False)
    got: set[Any] = set()
    for ops in inputs:
        run = r.run(ops)
        assert run.ok, run.why
        got |= run.features
    return got


def test_passwords_are_distinct_per_salt_and_one_off_finds_a_single_difference() -> None:
    assert len(reach.password(16)) == 16 and reach.password(0) == b""
    a, b = reach.password(8, 1), reach.password(8, 2)
    assert all(x != y for x, y in zip(a, b, strict=True))
    assert reach._one_off(b"abcd", b"abxd") == 2
    assert reach._one_off(b"abcd", b"abcd") is None
    assert reach._one_off(b"abcd", b"xbxd") is None


def test_an_old_password_one_byte_off_is_refused_at_every_position() -> None:
    """PLS 4.3.7.1: the card compares the whole stored password; one byte
    off anywhere, nothing changes and LOCK_UNLOCK_FAILED is reported."""
    d = _driver()
    pwd = reach.password(16)
    card = _lock(d, S.LOCK_SET_PWD, pwd)
    assert card.pwd == pwd
    for i in range(16):
        off = reach._flip(pwd, i)
        structure = d.lock_block(S.LOCK_SET_PWD | S.LOCK_LOCK, off + b"x")
        d.cmd(SET_BLOCKLEN, len(structure))
        d.lock_unlock(structure.ljust(512, b"\0"), set_blocklen=False)
        # the error is reported in the next command's status (PLS 4.10.1 type E)
        assert d.cmd(SET_BLOCKLEN, 512).r1 & S.LOCK_UNLOCK_FAILED, i
        card = d.target.card  # type: ignore[attr-defined]
        assert card.pwd == pwd and not card.locked, i


def test_a_new_password_one_byte_off_is_stored_as_sent() -> None:
    d = _driver()
    cur = reach.password(16)
    _lock(d, S.LOCK_SET_PWD, cur)
    for i in (0, 7, 15):
        new = reach._flip(cur, i)
        card = _lock(d, S.LOCK_SET_PWD, cur + new)
        assert card.pwd == new
        cur = new


def test_lock_classes_name_the_position_and_the_lock_state() -> None:
    d = _driver()
    model: Any = d.target
    _lock(d, S.LOCK_SET_PWD, b"abcd")
    op = reach.lock_op(S.LOCK_SET_PWD, b"abXd" + b"new")
    pre = reach.before(model, op)
    assert ("reach", "lock", "old-off", 2) in pre[3]
    assert ("reach", "lock", "wrong", "set", "set") in pre[3]
    apply(d, model, op)
    got = reach.after(pre, model, op, reach.Tracker())
    assert ("reach", "lock", "pwd-len", 4) in got
    bare_erase = reach.lock_op(S.LOCK_ERASE, bare=True)
    assert reach.before(model, bare_erase)[3] == [("reach", "lock", "erase", "set", 1)]


def test_every_goal_class_is_reached_by_the_tables() -> None:
    got = _reached(reach.table_inputs() + tables.lock_requests())
    for kind, classes in reach.goal().items():
        missing = [c for c in classes if c not in got]
        assert not missing, (kind, missing)


def test_each_stop_is_classed_and_the_port_and_next_transfer_after_it() -> None:
    for ops in reach.stop_inputs()[::2]:
        got = _reached([ops])
        hows = {f[2] for f in got if reach.is_reach(f) and f[1] == "stop" and len(f) == 3}
        assert len(hows) == 1, hows
        how = hows.pop()
        assert ("reach", "stop", how, "next") in got
        assert ("reach", "stop", how, "port", "w", "1@+1") in got


def test_the_adma_error_stop_sets_the_error_and_leaves_the_data_line() -> None:
    """SDHC 2.2.25 / 1.13.4: a descriptor without Valid stops the engine with
    ADMA Error in ERRINTSTS, after the first descriptor's block moved."""
    d = _driver()
    ops = reach._stopping("error", False)
    apply(d, d.target, ops[0])
    s: Any = d.target.sdhci  # type: ignore[attr-defined]
    assert s.errintsts & H.EIS_ADMAERR


def test_a_forked_run_carries_the_stop_it_met() -> None:
    ops = reach.stop_inputs()[0]
    fresh, forked = ModelRunner(trace=False, snapshots=0), ModelRunner(trace=False)
    forked.run(ops[:5], keep=True)
    a, b = fresh.run(ops), forked.run(ops)
    assert forked.forked
    assert a.features == b.features


def test_cover_takes_reach_classes_before_other_states() -> None:
    state = [("state", "x", i) for i in range(5)]
    r = [("reach", "lock", "pwd-len", 3)]
    es = [Entry(0, [], 1, 0, frozenset(state)), Entry(1, [], 1, 0, frozenset(r))]
    assert [e.index for e in cover(es, 1)] == [1]


def test_the_committed_corpus_reaches_every_reach_class() -> None:
    """What the check replays: every lock and stop class (the corpus was
    regenerated with the kinds; ``explore --report`` prints the same)."""
    data = group.load()
    runners: dict[str, ModelRunner] = {}
    got: set[Any] = set()
    for e in data["inputs"]:
        v = e.get("variant", "default")
        runners.setdefault(v, ModelRunner(trace=False, machine=variant_machine(v)))
        got |= runners[v].run(bare(e["ops"])).features
    for kind, classes in reach.goal().items():
        assert not [c for c in classes if c not in got], kind
    assert data["model_digest"] == search.model_digest()


def test_render_lists_operations_classes_and_what_is_not_an_operation_yet() -> None:
    text = reach.render({("reach", "lock", "pwd-len", 0)})
    assert "lock: 1 of" in text and "stop: 0 of" in text
    assert "dma: not reached, and why" in text and "migrate: not reached" in text


def test_regions_of_the_pc_layout() -> None:
    model: Any = ModelRunner(trace=False)._fresh().target
    ram_end = 128 << 20
    assert reach.region(0x0101_0000, 512, model) is None
    assert reach.region(0x0101_0F00, 512, model) == "page-cross"
    assert reach.region(ram_end - 256, 512, model) == "ram-top"
    assert reach.region(ram_end, 512, model) == "past-ram"
    assert reach.region(0x1000_0000, 512, model) == "unassigned"
    assert reach.region(0xFFFF_0000, 512, model) == "rom"
    assert reach.region(model.machine.bar0 + 0x10, 4, model) == "own-bar"


def test_adma_data_into_a_hole_is_an_adma_error_and_memory_is_untouched() -> None:
    """SDHC 1.13.5 / 2.2.25: a system bus error during ADMA stops it with
    ADMA Error; past RAM nothing is written, so the arena keeps its bytes."""
    d = _driver()
    model: Any = d.target
    before = model.memory.read(0x0101_0000, 64)[0]
    go = [op for op in reach.dma_inputs()[1] if op["op"] == "start"][2]  # unassigned
    assert go["descs"][0][0] == 0x1000_0000
    apply(d, model, go)
    assert model.sdhci.errintsts & H.EIS_ADMAERR
    assert model.memory.read(0x0101_0000, 64)[0] == before
    assert model.memory.read(0x1000_0000, 8) == (bytes(8), False)


def test_dma_classes_come_from_the_start_operations_address() -> None:
    model: Any = ModelRunner(trace=False)._fresh().target
    op = dict(reach._start(25), mode="sdma", sdma_addr=(128 << 20))
    assert reach.before(model, op)[3] == [("reach", "dma", "sdma", "past-ram", "from-mem")]
    assert group.absolute_dma([op])
    assert not group.absolute_dma([reach._start(25)])


def test_migrate_is_a_no_op_on_the_model_and_a_point_in_the_replay() -> None:
    ops = reach.migrate_inputs()[0]
    r = ModelRunner(trace=False)
    with_m, without = r.run(ops), r.run([o for o in ops if o["op"] != "migrate"])
    states = {f for f in with_m.features if f[0] == "state" and f[1] != "migrate"}
    assert states <= without.features  # the model goes on as if nothing happened
    labels: list[str] = []
    model: Any = ModelRunner(trace=False)._fresh().target
    group.replay(ops, model, labels.append)
    assert len(labels) == sum(1 for o in ops if o["op"] == "migrate") == 2
    got = {f for f in with_m.features if reach.is_reach(f) and f[1] == "migrate"}
    assert got == {("reach", "migrate", "between-blocks", "r"),
                   ("reach", "migrate", "gap-stopped", "r")}


def test_an_input_with_migrate_ops_also_runs_in_the_migration_group(tmp_path: Any) -> None:
    import json

    from harness.scenarios import REGISTRY

    corpus = tmp_path / "c.json"
    ops = reach.migrate_inputs()[1]
    corpus.write_text(json.dumps({"seed": 1, "inputs": [
        {"name": "explore-t01", "index": 0, "new": 1, "ops": ops},
        {"name": "explore-t02", "index": 1, "new": 1, "ops": [SETUP]}]}))
    try:
        assert group.register(corpus) == 2
        assert REGISTRY["migrate-explore-t01"].group == "migration"
        assert REGISTRY["migrate-explore-t01"].params["point"] == "migrate-explore-t01"
        # still the corpus's: not library arcs the next search's cover leaves out
        assert REGISTRY["migrate-explore-t01"].params[group.FROM_CORPUS]
        assert "migrate-explore-t02" not in REGISTRY
    finally:
        for name in ("explore-t01", "explore-t02", "migrate-explore-t01"):
            REGISTRY.pop(name, None)


def test_the_migration_groups_corpus_inputs_migrate() -> None:
    """A corpus input with ``migrate`` runs in the migration group as a
    migrating run (its own QEMU processes), not as one lockstep run whose
    migrate operations do nothing (issue #43: they had stopped migrating
    when the run kind became ``Scenario.migrates``)."""
    from harness.scenarios import select

    scs = list(select(["migration"]))
    assert any(s.params.get(group.FROM_CORPUS) for s in scs)
    assert all(s.migrates for s in scs)
