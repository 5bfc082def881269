"""The check's report: a build x group table, the divergences, the known
differences met (quirks, spec deviations, QEMU bugs apart)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, TextIO

from harness.check import runner
from harness.check.quirks import to_json as quirk_json
from harness.check.runner import Result
from harness.check.scoreboard import Finding, findings
from harness.ledger import KnownDifference, Scope, entry
from harness.table import print_table

_ORDER = (runner.DIVERGE, runner.SPEC_MISS, runner.CRASH, runner.ERROR, runner.QUIRK,
          runner.CANNOT_RUN, runner.SKIP, runner.AGREE)
_LOUD = (runner.DIVERGE, runner.SPEC_MISS, runner.CRASH, runner.ERROR)


def cell(results: list[Result]) -> str:
    """``12 agree`` or ``10 agree, 1 DIVERGE, 1 skipped``."""
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        counts[r.status] += 1
    parts = []
    for st in reversed(_ORDER):
        if counts.get(st):
            label = st.upper() if st in _LOUD else st
            parts.append(f"{counts[st]} {label}")
    return ", ".join(parts)


def table(results: list[Result]) -> tuple[list[str], list[list[str]]]:
    builds = list(dict.fromkeys(r.build for r in results))
    groups = list(dict.fromkeys(r.group for r in results))
    by: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        by[(r.group, r.build)].append(r)
    rows = [[g] + [cell(by[(g, b)]) or "-" for b in builds] for g in groups]
    return ["group"] + builds, rows


def print_report(results: list[Result], out: TextIO, *, verbose: bool = False) -> None:
    head, rows = table(results)
    print_table(head, rows, out)
    bad = [r for r in results if not r.ok]
    found = run_findings(results)
    _print_findings(found, out, verbose)
    _print_bad([r for r in bad if not r.differences], out, verbose)
    _print_quirks(results, out)
    _print_known(results, out)
    _print_qemu_bugs(results, out)
    _print_fixed(results, out)
    partial = [r for r in results if r.not_compared]
    if partial:
        print("\ncard image not compared completely:", file=out)
        for r in partial:
            print(f"  [{r.build} {r.machine}] {r.scenario}: {r.not_compared}", file=out)
    _print_cannot_run(results, out)
    skipped = [r for r in results if r.status == runner.SKIP]
    if skipped:
        print("\nskipped, by reason:", file=out)
        for line in skip_reasons(skipped):
            print(f"  {line}", file=out)
    if skipped and verbose:
        print("\nskipped:", file=out)
        for r in skipped:
            print(f"  [{r.build} {r.machine}] {r.scenario}: {r.reason}", file=out)
    adopted = [(r, a) for r in results for a in r.adoptions()]
    if adopted and verbose:
        print("\nvalues adopted from QEMU (random draws the model cannot predict):", file=out)
        for r, (step, what, value) in adopted:
            print(f"  [{r.build} {r.machine}] {r.scenario} step {step}: {what} {value:#06x}",
                  file=out)
    print("\n" + summary_line(results, verbose=verbose), file=out)


def counts(results: list[Result]) -> dict[str, int]:
    """The figures of the report's last line (and of the JSON summary)."""
    bad = [r for r in results if not r.ok]
    skipped = sum(r.status == runner.SKIP for r in results)
    cannot = sum(r.status == runner.CANNOT_RUN for r in results)
    return {"runs": len(results), "agreed": len(results) - len(bad) - skipped - cannot,
            "unexplained": len(bad), "distinct_divergences": len(run_findings(results)),
            "skipped": skipped, "cannot_run": cannot,
            "internal_errors": sum(r.internal for r in results),
            "adopted": sum(len(r.adoptions()) for r in results)}


def summary_line(results: list[Result], *, verbose: bool = False) -> str:
    """``2742 agreed, 0 unexplained, 12 skipped (...), 3 values adopted from QEMU``."""
    c = counts(results)
    n = c["distinct_divergences"]
    distinct = f" ({n} distinct divergence{'s' if n != 1 else ''})" if n else ""
    internal = (f" ({c['internal_errors']} internal error{'s' if c['internal_errors'] != 1 else ''}"
                " of sdqtest)" if c["internal_errors"] else "")
    return (f"{c['agreed']} agreed, {c['unexplained']} unexplained{distinct}{internal}, "
            f"{c['skipped']} skipped"
            + (" (reasons above; --verbose lists each)" if c["skipped"] else "")
            + (f", {c['cannot_run']} cannot run on this build (above)" if c["cannot_run"]
               else "")
            + f", {c['adopted']} values adopted from QEMU"
            + (" (--verbose lists them)" if c["adopted"] and not verbose else ""))


