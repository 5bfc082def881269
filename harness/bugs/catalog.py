"""The QEMU bugs: one :class:`Bug` per ``qemu-bug`` entry of the ledger.

The ledger (:mod:`harness.ledger`) states the rule, QEMU's behaviour and
the versions it applies to; this catalog adds what a maintainer acts on: a
one-line title, the severity class, the reproducer, the libqtest C test
(``harness/bugs/data/tests/NNNN-slug.c``) and our fix
(``harness/bugs/data/NNNN-slug.patch``) if any.
First and last affected versions come from the ledger entry, never from here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.bugs import reproducers as R
from harness.ledger import LEDGER, KnownDifference, Scope
from harness.machine import Machine
from harness.paths import package_data
from harness.profile import BuildProfile
from harness.target import Target

#: The catalogue's files, shipped as package data (``harness/bugs/data/``):
#: fix patches ``NNNN-slug.patch`` and C tests ``tests/NNNN-slug.c``.
BUGS_DIR = package_data("bugs", "data")
TESTS_DIR = BUGS_DIR / "tests"
#: The helpers every C test includes (a minimal sdhci-pci PIO driver).
C_HELPERS = TESTS_DIR / "sdqtest-sdhci.h"


class Severity(enum.StrEnum):
    """How bad it is for a guest, worst first."""

    ABORT = "guest-triggerable abort"
    UNINITIALISED = "guest-visible uninitialised data"
    INTEGRITY = "data integrity or isolation"
    MIGRATION = "state lost in migration"
    DRIVER = "spec violation that breaks a real driver"


def _sd(profile: BuildProfile) -> str | None:
    return None


def _emmc(profile: BuildProfile) -> str | None:
    return profile.emmc_unusable()


def _uhs(profile: BuildProfile) -> str | None:
    if "uhs" not in profile.properties("sdhci-pci"):
        return "sdhci-pci has no 'uhs' property in this build (no writable Host Control 2)"
    return None


#: Where an OMAP1 MMC bug is shown: an ARM board's controller.
_SX1 = ("an ARM board's controller (sx1): shown by tests/qtest/boards/test_omap_qemu.py on "
        "the qemu-system-arm builds; the reproducers here run on x86 builds only")


@dataclass(frozen=True)
class Bug:
    """One QEMU bug: the ledger's key and what the catalog adds to it."""

    number: int
    key: str
    slug: str
    title: str
    severity: Severity
    #: Drives a fresh QEMU and says whether the bug showed.
    reproduce: Callable[[Target], R.Observation] | None
    machine: Callable[[], Machine] = lambda: R.SD_MACHINE
    #: Why a build cannot run the reproducer (None: it can).
    unusable: Callable[[BuildProfile], str | None] = _sd
    #: The bug is QEMU aborting: QEMU gone with an assertion is "present".
    aborts: bool = False
    #: A run without the symptom proves the bug absent (False: the symptom
    #: depends on uninitialised memory, so its absence shows nothing).
    shows_absence: bool = True
    #: The reproducer needs QMP (a migration): it gets a
    #: :class:`~harness.qemu.target.QemuTarget`, not a pipe.
    qmp: bool = False
    #: Why there is no C test / reproducer, when there is none.
    note: str = ""
    has_c_test: bool = True

    @property
    def name(self) -> str:
        """``NNNN-slug``: the stem of the C test and of the patch."""
        return f"{self.number:04d}-{self.slug}"

    @property
    def c_test(self) -> Path | None:
        return TESTS_DIR / f"{self.name}.c" if self.has_c_test else None

    @property
    def patch(self) -> Path | None:
        p = BUGS_DIR / f"{self.name}.patch"
        return p if p.is_file() else None

    @property
    def qtest_name(self) -> str:
        """The test's name in QEMU's tests/qtest (meson's ``NAME-test``)."""
        return f"sdqtest-{self.name}-test"

    @property
    def entry(self) -> KnownDifference:
        """The ledger's entry: rule, QEMU's behaviour, versions."""
        return LEDGER[self.key]


