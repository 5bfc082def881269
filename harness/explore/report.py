"""The model's own branch coverage as the map (issue #19 item 1).

Runs the scenario library and the explore corpus on the model alone (no
QEMU; each scenario on a fresh :class:`~harness.model.target.ModelTarget`
of its own machine, the newest build profile) under coverage.py with
branch data limited to ``harness/model/``, and prints, per model file and
function, the branches the scenarios take, those only the explore corpus
takes, and those no run takes.  A branch no run takes is a rule of the
model that was never compared with QEMU; each is listed with its line and
a reason *class* read from the line's text (a heuristic, marked as such):
the spec-following (``--strict``) model, another build's profile, the
eMMC, a realize-time property, QEMU's abort paths, or unknown.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import linecache
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.check import boards
from harness.check.boards import DEFAULT_BOARDS
from harness.explore.tracer import MODEL_DIR
from harness.hwdefs.boards import BOARDS, by_name, run_key
from harness.machine import CardImage, Machine
from harness.model.board_targets import model_target_for
from harness.model.target import CONTROLLERS, ModelTarget
from harness.profile import NEWEST, BuildProfile
from harness.scenarios import Context, Scenario

Branch = tuple[int, int]


def scenario_model(sc: Scenario, profile: BuildProfile) -> ModelTarget:
    """The model of ``sc``'s machine (as the check builds it, q35)."""
    recipe = images.recipe(sc.image)
    machine = Machine(type="q35", sdhci=sc.sdhci, card=sc.sd_card,
                      image=CardImage(images.ensure(sc.image), format=recipe.format),
                      card_kind=sc.card)
    return ModelTarget(machine, image=images.raw_twin(sc.image), profile=profile)


def run_on_model(scs: Iterable[Scenario], profile: BuildProfile = NEWEST) -> dict[str, str]:
    """Run each scenario on the model alone; ``{name: error}`` of those that
    raised (a scenario may need QEMU's answers, e.g. a migration)."""
    errors: dict[str, str] = {}
    for sc in scs:
        # what the check skips on a PC too (the spi group: its board's)
        if sc.skip_reason(profile, True) or boards.skip_reason(sc, "q35", profile):
            continue
        try:
            model = scenario_model(sc, profile)
            sc.fn(model, Context(profile, "q35", sc.image, sc.params))
        except Exception as e:  # noqa: BLE001 - counted and listed, the report goes on
            errors[sc.name] = f"{type(e).__name__}: {e}"
    return errors


def library_arcs(profile: BuildProfile = NEWEST) -> set[Any]:
    """The model arcs the scenario library takes on the PC's model (the
    explore group left out), as :class:`~harness.explore.tracer.CTracerArcs`
    keys, the search's features (the corpus's own inputs in the migration
    group left out too): the default check runs the library anyway,
    so the corpus's set cover spends its limit on what it does not take."""
    import harness.scenarios as scenarios
    from harness.explore.tracer import CTracerArcs
    from harness.scenarios import explore as group

    library = [s for s in scenarios.all_scenarios().values()
               if s.group != group.GROUP and not s.params.get(group.FROM_CORPUS)]
    tracer = CTracerArcs()
    with tracer:
        run_on_model(library, profile)
    return tracer.keys