def _print_cannot_run(results: list[Result], out: TextIO) -> None:
    """Each machine a build cannot start, once, with QEMU's words and its runs."""
    by: dict[tuple[str, str, str], int] = defaultdict(int)
    for r in results:
        if r.status == runner.CANNOT_RUN:
            by[(r.build, r.machine, r.reason)] += 1
    if by:
        print("\nnot run, the build cannot start the machine (counted apart, not "
              "unexplained):", file=out)
    for (build, machine, why), n in by.items():
        print(f"  [{build} {machine}] {n} run{'s' if n != 1 else ''}: {why}", file=out)


def run_name(r: Result) -> str:
    """``[11.1 q35] pio-read-7``: one run, as the report names it."""
    return f"[{r.build} {r.machine}] {r.scenario}"


def run_findings(results: Iterable[Result]) -> list[Finding]:
    """The distinct divergences of ``results``, most harmful first."""
    return findings((run_name(r), r.differences) for r in results if r.differences)


def _print_findings(found: list[Finding], out: TextIO, verbose: bool) -> None:
    """Each distinct divergence once: the runs behind it, its shortest
    example decoded, a reproducer per build."""
    if not found:
        return
    runs = len({n for f in found for n, _ in f.runs})
    print(f"\ndistinct divergences: {len(found)} (in {runs} run{'s' if runs != 1 else ''})",
          file=out)
    _print_whats(found, out)
    for i, f in enumerate(found, 1):
        name, ex = f.example()
        later = len(f.runs) - f.first_in
        print(f"\n[{i}] {f.harm}: {f.signature}", file=out)
        print(f"  in {len(f.runs)} run{'s' if len(f.runs) != 1 else ''}: the first "
              f"difference in {f.first_in}, after earlier ones in {later}", file=out)
        for line in real_drivers(f):
            print(f"  {line}", file=out)
        how = "" if ex.first else " (earlier differences adopted by the model)"
        print(f"  shortest: {name} at step {ex.divergence.step.index}{how}", file=out)
        for line in ex.divergence.render().splitlines():
            print(f"    {line}", file=out)
        if ex.repeats:
            print(f"    (repeated {ex.repeats} times later in that run)", file=out)
        for build, (n, d) in sorted(_per_build(f).items()):
            if d.divergence.trace_file and n != name:
                print(f"  reproducer on {build}: {d.divergence.trace_file}", file=out)
        if verbose:
            for n, d in f.runs:
                print(f"    {n} step {d.divergence.step.index}", file=out)
        elif len(f.runs) > 1:
            others = sorted({n for n, _ in f.runs} - {name})
            print(f"  also in: {', '.join(others[:4])}"
                  + (f" and {len(others) - 4} more (--verbose)" if len(others) > 4 else ""),
                  file=out)


def real_drivers(f: Finding) -> list[str]:
    """``a real driver meets this: ...``, one line per recorded driver whose
    replay (the drivers group, :mod:`harness.scenarios.drivers`) shows ``f``."""
    from harness.scenarios import REGISTRY
    from harness.scenarios.drivers import GROUP

    out: list[str] = []
    for n, _ in f.runs:
        sc = REGISTRY.get(n.split("] ", 1)[-1])
        if sc is not None and sc.group == GROUP:
            line = f"a real driver meets this: {sc.params['driver']} (recording {sc.name})"
            if line not in out:
                out.append(line)
    return out


def _print_whats(found: list[Finding], out: TextIO) -> None:
    """The findings by what differed, under whatever commands and card
    states (one status bit at the end of every DMA transfer is one line
    here, a signature per command below), when that says it shorter."""
    by: dict[str, list[Finding]] = {}
    for f in found:
        by.setdefault(f.signature.split(" | ", 1)[0], []).append(f)
    if len(by) == len(found):
        return
    width = max(len(w) for w in by)
    for what, fs in by.items():
        n = len({name for f in fs for name, _ in f.runs})
        numbers = ", ".join(f"[{found.index(f) + 1}]" for f in fs)
        print(f"  {fs[0].harm:<8}  {what:<{width}}  in {n} run{'s' if n != 1 else ''}: "
              f"{numbers}", file=out)


def _per_build(f: Finding) -> dict[str, tuple[str, Any]]:
    """The shortest run showing ``f`` on each build (by the run's name)."""
    out: dict[str, tuple[str, Any]] = {}
    for n, d in sorted(f.runs, key=lambda nd: (not nd[1].first, nd[1].divergence.step.index)):
        out.setdefault(n[1:].split(" ", 1)[0], (n, d))
    return out


def _print_bad(bad: list[Result], out: TextIO, verbose: bool) -> None:
    """Each run that failed: its divergence, its misses or its reason."""
    if bad:
        print(file=out)
    for r in bad:
        print(f"[{r.build} {r.machine}] {r.scenario}: {r.status.upper()}", file=out)
        if r.divergence is not None:
            for line in r.divergence.render().splitlines():
                print(f"  {line}", file=out)
        elif r.status == runner.SPEC_MISS:
            print("  model and QEMU agree, but contradict the image recipe or the "
                  "specification, and no listed deviation explains it:", file=out)
            for m in r.spec_misses:
                print(f"    {m}", file=out)
        else:
            print(f"  {r.reason}", file=out)
        if verbose:
            for n in r.notes:
                print(f"  {n}", file=out)


