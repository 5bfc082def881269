"""Which installed builds have each bug: the reproducers' verdicts, recorded.

``sdqtest bugs --qemu B ... --record`` runs every reproducer on each build
and writes the verdicts to ``bugs/seen.json`` (build version -> verdict per
bug, with the date).  From them: since when a bug is there (the first
Debian release whose build shows it, for the patch's "since QEMU X.Y"
line) and which build fixes it ("fixed in <build>": present on an older
build, absent on a newer one).  The ledger's versions stay the rule the
check follows; a recorded fix that the ledger does not know yet is listed
as a ledger entry to correct (``sdqtest bugs``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.bugs.catalog import BUGS_DIR, Bug
from harness.ledger import parse_version

SEEN_FILE = BUGS_DIR / "seen.json"


@dataclass(frozen=True)
class Seen:
    """One bug's verdicts by build version (``present``, ``absent``, ``n/a`` ...)."""

    verdicts: dict[str, str]

    def ordered(self) -> list[tuple[str, str]]:
        return sorted(self.verdicts.items(), key=lambda kv: parse_version(kv[0]))

    def first_present(self) -> str | None:
        return next((v for v, s in self.ordered() if s == "present"), None)

    def fixed_in(self) -> str | None:
        """The first build absent after one present (a fix QEMU made)."""
        was = False
        for v, s in self.ordered():
            was = was or s == "present"
            if was and s == "absent":
                return v
        return None

    def cell(self) -> str:
        """``7.2.22 present, 10.0.13 present, 11.1.3 absent``."""
        return ", ".join(f"{v} {s}" for v, s in self.ordered()) or "-"


def load(path: Path = SEEN_FILE) -> dict[str, Seen]:
    """Bug name -> what the recorded runs saw (empty without a record)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {name: Seen(dict(v)) for name, v in data.get("verdicts", {}).items()}


def record(outcomes: dict[tuple[str, str], str], date: str, path: Path = SEEN_FILE) -> None:
    """Merge ``(bug name, build version) -> verdict`` into the record."""
    data = json.loads(path.read_text()) if path.is_file() else {}
    verdicts: dict[str, dict[str, str]] = data.get("verdicts", {})
    for (name, version), verdict in outcomes.items():
        verdicts.setdefault(name, {})[version] = verdict
    out = {"about": "sdqtest bugs --qemu B... --record: each reproducer's verdict per "
                    "build version (harness/bugs/seen.py)",
           "measured": date, "verdicts": dict(sorted(verdicts.items()))}
    path.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")


def since_text(bug: Bug, table: dict[str, Seen] | None = None) -> str:
    """The patch's line on since when QEMU has the bug, from the record and
    the ledger's first version."""
    s = (load() if table is None else table).get(bug.name)
    first = bug.entry.versions.first
    if s is None or s.first_present() is None:
        return (f"The ledger dates it to QEMU {first}." if first else
                "Not yet measured on an older release.")
    ordered = s.ordered()
    fp = s.first_present()
    before = [(v, st) for v, st in ordered if parse_version(v) < parse_version(fp or "0")]
    seen_on = ", ".join(v for v, st in ordered if st == "present")
    if not before:
        return (f"Present since at least QEMU {_series(fp)}: Debian's builds "
                f"{seen_on} all show it ({_series(fp)} is the oldest tested).")
    v, st = before[-1]
    if st == "absent":
        return (f"Since QEMU {first or _series(fp)}: Debian's {v} build does not show it, "
                f"{fp} does (present on {seen_on}).")
    return (f"Since QEMU {first or _series(fp)} at least: the device cannot run on "
            f"Debian's {v} build ({st}); present on {seen_on}.")


def _series(version: str | None) -> str:
    major, minor, _ = parse_version(version or "0")
    return f"{major}.{minor}"
