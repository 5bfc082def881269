"""A review of two builds: properties, the direct comparison, the model check
of both, classification, speed (see :mod:`harness.review`).

The order matters: the direct comparison runs first, so that a new property
the model does not know can be tried at its other value on the scenarios
that differ; the model check of the patched build then runs with that
property set to the value that behaves as base (``-global``), so one unknown
default does not turn every later scenario into a divergence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.check import parallel, plan, runner
from harness.check.testbench import RunSpec
from harness.qemu.builds import QemuBuild, probe
from harness.review import cache, classify, direct, props, speed, wrap
from harness.review.series import SeriesError
from harness.scenarios import Scenario, all_scenarios

Progress = Callable[[str], None]


@dataclass
class Options:
    """What one review runs."""

    scenarios: Sequence[Scenario]
    jobs: int = 2
    report_dir: Path = Path("review-report")
    bench: bool = True
    rounds: int = 5
    #: also the guest benchmark (fio in a Linux guest), this many rounds
    guest_rounds: int = 0
    #: keep the base build's model check from an earlier review (:mod:`harness.review.cache`)
    reuse_base_check: bool = True


@dataclass
class Review:
    """Everything the report says."""

    base: QemuBuild
    patched: QemuBuild
    props: list[props.PropChange] = field(default_factory=list)
    rows: list[classify.Row] = field(default_factory=list)
    speed: list[speed.Comparison] = field(default_factory=list)
    #: seconds per phase, in order
    times: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    load: str = ""
    title: str = ""
    #: ``(file:line, text)`` of changed lines no scenario executed (``--coverage``),
    #: None when not measured
    untested: list[str] | None = None
    #: patch labels, when a series was built
    patches: list[str] = field(default_factory=list)


def key(name: str, machine: str) -> str:
    return f"{name}@{machine}"


def ready(binary: Path, name: str, what: str) -> QemuBuild:
    """A probed build; no qtest accelerator is one line naming ``what``."""
    try:
        b = probe(binary, name)
    except Exception as e:
        raise SeriesError(f"{what}: {binary} cannot be probed: {e}") from e
    if not b.profile.has_qtest_accel:
        raise SeriesError(f"{what}: {binary} has no qtest accelerator (virtual time): "
                          "rebuild with the qtest accelerator (configure's default)")
    if not b.has_sdhci_pci:
        raise SeriesError(f"{what}: {binary} has no sdhci-pci/sd-card device")
    return b


def _runs(b: QemuBuild, scenarios: Sequence[Scenario]) -> list[tuple[str, str]]:
    return [(sc.name, m) for sc in scenarios for m in plan.machines_for(b, sc)]


def _explain(rv: Review, base_s: QemuBuild, patched: QemuBuild,
             found: dict[str, direct.DirectResult], opts: Options,
             progress: Progress) -> dict[str, str]:
    """For each new on/off property the model does not know: the differing
    scenarios run again with it at its other value; those that then agree
    are its default's doing, and that value behaves as base."""
    explained: dict[str, str] = {}
    differing = [(r.scenario, r.machine) for r in found.values() if r.status == direct.DIFFERS]
    wrappers = opts.report_dir / "wrappers"
    for c in props.unmodelled_bools(rv.props):
        assert c.patched_default is not None
        other = props.flipped(c.patched_default)
        if not differing:
            break
        progress(f"direct: {len(differing)} differing scenarios with {c.prop}={other}")
        b = probe(wrap.seeded(patched.binary, wrappers, [f"{c.device}.{c.prop}={other}"]),
                  "patched")
        again = direct.run_all(base_s, b, differing, opts.jobs, opts.report_dir / "direct")
        hits = [key(r.scenario, r.machine) for r in again if r.status == direct.SAME]
        if hits:
            c.base_value, c.explains = other, hits
            for k in hits:
                explained.setdefault(k, f"{c.name}={c.patched_default} (new default; "
                                     f"{c.prop}={other} behaves as base)")
            # What still differs with the property at its base value is the
            # evidence: the first difference the property does not explain.
            for r in again:
                if r.status != direct.SAME:
                    r.reason += f" (with -global {c.device}.{c.prop}={other})"
                    found[key(r.scenario, r.machine)] = r
            differing = [(r.scenario, r.machine) for r in again if r.status != direct.SAME]
    return explained


def _verdicts(results: list[runner.Result]) -> dict[str, classify.Verdict]:
    return {key(r.scenario, r.machine): classify.Verdict(r.status, r.reason) for r in results}


