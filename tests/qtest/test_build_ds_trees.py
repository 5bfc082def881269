"""``sdqtest qemu build`` on Debian's ``+ds`` trees: what the pool's tarballs lack.

A ``+ds`` tarball has no edk2 blobs and no ``.dtb`` files.  Debian's own
``skip-unpack-edk2-blobs.patch`` keeps meson from unpacking the blobs; the
pool's ``qemu_11.0.3+ds.orig.tar.xz`` comes without Debian's patches (its
``.dsc`` is gone), and its meson stops at the first missing ``.bz2`` while
``bzip2`` is on PATH.  The trees here are small fakes of those files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.provision.build import (
    QemuTreeBuilder,
    configure_flags,
    meson_flag,
    needs_dtc,
    needs_fdt,
    path_without,
    unpacks_absent_edk2,
)

_UNPATCHED = """roms = []
if unpack_edk2_blobs
  fds = [
    'edk2-aarch64-code.fd',
    'edk2-x86_64-code.fd',
  ]
endif
"""


def _tree(tmp_path: Path, meson: str, blobs: tuple[str, ...] = ()) -> Path:
    src = tmp_path / "qemu"
    (src / "pc-bios").mkdir(parents=True)
    (src / "pc-bios" / "meson.build").write_text(meson)
    for b in blobs:
        (src / "pc-bios" / b).write_bytes(b"")
    return src


def test_unpatched_ds_tree_unpacks_absent_blobs(tmp_path: Path) -> None:
    assert unpacks_absent_edk2(_tree(tmp_path, _UNPATCHED))


def test_debian_patched_tree_does_not(tmp_path: Path) -> None:
    patched = _UNPATCHED.replace("if unpack_edk2_blobs\n", "if unpack_edk2_blobs and false\n")
    assert not unpacks_absent_edk2(_tree(tmp_path, patched))


def test_upstream_tree_with_blobs_does_not(tmp_path: Path) -> None:
    src = _tree(tmp_path, _UNPATCHED,
                ("edk2-aarch64-code.fd.bz2", "edk2-x86_64-code.fd.bz2"))
    assert not unpacks_absent_edk2(src)


def test_dtc_needed_only_without_dtb_files(tmp_path: Path) -> None:
    src = tmp_path / "qemu"
    (src / "pc-bios" / "dtb").mkdir(parents=True)
    (src / "pc-bios" / "dtb" / "meson.build").write_text("dtbs = [\n  'bamboo.dtb',\n]\n")
    assert needs_dtc(src)
    (src / "pc-bios" / "dtb" / "bamboo.dtb").write_bytes(b"")
    assert not needs_dtc(src)
    assert not needs_dtc(tmp_path / "nothing-here")


def _exe(d: Path, name: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text("#!/bin/sh\n")
    (d / name).chmod(0o755)


def test_path_without_hides_one_command(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for name in ("bzip2", "cc"):
        _exe(a, name)
    _exe(b, "cc")
    _exe(b, "ninja")
    (b / "notes.txt").write_text("not a command")
    shim = path_without("bzip2", os.pathsep.join([str(a), str(b)]), tmp_path / "shim")
    names = sorted(p.name for p in shim.iterdir())
    assert names == ["cc", "ninja"]
    assert (shim / "cc").resolve() == (a / "cc").resolve()  # the first on PATH wins


def test_build_env_hides_bzip2_for_such_a_tree(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    for name in ("bzip2", "cc"):
        _exe(bindir, name)
    monkeypatch.setenv("PATH", str(bindir))
    b = QemuTreeBuilder(tmp_path / "build", tools_dir=tmp_path / "tools")
    src = _tree(tmp_path, _UNPATCHED)
    path = b._env(src)["PATH"].split(os.pathsep)
    assert not any((Path(d) / "bzip2").exists() for d in path)
    assert any((Path(d) / "cc").exists() for d in path)
    assert b._env()["PATH"] == str(bindir)  # other trees: PATH as it is


def test_firmware_links_default_device_roms(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without -nodefaults loads its default VGA and NIC ROMs too:
    every .bin/.rom the tree or a host firmware folder has is linked, the
    tree's own first; other files are not."""
    import io

    from harness.provision import firmware

    src, host = tmp_path / "src", tmp_path / "seabios"
    (src / "pc-bios").mkdir(parents=True)
    host.mkdir()
    (src / "pc-bios" / "bios-256k.bin").write_bytes(b"tree")
    (src / "pc-bios" / "meson.build").write_text("")
    (host / "bios-256k.bin").write_bytes(b"host")
    (host / "vgabios-stdvga.bin").write_bytes(b"vga")
    (host / "efi-e1000e.rom").write_bytes(b"nic")
    monkeypatch.setattr(firmware, "fallback_dirs", lambda: [host])
    b = QemuTreeBuilder(tmp_path / "build", tools_dir=tmp_path / "tools")
    b.build_dir.mkdir()
    b._firmware(src, io.StringIO())
    linked = b.build_dir / "pc-bios"
    assert (linked / "bios-256k.bin").read_bytes() == b"tree"
    assert (linked / "vgabios-stdvga.bin").read_bytes() == b"vga"
    assert (linked / "efi-e1000e.rom").read_bytes() == b"nic"
    assert not (linked / "meson.build").exists()