BUGS: tuple[Bug, ...] = (
    Bug(1, "sd.lock-pwd-len", "sd-lock-pwd-len",
        "CMD42 lock/unlock never succeeds with the correct password length",
        Severity.DRIVER, R.lock_pwd_len),
    Bug(2, "sd.wide-data-byte-order", "sd-wide-data-byte-order",
        "CMD30 and ACMD22 data sent in host byte order, not MSB first",
        Severity.DRIVER, R.wide_data_byte_order),
    Bug(3, "sd.command-during-transfer", "sd-command-during-transfer",
        "CMD13 during a write makes the data block abort QEMU (assertion)",
        Severity.ABORT, R.command_during_transfer, aborts=True),
    Bug(4, "sd.acmd22-count-survives-reset", "sd-acmd22-count-survives-reset",
        "ACMD22 after a reset counts the blocks written before it",
        Severity.INTEGRITY, R.acmd22_count_survives_reset),
    Bug(5, "emmc.partition-range", "emmc-partition-range",
        "eMMC boot partition read past its end returns the next partition's data",
        Severity.INTEGRITY, R.emmc_partition_range, R.emmc_machine, _emmc),
    Bug(6, "emmc.rpmb-address-unchecked", "emmc-rpmb-address-unchecked",
        "eMMC RPMB requests past the partition are served from the user area",
        Severity.INTEGRITY, R.emmc_rpmb_address_unchecked, R.emmc_machine, _emmc),
    Bug(10, "emmc.sleep-no-awake", "emmc-sleep-no-awake",
        "eMMC CMD0 to a sleeping device aborts QEMU (assertion)",
        Severity.ABORT, R.emmc_sleep_no_awake, R.emmc_machine, _emmc, aborts=True),
    Bug(11, "emmc.gp-partition-access", "emmc-gp-partition-access",
        "eMMC access to a general purpose partition it does not have aborts QEMU",
        Severity.ABORT, R.emmc_gp_partition_access, R.emmc_machine, _emmc, aborts=True),
    Bug(7, "sdhci.rspreg3-after-auto-cmd12", "sdhci-rspreg3-after-auto-cmd12",
        "RSPREG3 gets an uninitialised stack buffer after an unanswered Auto CMD12",
        Severity.UNINITIALISED, R.rspreg3_after_auto_cmd12, shows_absence=False,
        has_c_test=False,
        note="no C test: the register gets whatever the stack buffer held; builds with "
             "-ftrivial-auto-var-init=zero (QEMU's own flags in 11.1) read 0 there, "
             "Debian's 7.2 reads garbage, so no test fails reliably on 11.1"),
    Bug(8, "migration-loses-hostctl2", "sdhci-hostctl2-not-migrated",
        "Host Control 2 is not in sdhci's migration state: UHS mode lost",
        Severity.MIGRATION, R.hostctl2_not_migrated, R.uhs_machine, _uhs, qmp=True,
        has_c_test=False,
        note="no C test: it needs two QEMUs and a migration stream (qtest's migration "
             "helpers live in tests/qtest/migration/, a framework of their own)"),
    Bug(9, "sdhci-pci.pci-config-not-migrated", "sdhci-pci-config-not-migrated",
        "sdhci-pci migrates no PCI device section: BAR0 and COMMAND are lost",
        Severity.MIGRATION, R.pci_config_not_migrated, qmp=True, has_c_test=False,
        note="no C test: it needs two QEMUs and a migration stream (qtest's migration "
             "helpers live in tests/qtest/migration/, a framework of their own)"),
    Bug(13, "sd.data-size-not-migrated", "sd-data-size-not-migrated",
        "a card migrated inside a data block loses the block's size: the destination "
        "sends past it, then zeros",
        Severity.MIGRATION, None, has_c_test=False,
        note="no reproducer here: it needs two QEMUs and a migration stream; shown by "
             "tests/qtest/crosscheck/test_migration_data_size.py on 10.0, 11.1 and the "
             "11.1.1 source build (7.2 keeps the size)"),
    Bug(14, "omap.response-words", "omap-response-words",
        "OMAP MMC: a short response leaves stale words in the upper response registers",
        Severity.DRIVER, None, has_c_test=False, note=_SX1),
    Bug(15, "omap.con-pow-clear-keeps-line", "omap-con-pow-clear-keeps-line",
        "OMAP MMC: powering the controller off clears the status but leaves the line raised",
        Severity.DRIVER, None, has_c_test=False, note=_SX1),
    Bug(16, "omap.dma-request-left-raised", "omap-dma-request-left-raised",
        "OMAP MMC: a transfer that ends with the FIFO empty leaves the DMA requests raised",
        Severity.DRIVER, None, has_c_test=False, note=_SX1),
    Bug(12, "usdhc.vendor-spec-16bit", "usdhc-vendor-spec-16bit",
        "i.MX uSDHC Vendor Specific Register keeps only its low 16 bits",
        Severity.DRIVER, None, has_c_test=False,
        note="an ARM board's controller (mcimx7d-sabre): shown by "
             "tests/qtest/boards/test_board_qemu.py on the qemu-system-arm builds; "
             "the reproducers here run on x86 builds only"),
)

BUGS = tuple(sorted(BUGS, key=lambda b: b.number))
BY_KEY: dict[str, Bug] = {b.key: b for b in BUGS}


def select(names: list[str] | None) -> list[Bug]:
    """The bugs named by key, number or ``NNNN-slug`` (all when ``names`` is empty)."""
    if not names:
        return list(BUGS)
    out = []
    for n in names:
        hit = [b for b in BUGS if n in (b.key, b.name, str(b.number), f"{b.number:04d}")]
        if not hit:
            from harness.errors import UsageError

            raise UsageError(f"unknown bug {n!r}: one of "
                             + ", ".join(b.key for b in BUGS))
        out += hit
    return out


def unlisted() -> list[KnownDifference]:
    """Ledger ``qemu-bug`` entries this catalog has no row for."""
    return [e for e in LEDGER.values() if e.scope is Scope.QEMU_BUG and e.key not in BY_KEY]
