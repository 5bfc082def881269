"""The machine-compat matrix: realised device properties vs the model's table.

For every versioned ``pc-q35-*`` and ``pc-i440fx-*`` machine type a build
offers, QEMU is started with that machine and sdhci-pci + sd-card, and the
properties the compat tables govern are read back with QMP ``qom-get``.
They must equal what :func:`harness.model.compat.defaults_for` says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.machine import CARD_ID, Machine
from harness.model import compat
from harness.qemu.builds import QemuBuild
from harness.qemu.session import QemuError, QemuSession

CARD_PATH = f"/machine/peripheral/{CARD_ID}"

#: The sd-card properties the compat tables can change, by QEMU name.
CARD_PROPERTIES = ("spec_version", "erase-blocks-as-zero")


@dataclass(frozen=True)
class Cell:
    build: str
    machine: str
    prop: str
    expected: Any
    actual: Any

    @property
    def ok(self) -> bool:
        return bool(_norm(self.expected) == _norm(self.actual))


def _norm(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("true", "false", "on", "off"):
        return v.lower() in ("true", "on")
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return v


def machines_of(build: QemuBuild) -> list[str]:
    return build.versioned_machines("q35") + build.versioned_machines("pc")


def check_machine(build: QemuBuild, machine: str) -> list[Cell]:
    expected = compat.defaults_for(machine, build.profile)
    props = [p for p in CARD_PROPERTIES if p in build.profile.sd_card_properties]
    cells = []
    with QemuSession(build.binary, Machine(type=machine), accel="auto") as s:
        for p in props:
            try:
                actual: Any = s.qmp_cmd("qom-get", path=CARD_PATH, property=p)
            except QemuError as e:
                actual = f"error: {e}"
            cells.append(Cell(build.name, machine, p, expected.get(p), actual))
    return cells


def matrix(
    builds: list[QemuBuild], progress: Callable[[str], None] | None = None
) -> list[Cell]:
    cells: list[Cell] = []
    for b in builds:
        for m in machines_of(b):
            if progress:
                progress(f"{b.name} {m}")
            cells += check_machine(b, m)
    return cells
