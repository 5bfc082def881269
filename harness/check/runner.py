"""Run scenarios on a QEMU build and on the model mirroring it, in lockstep."""

from __future__ import annotations

import shlex
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.check.lockstep import Divergence, LockstepTarget
from harness.check.quirks import QUIRKS, Quirk, QuirkSet
from harness.check.replay import reproducer_header
from harness.errors import QemuError, QemuGone
from harness.machine import CardImage, Machine
from harness.model.deviations import Strictness
from harness.model.target import ModelTarget
from harness.qemu.argv import shell_line
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, Scenario

#: Largest image span compared byte for byte at the end of a scenario.
_IMAGE_COMPARE_LIMIT = 64 << 20
_CHUNK = 1 << 20

AGREE, DIVERGE, QUIRK, SKIP, CRASH, ERROR = (
    "agree", "diverge", "quirk", "skipped", "crash", "error")


@dataclass
class Result:
    build: str
    scenario: str
    group: str
    machine: str
    status: str
    reason: str = ""
    divergence: Divergence | None = None
    quirks: list[Quirk] = field(default_factory=list)
    stale: list[Quirk] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    #: Spec expectations QEMU did not meet while model and QEMU agreed.
    spec_misses: list[str] = field(default_factory=list)
    #: Deviation keys the model consulted during the run.
    consulted: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in (AGREE, QUIRK, SKIP)

    def to_json(self) -> dict[str, Any]:
        return {
            "build": self.build,
            "scenario": self.scenario,
            "group": self.group,
            "machine": self.machine,
            "status": self.status,
            "reason": self.reason,
            "divergence": self.divergence.to_json() if self.divergence else None,
            "quirks": [q.key for q in self.quirks],
            "stale_quirks": [q.key for q in self.stale],
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "spec_misses": self.spec_misses,
        }


@dataclass(frozen=True)
class UserImage:
    """A card image the user gave: QEMU opens ``path`` as ``format`` (on a
    private copy); the model reads ``raw`` (the same file when raw)."""

    path: Path
    format: str
    raw: Path


def compare_images(t: LockstepTarget, qemu: QemuTarget, source: Path) -> None:
    """Compare the card contents where either side may have data: every
    allocated extent of QEMU's copy and of the source image."""
    spans = images.data_extents(source)
    if qemu.image is not None and qemu.image_format == "raw":
        spans += images.data_extents(qemu.image)
    elif qemu.image is not None:  # a container: its file offsets are not the card's
        spans = [(0, min(source.stat().st_size, _IMAGE_COMPARE_LIMIT))]
    budget = _IMAGE_COMPARE_LIMIT
    for off, length in sorted(set(spans)):
        for pos in range(off, off + length, _CHUNK):
            n = min(_CHUNK, off + length - pos, budget)
            if n <= 0:
                return
            t.image_read(pos, n)
            budget -= n


def scenario_machine(sc: Scenario, machine: str, image: Path, fmt: str) -> Machine:
    """The machine a scenario runs on: ``machine`` type, its devices'
    properties, the card image as QEMU opens it."""
    return Machine(type=machine, sdhci=sc.sdhci, card=sc.sd_card,
                   image=CardImage(image, format=fmt))


def write_reproducer(d: Divergence, qemu: QemuTarget, out_dir: Path, stem: str) -> Path:
    """``STEM.qtest`` (the machine in its header, then the commands) and
    ``STEM.sh`` (QEMU replaying them, for people without sdqtest)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = out_dir / f"{stem}.qtest"
    header = reproducer_header(qemu.machine, f"sdqtest scenario {d.scenario}; divergence at "
                               f"step {d.step.index}:\n  {d.step.describe()}")
    trace.write_text(header + "\n".join(qemu.trace) + "\n")
    script = out_dir / f"{stem}.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"# Replays sdqtest scenario {d.scenario} on QEMU; divergence at step {d.step.index}:\n"
        f"#   {d.step.describe()}\n"
        "# QEMU prints one answer per command; the last one is what the model\n"
        "# disagreed with.  QEMU does not exit at the end of its qtest input,\n"
        "# so it is stopped after REPLAY_SECONDS (default 3).  The trace's\n"
        "# '#' header lines (the machine, for 'sdqtest replay') are left out.\n"
        f"grep -v '^#' {shlex.quote(str(trace))} | "
        f"exec timeout -k 1 \"${{REPLAY_SECONDS:-3}}\" {shell_line(qemu.replay_argv())}\n"
    )
    script.chmod(0o755)
    return script


def run(
    build: QemuBuild,
    sc: Scenario,
    machine: str = "q35",
    *,
    strict: Strictness = False,
    report_dir: Path | None = None,
    quirks: tuple[Quirk, ...] = QUIRKS,
    image: UserImage | None = None,
) -> Result:
    """Run one scenario on ``build`` and on the model, in lockstep.

    ``image`` replaces the scenario's recipe image with a user's card image
    (never written: QEMU gets a copy, the model a copy-on-write view)."""
    t0 = time.monotonic()
    res = Result(build.name, sc.name, sc.group, machine, AGREE)
    why = sc.skip_reason(build.profile, build.profile.has_qtest_accel)
    if why is None and not build.offers(machine):
        why = f"this build has no machine type {machine}"
    if why:
        res.status, res.reason = SKIP, why
        return res
    if image is None:
        qemu_image, fmt = images.ensure(sc.image), images.recipe(sc.image).format
        model_image = images.raw_twin(sc.image)
    else:
        qemu_image, fmt, model_image = image.path, image.format, image.raw
    ctx = Context(build.profile, machine, sc.image if image is None else "", sc.params)
    qset = QuirkSet(quirks, build.profile, sc.name)
    qemu: QemuTarget | None = None
    model: ModelTarget | None = None
    lock: LockstepTarget | None = None
    try:
        described = scenario_machine(sc, machine, qemu_image, fmt)
        qemu = QemuTarget(build.binary, described, name=build.name)
        model = ModelTarget(described, image=model_image, profile=build.profile, strict=strict)
        lock = LockstepTarget(model, qemu, quirks=qset,
                              recipe=images.recipe(sc.image) if image is None else None)
        sc.fn(lock, ctx)
        compare_images(lock, qemu, model_image)
    except Divergence as d:
        d.scenario = sc.name
        res.status, res.divergence = DIVERGE, d
        res.reason = d.summary()
        if qemu is not None and report_dir is not None:
            stem = f"{build.name}-{machine}-{sc.name}".replace("/", "_")
            d.trace_file = str(write_reproducer(d, qemu, report_dir, stem))
    except QemuGone as e:  # died, closed the qtest stream, or hung (and was stopped)
        res.status, res.reason = CRASH, str(e)
    except QemuError as e:
        res.status, res.reason = ERROR, str(e)
    except Exception as e:  # a harness or model bug: report it, keep going
        res.status = ERROR
        res.reason = f"{type(e).__name__}: {e}"
        res.notes.append(traceback.format_exc())
    finally:
        if lock is not None:
            res.steps = lock.count
            res.quirks = [q for q, _ in lock.applied]
        if qemu is not None:
            qemu.close()
        if model is not None:
            res.consulted = model.deviations_consulted()
    if res.status == AGREE and res.quirks:
        res.status = QUIRK
    if res.status in (AGREE, QUIRK):
        res.stale = [q for q in qset.expected_here() if q.key not in qset.used and q.scenarios]
    res.notes += ctx.notes
    res.spec_misses = list(ctx.misses)
    res.seconds = time.monotonic() - t0
    return res
