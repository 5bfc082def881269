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
from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES
from harness.check.testbench import RunSpec
from harness.qemu.builds import QemuBuild, probe
from harness.review import cache, classify, direct, findings, props, speed, wrap
from harness.review.series import SeriesError
from harness.scenarios import Scenario, all_scenarios

Progress = Callable[[str], None]


@dataclass
class ReviewOptions:
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
    #: distinct differences a run records before it stops (1: the first, ``--first-only``)
    max_differences: int = DEFAULT_MAX_DIFFERENCES


@dataclass
class Review:
    """Everything the report says."""

    base: QemuBuild
    patched: QemuBuild
    props: list[props.PropChange] = field(default_factory=list)
    rows: list[classify.ReviewRow] = field(default_factory=list)
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
    #: each distinct behaviour change, most harmful first (:mod:`harness.review.findings`)
    findings: list[findings.ReviewFinding] = field(default_factory=list)


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
             found: dict[str, direct.DirectResult], opts: ReviewOptions,
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
        again = direct.run_all(base_s, b, differing, opts.jobs, opts.report_dir / "direct",
                               opts.max_differences)
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


def _whats(r: runner.Result) -> tuple[str, ...]:
    """``what | command`` of each distinct difference of a model check run."""
    sigs = [d.signature for d in r.differences] or (
        [r.divergence.signature] if r.divergence is not None else [])
    return tuple(dict.fromkeys(findings.what_command(s) for s in sigs if s))


def _verdicts(results: list[runner.Result]) -> dict[str, classify.ModelEvidence]:
    return {key(r.scenario, r.machine): classify.ModelEvidence(r.status, r.reason, _whats(r))
            for r in results}


@dataclass
class Checked:
    """The model check of both builds: the verdicts of each, the build that
    stood for patched (with ``-global`` options, maybe), the cache key of
    base's verdicts and whether they were kept from an earlier review."""

    base: dict[str, classify.ModelEvidence]
    patched: dict[str, classify.ModelEvidence]
    patched_side: QemuBuild
    cache_key: str
    kept: bool


def _check(sides: Sequence[QemuBuild], runs: list[tuple[str, str]], opts: ReviewOptions,
           progress: Progress) -> list[dict[str, classify.ModelEvidence]]:
    """The model check of each build of ``sides`` on ``runs``: its verdicts."""
    library = all_scenarios()
    checks = [RunSpec(b, library[name], m) for b in sides for name, m in runs]
    progress(f"model check: {len(checks)} runs")
    results, _ = parallel.run_all(
        checks, parallel.SharedOptions(report_dir=opts.report_dir / "check",
                                 max_differences=opts.max_differences), opts.jobs,
        progress=lambda done, r: progress(f"model check [{done}/{len(checks)}] {r.build.name} "
                                          f"{r.scenario.name}"))
    return [_verdicts([r for c, r in zip(checks, results, strict=True) if c.build is b])
            for b in sides]


def _model_check(rv: Review, runs: list[tuple[str, str]], opts: ReviewOptions,
                 progress: Progress) -> Checked:
    """The model check of both builds (base's kept from an earlier review
    when it can be), the patched build with the new properties at the value
    that behaves as base."""
    t = time.monotonic()
    base, patched = rv.base, rv.patched
    fixed = [f"{c.device}.{c.prop}={c.base_value}" for c in rv.props if c.base_value]
    model_side = patched
    if fixed:
        model_side = probe(wrap.with_globals(patched.binary, fixed, opts.report_dir / "wrappers"),
                           "patched")
        rv.notes.append("the model check of patched ran with " + ", ".join(
            f"-global {g}" for g in fixed) + " (the value that behaves as base)")
    ckey = cache.key_of(base.digest(), runs, opts.max_differences)
    vb = cache.load(ckey) if opts.reuse_base_check else None
    if vb is not None:
        (vp,) = _check((model_side,), runs, opts, progress)
        rv.notes.append("the base build's model check was kept from an earlier review of the "
                        "same base binary (--fresh-base-check runs it again)")
        rv.times["model check, patched (base kept)"] = time.monotonic() - t
        return Checked(vb, vp, model_side, ckey, True)
    vb, vp = _check((base, model_side), runs, opts, progress)
    cache.store(ckey, vb)
    rv.times["model check, both builds"] = time.monotonic() - t
    return Checked(vb, vp, model_side, ckey, False)


