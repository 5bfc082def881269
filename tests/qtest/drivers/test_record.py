"""A recording guest's pieces, without a boot: kernel modules from an extracted image
package, the board's initramfs and QEMU command line, the recording /init."""

from __future__ import annotations

import lzma
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from harness.guest import cpio, record, record_board, record_init
from harness.guest.record_modules import module_closure, module_index
from harness.provision.install import InstallError


def _ko(depends: str) -> bytes:
    """Enough of a module for the closure: a ``.modinfo`` string among others."""
    return b"\x7fELF...\x00license=GPL\x00depends=" + depends.encode() + b"\x00vermagic=x\x00"


def _package(tmp: Path) -> Path:
    mods = tmp / "usr/lib/modules/6.12.1-amd64/kernel/drivers/mmc"
    mods.mkdir(parents=True)
    (mods / "sdhci-pci.ko.xz").write_bytes(lzma.compress(_ko("sdhci,cqhci,mmc_core")))
    (mods / "sdhci.ko").write_bytes(_ko("mmc_core"))
    (mods / "cqhci.ko").write_bytes(_ko(""))
    return tmp


def test_modules_come_with_their_dependencies_first_and_decompressed(tmp_path: Path) -> None:
    kver, index = module_index(_package(tmp_path))
    assert kver == "6.12.1-amd64" and set(index) == {"sdhci_pci", "sdhci", "cqhci"}
    order = module_closure(index, ("sdhci-pci",))  # mmc_core: built in, not in the index
    assert [n for n, _ in order] == ["sdhci.ko", "cqhci.ko", "sdhci-pci.ko"]
    assert order[-1][1] == _ko("sdhci,cqhci,mmc_core")
    with pytest.raises(InstallError, match="no lib/modules"):
        module_index(tmp_path / "empty")


