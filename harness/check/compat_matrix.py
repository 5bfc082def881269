"""The machine-compat matrix: what a guest sees against the model's table.

For every versioned ``pc-q35-*`` and ``pc-i440fx-*`` machine type a build
offers, and its unversioned aliases (``q35``, ``pc``), QEMU is started with
that machine and sdhci-pci + sd-card, and every property the model consumes
is read back with QMP ``qom-get``: the realised value.  It must equal the
model's expectation, :func:`harness.model.compat.defaults_for` (the class
default from :mod:`harness.model.defaults`, then the machine's compat
entries).  The build's own class default (``device-list-properties``) is
shown beside it: where it differs from the table while every realised
value agrees, that is a note, not a divergence.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from harness.check import parallel, wall
from harness.check.runner import AGREE, DIVERGE, Result
from harness.hwdefs import sdhci as H
from harness.machine import CARD_ID, SDHCI_ID, Machine
from harness.model import compat, defaults, emmc_defaults
from harness.qemu import answers
from harness.qemu.builds import QemuBuild
from harness.qemu.session import QemuError, QemuSession
from harness.table import print_table

#: QOM path of each device, by type.
PATHS = {"sd-card": f"/machine/peripheral/{CARD_ID}",
         "sdhci-pci": f"/machine/peripheral/{SDHCI_ID}"}
DEVICES = ("sd-card", "sdhci-pci")
#: Registers whose value a property is, for a field-by-field decoding.
_REGISTERS = {"capareg": H.CAPAB, "maxcurr": H.MAXCURR}


@dataclass(frozen=True)
class CompatCell:
    """One property of one machine type: realised (``actual``) against the
    model's expectation, with the class defaults of the table and of the build."""

    build: str
    machine: str
    device: str
    prop: str
    expected: Any
    actual: Any
    #: the table's class default for the build's version
    table_default: Any = None
    #: the build's class default, as ``device-list-properties`` reports it
    build_default: str | None = None
    #: sources of the compat entries that made ``expected`` differ from the class default
    compat: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(_norm(self.expected) == _norm(self.actual))

    @property
    def name(self) -> str:
        return f"{self.device} {self.prop}"

    def describe(self) -> str:
        """The divergence, decoded: machine, property, table, realised, build default."""
        why = "; ".join(self.compat) or "no compat entry"
        lines = [f"{self.machine}: {self.name} realised {show(self.prop, self.actual)}, "
                 f"the model expects {show(self.prop, self.expected)} "
                 f"(table class default {show(self.prop, self.table_default)}; {why})",
                 f"  build's class default (device-list-properties): "
                 f"{show(self.prop, self.build_default)}"]
        reg = _REGISTERS.get(self.prop)
        exp, act = _norm(self.expected), _norm(self.actual)
        if reg is not None and isinstance(exp, int) and isinstance(act, int):
            for field, want, got in reg.diff(exp, act):
                lines.append(f"  {reg.name}.{field}: model {want:#x}, QEMU {got:#x}")
        return "\n".join(lines)


