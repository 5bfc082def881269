"""The guest benchmark's pieces: console protocol, initramfs, card checks, bad input,
and one real boot of the guest on the newest build that reads the card's pattern.

No test asserts a time.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.bench import guest as guest_bench
from harness.commands import bench as bench_cli
from harness.errors import GuestError
from harness.guest import assemble, card, cpio, elf, protocol, runner
from harness.guest.protocol import ProtocolError
from harness.provision.install import InstallError
from harness.pytest_plugin import selected_builds
from harness.qemu.builds import QemuBuild

# -- the console protocol ------------------------------------------------------------


def test_protocol_lines_parse() -> None:
    m = protocol.parse_line('SDQTEST-HELLO {"protocol": 1, "kernel": "6.1"}\r\n')
    assert m is not None and m.kind == "HELLO" and m.payload["kernel"] == "6.1"
    m = protocol.parse_line('SDQTEST-RESULT {"job": "pread:1:64", "ok": true, "sha256": "ab"}')
    assert m is not None and m.kind == "RESULT" and m.job == "pread:1:64"
    done = protocol.parse_line("SDQTEST-DONE \r")
    assert done is not None and done.kind == "DONE"
    assert protocol.parse_line("[    1.234] mmc0: new SDHC card at address 4567") is None
    # a kernel message not ended by a newline before the protocol line
    m = protocol.parse_line('[    2.0] random: crng initSDQTEST-START {"job": "fio:read:4:1:8"}')
    assert m is not None and m.kind == "START" and m.job == "fio:read:4:1:8"


@pytest.mark.parametrize("line,why", [
    ("SDQTEST-RESULT {not json", "not JSON"),
    ("SDQTEST-RESULT [1, 2]", "not a JSON object"),
    ('SDQTEST-RESULT {"ok": true}', 'without "job"'),
    ('SDQTEST-ERROR {"job": "x"}', 'without "error"'),
    ("SDQTEST-START", "without its JSON payload"),
    ("SDQTEST-BYE {}", "unknown protocol line"),
])
def test_protocol_rejects_malformed_lines(line: str, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        protocol.parse_line(line)


def test_console_transcript_and_fio_summary() -> None:
    fio = ('{"jobs": [{"read": {"io_bytes": 1048576, "bw_bytes": 2097152, "iops": 16.0, '
           '"clat_ns": {"mean": 5e7}}, "write": {"io_bytes": 0}}]}')
    log = "\n".join([
        "[    0.0] Linux version 6.1.0",
        'SDQTEST-HELLO {"protocol": 1}',
        'SDQTEST-START {"job": "fio:read:128:1:8"}',
        f'SDQTEST-RESULT {{"job": "fio:read:128:1:8", "ok": true, "fio": {fio}}}',
        'SDQTEST-ERROR {"job": "fio:write:128:1:8", "error": "fio missing from the initramfs"}',
        "SDQTEST-RESULT {broken",
        "SDQTEST-DONE",
    ])
    t = protocol.parse_console(log)
    assert t.hello == {"protocol": 1} and t.done
    assert t.started == ["fio:read:128:1:8"]
    assert t.errors == [("fio:write:128:1:8", "fio missing from the initramfs")]
    assert len(t.protocol_errors) == 1
    s = protocol.fio_summary(t.results["fio:read:128:1:8"])
    assert s == {"read_mibps": 2.0, "read_iops": 16.0, "read_clat_ms": 50.0}
    # the benchmark names the guest's error as the figure's status
    assert guest_bench._missing(t, "fio:write:128:1:8") == "error: fio missing from the initramfs"
    with pytest.raises(ProtocolError, match="no bytes"):
        protocol.fio_summary({"fio": {"jobs": [{"read": {"io_bytes": 0}}]}})


def test_jobs_param() -> None:
    assert protocol.jobs_param(["pread:1024:64", "discard:2048:16"]) == \
        "sdqtest.jobs=pread:1024:64,discard:2048:16"
    with pytest.raises(ValueError):
        protocol.jobs_param(["fio:read 4"])


# -- cpio, ELF, modules --------------------------------------------------------------


def test_cpio_round_trip() -> None:
    entries = [cpio.directory("bin"), cpio.file("bin/x", b"abc", executable=True),
               cpio.symlink("bin/sh", "x"), cpio.file("etc/empty", b"")]
    back = cpio.read_archive(cpio.gz_archive(entries))
    assert back == entries
    # two archives one after the other (the run-time extras appended to the initramfs)
    both = cpio.read_archive(cpio.archive(entries[:2]) + cpio.archive(entries[3:]))
    assert [e.path for e in both] == ["bin", "bin/x", "etc/empty"]


def test_elf_needed_of_python() -> None:
    info = elf.dynamic_info(Path(sys.executable).resolve())
    assert info.interp and info.interp.endswith("ld-linux-x86-64.so.2")
    assert "libc.so.6" in info.needed or "libpython" in " ".join(info.needed)


def test_kernel_without_mmc_modules_is_refused() -> None:
    with pytest.raises(InstallError, match="no module sdhci-pci .*no mmc support"):
        assemble.module_order(["sdhci-pci"], {}, set())
    assert assemble.module_order(["sdhci-pci"], {}, {"sdhci_pci"}) == []  # built in


def test_apt_depends_parser() -> None:
    text = textwrap.dedent("""\
        fio
          Depends: libaio1
         |Depends: librdmacm1
          Depends: librdmacm1t64
          Depends: <python3:any>
          PreDepends: libc6
        libaio1
          Depends: libc6
        """)
    assert assemble.parse_depends(text) == {"fio": ["libaio1", "librdmacm1", "libc6"],
                                            "libaio1": ["libc6"]}


# -- the card and the host checks ----------------------------------------------------


def test_pattern_is_computable_per_block() -> None:
    a = card.block(7, card.PATTERN_SEED)
    assert len(a) == card.BLOCK and a == card.block(7, card.PATTERN_SEED)
    assert a != card.block(8, card.PATTERN_SEED) != card.block(8, card.GUARD_SEED)
    assert card.pattern(7, 2, 1) == card.block(7, 1) + card.block(8, 1)
    assert card.uncovered(0, 100, [(10, 10), (50, 60)]) == [(0, 10), (20, 50)]


def test_host_checks_see_the_pattern_and_stray_writes(tmp_path: Path) -> None:
    lay = card.CardLayout.make(erase_mib=4, fio_mib=8, pattern_kib=128)
    img = tmp_path / "c.img"
    card.make_raw(img, lay)
    view = card.RawView(img, "raw")
    v = card.check_integrity(view, lay, wrote_pattern=True)
    assert not v.checks["pattern present"] and v.checks["nothing written outside the regions"]
    with open(img, "r+b") as f:
        f.seek(lay.pattern_at)
        f.write(lay.pattern_file())
    assert card.check_integrity(view, lay, wrote_pattern=True).ok
    erased, ev = card.check_erase(view, lay)
    assert erased == "not erased" and not ev.ok
    with open(img, "r+b") as f:
        f.seek(lay.erase_at)
        f.write(b"\xff" * lay.erase_bytes)
        f.seek(lay.read_at + lay.read_bytes + 3 * card.MIB)  # a stray write
        f.write(b"x")
    erased, ev = card.check_erase(view, lay)
    assert erased == "0xff" and ev.ok
    v = card.check_integrity(view, lay, wrote_pattern=True)
    assert not v.checks["nothing written outside the regions"]
    with open(img, "r+b") as f:
        f.seek(lay.erase_at - 1)  # damage the guard before the erase range
        f.write(b"\0")
    assert not card.check_erase(view, lay)[1].checks["erase guards intact"]


# -- bad input and reliability (a fake QEMU: no real boot) -------------------------------


def _fake_qemu(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake-qemu"
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return [str(script)]


def _run(argv: list[str], tmp_path: Path, boot: float = 3, job: float = 3) -> runner.GuestRun:
    return runner.run(argv, accel="tcg", console_log=tmp_path / "console.log",
                      boot_timeout=boot, job_timeout=lambda j: job, idle_timeout=3)


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def test_silent_guest_times_out_and_is_killed(tmp_path: Path) -> None:
    argv = _fake_qemu(tmp_path, f"echo $$ > {tmp_path}/pid\nexec sleep 60\n")
    with pytest.raises(GuestError, match=r"no output on the guest console within the boot "
                       r"timeout \(1 s\)"):
        _run(argv, tmp_path, boot=1)
    assert _gone(int((tmp_path / "pid").read_text()))


def test_guest_errors_are_one_line(tmp_path: Path) -> None:
    argv = _fake_qemu(tmp_path, """\
        echo '[    1.0] Linux version 9.9'
        echo 'SDQTEST-HELLO {"protocol": 1, "kernel": "9.9"}'
        echo 'SDQTEST-ERROR {"job": "boot", "error": "no /dev/mmcblk0 after 30 s: '\\