def _print_quirks(results: list[Result], out: TextIO) -> None:
    applied = _unique(q for r in results for q in r.quirks())
    stale = _unique(q for r in results for q in r.stale())
    if applied:
        print("\nquirks applied (known differences, with reasons):", file=out)
        for q in applied:
            print(f"  {q.key} [{q.builds}]: {q.qemu} -- {q.why} ({q.change})", file=out)
    if stale:
        print("\nquirks that no longer occur (stale: remove or narrow them):", file=out)
        for q in stale:
            print(f"  {q.key} [{q.builds}]: {q.qemu}", file=out)


def _print_known(results: list[Result], out: TextIO) -> None:
    """The misses a spec deviation explains (the QEMU bugs have their own list)."""
    known = [(r, m, k) for r in results for m, k in r.known_misses()
             if entry(k).scope is not Scope.QEMU_BUG]
    if known:
        print("\nexpectations QEMU does not meet, explained by listed deviations "
              "(model and QEMU agree; see --strict):", file=out)
        for r, m, k in known:
            d = entry(k)
            print(f"  [{r.build}] {r.scenario}: {m} -- {k} ({d.spec}: {d.rule})", file=out)


def qemu_bugs_met(results: list[Result]) -> dict[str, list[Result]]:
    """Ledger key -> the runs that met it, for every ``qemu-bug`` entry met."""
    out: dict[str, list[Result]] = {}
    for r in results:
        for k in r.known_met():
            if entry(k).scope is Scope.QEMU_BUG:
                out.setdefault(k, []).append(r)
    return out


def _print_qemu_bugs(results: list[Result], out: TextIO) -> None:
    """The QEMU bugs the runs met, apart from the spec deviations: none of
    them fails the check."""
    met = qemu_bugs_met(results)
    if not met:
        return
    print(f"\nQEMU bugs met: {len(met)} (sdqtest bugs for details)", file=out)
    for k, rs in met.items():
        builds = ", ".join(dict.fromkeys(r.build for r in rs))
        scenarios = list(dict.fromkeys(r.scenario for r in rs))
        more = f" and {len(scenarios) - 3} more" if len(scenarios) > 3 else ""
        print(f"  {k} [{builds}]: {entry(k).qemu}\n    met in {', '.join(scenarios[:3])}{more}",
              file=out)


def _print_fixed(results: list[Result], out: TextIO) -> None:
    """The qemu-bug entries a build did not have (:mod:`harness.check.fixed`)."""
    from harness.check.fixed import NOTE

    fixed = [(r, n) for r in results for n in r.notes if n.startswith(NOTE)]
    if fixed:
        print("\nqemu-bug entries this build does not have (the model followed their rule "
              "and agreed; sdqtest bugs --qemu B shows them):", file=out)
        for r, n in fixed:
            print(f"  [{r.build}] {r.scenario}: {n[len(NOTE) + 2:]}", file=out)


def skip_reasons(skipped: list[Result]) -> list[str]:
    """One line per distinct skip reason: ``3 x REASON (7.2, 11.1)``, most
    frequent first."""
    by: dict[str, list[Result]] = defaultdict(list)
    for r in skipped:
        by[r.reason or "(no reason given)"].append(r)
    lines = []
    for why, rs in sorted(by.items(), key=lambda kv: -len(kv[1])):
        builds = ", ".join(dict.fromkeys(r.build for r in rs))
        lines.append(f"{len(rs)} x {why} ({builds})")
    return lines


def _unique(qs: Iterable[KnownDifference]) -> list[KnownDifference]:
    seen: dict[str, KnownDifference] = {}
    for q in qs:
        seen.setdefault(q.key, q)
    return list(seen.values())


#: Version of the JSON report's shape (``harness/schemas/check.schema.json``):
#: 3 gave each result's known differences as one object, ``known`` (ledger
#: key -> how the run met it: :mod:`harness.check.known`), in place of the
#: lists ``quirks``, ``stale_quirks``, ``known_deviation_misses`` and
#: ``adoptions``; 2 added ``schema_version``, ``command``, ``summary`` and
#: each result's ``internal_error`` (1: the shape before them).
SCHEMA_VERSION = 3


def to_json(results: list[Result], builds: list[dict[str, Any]],
            summary: dict[str, Any]) -> dict[str, Any]:
    """The JSON report: the schema version, the check's summary (its verdict
    and figures: :func:`counts`, and ``summary``'s own keys), the builds,
    every result, the quirks and the distinct divergences."""
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "check",
        "summary": {**counts(results), **summary},
        "builds": builds,
        "results": [r.to_json() for r in results],
        "quirks_applied": [quirk_json(q) for q in _unique(q for r in results for q in r.quirks())],
        "quirks_stale": [quirk_json(q) for q in _unique(q for r in results for q in r.stale())],
        "findings": [f.to_json() for f in run_findings(results)],
    }

