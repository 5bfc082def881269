"""``sdqtest bugs``: the QEMU bugs found, their reproducers, C tests and fixes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.commands.common import document, json_option, machine_output, write_json
from harness.table import print_table


def register(sub: Any) -> None:
    """``sdqtest bugs``."""
    p = sub.add_parser(
        "bugs", help="the QEMU bugs found: list them, show them on builds, verify the C tests "
        "and fixes in a QEMU source tree",
        description="Without options: every qemu-bug entry of the ledger with its title, "
        "severity, affected versions (the ledger's), C test and fix. --qemu runs each bug's "
        "reproducer on each build and says present or absent. --qemu-src TREE --verify adds "
        "each bug's libqtest C test to TREE's tests/qtest, builds and runs it (it must fail), "
        "then applies each fix patch, rebuilds and runs the test again (it must pass) and "
        "the default check on the fixed build; TREE is restored byte for byte afterwards.",
        epilog="exit: 0 as expected; 1 a reproducer errored, a C test did not fail without "
        "its fix or did not pass with it, or the check on the fixed build was not clean")
    p.add_argument("bug", nargs="*", help="bugs by key, number or NNNN-slug (default: all)")
    p.add_argument("--qemu", action="append", metavar="B",
                   help="run the reproducers on build B (name or binary path; repeatable)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per qtest command")
    p.add_argument("--trace", action="store_true",
                   help="with --qemu: print each reproducer's qtest trace (replayable)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="with --qemu: what each reproducer saw")
    p.add_argument("--qemu-src", metavar="TREE", help="a QEMU source tree (for --verify)")
    p.add_argument("--verify", action="store_true",
                   help="build and run the C tests in --qemu-src, without and with the fixes "
                   "(with --series DIR: then the series applied patch by patch, built and "
                   "tested)")
    p.add_argument("--build-dir", metavar="D",
                   help="with --verify: TREE's build directory (default: sdqtest's own for "
                   "TREE, as 'sdqtest qemu build' makes it)")
    p.add_argument("--no-check", action="store_true",
                   help="with --verify: skip the default check on the fixed build")
    p.add_argument("--build-timeout", type=float, default=7200.0, metavar="S")
    json_option(p, "the bugs (with --qemu: each verdict on each build)")
    p.add_argument("--triage", action="store_true",
                   help="every ledger entry with its harm class and evidence")
    p.add_argument("--record", action="store_true",
                   help="with --qemu: write each verdict to bugs/seen.json (the builds that "
                   "have each bug, 'since' and 'fixed in')")
    p.add_argument("--series", metavar="DIR",
                   help="write the fixes as a git format-patch series against Debian's "
                   "11.1.1 source (--qemu-src, default the cache's) into DIR, with a cover "
                   "letter, and run the tree's scripts/checkpatch.pl on it")
    p.add_argument("--from", dest="author", metavar="'NAME <MAIL>'",
                   help="with --series: the patches' author (default: a placeholder saying "
                   "to fill it in)")
    p.add_argument("--signoff", action="store_true",
                   help="with --series and --from: add the author's Signed-off-by")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.bugs import catalog
    from harness.errors import UsageError

    bugs = catalog.select(args.bug)
    if args.series and not args.verify:
        return _series(bugs, args)
    if args.author or args.signoff:
        raise UsageError("--from and --signoff go with --series DIR")
    if args.verify or args.qemu_src:
        if not (args.verify and args.qemu_src):
            raise UsageError("--verify needs --qemu-src TREE (and --qemu-src needs --verify)")
        if args.json:
            raise UsageError("--json lists the bugs or their verdicts on builds (--qemu), "
                             "not --verify")
        from harness.bugs import verify

        return verify.verify(bugs, Path(args.qemu_src), build_dir=args.build_dir,
                             check=not args.no_check, timeout=args.build_timeout,
                             series_dir=Path(args.series) if args.series else None)
    if args.record and not args.qemu:
        raise UsageError("--record goes with --qemu B")
    if args.triage:
        _triage()
        return 0
    with machine_output(args) as stdout:
        outcomes: list[Any] = []
        rc = 0
        if args.qemu:
            rc, outcomes = _on_builds(bugs, args)
        else:
            _list(bugs)
        if args.json:
            write_json(bugs_json(bugs, outcomes, rc), args.json, stdout)
    return rc



def bugs_json(bugs: list[Any], outcomes: list[Any], rc: int) -> dict[str, Any]:
    """``bugs --json``: each bug of the catalogue, and each verdict on a build."""
    from harness.bugs import run as bug_run

    return document(
        "bugs", {"exit_status": rc, "bugs": len(bugs), "verdicts": len(outcomes),
                 "errors": sum(o.verdict is bug_run.BugVerdict.ERROR for o in outcomes),
                 "against_ledger": sum(o.agrees is False for o in outcomes)},
        bugs=[{"name": b.name, "key": b.key, "title": b.title, "severity": b.severity.value,
               "affected": versions_text(b.key), "c_test": bool(b.c_test),
               "fix": bool(b.patch), "seen_on": list(b.entry.versions.confirmed)}
              for b in bugs],
        verdicts=[{"bug": o.bug.name, "build": o.build, "version": o.version,
                   "verdict": o.verdict.value, "ledger_says_present": o.expected,
                   "agrees_with_ledger": o.agrees, "detail": o.detail,
                   "seconds": round(o.seconds, 3)} for o in outcomes])


def _series(bugs: list[Any], args: argparse.Namespace) -> int:
    """Write the series, then checkpatch it (1 when checkpatch finds errors)."""
    from harness.bugs import series
    from harness.provision import source

    src = Path(args.qemu_src) if args.qemu_src else source.release_dir("11.1.1") / "src"
    if not (src / "scripts/checkpatch.pl").is_file():
        from harness.errors import UsageError

        raise UsageError(f"{src} is not a QEMU source tree (no scripts/checkpatch.pl): "
                         "sdqtest qemu build 11.1.1 --fetch-only unpacks Debian's")
    out = Path(args.series)
    patches = series.write(bugs, src, out, author=args.author, signoff=args.signoff)
    print(f"wrote {len(patches)} files to {out}:")
    for p in patches:
        print(f"  {p.name}")
    errors, text = series.checkpatch(src, patches, signed=args.signoff)
    (out / "checkpatch.txt").write_text(text + "\n")
    print(f"\nscripts/checkpatch.pl{'' if args.signoff else ' --no-signoff'}: "
          f"{errors} errors (its output: {out / 'checkpatch.txt'})")
    if not args.signoff:
        print("no Signed-off-by: the submitter adds it (--from 'Name <mail>' --signoff)")
    return 1 if errors else 0


def versions_text(key: str) -> str:
    """The ledger's affected versions of ``key``: ``every version``, ``QEMU >= 9.1``."""
    from harness.ledger import LEDGER

    return LEDGER[key].versions.describe()


