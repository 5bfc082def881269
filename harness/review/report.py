"""The review as text (terminal), Markdown (a reply on the list) and JSON.

Most important first: the findings, one line each: every distinct behaviour
change (most harmful first: data, crashes, interrupts and status, identity;
:mod:`harness.review.findings`), then the other problems, then intended
changes; then the evidence: each behaviour change decoded (its shortest run,
reproducers per build), the changed runs one line each, properties and
compat, speed, untested hunks, the rest counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.check.scoreboard import signature_text
from harness.review import classify, props, speed
from harness.review import findings as findings_
from harness.review.classify import ReviewRow
from harness.review.direct import BASE_PATCHED
from harness.review.findings import ReviewFinding
from harness.review.run import Review
from harness.scenarios import all_scenarios

#: Scenarios named per finding before "and N more".
NAMED = 4
#: Decoded lines shown per finding.
DETAIL = 8


@dataclass(frozen=True)
class SummaryLine:
    """One line of the summary: a problem or an intended change."""

    problem: bool
    text: str


def _names(rows: list[ReviewRow]) -> str:
    """Scenario names (each once, however many machine types it ran on)."""
    names = list(dict.fromkeys(r.key.split("@")[0] for r in rows))
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return ", ".join(f"`{n}`" for n in names[:NAMED]) + more


def _span(machines: list[str]) -> str:
    if not machines:
        return ""
    return machines[0] if len(machines) == 1 else \
        f"{machines[0]}..{machines[-1]} ({len(machines)} machine types)"


def _by_patch(rows: Iterable[ReviewRow]) -> dict[str, list[ReviewRow]]:
    """Changed scenarios by the patch that introduced them (one finding each)."""
    out: dict[str, list[ReviewRow]] = {}
    for r in rows:
        out.setdefault(r.patch, []).append(r)
    return out


def _groups(rows: list[ReviewRow]) -> str:
    have = all_scenarios()
    names = [have[n].group if n in have else "?" for n in (r.key.split("@")[0] for r in rows)]
    return ", ".join(dict.fromkeys(names))


def _prop_finding(rv: Review, c: props.PropChange) -> SummaryLine:
    who = f" [{c.patch}]" if c.patch else ""
    unm = " (unmodelled: the model does not know it)" if not c.modelled else ""
    if c.kind == props.REMOVED:
        return SummaryLine(True, f"property {c.name} removed{who}: command lines that set it fail")
    older = [m for m in props.older_types(rv.patched) if rv.base.offers(m)]
    kept, broken = c.kept(older)
    head = (f"new property {c.name}, default {c.patched_default}{unm}" if c.kind == props.ADDED
            else f"{c.name}: default {c.base_default} -> {c.patched_default}")
    if c.kind == props.ADDED and not c.explains:
        return SummaryLine(False, f"{head}{who}: no scenario sees a difference")
    effect = (f"; changes {len(c.explains)} scenarios, {c.prop}={c.base_value} behaves as "
              "base" if c.explains else "")
    if broken:
        return SummaryLine(True, f"{head}{who}{effect}; NO COMPAT ENTRY: {_span(broken)} realise "
                       f"{c.patched.get(broken[0])}, base behaved as "
                       f"{c.old_value(broken[0])} there")
    return SummaryLine(False, f"{head}{who}{effect}; older machine types keep "
                   f"{c.old_value(kept[0]) if kept else '?'} through a compat entry"
                   f" ({_span(kept)})")


def _behaviour(fs: list[ReviewFinding], number: dict[str, int]) -> SummaryLine:
    """One change (findings of one what, or wrong data, and one patch) as a
    summary line."""
    f = fs[0]
    who = f" [{f.patch}]" if f.patch else ""
    refs = " ".join(f"[{n}]" for n in sorted(number[g.signature] for g in fs))
    if not f.runs:  # benchmarks' own checks
        title = f.title() if len(fs) == 1 else _title_of(fs)
        repro = f"; reproducer: {f.reproducers[0]}" if f.reproducers else ""
        return SummaryLine(True, f"{f.harm}: {title}{who}{repro}; decoded: {refs}")
    keys = list(dict.fromkeys(k for g in fs for k, _ in g.runs))
    firsts = len({k for g in fs for k, d in g.runs if d.first})
    later = len(keys) - firsts
    order = (f"the first difference in {firsts}" if firsts else "") + (
        ", " if firsts and later else "") + (f"after earlier ones in {later}" if later else "")
    title = f.title() if len(fs) == 1 else _title_of(fs)
    words = Counter(g.model for g in fs for _ in g.runs).most_common()
    model = words[0][0] + ("" if len(words) == 1 else " (in most of its runs)")
    return SummaryLine(True, f"{f.harm}: {title}{who}: {len(keys)} run"
                   f"{'s' if len(keys) != 1 else ''} ({_names_of(keys)}), {order}; {model}; "
                   f"decoded: {refs}")


def _title_of(fs: list[ReviewFinding]) -> str:
    """Several findings of one change: each what under its SD commands, then
    the benchmarks whose own check failed."""
    by: dict[str, list[str]] = {}
    for g in fs:
        if g.runs:
            what, command = g.signature.split(" | ")[:2]
            by.setdefault(what, []).append(command)
    parts = []
    for what, commands in by.items():
        more = f" and {len(commands) - 3} more commands" if len(commands) > 3 else ""
        parts.append(f"{signature_text(what, BASE_PATCHED)} in {', '.join(commands[:3])}{more}")
    parts += [g.title() for g in fs if not g.runs]
    return "; ".join(parts)


def _names_of(keys: list[str]) -> str:
    names = list(dict.fromkeys(k.split("@")[0] for k in keys))
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return ", ".join(f"`{n}`" for n in names[:NAMED]) + more


def findings(rv: Review) -> list[SummaryLine]:
    """Problems first (each distinct behaviour change, most harmful first),
    then intended changes; one line each."""
    number = {f.signature: i for i, f in enumerate(rv.findings, 1)}
    out = [_behaviour(fs, number) for fs in findings_.changes(rv.findings)]
    covered = {k for f in rv.findings for k, _ in f.runs}
    rest = (r for r in rv.rows if r.category == classify.CHANGED and r.key not in covered)
    for patch, rows in _by_patch(rest).items():
        first = rows[0]
        why = first.direct.reason if first.direct is not None else (
            first.patched.reason if first.patched else "")
        where = first.direct.lines[0].strip() if first.direct and first.direct.lines else ""
        out.append(SummaryLine(True, f"changed behaviour in {len(rows)} scenario run"
                           f"{'s' if len(rows) > 1 else ''} ({_groups(rows)}: {_names(rows)})"
                           + (f" [{patch}]" if patch else "") + f": {why}"
                           + (f", {where}" if where else "") + f"; {first.note}"))
    out += [_prop_finding(rv, c) for c in rv.props]
    for s in rv.speed:
        sp = s.speedup()
        if s.status_differs:  # a guest integrity check the builds answer differently
            out.append(SummaryLine(True, f"guest benchmark: {s.describe()}"))
            continue
        if s.error or s.note:  # the bench's own check failed: a finding says why
            continue
        if sp is not None and not s.within_noise:
            few = "" if s.conclusive else (
                f" ({len(s.ratios)} rounds, not each beyond noise or fewer than "
                f"{speed.MIN_ROUNDS}: not called a problem)")
            out.append(SummaryLine(sp < 1 and s.conclusive, f"speed: {s.describe()}{few}"))
    fixed = [r for r in rv.rows if r.category == classify.FIXED]
    if fixed:
        out.append(SummaryLine(False, f"fixed: {_names(fixed)} diverged from the model on base, "
                           "agree on patched"))
    out.sort(key=lambda f: not f.problem)
    return out


def _decoded(i: int, f: ReviewFinding, md: bool) -> list[str]:
    """SummaryLine ``i``: the runs behind it, its shortest run decoded, the reproducers."""
    lines = [f"[{i}] {f.harm}: {f.title()}" + (f" [{f.patch}]" if f.patch else "")]
    ex = f.example()
    if ex is None:
        return lines + [f"  reproducer: {r}" for r in f.reproducers]
    name, d = ex
    later = len(f.runs) - f.first_in
    lines.append(f"  in {len(f.runs)} run{'s' if len(f.runs) != 1 else ''}: the first "
                 f"difference in {f.first_in}, after earlier ones in {later}; {f.model}")
    how = "the run's first difference" if d.first else "after earlier differences of that run"
    lines.append(f"  shortest: `{name}` ({d.run_steps} steps), {how}")
    body = [d.reason, *d.lines[:DETAIL]]
    if d.repeats:
        body.append(f"(seen again {d.repeats} time{'s' if d.repeats != 1 else ''} later in "
                    "that run: not a new finding)")
    lines += (["  ```"] + [f"  {x}" for x in body] + ["  ```"]) if md else \
        [f"    {x}" for x in body]
    if d.traces[0]:
        lines.append(f"  reproducers: base `{d.traces[0]}`, patched `{d.traces[1]}`" if md
                     else f"  reproducers: base {d.traces[0]}, patched {d.traces[1]}")
    others = [k for k in dict.fromkeys(k for k, _ in f.runs) if k != name]
    if others:
        lines.append(f"  also in: {', '.join(others[:NAMED])}"
                     + (f" and {len(others) - NAMED} more" if len(others) > NAMED else ""))
    return lines


def _changed_lines(rv: Review) -> list[str]:
    """Each changed run, one line: its first difference and how many more."""
    out = []
    for r in rv.rows:
        if r.category not in (classify.CHANGED, classify.UNSTABLE):
            continue
        d = r.direct
        more = len(d.differences) - 1 if d is not None and d.differences else 0
        text = d.reason if d is not None and r.category == classify.CHANGED else \
            f"{r.note}: {r.patched.reason if r.patched else ''}"
        out.append(f"- `{r.key}`" + (f" [{r.patch}]" if r.patch else "") + f": {text}"
                   + (f"; {more} more distinct" if more and "more distinct" not in text else ""))
    return out


def render(rv: Review, md: bool = False) -> str:
    """The report, as text or Markdown."""
    def h(text: str) -> str:
        return f"**{text}**" if md else f"== {text}"

    fs = findings(rv)
    bad = [f for f in fs if f.problem]
    out = [f"### sdqtest review: {rv.title}" if md else f"sdqtest review: {rv.title}", ""]
    out.append(h(f"Findings: {len(bad)} problem{'s' if len(bad) != 1 else ''}, "
                 f"{len(fs) - len(bad)} other change{'s' if len(fs) - len(bad) != 1 else ''}"))
    out += [f"{i}. {'PROBLEM' if f.problem else 'change'}: {f.text}"
            for i, f in enumerate(fs, 1)] or ["nothing differs between base and patched"]
    if rv.findings:
        out += ["", h("Findings decoded (each distinct difference, base against patched)")]
        for i, f in enumerate(rv.findings, 1):
            out += _decoded(i, f, md)
    changed = _changed_lines(rv)
    if changed:
        out += ["", h("Changed scenario runs (first difference each)")] + changed
    intended = [r for r in rv.rows if r.category == classify.INTENDED]
    if intended:
        out += ["", h("Explained by a new default"), f"{_names(intended)}: "
                f"{intended[0].note}"]
    if rv.props:
        out += ["", h("Properties (QMP, per machine type)")]
        for c in rv.props:
            older = [m for m in props.older_types(rv.patched) if rv.base.offers(m)]
            kept, broken = c.kept(older)
            newest = props.newest(rv.patched)
            out.append(f"- {c.name}: {c.kind}; class default base {c.base_default}, patched "
                       f"{c.patched_default}; {newest} realises {c.patched.get(newest)}; "
                       f"older types: {len(kept)} keep the old value, {len(broken)} do not")
    if rv.speed:
        out += ["", h(f"Speed (interleaved rounds, load average {rv.load})")]
        out += [f"- {s.describe()}" for s in rv.speed]
    out += ["", h("Untested hunks")]
    out.append("not measured (run with --coverage: a gcov build of the patched tree)"
               if rv.untested is None else
               ("every changed line gcov counts (hw/sd) was executed" if not rv.untested else
                "\n".join(f"- {u}" for u in rv.untested)))
    n = classify.counts(rv.rows)
    out += ["", h("Everything else"),
            ", ".join(f"{v} {k}" for k, v in n.items() if k not in (classify.CHANGED,)) +
            f" (of {len(rv.rows)} scenario runs)"]
    both = [r for r in rv.rows if r.category == classify.BOTH]
    if both:
        out.append(f"both diverge from the model alike (the model's problem, not the patch's):"
                   f" {_names(both)}")
    out += [f"note: {x}" for x in rv.notes]
    out.append("times: " + ", ".join(f"{k} {v:.0f} s" for k, v in rv.times.items())
               + f"; total {sum(rv.times.values()):.0f} s")
    return "\n".join(out) + "\n"


#: Version of ``report.json``'s shape (``harness/schemas/review.schema.json``).
SCHEMA_VERSION = 1


def to_json(rv: Review) -> dict[str, Any]:
    """``report.json`` (and ``review --json``): the schema version, a summary
    (the exit status ``review`` gives, the problems and findings), then the
    report's parts."""
    problems = sum(f.problem for f in findings(rv))
    return {"schema_version": SCHEMA_VERSION, "command": "review",
            "summary": {"exit_status": 1 if problems else 0, "problems": problems,
                        "findings": len(findings(rv)),
                        "behaviour_findings": len(rv.findings),
                        "scenarios": len(rv.rows), "counts": classify.counts(rv.rows)},
            "title": rv.title, "base": str(rv.base.binary), "patched": str(rv.patched.binary),
            "patches": rv.patches,
            "findings": [{"problem": f.problem, "text": f.text} for f in findings(rv)],
            "behaviour_findings": [f.to_json() for f in rv.findings],
            "properties": [c.to_json() for c in rv.props],
            "scenarios": [r.to_json() for r in rv.rows],
            "counts": classify.counts(rv.rows),
            "speed": [s.to_json() for s in rv.speed], "load": rv.load,
            "untested": rv.untested, "times_s": {k: round(v, 1) for k, v in rv.times.items()},
            "notes": rv.notes}


def write(rv: Review, out_dir: Path) -> tuple[Path, Path, Path]:
    """``report.txt``, ``report.md`` and ``report.json`` in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = (out_dir / "report.txt", out_dir / "report.md", out_dir / "report.json")
    paths[0].write_text(render(rv))
    paths[1].write_text(render(rv, md=True))
    paths[2].write_text(json.dumps(to_json(rv), indent=1) + "\n")
    return paths
