"""The series' pieces: the combined qtest, the fix files, since/fixed-in (no QEMU run)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.bugs import qtest_file, seen, series
from harness.bugs.catalog import BUGS, BY_KEY
from harness.cli import main
from harness.provision import source

SRC = source.release_dir("11.1.1") / "src"
BUILD = source.release_dir("11.1.1") / "plain"


def test_every_fix_file_parses_and_names_nobody() -> None:
    for b in BUGS:
        if b.patch is None:
            continue
        fix = series.read_fix(b.patch)
        assert re.match(r"hw/sd/\w+: [A-Z]", fix.subject), b.name
        assert fix.diff.startswith("diff --git a/hw/sd/"), b.name
        assert "Signed-off-by" not in fix.body and len(fix.body) > 100, b.name


def test_the_combined_test_has_every_case_once_and_qemus_header() -> None:
    with_tests = [b for b in BUGS if b.c_test is not None]
    text = qtest_file.render(with_tests)
    assert text.startswith("/*\n * QTest testcase for SD and eMMC cards behind sdhci-pci")
    assert "SPDX-License-Identifier: GPL-2.0-or-later" in text
    assert "This work is licensed" not in text  # checkpatch: new files carry SPDX only
    for b in with_tests:
        for p in qtest_file.case(b).paths:
            assert text.count(f'"{p}"') == 1, p
    names = re.findall(r"^static \w[\w ]*?\**(\w+)\(", text, re.M)
    assert len(names) == len(set(names)), "a function defined twice"
    assert all(len(ln) <= 80 for ln in text.splitlines())
    assert "static inline" not in text


def test_the_combined_test_compiles_against_qemus_headers() -> None:
    if shutil.which("cc") is None or not (BUILD / "config-host.h").is_file():
        pytest.skip("needs cc and Debian's 11.1.1 source configured "
                    "(sdqtest qemu build 11.1.1)")
    glib = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], capture_output=True,
                          text=True, check=False).stdout.split()
    r = subprocess.run(["cc", "-x", "c", "-c", "-o", "/dev/null", "-std=gnu11", "-Wall",
                        "-Werror", "-Wmissing-prototypes", f"-I{BUILD}", f"-I{SRC}/include",
                        f"-I{SRC}/tests/qtest", f"-I{SRC}", f"-I{SRC}/host/include/x86_64",
                        f"-I{SRC}/host/include/generic", *glib, "-"],
                       input=qtest_file.render([b for b in BUGS if b.c_test]),
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-2000:]


def test_meson_and_maintainers_hunks_on_the_release() -> None:
    if not SRC.is_dir():
        pytest.skip("no 11.1.1 source")
    meson = (SRC / "tests/qtest/meson.build").read_text()
    new = qtest_file.meson_edit(meson)
    added = [ln for ln in new.splitlines() if ln not in meson.splitlines()]
    assert added == ["  (config_all_devices.has_key('CONFIG_SDHCI_PCI') ? ['sdcard-test'] : "
                     "[]) +                 \\"]
    maint = qtest_file.maintainers_edit((SRC / "MAINTAINERS").read_text())
    assert "F: tests/qtest/sdhci-test.c\nF: tests/qtest/sdcard-test.c\n" in maint


def test_since_and_fixed_in_from_recorded_verdicts() -> None:
    s = seen.Seen({"11.1.3": "absent", "7.2.22": "present", "10.0.13": "present"})
    assert s.first_present() == "7.2.22" and s.fixed_in() == "11.1.3"
    assert seen.Seen({"7.2.22": "n/a", "11.1.3": "present"}).fixed_in() is None
    b = BY_KEY["sd.command-during-transfer"]
    text = seen.since_text(b, {b.name: seen.Seen({"7.2.22": "absent", "10.0.13": "present"})})
    assert text.startswith("Since QEMU 9.1: Debian's 7.2.22 build does not show it")
    text = seen.since_text(b, {b.name: seen.Seen({"7.2.22": "present"})})
    assert "at least QEMU 7.2" in text


def test_the_recorded_verdicts_cover_the_reproducers() -> None:
    table = seen.load()
    for b in BUGS:
        if b.reproduce is not None:
            assert b.name in table and len(table[b.name].verdicts) >= 3, b.name


@pytest.mark.parametrize("argv", [
    ["bugs", "--series", "/tmp/x", "--signoff"],                       # no --from
    ["bugs", "--series", "/tmp/x", "--from", "nobody"],                # not Name <mail>
    ["bugs", "--from", "A B <a@b.c>"],                                 # without --series
    ["bugs", "--series", "/tmp/x", "--qemu-src", "/nonexistent"]])
def test_series_refusals_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    argv = [str(tmp_path / "out") if a == "/tmp/x" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err


def test_the_cover_letter_names_each_bug_its_reproducer_and_the_missing_signoff() -> None:
    from harness.bugs import cover

    fixed = [b for b in BUGS if b.c_test is not None and b.patch is not None]
    text = cover.body(fixed, author=None, signoff=False)
    flat = " ".join(text.split())  # wrapped at 72 columns
    for b in fixed:
        assert b.title in flat and f"--trace {b.number:04d}" in flat
        for p in qtest_file.case(b).paths:
            assert p in flat
    assert "NOTE TO THE SUBMITTER" in text and "--signoff" in text
    assert all(len(ln) <= 76 for ln in text.splitlines())
    signed = cover.body(fixed, author="A U Thor <a@example.org>", signoff=True)
    assert "NOTE TO THE SUBMITTER" not in signed
