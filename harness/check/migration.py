"""The migration matrix: builds x machine types x migration points.

Each cell runs one ``migration`` scenario (one migration point) on the
source build in lockstep with the model, migrates QEMU at the point to a
new process of the destination build with the same machine type (see
:mod:`harness.qemu.migrate`), and goes on there; the model does not
migrate: what the guest sees must not change.  After the point the model
mirrors the destination build's code (:func:`model_moves_to`) but keeps
the machine's property values, which the machine type's compat defaults
promise to keep (a pc-q35-9.0 card keeps spec_version 2 on a newer build).

Pairs: every build to itself, and every older build to every newer one.
Machine types: the versioned ``pc-q35``/``pc-i440fx`` types both builds
offer, of which the oldest, the newest and those either side of each
compat change in the model's table (:func:`harness.check.plan.boundaries`)
are always run.  A cell is ``agree``, ``diverge`` (after a successful
load), ``refused`` (QEMU could not save or load the state: its text is
the reason) or, as for any run, ``error``/``crash``/``skipped``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.check import plan, runner
from harness.check.runner import QemuSide, Result
from harness.errors import QemuError, UsageError
from harness.ledger import LEDGER
from harness.model.sdcard import SDCard
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.qemu.argv import shell_line
from harness.qemu.builds import QemuBuild
from harness.qemu.migrate import Migration, MigrationRefused, migrate
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, Scenario
from harness.scenarios import select as select_scenarios
from harness.scenarios.migration import GROUP, POINTS

REFUSED = "refused"
FAMILIES = ("q35", "pc")


@dataclass(frozen=True)
class Pair:
    """Migrate from ``source`` to ``destination`` (the same build, or newer)."""

    source: QemuBuild
    destination: QemuBuild

    @property
    def name(self) -> str:
        return f"{self.source.name}->{self.destination.name}"


def pairs(builds: Sequence[QemuBuild], source: str | None = None,
          destination: str | None = None) -> list[Pair]:
    """Every build to itself, then every older build to every newer one
    (by version; builds of one version count as older in the given order),
    kept to ``source``/``destination`` build names when given."""
    order = sorted(range(len(builds)), key=lambda i: (builds[i].profile.version, i))
    ranked = [builds[i] for i in order]
    out = [Pair(b, b) for b in ranked]
    out += [Pair(a, b) for i, a in enumerate(ranked) for b in ranked[i + 1:]]
    return [p for p in out if (source is None or p.source.name == source)
            and (destination is None or p.destination.name == destination)]


def _version(machine: str, prefix: str) -> tuple[int, ...]:
    return tuple(int(x) for x in machine[len(prefix):].split("."))


def machines(pair: Pair, families: Sequence[str] = FAMILIES,
             wanted: Sequence[str] | None = None) -> list[str]:
    """The machine types a pair runs on: ``wanted`` (those both builds
    offer), else per family the oldest and newest versioned type both
    offer and every boundary type (:func:`plan.boundaries`) both offer."""
    if wanted:
        return [m for m in wanted if pair.source.offers(m) and pair.destination.offers(m)]
    out: list[str] = []
    bounds = plan.boundaries()
    for fam in families:
        prefix = {"q35": "pc-q35-", "pc": "pc-i440fx-"}[fam]
        dst = set(pair.destination.versioned_machines(fam))
        shared = [m for m in pair.source.versioned_machines(fam) if m in dst]
        if not shared:
            continue
        pick = {shared[0], shared[-1]} | {m for m in shared if m[len(prefix):] in bounds}
        out += sorted(pick, key=lambda m: _version(m, prefix))
    return out


def model_moves_to(model: ModelTarget, profile: BuildProfile) -> None:
    """After a migration the model mirrors ``profile``'s build: its code
    differences follow the destination's version, while the device
    properties (compat defaults of the machine type, the card's CID) stay
    the source's, as QEMU promises for one machine type."""
    model.profile = profile
    model.sdhci.profile = profile
    model.sdhci.qemu_version = profile.version
    if isinstance(model.card, SDCard):
        model.card.profile = profile
        model.card.version = profile.version
        model.card.migrated()


class Migrator:
    """The migration points of one run: each moves QEMU to ``destination``
    (and the model to its code); what was done is kept for the report."""

    def __init__(self, destination: QemuBuild) -> None:
        self.destination = destination
        self.workdir = Path(tempfile.mkdtemp(prefix="sdqtest-mig-"))
        self.records: list[Migration] = []
        self.refused: MigrationRefused | None = None
        self.qemu: QemuSide | None = None
        self.model: ModelTarget | None = None

    def attach(self, ctx: Context, qemu: QemuSide, model: ModelTarget) -> None:
        """Called by the runner once both sides exist."""
        self.qemu, self.model = qemu, model
        ctx.migrator = self.at

    def at(self, label: str) -> None:
        if not isinstance(self.qemu, QemuTarget) or self.model is None:
            raise QemuError("a migration point needs a live QEMU (not a recording)")
        try:
            self.records.append(migrate(self.qemu, self.destination.binary, self.workdir, label))
        except MigrationRefused as e:
            self.refused = e
            raise
        model_moves_to(self.model, self.destination.profile)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class MigrationCell:
    """One cell of the matrix: a migration run's verdict, where it ran, and
    what QEMU lost of the PCI function on the way."""

    pair: str
    machine: str
    point: str
    result: Result
    pci_lost: list[str] = field(default_factory=list)
    reproducer: str = ""

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def reason(self) -> str:
        return self.result.reason

    @property
    def seconds(self) -> float:
        return self.result.seconds


def run_cell(pair: Pair, sc: Scenario, machine: str, report_dir: Path | None,
             *, keep: bool = False) -> MigrationCell:
    """One scenario on ``pair.source``, migrated to ``pair.destination``;
    a reproducer is written for a cell that does not agree, or any (``keep``)."""
    return _run(pair, sc, machine, report_dir, keep=keep)


def run_check(build: QemuBuild, sc: Scenario, machine: str,
              report_dir: Path | None) -> Result:
    """``sdqtest check``'s run of a migration scenario: the build migrated
    to itself (a refusal is an error naming QEMU's reason; the PCI config
    space QEMU lost is a note and a known difference met)."""
    res = _run(Pair(build, build), sc, machine, report_dir).result
    if res.status == REFUSED:
        res.status, res.reason = runner.ERROR, f"migration refused: {res.reason}"
    return res


def _run(pair: Pair, sc: Scenario, machine: str, report_dir: Path | None,
         *, keep: bool = False) -> MigrationCell:
    mig = Migrator(pair.destination)
    try:
        res = runner.run(pair.source, sc, machine,
                         runner.RunOptions(report_dir=report_dir, migrator=mig.attach))
        cell = MigrationCell(pair.name, machine, str(sc.params.get("point", sc.name)), res)
        for rec in mig.records:
            cell.pci_lost += rec.pci_lost
        _judge(res, mig, cell.pci_lost)
        bad = res.status not in (runner.AGREE, runner.QUIRK, runner.SKIP)
        if report_dir and (bad or (keep and mig.records)):
            stem = f"{pair.name}-{machine}-{cell.point}".replace("/", "_").replace(">", "")
            cell.reproducer = str(write_reproducer(mig, res, report_dir / "migration" / stem))
            if res.divergence is not None:
                res.divergence.trace_file = str(Path(cell.reproducer) / "replay.sh")
            res.notes.append(f"migration reproducer: {cell.reproducer}")
        return cell
    finally:
        mig.close()


def _judge(res: Result, mig: Migrator, pci_lost: list[str]) -> None:
    """The migration's part of the verdict: refused, a vmstate field that did
    not survive a migration to the same build (issue #34), never reached,
    the PCI function's config space lost (ledger
    ``sdhci-pci.pci-config-not-migrated``)."""
    lost = [f"{r.label}: {x}" for r in mig.records for x in r.vmstate_lost]
    if mig.refused is not None:
        res.status, res.reason = REFUSED, mig.refused.reason
    elif lost and res.status in (runner.AGREE, runner.QUIRK):
        res.status = runner.DIVERGE
        res.reason = ("vmstate fields the destination (the same build) did not write back as "
                      "the source: " + "; ".join(lost[:4]))
    elif lost:
        res.notes.append("vmstate fields not written back: " + "; ".join(lost[:4]))
    elif res.status in (runner.AGREE, runner.QUIRK) and not mig.records:
        res.status = runner.ERROR
        res.reason = "the run never reached its migration point"
    if pci_lost:
        res.use(LEDGER["sdhci-pci.pci-config-not-migrated"]).met = True
        res.notes.append("QEMU did not migrate sdhci-pci's PCI config space ("
                         + "; ".join(pci_lost) + "); written again to go on")


def write_reproducer(mig: Migrator, res: Result, out: Path) -> Path:
    """A directory that replays the cell without sdqtest: the saved stream,
    both command lines, the qtest traces before and after the point, and
    ``replay.sh`` (the destination loading the stream, then the commands
    after the point)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.txt").write_text(f"{res.status}: {res.reason}\n" + (
        res.divergence.render() + "\n" if res.divergence else ""))
    if not mig.records:
        return out
    rec = mig.records[-1]
    stream = out / "state.migstream"
    if rec.stream.exists():
        shutil.copy(rec.stream, stream)
    (out / "source.cmdline").write_text(shell_line(rec.source_argv) + "\n")
    (out / "destination.cmdline").write_text(shell_line(rec.destination_argv) + "\n")
    (out / "before.qtest").write_text("\n".join(rec.trace_before) + "\n")
    after = mig.qemu.trace if isinstance(mig.qemu, QemuTarget) else []
    (out / "after.qtest").write_text("\n".join(after) + "\n")
    # The replay reads its commands from stdin and the stream from this
    # directory; no QMP monitor, no qtest log.
    argv: list[str] = []
    it = iter(rec.destination_argv)
    for a in it:
        if a in ("-qtest-log", "-chardev", "-mon"):
            next(it, None)
        elif a == "-qtest":
            argv += [a, "stdio"]
            next(it, None)
        elif a == "-incoming":
            argv += [a, "@STREAM@"]
            next(it, None)
        else:
            argv.append(a)
    if rec.image is not None and rec.image.exists():
        shutil.copy(rec.image, out / "card.img")
    image = str(mig.qemu.image) if isinstance(mig.qemu, QemuTarget) and mig.qemu.image else ""
    if image:
        argv = [a.replace(image, "@IMAGE@") for a in argv]
    # Placeholders are plain words, left unquoted by shell_line.
    line = (shell_line(argv).replace("@STREAM@", 'exec:cat\\ "$DIR"/state.migstream')
            .replace("@IMAGE@", '"$WORK"/card.img'))
    script = out / "replay.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"# sdqtest migration {mig.destination.name} point {rec.label}: {res.status}\n"
        "# The destination loads the saved state, then runs the qtest commands\n"
        "# sent after the migration point (after.qtest); the source's commands\n"
        "# up to the point are in before.qtest, both command lines beside.\n"
        "# card.img is the card image as it was at the point; QEMU works on a\n"
        "# copy of it, so the replay can be run again.\n"
        'DIR=$(cd "$(dirname "$0")" && pwd)\n'
        'WORK=$(mktemp -d) && trap \'rm -rf "$WORK"\' EXIT\n'
        'cp "$DIR/card.img" "$WORK/" && chmod u+w "$WORK/card.img"\n'
        "(sleep \"${LOAD_SECONDS:-2}\"; cat \"$DIR/after.qtest\") | "
        f"timeout -k 1 \"${{REPLAY_SECONDS:-8}}\" {line}\n")
    script.chmod(0o755)
    return out


def migration_scenarios(points: Sequence[str] | None = None) -> list[Scenario]:
    """The ``migration`` group's scenarios, kept to ``points`` when given."""
    scs = list(select_scenarios([GROUP]))
    if points:
        unknown = [p for p in points if p not in POINTS]
        if unknown:
            raise UsageError(f"unknown migration point(s): {', '.join(unknown)} "
                             f"(known: {', '.join(POINTS)})")
        scs = [s for s in scs if s.params.get("point") in points]
    return scs


def matrix(builds: Sequence[QemuBuild], *, source: str | None = None,
           destination: str | None = None, wanted: Sequence[str] | None = None,
           points: Sequence[str] | None = None, same_build: bool = True,
           report_dir: Path | None = None, keep: bool = False,
           progress: Callable[[str], None] = lambda _t: None) -> list[MigrationCell]:
    """Every cell of the matrix (see the module text)."""
    scs = migration_scenarios(points)
    runs = [(p, m, sc) for p in pairs(builds, source, destination)
            if same_build or p.source is not p.destination
            for m in machines(p, wanted=wanted) for sc in scs]
    out: list[MigrationCell] = []
    for i, (p, m, sc) in enumerate(runs, 1):
        progress(f"[{i}/{len(runs)}] {p.name} {m} {sc.name}")
        out.append(run_cell(p, sc, m, report_dir, keep=keep))
    return out


#: Short marks of the table: status -> text.
MARK = {runner.AGREE: "ok", runner.QUIRK: "ok(q)", runner.DIVERGE: "DIVERGE",
        REFUSED: "REFUSED", runner.ERROR: "ERROR", runner.CRASH: "CRASH",
        runner.SKIP: "-", runner.SPEC_MISS: "SPEC-MISS"}


def table(cells: Sequence[MigrationCell]) -> tuple[list[str], list[list[str]]]:
    """Head and rows: one row per pair and machine type, one column per
    migration point, in first-seen order."""
    points = list(dict.fromkeys(c.point for c in cells))
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for c in cells:
        rows.setdefault((c.pair, c.machine), {})[c.point] = MARK.get(c.status, c.status)
    head = ["pair", "machine", *points]
    return head, [[pair, m, *(r.get(p, "") for p in points)] for (pair, m), r in rows.items()]


def summary(cells: Sequence[MigrationCell]) -> list[str]:
    """Counts by status, and each non-agreement with its reason."""
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.status] = counts.get(c.status, 0) + 1
    lines = [f"{len(cells)} cells: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))]
    lost = sorted({x.split(":")[0] for c in cells for x in c.pci_lost})
    if lost:
        n = sum(bool(c.pci_lost) for c in cells)
        lines.append(f"QEMU bug in {n} cells: sdhci-pci's PCI config space is not migrated "
                     f"({', '.join(lost)} back at reset on the destination); the harness "
                     "wrote them again to go on (see docs/migration.md)")
    quirky = sorted({c.point for c in cells if c.status == runner.QUIRK})
    if quirky:
        n = sum(c.status == runner.QUIRK for c in cells)
        lines.append(f"{n} cells agree up to a known QEMU difference (the ledger's "
                     f"quirks, harness/ledger/), at: {', '.join(quirky)}")
    for c in cells:
        if c.status in (runner.AGREE, runner.QUIRK, runner.SKIP):
            continue
        lines.append(f"- {c.pair} {c.machine} {c.point}: {c.status}: {c.reason}")
        if c.reproducer:
            lines.append(f"    reproducer: {c.reproducer}")
    return lines
