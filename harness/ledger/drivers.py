"""Driver evidence: which recorded real drivers meet each ledger entry.

Kept apart from the entries themselves (:mod:`harness.ledger.entry`): it is a
fact about the recordings of the drivers group (``harness/scenarios/drivers_data``),
measured by replaying them, not about QEMU or the specifications.  An entry
absent from :data:`DRIVERS` is met by no recorded driver.

Each :class:`DriverUse` says how the replay met the entry on Debian's builds:
``shown`` (the difference showed in the replay: a quirk matched, a value
adopted, or the strict check found it) or ``reached`` (the model consulted its
switch: the driver's traffic took the path where QEMU and the rule part, and
QEMU's choice decided the answer), with the recording's phases where it did.
``sdqtest drivers evidence --write`` measures it again and rewrites
``driver_evidence.json`` beside this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

FILE = Path(__file__).with_name("driver_evidence.json")
HOW = ("shown", "reached")


@dataclass(frozen=True)
class DriverUse:
    """A recorded driver meeting an entry: the recording, the phases, how, the builds."""

    recording: str
    phases: tuple[str, ...]
    how: str
    builds: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.how not in HOW:
            raise ValueError(f"driver evidence: how {self.how!r} is not one of {HOW}")

    def describe(self) -> str:
        """``linux-6.1-sdhci-pci: probe, write-4k (reached; 7.2, 10.0, 11.1)``."""
        return (f"{self.recording}: {', '.join(self.phases)} ({self.how}; "
                f"{', '.join(self.builds)})")


def load(path: Path = FILE) -> Mapping[str, tuple[DriverUse, ...]]:
    """Entry key -> the uses, from the evidence file (nothing when it is absent)."""
    if not path.is_file():
        return MappingProxyType({})
    data = json.loads(path.read_text())
    out = {key: tuple(DriverUse(u["recording"], tuple(u["phases"]), u["how"],
                                tuple(u["builds"])) for u in uses)
           for key, uses in data["entries"].items()}
    return MappingProxyType(out)


DRIVERS: Mapping[str, tuple[DriverUse, ...]] = load()


def uses(key: str) -> tuple[DriverUse, ...]:
    """The recorded drivers that meet entry ``key`` (empty: none)."""
    return DRIVERS.get(key, ())


def evidence_text(key: str) -> str:
    """One line: ``none``, or each use described."""
    found = uses(key)
    return "; ".join(u.describe() for u in found) if found else "none"
