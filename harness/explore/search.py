"""Grow a covering corpus on the model alone (issue #19 item 2).

Inputs are operation sequences of :mod:`harness.driver.ops`, drawn from
``random.Random(f"{seed}:{i}")`` (new ones, or mutations of kept ones) and
run on a fresh :class:`~harness.model.target.ModelTarget` of the fuzz
machine, no QEMU.  After each operation a *probe* is inserted (item 3):
every side-effect-free register, the DMA arena, and CMD13 where the card
is addressed (PLS 4.10.1: a data-transfer-mode state) and the command line
free; the probes are part of the input, so they replay on QEMU.

An input is kept when it takes a model arc (:mod:`.tracer`) or reaches an
abstract state (:mod:`.state`) no kept input did; it is then shrunk
(delta debugging, :func:`harness.check.ddmin.ddmin`-style over its
operations, probes re-derived each run) to the shortest sequence that
still brings everything new it brought.  The search stops after
``count`` inputs or when ``plateau`` inputs in a row brought nothing:
counts, not wall time, so the corpus is a function of the seed and the
model's code only.  Inputs on which the model stops (an endless ADMA
chain, a QEMU abort it predicts) or raises are not kept: the check could
not compare past them (they are counted).
"""

from __future__ import annotations

import copyreg
import gc
import hashlib
import json
import os
import pickle
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.driver.host import HostDriver
from harness.driver.ops import Op, apply, generate, mutate
from harness.errors import SdqtestError
from harness.explore import reach, tables
from harness.explore.state import abstract
from harness.explore.tracer import MODEL_DIR, arc_tracer
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.machine import CardImage, Machine
from harness.model.blockstore import BlockStore
from harness.model.target import ModelTarget
from harness.profile import NEWEST, BuildProfile
from harness.scenarios.explore import DRIVER_POLLS

#: ADMA timer steps without guest interaction after which the model stops
#: an endless chain: such an input is not kept.
STEP_BUDGET = 40
#: The card image recipe (the fuzzer's and the scenarios' default).
IMAGE = "sdsc-16m"
#: Longest input (operations, probes not counted).
MAX_OPS = 12
#: Every run snapshots the model after its first operations (set-up and
#: card initialisation, the prefix most inputs share).
SNAP_FIRST = 3

_CMD13_STATES = S.DATA_TRANSFER_MODE_STATES
#: The SD Status's length (PLS 4.10.2: 512 bits).
_SD_STATUS = 64
_CMD_INHIBIT = 1 << next(f.lsb for f in H.PRNSTS.fields if f.name == "CMDINHIBIT")
_INHIBIT = _CMD_INHIBIT | H.PRNSTS_DATINHIBIT

#: An abstract state ``("state", op, summary)`` or a model arc: an integer
#: (:attr:`CTracerArcs.keys`) or ``("arc", file, from, to)``.
Feature = Any


class ReuseDependent(SdqtestError):
    """The input reads card state a reused QEMU may carry over."""


class _Unknown:
    """The card's written-block count at the start of a run: unknown.

    QEMU's ``sd_reset`` leaves ``blk_written`` as it was (only CMD24/CMD25
    clear it), so on a QEMU reused between scenarios (a system reset, not
    a fresh launch) ACMD22 before any write answers the previous run's
    count.  An input that reads it then is not kept: its answer would
    depend on what ran before it on that process."""

    def __and__(self, other: object) -> int:
        raise ReuseDependent("ACMD22 before a write: blk_written carries over a reset")

    __rand__ = __and__


def explore_machine() -> Machine:
    return Machine(type="q35", image=CardImage(images.ensure(IMAGE)))


def model_digest() -> str:
    """A digest of the model's code and the operation vocabulary: the
    corpus is a function of this and the seed."""
    h = hashlib.sha256()
    here = Path(MODEL_DIR)
    files = sorted(here.glob("*.py")) + [here.parent / "driver" / "ops.py",
                                         Path(__file__).parent / "state.py",
                                         Path(__file__).parent / "reach.py",
                                         Path(__file__).parent / "restart.py",
                                         here.parent / "scenarios" / "restart.py",
                                         Path(__file__).parent / "tables.py",
                                         Path(__file__)]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class ModelRun:
    """One input on the model: the operations as run (probes included)."""

    ops: list[Op]
    features: set[Feature]
    ok: bool
    why: str = ""


