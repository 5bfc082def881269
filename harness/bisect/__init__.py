"""Bisect a QEMU source tree for the first commit where an sdqtest check goes bad.

* :mod:`harness.bisect.build`: how a commit becomes a ``qemu-system-x86_64``
  (configure + ninja for a real QEMU tree, or a recipe: an ``sdqtest-build``
  script at the tree's root or ``--build-cmd``), always outside the tree.
* :mod:`harness.bisect.checks`: the check run against a binary (a scenario,
  a pytest node id, or a benchmark figure against a threshold), each in a
  subprocess, mapped to ``git bisect run``'s exit codes.
* :mod:`harness.bisect.step`: one step (build, then check) with its log.
* :mod:`harness.bisect.driver`: the ``git bisect`` loop, which always resets.
* :mod:`harness.commands.bisect`: ``sdqtest bisect`` and ``sdqtest bisect-run``.
"""

from __future__ import annotations

#: ``git bisect run`` exit codes.
GOOD = 0
BAD = 1
SKIP = 125
#: Any code above 127 makes ``git bisect run`` stop: the check itself is broken.
ABORT = 128

__all__ = ["ABORT", "BAD", "GOOD", "SKIP"]
