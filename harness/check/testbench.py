"""One run's testbench: the run spec, both sides built from it, the scoreboard.

A :class:`RunSpec` names what runs (the scenario object, the build, the
machine type); :class:`Testbench` builds QEMU's side (live, lent by a
pool, recorded while live, or replayed from a recording) and the model
mirroring the build, and puts the lockstep comparison between them (the
scoreboard: :class:`harness.check.lockstep.LockstepTarget`, or its
optimistic form).  The runner (:mod:`harness.check.runner`) drives a
scenario through it and judges the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import images
from harness.check import boards
from harness.check.lockstep import LockstepTarget
from harness.check.optimistic import OptimisticLockstep
from harness.check.quirks import QUIRKS, QuirkSet
from harness.check.recording import Recording, RecordingSide, ReplayTarget
from harness.check.scoreboard import Scoreboard
from harness.hwdefs.boards import board_for, machine_type
from harness.ledger import KnownDifference
from harness.machine import CardImage, Machine
from harness.model.board_targets import model_target_for
from harness.model.deviations import Strictness
from harness.model.target import ModelTarget
from harness.qemu import sanitizer
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, Scenario
from harness.target import Target

#: QEMU's side of a run: live, recorded while live, or replayed.
QemuSide = QemuTarget | RecordingSide | ReplayTarget


@dataclass(frozen=True)
class RunSpec:
    """One scenario on one build and machine type: the scenario object
    itself travels (to a forked worker by inheritance), never its name."""

    build: QemuBuild
    scenario: Scenario
    machine: str = "q35"

    def skip_reason(self) -> str | None:
        """Why this run cannot happen on its build, or None."""
        b = self.build
        why = self.scenario.skip_reason(boards.scenario_profile(self.machine, b.profile),
                                        b.profile.has_qtest_accel)
        why = why or boards.skip_reason(self.scenario, self.machine, b.profile)
        if why is None and not b.offers(machine_type(self.machine)):
            why = f"this build has no machine type {machine_type(self.machine)}"
        return why


@dataclass(frozen=True)
class UserImage:
    """A card image the user gave: QEMU opens ``path`` as ``format`` (on a
    private copy); the model reads ``raw`` (the same file when raw)."""

    path: Path
    format: str
    raw: Path


def scenario_machine(sc: Scenario, machine: str, image: Path, fmt: str) -> Machine:
    """The machine a scenario runs on: ``machine`` type, its devices'
    properties, the card image as QEMU opens it."""
    board = board_for(machine)
    if board is not None:  # the board's own controller and card (harness.check.boards)
        return Machine.for_board(board.name, card=sc.sd_card,
                                 image=CardImage(image, format=fmt))
    return Machine(type=machine, sdhci=sc.sdhci, card=sc.sd_card,
                   image=CardImage(image, format=fmt), card_kind=sc.card)


class Testbench:
    """QEMU's side and the model of one run, and the scoreboard between them:
    the environment every tool assembles its runs in (the check's runner,
    the explore shrink, the fuzzer, strict attribution), only the stimulus
    changing.

    ``quirks``: the ledger entries the lockstep may meet, made the run's
    :class:`QuirkSet` (bound to the scenario's name).  QEMU's side is
    ``fresh`` (a QEMU launched for this run), lent by ``pool``, or
    launched; recorded into ``record``, or replayed from ``replay``;
    ``timeout``: a launched QEMU's qtest answer timeout.  ``step_budget``:
    the model's ADMA steps without guest interaction before it gives up an
    endless chain.  ``recipe``: the lockstep reads the card image's recipe
    (recipe lines in a divergence's context).  ``reference``: a review's
    base build, the reference side in place of the model (lent by
    ``reference_pool``), with the ``scoreboard`` made for it (the run's
    build is then the patched one).  :meth:`start` builds the sides;
    :meth:`close` gives QEMU's processes back to their pools or ends them,
    whatever happened in between."""

    def __init__(self, spec: RunSpec, *, strict: Strictness = False,
                 image: UserImage | None = None, record: Recording | None = None,
                 replay: Recording | None = None, pool: QemuPool | None = None,
                 quirks: tuple[KnownDifference, ...] = QUIRKS, keep: bool = False,
                 stop_after: int | None = None, max_differences: int = 1,
                 fresh: QemuTarget | None = None, timeout: float | None = None,
                 step_budget: int | None = None, recipe: bool = True,
                 reference: QemuBuild | None = None, reference_pool: QemuPool | None = None,
                 scoreboard: Callable[[Target], Scoreboard] | None = None) -> None:
        self.spec, self.strict, self.record, self.replay = spec, strict, record, replay
        self.max_differences, self.fresh, self.timeout = max_differences, fresh, timeout
        self.keep, self.stop_after, self.step_budget = keep, stop_after, step_budget
        self.reference, self.reference_pool = reference, reference_pool
        self.make_scoreboard = scoreboard
        sc = spec.scenario
        self.quirks = QuirkSet(quirks, spec.build.profile, sc.name)
        if image is None:
            self.qemu_image, self.fmt = images.ensure(sc.image), images.recipe(sc.image).format
            self.model_image = images.raw_twin(sc.image)
        else:
            self.qemu_image, self.fmt, self.model_image = image.path, image.format, image.raw
        self.recipe = images.recipe(sc.image) if image is None and recipe else None
        self.context = Context(spec.build.profile, spec.machine,
                               sc.image if image is None else "", sc.params)
        self.pool = pool if replay is None and fresh is None else None
        self.described = fresh.machine if fresh is not None else scenario_machine(
            sc, spec.machine, self.qemu_image, self.fmt)
        self.qemu: QemuSide | None = None
        self.model: ModelTarget | None = None
        #: the reference build's QEMU (a review's base), in place of the model
        self.base: QemuTarget | None = None
        self.lock: LockstepTarget | None = None
        #: Where QEMU's sanitizer log stood when the run began.
        self.err_at = 0

    def start(self, optimistic: bool, sync_at: frozenset[int] = frozenset(),
              sync_reads: frozenset[tuple[int, int]] = frozenset()) -> LockstepTarget:
        """Both sides, and the scoreboard (optimistic only on a live QEMU;
        ``sync_at``: its steps that run one round trip, where an earlier
        attempt differed, the scoreboard going on past them; ``sync_reads``:
        register reads that differed, one round trip each throughout)."""
        b, described = self.spec.build, self.described
        self.qemu = self._qemu_side(described)
        self.err_at = sanitizer.mark(self.qemu)
        if self.reference is not None:
            return self._against_reference(self.reference, described)
        model = model_target_for(described.board_def)
        self.model = model(described, image=self.model_image, profile=b.profile,
                           strict=self.strict)
        if self.step_budget is not None:
            self.model.sdhci.step_budget = self.step_budget
        kw: dict[str, Any] = dict(quirks=self.quirks, history=None if self.keep else 400,
                                  recipe=self.recipe, stop_after=self.stop_after)
        if optimistic and isinstance(self.qemu, QemuTarget):
            # a difference ends an optimistic attempt, but where it is a sync point
            if sync_at or sync_reads:
                kw["scoreboard"] = Scoreboard(self.max_differences, self.model.adopt)
            self.lock = OptimisticLockstep(self.model, self.qemu, sync_at=sync_at,
                                           sync_reads=sync_reads, **kw)
        else:
            scores = Scoreboard(self.max_differences, self.model.adopt)
            self.lock = LockstepTarget(self.model, self.qemu, scoreboard=scores, **kw)
        return self.lock

    def _against_reference(self, ref: QemuBuild, described: Machine) -> LockstepTarget:
        """The reference build's QEMU against the run's, step by step (a
        review: base against patched)."""
        pool, qemu = self.reference_pool, self.qemu
        assert qemu is not None
        self.base = (pool.acquire(ref.binary, described, name=ref.name) if pool is not None
                     else QemuTarget(ref.binary, described, name=ref.name))
        scores = (self.make_scoreboard(self.base) if self.make_scoreboard is not None
                  else Scoreboard(self.max_differences))
        self.lock = LockstepTarget(self.base, qemu, scoreboard=scores, quirks=self.quirks,
                                   history=None if self.keep else 400, recipe=self.recipe,
                                   stop_after=self.stop_after)
        return self.lock

    def _qemu_side(self, described: Machine) -> QemuSide:
        b = self.spec.build
        if self.replay is not None:
            return ReplayTarget(self.replay)
        wait: dict[str, Any] = {} if self.timeout is None else {"timeout": self.timeout}
        live = (self.fresh if self.fresh is not None
                else self.pool.acquire(b.binary, described, name=b.name, **wait)
                if self.pool is not None
                else QemuTarget(b.binary, described, name=b.name, **wait))
        return RecordingSide(live, self.record) if self.record is not None else live

    @property
    def live(self) -> QemuTarget | None:
        """QEMU's process, under a recording or not (None: replayed, or not started)."""
        q = self.qemu
        return q.inner if isinstance(q, RecordingSide) else q if isinstance(q, QemuTarget) \
            else None

    @property
    def optimistic(self) -> bool:
        return isinstance(self.lock, OptimisticLockstep)

    def close(self, healthy: bool) -> None:
        """QEMU's process back to the pool (``healthy``: reusable) or ended."""
        qemu, pool = self.qemu, self.pool
        if pool is not None and isinstance(qemu, RecordingSide):
            qemu.finish()
            pool.release(qemu.inner, healthy=healthy)
        elif isinstance(qemu, QemuTarget) and pool is not None:
            pool.release(qemu, healthy=healthy)
        elif qemu is not None:
            qemu.close()
        if self.base is not None:
            if self.reference_pool is not None:
                self.reference_pool.release(self.base, healthy=healthy)
            else:
                self.base.close()