def test_a_boards_initramfs_and_command_line(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/busybox").write_bytes(b"\x7fELF busybox")
    order = [("sdhci.ko", b"A"), ("sdhci-esdhc-imx.ko", b"B")]
    out = record_board.initramfs(tmp_path, order, {"sdqtest/write-512.bin": b"\x5d" * 4},
                                 tmp_path / "initrd.gz")
    members = {e.path: e for e in cpio.read_archive(out.read_bytes())}
    assert members["init"].mode & stat.S_IXUSR and members["init"].data == \
        record_init.INIT.encode()
    assert members["sdqtest/modules"].data == b"/lib/modules/sdhci.ko\n" \
        b"/lib/modules/sdhci-esdhc-imx.ko\n"
    assert members["sdqtest/write-512.bin"].data == b"\x5d" * 4
    b = record_board.BOARDS["mcimx7d-sabre"]
    build = type("B", (), {"binary": Path("/q/qemu-system-aarch64")})()
    argv = record_board.argv(build, b, Path("vmlinuz"), Path("x.dtb"), out,  # type: ignore[arg-type]
                             Path("card.img"), "console=ttymxc0", Path("trace.log"))
    assert argv[:3] == ["/q/qemu-system-aarch64", "-M", "mcimx7d-sabre"]
    assert f"if=sd,index={b.sd_index},file=card.img,format=raw" in argv
    assert argv[-len(record.trace_args(Path("trace.log"))):] == \
        record.trace_args(Path("trace.log"))


def test_the_init_marks_each_phase_and_knows_every_region() -> None:
    init = record_init.INIT
    assert "phase probe" in init and all(f"sdqtest.{p}" in record_init.kernel_args()
                                         for p in record_init.REGIONS)
    assert "devmem $at 32 $1" in init and "/dev/port" in init  # a board's marks, a PC's
    for phase in record_init.PHASES:
        assert phase in record_init.DID and phase in record_init.DID_DD
    assert set(record_init.PATTERNS) <= set(record_init.REGIONS)


def test_the_icicle_kits_tree_and_command_line(tmp_path: Path) -> None:
    """microchip-icicle-kit: OpenSBI, five harts, the console on the second port,
    and a copy of the tree with the board's edits and the /chosen QEMU leaves
    unwritten (hw/riscv/microchip_pfsoc.c loads -dtb after -append and -initrd)."""
    b = record_board.BOARDS["microchip-icicle-kit"]
    edits = b.dtb_edits + record_board.chosen(b, "console=ttyS1 x=1", 100)
    assert edits[-3:] == (("-ts", "/chosen", "bootargs", "console=ttyS1 x=1"),
                          ("-tu", "/chosen", "linux,initrd-start", str(b.initrd_at)),
                          ("-tu", "/chosen", "linux,initrd-end", str(b.initrd_at + 100)))
    assert record_board.chosen(record_board.BOARDS["mcimx7d-sabre"], "x", 1) == ()
    build = type("B", (), {"binary": Path("/q/qemu-system-riscv64")})()
    argv = record_board.argv(build, b, Path("vmlinux"), Path("x.dtb"), Path("i.gz"),  # type: ignore[arg-type]
                             Path("card.img"), "console=ttyS1", Path("trace.log"))
    assert ["-bios", "default", "-smp", "5"] == argv[argv.index("-bios"):][:4]
    assert ["-serial", "null", "-serial", "stdio"] == argv[argv.index("-serial"):][:4]
    dtc = shutil.which("dtc")
    if dtc is None or shutil.which("fdtput") is None:
        pytest.skip("device-tree-compiler is not installed")
    src = tmp_path / "t.dts"
    src.write_text("/dts-v1/;\n/ { chosen { }; memory@1040000000 { status = \"okay\"; }; };\n")
    dtb = tmp_path / "in" / "t.dtb"
    dtb.parent.mkdir()
    subprocess.run([dtc, "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)], check=True,
                   timeout=60)
    out = record_board.board_dtb(dtb, edits, b.machine, tmp_path)
    assert out == tmp_path / "t.dtb" and record_board.board_dtb(dtb, (), b.machine, tmp_path) == dtb

    def get(node: str, prop: str, kind: str = "s") -> str:
        return subprocess.run(["fdtget", "-t", kind, str(out), node, prop], check=True,
                              capture_output=True, text=True, timeout=60).stdout.strip()

    assert get("/memory@1040000000", "status") == "disabled"
    assert get("/chosen", "bootargs") == "console=ttyS1 x=1"
    assert get("/chosen", "linux,initrd-end", "u") == str(b.initrd_at + 100)


DTS = """/dts-v1/;
/ { #address-cells = <1>; #size-cells = <1>;
  soc { #address-cells = <1>; #size-cells = <1>;
    gpio@7e200000 { reg = <0x7e200000 0xb4>;
      emmc_gpio34 { brcm,pins = <34>; phandle = <0x13>; };
      emmc_gpio48 { brcm,pins = <48 49 50 51 52 53>; brcm,function = <7>; }; };
    mmc@7e202000 { reg = <0x7e202000 0x100>; status = "okay"; };
    mmc@7e300000 { reg = <0x7e300000 0x100>; status = "okay"; pinctrl-0 = <0x13>;
      mmc-pwrseq = <0x14>; #address-cells = <1>; #size-cells = <0>;
      wifi@1 { reg = <1>; }; }; };
  wifi-pwrseq { phandle = <0x14>; }; };
"""


@pytest.mark.skipif(shutil.which("fdtput") is None or shutil.which("dtc") is None,
                    reason="needs Debian's device-tree-compiler (fdtput, dtc)")
def test_raspi3bs_device_tree_gives_the_sdhci_the_card(tmp_path: Path) -> None:
    """The Pi 3 B tree's SDHOST disabled, the SDHCI without the WiFi's power sequence
    and child, muxed to pins 48-53 (ALT3) through a phandle the tree did not use."""
    src = tmp_path / "in.dts"
    src.write_text(DTS)
    dtb = tmp_path / "bcm2837-rpi-3-b.dtb"
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)],
                   check=True, timeout=60)
    b = record_board.BOARDS["raspi3b"]
    work = tmp_path / "work"
    work.mkdir()
    out = record_board.board_dtb(dtb, b.dtb_edits, b.machine, work)
    assert out != dtb and dtb.read_bytes() != out.read_bytes()

    def get(node: str, prop: str = "", *opts: str) -> str:
        cmd = ["fdtget", *opts, str(out), node, *([prop] if prop else [])]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                               check=False).stdout.strip()

    assert get("/soc/mmc@7e202000", "status") == "disabled"
    assert "mmc-pwrseq" not in get("/soc/mmc@7e300000", "", "-p")
    assert get("/soc/mmc@7e300000", "", "-l") == ""  # wifi@1 gone
    assert get("/soc/mmc@7e300000", "pinctrl-0", "-tx") == \
        get("/soc/gpio@7e200000/emmc_gpio48", "phandle", "-tx") == "1d"
    assert record_board.dtb_edit_text(b.dtb, b.dtb_edits, "x")[0] == \
        "fdtput -t s bcm2837-rpi-3-b.dtb /soc/mmc@7e202000 status disabled"
    clash = b.dtb_edits[:3] + (("-t", "x", "/soc/gpio@7e200000/emmc_gpio48", "phandle",
                                "0x13"),)
    with pytest.raises(InstallError, match="dtc"):
        record_board.board_dtb(dtb, clash, b.machine, work)