def review(base_bin: Path, patched_bin: Path, opts: Options, progress: Progress,
           title: str = "") -> Review:
    """Review ``patched_bin`` against ``base_bin`` (see the module doc)."""
    t = time.monotonic()
    base = ready(base_bin, "base", "base build")
    patched = ready(patched_bin, "patched", "patched build")
    rv = Review(base, patched, title=title or f"{base_bin} -> {patched_bin}")
    progress("properties per machine type (QMP)")
    rv.props = props.compare(base, patched, opts.jobs)
    rv.times["properties"] = time.monotonic() - t
    t = time.monotonic()
    wrappers = opts.report_dir / "wrappers"
    base_s = probe(wrap.seeded(base.binary, wrappers), "base")
    patched_s = probe(wrap.seeded(patched.binary, wrappers), "patched")
    runs = _runs(patched, opts.scenarios)
    progress(f"direct comparison, base against patched: {len(runs)} runs")
    found = {key(r.scenario, r.machine): r for r in direct.run_all(
        base_s, patched_s, runs, opts.jobs, opts.report_dir / "direct")}
    explained = _explain(rv, base_s, patched, found, opts, progress)
    rv.times["direct comparison"] = time.monotonic() - t
    t = time.monotonic()
    fixed = [f"{c.device}.{c.prop}={c.base_value}" for c in rv.props if c.base_value]
    model_side = patched
    if fixed:
        model_side = probe(wrap.with_globals(patched.binary, fixed, wrappers), "patched")
        rv.notes.append("the model check of patched ran with " + ", ".join(
            f"-global {g}" for g in fixed) + " (the value that behaves as base)")
    ckey = cache.key_of(base.digest(), runs)
    vb = cache.load(ckey) if opts.reuse_base_check else None
    sides = (model_side,) if vb is not None else (base, model_side)
    library = all_scenarios()
    checks = [RunSpec(b, library[name], m) for b in sides for name, m in runs]
    progress(f"model check: {len(checks)} runs")
    results, _ = parallel.run_all(
        checks, parallel.Options(report_dir=opts.report_dir / "check"), opts.jobs,
        progress=lambda done, r: progress(f"model check [{done}/{len(checks)}] {r.build.name} "
                                          f"{r.scenario.name}"))
    if vb is None:
        vb = _verdicts([r for c, r in zip(checks, results, strict=True) if c.build is base])
        cache.store(ckey, vb)
        rv.times["model check, both builds"] = time.monotonic() - t
    else:
        rv.notes.append("the base build's model check was kept from an earlier review of the "
                        "same base binary (--fresh-base-check runs it again)")
        rv.times["model check, patched (base kept)"] = time.monotonic() - t
    vp = _verdicts([r for c, r in zip(checks, results, strict=True) if c.build is model_side])
    rv.rows = classify.classify(vb, vp, found, explained)
    if opts.bench:
        t = time.monotonic()
        rv.speed = speed.compare(base, patched, opts.rounds, progress)
        rv.times["benchmarks"] = time.monotonic() - t
    if opts.guest_rounds:
        t = time.monotonic()
        rv.speed += speed.guest(base, patched, opts.guest_rounds, progress)
        rv.times["guest benchmark"] = time.monotonic() - t
    rv.load = speed.load()
    progress("")
    return rv


def attribute(rv: Review, steps: list[tuple[str, Path]], opts: Options,
              progress: Progress) -> None:
    """Which patch introduced each change: the changed and intended scenarios
    compared directly against base on each intermediate build (``steps``:
    ``(patch label, binary)`` in series order, the last the patched build),
    and each property change looked for in each build's properties."""
    wrappers = opts.report_dir / "wrappers"
    base_s = probe(wrap.seeded(rv.base.binary, wrappers), "base")
    todo = {r.key: r for r in rv.rows if r.category in (classify.CHANGED, classify.INTENDED)
            and r.direct is not None}
    for label, binary in steps[:-1]:
        b = probe(binary, "step")
        for c in rv.props:
            have = c.prop in b.profile.properties(c.device)
            now = None if not have else props.norm(b.profile.properties(c.device)[c.prop])
            if not c.patch and (now == c.patched_default if c.kind != props.REMOVED
                                else not have):
                c.patch = label
        if not todo:
            continue
        progress(f"which patch: {len(todo)} scenarios on {label}")
        # A changed scenario runs with the new properties at their base
        # value (as in the review), an intended one with the defaults.
        at_base = [f"{c.device}.{c.prop}={c.base_value}" for c in rv.props
                   if c.base_value and c.prop in b.profile.properties(c.device)]
        for cat, globals_ in ((classify.CHANGED, at_base), (classify.INTENDED, [])):
            pairs = [(r.direct.scenario, r.direct.machine) for r in todo.values()
                     if r.direct is not None and r.category == cat]
            step = probe(wrap.seeded(binary, wrappers, globals_), "step")
            for res in direct.run_all(base_s, step, pairs, opts.jobs):
                k = key(res.scenario, res.machine)
                if res.status in (direct.DIFFERS, direct.ERROR) and k in todo:
                    todo.pop(k).patch = label
    last = steps[-1][0]
    for r in todo.values():
        r.patch = last
    for c in rv.props:
        c.patch = c.patch or last
    progress("")
