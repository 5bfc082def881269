"""The fuzzer's parts without QEMU: generators, shrinker, signatures,
emitters, corpus, the campaign loop (on a synthetic executor)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.ddmin import ddmin, shrink_ops
from harness.check.lockstep import Divergence, Step
from harness.check.reproducer import c_function, qtest_init_args
from harness.fuzz import campaign as C
from harness.fuzz import ops as O
from harness.fuzz.corpus import Corpus, merge
from harness.fuzz.emit import pytest_text, write
from harness.fuzz.run import CRASH, DIVERGE, OK, FuzzOutcome
from harness.fuzz.signature import signature, slug
from harness.hwdefs import sdhci as H
from harness.machine import Machine

# -- generators --------------------------------------------------------------------------


def test_generate_is_a_function_of_the_seed() -> None:
    a = [O.generate(random.Random(f"7:{i}")) for i in range(30)]
    b = [O.generate(random.Random(f"7:{i}")) for i in range(30)]
    c = [O.generate(random.Random(f"8:{i}")) for i in range(30)]
    assert a == b
    assert a != c
    pool = a[:5]
    m1 = O.mutate(random.Random("m"), a[0], pool)
    m2 = O.mutate(random.Random("m"), a[0], pool)
    assert m1 == m2


def test_generated_inputs_are_json_and_cover_the_vocabulary() -> None:
    rng = random.Random(1)
    kinds: set[str] = set()
    for _ in range(300):
        ins = O.generate(rng)
        assert json.loads(json.dumps(ins)) == ins
        kinds |= {op["op"] for op in ins}
        for op in ins:
            assert op["op"] in O.GENERATORS
            assert O.describe(op).startswith(op["op"])
    assert kinds == set(O.GENERATORS)


def test_every_drawn_operation_kind_has_a_runner_and_is_bound_once() -> None:
    """The registry is complete: a kind drawn by ``generate`` runs; a kind
    bound twice is refused where it is written."""
    from harness.driver.ops import Operations, operation
    assert set(O.GENERATORS) <= set(operation.runners)
    assert all(w > 0 for _, w in O.GENERATORS.values())
    ops = Operations()
    ops("x", weight=1)(O.random_op)
    with pytest.raises(ValueError, match="'x': a second generator"):
        ops("x", weight=2)
    ops.runs("x")(O.apply)
    with pytest.raises(ValueError, match="'x': a second runner"):
        ops.runs("x")


def test_unknown_operation_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fuzz operation"):
        O._apply(None, None, {"op": "nope"})  # type: ignore[arg-type]


# -- shrinker ----------------------------------------------------------------------------


def test_ddmin_finds_the_three_items_that_matter() -> None:
    calls = []

    def fails(xs: list[int]) -> bool:
        calls.append(1)
        return {7, 23, 41} <= set(xs)

    assert ddmin(list(range(50)), fails) == [7, 23, 41]
    assert len(calls) < 200


def test_ddmin_keeps_order_and_handles_one_item() -> None:
    assert ddmin([5, 1, 9], lambda xs: 9 in xs and 5 in xs) == [5, 9]
    assert ddmin([3], lambda xs: 3 in xs) == [3]


def test_shrink_ops_cuts_after_the_failure_and_simplifies_numbers() -> None:
    ops = [{"op": "write", "off": i, "size": 4, "value": 1000 + i} for i in range(12)]

    def fails(cand: list[dict[str, int]]) -> bool:  # any write at offset >= 4
        return any(o["off"] >= 4 for o in cand)

    out, runs = shrink_ops(ops, fails, stop_at=6, calls=100)  # type: ignore[arg-type]
    assert len(out) == 1 and out[0]["off"] >= 4
    assert out[0]["value"] == 0 and out[0]["size"] == 0  # simplified: they do not matter
    assert runs <= 100


def test_shrink_budget_is_respected() -> None:
    n = [0]

    def fails(cand: list[dict[str, int]]) -> bool:
        n[0] += 1
        return len(cand) >= 3

    ops = [{"op": "read", "off": i, "size": 1} for i in range(40)]
    out, runs = shrink_ops(ops, fails, calls=10)  # type: ignore[arg-type]
    assert runs == n[0] == 10 and len(out) >= 3


# -- signatures --------------------------------------------------------------------------


def _read_divergence(model: int, qemu: int, offset: int = H.PRNSTS.offset) -> FuzzOutcome:
    step = Step(5, "read", (offset, 4), model, qemu, False, False)
    d = Divergence(step, "result", [])
    return FuzzOutcome(DIVERGE, d.summary(), d, machine=Machine(), trace=[
        "writew 0xe000002c 0x1", f"readl {0xE0000000 + offset:#x}"],
        replay_argv=["qemu", "-machine", "q35", "-accel", "qtest", "-qtest", "stdio"])


def test_signature_names_register_and_field_not_values() -> None:
    a = _read_divergence(0x1, 0x0)          # CMDINHIBIT differs
    b = _read_divergence(0x1FF0001, 0x1FF0000)
    c = _read_divergence(0x2, 0x0)          # DATINHIBIT differs
    assert signature(a) == signature(b) == "diverge:result:PRNSTS.CMDINHIBIT"
    assert signature(c) != signature(a)
    assert slug(signature(a)) == slug(signature(b))
    assert signature(FuzzOutcome(OK)) == ""


def test_crash_signature_masks_numbers() -> None:
    x = FuzzOutcome(CRASH, crash_site="qemu: sd.c:1234: sd_wp: Assertion `wpnum < 0x10' failed.")
    y = FuzzOutcome(CRASH, crash_site="qemu: sd.c:1240: sd_wp: Assertion `wpnum < 0x20' failed.")
    assert signature(x) == signature(y) and signature(x).startswith("crash:")


# -- emitters ----------------------------------------------------------------------------

_STUB_LIBQTEST = """
#include <stdint.h>
#include <stddef.h>
typedef struct QTestState QTestState;
QTestState *qtest_init(const char *args);
void qtest_quit(QTestState *s);
void qtest_outb(QTestState *s, uint16_t a, uint8_t v);
void qtest_outw(QTestState *s, uint16_t a, uint16_t v);
void qtest_outl(QTestState *s, uint16_t a, uint32_t v);
uint8_t qtest_inb(QTestState *s, uint16_t a);
uint16_t qtest_inw(QTestState *s, uint16_t a);
uint32_t qtest_inl(QTestState *s, uint16_t a);
void qtest_writeb(QTestState *s, uint64_t a, uint8_t v);
void qtest_writew(QTestState *s, uint64_t a, uint16_t v);
void qtest_writel(QTestState *s, uint64_t a, uint32_t v);
void qtest_writeq(QTestState *s, uint64_t a, uint64_t v);
uint8_t qtest_readb(QTestState *s, uint64_t a);
uint16_t qtest_readw(QTestState *s, uint64_t a);
uint32_t qtest_readl(QTestState *s, uint64_t a);
uint64_t qtest_readq(QTestState *s, uint64_t a);
void qtest_memread(QTestState *s, uint64_t a, void *d, size_t n);
void qtest_memwrite(QTestState *s, uint64_t a, const void *d, size_t n);
void qtest_memset(QTestState *s, uint64_t a, uint8_t p, size_t n);
int64_t qtest_clock_step(QTestState *s, int64_t ns);
int64_t qtest_clock_step_next(QTestState *s);
void qtest_irq_intercept_in(QTestState *s, const char *path);
int qtest_get_irq(QTestState *s, int n);
#define g_assert(x) ((void)(x))
#define g_assert_cmphex(a, op, b) ((void)((a) op (b)))
"""

_TRACE = [
    "outl 0xcf8 0x80000810", "inl 0xcfc", "irq_intercept_in ioapic",
    "writew 0xe000002c 0x1", "clock_step 1000", "clock_step",
    "b64write 0x1000000 0x4 3q2+7w==", "write 0x1000010 0x3 0x000000",
    "memset 0x1000020 0x10 0xff", "b64read 0x1000000 0x10", "readq 0xe0000040",
    "readl 0xe0000024",
]


def test_c_function_has_the_libqtest_shape() -> None:
    text = c_function("test_x", _TRACE, ["qemu", "-machine", "q35", "-accel", "qtest",
                                         "-qtest", "stdio", "-device", "sdhci-pci"],
                      expect=("value", 0x1FF0000), comment="a finding")
    assert 'qtest_init("-machine q35 -device sdhci-pci")' in text
    assert "qtest_writew(s, 0xe000002c, 0x1);" in text
    assert "qtest_memwrite(s, 0x1000000, data6, sizeof(data6));" in text
    assert "qtest_memset(s, 0x1000010, 0x00, 0x3);" in text
    assert "qtest_clock_step_next(s);" in text
    assert "g_assert_cmphex(qtest_readl(s, 0xe0000024), ==, 0x1ff0000);" in text
    assert text.rstrip().endswith("qtest_quit(s);\n}".rstrip())


def test_c_function_compiles(tmp_path: Path) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to check the emitted C function with")
    body = c_function("test_x", _TRACE, ["qemu", "-device", "sdhci-pci"],
                      expect=("value", 5))
    irq = c_function("test_y", _TRACE[:4], ["qemu"], expect=("irq@11", 1))
    mem = c_function("test_z", _TRACE[:10], ["qemu"], expect=("byte@3", 0xEF))
    src = tmp_path / "t.c"
    src.write_text(_STUB_LIBQTEST + body + irq + mem
                   + "int main(void) { test_x(); test_y(); test_z(); return 0; }\n")
    r = subprocess.run([gcc, "-std=gnu11", "-Wall", "-Werror", "-fsyntax-only", str(src)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_qtest_init_args_drop_what_libqtest_adds() -> None:
    argv = ["/x/qemu", "-machine", "q35", "-accel", "qtest", "-nodefaults", "-qtest", "stdio",
            "-drive", "if=none,id=d,file=/a b/c.img,snapshot=on"]
    assert qtest_init_args(argv) == ("-machine q35 -nodefaults -drive "
                                     "'if=none,id=d,file=/a b/c.img,snapshot=on'")


def test_pytest_text_is_python_and_write_makes_every_reproducer(tmp_path: Path) -> None:
    out = _read_divergence(0x1, 0x0)
    ops = [{"op": "setup", "freq": 400000}, {"op": "init", "bus_width": 4, "hcs": True,
                                               "block_len": 512}]
    compile(pytest_text("sig", "11.1", ops, out), "t.py", "exec")
    d = write(out, ops, signature(out), "11.1", tmp_path)
    names = {p.name for p in d.iterdir()}
    assert {"repro.qtest", "repro.sh", "repro.c", "finding.json", "divergence.txt"} <= names
    assert any(n.startswith("test_fuzz_") and n.endswith(".py") for n in names)
    assert (d / "repro.qtest").read_text().splitlines()[-1] == "readl 0xe0000024"
    assert json.loads((d / "finding.json").read_text())["ops"] == ops


# -- corpus ------------------------------------------------------------------------------


def test_corpus_dedups_inputs_and_merge_joins_findings(tmp_path: Path) -> None:
    a, b = Corpus(tmp_path / "a"), Corpus(tmp_path / "b")
    ins = [{"op": "read", "off": 0x24, "size": 4}]
    assert a.add_input(ins) == a.add_input(ins)
    b.add_input(ins)
    b.add_input([{"op": "clock", "ns": 5}])
    for c, build in ((a, "10.0"), (b, "11.1")):
        (c.findings_dir / "x").mkdir()
        (c.findings_dir / "x" / "repro.qtest").write_text("readl 0x0\n")
        c.record("diverge:result:PRNSTS.X", build, c.findings_dir / "x")
    (b.findings_dir / "y").mkdir()
    b.record("crash:boom", "11.1", b.findings_dir / "y")
    b.seen("crash:boom")
    m = merge(tmp_path / "m", [tmp_path / "a", tmp_path / "b"])
    assert len(m.inputs()) == 2
    assert set(m.index) == {"diverge:result:PRNSTS.X", "crash:boom"}
    assert m.index["diverge:result:PRNSTS.X"]["count"] == 2
    assert m.index["diverge:result:PRNSTS.X"]["builds"] == ["10.0", "11.1"]
    assert m.index["crash:boom"]["count"] == 2
    assert (m.root / "findings" / "x" / "repro.qtest").is_file()


# -- the campaign loop, on a synthetic executor ------------------------------------------


class _Fake:
    name = "fake"
    binary = Path("/nonexistent")
    profile = None


def _synthetic(ops: list[O.Op]) -> FuzzOutcome:
    """Diverges (PRNSTS.CMDINHIBIT) on any write to CLKCON; else agrees."""
    for i, op in enumerate(ops):
        if op["op"] == "write" and op["off"] in range(0x2C, 0x2E):
            out = _read_divergence(1, 0)
            out.op_index = i
            return out
    return FuzzOutcome(OK, features={(op["op"],) for op in ops})


def test_campaign_finds_shrinks_and_dedups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setattr(C.Campaign, "execute", lambda self, ops: _synthetic(ops))
    camp = C.Campaign(_Fake(), Corpus(tmp_path), seed=3)  # type: ignore[arg-type]
    st = camp.run(count=120)
    assert st.execs == 120
    assert [f.signature for f in st.found] == ["diverge:result:PRNSTS.CMDINHIBIT"]
    f = st.found[0]
    assert f.shrunk_len == 1 < f.original_len
    assert sum(st.repeats.values()) >= 1  # seen again, not reported again
    assert st.kept and len(Corpus(tmp_path).inputs()) == st.kept
    assert (f.directory / "repro.c").is_file()


def test_campaign_is_reproducible_and_shards_split_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def record(self: C.Campaign, ops: list[O.Op]) -> FuzzOutcome:
        seen.append(json.dumps(ops, sort_keys=True))
        return FuzzOutcome(OK)

    monkeypatch.setattr(C.Campaign, "execute", record)
    runs = []
    for d in ("a", "b"):
        seen.clear()
        C.Campaign(_Fake(), Corpus(tmp_path / d), seed=9).run(count=20)  # type: ignore[arg-type]
        runs.append(list(seen))
    assert runs[0] == runs[1]
    shards = []
    for k in (1, 2):
        seen.clear()
        C.Campaign(_Fake(), Corpus(tmp_path / f"s{k}"), seed=9,  # type: ignore[arg-type]
                   shard=(k, 2)).run(count=10)
        shards.append(set(seen))
    assert shards[0] and shards[1] and not shards[0] & shards[1]
    assert C.shard_of("9:1", 2) == C.shard_of("9:1", 2)


def test_campaign_states_the_inputs_sizes_beside_its_rate() -> None:
    """A rate of inputs per second means little without their sizes: the
    campaign's summary gives the median, quartiles and most of each."""
    from harness.fuzz.campaign import Stats

    st = Stats("b")
    assert st.shape() == "no inputs ran"
    st.lengths, st.steps = [1, 2, 3, 4, 10], [100, 200, 300, 400, 500]
    assert st.shape() == ("inputs of 3 (quartiles 2-4, at most 10) operations, "
                          "300 (quartiles 200-400, at most 500) lockstep steps")