def run_on_boards(scs: Iterable[Scenario], profiles: Iterable[BuildProfile],
                  names: Iterable[str] = DEFAULT_BOARDS) -> dict[str, str]:
    """Run each scenario on the model of each board of ``names`` (the
    default check's, :data:`harness.check.boards.DEFAULT_BOARDS`) as the
    default check's board runs do: the board's machine, its controller and
    card, what :func:`harness.check.boards.skip_reason` skips skipped;
    ``{board/name: error}`` of those that raised."""
    from harness.check.testbench import scenario_machine

    errors: dict[str, str] = {}
    for name in names:
        machine = run_key(by_name(name))
        for profile in profiles:
            if by_name(name).machine not in profile.machine_types and _has_boards(profile):
                continue  # a board build of another target (an ARM build, a RISC-V board)
            for sc in scs:
                if (sc.skip_reason(boards.scenario_profile(machine, profile), True)
                        or boards.skip_reason(sc, machine, profile)
                        or not boards.in_default(sc, machine)):
                    continue
                recipe = images.recipe(sc.image)
                described = scenario_machine(sc, machine, images.ensure(sc.image),
                                             recipe.format)
                kind = model_target_for(by_name(name))  # as testbench
                try:
                    model = kind(described, image=images.raw_twin(sc.image), profile=profile)
                    sc.fn(model, Context(profile, machine, sc.image, sc.params))
                except Exception as e:  # noqa: BLE001 - counted and listed, as above
                    errors[f"{name}/{sc.name}"] = f"{type(e).__name__}: {e}"
    return errors


def _has_boards(profile: BuildProfile) -> bool:
    """``profile`` is a board build's (it has some board's machine type; the
    PC builds' profiles stand in for the boards' when none is installed)."""
    from harness.hwdefs.boards import BOARDS

    return any(b.machine in profile.machine_types for b in BOARDS)


def board_only_files() -> dict[str, str]:
    """``{model file: boards}`` of the controller models only boards outside
    the default check's (``--board``) use: no default run reaches them."""
    from harness.model import pl022, sdcard_spi, spi_target, ssi_sd

    inside = {by_name(n).variant for n in DEFAULT_BOARDS} | {"sdhci"}
    spi_inside = any(by_name(n).spi for n in DEFAULT_BOARDS)
    #: The SD card in SPI mode behind a PL022 (the SPI boards' own target).
    spi_files = [Path(inspect.getfile(m)).name for m in (spi_target, pl022, ssi_sd, sdcard_spi)]
    out: dict[str, list[str]] = {}
    for b in BOARDS:
        if b.spi and not spi_inside:
            for src in spi_files:
                out.setdefault(src, []).append(b.name)
        elif b.variant not in inside and b.variant in CONTROLLERS:
            src = Path(inspect.getfile(CONTROLLERS[b.variant])).name
            out.setdefault(src, []).append(b.name)
    return {f: ", ".join(names) for f, names in out.items()}


def measure(run: Callable[[], Any]) -> dict[str, Any]:
    """coverage.py's JSON report (branches, per function) of ``run()``."""
    import coverage

    cov = coverage.Coverage(branch=True, data_file=None, include=[MODEL_DIR + "/*"])
    cov.start()
    try:
        run()
    finally:
        cov.stop()
    return _json(cov)


@dataclass
class Region:
    """One function (or a file's module level) and its branches."""

    file: str
    name: str
    branches: set[Branch] = field(default_factory=set)
    scenarios: set[Branch] = field(default_factory=set)
    explore: set[Branch] = field(default_factory=set)

    @property
    def never(self) -> set[Branch]:
        return self.branches - self.scenarios - self.explore


def _regions(report: dict[str, Any]) -> dict[tuple[str, str], tuple[set[Branch], set[Branch]]]:
    """``(file, function) -> (every branch, executed branches)``."""
    out: dict[tuple[str, str], tuple[set[Branch], set[Branch]]] = {}
    for path, f in report["files"].items():
        name = Path(path).name
        funcs = f.get("functions") or {"": f}
        for fn, d in funcs.items():
            ex = {tuple(b) for b in d.get("executed_branches", [])}
            miss = {tuple(b) for b in d.get("missing_branches", [])}
            out[(name, fn or "(module)")] = ({*ex, *miss}, ex)
    return out


def combine(scen: dict[str, Any], expl: dict[str, Any]) -> list[Region]:
    a, b = _regions(scen), _regions(expl)
    regions = []
    for key in sorted(set(a) | set(b)):
        all_a, ex_a = a.get(key, (set(), set()))
        all_b, ex_b = b.get(key, (set(), set()))
        r = Region(key[0], key[1], all_a | all_b, ex_a, ex_b - ex_a)
        if r.branches:
            regions.append(r)
    return regions


