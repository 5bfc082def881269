"""``sdqtest qemu build VERSION`` and the source builds' rows of ``qemu list``.

The fetching and building are :mod:`harness.provision.source`'s; this module
turns the command-line options into :class:`~harness.provision.source.Wanted`
builds and probes what is in the cache, as every ``--qemu`` name does.
"""

from __future__ import annotations

import argparse
import re
import time

from harness.errors import UsageError
from harness.provision import source
from harness.qemu import builds
from harness.table import print_table


def names_releases(spec: str) -> bool:
    """``spec`` is ``all`` or a version (a release's, or an unknown one: an
    error naming the releases), not a tree's path."""
    return spec == "all" or re.fullmatch(r"\d+(\.\d+)+", spec) is not None


def run_build(args: argparse.Namespace) -> int:
    """Fetch and build the named releases (``all``: every one), each kept if present."""
    if args.build_dir:
        raise UsageError("--build-dir is for a tree's path; a release builds into "
                         f"{source.source_root()}/<version>/")
    sanitize = tuple(n.strip() for n in (args.sanitize or "").split(",") if n.strip())
    start = time.monotonic()
    try:
        rels = source.resolve_versions([args.src])
        todo = [source.wanted(r, coverage=args.coverage, sanitize=sanitize,
                              bugs=getattr(args, "bugs", False), arm=args.arm,
                              riscv=getattr(args, "riscv", False)) for r in rels]
        if getattr(args, "fetch_only", False):
            for w in todo:
                print(f"QEMU {w.release.version}: source in {source.fetch(w.release)}")
            return 0
        for w in todo:
            source.build_one(w, timeout=args.timeout)
    except source.SourceError as e:
        raise UsageError(str(e)) from e
    for w in todo:
        name = source.build_name(w.release.version, w.variant)
        more = [f"{name}-arm"] * w.arm + [f"{name}-riscv"] * w.riscv
        print(f"{name}: {w.binaries[0]}" + (f" (and {', '.join(more)})" if more else ""))
    first = source.build_name(todo[0].release.version, todo[0].variant)
    print(f"use them with: sdqtest check --qemu {first} "
          f"(total {time.monotonic() - start:.0f} s)")
    return 0


def list_source_builds() -> None:
    """A table of the source builds in the cache (``qemu list``): probed, as ``--qemu``
    would run them."""
    found = source.source_builds()
    if not found:
        return
    rows = []
    for name, binary in found.items():
        try:
            b = builds.probe(binary, name)
        except builds.BuildError as e:
            rows.append([name, f"unusable: {str(e)[:60]}", "-", str(binary)])
            continue
        rows.append([name, b.version, "yes" if b.profile.has_qtest_accel else "NO",
                     str(binary)])
    print()
    print_table(["source build", "query-version", "qtest", "binary"], rows)