@pytest.mark.skipif(not (shutil.which("dtc") and shutil.which("fdtput")),
                    reason="device-tree-compiler not installed")
def test_a_boards_dtb_edits_are_made_on_a_copy(tmp_path: Path) -> None:
    """smdkc210's edits: the SDHCI 0 node enabled, 4 bits wide, non-removable
    (Linux's sdhci-s3c reads them: of_property_read_bool, bus-width)."""
    src = tmp_path / "in.dts"
    src.write_text('/dts-v1/;\n/ { soc { mmc@12510000 { status = "disabled"; }; }; };\n')
    dtb = tmp_path / record_board.BOARDS["smdkc210"].dtb
    subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)], check=True,
                   capture_output=True, timeout=60)
    before = dtb.read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    b = record_board.BOARDS["smdkc210"]
    out = record_board.board_dtb(dtb, b.dtb_edits, b.machine, work)
    assert out.parent == work and dtb.read_bytes() == before

    def fdtget(*args: str) -> str:
        return subprocess.run(["fdtget", *args], capture_output=True, text=True,
                              timeout=60).stdout.strip()

    node = (str(out), "/soc/mmc@12510000")
    assert fdtget(*node, "status") == "okay" and fdtget(*node, "bus-width") == "4"
    assert "non-removable" in fdtget("-p", *node).split()
    assert record_board.board_dtb(dtb, (), "vexpress-a9", work) == dtb


def test_the_icicle_fix_for_qemu_applies_to_the_source_releases_it_is_for() -> None:
    """docs/qemu-patches' microchip_pfsoc fix (the -dtb loaded before the kernel, so
    -append and -initrd reach /chosen) applies to each 10.2-and-later source tree at
    hand; and the tree it is against still loads the -dtb after the kernel."""
    from harness.paths import cache_dir

    patch = (Path(__file__).parents[3] / "docs" / "qemu-patches"
             / "0001-hw-riscv-microchip_pfsoc-load-the-dtb-before-the-kernel.patch")
    text = patch.read_text()
    assert text.startswith("From: ") and "Subject: [PATCH] hw/riscv/microchip_pfsoc" in text
    trees = [d for v in ("10.2.2", "11.1.1")
             if (d := cache_dir() / "source" / v / "src" / "hw/riscv/microchip_pfsoc.c").exists()]
    if not trees or shutil.which("patch") is None:
        pytest.skip("no 10.2.2 or 11.1.1 source tree (sdqtest qemu build VERSION)")
    for c in trees:
        src = c.read_text()
        assert src.index("riscv_load_kernel(machine") < src.index("load_device_tree(machine")
        r = subprocess.run(["patch", "-p1", "--dry-run", "-s", "-i", str(patch)],
                           cwd=c.parents[2], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
