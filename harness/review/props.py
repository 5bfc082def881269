"""Device properties of base and patched, per versioned machine type, from QMP.

Class defaults come from each build's ``device-list-properties`` (its
profile); realised values from ``qom-get`` on a machine of each versioned
``pc-q35-*`` type and the ``q35``/``pc`` aliases.  A property added, removed
or given a new class default is a change; whether older machine types keep
the base build's behaviour is the compat question: each machine type older
than the newest must realise what base realised there (for a new property:
the value under which patched behaves as base did, found by the direct
comparison, :attr:`PropChange.base_value`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.check import parallel
from harness.check.compat_matrix import PATHS
from harness.machine import Machine
from harness.model import defaults
from harness.qemu.builds import QemuBuild
from harness.qemu.session import QemuError, QemuSession

DEVICES = ("sd-card", "sdhci-pci")
#: Properties that are wiring, not behaviour.
WIRING = ("drive", "dma")
ADDED, REMOVED, DEFAULT = "added", "removed", "new default"


def norm(v: Any) -> str:
    """A property value as text both QMP answers compare by."""
    if isinstance(v, bool):
        return "on" if v else "off"
    text = str(v).strip().lower()
    return {"true": "on", "false": "off"}.get(text, text)


@dataclass
class PropChange:
    """One property that differs between the builds."""

    device: str
    prop: str
    kind: str
    base_default: str | None
    patched_default: str | None
    modelled: bool
    #: realised values by machine type
    base: dict[str, str] = field(default_factory=dict)
    patched: dict[str, str] = field(default_factory=dict)
    #: For an added property: the value under which patched behaves as base
    #: (None: not known), and the scenarios its default changes.
    base_value: str | None = None
    explains: list[str] = field(default_factory=list)
    #: The patch that introduced it (``--each``), as the report names it.
    patch: str = ""

    @property
    def name(self) -> str:
        return f"{self.device} {self.prop}"

    def visible(self) -> bool:
        """The new default changes what a guest sees (some scenario)."""
        return bool(self.explains) or (self.kind != ADDED and self.modelled)

    def old_value(self, machine: str) -> str | None:
        """What ``machine`` had on base: base's realised value, or for a new
        property the value that behaves as base."""
        return self.base.get(machine, self.base_value)

    def kept(self, older: list[str]) -> tuple[list[str], list[str]]:
        """``(kept, broken)`` of the ``older`` machine types: each realises
        its old value on patched, or not."""
        kept: list[str] = []
        broken: list[str] = []
        for m in older:
            old = self.old_value(m)
            if old is None or m not in self.patched:
                continue
            (kept if self.patched[m] == old else broken).append(m)
        return kept, broken

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "property": self.prop, "kind": self.kind,
                "base_default": self.base_default, "patched_default": self.patched_default,
                "modelled": self.modelled, "base_value": self.base_value,
                "explains": self.explains, "patch": self.patch,
                "realised": {"base": self.base, "patched": self.patched}}


def machine_types(b: QemuBuild) -> list[str]:
    """Versioned q35 types, oldest first, then the aliases."""
    return b.versioned_machines("q35") + [a for a in ("q35", "pc") if b.offers(a)]


def newest(b: QemuBuild) -> str:
    q35 = b.versioned_machines("q35")
    return q35[-1] if q35 else "q35"


def older_types(b: QemuBuild) -> list[str]:
    """Versioned types older than the newest: those compat entries are for."""
    return b.versioned_machines("q35")[:-1]


def _version(m: str) -> tuple[int, ...]:
    found = re.findall(r"\d+", m)
    return tuple(int(x) for x in found)


def realised(build: QemuBuild, machine: str, props: list[tuple[str, str]]) -> dict[str, str]:
    """``"device prop" -> value`` on ``machine`` (QMP ``qom-get``)."""
    out: dict[str, str] = {}
    with QemuSession(build.binary, Machine(type=machine), accel="auto") as s:
        for dev, prop in props:
            try:
                out[f"{dev} {prop}"] = norm(s.qmp_cmd("qom-get", path=PATHS[dev], property=prop))
            except QemuError as e:
                out[f"{dev} {prop}"] = f"error: {e}"
    return out


def _props(b: QemuBuild) -> dict[tuple[str, str], str | None]:
    return {(d, p): (None if v is None else norm(v)) for d in DEVICES
            for p, v in b.profile.properties(d).items() if p not in WIRING}


def compare(base: QemuBuild, patched: QemuBuild, jobs: int = 1) -> list[PropChange]:
    """Every property added, removed, given a new class default, or realised
    differently on some machine type both builds offer."""
    a, b = _props(base), _props(patched)
    keys = list(dict.fromkeys([*a, *b]))
    machines = [m for m in machine_types(patched) if base.offers(m)]
    items = [(bd, m, [k for k in keys if k in (a if bd is base else b)])
             for bd in (base, patched) for m in machines]
    got = parallel.map_ordered(realised, items, jobs)
    seen: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = {
        k: ({}, {}) for k in keys}
    for (bd, m, _), values in zip(items, got, strict=True):
        for k in keys:
            v = values.get(f"{k[0]} {k[1]}")
            if v is not None:
                seen[k][0 if bd is base else 1][m] = v
    out: list[PropChange] = []
    for k in keys:
        dev, prop = k
        kind = ADDED if k not in a else REMOVED if k not in b else DEFAULT
        rb, rp = seen[k]
        if kind == DEFAULT and a[k] == b[k] and all(rb.get(m) == rp.get(m) for m in rp):
            continue
        out.append(PropChange(dev, prop, kind, a.get(k), b.get(k),
                              prop in defaults.properties(dev), rb, rp))
    return out


def unmodelled_bools(changes: list[PropChange]) -> list[PropChange]:
    """Added properties the model does not know whose default is on/off:
    the ones the review runs with each value set explicitly."""
    return [c for c in changes if c.kind == ADDED and not c.modelled
            and c.patched_default in ("on", "off")]


def flipped(value: str) -> str:
    return "off" if value == "on" else "on"
