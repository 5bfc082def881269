"""The bug catalog against the ledger, and its files under ``bugs/`` (no QEMU run)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess

import pytest

from harness.bugs import catalog
from harness.bugs.catalog import BUGS, C_HELPERS, Bug
from harness.bugs.triage import TRIAGE, Harm
from harness.ledger import LEDGER, Scope, of_scope
from harness.provision import source

#: Debian's QEMU 11.1.1 source in the cache, to check that the patches apply
#: (read-only), and its configured plain build (``sdqtest qemu build 11.1.1``).
SRC = source.release_dir("11.1.1") / "src"
BUILD = source.release_dir("11.1.1") / "plain"
MAKE_IT = source.command_for("11.1.1")


def test_every_qemu_bug_entry_has_a_row_and_every_row_an_entry() -> None:
    """The rows: every qemu-bug entry, and every entry triaged in a bug class
    that does not name the row carrying it."""
    bugs = {e.key for e in of_scope(Scope.QEMU_BUG)} | {
        k for k, t in TRIAGE.items() if t.harm.is_bug and not t.bug}
    assert {b.key for b in BUGS} == bugs
    assert catalog.unlisted() == []


def test_numbers_names_and_keys_are_unique() -> None:
    for attr in ("number", "name", "key", "slug", "qtest_name"):
        values = [getattr(b, attr) for b in BUGS]
        assert len(values) == len(set(values)), attr


def test_versions_are_the_ledgers_only() -> None:
    """No field of a Bug states a version: they come from the ledger entry."""
    names = {f.name for f in dataclasses.fields(Bug)}
    assert not names & {"first", "fixed", "last", "versions", "confirmed"}
    for b in BUGS:
        assert b.entry is LEDGER[b.key]


def test_every_bug_class_is_used_and_no_row_is_harmless() -> None:
    assert {b.severity for b in BUGS} == {h for h in Harm if h.is_bug}


def test_aborts_are_the_abort_class() -> None:
    for b in BUGS:
        if b.aborts:
            assert b.severity is Harm.ABORT, b.name
        if b.severity is Harm.ABORT and b.reproduce is not None:
            assert b.aborts, b.name


def test_a_bug_without_a_c_test_or_reproducer_says_why() -> None:
    for b in BUGS:
        if b.c_test is None or b.reproduce is None:
            assert b.note, b.name


@pytest.mark.parametrize("bug", [b for b in BUGS if b.c_test], ids=lambda b: b.name)
def test_c_test_is_present_and_well_formed(bug: Bug) -> None:
    assert bug.c_test is not None and bug.c_test.is_file()
    text = bug.c_test.read_text()
    assert "SPDX-License-Identifier: GPL-2.0-or-later" in text
    assert '#include "qemu/osdep.h"' in text.split("\n#include")[0] + "\n" + text
    assert '#include "sdqtest-sdhci.h"' in text  # the shared helpers, which include libqtest.h
    assert re.search(r"int main\(int argc, char \*\*argv\)", text)
    assert "qtest_add_func(" in text and "g_test_run()" in text
    code = re.sub(r"/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])'", "", text, flags=re.S)
    for a, b in ("{}", "()", "[]"):
        assert code.count(a) == code.count(b), f"unbalanced {a}{b}"
    assert all(len(ln) <= 80 for ln in text.splitlines()), "QEMU's 80-column limit"


def test_the_c_helpers_are_one_header_included_by_every_c_test() -> None:
    """The sdhci-pci driver the C tests share is stated once."""
    text = C_HELPERS.read_text()
    assert "SPDX-License-Identifier: GPL-2.0-or-later" in text
    assert "#ifndef SDQTEST_SDHCI_H" in text and '#include "libqtest.h"' in text
    assert all(len(ln) <= 80 for ln in text.splitlines()), "QEMU's 80-column limit"
    for b in BUGS:
        if b.c_test is not None:
            assert "static inline uint32_t sd_cmd(" not in b.c_test.read_text(), b.name


def test_the_c_tests_compile_against_qemus_headers() -> None:
    """Warning-free against Debian's 11.1.1 tree and a configured build's
    config headers (the real build is ``sdqtest bugs --verify``)."""
    build = BUILD
    if shutil.which("cc") is None:
        pytest.skip("needs cc (apt-get install gcc)")
    if not (build / "config-host.h").is_file() or not SRC.is_dir():
        pytest.skip(f"needs Debian's 11.1.1 source, configured: run '{MAKE_IT}'")
    glib = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], capture_output=True,
                          text=True, check=False).stdout.split()
    for b in BUGS:
        if b.c_test is None:
            continue
        r = subprocess.run(["cc", "-c", "-o", "/dev/null", "-std=gnu11", "-Wall", "-Werror",
                            "-Wmissing-prototypes", f"-I{C_HELPERS.parent}", f"-I{build}",
                            f"-I{SRC}/include",
                            f"-I{SRC}/tests/qtest", f"-I{SRC}", f"-I{SRC}/host/include/x86_64",
                            f"-I{SRC}/host/include/generic", *glib, str(b.c_test)],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{b.c_test.name}:\n{r.stderr[-2000:]}"


@pytest.mark.parametrize("bug", [b for b in BUGS if b.patch], ids=lambda b: b.name)
def test_patch_is_a_format_patch_that_applies(bug: Bug) -> None:
    assert bug.patch is not None
    text = bug.patch.read_text()
    assert re.match(r"Subject: \[PATCH\] hw/sd/\S+: \S", text)
    head = text.split("\ndiff --git")[0]
    # nobody's name: the author and the sign-off come with --series --from --signoff
    assert not re.search(r"^(From|Signed-off-by|Date):", head, re.M)
    assert "\ndiff --git a/hw/sd/" in text
    if not SRC.is_dir():
        pytest.skip(f"no 11.1.1 source to apply the patch to: run '{MAKE_IT}'")
    r = subprocess.run(["git", "apply", "--check", str(bug.patch)], cwd=SRC,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


def test_the_patches_apply_one_after_another() -> None:
    """--verify applies them cumulatively: each applies on the others."""
    if not SRC.is_dir():
        pytest.skip(f"no 11.1.1 source to apply the patches to: run '{MAKE_IT}'")
    patches = [str(b.patch) for b in BUGS if b.patch]
    assert len(patches) >= 3
    r = subprocess.run(["git", "apply", "--check", *patches], cwd=SRC, capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, r.stderr


def test_select_by_key_number_and_name() -> None:
    b = BUGS[0]
    assert catalog.select([b.key]) == [b]
    assert catalog.select([str(b.number)]) == [b]
    assert catalog.select([b.name]) == [b]
    assert catalog.select(None) == list(BUGS)
    from harness.errors import UsageError

    with pytest.raises(UsageError, match="unknown bug"):
        catalog.select(["no-such-bug"])
