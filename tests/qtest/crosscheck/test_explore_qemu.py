"""Why the explore search drops ACMD22-before-a-write inputs (issue #19).

QEMU's ``sd_reset`` does not clear the card's written-block count (only
CMD24/CMD25 do), so a QEMU reused between scenarios answers ACMD22 with
the previous run's count, where a fresh launch answers 0.  Read from QEMU's
``hw/sd/sd.c`` (``sd_reset`` leaves ``blk_written``), checked here on each
build; the model-side rule is :class:`harness.explore.search.ReuseDependent`.
"""

from __future__ import annotations

import pytest

from harness import images
from harness.driver.host import HostDriver
from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget

pytestmark = pytest.mark.qemu


def _count(t: QemuTarget) -> int:
    d = HostDriver(t)
    d.setup()
    d.init_card()
    res = d.send_num_wr_blocks()
    assert res.data is not None and len(res.data) == 4
    return int.from_bytes(res.data, "little")


def test_acmd22_count_survives_a_reused_qemu(qemu_build: QemuBuild) -> None:
    machine = Machine(type="q35", image=CardImage(images.ensure("sdsc-16m")))
    with QemuPool() as pool:
        t = pool.acquire(qemu_build.binary, machine)
        assert _count(t) == 0  # a fresh launch: nothing written yet
        d = HostDriver(t)
        d.write_blocks(8, bytes(512 * 3))  # CMD25: three blocks
        pool.release(t)
        again = pool.acquire(qemu_build.binary, machine)
        assert pool.stats.reused == 1
        try:
            assert _count(again) == 3  # the reset kept the previous run's count
        finally:
            pool.release(again)


MEDIA = [{"op": "setup", "freq": 400_000},
         {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512},
         {"op": "irq", "norsts": 0xFFFF, "errsts": 0xFFFF, "norsig": 0xFFFF, "errsig": 0xFFFF},
         {"op": "medium", "inserted": False}, {"op": "probe", "status": False},
         {"op": "medium", "inserted": True}, {"op": "probe", "status": False},
         # the insertion is reported once the guest acknowledged the removal
         # (QEMU's sdhci_raise_insertion_irq, a timer after the W1C)
         {"op": "write", "off": 0x30, "size": 2, "value": 0xFFFF},
         {"op": "clock", "ns": 1_000_000_000}, {"op": "probe", "status": False},
         {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512},
         {"op": "probe", "status": True}]


def test_media_changes_agree_in_lockstep(qemu_build: QemuBuild) -> None:
    """Eject and re-insert through QMP, compared register by register; the
    controller must show the card gone (SDHC 2.2.9: Card Inserted = 0, 2.2.17:
    Card Removal status) after the eject."""
    from harness.check import runner
    from harness.scenarios.explore import _scenario

    sc = _scenario("explore-media-test", MEDIA, "media change")
    res = runner.run(qemu_build, sc, "q35", runner.RunOptions(keep=True))
    assert res.status == runner.AGREE, res.reason
    assert res.history is not None
    after_eject = [s for s in res.history if s.op == "read" and s.args[0] == 0x24]
    inserted = [(s.qemu >> 16) & 1 for s in after_eject]
    assert 0 in inserted and inserted[-1] == 1


def test_resets_in_transfer_phases_and_odd_sizes_agree_in_lockstep(
        qemu_build: QemuBuild) -> None:
    """A sample of the tables' transfers left running (``start``/``pio``):
    a Software Reset for DAT after a whole PIO block of a CMD18 with Auto
    CMD12, CMD0 after an SDMA write's timer, and a 513-byte block at byte
    offset 1; each compared register by register, the card image at the end
    (SDHC 2.2.17, 3.7.2; PLS 4.3.3)."""
    from harness.check import runner
    from harness.explore import tables
    from harness.hwdefs import sdhci as H
    from harness.scenarios.explore import _scenario

    resets = tables.resets_in_phases()
    picks = [i for i in resets if i[2]["index"] == 18 and i[2]["mode"] == "pio"
             and len(i) == 5 and i[3].get("n") == 128 and i[4].get("what") == H.SWRST_DAT]
    picks += [i for i in resets if i[2]["index"] == 24 and i[2]["mode"] == "sdma"
              and len(i) == 5 and i[3]["op"] == "clock" and i[4]["op"] == "cmd"]
    picks += [i for i in tables.sizes_and_offsets() if i[2]["bs"] == 513
              and i[2]["offset"] == 1]
    assert len(picks) == 4
    for n, ops in enumerate(picks):
        probed = [x for o in ops for x in (o, {"op": "probe", "status": False})]
        res = runner.run(qemu_build, _scenario(f"explore-phase-test-{n}", probed, ""), "q35")
        assert res.status == runner.AGREE, (ops, res.reason)