'kernel 9.9 has no mmc modules in this initramfs (built for 6.1.0-57-amd64)"}'
        sleep 60
        """)
    with pytest.raises(GuestError, match="^guest: no /dev/mmcblk0 .*no mmc modules") as e:
        _run(argv, tmp_path)
    assert "\n" not in str(e.value)


def test_job_timeout_and_early_exit(tmp_path: Path) -> None:
    argv = _fake_qemu(tmp_path, """\
        echo 'SDQTEST-HELLO {"protocol": 1}'
        echo 'SDQTEST-START {"job": "discard:2048:1024"}'
        sleep 60
        """)
    with pytest.raises(GuestError, match="job discard:2048:1024 did not finish") as e:
        _run(argv, tmp_path, job=1)
    assert e.value.job == "discard:2048:1024" and e.value.run is not None
    argv = _fake_qemu(tmp_path, "echo 'qemu-system-x86_64: -device sd-card: no such drive'\n")
    with pytest.raises(GuestError, match="QEMU exited before SDQTEST-DONE .*no such drive"):
        _run(argv, tmp_path)
    argv = _fake_qemu(tmp_path, """\
        echo '[    6.8] Failed to execute /init (error -2)'
        echo '[    6.9] Kernel panic - not syncing: No working init found.'
        """)
    with pytest.raises(GuestError, match="kernel panic: .*Failed to execute /init"):
        _run(argv, tmp_path)


def test_complete_guest_run(tmp_path: Path) -> None:
    argv = _fake_qemu(tmp_path, """\
        echo 'SDQTEST-HELLO {"protocol": 1}'
        echo 'SDQTEST-START {"job": "pread:1:64"}'
        echo 'SDQTEST-RESULT {"job": "pread:1:64", "ok": true, "sha256": "00"}'
        echo 'SDQTEST-DONE'
        """)
    r = _run(argv, tmp_path)
    assert r.transcript.done and r.transcript.results["pread:1:64"]["sha256"] == "00"
    assert set(r.job_host_s) == {"pread:1:64"}


def test_qemu_dies_with_a_killed_harness(tmp_path: Path) -> None:
    """The harness is SIGKILLed mid-boot (no cleanup runs): QEMU goes with it."""
    argv = _fake_qemu(tmp_path, f"echo $$ > {tmp_path}/pid\nexec sleep 120\n")
    code = (f"from pathlib import Path; from harness.guest import runner; "
            f"runner.run({argv!r}, accel='tcg', console_log=Path({str(tmp_path)!r}) / 'c.log', "
            f"boot_timeout=100, job_timeout=lambda j: 1)")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        end = time.monotonic() + 30
        while not (tmp_path / "pid").exists() and time.monotonic() < end:
            time.sleep(0.1)
        pid = int((tmp_path / "pid").read_text())
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert _gone(pid), "QEMU outlived the harness"


def test_qemu_command_line_is_one_function() -> None:
    argv = runner.qemu_argv("/q", image=Path("/i.img"), fmt="raw", kernel=Path("/k"),
                            initrd=Path("/r"), append="console=ttyS0", accel="tcg",
                            erase_blocks_as_zero=True)
    text = " ".join(argv)
    for part in ("-machine q35", "-m 512", "-device sdhci-pci",
                 "-device sd-card,id=card,drive=sdcard,erase-blocks-as-zero=on", "-kernel /k",
                 "-initrd /r", "-serial stdio", "file=/i.img,format=raw,cache=none"):
        assert part in text


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    bench_cli.add_guest_parser(sub)
    args = parser.parse_args(["guest", "--kernel", str(tmp_path / "nope"),
                              "--out", str(tmp_path)])
    assert args.func(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--kernel" in err and "no such file" in err


# -- the assembled guest and one real boot -------------------------------------------


@pytest.fixture(scope="module")
def guest() -> assemble.Guest:
    """The guest kernel and initramfs, assembled from Debian packages when missing."""
    return assemble.assemble(log=lambda m: print(m, flush=True))


@pytest.mark.slow
def test_initramfs_content(guest: assemble.Guest) -> None:
    members = {e.path: e for e in cpio.read_archive(guest.initramfs.read_bytes())}
    init = members["init"]
    assert init.mode & stat.S_IXUSR and init.data.startswith(b"#!/bin/busybox sh")
    for path in ("bin/busybox", "usr/bin/fio", "usr/sbin/blkdiscard",
                 "lib64/ld-linux-x86-64.so.2", "sdqtest/modules", "sdqtest/kernel"):
        assert path in members, path
        if not path.startswith("sdqtest"):
            assert members[path].mode & stat.S_IXUSR, path
    mods = members["sdqtest/modules"].data.decode().split()
    names = [Path(m).name for m in mods]
    for m in ("mmc_core.ko", "mmc_block.ko", "sdhci.ko", "sdhci-pci.ko"):
        assert m in names
    assert names.index("mmc_core.ko") < names.index("sdhci.ko") < names.index("sdhci-pci.ko")
    assert all(m.lstrip("/") in members for m in mods)
    # every library fio and blkdiscard need is there
    libs = {p.rsplit("/", 1)[1] for p in members if p.startswith("lib/x86_64-linux-gnu/")}
    for prog in ("usr/bin/fio", "usr/sbin/blkdiscard"):
        tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"sdqtest-elf-{os.getpid()}"
        tmp.write_bytes(members[prog].data)
        try:
            assert set(elf.dynamic_info(tmp).needed) <= libs, prog
        finally:
            tmp.unlink()


@pytest.mark.qemu
@pytest.mark.slow
def test_real_guest_reads_the_cards_pattern(request: pytest.FixtureRequest,
                                             guest: assemble.Guest, tmp_path: Path) -> None:
    """One boot on the newest build: the guest reads the host's pattern with direct I/O."""
    found = [b for b in selected_builds(request.config) if b.has_sdhci_pci]
    if not found:
        pytest.skip("no QEMU build installed: run 'sdqtest qemu install' or pass --sdq-qemu")
    build: QemuBuild = found[-1]
    lay = card.CardLayout.make(erase_mib=4, fio_mib=8, pattern_kib=256)
    img = card.make_image(tmp_path, lay, "raw")
    opts = guest_bench.Options(accel="tcg", boot_timeout=300)
    job = f"pread:{lay.read_at // 1024}:{lay.read_bytes // 1024}"
    start = time.monotonic()
    b = guest_bench.boot(build, guest, opts, img, lay, [job], None, tmp_path, "test", None)
    print(f"real boot on QEMU {build.name}: {time.monotonic() - start:.1f} s")
    assert b.error is None and b.run is not None, b.error
    t = b.run.transcript
    assert t.done and t.results["card"]["bytes"] == lay.card_bytes
    assert t.results[job]["sha256"] == card.sha256(lay.read_content())
    assert card.check_integrity(card.RawView(img, "raw"), lay, wrote_pattern=False).ok