#: Reason classes of a never-taken branch, from the text of its line
#: (first match wins).  A heuristic: each is a hint where to look.  The
#: second field says whether the class is out of the default check's reach
#: by construction (``True``: it runs the model following QEMU, on its
#: builds' profiles, with valid machines) and so leaves the reachable set.
_REASONS = (
    ("strict", "the spec-following model (--strict)", True),
    ("qemu(", "one side of a listed deviation: the other is the spec-following model "
     "(--strict)", True),
    ("self.card is none", "a controller without a card device (every machine the check "
     "builds plugs one: a scenario's card is a property set, never none)", True),
    ("self.store is none", "a card without a medium (every card the check builds has its "
     "image; an eject keeps the store)", True),
    ("self.image_store is none", "a card without a medium (every card the check builds has "
     "its image; an eject keeps the store)", True),
    ("rpmb_counter == 0xffffffff", "an expired RPMB write counter (JESD84-B51 6.6.22: after "
     "2^32 authenticated writes, beyond any run)", True),
    ("uhs", "a device property (sdhci-pci uhs)", False),
    ("sd_spec_version", "a device property (sdhci-pci sd-spec-version)", False),
    ("spec_version", "a device property (sd-card spec_version)", False),
    ("capareg", "a device property (sdhci-pci capareg)", False),
    ("readonly", "a read-only medium (QEMU refuses it at realize)", True),
    ("inserted", "a medium change (the medium operation) in a state no input reached",
     False),
    # SDCard.series: profile.has_erase_blocks_as_zero, a patched build's
    # property (the hw/sd performance series), none of the Debian builds'
    ("self.series", "another build's profile (version-dependent rule)", True),
    ("profile", "another build's profile (version-dependent rule)", True),
    ("version", "another build's profile (version-dependent rule)", True),
    ("emmc", "an eMMC card", False),
    ("rpmb", "an eMMC card (RPMB)", False),
    ("spi", "SPI mode (not on this bus)", True),
    ("fatal", "a QEMU abort path", False),
    ("hung", "a QEMU abort or endless-transfer path", False),
    ("raise ", "an error the model raises (bad input: the check builds valid machines)",
     True),
    ("ValueError", "an error the model raises (bad input: the check builds valid "
     "machines)", True),
)
#: Functions of the model's Target only the lockstep calls (the adoption of
#: QEMU's random RCA, the interrupt line's events, the extents of the image
#: the model wrote, which the check compares after every run, the optimistic
#: lockstep's fast paths): every check runs them,
#: the model alone does not, so they are not counted here.
LOCKSTEP_ONLY = frozenset({"ModelTarget.reconcile", "ModelTarget.may_adopt",
                           "ModelTarget._adopt_rspreg3", "ModelTarget.irq_events",
                           # the SPI board's Target: what it accepts of QEMU's answer
                           "SpiModelTarget.reconcile",
                           # the image compared after every run (check.runner)
                           "ModelTarget.image_touched", "BlockStore.touched",
                           # the optimistic lockstep's fast paths (check.optimistic):
                           # the model's reader of a register, a data port block's
                           # reads at once, the interrupt state after each operation
                           "ModelTarget.reader", "ModelTarget.read_run",
                           "SDHCI.read_run", "ModelTarget.irq_state"})
_LOCKSTEP = "lockstep glue: every check runs it, the model alone does not (not counted)"
#: The model taking QEMU's value after a difference, so that a run goes on
#: past it (harness.check.scoreboard): only a run that differs calls it.
RESYNC_ONLY = frozenset({"ModelTarget.adopt", "ModelTarget._adopt_registers"})
_RESYNC = ("the scoreboard's resynchronisation after a difference: a check that agrees "
           "never runs it (tests/qtest/core/test_scoreboard.py does; not counted)")


