"""The interrupt line's events, as QEMU reports them and as the model
records them: a pulse within one access shows as two events on both."""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci as H
from harness.machine import Machine
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget
from harness.target import IrqEvents, Target

pytestmark = pytest.mark.qemu


def _events(t: Target) -> list[list[bool]]:
    """Command Complete signalled, an error status not signalled, a CMD
    reset that clears Command Complete but leaves the line up, then one
    quadword write: status enables (the line drops), signal enables (it
    rises again)."""
    assert isinstance(t, IrqEvents)
    out = [t.irq_events()]
    t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
    t.write(H.PWRCON.offset, 1, H.PWRCON_POWER_ON | 0x0E)
    t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN | H.CLKCON_SDCLK_EN)
    t.write(H.NORINTSIGEN.offset, 2, H.NIS_CMDCMPL)
    t.write(H.CMDREG.offset, 2, H.cmdreg(0))
    out.append(t.irq_events())
    t.write(H.FEERR.offset, 2, H.EIS_CMDTOUT)
    t.write(H.SWRST.offset, 1, H.SWRST_CMD)
    out.append(t.irq_events())
    t.write(H.NORINTSTSEN.offset, 8, (0xFFFF_0000 | H.NIS_CMDCMPL) << 32 | 0xFFFF_FFFF)
    out.append(t.irq_events())
    out.append(t.irq_events())  # the call forgot them
    t.write(H.NORINTSTS.offset, 4, 0xFFFF_FFFF)
    out.append(t.irq_events())
    return out


def test_pulse_in_one_access_is_two_events_on_qemu_and_model(
    qemu_build: QemuBuild, machine: str
) -> None:
    m = Machine(machine)
    with QemuTarget(qemu_build.binary, m) as q:
        seen = _events(q)
    assert seen == [[], [True], [], [False, True], [], [False]]
    assert _events(ModelTarget(m, profile=qemu_build.profile)) == seen
