"""The automatic mutant generator (``sdqtest mutants --auto``) on a small C
file of our own: determinism, unique anchors, the line kinds it must leave
alone, and a mutant that applies and restores (no QEMU tree, no build)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.bisect import automut, mutants

#: Written for these tests: one function of each kind the generator mutates
#: or must skip.
SAMPLE = """\
#include "qemu/osdep.h"
#define LIMIT(x) ((x) < 8 ? 1 : 0)

/* a comment with a < b && c and x += 1; */
static const VMStateDescription vmstate_toy = {
    .version_id = 1,
    .fields = (const VMStateField[]) { VMSTATE_UINT32(reg, ToyState), },
};

static Property toy_properties[] = {
    DEFINE_PROP_UINT8("level", ToyState, level, 3),
};

static int toy_post_load(void *opaque, int version_id)
{
    ToyState *s = opaque;
    return s->reg > 4 ? -1 : 0;
}

static void toy_class_init(ObjectClass *klass, const void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    dc->vmsd = &vmstate_toy;
}

static uint32_t toy_read(ToyState *s, unsigned size)
{
    uint32_t ret = 0;

    trace_toy_read(s->reg, size < 4);
    qemu_log_mask(LOG_GUEST_ERROR, "toy: size %u\\n", size == 2);
    g_assert(size <= 8);
    if (!s->enabled && size >= 2) {
        return 0;
    }
    switch (s->mode) {
    case 3:
        ret = s->reg & 0xf0;
        break;
    default:
        ret |= s->reg;
        s->count += 1;
        toy_update(s);
    }
    s->other -= 2;
    return ret != 0 ? ret : LIMIT(size);
}

static void toy_register_types(void)
{
    type_register_static(&toy_info);
}
"""


def _sites() -> list[automut.Site]:
    return automut.sites("hw/toy.c", SAMPLE, 1)


def test_every_operator_finds_its_site_in_the_device_code() -> None:
    got = {(s.operator, SAMPLE[s.start:s.end]) for s in _sites()}
    assert ("not-removed", "!") in got
    assert ("logic", "&&") in got
    assert ("relop", ">=") in got and ("relop", "!=") in got
    assert ("mask-bit", "0xf0") in got
    assert ("const", "1") in got and ("const", "2") in got
    assert ("or-assign", "|=") in got
    assert ("compound-swap", "+=") in got and ("compound-swap", "-=") in got
    deleted = {SAMPLE[s.start:s.end] for s in _sites()
               if s.operator in ("break-return-deleted", "statement-deleted")}
    assert {"break;", "return 0;", "toy_update(s);", "s->count += 1;",
            "ret = s->reg & 0xf0;"} <= deleted
    # a declaration is never deleted (it would not compile)
    assert not any(SAMPLE[s.start:s.end].startswith("uint32_t") for s in _sites())


def test_skipped_kinds_are_never_mutated() -> None:
    first = SAMPLE.index("static uint32_t toy_read")
    end = SAMPLE.index("static void toy_register_types")
    for s in _sites():
        line = SAMPLE[SAMPLE.rfind("\n", 0, s.start) + 1:SAMPLE.find("\n", s.start)]
        # only toy_read's body: no table, vmstate hook, class_init, register_types,
        # comment or preprocessor line
        assert first < s.start < end, line
        for word in ("trace_", "qemu_log", "g_assert", "case 3"):  # nor a case label
            assert word not in line, (s.operator, line)


def test_the_draw_is_a_function_of_seed_and_text() -> None:
    texts = {"hw/toy.c": SAMPLE}
    a = automut.draw(texts, 6, seed=1)
    assert a == automut.draw(texts, 6, seed=1)
    assert len(a) == 6
    assert [m.anchor for m in a] != [m.anchor for m in automut.draw(texts, 6, seed=2)]
    for m in a:
        assert mutants.applicable(m, SAMPLE)          # the anchor occurs exactly once
        assert m.anchor != m.replacement
        assert m.check_args == automut.CHECK_ARGS
        assert m.old_line and m.new_line and m.line > 0


def test_an_anchor_grows_until_it_is_unique() -> None:
    text = "void f(void)\n{\n    a = b < c;\n    x = y;\n    a = b < c + 1;\n}\n"
    toks = automut.tokens(text)
    site = next(s for s in automut.sites("t.c", text) if s.operator == "relop")
    anc = automut.anchor(text, toks, site)
    assert anc is not None and text.count(anc) == 1 and "<" in anc
    # a site whose context never becomes unique is dropped
    twice = "void f(void)\n{\n    a = b < c;\n    a = b < c;\n}\n" * 1
    toks2 = automut.tokens(twice)
    first = next(s for s in automut.sites("t.c", twice) if s.operator == "relop")
    assert automut.anchor(twice, toks2, first, widest=2) is None


def test_a_mutant_applies_to_a_scratch_copy_and_prove_restores_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "qemu"
    (tree / "hw").mkdir(parents=True)
    (tree / "hw" / "toy.c").write_text(SAMPLE)
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)
    drawn = automut.draw(automut.read_files(tree, ["hw/toy.c"]), 2, seed=3)
    seen: list[str] = []

    class FakeBuilder:
        retry_configure = True

        def __init__(self, **_: object) -> None:
            pass

        def build(self, src: Path, commit: str, log: object, timeout: float) -> object:
            seen.append((src / "hw" / "toy.c").read_text())
            return type("R", (), {"ok": True, "binary": tmp_path / "qemu-bin"})()

    checks = iter([(0, "all agree"), (1, "[10.2.2 q35] x: DIVERGE\ncommands   1 DIVERGE\n"),
                   (0, "all agree")])
    monkeypatch.setattr(mutants, "QemuTreeBuilder", FakeBuilder)
    monkeypatch.setattr(mutants, "run_check", lambda *a, **k: next(checks))
    with open(tmp_path / "log", "w") as log:
        out = mutants.prove(tree, tmp_path / "b", drawn, log, tmp_path / "r",
                            say=open(tmp_path / "say", "w"))
    assert [o.status for o in out] == ["agrees", "caught", "MISSED (exit 0)"]
    assert out[1].groups == "commands: 1 DIVERGE"
    # each mutant's build saw exactly its edit; the tree is as it was afterwards
    assert seen[1] == SAMPLE.replace(drawn[0].anchor, drawn[0].replacement) != SAMPLE
    assert seen[2] == SAMPLE.replace(drawn[1].anchor, drawn[1].replacement)
    assert (tree / "hw" / "toy.c").read_text() == SAMPLE == seen[-1]
    table = automut.rows(drawn, out)
    assert [r[4] for r in table] == ["caught", "MISSED (exit 0)"]
    assert automut.summary(table)[0] == "by verdict: MISSED 1, caught 1"


def test_read_files_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(mutants.MutantError, match="has no hw/sd/nope.c"):
        automut.read_files(tmp_path, ["hw/sd/nope.c"])


def test_a_board_file_mutant_is_judged_by_the_default_boards() -> None:
    from harness.check.boards import DEFAULT_BOARDS

    drawn = automut.draw({"hw/sd/pl181.c": SAMPLE, "hw/sd/sd.c": SAMPLE}, 12, seed=1)
    assert {m.path for m in drawn} == {"hw/sd/pl181.c", "hw/sd/sd.c"}
    for m in drawn:
        if m.path == "hw/sd/pl181.c":
            assert m.check_args == ("--board", ",".join(DEFAULT_BOARDS), "-j", "2")
            assert mutants.target(m) == mutants.AARCH64
        else:
            assert m.check_args == automut.CHECK_ARGS
            assert mutants.target(m) == mutants.X86