#: Functions that build the model from a machine description (device
#: properties, image, RAM, the command tables' binding, the compat table):
#: they run once, before the guest's first access, on the configuration
#: the run starts from; no guest operation reaches another of their
#: branches (the check's machines are fixed and valid; the variants of
#: ``sdqtest explore`` are the property values it runs).
CONSTRUCTION = frozenset({
    "ModelTarget.__init__", "card_medium", "_param", "model_params", "SDCard.__init__",
    "EmmcCard.__init__",
    "GuestMemory.__init__", "ram_ranges", "BlockStore.__init__", "check_image_size",
    "check_spec_version", "check_capareg", "check_emmc_sizes", "emmc_card_params",
    "_size_value", "parse_auth_key", "_prop_int", "_parse", "defaults_for", "entries_for",
    "machine_version", "resolve_machine", "class_default", "CommandTable._bind",
    "CommandTable.inherit", "_word_writers", "(module)", "default"})
_CONSTRUCTION = ("machine construction: runs on the configuration a run starts from, "
                 "before any guest access (not counted)")
_NO_CARD = ("a controller without a card device (every machine the check builds plugs one: "
            "a scenario's card is a property set, never none)", True)
_RAISES = ("raise ", "an error the model raises (bad input: the check builds valid machines)",
           True)


def _deviation_test(test: ast.expr, preds: dict[str, bool] | None = None,
                    names: dict[str, bool] | None = None) -> bool | None:
    """For an ``if`` test that one deviation decides: whether its body is
    QEMU's side (``x.qemu("key")``: True, its negation: False), or the
    spec-following side (a ``strict`` flag: False, ``not strict``: True);
    anything else: None.  ``A or B`` is QEMU's side when one operand is
    (QEMU's side of that operand alone runs the body), ``A and B`` the
    spec-following side when one operand is (QEMU's side never runs it);
    ``self.f(...)`` with ``f`` in ``preds`` (:func:`_predicates`) is the
    value ``f`` returns on QEMU's side; a local of ``names``
    (:func:`_deviation_locals`) the test it was assigned."""
    if isinstance(test, ast.BoolOp):
        sides = [_deviation_test(v, preds, names) for v in test.values]
        if isinstance(test.op, ast.Or) and True in sides:
            return True
        if isinstance(test.op, ast.And) and False in sides:
            return False
        return None
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
            and inner.func.attr == "qemu" and len(inner.args) == 1
            and isinstance(inner.args[0], ast.Constant)):
        return not negated
    if (preds and isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
            and isinstance(inner.func.value, ast.Name) and inner.func.value.id == "self"
            and inner.func.attr in preds):
        return preds[inner.func.attr] != negated
    if names and isinstance(inner, ast.Name) and inner.id in names:
        return names[inner.id] != negated
    if ((isinstance(inner, ast.Name) and inner.id == "strict")
            or (isinstance(inner, ast.Attribute) and inner.attr == "strict")):
        return negated
    return None


def _predicates(tree: ast.Module) -> dict[str, bool]:
    """``{method: value}`` of the file's deviation predicates: a function
    whose first statement is ``if <QEMU's side>: return True`` (or False)
    returns that constant whenever the deviation holds, so an ``if`` on
    its call is decided by the deviation as well."""
    out: dict[str, bool] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and len(node.body) > 1):
            first = node.body[1]  # after the docstring
        if (isinstance(first, ast.If) and _deviation_test(first.test) is True
                and isinstance(first.body[-1], ast.Return)
                and isinstance(first.body[-1].value, ast.Constant)
                and isinstance(first.body[-1].value.value, bool)):
            out[node.name] = first.body[-1].value.value
    return out


def _mark(out: dict[int, tuple[int, int, int]], guard: int, side: list[ast.stmt]) -> None:
    if side:
        first, last = side[0].lineno, max(st.end_lineno or st.lineno for st in side)
        for line in range(first, last + 1):
            out.setdefault(line, (guard, first, last))
        # the branch from the ``if`` into that side (keyed by the negated line)
        out.setdefault(-guard, (guard, first, last))