class ModelRunner:
    """Runs inputs on models of one machine; ``trace`` records arcs.

    A run starts from a fresh model, or from a snapshot of the model after
    the longest prefix of its operations already run (the driver, the
    model, pickled; the probes, states and arcs so far): the model is a
    function of its operations, so the run ends as the whole run from a
    fresh model would (``tests/qtest/core/test_explore.py`` checks it).
    Snapshots are taken after the first :data:`SNAP_FIRST` operations of
    every run, and after every operation of a run with ``keep`` (the
    search's kept inputs, which mutations start from); at most
    ``snapshots`` are kept, least recently used out first."""

    def __init__(self, profile: BuildProfile = NEWEST, *, trace: bool = True,
                 snapshots: int = 2048, machine: Machine | None = None) -> None:
        self.profile = profile
        self.machine = machine or explore_machine()
        self.image = images.raw_twin(IMAGE)
        self.trace = trace
        self.tracer: Any = arc_tracer()
        self.snapshots = snapshots
        self._snaps: OrderedDict[tuple[str, ...], _Snap] = OrderedDict()
        self.forked = 0

    def _fresh(self) -> HostDriver:
        model = ModelTarget(self.machine, image=self.image, profile=self.profile)
        model.sdhci.step_budget = STEP_BUDGET
        card: Any = model.card
        if hasattr(card, "blk_written"):
            card.blk_written = _Unknown()
        d = HostDriver(model, timeout_steps=DRIVER_POLLS)
        # The check replays an input on a lockstep, whose DMA arena is filled
        # with its pattern: the model alone must meet the same memory (a
        # descriptor linking into the arena reads the pattern there, not 0).
        d.arena.fill = True
        return d

    def _start(self, keys: list[str], probes: bool) -> tuple[int, HostDriver, _Snap | None]:
        if probes and self.snapshots:
            for k in range(len(keys), 0, -1):
                snap = self._snaps.get(tuple(keys[:k]))
                if snap is not None:
                    self._snaps.move_to_end(snap.key)
                    self.forked += 1
                    return k, pickle.loads(snap.driver), snap
        return 0, self._fresh(), None

    def _save(self, key: tuple[str, ...], d: HostDriver, ran: list[Op],
              states: set[Feature], track: reach.Tracker) -> None:
        arcs = self.tracer.checkpoint() if self.trace else None
        self._snaps[key] = _Snap(key, pickle.dumps(d, pickle.HIGHEST_PROTOCOL), list(ran),
                                 set(states), arcs, track.copy())
        if len(self._snaps) > self.snapshots:
            self._snaps.popitem(last=False)

    def run(self, ops: Sequence[Op], *, probes: bool = True, keep: bool = False) -> ModelRun:
        """Run ``ops`` (without probes; one is added after each operation
        when ``probes``); ``keep``: snapshot after every operation."""
        todo = [op for op in ops if op["op"] != "probe"]
        keys = [json.dumps(op, sort_keys=True) for op in todo]
        done, d, snap = self._start(keys, probes)
        model: Any = d.target
        ran: list[Op] = list(snap.ran) if snap else []
        states: set[Feature] = set(snap.states) if snap else set()
        track = snap.track.copy() if snap else reach.Tracker()
        tracer = self.tracer
        tracer.resume = snap.arcs if snap else None
        ok, why = True, ""
        # No garbage collection while tracing: a collection would run the
        # finalisers of earlier runs' models (BlockStore.__del__) inside
        # this one, and their arcs would depend on when it happened.
        enabled = gc.isenabled()
        gc.disable()
        try:
            with tracer if self.trace else _Null():
                for i in range(done, len(todo)):
                    op = todo[i]
                    count = _written(model)
                    pre = reach.before(model, op)
                    apply(d, model, op)
                    ran.append(op)
                    if model.hung:
                        ok, why = False, f"model stopped: {model.hung}"
                        break
                    states.add(("state", op["op"], abstract(model)))
                    states |= reach.after(pre, model, op, track)
                    if probes:
                        p: Op = {"op": "probe", "status": self._status_ok(model)}
                        if _written(model) != count and self._written_ok(model):
                            p["written"] = True
                        apply(d, model, p)
                        ran.append(p)
                        if model.hung:
                            ok, why = False, f"model stopped: {model.hung}"
                            break
                        if self.snapshots and (keep or i < SNAP_FIRST) and i + 1 < len(todo):
                            key = tuple(keys[:i + 1])
                            if key not in self._snaps:
                                self._save(key, d, ran, states, track)
        except Exception as e:  # noqa: BLE001 - a model exception: not kept, counted
            ok, why = False, f"{type(e).__name__}: {e}"
        finally:
            if enabled:
                gc.enable()
        feats: set[Feature] = set(states)
        if self.trace:
            packed = getattr(tracer, "keys", None)
            feats.update(packed if packed is not None else (("arc", *a) for a in tracer.arcs))
        return ModelRun(ran, feats, ok, why)

    @staticmethod
    def _status_ok(model: ModelTarget) -> bool:
        """CMD13 is a well-formed probe: a card with its medium (an ejected
        one answers nothing, and the driver's clean-up of the timeout would
        acknowledge the Card Removal the input left pending) in a
        data-transfer-mode state, the command line free, and no write in
        progress (the data that follows would reach a card whose last
        command is CMD13: QEMU >= 9.1 aborts, ``sd.command-during-transfer``),
        nor a card in sending-data past the SD Status's 64 bytes (before 9.1
        the next data byte is SD Status's at the card's position: 7.2 reads
        past its buffer there, bytes no model can know; issue #43's host
        blocks smaller than the card's reach that)."""
        card: Any = model.card
        state = getattr(card, "state", None)
        writing = state == S.CardState.RCV and model.sdhci.prnsts & H.PRNSTS_DATINHIBIT
        xfer = getattr(card, "xfer", None)
        past = state == S.CardState.DATA and xfer is not None and xfer.offset >= _SD_STATUS
        return (state in _CMD13_STATES and not writing and not past
                and getattr(card, "inserted", True)
                and not model.sdhci.prnsts & _CMD_INHIBIT)

    @staticmethod
    def _written_ok(model: ModelTarget) -> bool:
        """ACMD22 is a well-formed probe: an SD card in the transfer state
        (PLS 4.3.14, Table 4-42), both lines free (SDHC 2.2.9)."""
        card: Any = model.card
        return (getattr(card, "state", None) == S.CardState.TRAN
                and not getattr(card, "locked", True) and not model.sdhci.prnsts & _INHIBIT)


