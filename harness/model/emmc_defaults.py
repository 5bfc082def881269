"""What each QEMU version offers of the ``emmc`` device, by the model's own table.

The model never reads these from the build under test: a build that lacks
a property the table expects for its version (or has one the table does
not expect) shows up in :func:`surprises`, and the build's own property
list decides only whether a scenario runs.  Sources: QEMU's release history
(the device arrived with the 9.1 command-table rework) and ``-device
emmc,help`` on Debian's 7.2.22 (no device), 10.0.13 (``boot-config``,
``boot-partition-size``) and 11.1.3 (adds ``rpmb-partition-size``,
``auth-key``).  The 10.2.2 source and 11.0.3 built from source have
``rpmb-partition-size`` without ``auth-key``; 11.1.1 built from source has
both (:mod:`harness.ledger.boundaries` lists the builds per boundary).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.ledger import boundaries
from harness.profile import BuildProfile, Version


@dataclass(frozen=True)
class EmmcRow:
    """``prop`` exists from QEMU ``since`` on, defaulting to ``value``."""

    prop: str
    value: int | str
    since: Version
    source: str


TABLE: tuple[EmmcRow, ...] = (
    EmmcRow("boot-partition-size", 0, boundaries.EMMC_DEVICE.since,
            "bytes per boot partition (a multiple of 128 KiB up to 32640 KiB); seen on 10.0.13, "
            "11.1.3"),
    EmmcRow("boot-config", 0, boundaries.EMMC_DEVICE.since,
            "initial PARTITION_CONFIG (EXT_CSD 179), restored at every reset; seen on 10.0.13, "
            "11.1.3"),
    EmmcRow("rpmb-partition-size", 0, boundaries.EMMC_RPMB.since,
            "bytes of RPMB partition (a multiple of 128 KiB up to 16 MiB); in the 10.2.2 "
            "source and on 11.1.3, absent on 10.0.13 (taken as new in 10.1)"),
    EmmcRow("auth-key", "", boundaries.EMMC_AUTH_KEY.since,
            "RPMB authentication key programmed at realize (64 hex digits); seen on 11.1.1 "
            "built from source and on 11.1.3, absent from 11.0.3 built from source"),
)


def has_emmc(version: Version) -> bool:
    """The table expects ``-device emmc`` on QEMU ``version``."""
    return version >= boundaries.EMMC_DEVICE.since


def pluggable(version: Version) -> bool:
    """The table expects ``-device emmc`` to be accepted on ``version``."""
    return version >= boundaries.EMMC_PLUGGABLE.since


def expected_properties(version: Version) -> dict[str, int | str]:
    """The emmc properties (with defaults) the table expects on ``version``."""
    if not has_emmc(version):
        return {}
    return {r.prop: r.value for r in TABLE if r.since <= version}


def default(prop: str) -> int | str:
    """The class default of ``prop``; ``KeyError`` for a property the table lacks."""
    for r in TABLE:
        if r.prop == prop:
            return r.value
    raise KeyError(f"the model's emmc table has no property {prop!r}")


def surprises(profile: BuildProfile) -> list[str]:
    """Where the build's emmc device differs from what the table expects of
    its version (empty when they agree)."""
    ver = ".".join(map(str, profile.version))
    want = set(expected_properties(profile.version))
    if not profile.has_emmc:
        return [f"QEMU {ver} has no emmc device, the table expects one"] if want else []
    have = set(profile.properties("emmc")) - {"drive"}
    if not has_emmc(profile.version):
        return [f"QEMU {ver} has an emmc device, the table expects none before 9.1"]
    out = []
    if profile.emmc_pluggable != pluggable(profile.version):
        out.append(f"QEMU {ver}'s emmc is {'' if profile.emmc_pluggable else 'not '}"
                   f"user-creatable, the table expects the opposite")
    out += [f"QEMU {ver} lacks emmc property {p}, the table expects it"
            for p in sorted(want - have)]
    out += [f"QEMU {ver} has emmc property {p} the table does not know"
            for p in sorted(have - want)]
    return out