def _deviation_locals(fn: ast.FunctionDef, preds: dict[str, bool]) -> dict[str, bool]:
    """``{name: side}`` of the locals of ``fn`` assigned once, from a test one
    deviation decides (``ok = self.qemu(key) or x``): an ``if`` on the name
    is decided the same way."""
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    out: dict[str, bool] = {}
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and stores.get(node.targets[0].id) == 1):
            side = _deviation_test(node.value, preds)
            if side is not None:
                out[node.targets[0].id] = side
    return out


@functools.cache
def _walk_sides(path: str) -> tuple[dict[int, tuple[int, int, int]], dict[int, tuple[int, int]]]:
    """:func:`strict_sides` and :func:`strict_skips` of ``path``, one walk."""
    out: dict[int, tuple[int, int, int]] = {}
    skips: dict[int, tuple[int, int]] = {}
    tree = ast.parse(Path(path).read_text(), path)
    preds = _predicates(tree)
    scopes: list[tuple[ast.AST, dict[str, bool]]] = [(tree, {})]
    scopes += [(f, _deviation_locals(f, preds)) for f in ast.walk(tree)
               if isinstance(f, ast.FunctionDef)]
    for scope, names in scopes:
        for node in ast.walk(scope):
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if not isinstance(block, list):
                    continue
                for i, st in enumerate(block):
                    if not isinstance(st, ast.If):
                        continue
                    qemu_side = _deviation_test(st.test, preds, names)
                    if qemu_side is None:
                        continue
                    if not qemu_side:
                        _mark(out, st.lineno, st.body)
                    elif st.orelse:
                        _mark(out, st.lineno, st.orelse)
                    elif isinstance(st.body[-1], ast.Return):
                        _mark(out, st.lineno, block[i + 1:])
                    else:
                        last = max(b.end_lineno or b.lineno for b in st.body)
                        skips.setdefault(st.lineno, (st.body[0].lineno, last))
    return out, skips


def strict_skips(path: str) -> dict[int, tuple[int, int]]:
    """``{if line: (first, last)}`` of an ``if`` without ``else`` whose body
    (``first`` to ``last``) is QEMU's side: the branch past the body, to
    any other line, is the spec-following side."""
    return _walk_sides(path)[1]


def strict_sides(path: str) -> dict[int, tuple[int, int, int]]:
    """``{line: (if line, first, last)}`` of the lines on the spec-following
    side (``first`` to ``last``) of an ``if`` whose test is one deviation
    alone: the ``else`` of ``if self.qemu(key)`` (or, when its body ends in
    ``return``, the statements after it), the body of ``if not
    self.qemu(key)``; the outermost such ``if`` when nested.  Key ``-line``:
    the side the ``if`` at ``line`` leads into (its entry branch)."""
    return _walk_sides(path)[0]


