"""The QEMU bugs: one :class:`Bug` per ``qemu-bug`` entry of the ledger.

The ledger (:mod:`harness.ledger`) states the rule, QEMU's behaviour and
the versions it applies to; this catalog adds what a maintainer acts on: a
one-line title, the severity class, the reproducer, the libqtest C test
(``harness/bugs/data/tests/NNNN-slug.c``) and our fix
(``harness/bugs/data/NNNN-slug.patch``) if any.
First and last affected versions come from the ledger entry, never from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.bugs import reproducers as R
from harness.bugs.triage import TRIAGE, Harm, Triage
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


#: The harm classes (:class:`harness.bugs.triage.Harm`), worst first.
Severity = Harm


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
    #: Drives a fresh QEMU and says whether the bug showed.
    reproduce: Callable[[Target], R.BugObservation] | None
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
    def triage(self) -> Triage:
        """The entry's harm class and evidence (:mod:`harness.bugs.triage`)."""
        return TRIAGE[self.key]

    @property
    def severity(self) -> Harm:
        """The harm class (the triage's)."""
        return self.triage.harm

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
        R.lock_pwd_len),
    Bug(2, "sd.wide-data-byte-order", "sd-wide-data-byte-order",
        "CMD30 and ACMD22 data sent in host byte order, not MSB first",
        R.wide_data_byte_order),
    Bug(3, "sd.command-during-transfer", "sd-command-during-transfer",
        "CMD13 during a write makes the data block abort QEMU (assertion)",
        R.command_during_transfer, aborts=True),
    Bug(4, "sd.acmd22-count-survives-reset", "sd-acmd22-count-survives-reset",
        "ACMD22 after a reset counts the blocks written before it",
        R.acmd22_count_survives_reset),
    Bug(5, "emmc.partition-range", "emmc-partition-range",
        "eMMC boot partition read past its end returns the next partition's data",
        R.emmc_partition_range, R.emmc_machine, _emmc),
    Bug(6, "emmc.rpmb-address-unchecked", "emmc-rpmb-address-unchecked",
        "eMMC RPMB requests past the partition are served from the user area",
        R.emmc_rpmb_address_unchecked, R.emmc_machine, _emmc),
    Bug(10, "emmc.sleep-no-awake", "emmc-sleep-no-awake",
        "eMMC CMD0 to a sleeping device aborts QEMU (assertion)",
        R.emmc_sleep_no_awake, R.emmc_machine, _emmc, aborts=True),
    Bug(11, "emmc.gp-partition-access", "emmc-gp-partition-access",
        "eMMC access to a general purpose partition it does not have aborts QEMU",
        R.emmc_gp_partition_access, R.emmc_machine, _emmc, aborts=True),
    Bug(7, "sdhci.rspreg3-after-auto-cmd12", "sdhci-rspreg3-after-auto-cmd12",
        "RSPREG3 gets an uninitialised stack buffer after an unanswered Auto CMD12",
        R.rspreg3_after_auto_cmd12, shows_absence=False,
        has_c_test=False,
        note="no C test: the register gets whatever the stack buffer held; builds with "
             "-ftrivial-auto-var-init=zero (QEMU's own flags in 11.1) read 0 there, "
             "Debian's 7.2 reads garbage, so no test fails reliably on 11.1"),
    Bug(8, "migration-loses-hostctl2", "sdhci-hostctl2-not-migrated",
        "Host Control 2 is not in sdhci's migration state: UHS mode lost",
        R.hostctl2_not_migrated, R.uhs_machine, _uhs, qmp=True,
        has_c_test=False,
        note="no C test: it needs two QEMUs and a migration stream (qtest's migration "
             "helpers live in tests/qtest/migration/, a framework of their own)"),
    Bug(9, "sdhci-pci.pci-config-not-migrated", "sdhci-pci-config-not-migrated",
        "sdhci-pci migrates no PCI device section: BAR0 and COMMAND are lost",
        R.pci_config_not_migrated, qmp=True, has_c_test=False,
        note="no C test: it needs two QEMUs and a migration stream (qtest's migration "
             "helpers live in tests/qtest/migration/, a framework of their own)"),
    Bug(13, "sdhci.sdma-sysad-ignored-while-active", "sdhci-sdma-boundary-resume",
        "SDMA transfer stopped at a buffer boundary never resumes",
        R.sdma_boundary_resume),
    Bug(14, "sd.wp-write-proceeds", "sd-wp-write-proceeds",
        "CMD24/CMD25 write a write protected block anyway",
        R.wp_write_proceeds, R.sd_image_machine),
    Bug(15, "sdhci.dat-reset-keeps-adma", "sdhci-dat-reset-keeps-adma",
        "ADMA goes on writing guest memory after a Software Reset for DAT Line",
        R.dat_reset_keeps_adma),
    Bug(16, "sd.lock-password-volatile", "sd-lock-password-volatile",
        "CMD0 or a device reset unlocks a locked card and forgets its password",
        None, has_c_test=False,
        note="no reproducer, C test or fix yet: QEMU keeps no card state outside the "
             "image, so a password that survives a reset needs a design decision "
             "(the model's strict side holds the rule: sdqtest check --strict)"),
    Bug(17, "sd.force-erase-keeps-data", "sd-force-erase-keeps-data",
        "A forced erase removes the password but leaves the locked data readable",
        None, has_c_test=False,
        note="no reproducer, C test or fix yet (the model's strict side holds the rule)"),
    Bug(18, "sd.wp-group-size", "sd-wp-group-size",
        "Write protection covers 2 MiB groups where the CSD advertises 4 MiB",
        None, has_c_test=False,
        note="no reproducer, C test or fix yet (the model's strict side holds the rule)"),
    Bug(19, "spi.version.cxd-standby", "spi-cxd-standby",
        "SPI mode: CMD9 and CMD10 refused (QEMU 9.1-10.0): the card is not detected",
        None, has_c_test=False,
        note="fixed in QEMU 10.1 (the ledger's versions); SPI mode runs on an ARM board "
             "(lm3s6965evb): tests/qtest/boards/test_spi_qemu.py shows it on 10.0-arm"),
    Bug(20, "spi.version.cmd13-r2-csd", "spi-cmd13-r2-csd",
        "SPI mode: CMD13 answered as illegal (QEMU 9.1-10.0)",
        None, has_c_test=False,
        note="fixed in QEMU 10.1 (the ledger's versions); shown by "
             "tests/qtest/boards/test_spi_qemu.py on 10.0-arm"),
    Bug(21, "spi.illegal-r1-stale", "spi-illegal-r1-stale",
        "SPI mode: the R1 of an illegal command is an uninitialised stack byte",
        None, has_c_test=False, shows_absence=False,
        note="no C test: the byte is whatever the stack held (the symptom of 0007); "
             "shown by tests/qtest/boards/test_spi_qemu.py on the ARM builds"),
    Bug(22, "spi.r1-illegal-of-previous", "spi-r1-illegal-of-previous",
        "SPI mode: a refused command's 'illegal' flag fails the next command",
        None, has_c_test=False,
        note="source-read driver evidence (see the triage); shown by "
             "tests/qtest/boards/test_spi_qemu.py on the ARM builds"),
    Bug(23, "sd.data-size-not-migrated", "sd-data-size-not-migrated",
        "a card migrated inside a data block loses the block's size: the destination "
        "sends past it, then zeros",
        None, has_c_test=False,
        note="no reproducer here: it needs two QEMUs and a migration stream; shown by "
             "tests/qtest/crosscheck/test_migration_data_size.py on 10.0, 11.1 and the "
             "11.1.1 source build (7.2 keeps the size)"),
    Bug(24, "omap.response-words", "omap-response-words",
        "OMAP MMC: a short response leaves stale words in the upper response registers",
        None, has_c_test=False, note=_SX1),
    Bug(25, "omap.con-pow-clear-keeps-line", "omap-con-pow-clear-keeps-line",
        "OMAP MMC: powering the controller off clears the status but leaves the line raised",
        None, has_c_test=False, note=_SX1),
    Bug(26, "omap.dma-request-left-raised", "omap-dma-request-left-raised",
        "OMAP MMC: a transfer that ends with the FIFO empty leaves the DMA requests raised",
        None, has_c_test=False, note=_SX1),
    Bug(27, "sd.generic-read-past-size", "sd-generic-read-past-size",
        "CMD13 during a multiple block read aborts QEMU 11.1 (assertion) or copies past "
        "the card's buffer",
        R.command_during_read, aborts=True),
    Bug(12, "usdhc.vendor-spec-16bit", "usdhc-vendor-spec-16bit",
        "i.MX uSDHC Vendor Specific Register keeps only its low 16 bits",
        None, has_c_test=False,
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
    """Ledger entries that are QEMU bugs (scope ``qemu-bug``, or triaged in a
    bug class without naming the row that carries them) this catalog has no
    row for."""
    return [e for e in LEDGER.values() if e.key not in BY_KEY and (
        e.scope is Scope.QEMU_BUG or (e.key in TRIAGE and TRIAGE[e.key].harm.is_bug
                                      and not TRIAGE[e.key].bug))]
