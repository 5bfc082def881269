"""QEMU process reuse: a reset process behaves as a fresh launch.

A sample of scenarios run once on a fresh QEMU each and once on processes
of a :class:`QemuPool` that served other scenarios just before: the
lockstep histories (every step, both answers, interrupt events) and the
qtest traces must be identical, up to the card's random RCA (two fresh
launches differ there too; see :mod:`harness.check.equivalence`).
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from harness import images
from harness.check import runner
from harness.check.equivalence import first_difference
from harness.check.testbench import RunSpec
from harness.errors import QemuError
from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool, reuse_key
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu

#: (scenario, machine): registers, PIO and SDMA/ADMA2 transfers writing and
#: reading the card, malformed descriptors, interrupts, clock steps, an erase
#: (the card image written), the pc machine, another card image size.
SAMPLE = [
    ("sdma-write-7", "q35"),            # DMA from guest RAM, writes the image
    ("irq-during-transfers", "q35"),    # interrupt line and its events, clock
    ("adma2-malformed", "q35"),         # ADMA error path, stray descriptors
    ("reset-values-v3", "q35"),         # another sdhci property: its own process
    ("boundary-capacity-sdsc-2g", "q35"),  # another card image, swapped in
    ("pio-read-7", "pc"),               # the other machine type
    ("pio-read-7", "pc"),               # ... served by a reset this time
    ("sdma-write-7", "q35"),            # after everything above on q35
]


def test_reused_runs_equal_fresh_runs(qemu_build: QemuBuild) -> None:
    scs = all_scenarios()
    with QemuPool() as pool:
        for name, machine in SAMPLE:
            fresh = runner.run(qemu_build, scs[name], machine, runner.RunOptions(keep=True))
            reused = runner.run(qemu_build, scs[name], machine,
                                runner.RunOptions(keep=True, pool=pool))
            assert fresh.status in (runner.AGREE, runner.QUIRK, runner.SKIP), fresh.reason
            assert first_difference(fresh, reused) == "", f"{name} on {machine}"
        assert pool.stats.fallbacks == []
        # sdma-write-7, irq-during, adma2-malformed, boundary and the last
        # two runs share a process with the run before them of their kind
        assert pool.stats.reused >= 4, pool.stats


def test_reset_scrubs_ram_lowers_irq_and_restarts_clock(qemu_build: QemuBuild) -> None:
    img = images.ensure("sdsc-16m")
    with QemuPool() as pool:
        t = pool.acquire(qemu_build.binary, Machine(image=CardImage(img)))
        t.mem_write(0x10_0000, b"\xa5" * 4096)
        t.mem_write(0x7FF_F000, b"\x5a" * 4096)
        t.write(0x34, 2, 0xFFFF)  # NORINTSTSEN
        t.write(0x38, 2, 0xFFFF)  # NORINTSIGEN
        step = t.clock_step(12345) if t.session.has_clock else 0
        copy = t.image
        pool.release(t)
        u = pool.acquire(qemu_build.binary, Machine(image=CardImage(img)))
        assert u is t and pool.stats.reused == 1
        # nobody wrote the card in that use: the same private copy
        assert u.image is not None and u.image == copy
        assert u.mem_read(0x10_0000, 4096) == bytes(4096)
        assert u.mem_read(0x7FF_F000, 4096) == bytes(4096)
        assert (u.read(0x34, 2), u.read(0x38, 2)) == (0, 0) and not u.irq_level()
        if u.session.has_clock:
            assert step == 12345 and u.clock_step(100) == 100
        assert u.trace[0].startswith("outl 0xcf8")  # the PCI set-up, as at launch
        pool.release(u)
        proc = u.session.proc
    assert proc is not None and proc.poll() is not None  # closed with the pool


def test_failed_reset_falls_back_to_a_fresh_launch(qemu_build: QemuBuild,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    m = Machine(image=CardImage(images.ensure("sdsc-16m")))
    with QemuPool() as pool:
        t = pool.acquire(qemu_build.binary, m)
        pool.release(t)

        def refuse(self: QemuTarget, machine: Machine) -> None:
            raise QemuError("refused for the test")

        monkeypatch.setattr(QemuTarget, "reuse", refuse)
        u = pool.acquire(qemu_build.binary, m)
        assert u is not t and pool.stats.launched == 2
        assert pool.stats.fallbacks and "refused for the test" in pool.stats.fallbacks[0]
        assert t.session.proc is not None and t.session.proc.poll() is not None
        pool.release(u, healthy=False)  # a crashed or failed run: closed, not kept
        assert u.session.proc is not None and u.session.proc.poll() is not None


def test_pool_key_separates_what_a_reset_cannot_change() -> None:
    a = Machine(image=CardImage(images.RECIPES_FILE))
    assert reuse_key("q", a) == reuse_key("q", a.with_image_path(images.RECIPES_FILE.parent))
    assert reuse_key("q", a) != reuse_key("q", a.replace(type="pc"))
    assert reuse_key("q", a) != reuse_key("q", a.replace(sdhci={"sd-spec-version": 3}))
    assert reuse_key("q", a) != reuse_key("q", a.replace(image=CardImage(
        images.RECIPES_FILE, format="qcow2")))
    assert reuse_key("q", a.replace(ram=4 << 30)) is None
    # an eMMC's RPMB key and write counter survive a reset: never reused
    assert reuse_key("q", a.replace(card_kind="emmc")) is None


def test_a_divergence_crosses_processes() -> None:
    """``check -j`` workers send results back pickled."""
    from harness.check.lockstep import Divergence
    from harness.check.step import Step

    d = Divergence(Step(3, "read", (0x10, 4), 1, 2, False, False), "result", [], ["x"], "sc")
    back = pickle.loads(pickle.dumps(d))
    assert back.summary() == d.summary() and back.fields == ["x"]


def test_a_card_write_only_qemu_made_still_diverges(qemu_build: QemuBuild,
                                                    qemu_pool: QemuPool) -> None:
    """The image compare skips what neither side wrote (QEMU's
    ``wr_highest_offset``, the model's touched extents): a change to QEMU's
    card below that offset, where the model wrote nothing, is still found,
    on a reused process too."""
    from harness.driver.results import Mode
    from harness.scenarios.common import ready, test_data
    from harness.scenarios.registry import Scenario

    def fn(t: Any, ctx: Any) -> None:
        ready(t).write_blocks(9, test_data(512, 1), mode=Mode.SDMA)
        q = t.qemu
        assert isinstance(q, QemuTarget) and q.image is not None
        with open(q.image, "r+b") as f:  # as if QEMU had also written block 2
            f.seek(2 * 512)
            f.write(b"\x5a" * 512)

    runner.run(qemu_build, all_scenarios()["pio-read-7"], "q35", runner.RunOptions(pool=qemu_pool))
    res = runner.run(qemu_build, Scenario("qemu-only-write", "data", fn, needs_clock=True),
                     "q35", runner.RunOptions(pool=qemu_pool))
    assert res.status == runner.DIVERGE and res.divergence is not None, res.reason
    assert res.divergence.step.op == "image_read" and qemu_pool.stats.reused >= 1, res.reason


def test_workers_keep_the_order_of_runs(qemu_build: QemuBuild) -> None:
    """``check -j 2`` reports in the order of the runs, as ``-j 1`` does."""
    from harness.check import parallel
    from harness.scenarios import all_scenarios

    names = ["card-registers", "reset-values-v2", "access-sizes", "reset-values-v3"]
    runs = [RunSpec(qemu_build, all_scenarios()[n], "q35") for n in names]
    one, s1 = parallel.run_all(runs, parallel.SharedOptions(), 1)
    two, s2 = parallel.run_all(runs, parallel.SharedOptions(), 2)
    assert [r.scenario for r in one] == [r.scenario for r in two] == names
    assert [(r.status, r.steps) for r in one] == [(r.status, r.steps) for r in two]
    assert s1.launched + s1.reused == s2.launched + s2.reused == len(names)


def test_a_written_copy_is_restored_and_kept(qemu_build: QemuBuild) -> None:
    """A run whose card compare agreed puts the source's bytes back where
    the model wrote (``QemuTarget.restore_image``), and the next run with
    the same image keeps that file instead of copying the image again."""
    sc = all_scenarios()["sdma-write-7"]  # writes the card by DMA
    source = images.ensure(sc.image)
    with QemuPool() as pool:
        first = runner.run(qemu_build, sc, "q35", runner.RunOptions(pool=pool))
        assert first.status in (runner.AGREE, runner.QUIRK), first.reason
        (t,) = pool._idle.values()
        assert t.image is not None and t.image != source
        assert t.image.read_bytes() == source.read_bytes()
        kept = t.image
        again = runner.run(qemu_build, sc, "q35", runner.RunOptions(pool=pool))
        assert again.status == first.status and again.steps == first.steps
        (u,) = pool._idle.values()
        assert u is t and u.image == kept and pool.stats.reused == 1


def test_a_copy_qemu_wrote_is_put_back_in_place(qemu_build: QemuBuild) -> None:
    """A card QEMU wrote (here, as if) and nobody restored: the reuse puts
    the source's bytes back into the same file QEMU keeps open, holes
    included, and QEMU's card reads them."""
    from harness.driver.host import HostDriver

    img = images.ensure("sdsc-16m")
    with QemuPool() as pool:
        t = pool.acquire(qemu_build.binary, Machine(image=CardImage(img)))
        copy = t.image
        assert copy is not None
        with open(copy, "r+b") as f:  # block 3 changed, as a card write does
            f.seek(3 * 512)
            f.write(b"\x5a" * 512)
        pool.release(t)
        u = pool.acquire(qemu_build.binary, Machine(image=CardImage(img)))
        assert u is t and u.image == copy and copy.read_bytes() == img.read_bytes()
        d = HostDriver(u)
        d.setup()
        d.init_card()
        assert d.read_blocks(3, 1).data == img.read_bytes()[3 * 512:4 * 512]
        pool.release(u)


def test_rewrite_copy_puts_back_data_and_holes(tmp_path: Any) -> None:
    """:func:`rewrite_copy` on a sparse source: data written where the
    source has a hole reads as zeros again (and is a hole again), data
    changed over the source's data is the source's again."""
    from harness.qemu.target import copy_image, mark_unwritten, rewrite_copy, unwritten

    src = tmp_path / "src.img"
    with open(src, "wb") as f:
        f.truncate(1 << 20)
        f.seek(256 << 10)
        f.write(b"\x11" * (64 << 10))
    dst = copy_image(src, tmp_path, "copy")
    mark_unwritten(dst)
    assert unwritten(dst)
    with open(dst, "r+b") as f:
        f.seek(256 << 10)
        f.write(b"\x22" * 4096)  # over the source's data
        f.seek(768 << 10)
        f.write(b"\x33" * 4096)  # into a hole
    assert not unwritten(dst)
    rewrite_copy(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    assert images.data_extents(dst) == images.data_extents(src)


def test_the_pci_setup_replays_in_one_round_trip(qemu_build: QemuBuild) -> None:
    """A reset's PCI set-up sends the launch's commands in one pipeline
    (the same trace) and refuses a bus that answers otherwise."""
    m = Machine(image=CardImage(images.ensure("sdsc-16m")))
    with QemuPool() as pool:
        t = pool.acquire(qemu_build.binary, m)
        launch = t.trace
        assert t._setup_log and [line for line, _ in t._setup_log] == launch
        pool.release(t)
        u = pool.acquire(qemu_build.binary, m)
        assert u is t and u.trace == launch
        line, answer = u._setup_log[0]
        u._setup_log[0] = (line, answer + "0")  # not what this bus answers
        pool.release(u)
        v = pool.acquire(qemu_build.binary, m)
        assert v is not u and "PCI bus 0 is not what it was" in pool.stats.fallbacks[0]
        assert v.trace == launch
        pool.release(v)


def test_the_reset_is_done_before_the_next_command(qemu_build: QemuBuild) -> None:
    """The chipset reset a PC's reuse asks for is done before QEMU reads the
    next qtest command: BAR0 and the command register read back as reset,
    each time, at once."""
    from harness.hwdefs import pci as pcidefs

    for machine in ("q35", "pc"):
        m = Machine(type=machine, image=CardImage(images.ensure("sdsc-16m")))
        with QemuTarget(qemu_build.binary, m) as t:
            devfn = t.pci_function.devfn
            for _ in range(20):
                t.pci.write(0, devfn, pcidefs.BAR0, 4, t.bar0)
                t.pci.write(0, devfn, pcidefs.COMMAND, 2, pcidefs.COMMAND_MEMORY)
                t._system_reset(t.machine)
                assert t.pci.read(0, devfn, pcidefs.COMMAND, 2) == 0
                assert t.pci.read(0, devfn, pcidefs.BAR0, 4) & ~0xF == 0
            assert t.session.proc is not None and t.session.proc.poll() is None