def classify(path: str, line: int, function: str = "", to: int = 0,
             executed: frozenset[Branch] = frozenset()) -> tuple[str, bool]:
    """The reason class of a never-taken branch from ``line`` (to line
    ``to``) and whether it is out of the default check's reach (see
    :data:`_REASONS`; the target line is read when the source line says
    nothing: a branch into a ``raise``).  ``executed``: the file's branches
    some run took; a branch on the spec-following side of a deviation
    whose ``if`` ran but never into that side (on no profile) is the
    strict model's (:func:`strict_sides`)."""
    if function in LOCKSTEP_ONLY:
        return _LOCKSTEP, True
    if function in RESYNC_ONLY:
        return _RESYNC, True
    if function in CONSTRUCTION:
        return _CONSTRUCTION, True
    sides = strict_sides(path) if executed else {}
    side = sides.get(abs(line))
    entry = sides.get(-abs(line))
    if side is None and entry is not None and entry[1] <= to <= entry[2]:
        side = entry  # the branch into the spec-following side itself
    spec_side = ("the spec-following side of a deviation whose QEMU side every "
                 "profile takes (--strict)", True)
    if side is not None:
        guard, first, last = side
        outs = [b for a, b in executed if a == guard]
        if outs and not any(first <= b <= last for b in outs):
            return spec_side
    skip = strict_skips(path).get(abs(line)) if executed else None
    if skip is not None and not skip[0] <= abs(to) <= skip[1]:
        # past a body that is QEMU's side: every run went into the body
        outs = [b for a, b in executed if a == abs(line)]
        if outs and all(skip[0] <= b <= skip[1] for b in outs):
            return spec_side
    board_only = board_only_files().get(Path(path).name)
    if board_only is not None:
        return (f"a board the default check leaves to --board ({board_only})", True)
    text = linecache.getline(path, abs(line)).lower()
    if "strict" in function.lower():
        return "the spec-following model (--strict)", True
    if text.strip() == "if self.card is not none:" and (abs(line), abs(line) + 1) in executed:
        return _NO_CARD  # its body ran: the branch not taken is the no-card side
    for needle, why, out in _REASONS:
        if needle.lower() in text:
            return why, out
    if to > 0 and _RAISES[0] in linecache.getline(path, to):
        return _RAISES[1], _RAISES[2]
    if "emmc" in Path(path).name:
        return "an eMMC card", False
    return "unknown: no scenario or explored input reaches it yet", False


def reason(path: str, line: int, function: str = "") -> str:
    return classify(path, line, function)[0]


def render(regions: list[Region], *, detail: bool = True) -> str:
    """The report: per file, per function; never-taken branches with reasons;
    the total, and the share of the reachable branches taken (those not
    out of the default check's reach by their class, :func:`classify`)."""
    lines: list[str] = []
    files: dict[str, list[Region]] = {}
    for r in regions:
        files.setdefault(r.file, []).append(r)
    tot = [0, 0, 0, 0]
    out_of_reach = 0
    classes: dict[str, int] = {}
    for name, rs in files.items():
        n = sum(len(r.branches) for r in rs)
        s = sum(len(r.scenarios) for r in rs)
        e = sum(len(r.explore) for r in rs)
        v = sum(len(r.never) for r in rs)
        tot = [tot[0] + n, tot[1] + s, tot[2] + e, tot[3] + v]
        lines.append(f"{name}: {n} branches, scenarios {s}, explore only {e}, never {v} "
                     f"({100 * (s + e) / max(n, 1):.1f}% taken)")
        path = str(Path(MODEL_DIR) / name)
        ran = frozenset(b for r in rs for b in r.scenarios | r.explore)
        for r in rs:
            whys = [(src, dst, *classify(path, src, r.name, dst, ran))
                    for src, dst in sorted(r.never)]
            for _s, _d, why, out in whys:
                classes[why] = classes.get(why, 0) + 1
                out_of_reach += out
            if not r.never and not detail:
                continue
            lines.append(f"  {r.name}: {len(r.branches)} branches, scenarios "
                         f"{len(r.scenarios)}, explore only {len(r.explore)}, never "
                         f"{len(r.never)}")
            if detail:
                for src, dst, why, _out in whys:
                    to = "exit" if dst < 0 else f"line {dst}"
                    lines.append(f"      line {src} -> {to}: {why}")
    taken = tot[1] + tot[2]
    lines.append(f"total: {tot[0]} branches, scenarios {tot[1]}, explore only {tot[2]}, "
                 f"never {tot[3]} ({100 * taken / max(tot[0], 1):.1f}% taken)")
    reach = tot[0] - out_of_reach
    lines.append(f"reachable by the default check: {reach} (never taken and out of its "
                 f"reach by class: {out_of_reach}); taken {taken}: "
                 f"{100 * taken / max(reach, 1):.1f}% of reachable")
    lines.append("never taken, by class:")
    lines += [f"  {n:4}  {why}" for why, n in sorted(classes.items(), key=lambda x: -x[1])]
    return "\n".join(lines)


