"""The machine description: JSON, command line, model parameters, reproducer
header, probe JSON.  No QEMU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.machine import CardImage, Machine, Props, PropValue, reproducer_header
from harness.model.target import ModelTarget, model_params
from harness.profile import BuildProfile
from harness.qemu import builds
from harness.qemu.argv import qemu_argv, shell_line
from harness.replay import engine as replay


def _full(tmp_path: Path) -> Machine:
    return Machine("pc-i440fx-9.0", ram=256 << 20,
                   sdhci={"sd-spec-version": 3, "uhs": 1},
                   card={"spec_version": 2, "erase-blocks-as-zero": False},
                   image=CardImage(tmp_path / "card.qcow2", format="qcow2"), bar0=0xD000_0000)


def test_json_round_trip(tmp_path: Path) -> None:
    for m in (Machine(), Machine.bare("none"), _full(tmp_path),
              Machine(image=CardImage.null(16 << 20)),
              Machine(image=CardImage(tmp_path / "ro.img", readonly=True))):
        back = Machine.loads(m.dumps())
        assert back == m and hash(back) == hash(m)
        assert "\n" not in m.dumps()


def test_props_are_immutable_and_compare_as_mappings() -> None:
    m = Machine(card={"spec_version": 2})
    assert isinstance(m.card, Props) and m.card == {"spec_version": 2}
    ab: dict[str, PropValue] = {"a": 1, "b": "x"}
    ba: list[tuple[str, PropValue]] = [("b", "x"), ("a", 1)]
    assert Props(ab) == Props(ba) and hash(Props(ab)) == hash(Props(ba))
    with pytest.raises(TypeError):
        m.card["spec_version"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        m.type = "pc"  # type: ignore[misc]
    assert m.replace(type="pc").type == "pc" and m.type == "q35"


@pytest.mark.parametrize("kwargs,match", [
    ({"ram": (128 << 20) + 1}, "MiB"),
    ({"sdhci": None}, "SD bus"),
    ({"card": None, "image": CardImage.null(1 << 20)}, "sd-card"),
    ({"card": {"drive": "x"}}, "drive"),
])
def test_inconsistent_descriptions_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Machine(**kwargs)  # type: ignore[arg-type]


def test_card_image_is_a_file_or_a_null_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CardImage()
    with pytest.raises(ValueError):
        CardImage(tmp_path / "x.img", size=1 << 20)


def test_missing_json_keys_take_the_defaults() -> None:
    assert Machine.from_json({"type": "pc"}) == Machine("pc")
    assert Machine.from_json({"sdhci": None, "card": None}) == Machine.bare()


def test_newer_json_format_is_refused() -> None:
    d = Machine().to_json()
    d["format"] = 99
    with pytest.raises(ValueError, match="format"):
        Machine.from_json(d)


def test_argv_of_the_default_machine() -> None:
    assert qemu_argv("/q", Machine()) == [
        "/q", "-machine", "q35", "-accel", "qtest", "-nodefaults", "-display", "none",
        "-m", "128M", "-seed", "1", "-qtest", "stdio",
        "-device", "sdhci-pci,id=sdhci", "-device", "sd-card,id=card"]
    bare = qemu_argv("/q", Machine.bare("none"), accel="tcg")
    assert "-device" not in bare and bare[3:6] == ["-accel", "tcg", "-S"]


def test_argv_of_a_full_machine(tmp_path: Path) -> None:
    argv = qemu_argv("/q", _full(tmp_path), qtest="unix:/s", qtest_log="/dev/null",
                     qmp=Path("/m"), snapshot=True)
    assert argv[:3] == ["/q", "-machine", "pc-i440fx-9.0"]
    assert argv[argv.index("-m") + 1] == "256M"
    assert argv[argv.index("-qtest") + 1] == "unix:/s"
    assert argv[argv.index("-qtest-log") + 1] == "/dev/null"
    assert argv[argv.index("-chardev") + 1] == "socket,path=/m,id=qmp"
    assert argv[argv.index("-drive") + 1] == (
        f"if=none,id=sdcard,file={tmp_path}/card.qcow2,format=qcow2,"
        "cache=writethrough,snapshot=on")
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert devices == ["sdhci-pci,id=sdhci,sd-spec-version=3,uhs=1",
                       "sd-card,id=card,drive=sdcard,spec_version=2,erase-blocks-as-zero=off"]


def test_argv_of_a_null_image_and_awkward_paths() -> None:
    argv = qemu_argv("/q", Machine(image=CardImage.null(16 << 20)))
    assert argv[argv.index("-drive") + 1] == (
        "if=none,id=sdcard,file=null-co://,file.size=16M,format=raw,size=16M")
    argv = qemu_argv("/q", Machine(image=CardImage(Path("/a,b.img"), readonly=True)))
    assert argv[argv.index("-drive") + 1] == (
        "if=none,id=sdcard,file=/a,,b.img,format=raw,readonly=on")
    assert shell_line(["/my qemu", "-x", "a b"]) == "\"${QEMU:-/my qemu}\" -x 'a b'"


def test_devices_override() -> None:
    argv = qemu_argv("/q", Machine(), devices=["-device", "foo"])
    assert argv[-2:] == ["-device", "foo"] and argv.count("-device") == 1


def test_model_parameters_from_qemu_property_names() -> None:
    m = Machine(sdhci={"sd-spec-version": 3, "capareg": "0x1", "maxcurr": 5, "uhs": 1},
                card={"spec_version": 2, "erase-blocks-as-zero": "off"})
    host, card = model_params(m)
    assert host == {"sd_spec_version": 3, "capareg": "0x1", "maxcurr": 5, "uhs_mode": 1}
    assert card == {"spec_version": 2, "erase_blocks_as_zero": False}
    with pytest.raises(ValueError, match="no sd-card property 'bogus'"):
        model_params(Machine(card={"bogus": 1}))
    with pytest.raises(ValueError, match="not a boolean"):
        model_params(Machine(card={"erase-blocks-as-zero": "maybe"}))


def test_model_target_mirrors_the_machine(tmp_path: Path) -> None:
    t = ModelTarget(Machine(sdhci={"sd-spec-version": 3}, image=CardImage.null(1 << 20)))
    assert t.read(0xFE, 2) & 0xFF == 2  # HCVER: spec 3.00
    assert t.card.inserted and t.image_read(0, 4) == bytes(4)
    assert isinstance(t.deviations_consulted(), set)
    with pytest.raises(ValueError, match="raw"):
        ModelTarget(Machine(image=CardImage(tmp_path / "c.qcow2", format="qcow2")))
    with pytest.raises(ValueError, match="sdhci-pci"):
        ModelTarget(Machine.bare())
    with pytest.raises(ValueError, match="read-only"):
        ModelTarget(Machine(image=CardImage(tmp_path / "c.img", readonly=True)))
    assert not ModelTarget(Machine(card=None)).card.inserted


def test_reproducer_header_round_trip(tmp_path: Path) -> None:
    m = _full(tmp_path)
    trace = tmp_path / "t.qtest"
    trace.write_text(reproducer_header(m, "scenario x\n  step 3") + "readw 0x10\n")
    assert trace.read_text().startswith("# scenario x\n#   step 3\n# machine: {")
    assert replay.machine_of(trace) == m
    assert replay.read_trace(trace) == ["readw 0x10"]
    (tmp_path / "card.qcow2").write_bytes(b"")
    assert replay.replay_machine(trace) == m
    assert replay.replay_machine(trace, "q35") == m.replace(type="q35")


def test_trace_without_header_gets_the_default_machine(tmp_path: Path) -> None:
    trace = tmp_path / "fuzz.qtest"
    trace.write_text("outl 0xcf8 0x80000000\n# machine: {\"late\": 1}\n")
    assert replay.machine_of(trace) is None
    assert replay.replay_machine(trace) == replay.DEFAULT_MACHINE


def test_missing_or_bad_header_image(tmp_path: Path) -> None:
    trace = tmp_path / "t.qtest"
    trace.write_text(reproducer_header(_full(tmp_path)) + "readw 0x10\n")
    with pytest.raises(replay.ReplayError, match="does not exist"):
        replay.replay_machine(trace)
    own = replay.replay_machine(trace, own_devices=True)
    assert own.image == replay.DEFAULT_MACHINE.image and own.type == "pc-i440fx-9.0"
    trace.write_text("# machine: {not json\nreadw 0x10\n")
    with pytest.raises(replay.ReplayError, match="bad machine header"):
        replay.machine_of(trace)


def test_probe_json_nests_the_profile() -> None:
    prof = BuildProfile(version=(10, 0, 13), machine_types=("pc-q35-10.0", "q35"),
                        sd_card_properties={"spec_version": "3"},
                        sdhci_properties={"capareg": None}, has_qtest_accel=False,
                        package="Debian 1:10.0.13")
    b = builds.QemuBuild("10.0", Path("/q"), prof, aliases={"q35": "pc-q35-10.0"},
                         default_machine="pc-i440fx-10.0", has_sdhci_pci=True)
    assert b.version == "10.0.13"
    assert b.offers("q35") and b.offers("pc-q35-10.0") and not b.offers("pc")
    d = builds.to_json(b)
    assert d["format"] == builds.CACHE_FORMAT and d["profile"]["package"] == prof.package
    assert builds.from_json(d) == b
    with pytest.raises(ValueError, match="format"):
        builds.from_json({**d, "format": 1})
