"""The field corpus (``harness/replay/field/``): public hw/sd bug reports'
reproducers as their reporters wrote them, replayed on every selected build.

Each report has a ``.note`` beside it: its source (tracker and bug number,
mailing-list message), the versions affected, the fix and the first
version with it (``fixed-in``), and whether the text is verbatim.  The
verdict each build must give follows from the note alone, never from a
replay: a build that has the fix replays *clean* (QEMU serves every
command, the model agrees on every read it compares); a build without it
gives the reported outcome when it can show it (a sanitizer report on an
ASan/UBSan build, an assertion as a crash) and is clean on a normal build
when the report is a sanitizer's only.  A refusal of the command line is
never expected: it fails the test with QEMU's words.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.qemu import sanitizer
from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay
from harness.replay import field, rewrite

pytestmark = pytest.mark.qemu

CORPUS = [p for p in replay.field_corpus() if not rewrite.is_arm(field.parse(
    p.read_text()).argv or ["x"])]
KEYS = ("title", "source", "reported", "affected", "fix", "fixed-in", "report-outcome",
        "verbatim", "form")


def expected(path: Path, build: QemuBuild) -> str:
    """The verdict the note predicts on ``build`` (see the module)."""
    note = replay.field_note(path)
    m = re.match(r"(\d+)\.(\d+)", note["fixed-in"])
    assert m, f"{path.name}: fixed-in {note['fixed-in']!r}"
    fixed = (int(m.group(1)), int(m.group(2)), 0)
    if build.profile.version >= fixed:
        return "clean"
    outcome = note["report-outcome"]
    if re.search(r"assertion|SIGABRT|abort", outcome, re.I):
        return "crash"
    if re.search(r"\bhang", outcome, re.I):
        return "hang"
    if re.search(r"ASan|UBSan|Sanitizer", outcome):
        return "sanitizer report" if sanitizer.instrumented(build.binary) else "clean"
    pytest.skip(f"{path.name}: the note predicts nothing on {build.name}")


def test_corpus_holds_twenty_public_reports_each_with_its_source() -> None:
    assert len(CORPUS) >= 20
    verbatim = 0
    for path in CORPUS:
        note = replay.field_note(path)
        assert set(KEYS) <= set(note), f"{path.name}: note lacks {set(KEYS) - set(note)}"
        where = note["source"] + note.get("tracker", "")
        assert re.search(r"https?://|qemu-devel|Launchpad", where), path.name
        assert re.match(r"20[12]\d-\d\d", note["reported"]), path.name
        assert re.match(r"\d+\.\d+", note["fixed-in"]), path.name
        f = field.parse(path.read_text())
        assert f.argv is not None and f.lines, path.name
        verbatim += note["verbatim"].startswith("yes")
    assert verbatim >= 15


def test_the_corpus_holds_every_form() -> None:
    """Each form the issue names is there as a reporter wrote it."""
    texts = {p.name: p.read_text() for p in CORPUS}
    forms = {field.parse(t).form for t in texts.values()}
    assert {"shell", "shell-file", "shell-apart", "log", "header"} <= forms
    joined = "\n".join(texts.values())
    for needle in ("\\\n", "$ cat << EOF", "-trace", "-nographic", "qemu-system-i386",
                   "-enable-kvm", "accel=qtest,", "➜"):
        assert needle in joined, needle
    both = [n for n, t in texts.items() if "if=sd" in t and "sd-card,drive=mydrive" in t]
    assert len(both) >= 8, both


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_field_report_replays_to_its_verdict(qemu_build: QemuBuild, path: Path) -> None:
    machines = {*qemu_build.profile.machine_types, *qemu_build.aliases}
    pl = replay.plan(path, qemu_build.binary, machines)
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert res.verdict != replay.REFUSED, f"refused: {res.refusal}; rewrites: {pl.notes}"
    if res.verdict == replay.CLEAN and not pl.model_reason:
        replay.replay_model(res, qemu_build.profile, pl.machine)
    assert replay.verdict(res) == expected(path, qemu_build), (
        f"{res.summary()}; model: {res.model_diffs[:3] or res.model_reason}")
    if replay.verdict(res) == "clean":
        assert res.answered == len(pl.trace)


def test_as_is_the_if_sd_reports_are_refused_with_qemus_words(qemu_build: QemuBuild) -> None:
    """Without the rewrite, a report with ``-drive if=sd`` is refused on a PC
    machine (QEMU 6.0+), and the refusal is QEMU's error line naming the
    drive."""
    path = next(p for p in CORPUS if p.name == "lp1909418-reporter-trace-log.txt")
    pl = replay.plan(path, qemu_build.binary, as_is=True)
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert res.verdict == replay.REFUSED
    assert res.refusal == ("machine type does not support if=sd,bus=0,unit=0 (QEMU names "
                           "-drive if=sd,index=0,file=null-co://,format=raw,id=mydrive)")


def test_a_second_card_on_the_reporters_drive_would_be_refused(qemu_build: QemuBuild,
                                                                tmp_path: Path) -> None:
    """Why the rewrite adds no card when a -device already uses the drive:
    QEMU refuses two cards on one drive, in its words, after the reporter's
    ``-trace 'sdhci*'`` printed the controller's trace lines: the refusal is
    the error line, not a trace line."""
    path = next(p for p in CORPUS if p.name == "lp1909418-reporter-trace-log.txt")
    pl = replay.plan(path, qemu_build.binary)
    assert pl.argv is not None and pl.argv.count("sd-card,drive=mydrive") == 1
    argv = [*pl.argv, "-device", "sd-card,drive=mydrive"]
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=argv)
    assert res.verdict == replay.REFUSED
    assert "Drive 'mydrive' is already in use" in res.refusal, res.refusal
    assert "(QEMU names -device sd-card,drive=mydrive)" in res.refusal
    assert "sdhci_" in res.stderr and "sdhci_" not in res.refusal
