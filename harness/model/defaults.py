"""Class defaults of the device properties the model consumes, per QEMU version.

The model's own table, never the build's ``device-list-properties``: a
build whose compiled-in default moved (a CAPAB bit dropped, a spec version
flipped) then diverges from the model instead of moving it.  Whether a
property exists at all is still detected from the build (see
:attr:`Row.detected`); machine-type compat entries
(:mod:`harness.model.compat`) apply on top of these class defaults.

Sources: the SD Host Controller and SD Physical Layer Simplified
Specifications for what the values mean; QEMU's documented behaviour and
release history; ``device-list-properties`` and ``qom-get`` on Debian's
QEMU 7.2.22, 10.0.13 and 11.1.3 (every machine type) for what a guest sees.
Releases outside :data:`VERIFIED` take the nearest row, and the check
reports their defaults as unverified every time it runs.  The controller's
values are the register map's (:mod:`harness.hwdefs.sdhci`), stated there
once: this table says from which release each holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hwdefs import sdhci as H
from harness.ledger import boundaries
from harness.ledger.boundaries import ALWAYS
from harness.profile import BuildProfile, Version

#: Property value as the model takes it.
Value = int | bool

#: First and last release whose defaults were checked against a build:
#: 7.2.0 up to the 11.1 stable releases (11.1.50 and up is 11.2 development).
VERIFIED: tuple[Version, Version] = boundaries.DEFAULTS_VERIFIED



@dataclass(frozen=True)
class Row:
    """``device``'s ``prop`` defaults to ``value`` from QEMU ``since`` on
    (until the next row of the same property)."""

    device: str
    prop: str
    value: Value
    since: Version
    source: str
    #: the property exists only in some builds: its existence is read from
    #: the build's profile, its default from here
    detected: bool = False


TABLE: tuple[Row, ...] = (
    Row("sdhci-pci", "capareg", H.CAPAREG_DEFAULT, ALWAYS,
        "52 MHz timeout and base clocks, 512-byte buffer, ADMA2, ADMA1, high speed, "
        "SDMA, 3.3 V and 1.8 V; seen on 7.2.22, 10.0.13, 11.1.3"),
    Row("sdhci-pci", "maxcurr", H.MAXCURR_DEFAULT, ALWAYS,
        "no maximum current reported; seen on 7.2.22, 10.0.13, 11.1.3"),
    Row("sdhci-pci", "sd-spec-version", H.SD_SPEC_VERSION_DEFAULT, ALWAYS,
        "SD Host Controller spec 2.00; seen on 7.2.22, 10.0.13, 11.1.3"),
    Row("sdhci-pci", "uhs", 0, ALWAYS,
        "no UHS-I mode; seen on 7.2.22, 10.0.13, 11.1.3"),
    Row("sdhci-pci", "vendor", 0, ALWAYS,
        "no vendor's behaviour (SDHCI_VENDOR_NONE); the property exists up to 10.2 "
        "(boundary sdhci.vendor-property-removed)", detected=True),
    Row("sd-card", "spec_version", 2, ALWAYS,
        "SD Physical Layer 2.00; seen on 7.2.22"),
    Row("sd-card", "spec_version", 3, boundaries.CARD_SPEC_3.since,
        "Physical Layer 3.01 from 9.1 (hw_compat_9_0 keeps 2 for 9.0 and older "
        "machine types); seen on 10.0.13, 11.1.3"),
    Row("sd-card", "erase-blocks-as-zero", True, boundaries.ERASE_SERIES.since,
        "erased blocks read as zeros; the unreleased erase series, assumed in 11.2",
        detected=True),
)


@dataclass(frozen=True)
class Default:
    """A class default the table gives for one build: the value, the row it
    comes from and, when the table cannot vouch for it, why not."""

    value: Value
    row: Row
    unverified: str = ""


def properties(device: str) -> tuple[str, ...]:
    """The properties of ``device`` the table (and so the model) covers."""
    return tuple(dict.fromkeys(r.prop for r in TABLE if r.device == device))


def version_note(version: Version) -> str:
    """Why the table cannot vouch for ``version``'s defaults ('' when it can)."""
    lo, hi = VERIFIED
    text = ".".join(map(str, version))
    if version > hi:
        return (f"QEMU {text} is newer than the newest release whose defaults the model's "
                f"table was checked against ({hi[0]}.{hi[1]}): the model uses the newest "
                "rows, the build's own defaults are not adopted")
    if version < lo:
        return (f"QEMU {text} is older than the oldest release whose defaults the model's "
                f"table was checked against ({lo[0]}.{lo[1]}): the model uses the oldest rows")
    return ""


def class_default(device: str, prop: str, version: Version) -> Default:
    """The table's class default of ``device``'s ``prop`` on QEMU ``version``.

    A version before the property's first row takes that row, as unverified.
    Raises ``KeyError`` for a property the table does not cover."""
    rows = sorted((r for r in TABLE if r.device == device and r.prop == prop),
                  key=lambda r: r.since)
    if not rows:
        raise KeyError(f"the model's defaults table has no {device} property {prop!r}")
    covering = [r for r in rows if r.since <= version]
    if not covering:
        first = rows[0]
        return Default(first.value, first,
                       f"the build has {device} {prop}, but the table knows it only from "
                       f"{'.'.join(map(str, first.since))}: assumed {first.value!r}")
    return Default(covering[-1].value, covering[-1], version_note(version))


def class_defaults(device: str, profile: BuildProfile) -> dict[str, Default]:
    """Every class default of ``device`` the model uses on ``profile``'s build:
    each covered property, a detected one only where the build has it."""
    have = profile.properties(device)
    out: dict[str, Default] = {}
    for prop in properties(device):
        if any(r.detected for r in TABLE if r.device == device and r.prop == prop) \
                and prop not in have:
            continue
        out[prop] = class_default(device, prop, profile.version)
    return out


def unverified(profile: BuildProfile) -> list[str]:
    """Why the table cannot vouch for this build's defaults (empty when it can)."""
    notes = dict.fromkeys(d.unverified for dev in ("sdhci-pci", "sd-card")
                          for d in class_defaults(dev, profile).values() if d.unverified)
    return list(notes)
