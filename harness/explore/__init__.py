"""Model-driven exploration (issue #19): the golden model decides what to try.

:mod:`.tracer` records which arcs of ``harness/model/`` an input takes,
:mod:`.state` abstracts the model's state after each operation,
:mod:`.search` grows a covering corpus on the model alone (no QEMU),
deterministically from a seed, and :mod:`.report` prints the model's
branch coverage by file and function.  The corpus is replayed on QEMU in
lockstep by the scenario library's ``explore`` group
(:mod:`harness.scenarios.explore`), so it runs in every ``sdqtest check``.
"""
