"""Machine compat properties for the SD devices, as QEMU's hw_compat tables set them.

A versioned machine type (``pc-q35-9.0``, ``pc-i440fx-11.0``) keeps the
device defaults of that QEMU release through ``hw_compat_X_Y`` entries in
``hw/core/machine.c``.  :func:`defaults_for` answers "which property values
does this machine type get on this build": the class default from the
model's own table (:mod:`harness.model.defaults`, never the build's
``device-list-properties``) overridden by every compat entry that applies.
Checked against hw/core/machine.c of QEMU 7.2, 10.0.13 and 10.2.2: the only
sd-card/sdhci entry is ``spec_version=2`` in ``hw_compat_9_0``; the
unreleased erase series adds ``erase-blocks-as-zero`` ``false`` for 11.0
and older.  The entries are the ledger's (``compat`` of its version
entries).
"""

from __future__ import annotations

import re

from harness.errors import ModelConfigError
from harness.ledger import LEDGER, Compat, boundaries, parse_version
from harness.model import defaults
from harness.model.defaults import Value
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


#: Every compat property of the ledger (:mod:`harness.ledger.versions`).
COMPAT_TABLE: tuple[Compat, ...] = tuple(d.compat for d in LEDGER.values() if d.compat)

#: The first build that carries each of them: its ledger entry's first version.
_SINCE: dict[Compat, Version] = {
    d.compat: parse_version(d.versions.first) if d.versions.first else boundaries.ALWAYS
    for d in LEDGER.values() if d.compat}


def since_build(e: Compat) -> Version:
    """The first QEMU version that carries compat property ``e``."""
    return _SINCE.get(e, boundaries.ALWAYS)


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


def _parse(text: str, like: Value) -> Value:
    """A compat entry's text as a value of the class default's type."""
    if isinstance(like, bool):
        return text.strip().lower() in ("true", "on", "yes", "1")
    return int(text.strip(), 0)


def entries_for(machine: str, profile: BuildProfile,
                device: str = "sd-card") -> tuple[Compat, ...]:
    """The compat entries of ``device`` that apply to ``machine`` on this build."""
    mv = machine_version(resolve_machine(machine, profile))
    if mv is None:
        return ()
    have = profile.properties(device)
    out = []
    for e in COMPAT_TABLE:
        if e.device != device or (mv[0], mv[1]) > e.upto:
            continue
        if e.needs_property:
            if e.prop not in have:
                continue
        elif profile.version < since_build(e):
            continue
        out.append(e)
    return tuple(out)


def defaults_for(machine: str | None, profile: BuildProfile,
                 device: str = "sd-card") -> dict[str, Value]:
    """``device``'s property defaults for ``machine`` on the build ``profile``.

    The table's class defaults for the build's version, then the machine's
    compat entries; ``machine=None`` gives the class defaults alone.  Keys
    are QEMU property names (for sd-card: ``spec_version`` and, only where
    the build has it, ``erase-blocks-as-zero``).
    """
    out = {p: d.value for p, d in defaults.class_defaults(device, profile).items()}
    if machine is None:
        return out
    for e in entries_for(machine, profile, device):
        if e.prop in out:
            out[e.prop] = _parse(e.value, out[e.prop])
    return out