def _written(model: ModelTarget) -> object:
    """The card's written-block count (ACMD22's answer; :class:`_Unknown`
    until a write command set it), or None on a card without one."""
    return getattr(model.card, "blk_written", None)


@dataclass
class _Snap:
    """The model and driver after a prefix of operations, and what the
    prefix brought (the probes as run, abstract states, the tracer's
    checkpoint)."""

    key: tuple[str, ...]
    driver: bytes                    #: the pickled driver (and its model)
    ran: list[Op]
    states: set[Feature]
    arcs: Any
    track: reach.Tracker = field(default_factory=reach.Tracker)


def _copy_store(state: dict[str, Any]) -> BlockStore:
    """A copy of a :class:`BlockStore` with its own descriptor of the image,
    opened read-only as the original's (each copy closes its own)."""
    new = BlockStore.__new__(BlockStore)
    new.__dict__.update(state)
    new._fd = None if new.image is None else os.open(new.image, os.O_RDONLY)
    return new


def _reduce_store(store: BlockStore) -> tuple[Any, ...]:
    return _copy_store, ({k: v for k, v in vars(store).items() if k != "_fd"},)


copyreg.pickle(BlockStore, _reduce_store)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class Entry:
    """A kept input and what it brought first."""

    index: int                       #: the input number that found it
    ops: list[Op]                    #: as run, probes included
    new: int                         #: features it brought first
    arcs: int                        #: model arcs it takes
    features: frozenset[Feature] = frozenset()
    variant: str = "default"         #: the machine it runs on (:data:`VARIANTS`)


@dataclass
class SearchStats:
    inputs: int = 0
    model_runs: int = 0
    kept: int = 0
    not_kept: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped: str = ""

    @property
    def runs_per_second(self) -> float:
        return self.model_runs / self.seconds if self.seconds else 0.0