def _why_unstable(rv: Review, rows: list[classify.ReviewRow]) -> list[classify.ReviewRow]:
    """``rows``, each *unstable* one saying why the model's verdict can
    change where the builds answer alike: the model takes its expectations
    from each build's properties (one property may stand for a whole
    series: ``erase-blocks-as-zero`` makes it expect the seed series' CID
    and SCR), and the properties differ."""
    changed = [c.name for c in rv.props]
    for r in rows:
        if r.category == classify.UNSTABLE:
            r.note = ("the model's verdict changed, but base and patched answer alike: the "
                      "model expects other answers of patched" + (
                          f" (it configures itself from each build's properties, and these "
                          f"differ: {', '.join(changed)})" if changed else ""))
    return rows


def _settle_unstable(rv: Review, ck: Checked, found: dict[str, direct.DirectResult],
                     explained: dict[str, str], opts: ReviewOptions,
                     progress: Progress) -> list[classify.ReviewRow]:
    """Classified rows; the *unstable* ones (the model's verdict changed,
    the builds answer alike) checked again on both builds, fresh, and
    classified with those verdicts; a note says what the second look found."""
    rows = _why_unstable(rv, classify.classify(ck.base, ck.patched, found, explained))
    again = [r.key for r in rows if r.category == classify.UNSTABLE]
    if not again:
        return rows
    t = time.monotonic()
    pairs = [(k.split("@", 1)[0], k.split("@", 1)[1]) for k in again]
    nb, np_ = _check((rv.base, ck.patched_side), pairs, opts, progress)
    stale = [k for k in again if nb[k].status in classify.BAD]
    flaky = [k for k in again if np_[k].status in classify.OK]
    ck.base.update(nb)
    ck.patched.update(np_)
    if stale:
        cache.store(ck.cache_key, ck.base)
    rows = _why_unstable(rv, classify.classify(ck.base, ck.patched, found, explained))
    left = sum(r.category == classify.UNSTABLE for r in rows)
    rv.notes.append(
        f"{len(again)} runs came out unstable (the model's verdict changed, the builds answer "
        f"alike) and were checked again on both builds: in {len(stale)} base's "
        f"{'kept ' if ck.kept else ''}verdict did not hold (base diverges too), in {len(flaky)}"
        f" patched's divergence did not repeat; {left} still unstable")
    rv.times["unstable runs checked again"] = time.monotonic() - t
    return rows


def review(base_bin: Path, patched_bin: Path, opts: ReviewOptions, progress: Progress,
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
        base_s, patched_s, runs, opts.jobs, opts.report_dir / "direct", opts.max_differences)}
    explained = _explain(rv, base_s, patched, found, opts, progress)
    rv.times["direct comparison"] = time.monotonic() - t
    ck = _model_check(rv, runs, opts, progress)
    rv.rows = _settle_unstable(rv, ck, found, explained, opts, progress)
    rv.findings = findings.group(rv.rows)
    findings.judge_all(rv.findings, ck.base, ck.patched)
    if opts.bench:
        t = time.monotonic()
        rv.speed = speed.compare(base, patched, opts.rounds, progress, opts.report_dir / "bench")
        rv.times["benchmarks"] = time.monotonic() - t
    if opts.guest_rounds:
        t = time.monotonic()
        rv.speed += speed.guest(base, patched, opts.guest_rounds, progress)
        rv.times["guest benchmark"] = time.monotonic() - t
    rv.findings = sorted(rv.findings + findings.from_bench(rv.speed), key=findings.rank)
    rv.load = speed.load()
    progress("")
    return rv


