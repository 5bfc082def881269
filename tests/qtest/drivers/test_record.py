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
    out = record_board.edited_dtb(record_board.BOARDS["smdkc210"], dtb, work)
    assert out.parent == work and dtb.read_bytes() == before

    def fdtget(*args: str) -> str:
        return subprocess.run(["fdtget", *args], capture_output=True, text=True,
                              timeout=60).stdout.strip()

    node = (str(out), "/soc/mmc@12510000")
    assert fdtget(*node, "status") == "okay" and fdtget(*node, "bus-width") == "4"
    assert "non-removable" in fdtget("-p", *node).split()
    assert record_board.edited_dtb(record_board.BOARDS["vexpress-a9"], dtb, work) == dtb