def _list(bugs: list[Any]) -> None:
    from harness.bugs import catalog, seen

    table = seen.load()
    rows = []
    for b in bugs:
        s = table.get(b.name)
        fixed = s.fixed_in() if s else None
        cell = (f"fixed in {fixed}" if fixed else s.cell()) if s else "-"
        if not fixed and b.entry.versions.fixed:
            cell = f"fixed in {b.entry.versions.fixed} (ledger)" + (
                "" if cell == "-" else f"; {cell}")
        rows.append([b.name, b.severity.value, versions_text(b.key), cell,
                     "yes" if b.c_test else "-", "yes" if b.patch else "-"])
    print_table(["bug (data/tests/BUG.c, data/BUG.patch)", "class", "affected (ledger)",
                 "on the builds (bugs/seen.json)", "C test", "fix"], rows)
    print()
    for b in bugs:
        print(f"{b.name}  {b.key}: {b.title}")
        print(f"    evidence: {b.triage.evidence}")
        if b.note:
            print(f"    {b.note}")
    left = catalog.unlisted()
    if left:
        print("\nQEMU bugs of the ledger without a catalog row: "
              + ", ".join(e.key for e in left))
    print("\nevery ledger entry's class: sdqtest bugs --triage; show them: sdqtest bugs "
          "--qemu B; verify: sdqtest bugs --qemu-src TREE --verify; the series: sdqtest bugs "
          "--series DIR")


def _triage() -> None:
    """Every ledger entry, worst class first, with its evidence."""
    from harness.bugs.triage import TRIAGE, Harm
    from harness.ledger import LEDGER

    order = list(Harm)
    keys = sorted(LEDGER, key=lambda k: order.index(TRIAGE[k].harm))
    print_table(["ledger entry", "scope", "class", "spec"],
                [[k, LEDGER[k].scope.value, TRIAGE[k].harm.value, LEDGER[k].spec or "-"]
                 for k in keys])
    print()
    for k in keys:
        t = TRIAGE[k]
        print(f"{k} [{t.harm.value}]" + (f" (filed under {t.bug})" if t.bug else ""))
        print(f"    {t.evidence}")


def _on_builds(bugs: list[Any], args: argparse.Namespace) -> tuple[int, list[Any]]:
    from harness.bugs import run
    from harness.qemu.selection import select_builds

    builds = select_builds(args.qemu, install_missing=False)
    outcomes = {(b.key, q.name): run.run(b, q, timeout=args.timeout)
                for b in bugs for q in builds}
    head = ["bug", *(f"{q.name} ({q.version})" for q in builds)]
    rows = []
    for b in bugs:
        cells = []
        for q in builds:
            o = outcomes[(b.key, q.name)]
            mark = "" if o.agrees is not False else (
                " (ledger: present)" if o.expected else " (ledger: absent)")
            cells.append(o.verdict.value + mark)
        rows.append([b.name, *cells])
    print_table(head, rows)
    if args.verbose or args.trace:
        for o in outcomes.values():
            print(f"\n{o.bug.name} on {o.build}: {o.verdict.value} ({o.seconds:.1f} s): "
                  f"{o.detail}")
            if args.trace and o.trace:
                from harness.machine import reproducer_header

                print(reproducer_header(o.bug.machine(), f"{o.bug.key}: {o.bug.title}")
                      + "\n".join(o.trace))
    against = [o for o in outcomes.values() if o.agrees is False]
    if against:
        print(f"\n{len(against)} verdicts differ from the ledger's versions: a build with "
              "the fix (absent where the ledger says present) or a ledger entry to correct")
    if args.record:
        import datetime

        from harness.bugs import seen

        seen.record({(o.bug.name, o.version): o.verdict.value for o in outcomes.values()
                     if o.verdict is not run.BugVerdict.ERROR and o.bug.reproduce is not None},
                    datetime.date.today().isoformat())
        print(f"\nrecorded in {seen.SEEN_FILE}")
    errors = [o for o in outcomes.values() if o.verdict is run.BugVerdict.ERROR]
    for o in errors:
        print(f"error: {o.bug.name} on {o.build}: {o.detail}")
    return (1 if errors else 0), list(outcomes.values())
