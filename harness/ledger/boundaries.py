"""Every QEMU version boundary the model uses, with the builds that bear it out.

A boundary is a version from which QEMU behaves differently in a way the
model mirrors.  Each record names the builds seen on each side of it: a
build of the old behaviour below ``since`` and one of the new behaviour at
or above it.  A side seen only by reading a source tree counts less than a
build the check ran on, and ``position`` says why the boundary sits at
exactly ``since`` within that bracket (a compat entry, a changelog line, or
an assumption).  The "Version boundaries" table of docs/check.md is
:func:`markdown` of :data:`BOUNDARIES` (``python -m harness.ledger.boundaries``
prints it); ``tests/qtest/model/test_boundaries.py`` holds docs/check.md, the
model's version constants and these records to each other.

Version literals live here only: the model's modules take their constants
from the records (the test rejects a version tuple written anywhere else
in the model).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.ledger.entry import Versions
from harness.profile import Version

#: A table row that holds for every version.
ALWAYS: Version = (0, 0, 0)


@dataclass(frozen=True)
class Build:
    """A QEMU build (or source tree) that boundaries were held against."""

    name: str
    version: Version
    #: ``"run"``: the check and compat ran on it; ``"read"``: its source was read.
    seen: str
    origin: str


#: Debian's three binaries, and the releases built from Debian's sources.
BUILDS: tuple[Build, ...] = (
    Build("7.2.22", (7, 2, 22), "run", "Debian binary 1:7.2+dfsg-7+deb12u18+b3 (bookworm)"),
    Build("7.2.22 src", (7, 2, 22), "run",
          "built from Debian source 1:7.2+dfsg-7+deb12u18 (bookworm; upstream's 7.2.1 .. "
          "7.2.22 stable diffs are its Debian patches)"),
    Build("10.0.13", (10, 0, 13), "run", "Debian binary 1:10.0.13+ds-0+deb13u1 (trixie)"),
    Build("10.0.13 src", (10, 0, 13), "run",
          "built from Debian source 1:10.0.13+ds-0+deb13u1 (trixie; no Debian patch touches "
          "hw/sd)"),
    Build("10.2.2 src", (10, 2, 2), "run",
          "built from Debian source 1:10.2.2+ds-1 (the 10.2.2-src tree's unchanged build)"),
    Build("11.0.3 src", (11, 0, 3), "run",
          "built from the pool's qemu_11.0.3+ds.orig.tar.xz (no .dsc: Debian's patches absent)"),
    Build("11.1.1 src", (11, 1, 1), "run", "built from Debian source 1:11.1.1+ds-1"),
    Build("11.1.3", (11, 1, 3), "run", "Debian binary 1:11.1.3+ds-1 (sid)"),
)
_BY_NAME = {b.name: b for b in BUILDS}


def build(name: str) -> Build:
    """The entry of :data:`BUILDS` called ``name``."""
    return _BY_NAME[name]


@dataclass(frozen=True)
class Boundary:
    """From QEMU ``since`` on, ``new``; before it, ``old``."""

    key: str
    since: Version
    old: str
    new: str
    #: builds that showed the old behaviour (each older than ``since``)
    old_on: tuple[str, ...]
    #: builds that showed the new behaviour (each at least ``since``)
    new_on: tuple[str, ...]
    #: why exactly ``since`` inside the bracket the builds leave
    position: str
    #: where the model uses it
    used_by: str
    #: ``position`` rests on a documented fact (a compat entry, a changelog
    #: line, adjacent releases), not on an assumption
    pinned: bool = False

    @property
    def first(self) -> str:
        """``since`` as the ledger's :class:`Versions` writes it (``"9.1"``,
        ``"11.1.2"``)."""
        major, minor, micro = self.since
        return f"{major}.{minor}" + (f".{micro}" if micro else "")

    def versions(self, until: Boundary | None = None,
                 confirmed: tuple[str, ...] = ()) -> Versions:
        """The releases of its new side (up to ``until``'s, when a later
        boundary ends them), for a ledger entry it dates: the range derived
        from the boundary, never written again."""
        return Versions(self.first, until.first if until is not None else None, confirmed)

    @property
    def confirmed_on(self) -> tuple[str, ...]:
        """Every build that confirmed a side."""
        return self.old_on + self.new_on

    @property
    def status(self) -> str:
        """``confirmed`` (a build run on each side), ``confirmed by source``
        (a side only read), or ``assumed`` (a side without any build)."""
        if not self.old_on or not self.new_on:
            return "assumed"
        run = [any(build(n).seen == "run" for n in side) for side in (self.old_on, self.new_on)]
        return "confirmed" if all(run) else "confirmed by source"

    @property
    def release(self) -> str:
        """``pinned``, or where the change may lie when ``since`` is assumed."""
        return "pinned" if self.pinned else f"assumed within {self.bracket}"

    @property
    def bracket(self) -> str:
        """The newest old-side and oldest new-side build: where the change lies."""
        lo = max(self.old_on, key=lambda n: build(n).version, default="")
        hi = min(self.new_on, key=lambda n: build(n).version, default="")
        return f"{lo or '?'} .. {hi or '?'}"


_ALL_BEFORE_10_0 = ("7.2.22", "7.2.22 src")
_ALL_10_0 = ("10.0.13", "10.0.13 src")
_FROM_10_0 = ("10.0.13", "10.0.13 src", "10.2.2 src", "11.0.3 src", "11.1.1 src", "11.1.3")
_FROM_10_2 = ("10.2.2 src", "11.0.3 src", "11.1.1 src", "11.1.3")

SD_PROTOCOL_REWORK = Boundary(
    "sd.protocol-rework", (9, 1, 0),
    "sd.c's old command handling (RCA += 0x4567, CMD26 accepted, fixed class table, ...)",
    "the command-table rework: random RCA, CMD6 in transfer state only, CMD26 unknown, ...",
    _ALL_BEFORE_10_0, _FROM_10_0,
    "assumed: QEMU's command-table rework, taken as 9.1; no 8.x or 9.x build here",
    "ledger sd.version.* (rca .. class-table), SDCard; spi.version.cxd-standby and "
    "cmd13-r2-csd (until 10.1), SpiCard")
SD_STATE_AND_SIZE_RULES = Boundary(
    "sd.state-and-size-rules", (10, 1, 0),
    "ACMD13/22/51 and CMD19 start sending in any state; spec_version 1 accepted; "
    "image size a power of 2",
    "those commands illegal outside transfer state; spec_version 1 refused; "
    "above 2 GiB a multiple of 512 KiB",
    _ALL_10_0, _FROM_10_2,
    "assumed 10.1: the 10.0.13 and 10.2.2 sources differ; no 10.1 build here",
    "ledger sd.version.* (sendingdata-state, spec-v1, size-rule), SDCard; SPI mode's "
    "responses framed in sd.c (spi.version.r3-r7-idle, acmd41-ready, spi.illegal-r1-stale: "
    "10.0.13 and 10.2.2/11.0.3/11.1.1 sources), SpiCard, SsiSd")
SDMA_REWORK = Boundary(
    "sdhci.sdma-rework", (10, 0, 0),
    "SDMA raises DMA Interrupt only at a buffer boundary; SYSAD-started SDMA takes the "
    "multi-block path whenever Multi Block Select is set",
    "DMA Interrupt at every SDMA completion; one block takes the single-block path",
    _ALL_BEFORE_10_0, _FROM_10_0,
    "assumed: the 10.0 development cycle; no 8.x or 9.x build here",
    "sdhci_state.SdhciState.sdma_rework")
HOSTCTL2_V4EN = Boundary(
    "sdhci.hostctl2-v4en-without-uhs", (11, 1, 2),
    "without UHS-I (uhs 0) Host Control 2 ignores every write",
    "without UHS-I, Host Control 2 bit 12 (Host Version 4 Enable) alone is writable",
    (*_ALL_BEFORE_10_0, *_ALL_10_0, "10.2.2 src", "11.0.3 src", "11.1.1 src"), ("11.1.3",),
    "the 11.1.2 stable release: Debian's changelog for 1:11.1.2+ds-1 lists upstream's "
    "'hw/sd: sdhci: Accept version 4 enable without UHS-I'; the 11.1.1 source writes "
    "Host Control 2 only with uhs >= UHS-I (no 11.1.2 build here)",
    "sdhci.SDHCI._w_acmd12", pinned=True)
CARD_SPEC_3 = Boundary(
    "sd-card.spec_version-3", (9, 1, 0),
    "sd-card spec_version defaults to 2 (Physical Layer 2.00)",
    "it defaults to 3 (3.01); hw_compat_9_0 keeps 2 for machine types 9.0 and older",
    _ALL_BEFORE_10_0, _FROM_10_0,
    "hw_compat_9_0 carries spec_version 2 (in every source from 10.0.13 to 11.1.1), so the "
    "default moved in 9.1",
    "defaults.TABLE, ledger compat.sd-card.spec_version", pinned=True)
ERASE_SERIES = Boundary(
    "sd-card.erase-series", (11, 1, 50),
    "erased blocks read 0xFF, SCR DATA_STAT_AFTER_ERASE clear, CID PRV 0x01",
    "the hw/sd erase series (seed 000): erase-blocks-as-zero (default true), "
    "DATA_STAT_AFTER_ERASE, PRV 0x02 on the SD card and the eMMC",
    (*_ALL_BEFORE_10_0, *_ALL_10_0, "10.2.2 src", "11.0.3 src", "11.1.1 src", "11.1.3"), (),
    "assumed: the series is unreleased, taken as 11.2 (11.1.50 and up); the model "
    "keys the behaviour on the property's presence, this version only dates its "
    "default row",
    "defaults.TABLE (erase-blocks-as-zero); SDCard and Emmc key on the property")
EMMC_DEVICE = Boundary(
    "emmc.device", (9, 1, 0),
    "no emmc device type", "the emmc device type",
    _ALL_BEFORE_10_0, _FROM_10_0,
    "assumed: arrived with the 9.1 command-table rework; no 8.x or 9.x build here",
    "emmc_defaults.has_emmc, TABLE (boot-partition-size, boot-config)")
EMMC_PLUGGABLE = Boundary(
    "emmc.pluggable", (10, 1, 0),
    "-device emmc refused ('expects a pluggable device type')",
    "-device emmc accepted on sdhci-pci's bus",
    _ALL_10_0, _FROM_10_2,
    "assumed 10.1: 10.0.13's source marks the device not user-creatable, 10.2.2's does "
    "not; no 10.1 build here",
    "emmc_defaults.pluggable")
EMMC_RPMB = Boundary(
    "emmc.rpmb-partition-size", (10, 1, 0),
    "no RPMB partition", "the rpmb-partition-size property",
    _ALL_10_0, _FROM_10_2,
    "assumed 10.1: absent from 10.0.13, present in 10.2.2; no 10.1 build here",
    "emmc_defaults.TABLE")
EMMC_AUTH_KEY = Boundary(
    "emmc.auth-key", (11, 1, 0),
    "no auth-key property", "auth-key programs the RPMB key at realize",
    ("10.0.13 src", "10.2.2 src", "11.0.3 src"), ("11.1.1 src", "11.1.3"),
    "a feature of the 11.1 release: the 11.0.3 source lacks it, 11.1.1's has it "
    "(stable releases add no properties)",
    "emmc_defaults.TABLE", pinned=True)

USDHC_SPEC_3 = Boundary(
    "usdhc.spec-version-3", (10, 0, 0),
    "imx-usdhc keeps the common sd-spec-version default 2",
    "imx_usdhc_init sets sd-spec-version 3",
    ("7.2.22", "7.2.22 src"), ("10.0.13", "10.0.13 src", "11.1.3"),
    "assumed 10.0: 7.2.22's source lacks it, 10.0.13's has it; no 8.x or 9.x build here",
    "sdhci_usdhc.Usdhc (the mcimx7d board)")

ASPEED_WP_INVERTED = Boundary(
    "aspeed.wp-inverted", (10, 0, 0),
    "the AST2600 EVB's SD slots report Write Protect Switch Pin Level as the card sets it",
    "the sysbus SDHCI has the property wp-inverted and the AST2500/AST2600 EVBs set it",
    ("7.2.22", "7.2.22 src"), ("10.0.13", "10.0.13 src", "10.2.2 src", "11.1.1 src", "11.1.3"),
    "assumed 10.0: 7.2.22's source lacks the property, 10.0.13's has it and "
    "aspeed_ast2600_evb sets it; no 8.x or 9.x build here",
    "sdhci_aspeed.AspeedSdhci (the ast2600 board)")

ASPEED_CAPAREG = Boundary(
    "aspeed.capareg-per-soc", (10, 0, 0),
    "one capabilities value 0x01e80080 for every Aspeed SoC's SD slots",
    "a value per SoC: 0x0000000701f80080 on the AST2600 (ADMA1, 64-bit, 1.8 V, UHS)",
    ("7.2.22", "7.2.22 src"), ("10.0.13", "10.0.13 src", "10.2.2 src", "11.1.1 src", "11.1.3"),
    "assumed 10.0: 7.2.22's source has the one value, 10.0.13's the per-SoC ones; "
    "no 8.x or 9.x build here",
    "sdhci_aspeed.AspeedSdhci (the ast2600 board) and AspeedWrapper's capability mirrors")

SUNXI_IRQ_LEVEL = Boundary(
    "sunxi.irq-level-0-1", (10, 0, 0),
    "allwinner-sdhost drives its line with SD_RISR & SD_IMKR itself: qtest reports a raise "
    "at every change of that non-zero value",
    "the line is driven 0 or 1: a raise only when it goes from 0 to non-zero",
    ("7.2.22",), ("10.0.13", "11.1.3"),
    "assumed 10.0: 7.2.22's source passes the masked value to qemu_set_irq, 10.0.13's "
    "passes !!value; no 8.x or 9.x build here",
    "model.allwinner.AwSdHost (the orangepi-pc board)")

OMAP_SRTS_CARD = Boundary(
    "omap.srts-card-kept", (10, 0, 0),
    "omap_mmc holds a legacy SD card outside any bus and resets it in its own reset: "
    "MMC_SYSC.SRTS resets the card too",
    "the card sits on the controller's SD bus: MMC_SYSC.SRTS resets the controller only",
    ("7.2.22",), ("10.0.13", "11.1.3"),
    "assumed 10.0: 7.2.22's omap_mmc.c calls device_cold_reset on its sd_init card in "
    "omap_mmc_reset, 10.0.13's is a QOM device with an sd-bus (the legacy SD API gone); "
    "no 8.x or 9.x build here",
    "model.omap_mmc.OmapMmc (the sx1 board)")

OMAP_STACK_ZERO = Boundary(
    "omap.stack-zero", (10, 0, 0),
    "the response buffer omap_mmc_command hands the card is uninitialised stack: a 4-byte "
    "answer leaves RSP0..RSP5 with whatever the stack held",
    "QEMU is built with -ftrivial-auto-var-init=zero: those registers read 0",
    ("7.2.22",), ("10.0.13", "11.1.3"),
    "assumed 10.0: 7.2.22's meson.build lacks -ftrivial-auto-var-init=zero, 10.0.13's "
    "adds it (Debian's compilers take it); no 8.x or 9.x build here",
    "model.omap_mmc.OmapMmc (the sx1 board)")

OMAP_BADWIDTH = Boundary(
    "omap.badwidth-logged", (11, 0, 0),
    "an access of another width than 16 bits goes to omap_badwidth_read16/write16, which "
    "read or write guest memory at the register's offset",
    "it is logged as a guest error: reads 0, writes dropped",
    ("7.2.22", "10.0.13"), ("11.1.3",),
    "assumed 11.0: 10.2.2's source still calls omap_badwidth_read16, 11.1.1's logs; "
    "11.0.3's source not read.  On sx1 both sides answer 0 (the boot flash ROM at 0 "
    "is zero-filled without -pflash)",
    "model.omap_target.OmapModelTarget (the sx1 board)")

SDHCI_VENDOR_FSL = Boundary(
    "sdhci.vendor-fsl-reset", (10, 0, 0),
    "the vendor property knows no Freescale value: vendor=2 changes nothing",
    "vendor=2 (Freescale eSDHC) makes a reset leave Normal and Error Interrupt Status "
    "Enable at 0x013f and 0x117f",
    ("7.2.22", "7.2.22 src"), ("10.0.13", "10.0.13 src", "10.2.2 src"),
    "assumed 10.0: 7.2.22's source lacks it, 10.0.13's has it; no 8.x or 9.x build here",
    "sdhci.SDHCI.reset (the vendor property)")
SDHCI_VENDOR_GONE = Boundary(
    "sdhci.vendor-property-removed", (11, 0, 0),
    "sdhci-pci and the sysbus SDHCI have the properties vendor and endianness",
    "neither: the Freescale eSDHC is a device type of its own (fsl-esdhc-be, fsl-esdhc-le)",
    ("7.2.22", "10.0.13", "10.2.2 src"), ("11.1.1 src", "11.1.3"),
    "adjacent releases: 10.2.2's source has the properties, 11.0.3's has not (a stable "
    "release removes no property)",
    "defaults.TABLE (vendor, detected); the scenario vendor-fsl-reset-enables needs the "
    "property", pinned=True)

#: Every boundary the model uses.
BOUNDARIES: tuple[Boundary, ...] = (
    SD_PROTOCOL_REWORK, SD_STATE_AND_SIZE_RULES, SDMA_REWORK, HOSTCTL2_V4EN, CARD_SPEC_3,
    ERASE_SERIES, EMMC_DEVICE, EMMC_PLUGGABLE, EMMC_RPMB, EMMC_AUTH_KEY, USDHC_SPEC_3,
    ASPEED_WP_INVERTED, ASPEED_CAPAREG, SUNXI_IRQ_LEVEL, OMAP_SRTS_CARD, OMAP_STACK_ZERO,
    OMAP_BADWIDTH,
    SDHCI_VENDOR_FSL, SDHCI_VENDOR_GONE,
)

#: First and last release whose defaults were held against a build: 7.2.0 up
#: to the 11.1 stable releases (11.1.50 and up is 11.2 development).
DEFAULTS_VERIFIED: tuple[Version, Version] = ((7, 2, 0), (11, 1, 49))


def _v(v: Version) -> str:
    return ".".join(map(str, v))


_BY_KEY = {b.key: b for b in BOUNDARIES}


def first(key: str) -> str:
    """The first version of boundary ``key``'s new side, as the ledger's
    :class:`~harness.ledger.entry.Versions` writes it (``"9.1"``,
    ``"11.1.2"``): the one place a dated entry's version is stated."""
    return _BY_KEY[key].first


def markdown() -> str:
    """The docs' table (docs/check.md): one row per boundary, one column per build."""
    head = ["boundary", "from", *[b.name for b in BUILDS], "status", "release", "why there"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for bd in BOUNDARIES:
        cells = []
        for b in BUILDS:
            mark = "old" if b.name in bd.old_on else "new" if b.name in bd.new_on else "-"
            cells.append(mark if mark == "-" or b.seen == "run" else f"{mark} (read)")
        lines.append("| " + " | ".join([f"`{bd.key}`: {bd.new}", _v(bd.since), *cells,
                                        bd.status, bd.release, bd.position]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
