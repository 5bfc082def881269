"""Behaviour that changed between QEMU releases, which the model mirrors
(the build's profile selects the side), and the machine compat properties
that keep an old release's defaults on old machine types.

Each entry names the :mod:`harness.ledger.boundaries` record that dates it
and gives that record's version; the records hold the builds seen on each
side.  ``qemu`` is what QEMU does in ``versions``, ``rule`` what it did
before (for a compat property: the class default it overrides)."""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import EVERY_VERSION, Compat, KnownDifference, Scope


def _sd(key: str, boundary: boundaries.Boundary, old: str, new: str) -> KnownDifference:
    """``sd.version.KEY``, dated by ``boundary`` (its releases, its key)."""
    return KnownDifference(f"sd.version.{key}", Scope.VERSION, "sd", old, new,
                           boundary.versions(), boundary=boundary.key)


def _proto(key: str, old: str, new: str) -> KnownDifference:
    """A change of QEMU's command-table rework of sd.c."""
    return _sd(key, boundaries.SD_PROTOCOL_REWORK, old, new)


def _rules(key: str, old: str, new: str) -> KnownDifference:
    """One of the 10.0 -> 10.2 changes."""
    return _sd(key, boundaries.SD_STATE_AND_SIZE_RULES, old, new)


VERSION: tuple[KnownDifference, ...] = (
    _proto("rca", "CMD3 adds 0x4567 to the RCA", "CMD3 picks a random RCA"),
    _proto("cmd6-state", "CMD6 works in any data-transfer-mode state",
           "CMD6 works in transfer state only"),
    _proto("cmd17-length",
           "CMD17 reads 512 bytes on SDHC (CMD16 length on SDSC) at the first data read",
           "CMD17 reads the CMD16 length at the command, SDHC included"),
    _proto("cmd26", "CMD26 PROGRAM_CID accepted (16 bytes)", "CMD26 is an unknown command"),
    _proto("cmd42-length", "CMD42 data block has the CMD16 length",
           "CMD42 data block is 512 bytes"),
    _proto("cmd56", "CMD56 reads CMD16-length blocks of 0xEC, writes CMD16 length",
           "CMD56 reads zeros with a stale length, writes 512 bytes"),
    _proto("current-cmd",
           "an illegal command leaves the data source alone; other data bytes are ignored",
           "an illegal command clears the data source; a data byte for a non-write source "
           "aborts QEMU; a no-response answer rewinds the data buffer"),
    _proto("inactive", "commands in inactive state are processed (all illegal)",
           "commands in inactive state are dropped without touching the status"),
    _proto("class-table", "fixed class table (see sd_commands.LEGACY_CLASSES)",
           "classes from the command table; commands without an entry refused while locked"),
    _rules("sendingdata-state",
           "9.1-10.0: ACMD13/22/51 and CMD19 start sending in any state (7.2 checked it)",
           "illegal outside transfer state"),
    _rules("spec-v1", "spec_version 1 (v1.10) accepted", "spec_version 1 refused"),
    _rules("size-rule", "image size must be a power of 2",
           "power of 2 up to 2 GiB, above that a multiple of 512 KiB"),
    KnownDifference(
        "compat.sd-card.spec_version", Scope.VERSION, "sd",
        "sd-card spec_version defaults to 3 (Physical Layer 3.01)",
        "machine types 9.0 and older keep spec_version 2",
        boundaries.CARD_SPEC_3.versions(),
        boundary=boundaries.CARD_SPEC_3.key,
        compat=Compat("sd-card", "spec_version", "2", (9, 0),
                      source="hw_compat_9_0 (spec_version default became 3 in 9.1)")),
    KnownDifference(
        "compat.sd-card.erase-blocks-as-zero", Scope.VERSION, "sd",
        "erase-blocks-as-zero defaults to true (the unreleased hw/sd erase series)",
        "machine types 11.0 and older keep erase-blocks-as-zero false", EVERY_VERSION,
        boundary=boundaries.ERASE_SERIES.key,
        compat=Compat("sd-card", "erase-blocks-as-zero", "false", (11, 0), needs_property=True,
                      source="hw_compat_11_0 of the 'Improve performance of read/write/erase' "
                             "series")),
)