#: Started in a fresh interpreter: coverage first, then the model's import,
#: so that what runs at import (the register dispatch tables, the compat
#: table) counts as the check runs it.
_CHILD = """
import sys, coverage
cov = coverage.Coverage(branch=True, data_file=None, include=[sys.argv[1] + "/*"])
cov.set_option("run:disable_warnings", ["no-data-collected"])
cov.start()
from harness.explore import report
report.child(cov, sys.argv[2], sys.argv[3:])
"""


def child(cov: Any, out: str, specs: list[str]) -> None:
    """In the fresh interpreter of :func:`measure_fresh`: run the scenario
    library, then the explore corpus, on the model alone for each profile
    of ``specs`` (builds; none: the default check's), and write both
    coverage reports and the errors to ``out`` (JSON)."""
    import harness.scenarios as scenarios
    from harness.scenarios import explore as group

    profiles = _profiles(specs)
    every = list(scenarios.all_scenarios().values())
    mine = [s.group == group.GROUP or bool(s.params.get(group.FROM_CORPUS)) for s in every]
    library = [s for s, m in zip(every, mine, strict=True) if not m]
    corpus = [s for s, m in zip(every, mine, strict=True) if m and s.group == group.GROUP]
    errors: dict[str, str] = {}
    for p in profiles:
        errors.update(run_on_model(library, p))
    on_boards = boards.default_scenarios(library, False)
    errors.update(run_on_boards(on_boards, _board_profiles(specs) or profiles))
    cov.stop()
    scen = _json(cov)
    expl = measure(lambda: [errors.update(run_on_model(corpus, p)) for p in profiles])
    Path(out).write_text(json.dumps({"scenarios": scen, "explore": expl, "errors": errors,
                                     "profiles": [".".join(map(str, p.version))
                                                  for p in profiles],
                                     "library": len(library), "corpus": len(corpus),
                                     "boards": list(DEFAULT_BOARDS)}))


def _profiles(specs: list[str]) -> list[BuildProfile]:
    from harness.errors import SdqtestError
    from harness.qemu.selection import select_builds

    try:
        return [b.profile for b in select_builds(specs or None, install_missing=False)]
    except SdqtestError:
        return [NEWEST]


def _board_profiles(specs: list[str]) -> list[BuildProfile]:
    """The profiles of the ARM builds the default check runs its boards on
    (none named: every installed one; none installed: the PC profiles)."""
    from harness.qemu import builds

    if specs:
        return []
    try:
        return [b.profile for b in builds.selected_arm(None)]
    except builds.BuildError:
        return []


def _json(cov: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sdqtest-explore-") as tmp:
        out = Path(tmp) / "cov.json"
        cov.json_report(outfile=str(out), show_contexts=False)
        data: dict[str, Any] = json.loads(out.read_text())
    return data


def measure_fresh(specs: list[str]) -> dict[str, Any]:
    """:func:`child` in a fresh interpreter; its JSON."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="sdqtest-explore-") as tmp:
        out = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-c", _CHILD, MODEL_DIR, str(out), *specs],
                       check=True)
        data: dict[str, Any] = json.loads(out.read_text())
    return data


def corpus_reach() -> dict[str, set[Any]]:
    """The reach classes (:mod:`harness.explore.reach`) each committed corpus
    input reaches on the model alone (no QEMU), by input name."""
    from harness.explore import reach
    from harness.explore.search import ModelRunner, bare, variant_machine
    from harness.scenarios import explore as group

    runners: dict[str, ModelRunner] = {}
    out: dict[str, set[Any]] = {}
    for e in group.load()["inputs"]:
        v = e.get("variant", "default")
        if v not in runners:
            runners[v] = ModelRunner(trace=False, snapshots=0, machine=variant_machine(v))
        run = runners[v].run(bare(e["ops"]))
        out[e["name"]] = {f for f in run.features if reach.is_reach(f)}
    return out
