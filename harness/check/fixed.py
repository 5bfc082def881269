"""A build that no longer has a QEMU bug the ledger says it has.

The model follows QEMU's known bugs by default (the ledger's ``qemu-bug``
entries with a ``toggle``), so a build with a fix (ours, ``bugs/*.patch``,
or upstream's before the ledger's ``Versions.fixed`` says so) diverges from
it.  When a default run diverges and the model consulted such entries, the
scenario runs again with the model following the entries' rules (the
specification's side, as in strict mode): all of them, then, to name the
one, each alone.  A rerun that agrees shows the build behaves as the rule
says: the run agrees, and a note names the entries as stale for this
build.  Nothing is learnt from the build: both sides are the model's
statements, and the rerun must agree from start to end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from harness.check import runner
from harness.ledger import LEDGER, Scope
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario

#: The note's first words (the report and tests look for them).
NOTE = "qemu-bug entry not present in this build (stale: a fixed build?)"


def bug_switches(consulted: set[str]) -> frozenset[str]:
    """The ``qemu-bug`` entries with a model switch among ``consulted``."""
    return frozenset(k for k in consulted
                     if k in LEDGER and LEDGER[k].scope is Scope.QEMU_BUG and LEDGER[k].toggle)


def recheck(first: runner.Result,
            rerun: Callable[[frozenset[str]], runner.Result]) -> runner.Result:
    """``first`` itself, or the agreeing rerun with the bugs a fixed build
    does not have (see the module doc).  ``rerun(keys)`` runs the same
    scenario with the model following the rule for ``keys``."""
    keys = bug_switches(first.consulted())
    if first.status != runner.DIVERGE or not keys:
        return first
    together = rerun(keys)
    if together.status not in (runner.AGREE, runner.QUIRK):
        return first
    found = keys
    if len(keys) > 1:
        for k in sorted(keys):
            alone = rerun(frozenset({k}))
            if alone.status in (runner.AGREE, runner.QUIRK):
                together, found = alone, frozenset({k})
                break
    together.notes.append(f"{NOTE}: {', '.join(sorted(found))}")
    together.seconds += first.seconds
    return together


def run(build: QemuBuild, sc: Scenario, machine: str,
        opts: runner.RunOptions) -> runner.Result:
    """:func:`harness.check.runner.run` in default mode, then :func:`recheck`
    against the stale ``qemu-bug`` entries of a build with a fix."""
    res = runner.run(build, sc, machine, replace(opts, strict=False))
    return recheck(res, lambda keys: runner.run(build, sc, machine, replace(opts, strict=keys)))