def _norm(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("true", "false", "on", "off"):
        return v.lower() in ("true", "on")
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return v
    return v


def show(prop: str, v: Any) -> str:
    """A value as the report prints it (register-sized ones in hex)."""
    n = _norm(v)
    if v is None:
        return "(none)"
    if prop in _REGISTERS and isinstance(n, int) and not isinstance(n, bool):
        return f"{n:#010x}"
    return str(n).lower() if isinstance(n, bool) else str(n)


def machines_of(build: QemuBuild) -> list[str]:
    """Versioned q35 and i440fx types, oldest first, then the aliases."""
    versioned = build.versioned_machines("q35") + build.versioned_machines("pc")
    return versioned + [a for a in ("q35", "pc") if build.offers(a)]


def properties_of(build: QemuBuild) -> list[tuple[str, str]]:
    """``(device, property)`` pairs checked on ``build``: every property the
    model consumes that the build has."""
    p = build.profile
    return [(dev, prop) for dev in DEVICES for prop in defaults.properties(dev)
            if prop in p.properties(dev)]


def check_machine(build: QemuBuild, machine: str) -> list[CompatCell]:
    """Start ``machine`` on ``build`` and compare each realised property."""
    p = build.profile
    cells = []
    got = realised(build, machine)
    for (dev, prop), actual in zip(properties_of(build), got, strict=True):
        expected = compat.defaults_for(machine, p, dev)
        table = compat.defaults_for(None, p, dev)
        entries = tuple(f"{e.prop}={e.value} from {e.source}"
                        for e in compat.entries_for(machine, p, dev) if e.prop == prop)
        cells.append(CompatCell(build.name, machine, dev, prop, expected.get(prop), actual,
                          table.get(prop), p.properties(dev).get(prop), entries))
    return cells


def realised(build: QemuBuild, machine: str) -> list[Any]:
    """QMP ``qom-get`` of each of :func:`properties_of` on a QEMU of
    ``machine`` (one session), kept by the binary's contents
    (:mod:`harness.qemu.answers`) unless a read failed."""
    props = properties_of(build)

    def ask() -> list[Any]:
        out: list[Any] = []
        with QemuSession(build.binary, Machine(type=machine), accel="auto") as s:
            for dev, prop in props:
                try:
                    out.append(s.qmp_cmd("qom-get", path=PATHS[dev], property=prop))
                except QemuError as e:
                    out.append(f"error: {e}")
        return out

    return answers.cached(build.binary, "compat", f"{machine} {props}", ask,
                          keep=lambda got: not any(str(v).startswith("error: ") for v in got))


def verdict(c: CompatCell) -> Result:
    """A cell as a run of the check's ``compat-matrix`` group: agree or diverge."""
    res = Result(c.build, f"compat {c.machine} {c.name}", "compat-matrix", c.machine,
                 AGREE if c.ok else DIVERGE)
    if not c.ok:
        res.reason = c.describe()
    return res


def check_verdicts(builds: list[QemuBuild], jobs: int = 1,
                   progress: Callable[[str], None] | None = None
                   ) -> tuple[list[Result], list[CompatCell]]:
    """Every machine type of every build on ``jobs`` workers: each cell's
    verdict, and the cells (for the default notes)."""
    t0 = time.monotonic()
    pairs = [(b, m) for b in builds for m in machines_of(b)]
    cells = [c for cs in parallel.map_ordered(
        check_machine, pairs, jobs,
        progress=(lambda done, bm: progress(f"compat [{done}/{len(pairs)}] {bm[0].name} "
                                            f"{bm[1]}")) if progress else None) for c in cs]
    wall.CLOCK.side("compat matrix", time.monotonic() - t0, len(pairs), jobs)
    return [verdict(c) for c in cells], cells


def matrix(
    builds: list[QemuBuild], progress: Callable[[str], None] | None = None
) -> list[CompatCell]:
    cells: list[CompatCell] = []
    for b in builds:
        for m in machines_of(b):
            if progress:
                progress(f"{b.name} {m}")
            cells += check_machine(b, m)
    return cells


def unverified_notes(builds: list[QemuBuild]) -> list[str]:
    """Per build, why the model's table cannot vouch for its defaults, if so."""
    return [f"[{b.name}] defaults unverified: {n}"
            for b in builds for n in defaults.unverified(b.profile)] + [
        f"[{b.name}] emmc differs from the model's table: {n}"
        for b in builds for n in emmc_defaults.surprises(b.profile)]


def default_notes(builds: list[QemuBuild], cells: list[CompatCell]) -> list[str]:
    """Class defaults of a build that differ from the table while every
    machine type realises the table's value: notes, not divergences."""
    out: list[str] = []
    for b in builds:
        for dev, prop in properties_of(b):
            mine = [c for c in cells if c.build == b.name and (c.device, c.prop) == (dev, prop)]
            if not mine or not all(c.ok for c in mine):
                continue
            c = mine[0]
            if c.build_default is not None and _norm(c.build_default) != _norm(c.table_default):
                out.append(f"[{b.name}] note: {c.name}: the build's class default is "
                           f"{show(prop, c.build_default)}, the model's table says "
                           f"{show(prop, c.table_default)}; every machine type realises "
                           "what the model expects")
    return out


def print_matrix(builds: list[QemuBuild], cells: list[CompatCell], out: TextIO = sys.stdout) -> int:
    """``sdqtest compat``'s output: per build a row of the table's class
    defaults, one of the build's, then each machine type's realised values;
    the divergences decoded; the notes.  Returns the exit status."""
    cols = list(dict.fromkeys((c.device, c.prop) for c in cells))
    by = {(c.build, c.machine, c.device, c.prop): c for c in cells}
    rows = []
    for b in builds:
        table = {d: compat.defaults_for(None, b.profile, d) for d in DEVICES}
        have = {d: b.profile.properties(d) for d in DEVICES}
        rows.append([b.name, "(class default: model's table)",
                     *(show(p, table[d].get(p)) if p in have[d] else "(no property)"
                       for d, p in cols)])
        rows.append([b.name, "(class default: build's)",
                     *(show(p, have[d][p]) if p in have[d] else "(no property)"
                       for d, p in cols)])
        for m in machines_of(b):
            row = [b.name, m]
            for d, p in cols:
                c = by.get((b.name, m, d, p))
                row.append("(no property)" if c is None else show(p, c.actual)
                           + ("" if c.ok else f" != model {show(p, c.expected)}"))
            rows.append(row)
    print_table(["build", "machine", *(f"{d} {p}" for d, p in cols)], rows, out)
    bad = [c for c in cells if not c.ok]
    if bad:
        print("\ndivergences:", file=out)
        for c in bad:
            print(f"[{c.build}] {c.describe()}", file=out)
    extra = unverified_notes(builds) + default_notes(builds, cells)
    if extra:
        print(file=out)
        for n in extra:
            print(n, file=out)
    print(f"\n{len(cells) - len(bad)} of {len(cells)} realised properties match the "
          "model's table and compat entries", file=out)
    return 1 if bad else 0
