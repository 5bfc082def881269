"""A QEMU bug found by issue #43: ``sd-card``'s data size is not migrated.

From 9.1 a data command records the length of its data block in
``data_size`` (``sd_cmd_to_sendingdata``); ``sd_vmstate`` carries
``data_offset`` and ``data_start`` but not ``data_size``, so the
destination's card has 0 there: a card migrated inside a CMD17 block sends
one more byte (10.0, byte-wise) or one more chunk (11.1, the controller's
block) and goes to the transfer state, the rest reading 0.  7.2's card has
no data size (it counts to the block length).  The ledger's
``sd.data-size-not-migrated`` (scope qemu-bug) states it and the model
follows it at a migration point.  The input is the explore corpus's
(:func:`harness.explore.reach.card_mid_inputs`): CMD17 of one 256-byte host
block, migrated with the card at byte 256 of its 512, then two SDMA
restarts of one byte each; with the entry the model agrees on every build,
without it (the specification's side) it disagrees from 9.1 on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.check import migration, runner
from harness.explore import reach
from harness.pytest_plugin import require_clock
from harness.qemu.builds import QemuBuild
from harness.scenarios.explore import _scenario

pytestmark = pytest.mark.qemu

KEY = "sd.data-size-not-migrated"


def _run(build: QemuBuild, strict: frozenset[str], tmp: Path) -> runner.Result:
    ops = [x for op in reach.card_mid_inputs()[0]
           for x in (op, {"op": "probe", "status": False})]
    sc = _scenario("migrate-data-size", ops, "data size across a migration",
                   group="migration")
    mig = migration.Migrator(build)
    try:
        return runner.run(build, sc, "q35", runner.RunOptions(
            report_dir=tmp, migrator=mig.attach, strict=strict))
    finally:
        mig.close()


def test_the_model_states_the_lost_data_size(qemu_build: QemuBuild, tmp_path: Path) -> None:
    require_clock(qemu_build)
    assert _run(qemu_build, frozenset(), tmp_path).status == runner.AGREE


def test_without_the_entry_the_model_reads_on_where_qemu_gives_zeros(
        qemu_build: QemuBuild, tmp_path: Path) -> None:
    require_clock(qemu_build)
    res = _run(qemu_build, frozenset({KEY}), tmp_path)
    if qemu_build.profile.version < (9, 1):
        assert res.status == runner.AGREE, res.reason
        return
    assert res.status == runner.DIVERGE, res.status
    assert res.divergence is not None and "mem_read" in str(res.divergence)