def shrink(ops: list[Op], keeps: Callable[[list[Op]], bool], calls: int = 4) -> list[Op]:
    """The shortest sublist of ``ops`` (order kept) for which ``keeps``
    holds, by chunk then single removal (ddmin), at most ``calls`` runs."""
    left = [calls]

    def test(cand: list[Op]) -> bool:
        if left[0] <= 0:
            return False
        left[0] -= 1
        return keeps(cand)

    cur = list(ops)
    n = 2
    while len(cur) >= 2 and left[0] > 0:
        size = max(1, len(cur) // n)
        chunks = [cur[i:i + size] for i in range(0, len(cur), size)]
        for i in range(len(chunks)):
            comp = [x for j, c in enumerate(chunks) if j != i for x in c]
            if comp and test(comp):
                cur, n = comp, max(n - 1, 2)
                break
        else:
            if n >= len(cur):
                break
            n = min(len(cur), 2 * n)
    return cur


def cover(entries: list[Entry], limit: int | None = None,
          known: AbstractSet[Feature] = frozenset()) -> list[Entry]:
    """A smaller corpus reaching every feature ``entries`` reach: greedy set
    cover (most uncovered features first, the earlier input on a tie), in
    the order the search found them.  Model arcs are covered first, then
    the reach classes of :mod:`.reach` (issue #34's goal), then the other
    abstract states (the arcs are the goal's measure; a state is a hint).
    Fewer inputs to replay on QEMU; ``limit`` keeps only the first
    ``limit`` picks (those that bring the most), for the check's budget.
    ``known``: features taken anyway (the scenario library's arcs,
    :func:`harness.explore.report.library_arcs`), not chased."""
    chosen: list[Entry] = []
    for wanted in (is_arc, reach.is_reach, lambda f: not is_arc(f) and not reach.is_reach(f)):
        left = {f for e in entries for f in e.features if wanted(f)} - known
        for e in chosen:
            left -= e.features
        while left and (limit is None or len(chosen) < limit):
            best = max(entries, key=lambda e: (len(e.features & left), -e.index))
            if not best.features & left:
                break
            chosen.append(best)
            left -= best.features
    return sorted(chosen, key=lambda e: e.index)


def is_arc(f: Feature) -> bool:
    """A feature that is a model arc (a packed integer or an ``("arc", ...)``
    tuple), not an abstract state."""
    return not isinstance(f, tuple) or f[0] == "arc"


def arc_count(features: Iterable[Feature]) -> int:
    return sum(1 for f in features if is_arc(f))


def bare(ops: Iterable[Op]) -> list[Op]:
    return [o for o in ops if o["op"] != "probe"]


#: Device property values the search also runs on (issue #19 item 5): a
#: name, the ``sdhci-pci`` and ``sd-card`` properties (QEMU's names), and
#: which tables run on it (the drawn inputs pick a variant at random).
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "default": ({}, {}, ("all",)),
    "sdhci-v3": ({"sd-spec-version": 3}, {}, ("commands", "registers")),
    "sdhci-v3-uhs": ({"sd-spec-version": 3, "uhs": 1}, {}, ("commands",)),
    "adma64": ({"capareg": H.CAPAREG_DEFAULT | H.CAPAB.mask("BUS64BIT")}, {}, ("dma",)),
    "card-v2": ({}, {"spec_version": 2}, ("commands",)),
    "no-adma": ({"capareg": H.CAPAREG_DEFAULT & ~(H.CAPAB.mask("ADMA1")
                                                  | H.CAPAB.mask("ADMA2"))}, {}, ("dma",)),
}
#: How often a drawn input runs on each variant.
_VARIANT_WEIGHTS = {"default": 6, "sdhci-v3": 2, "sdhci-v3-uhs": 1, "adma64": 1, "card-v2": 1,
                    "no-adma": 1}


def variant_machine(name: str) -> Machine:
    """The explore machine with variant ``name``'s device properties."""
    sdhci, card, _ = VARIANTS[name]
    return Machine(type="q35", sdhci=sdhci, card=card, image=CardImage(images.ensure(IMAGE)))


def _default_tables() -> list[list[Op]]:
    """The tables' inputs and the reach kinds' (:mod:`.reach`), default machine."""
    return tables.table_inputs() + reach.table_inputs()


def _table_plan(with_tables: bool) -> list[tuple[str, list[Op]]]:
    if not with_tables:
        return []
    plan: list[tuple[str, list[Op]]] = [("default", t) for t in _default_tables()]
    parts = {"commands": tables.command_states, "registers": tables.register_fields,
             "dma": tables.dma_selects}
    for name, (_, _, which) in VARIANTS.items():
        if name != "default":
            plan += [(name, t) for part in which for t in parts[part]()]
    return plan


