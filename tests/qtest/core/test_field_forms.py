"""The forms field reproducers come in, read without QEMU, and the
rewrites that make them run under qtest on today's builds, each said."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.replay import engine as replay
from harness.replay import field, rewrite

FIELD = Path(__file__).resolve().parents[1] / "crosscheck" / "field_inputs"
FIRST, LAST = "outl 0xcf8 0x80001010", "readl 0xe0000030"
FIRST_Q35 = "outl 0xcf8 0x80000810"  # q35 -nodefaults: sdhci-pci is 00:01.0
Q35 = {"q35", "pc", "pc-q35-5.2", "pc-q35-6.0", "pc-q35-11.1", "pc-i440fx-5.2",
       "pc-i440fx-11.1"}


def _arg(argv: list[str], opt: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == opt]


def test_continuations_comments_kvm_and_i386() -> None:
    f = field.parse((FIELD / "form-continuations-kvm-i386.sh").read_text())
    assert f.form == "shell" and f.argv is not None
    # -enable-kvm takes no value: the -machine after it is still read as one
    assert f.argv[:4] == ["./build/qemu-system-i386", "-enable-kvm", "-machine",
                          "q35,accel=kvm"]
    assert "-device" in f.argv and "sdhci-pci" in f.argv and "#" not in " ".join(f.argv)
    assert f.lines[0] == FIRST_Q35 and f.lines[-1] == LAST and len(f.lines) == 16
    m, extra = field.machine_from_argv(f.argv)
    assert m.type == "q35" and m.ram == 512 << 20 and m.image is not None and extra == []
    n = rewrite.normalise(f.argv, "/b/qemu-system-x86_64", kvm=False)
    assert "-enable-kvm" not in n.argv and _arg(n.argv, "-machine") == ["q35"]
    assert _arg(n.argv, "-accel") == ["qtest"] and n.argv[0] == "/b/qemu-system-x86_64"
    assert len(n.notes) == 4 and any("qemu-system-i386" in s for s in n.notes)
    assert any("-enable-kvm dropped: KVM is not usable here" in s for s in n.notes)
    assert any("accel=kvm dropped" in s for s in n.notes)
    assert any(s.startswith("no accelerator named: -accel qtest added") for s in n.notes)
    # with KVM usable the reporter's accelerator stays, and none is added
    k = rewrite.normalise(f.argv, "/b/qemu-system-x86_64", kvm=True)
    assert "-enable-kvm" in k.argv and _arg(k.argv, "-machine") == ["q35,accel=kvm"]
    assert "-accel" not in k.argv and len(k.notes) == 1


def test_heredoc_written_to_a_file_then_redirected() -> None:
    f = field.parse((FIELD / "form-heredoc-to-file.sh").read_text())
    assert f.form == "shell-file" and f.argv is not None
    assert f.argv[0] == "qemu-system-x86_64" and f.argv[-2:] == ["-qtest", "stdio"]
    assert "<" not in f.argv and "/tmp/repro.txt" not in f.argv
    assert f.lines[0] == FIRST and len(f.lines) == 16
    with pytest.raises(ValueError, match="does not write"):
        field.parse("qemu-system-x86_64 -device sdhci-pci -qtest stdio < elsewhere.txt\n")


def test_drive_if_sd_becomes_a_drive_and_an_sd_card() -> None:
    f = field.parse((FIELD / "form-drive-if-sd.sh").read_text())
    assert f.argv is not None
    n = rewrite.normalise(f.argv, "qemu-system-x86_64")
    drives = _arg(n.argv, "-drive")
    assert drives == ["if=none,index=0,file=null-co://,format=raw,id=sd0"]
    assert _arg(n.argv, "-device") == ["sdhci-pci,sd-spec-version=3", "sd-card,drive=sd0"]
    assert n.notes == ["-drive if=sd,index=0,file=null-co://,format=raw: if=sd becomes "
                       "if=none, plus -device sd-card,drive=sd0 (QEMU 6.0+ has no if=sd on "
                       "PC machines)"]
    m, _ = field.machine_from_argv(n.argv)
    assert m.image is not None and m.image.size == field.NULL_CO_SIZE
    assert m.sdhci == {"sd-spec-version": 3}
    as_is = rewrite.normalise(f.argv, "qemu-system-x86_64", as_is=True)
    assert _arg(as_is.argv, "-drive") == ["if=sd,index=0,file=null-co://,format=raw"]
    assert as_is.notes == [] and "-accel" not in as_is.argv


def test_missing_machine_type_becomes_the_nearest() -> None:
    f = field.parse((FIELD / "form-old-machine-type.sh").read_text())
    assert f.argv is not None
    n = rewrite.normalise(f.argv, "q", machines=Q35)
    assert _arg(n.argv, "-M") == ["pc-q35-5.2"]
    assert n.notes == ["machine type pc-q35-2.4 is not in this build: pc-q35-5.2 instead"]
    assert rewrite.normalise(f.argv, "q", machines={"pc-q35-2.4"}).notes == []
    assert rewrite._nearest_machine("pc-q35-12.0", Q35) == "pc-q35-11.1"
    assert rewrite._nearest_machine("pc-1.0", Q35) == "pc-i440fx-5.2"
    assert rewrite._nearest_machine("virt", Q35) is None


def test_qtest_log_transcript_keeps_what_qemu_received() -> None:
    f = field.parse((FIELD / "form-qtest-log.txt").read_text())
    assert f.form == "log" and f.argv is not None and f.argv[:3] == [
        "qemu-system-x86_64", "-M", "q35"]
    assert f.lines[0] == FIRST_Q35 and f.lines[-1] == LAST and len(f.lines) == 16
    flat = field.parse("[I 0.000001] OPENED [R +0.07] outl 0xcf8 0x8000fa24 "
                       "[S +0.08] OK OK\n[R +0.09] readw 0xe00000fe\n[S +0.1] OK 0x2\n")
    assert flat.lines == ["outl 0xcf8 0x8000fa24", "readw 0xe00000fe"]


def test_plan_says_every_rewrite_and_as_is_none(tmp_path: Path) -> None:
    path = FIELD / "form-continuations-kvm-i386.sh"
    pl = replay.plan(path, Path("/b/qemu-system-x86_64"), Q35, kvm=False)
    assert pl.argv is not None and len(pl.notes) == 4 and len(pl.trace) == 16
    raw = replay.plan(path, Path("/b/qemu-system-x86_64"), Q35, as_is=True)
    assert raw.notes == [] and raw.argv is not None and "-enable-kvm" in raw.argv
    empty = tmp_path / "empty.qtest"
    empty.write_text("# nothing\n")
    with pytest.raises(replay.ReplayError, match="no qtest commands"):
        replay.plan(empty, Path("q"))


def test_the_whole_line_decides_each_if_sd_drive() -> None:
    """A drive some -device uses gets no second card; each unused one gets
    exactly one, under an id no other drive has; an ARM board keeps its
    if=sd; --as-is changes none."""
    argv = ["qemu-system-x86_64", "-nodefaults", "-device", "sdhci-pci",
            "-device", "sd-card,drive=mine", "-drive", "if=sd,file=null-co://,id=mine",
            "-drive", "if=sd,index=1,file=null-co://", "-drive", "if=sd,file=null-co://",
            "-drive", "if=none,id=sd0,file=null-co://", "-machine", "accel=qtest"]
    n = rewrite.normalise(argv, "qemu-system-x86_64", kvm=False)
    assert _arg(n.argv, "-drive") == ["if=none,file=null-co://,id=mine",
                                      "if=none,index=1,file=null-co://,id=sd1",
                                      "if=none,file=null-co://,id=sd2",
                                      "if=none,id=sd0,file=null-co://"]
    assert _arg(n.argv, "-device") == ["sdhci-pci", "sd-card,drive=mine",
                                       "sd-card,drive=sd1", "sd-card,drive=sd2"]
    assert len(n.notes) == 3 and "the -device that names drive=mine is its card" in n.notes[0]
    arm = ["qemu-system-aarch64", "-M", "raspi3b", "-drive", "if=sd,file=null-co://"]
    assert _arg(rewrite.normalise(arm, "q", kvm=False).argv, "-drive") == [
        "if=sd,file=null-co://"]
    assert rewrite.normalise(argv, "q", as_is=True, kvm=False).notes == []
    assert _arg(rewrite.normalise(argv, "q", as_is=True).argv, "-drive")[0] == (
        "if=sd,file=null-co://,id=mine")


def test_a_prompt_and_a_commit_messages_commands_apart() -> None:
    """A command line after a prompt (``$``, ``➜ dir git:(master) ✗``), and a
    commit message's commands given before it, prose around them."""
    apart = field.parse("With this fix, the reproducer:\n\noutl 0xcf8 0x80001010\n"
                        "readl 0xe0000000\n\ncannot be reproduced with:\n\n"
                        "$ qemu-system-x86_64 -M pc \\\n    -device sdhci-pci -qtest stdio\n")
    assert apart.form == "shell-apart" and apart.lines == ["outl 0xcf8 0x80001010",
                                                           "readl 0xe0000000"]
    assert apart.argv == ["qemu-system-x86_64", "-M", "pc", "-device", "sdhci-pci",
                          "-qtest", "stdio"]
    log = field.parse("➜  build git:(master) ✗ ./qemu-system-x86_64 -trace 'sdhci*' "
                      "-qtest stdio\n[I 1.0] OPENED\nqemu-system-x86_64: warning: x\n"
                      "[R +0.1] outl 0xcf8 0x80001010\n[S +0.1] OK\nOK\nsdhci_access wr8\n"
                      "==1==ERROR: AddressSanitizer: heap-buffer-overflow\n")
    assert log.form == "log" and log.lines == ["outl 0xcf8 0x80001010"]
    assert log.argv == ["./qemu-system-x86_64", "-trace", "sdhci*", "-qtest", "stdio"]
    assert field.parse("I ran qemu-system-x86_64 with it\nreadl 0\n").argv is None
