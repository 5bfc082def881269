"""Compare two ``check --json`` reports: the same behaviour, or what differs.

Two runs of the same check agree when every result (keyed by build,
machine and scenario) and every top-level list is equal once the fields
that may differ between runs are left out: ``seconds`` (timing),
``scope`` (the ledger's field, absent from reports older than it) and the
``value`` of an adoption (a value QEMU draws at random or leaves
undefined: that is why it is adopted).  A report of schema version 2
against an older one: a result's ``internal_error`` false is its absence,
and the ``summary`` block (figures drawn from the results, compared
already) counts only where both have it, its ``elapsed_seconds`` left out;
``schema_version`` and ``command`` are not behaviour.  A report of
schema version 3 (each result's known differences as one ``known``
object) against an older one compares as the older one's lists.
``python -m harness.check.json_diff BEFORE AFTER`` prints the figures and
exits 1 when something differs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Fields left out wherever they appear.
IGNORED = frozenset({"seconds", "scope", "elapsed_seconds"})
#: Top-level keys that say what the report is, not what the check found.
FORMAT_KEYS = frozenset({"schema_version", "command"})


def strip(x: Any, *, in_adoption: bool = False) -> Any:
    """``x`` without the fields that may differ between runs."""
    if isinstance(x, dict):
        return {k: strip(v, in_adoption=k in ("adoptions", "adopted")) for k, v in x.items()
                if k not in IGNORED and not (in_adoption and k == "value")
                and not (k == "internal_error" and v is False)}
    if isinstance(x, list):
        return [strip(v, in_adoption=in_adoption) for v in x]
    return x


@dataclass
class JsonComparison:
    """Results equal, differing, and only on one side; top-level lists that differ."""

    equal: int = 0
    differ: list[str] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not (self.differ or self.only_before or self.only_after or self.sections)

    def lines(self) -> list[str]:
        out = [f"{self.equal} results equal, {len(self.differ)} differ, "
               f"{len(self.only_before)} only before, {len(self.only_after)} only after; "
               f"sections differing: {', '.join(self.sections) or 'none'}"]
        out += [f"  differs: {k}" for k in self.differ[:20]]
        out += [f"  only before: {k}" for k in self.only_before[:20]]
        out += [f"  only after: {k}" for k in self.only_after[:20]]
        return out


def older_known(r: dict[str, Any]) -> dict[str, Any]:
    """A schema-3 result as schema 2 gave it: its ``known`` (ledger key ->
    use) as the lists ``quirks`` (one per step applied, by step),
    ``stale_quirks``, ``known_deviation_misses`` and ``adoptions``; what
    schema 2 did not report (a use met outside the lockstep) left out.
    Unordered lists are sorted."""
    if "known" not in r:
        out = dict(r)
    else:
        out = {k: v for k, v in r.items() if k != "known"}
        uses = r["known"].items()
        out["quirks"] = [k for _, k in sorted((i, k) for k, u in uses for i in u["applied"])]
        out["stale_quirks"] = [k for k, u in uses if u["stale"]]
        out["known_deviation_misses"] = [{"message": m, "deviation": k}
                                         for k, u in uses for m in u["misses"]]
        out["adoptions"] = sorted((a for _, u in uses for a in u["adopted"]),
                                  key=lambda a: a["step"])
    out["stale_quirks"] = sorted(out.get("stale_quirks", []))
    out["known_deviation_misses"] = sorted(
        out.get("known_deviation_misses", []), key=lambda m: (m["deviation"], m["message"]))
    return out


def _by_key(report: dict[str, Any], older: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in report.get("results", []):
        key = f"{r['build']} {r['machine']} {r['scenario']}"
        out[key] = strip(older_known(r) if older else r)
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> JsonComparison:
    """How ``after`` differs from ``before``, ignoring :data:`IGNORED`; a
    report of schema version 3 against an older one compares as the older
    one (:func:`older_known`)."""
    c = JsonComparison()
    older = min(before.get("schema_version", 1), after.get("schema_version", 1)) < 3
    a, b = _by_key(before, older), _by_key(after, older)
    for k, v in a.items():
        if k not in b:
            c.only_before.append(k)
        elif b[k] == v:
            c.equal += 1
        else:
            c.differ.append(k)
    c.only_after = [k for k in b if k not in a]
    for section in sorted((set(before) | set(after)) - {"results"} - FORMAT_KEYS):
        if section == "summary" and (section not in before or section not in after):
            continue
        if strip(before.get(section)) != strip(after.get(section)):
            c.sections.append(section)
    return c


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m harness.check.json_diff BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    before, after = (json.loads(Path(p).read_text()) for p in argv)
    c = compare(before, after)
    print("\n".join(c.lines()))
    return 0 if c.same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