#: What 7.2's ``configure --help`` says of meson and Python (abridged).
_HELP_7_2 = """
  --python=PYTHON          use specified python [python3]
  --meson=MESON            use specified meson []
  --ninja=NINJA            use specified ninja []
"""
_HELP_10 = """
  --python=PYTHON          use specified python [python3]
  --ninja=NINJA            use specified ninja []
"""


def test_private_meson_goes_where_configure_takes_it(tmp_path: Path) -> None:
    """7.2 refuses ``--python`` without its embedded meson, which Debian's
    ``+dfsg`` tarball lacks: the venv's meson goes in ``--meson``; 8.1 and
    later take the venv's Python."""
    py = tmp_path / "venv" / "bin" / "python3"
    assert meson_flag(_HELP_7_2, py) == f"--meson={tmp_path}/venv/bin/meson"
    assert meson_flag(_HELP_10, py) == f"--python={py}"


def test_fdt_kept_where_the_target_needs_it(tmp_path: Path) -> None:
    """7.2's x86_64 target sets TARGET_NEED_FDT: ``--disable-fdt`` would stop
    meson, so the system libfdt is asked for; a 10.x target keeps it off."""
    help_text = "  --without-default-features\n  --enable-fdt[=CHOICE]\n  --disable-docs\n"
    mak = tmp_path / "configs" / "targets" / "x86_64-softmmu.mak"
    mak.parent.mkdir(parents=True)
    mak.write_text("TARGET_ARCH=x86_64\nTARGET_NEED_FDT=y\n")
    assert needs_fdt(tmp_path)
    flags = configure_flags(help_text, tmp_path)
    assert "--enable-fdt=system" in flags and "--disable-fdt" not in flags
    mak.write_text("TARGET_ARCH=x86_64\n")
    flags = configure_flags(help_text, tmp_path)
    assert "--disable-fdt" in flags and "--enable-fdt=system" not in flags


def test_arm_target_list_and_its_fdt(tmp_path: Path) -> None:
    """``qemu build --arm``: one configure for both emulators; aarch64 always
    needs libfdt (its .mak says so) even where the x86 target does not."""
    help_text = "  --without-default-features\n  --enable-fdt[=CHOICE]\n  --disable-docs\n"
    targets = tmp_path / "configs" / "targets"
    targets.mkdir(parents=True)
    (targets / "x86_64-softmmu.mak").write_text("TARGET_ARCH=x86_64\n")
    (targets / "aarch64-softmmu.mak").write_text("TARGET_ARCH=aarch64\nTARGET_NEED_FDT=y\n")
    b = QemuTreeBuilder(build_dir=tmp_path / "b", arm=True)
    assert b.binaries == ("qemu-system-x86_64", "qemu-system-aarch64")
    flags = configure_flags(help_text, tmp_path, b.system_targets)
    assert "--target-list=x86_64-softmmu,aarch64-softmmu" in flags
    assert "--enable-fdt=system" in flags
    assert "--disable-fdt" in configure_flags(help_text, tmp_path)


def test_riscv_target_list_beside_arm(tmp_path: Path) -> None:
    """``qemu build --arm --riscv``: one configure and one ninja for the three
    emulators (hw/sd compiled once); riscv64's .mak needs libfdt too;
    ``x86=False`` leaves the board targets alone."""
    help_text = "  --without-default-features\n  --enable-fdt[=CHOICE]\n  --disable-docs\n"
    targets = tmp_path / "configs" / "targets"
    targets.mkdir(parents=True)
    (targets / "x86_64-softmmu.mak").write_text("TARGET_ARCH=x86_64\n")
    (targets / "riscv64-softmmu.mak").write_text("TARGET_ARCH=riscv64\nTARGET_NEED_FDT=y\n")
    b = QemuTreeBuilder(build_dir=tmp_path / "b", arm=True, riscv=True)
    assert b.binaries == ("qemu-system-x86_64", "qemu-system-aarch64", "qemu-system-riscv64")
    assert b.system_targets == ("x86_64-softmmu", "aarch64-softmmu", "riscv64-softmmu")
    r = QemuTreeBuilder(build_dir=tmp_path / "r", riscv=True, x86=False)
    assert r.binaries == ("qemu-system-riscv64",)
    flags = configure_flags(help_text, tmp_path, r.system_targets)
    assert "--target-list=riscv64-softmmu" in flags and "--enable-fdt=system" in flags