def _props_in(rv: Review, b: QemuBuild, label: str) -> None:
    """Each property change ``b`` already shows is ``label``'s, if no earlier one's."""
    for c in rv.props:
        have = c.prop in b.profile.properties(c.device)
        now = None if not have else props.norm(b.profile.properties(c.device)[c.prop])
        if not c.patch and (now == c.patched_default if c.kind != props.REMOVED
                            else not have):
            c.patch = label


def _findings_in(rv: Review, todo: dict[str, findings.ReviewFinding], b: QemuBuild, binary: Path,
                 label: str, opts: ReviewOptions, base_s: QemuBuild) -> None:
    """Each finding of ``todo`` whose signature the step build ``b`` shows,
    in the finding's shortest run against base, is ``label``'s (and leaves
    ``todo``).  The runs go with the new properties at their base value,
    as in the review."""
    at_base = [f"{c.device}.{c.prop}={c.base_value}" for c in rv.props
               if c.base_value and c.prop in b.profile.properties(c.device)]
    step = probe(wrap.seeded(binary, opts.report_dir / "wrappers", at_base), "step")
    examples = {f.signature: ex[0] for f in todo.values() if (ex := f.example()) is not None}
    pairs = [(k.split("@")[0], k.split("@", 1)[1]) for k in dict.fromkeys(examples.values())]
    shown: dict[str, set[str]] = {}
    for res in direct.run_all(base_s, step, pairs, opts.jobs, limit=opts.max_differences):
        shown[key(res.scenario, res.machine)] = {d.signature for d in res.differences}
    for sig, k in examples.items():
        if sig in shown.get(k, set()):
            todo.pop(sig).patch = label


def attribute(rv: Review, steps: list[tuple[str, Path]], opts: ReviewOptions,
              progress: Progress) -> None:
    """Which patch introduced each finding: its shortest run compared
    directly against base on each intermediate build (``steps``: ``(patch
    label, binary)`` in series order, the last the patched build), the
    first build that shows its signature named; a benchmark's failed check
    tried on each build; each property change looked for in each
    build's properties.  A changed scenario run is its earliest finding's
    patch's, an intended one its property's."""
    t = time.monotonic()
    base_s = probe(wrap.seeded(rv.base.binary, opts.report_dir / "wrappers"), "base")
    todo = {f.signature: f for f in rv.findings if f.runs}
    bench = [f for f in rv.findings if f.check]
    for label, binary in steps[:-1]:
        b = probe(binary, "step")
        _props_in(rv, b, label)
        if todo:
            progress(f"which patch: {len(todo)} findings on {label}")
            _findings_in(rv, todo, b, binary, label, opts, base_s)
        for f in bench:
            if not f.patch and speed.failure(b, f.check):
                f.patch = label
    last = steps[-1][0]
    for f in rv.findings:
        f.patch = f.patch or last
    for c in rv.props:
        c.patch = c.patch or last
    rows_patches(rv, [label for label, _ in steps])
    rv.times["which patch"] = time.monotonic() - t
    progress("")


def rows_patches(rv: Review, order: list[str]) -> None:
    """Each changed run: the earliest patch among its findings (a run the
    model check alone compared: among the findings whose ``what | command``
    it shows); each intended run: the patch of the property that explains it."""
    def earlier(a: str, b: str | None) -> bool:
        return a in order and (b is None or b not in order or order.index(a) < order.index(b))

    earliest: dict[str, str] = {}
    by_wc: dict[str, str] = {}
    for f in rv.findings:
        wc = findings.what_command(f.signature)
        if earlier(f.patch, by_wc.get(wc)):
            by_wc[wc] = f.patch
        for k, _ in f.runs:
            if earlier(f.patch, earliest.get(k)):
                earliest[k] = f.patch
    for r in rv.rows:
        if r.category == classify.CHANGED:
            hits = [by_wc[w] for w in (r.patched.whats if r.patched else ()) if w in by_wc]
            r.patch = earliest.get(r.key) or min(hits, key=order.index, default="") \
                or r.patch or (order[-1] if order else "")
        elif r.category == classify.INTENDED:
            r.patch = next((c.patch for c in rv.props if r.key in c.explains), "")
