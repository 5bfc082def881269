"""What a QEMU build offers, as detected from the binary.

Neutral ground: the QEMU side fills a :class:`BuildProfile` from QMP
(``query-version``, ``query-machines``, ``device-list-properties``) and the
model reads it to mirror that build.  Nothing here is typed by a user or
assumed from a version number alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """``"10.0.13"`` or ``"7.2.0 (Debian ...)"`` -> ``(10, 0, 13)``."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise ValueError(f"not a QEMU version: {text!r}")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


#: Why a build cannot host an eMMC: skips for a device the build does not
#: offer (they do not count as a build skipping too much).
NO_EMMC = "this build has no emmc device (QEMU 9.1 and later have one)"
EMMC_NOT_PLUGGABLE = ("this build's emmc is not user-creatable: -device emmc is refused "
                      "('expects a pluggable device type'), so no eMMC can sit on sdhci-pci")
DEVICE_ABSENT = frozenset({NO_EMMC, EMMC_NOT_PLUGGABLE})


@dataclass(frozen=True)
class BuildProfile:
    """Capabilities of one QEMU build, as far as the SD devices are concerned.

    ``sd_card_properties`` and ``sdhci_properties`` map each property name
    reported by ``device-list-properties`` to its default value as text
    (``None`` when QEMU reports no default).  The model reads only which
    properties exist; their defaults come from its own table
    (``harness.model.defaults``), and the build's texts are shown beside it
    in the compat report.
    """

    version: Version
    machine_types: tuple[str, ...] = ()
    sd_card_properties: Mapping[str, str | None] = field(default_factory=dict)
    sdhci_properties: Mapping[str, str | None] = field(default_factory=dict)
    has_qtest_accel: bool = True
    #: Free-form version text from ``query-version`` (``package`` field).
    package: str = ""
    #: ``emmc``'s properties the same way; ``None``: the build has no
    #: ``emmc`` device (QEMU before 9.1).
    emmc_properties: Mapping[str, str | None] | None = None
    #: ``emmc`` is user-creatable (listed by ``device_add help``): QEMU 10.0
    #: has the device type but refuses ``-device emmc`` ("expects a
    #: pluggable device type").
    emmc_pluggable: bool = False

    @property
    def has_emmc(self) -> bool:
        """The build has the ``emmc`` device type."""
        return self.emmc_properties is not None

    def emmc_unusable(self) -> str | None:
        """Why ``-device emmc`` cannot go on sdhci-pci's bus here (None: it can)."""
        if self.emmc_properties is None:
            return NO_EMMC
        if not self.emmc_pluggable:
            return EMMC_NOT_PLUGGABLE
        return None

    @property
    def has_erase_blocks_as_zero(self) -> bool:
        """The hw/sd performance series (seed 000) is present."""
        return "erase-blocks-as-zero" in self.sd_card_properties

    def properties(self, device: str) -> Mapping[str, str | None]:
        """``sd_card_properties`` for ``"sd-card"``, ``emmc_properties`` for
        ``"emmc"`` (empty without the device), else ``sdhci_properties``."""
        if device == "emmc":
            return self.emmc_properties or {}
        return self.sd_card_properties if device == "sd-card" else self.sdhci_properties

    def to_json(self) -> dict[str, Any]:
        return {"version": list(self.version), "machine_types": list(self.machine_types),
                "sd_card_properties": dict(self.sd_card_properties),
                "sdhci_properties": dict(self.sdhci_properties),
                "has_qtest_accel": self.has_qtest_accel, "package": self.package,
                "emmc_properties": (None if self.emmc_properties is None
                                    else dict(self.emmc_properties)),
                "emmc_pluggable": self.emmc_pluggable}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BuildProfile:
        major, minor, micro = (int(x) for x in d["version"])
        return cls(version=(major, minor, micro),
                   machine_types=tuple(d.get("machine_types", ())),
                   sd_card_properties=dict(d.get("sd_card_properties", {})),
                   sdhci_properties=dict(d.get("sdhci_properties", {})),
                   has_qtest_accel=bool(d.get("has_qtest_accel", True)),
                   package=str(d.get("package", "")),
                   emmc_properties=(None if d.get("emmc_properties") is None
                                    else dict(d["emmc_properties"])),
                   emmc_pluggable=bool(d.get("emmc_pluggable", False)))


#: A profile for the model when no build is mirrored: the newest behaviour
#: the model knows (the newest build its boundaries were held against,
#: ``harness.ledger.boundaries.BUILDS``), with the seed series present.
NEWEST = BuildProfile(
    version=(11, 1, 3),
    sd_card_properties={"spec_version": "3", "erase-blocks-as-zero": "true"},
    sdhci_properties={"sd-spec-version": "2"},
    emmc_properties={"boot-partition-size": "0", "boot-config": "0",
                     "rpmb-partition-size": "0"},
    emmc_pluggable=True,
)