def test_fio_figures_put_the_qtest_figure_beside() -> None:
    opts = guest_bench.Options(runtime=2, sweep_runtime=1, sizes=(4,), sweep_rw=("read",),
                               fio_mib=8)
    t = protocol.Transcript()
    for rw in ("read", "write", "readwrite"):
        job = guest_bench.fio_job(rw, 128, 2, 8)
        parts = {d: {"io_bytes": 1, "bw_bytes": 1 << 20, "iops": 8.0, "clat_ns": {"mean": 1e6}}
                 for d in ("read", "write") if d in rw}
        t.results[job] = {"job": job, "fio": {"jobs": [parts]}}
    figs = guest_bench.fio_figures("11.1", "tcg", t, opts, {"read": 4.0, "write": 2.0,
                                                           "mixed": 1.0})
    by = {(f.table, f.labels.get("rw", f.labels.get("direction"))): f for f in figs}
    rw = by[("guest fio 128 KiB", "readwrite")]
    assert rw.samples == [2.0] and rw.labels["accel"] == "TCG"
    assert rw.extra["qtest_mibps"] == 1.0 and rw.extra["guest_per_qtest"] == 2.0
    assert by[("guest fio 128 KiB", "write")].extra["guest_per_qtest"] == 0.5
    sweep = by[("guest fio by block size", "read")]
    assert sweep.samples == [] and sweep.status == "no result"