def search(seed: int = 1, count: int = 20000, plateau: int = 3000, *,
           profile: BuildProfile = NEWEST, max_ops: int = MAX_OPS, with_tables: bool = True,
           say: Callable[[str], None] | None = None, runner: ModelRunner | None = None,
           variants: bool = True) -> tuple[list[Entry], set[Feature], SearchStats]:
    """The covering corpus for ``seed``: kept entries, every feature they
    reach, and the run's statistics (see the module doc).  The inputs of
    :mod:`.tables` come first (``with_tables``; on the default machine,
    and parts of them on each of :data:`VARIANTS`), then ``count`` drawn
    ones (on a variant drawn too, unless ``variants`` is false: then, as
    with ``runner``, all on one machine); ``plateau`` counts drawn inputs."""
    runners: dict[str, ModelRunner] = {"default": runner or ModelRunner(profile)}
    names = list(_VARIANT_WEIGHTS) if variants and runner is None else ["default"]
    weights = [_VARIANT_WEIGHTS[n] for n in names]
    s = _Search(seen=set(), kept=[], stats=SearchStats(), say=say)
    t0 = time.monotonic()
    quiet = 0
    table = _table_plan(with_tables) if len(names) > 1 else [
        ("default", t) for t in (_default_tables() if with_tables else [])]
    for i in range(len(table) + count):
        rng = random.Random(f"{seed}:{i}")
        if i < len(table):
            variant, ops = table[i]
        else:
            variant = rng.choices(names, weights)[0] if len(names) > 1 else "default"
            pool = [e for e in s.kept if e.variant == variant]
            if pool and rng.random() < 0.5:
                ops = mutate(rng, bare(rng.choice(pool).ops), [bare(e.ops) for e in pool],
                             max_len=max_ops)
            else:
                ops = generate(rng, max_len=max_ops)
        if variant not in runners:
            runners[variant] = ModelRunner(profile, machine=variant_machine(variant))
        quiet = 0 if s.consider(i, variant, runners[variant], ops) else quiet + 1
        if i < len(table):
            quiet = 0
        elif quiet >= plateau:
            s.stats.stopped = f"plateau: {plateau} inputs in a row brought nothing new"
            break
    else:
        s.stats.stopped = f"count: {count} inputs after {len(table)} from the tables"
    s.stats.seconds = time.monotonic() - t0
    return s.kept, s.seen, s.stats


#: The older profiles of the default check's builds (7.2, 10.0; the search
#: itself runs on :data:`NEWEST`): where a command's checks differ by
#: version, an input that reads nothing carried over a reset on the newest
#: may read it on these (after CMD16(1), a CMD25 of 1895-byte blocks that
#: the newest clears the written-block count for is refused by 7.2's card
#: before it does).
REUSE_PROFILES = (
    BuildProfile(version=(7, 2, 22), sd_card_properties={"spec_version": "2"},
                 sdhci_properties={"sd-spec-version": "2"}),
    BuildProfile(version=(10, 0, 13), sd_card_properties={"spec_version": "3"},
                 sdhci_properties={"sd-spec-version": "2"}),
)


_REUSE_RUNNERS: dict[tuple[Any, str], ModelRunner] = {}


def reuse_safe(machine: Machine, ops: Sequence[Op]) -> bool:
    """``ops`` (probes included, as the check replays them) read no card
    state a reused QEMU carries over, on any of :data:`REUSE_PROFILES`
    (the model starts with that state unknown, :class:`_Unknown`)."""
    for profile in REUSE_PROFILES:
        key = (profile.version, repr(machine))
        if key not in _REUSE_RUNNERS:
            _REUSE_RUNNERS[key] = ModelRunner(profile, trace=False, snapshots=0, machine=machine)
        d = _REUSE_RUNNERS[key]._fresh()
        try:
            for op in ops:
                apply(d, d.target, op)
                if d.target.hung:  # type: ignore[attr-defined]
                    break
        except ReuseDependent:
            return False
        except Exception:  # noqa: BLE001 - another profile's model error: not this test's
            pass
    return True


@dataclass
class _Search:
    seen: set[Feature]
    kept: list[Entry]
    stats: SearchStats
    say: Callable[[str], None] | None

    def consider(self, i: int, variant: str, runner: ModelRunner, ops: list[Op]) -> bool:
        """Run input ``i``; keep it (shrunk) when it brings something new."""
        stats = self.stats
        stats.inputs += 1
        stats.model_runs += 1
        r = runner.run(ops, keep=runner.trace)
        if not r.ok:
            key = r.why.split(":")[0]
            stats.not_kept[key] = stats.not_kept.get(key, 0) + 1
            return False
        new = r.features - self.seen
        if not new:
            return False

        def keeps(cand: list[Op]) -> bool:
            stats.model_runs += 1
            c = runner.run(cand)
            return c.ok and new <= c.features

        small = shrink(bare(r.ops), keeps)
        final = runner.run(small, keep=True)
        stats.model_runs += 1
        if not final.ok or not new <= final.features:  # cannot happen; be safe
            final = r
        if not reuse_safe(runner.machine, final.ops):
            stats.not_kept["ReuseDependent"] = stats.not_kept.get("ReuseDependent", 0) + 1
            return False
        self.seen |= final.features
        self.kept.append(Entry(i, final.ops, len(new), arc_count(final.features),
                               frozenset(final.features), variant))
        stats.kept += 1
        if self.say is not None:
            self.say(f"input {i} ({variant}): {len(new)} new, kept #{len(self.kept)} "
                     f"({len(bare(final.ops))} ops), {len(self.seen)} features")
        return True
