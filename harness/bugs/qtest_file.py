"""The bugs' C tests as one QEMU qtest, ``tests/qtest/sdcard-test.c``.

Each ``bugs/tests/NNNN-slug.c`` is a libqtest program of its own (a comment
saying what the specification requires, test functions, a ``main`` that
registers them).  QEMU's tree gets one program, written like
``tests/qtest/sdhci-test.c``: QEMU's license header, the sdhci-pci helpers
of ``bugs/tests/sdqtest-sdhci.h`` as static functions, a smoke test that
uses every helper, then each bug's functions and, in ``main``, its
registrations.  :func:`render` builds it for any prefix of the bugs, so the
series adds one bug's case per patch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.bugs.catalog import C_HELPERS, Bug

#: The test's path in QEMU's tree and its meson name.
TREE_PATH = Path("tests/qtest/sdcard-test.c")
MESON_NAME = "sdcard-test"

_LICENSE = """/*
 * QTest testcase for SD and eMMC cards behind sdhci-pci
 *
 * Each test drives the card through the generic SD host controller's PIO
 * interface (SD Host Controller Simplified Specification 3.00) and checks
 * what the SD Physical Layer Simplified Specification or JESD84-B51
 * requires of the card.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pci-pc.h"
"""

_SMOKE = """
/* Identification, then a block written and read back. */
static void test_sd_write_read(void)
{
    SDHCITest t = { 0 };
    g_autofree char *image = NULL;
    uint8_t block[512], got[512];

    memset(block, 0x3c, sizeof(block));
    sd_start_image(&t, 16 * 1024 * 1024, &image);
    sd_init(&t);
    sd_write(&t, 24, 512, block, sizeof(block));
    sd_read(&t, 17, 512, got, sizeof(got));
    g_assert(memcmp(got, block, sizeof(got)) == 0);
    g_assert_cmpuint(CURRENT_STATE(sd_status(&t)), ==, STATE_TRAN);
    sdhci_stop(&t);
    unlink(image);
}

/* eMMC identification, a boot partition block written and read back. */
static void test_emmc_boot_write_read(void)
{
    EMMCTest e = { 0 };
    uint8_t block[512], got[512];

    memset(block, 0xc3, sizeof(block));
    emmc_start(&e, 4 * 1024 * 1024 + 2 * 128 * 1024,
               "boot-partition-size=131072");
    emmc_init(&e);
    emmc_select_partition(&e, PART_BOOT1);
    sd_write(&e.sdhci, 24, emmc_address(&e, 0), block, sizeof(block));
    sd_read(&e.sdhci, 17, emmc_address(&e, 0), got, sizeof(got));
    g_assert(memcmp(got, block, sizeof(got)) == 0);
    emmc_select_partition(&e, PART_USER);
    g_assert_cmpuint(CURRENT_STATE(sd_status(&e.sdhci)), ==, STATE_TRAN);
    emmc_stop(&e);
}
"""

_SMOKE_REGS = ('    qtest_add_func("/sdcard/write-read", test_sd_write_read);\n'
               '    qtest_add_func("/emmc/boot-partition/write-read",\n'
               '                   test_emmc_boot_write_read);\n')
#: The smoke tests' paths (under the architecture, as qtest_add_func adds it).
SMOKE_PATHS = ("/sdcard/write-read", "/emmc/boot-partition/write-read")


@dataclass(frozen=True)
class CaseSource:
    """One bug's C test taken apart: its functions and its registrations."""

    body: str
    registrations: str
    paths: tuple[str, ...]


def split(text: str, name: str = "") -> CaseSource:
    """The functions (between the includes and ``main``) and the
    ``qtest_add_func`` calls of a bug's test program."""
    m = re.search(r"^int main\(", text, re.M)
    if m is None:
        raise ValueError(f"{name}: no main()")
    head, main = text[:m.start()], text[m.start():]
    includes = list(re.finditer(r"^#include .*\n", head, re.M))
    if not includes:
        raise ValueError(f"{name}: no #include")
    body = head[includes[-1].end():].strip("\n")
    regs = re.findall(r"^    qtest_add_func\((?:.|\n)*?\);\n", main, re.M)
    if not regs:
        raise ValueError(f"{name}: main() registers no test")
    paths = tuple(re.findall(r'qtest_add_func\(\s*"([^"]+)"', "".join(regs)))
    return CaseSource(body, "".join(regs), paths)


def helpers() -> str:
    """The helper header's definitions as the .c file's own (no guard, no includes)."""
    text = C_HELPERS.read_text()
    start = text.index("#define SDQTEST_SDHCI_H") + len("#define SDQTEST_SDHCI_H")
    end = text.rindex("#endif")
    body = re.sub(r"^#include .*\n", "", text[start:end], flags=re.M)
    return body.replace("static inline ", "static ").strip("\n")


def case(bug: Bug) -> CaseSource:
    """``bug``'s C test taken apart."""
    assert bug.c_test is not None
    return split(bug.c_test.read_text(), bug.c_test.name)


def render(bugs: list[Bug]) -> str:
    """sdcard-test.c with the smoke tests and the cases of ``bugs``."""
    cases = [case(b) for b in bugs if b.c_test is not None]
    parts = [_LICENSE, helpers(), _SMOKE]
    parts += [c.body + "\n" for c in cases]
    regs = _SMOKE_REGS + "".join(c.registrations for c in cases)
    parts.append("int main(int argc, char **argv)\n{\n    g_test_init(&argc, &argv, NULL);\n"
                 + regs + "    return g_test_run();\n}\n")
    return "\n".join(p.rstrip("\n") + "\n" for p in parts)


def meson_edit(text: str) -> str:
    """tests/qtest/meson.build with sdcard-test beside fuzz-sdcard-test (the
    x86 qtests, when the build has sdhci-pci)."""
    anchor = re.search(r"^(\s*\(config_all_devices\.has_key\('CONFIG_SDHCI_PCI'\) \? "
                       r"\['fuzz-sdcard-test'\] : \[\]\) \+)(\s*\\)\n", text, re.M)
    if anchor is None:
        raise ValueError("tests/qtest/meson.build: no fuzz-sdcard-test line to add beside")
    line = anchor.group(1).replace("fuzz-sdcard-test", MESON_NAME)
    width = len(anchor.group(1)) + len(anchor.group(2)) - 1
    new = line.ljust(width) + "\\\n"
    return text[:anchor.end()] + new + text[anchor.end():]


def maintainers_edit(text: str) -> str:
    """MAINTAINERS with the new test in the SD section (after sdhci-test)."""
    old = "F: tests/qtest/sdhci-test.c\n"
    if old not in text:
        raise ValueError("MAINTAINERS: no 'F: tests/qtest/sdhci-test.c' line")
    return text.replace(old, old + f"F: {TREE_PATH}\n", 1)
