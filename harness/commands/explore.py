"""``sdqtest explore``: the model-driven search and the model-coverage report."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

#: The seed and bounds the committed corpus was made with (its file says so too).
SEED = 1
COUNT = 300
PLATEAU = 150
#: Most inputs the corpus keeps (greedy set cover, the most useful first):
#: what the check can replay on three builds within its time budget.
LIMIT = 80


def register(sub: Any) -> None:
    """``sdqtest explore``."""
    ex = sub.add_parser(
        "explore", help="the model drives the search: grow a covering corpus on the model "
        "alone, or print the model's branch coverage",
        description="Runs operation sequences on the model only (no QEMU), keeps each that "
        "takes a model branch or reaches an abstract state no other did, shrinks it, and "
        "stops after --count inputs or --plateau inputs in a row without news: the corpus is "
        "a function of the seed and the model's code. --write stores it where the check's "
        "explore group replays it on QEMU in lockstep.",
        epilog="exit: 0 done; 1 --status: the corpus is out of date")
    ex.add_argument("--seed", type=int, default=SEED)
    ex.add_argument("--count", type=int, default=COUNT, metavar="N",
                    help=f"inputs at most (default {COUNT})")
    ex.add_argument("--plateau", type=int, default=PLATEAU, metavar="N",
                    help=f"stop after N inputs in a row brought nothing (default {PLATEAU})")
    ex.add_argument("--limit", type=int, default=LIMIT, metavar="N",
                    help=f"keep at most N inputs, the most useful first (default {LIMIT})")
    ex.add_argument("--write", nargs="?", const="", metavar="FILE",
                    help="write the corpus (default: the explore group's file)")
    ex.add_argument("--report", action="store_true",
                    help="print the model's branch coverage: scenario library, explore "
                    "corpus, never taken (runs the model only)")
    ex.add_argument("--qemu", action="append", metavar="B",
                    help="with --report: run the model with these builds' profiles (their "
                    "version-dependent rules; repeatable; default: the builds the default "
                    "check selects)")
    ex.add_argument("--brief", action="store_true",
                    help="with --report: per file, and only functions with untaken branches")
    ex.add_argument("--status", action="store_true",
                    help="say whether the committed corpus matches the model's code")
    ex.add_argument("--bench", type=int, nargs="?", const=40, metavar="N",
                    help="model-only speed: N inputs untraced and traced, side by side")
    ex.add_argument("-v", "--verbose", action="store_true")
    ex.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.explore import search
    from harness.scenarios import explore as group

    if args.status:
        data = group.load()
        digest = search.model_digest()
        same = data.get("model_digest") == digest
        print(f"corpus {group.CORPUS}: {len(data['inputs'])} inputs, seed {data.get('seed')}, "
              f"model {data.get('model_digest')}; model now {digest}: "
              + ("up to date" if same else "OUT OF DATE (sdqtest explore --write)"))
        return 0 if same else 1
    if args.report:
        return _report(args.brief, args.qemu)
    if args.bench:
        from harness.explore import bench

        print("\n".join(bench.bench(args.bench, args.seed)))
        return 0
    from harness.commands.common import show_progress
    from harness.explore import report

    say = (lambda s: print(s, flush=True)) if args.verbose else show_progress
    found, seen, stats = search.search(args.seed, args.count, args.plateau, say=say)
    show_progress("")
    library = report.library_arcs()
    kept = search.cover(found, args.limit, known=library)
    covered = set().union(*(e.features for e in kept)) if kept else set()
    arcs = search.arc_count(seen)
    print(f"{stats.inputs} inputs ({stats.model_runs} model runs incl. shrinking) in "
          f"{stats.seconds:.1f} s: {stats.runs_per_second:.1f} model runs/s; kept {len(found)}, "
          f"{len(kept)} after set cover (limit {args.limit}: "
          f"{len(covered)} of {len(seen)} features; the cover leaves out the "
          f"{len(library & seen)} arcs the scenario library takes), "
          f"{arcs} model arcs, {len(seen) - arcs} abstract states; stopped by {stats.stopped}")
    if stats.not_kept:
        print("not kept: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.not_kept.items())))
    if args.write is not None:
        path = Path(args.write) if args.write else group.CORPUS
        data = {"seed": args.seed, "count": args.count, "plateau": args.plateau,
                "limit": args.limit,
                "model_digest": search.model_digest(),
                "inputs": [_entry(n, e) for n, e in enumerate(kept, 1)]}
        path.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        print(f"wrote {len(kept)} inputs to {path}")
    return 0


def _entry(n: int, e: Any) -> dict[str, Any]:
    """One corpus input as stored: its machine's properties when they are
    not the default machine's."""
    from harness.explore.search import VARIANTS

    out: dict[str, Any] = {"name": f"explore-{n:03d}", "index": e.index, "new": e.new}
    sdhci, card, _ = VARIANTS[e.variant]
    if e.variant != "default":
        out["variant"] = e.variant
        out["sdhci"], out["sd_card"] = sdhci, card
    out["ops"] = e.ops
    return out


def _report(brief: bool, specs: list[str] | None = None) -> int:
    from harness.explore import report

    t0 = time.monotonic()
    data = report.measure_fresh(specs or [])
    regions = report.combine(data["scenarios"], data["explore"])
    print(report.render(regions, detail=not brief))
    from harness.explore import reach

    print("\n" + reach.render(set().union(*report.corpus_reach().values())))
    print(f"\n{data['library']} scenarios and {data['corpus']} explored inputs on the model "
          f"alone, build profile(s) {', '.join(data['profiles'])} (default: the default "
          f"check's builds), in {time.monotonic() - t0:.1f} s")
    for name, why in sorted(data["errors"].items()):
        print(f"  {name} raised on the model alone (its branches are not counted): {why}",
              file=sys.stderr)
    return 0
