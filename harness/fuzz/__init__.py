"""``sdqtest fuzz``: random operation sequences on the model and QEMU in lockstep.

One module per concern: :mod:`.ops` (the operation vocabulary, generators
and mutators), :mod:`.run` (one input on model and QEMU), :mod:`.signature`
(what makes two findings the same), :mod:`.shrink` (delta debugging),
:mod:`.corpus` (inputs and findings on disk, merging), :mod:`.emit`
(reproducers: qtest trace, shell script, pytest test, libqtest C function)
and :mod:`.campaign` (the loop: budget, seed, shards, progress).
"""
