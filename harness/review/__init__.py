"""``sdqtest review``: what a hw/sd patch or series changes, base and patched side by side.

:mod:`~harness.review.series` reads a series (mbox, directory, git range) and
builds base and patched QEMUs on a scratch clone; :mod:`~harness.review.direct`
runs every scenario on both QEMUs in lockstep (QEMU against QEMU, no model);
:mod:`~harness.review.props` compares the devices' properties per machine
type; :mod:`~harness.review.classify` puts the model check of both builds and
the direct comparison together per scenario; :mod:`~harness.review.speed`
benchmarks both, interleaved; :mod:`~harness.review.report` writes text,
Markdown and JSON.
"""
