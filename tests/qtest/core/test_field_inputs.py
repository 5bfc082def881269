"""Field reproducers read without QEMU: the shell form of bug reports, a
trace with a header of QEMU arguments, the machine they build, the
command line a replay runs, and where the model maps sdhci-pci's BAR."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.machine import CardImage
from harness.profile import NEWEST
from harness.replay import engine as replay
from harness.replay import field, rewrite
from harness.replay.engine import ReplayResult, _PciShadow

FIELD = Path(__file__).resolve().parents[1] / "crosscheck" / "field_inputs"


def test_shell_form_is_parsed_not_run() -> None:
    text = (FIELD / "shell-form-bar-e0000000.sh").read_text()
    f = field.parse(text)
    assert f.form == "shell"
    assert f.argv is not None and f.argv[0] == "./qemu-system-x86_64"
    assert f.argv[-2:] == ["-qtest", "stdio"]  # the continuation lines were joined
    assert f.lines[0] == "outl 0xcf8 0x80001010" and f.lines[-1] == "readl 0xe0000024"
    assert not any(ln.startswith(("#", "EOF", "cat")) for ln in f.lines)


def test_shell_form_with_quoted_delimiter_and_wrapper() -> None:
    text = ("$ timeout 5 env X=1 cat <<'END' | qemu-system-x86_64 -M pc -device sdhci-pci "
            "-qtest stdio\nreadw 0xe00000fe\n  \nEND\nsome output\n")
    f = field.parse(text)
    assert f.argv == ["qemu-system-x86_64", "-M", "pc", "-device", "sdhci-pci", "-qtest",
                      "stdio"]
    assert f.lines == ["readw 0xe00000fe"]


def test_header_form_and_plain_trace() -> None:
    f = field.parse((FIELD / "header-q35-bar-febf1000.qtest").read_text())
    assert f.form == "header" and f.argv is not None and f.argv[:3] == [
        "qemu-system-x86_64", "-M", "q35"]
    assert f.lines[0] == "outl 0xcf8 0x80000800"
    plain = field.parse("# just a note\nreadl 0x10\n")
    assert plain.form == "trace" and plain.argv is None and plain.lines == ["readl 0x10"]


def test_machine_from_argv() -> None:
    f = field.parse((FIELD / "shell-form-bar-e0000000.sh").read_text())
    assert f.argv is not None
    m, extra = field.machine_from_argv(f.argv)
    assert m.type == "pc" and m.ram == 512 << 20  # x86_64's default machine
    assert dict(m.sdhci_props) == {"sd-spec-version": 3}
    assert m.image == CardImage.null(1 << 30)     # null-co's default size
    assert extra == []
    m2, extra2 = field.machine_from_argv(
        ["q", "-machine", "q35,accel=qtest", "-m", "64", "-device", "sdhci-pci,addr=05.0",
         "-device", "virtio-rng-pci", "-device", "sd-card,drive=x,spec_version=3",
         "-drive", "if=none,id=x,file=/tmp/c.img,format=qcow2"])
    assert m2.type == "q35" and m2.ram == 64 << 20 and dict(m2.sdhci_props) == {}
    assert dict(m2.card_props) == {"spec_version": 3}
    assert m2.image == CardImage(Path("/tmp/c.img"), format="qcow2")
    assert extra2 == ["-device", "virtio-rng-pci"]
    with pytest.raises(ValueError, match="no -device sdhci-pci"):
        field.machine_from_argv(["q", "-M", "q35"])


def test_replay_argv_never_writes_an_image_and_forces_qtest() -> None:
    argv = rewrite.replay_argv(
        ["./qemu-system-x86_64", "-display", "none", "-machine", "accel=qtest,", "-nographic",
         "-drive", "if=none,id=d,file=card.img,format=raw", "-drive",
         "if=none,id=n,file=null-co://", "-qtest", "stdio"], "/usr/bin/qemu")
    assert argv[0] == "/usr/bin/qemu"
    assert "if=none,id=d,file=card.img,format=raw,snapshot=on" in argv
    assert "if=none,id=n,file=null-co://" in argv
    # accel=qtest, as written (it names an accelerator: none added); -nographic
    # without -nodefaults or -serial would claim stdio: dropped
    assert argv[1:3] == ["-machine", "accel=qtest,"] and "-accel" not in argv
    assert "-nographic" not in argv
    assert argv[-6:] == ["-display", "none", "-qtest", "stdio", "-qtest-log", "none"]


def test_replay_machine_of_a_field_reproducer(tmp_path: Path) -> None:
    m = replay.replay_machine(FIELD / "header-q35-bar-febf1000.qtest")
    assert m.type == "q35" and m.ram == 256 << 20 and m.image == CardImage.null(64 << 20)
    bad = tmp_path / "bad.sh"
    bad.write_text("cat << EOF | qemu-system-x86_64 -M q35 -qtest stdio\nreadl 0\nEOF\n")
    # no sdhci-pci the model can mirror: QEMU still runs it, the model does not
    assert replay.replay_machine(bad) == replay.DEFAULT_MACHINE
    pl = replay.plan(bad, Path("/b/qemu-system-x86_64"))
    assert pl.argv is not None and "sdhci-pci" in pl.model_reason


def _shadow() -> _PciShadow:
    return _PciShadow(devfn=0x10, ram=512 << 20)


def test_bar_is_mapped_where_the_trace_puts_it_while_memory_is_enabled() -> None:
    p = _shadow()
    p.cf8 = 0x80001010
    p.write(0xCFC, 4, 0xD0000000)
    assert p.bar is None                       # Memory Space not enabled yet
    p.cf8 = 0x80001004
    p.write(0xCFC, 2, 0x0002)
    assert p.bar == 0xD0000000
    p.cf8 = 0x80001010
    p.write(0xCFC, 4, 0xFEBF10FF)              # low bits are the BAR's size: dropped
    assert p.bar == 0xFEBF1000
    p.write(0xCFC, 4, 0x00100000)              # under RAM: RAM wins
    assert p.bar is None
    p.write(0xCFC, 4, 0xFFFFFF00)              # size probe: unmapped (wraps)
    assert p.bar is None
    p.cf8 = 0x80001004
    p.write(0xCFC, 2, 0)
    p.cf8 = 0x80001010
    p.write(0xCFC, 4, 0xE0000000)
    assert p.bar is None                       # disabled again


def test_config_offset_ors_the_latch_low_bits_as_qemu_does() -> None:
    p = _shadow()
    # QEMU's fuzzer reproducers: "outl 0xcf8 0x80001003; outl 0xcfc V" writes
    # config bytes 3..6, i.e. the COMMAND register from V's second byte.
    p.cf8 = 0x80001010
    p.write(0xCFC, 4, 0xE0000000)
    p.cf8 = 0x80001003
    p.write(0xCFC, 4, 0x3EFFE00)
    assert p.bar == 0xE0000000
    p.cf8 = 0x80001810  # another function: ignored
    p.write(0xCFC, 4, 0xC0000000)
    assert p.bar == 0xE0000000
    p.cf8 = 0x00001010  # enable bit clear: no config cycle
    p.write(0xCFC, 4, 0xC0000000)
    assert p.bar == 0xE0000000


def test_model_replay_compares_registers_at_the_trace_bar() -> None:
    """Hand-made answers (no QEMU): a BAR at 0xd0000000 reached through
    readl and through the guest-memory commands; a wrong answer is caught."""
    bar = 0xD0000000
    cap = None
    from harness.machine import Machine
    from harness.model.target import ModelTarget

    machine = Machine(image=CardImage.null(16 << 20))
    cap = ModelTarget(machine).read(0x40, 4)
    res = ReplayResult(sdhci_devfn=8)
    res.answers = [
        ("outl 0xcf8 0x80000810", "OK"), (f"outl 0xcfc {bar:#x}", "OK"),
        ("outl 0xcf8 0x80000804", "OK"), ("outw 0xcfc 0x2", "OK"),
        (f"readl {bar + 0x40:#x}", f"OK {cap:#x}"),
        (f"read {bar + 0x40:#x} 0x4", "OK 0x" + cap.to_bytes(4, "little").hex()),
        (f"readw {bar + 0xFE:#x}", "OK 0x1234"),  # wrong on purpose
        ("readl 0xc0000000", "OK 0x0"),           # not the device: not compared
    ]
    replay.replay_model(res, NEWEST, machine)
    assert res.model_checked and res.model_reads == 3
    assert len(res.model_diffs) == 1 and res.model_diffs[0].startswith(f"readw {bar + 0xFE:#x}")
    assert "1 accesses outside" in res.model_reason


def test_a_bar_above_low_ram_of_a_4g_pc_is_mapped() -> None:
    """-m 4G on pc: RAM below 4 GiB ends at 3 GiB (the rest is above 4 GiB),
    so a BAR at 0xd7055d00 is the device's, not RAM (LP#1909418's run)."""
    p = _PciShadow(devfn=0x10, ram=4 << 30, low_ram=0xC000_0000)
    p.cf8 = 0x80001010
    p.write(0xCFC, 4, 0xD7055D00)
    p.cf8 = 0x80001004
    p.write(0xCFC, 2, 0x0002)
    assert p.bar == 0xD7055D00
    assert _PciShadow(devfn=0x10, ram=4 << 30, cf8=0x80001010, config=p.config).bar is None
