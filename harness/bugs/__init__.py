"""QEMU bugs the project found: a catalog keyed by the ledger's ``qemu-bug``
entries, a reproducer for each (driver operations over ``-qtest stdio``),
and the libqtest C tests and fix patches under ``harness/bugs/data/`` (package
data), built and run in a QEMU source tree by ``sdqtest bugs --verify``.
"""
