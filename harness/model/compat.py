"""Machine compat properties for the SD card, as QEMU's hw_compat tables set them.

A versioned machine type (``pc-q35-9.0``, ``pc-i440fx-11.0``) keeps the
device defaults of that QEMU release through ``hw_compat_X_Y`` entries in
``hw/core/machine.c``.  :func:`defaults_for` answers "which ``sd-card``
property values does this machine type get on this build": the build's own
device default (``profile.sd_card_properties``) overridden by every compat
entry that applies.  Checked against hw/core/machine.c of QEMU 7.2, 10.0.13
and 10.2.2: the only sd-card/sdhci entry is ``spec_version=2`` in
``hw_compat_9_0``; the unreleased erase series adds ``erase-blocks-as-zero``
``false`` for 11.0 and older.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ModelConfigError
from harness.profile import BuildProfile, Version

MachineVersion = tuple[int, int, int]

#: Newest machine type version the model knows; a build may report newer ones.
NEWEST_KNOWN: tuple[int, int] = (11, 1)

_MINORS: dict[int, tuple[int, ...]] = {
    1: (4, 5, 6, 7), 2: tuple(range(0, 13)), 3: (0, 1), 4: (0, 1, 2), 5: (0, 1, 2),
    6: (0, 1, 2), 7: (0, 1, 2), 8: (0, 1, 2), 9: (0, 1, 2), 10: (0, 1, 2), 11: (0, 1),
}


def _known_types() -> tuple[str, ...]:
    out: list[str] = []
    for major, minors in _MINORS.items():
        for minor in minors:
            if (major, minor) >= (2, 4):
                out.append(f"pc-q35-{major}.{minor}")
            out.append(f"pc-i440fx-{major}.{minor}")
    out.append("pc-q35-4.0.1")
    return tuple(out)


#: Every versioned x86 PC machine type QEMU has offered up to NEWEST_KNOWN
#: (q35 from 2.4, i440fx from 1.4, plus the 4.0.1 bugfix q35 type).
KNOWN_MACHINE_TYPES: tuple[str, ...] = _known_types()

#: Unversioned aliases and the family they stand for.
ALIASES: dict[str, str] = {"q35": "pc-q35-", "pc": "pc-i440fx-"}

_VERSIONED = re.compile(r"^(pc-q35-|pc-i440fx-)(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class CompatEntry:
    """One ``hw_compat_X_Y`` global property for the SD card."""

    device: str
    prop: str
    value: str
    #: applies to machine types up to and including this version
    upto: tuple[int, int]
    #: first QEMU build that carries the entry
    since_build: Version
    #: only when the build has the property (the unreleased erase series)
    needs_property: bool = False
    source: str = ""


COMPAT_TABLE: tuple[CompatEntry, ...] = (
    CompatEntry("sd-card", "spec_version", "2", (9, 0), (9, 1, 0),
                source="hw_compat_9_0 (spec_version default became 3 in 9.1)"),
    CompatEntry("sd-card", "erase-blocks-as-zero", "false", (11, 0), (0, 0, 0),
                needs_property=True,
                source="hw_compat_11_0 of the 'Improve performance of read/write/erase' series"),
)


class UnknownMachineError(ModelConfigError):
    """A machine type the build does not offer."""


def machine_version(name: str) -> MachineVersion | None:
    """``pc-q35-4.0.1`` -> ``(4, 0, 1)``; None for an unversioned type."""
    m = _VERSIONED.match(name)
    if not m:
        return None
    return (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))


def _offered(profile: BuildProfile) -> tuple[str, ...]:
    return tuple(profile.machine_types) if profile.machine_types else KNOWN_MACHINE_TYPES


def resolve_machine(machine: str, profile: BuildProfile) -> str:
    """The concrete machine type ``machine`` names on this build.

    ``q35`` and ``pc`` resolve to the newest versioned type of their family
    the build offers.  Raises :class:`UnknownMachineError` for a type the
    build does not offer: QEMU refuses it too ("unsupported machine type").
    """
    offered = _offered(profile)
    family = ALIASES.get(machine)
    if family is not None:
        versions = [(v, n) for n in offered if n.startswith(family)
                    and (v := machine_version(n)) is not None]
        if not versions:
            raise UnknownMachineError(
                f"machine type {machine!r}: this build offers no {family}X.Y type; "
                "QEMU refuses it too")
        return max(versions)[1]
    if machine in offered:
        return machine
    raise UnknownMachineError(
        f"unknown machine type {machine!r} for QEMU {'.'.join(map(str, profile.version))}: "
        "QEMU refuses it too (unsupported machine type)")


def _parse_bool(text: str | None, default: bool) -> bool:
    if text is None:
        return default
    return text.strip().lower() in ("true", "on", "yes", "1")


def _parse_int(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        return int(text.strip(), 0)
    except ValueError:
        return default


def build_defaults(profile: BuildProfile) -> dict[str, object]:
    """The build's own ``sd-card`` defaults (no machine compat applied)."""
    props = profile.sd_card_properties
    out: dict[str, object] = {
        "spec_version": _parse_int(props.get("spec_version"),
                                   3 if profile.version >= (9, 1, 0) else 2),
    }
    if profile.has_erase_blocks_as_zero:
        out["erase-blocks-as-zero"] = _parse_bool(props.get("erase-blocks-as-zero"), True)
    return out


def defaults_for(machine: str | None, profile: BuildProfile) -> dict[str, object]:
    """``sd-card`` property defaults for ``machine`` on the build ``profile``.

    ``machine=None`` gives the build's own defaults.  Keys are QEMU property
    names: ``spec_version`` (int) and, only where the build has it,
    ``erase-blocks-as-zero`` (bool).
    """
    out = build_defaults(profile)
    if machine is None:
        return out
    mv = machine_version(resolve_machine(machine, profile))
    if mv is None:
        return out
    for e in COMPAT_TABLE:
        if e.device != "sd-card" or (mv[0], mv[1]) > e.upto:
            continue
        if e.needs_property:
            if e.prop not in profile.sd_card_properties:
                continue
        elif profile.version < e.since_build:
            continue
        if e.prop == "spec_version":
            out[e.prop] = int(e.value)
        else:
            out[e.prop] = _parse_bool(e.value, False)
    return out
