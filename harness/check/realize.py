"""Realize-time rules: the device configurations QEMU refuses, against the model.

A guest never sees these, a user does: a card image of a size QEMU will
not take, a read-only drive, a property value out of range.  Each
:class:`RealizeCase` is a machine (sdhci-pci with an SD card or an eMMC, their
properties, the drive's size and mode) that the model accepts or refuses
when :class:`~harness.model.target.ModelTarget` builds it (the model's
statement of QEMU's realize rules: ``harness.model.sdcard.check_image_size``
and ``check_spec_version``, ``sdhci_state.check_capareg``,
``emmc.check_emmc_sizes``, the read-only drive), and that QEMU accepts or
refuses at start-up.  The verdicts must agree; the messages are shown, not
compared.  The cases are generated from the rules' own constants (the 2 GiB
SDSC limit, the 512 KiB unit, the 128 KiB partition unit, each capability
field a rule reads), with the values on both sides of each boundary.

The drive is QEMU's null block driver of the case's size (no file), so a
4 GiB card costs nothing.

The other end of a device's life is here too (:class:`Unplug`): sdhci-pci
hot-unplugged from ``pc``'s root bus, idle and in the middle of a
multiple-block read.  Its statement does not need the model: QMP
``device_del`` plus the guest's eject (ACPI PCI hotplug, PIIX4: the slot's
bit written to PCI_EJ at I/O 0xae08) removes the card and then the
controller (a ``DEVICE_DELETED`` event for each), the slot then answers
config reads with all ones (PCI Local Bus 3.0, 6.1: no function there),
and QEMU goes on answering and quits normally.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.check import parallel, wall
from harness.check.runner import AGREE, DIVERGE, ERROR, SKIP, Result
from harness.driver.ops import Op, apply
from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.machine import CARD_ID, SDHCI_ID, CardImage, Machine
from harness.model import emmc as emmc_model
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.qemu import answers
from harness.qemu.builds import QemuBuild
from harness.qemu.session import QemuError, QemuLaunchError, QemuSession

GROUP = "realize"
_KIB, _MIB = 1 << 10, 1 << 20
_BLOCK = 512
#: The image size of the cases that vary something else: a valid one.
_SMALL = 1 * _MIB
_SIZE_UNIT = 512 * _KIB          #: QEMU 10.1's unit above 2 GiB (PLS 5.3.3 C_SIZE)


@dataclass(frozen=True)
class RealizeCase:
    """One configuration both sides build or refuse."""

    name: str
    card_kind: str = "sd-card"
    sdhci: dict[str, Any] = field(default_factory=dict)
    card: dict[str, Any] = field(default_factory=dict)
    size: int | None = _SMALL      #: the drive's size; None: no drive
    readonly: bool = False

    def machine(self) -> Machine:
        image = None if self.size is None else CardImage(size=self.size, readonly=self.readonly)
        return Machine(type="q35", sdhci=self.sdhci, card=self.card, image=image,
                       card_kind=self.card_kind)

    def skip_reason(self, p: BuildProfile) -> str | None:
        """A property the build lacks (QEMU would refuse it for that alone)."""
        if self.card_kind == "emmc" and p.emmc_unusable():
            return p.emmc_unusable()
        for dev, props in (("sdhci-pci", self.sdhci), (self.card_kind, self.card)):
            missing = [k for k in props if k not in p.properties(dev)]
            if missing:
                return f"{dev} has no property {', '.join(missing)} in this build"
        return None


def _sd_cases() -> list[RealizeCase]:
    """spec_version 0..4; sizes either side of the power-of-2 rule, of the
    2 GiB SDSC limit and of the 512 KiB unit above it; no drive; read-only."""
    out = [RealizeCase(f"sd-card spec_version={v}", card={"spec_version": v}) for v in range(5)]
    sizes = (_BLOCK, _SIZE_UNIT, _SIZE_UNIT + _BLOCK, 3 * _MIB, S.SDSC_MAX,
             S.SDSC_MAX + _SIZE_UNIT, S.SDSC_MAX + _BLOCK, 3 * S.SDSC_MAX // 2)
    out += [RealizeCase(f"sd-card image of {n} bytes", size=n) for n in sizes]
    out += [RealizeCase("sd-card without a drive", size=None),
            RealizeCase("sd-card on a read-only drive", readonly=True)]
    return out


def _sdhci_cases() -> list[RealizeCase]:
    """sd-spec-version 1..4; for versions 2 and 3, capabilities with each
    field a realize rule reads set just inside and just outside its range."""
    out = [RealizeCase(f"sdhci-pci sd-spec-version={v}", sdhci={"sd-spec-version": v})
           for v in range(1, 5)]
    cap = H.CAPAB
    base = 0x057834B4 & ~(cap.mask("SLOTTYPE") | cap.mask("MAXBLKLEN"))
    values = {"SLOTTYPE": (0, 1), "MAXBLKLEN": (2, 3), "TOCLKFREQ": (0, 9, 10, 63),
              "BASECLKFREQ": (0, 9, 10, 63, 64)}
    for version in (2, 3):
        for name, vals in values.items():
            f = cap.field(name)
            for v in vals:
                if v >= 1 << f.width:
                    continue
                capareg = f.put(base & ~cap.mask(name), v)
                out.append(RealizeCase(f"sdhci-pci v{version} capareg {name}={v}",
                                sdhci={"sd-spec-version": version, "capareg": capareg}))
    return out


def _emmc_cases() -> list[RealizeCase]:
    """Partition sizes either side of the 128 KiB unit and of their maxima;
    an image smaller than its partitions; a user area not a power of 2."""
    unit, boot_max, rpmb_max = E.SIZE_MULT_UNIT, emmc_model.MAX_BOOT_SIZE, emmc_model.MAX_RPMB_SIZE
    out = []
    for n in (unit // 2, unit, boot_max, boot_max + unit):
        out.append(RealizeCase(f"emmc boot-partition-size={n}", "emmc",
                        card={"boot-partition-size": n}, size=2 * n + _SMALL))
    for n in (unit // 2, unit, rpmb_max, rpmb_max + unit):
        out.append(RealizeCase(f"emmc rpmb-partition-size={n}", "emmc",
                        card={"rpmb-partition-size": n}, size=n + _SMALL))
    out += [RealizeCase("emmc image smaller than its boot partitions", "emmc",
                 card={"boot-partition-size": 4 * unit}, size=4 * unit),
            RealizeCase("emmc user area not a power of 2", "emmc",
                 card={"boot-partition-size": unit}, size=2 * unit + 3 * _MIB),
            RealizeCase("emmc user area above 2 GiB, whole blocks", "emmc",
                 card={"boot-partition-size": unit}, size=2 * unit + S.SDSC_MAX + _BLOCK)]
    return out


def cases() -> list[RealizeCase]:
    return _sd_cases() + _sdhci_cases() + _emmc_cases()


#: ACPI PCI hotplug on pc (hw/acpi/pcihp.c, PIIX4 PM): the eject register.
PCIHP_EJECT_PORT = 0xAE08
#: Seconds QEMU has for the unplug once the guest ejected (a main-loop job).
UNPLUG_TIMEOUT = 10.0
#: A config read of a slot without a function (PCI Local Bus 3.0, 6.1).
_NO_FUNCTION = 0xFFFF
#: What an :class:`Unplug` mid-read does first (harness.driver.ops): CMD18
#: for eight blocks by PIO, then one block read from the data port.
_BEGIN_READ: tuple[Op, ...] = (
    {"op": "start", "index": 18, "mode": "pio", "bs": _BLOCK, "count": 8, "boundary": 0,
     "block": 0, "offset": 0, "blkcnt_en": True, "auto12": False},
    {"op": "pio", "write": False, "n": _BLOCK // 4, "size": 4},
)


@dataclass(frozen=True)
class Unplug:
    """sdhci-pci hot-unplugged from pc's root bus; ``mid_transfer``: with a
    multiple-block PIO read begun (one block read of eight)."""

    name: str
    mid_transfer: bool = False


UNPLUGS = (Unplug("sdhci-pci hot-unplugged, idle"),
           Unplug("sdhci-pci hot-unplugged mid-read", mid_transfer=True))


def unplug_verdict(build: QemuBuild, case: Unplug) -> str | None:
    """What of the statement (see the module doc) QEMU did not do, or None."""
    from harness.driver.host import HostDriver
    from harness.qemu.target import QemuTarget

    m = Machine(type="pc", image=CardImage(size=_SMALL))
    with QemuTarget(build.binary, m) as t:
        s = t.session
        d = HostDriver(t)
        d.setup()
        d.init_card()
        if case.mid_transfer:
            for op in _BEGIN_READ:
                apply(d, t, op)
        cfg, dev = t.pci, t.pci_function  # as the target brought it up
        s.qmp.clear_events()
        s.qmp_cmd("device_del", id=SDHCI_ID)
        s.qtest.out(4, PCIHP_EJECT_PORT, 1 << (dev.devfn >> 3))
        gone = s.wait_events("DEVICE_DELETED", {CARD_ID, SDHCI_ID}, UNPLUG_TIMEOUT)
        if gone:
            return f"no DEVICE_DELETED for {', '.join(sorted(gone))} after the eject"
        vendor = cfg.read(0, dev.devfn, 0, 2)
        if vendor != _NO_FUNCTION:
            return f"the emptied slot's vendor ID reads {vendor:#06x}, not {_NO_FUNCTION:#06x}"
        if s.has_clock:  # time goes on without the device (its timers are gone)
            s.qtest.clock_step(1_000_000)
        s.qtest.endianness()
    return None


def run_unplug(build: QemuBuild, case: Unplug) -> Result:
    res = Result(build.name, f"realize {case.name}", GROUP, "pc", AGREE)
    if not build.offers("pc"):
        res.status, res.reason = SKIP, "this build has no machine type pc"
        return res
    try:
        why = unplug_verdict(build, case)
    except QemuError as e:
        why = f"QEMU failed: {e}"
    if why is not None:
        res.status, res.reason = DIVERGE, f"{case.name}: {why}"
    return res


def _run(build: QemuBuild, case: RealizeCase | Unplug) -> Result:
    return run_unplug(build, case) if isinstance(case, Unplug) else run_case(build, case)


def model_verdict(case: RealizeCase, profile: BuildProfile) -> str | None:
    """The model's refusal of ``case`` on a build of ``profile``, or None."""
    try:
        ModelTarget(case.machine(), profile=profile)
    except ValueError as e:
        return str(e) or type(e).__name__
    return None


def qemu_verdict(build: QemuBuild, case: RealizeCase) -> str | None:
    """QEMU's refusal (its message), or None when it started; kept by the
    binary's contents (:mod:`harness.qemu.answers`) when QEMU started or
    refused its command line, never when it hung or died otherwise."""
    def ask() -> list[Any]:
        try:
            with QemuSession(build.binary, case.machine(), accel="auto"):
                return [None, True]
        except QemuLaunchError as e:
            return [str(e), "did not answer" not in str(e)]
        except QemuError as e:
            return [str(e), False]

    got = answers.cached(build.binary, "realize", repr(case.machine()), ask,
                         keep=lambda a: bool(a[1]))
    return None if got[0] is None else str(got[0])


#: How QEMU names a refused ``-drive`` option (the block layer's, not a
#: device's realize: a null-co size that is not whole sectors, say).
_DRIVE_REFUSAL = ": -drive "


def run_case(build: QemuBuild, case: RealizeCase) -> Result:
    res = Result(build.name, f"realize {case.name}", GROUP, "q35", AGREE)
    why = case.skip_reason(build.profile)
    if why is not None:
        res.status, res.reason = SKIP, why
        return res
    model, qemu = model_verdict(case, build.profile), qemu_verdict(build, case)
    if (model is None) != (qemu is None):
        res.status = DIVERGE
        res.reason = (f"{case.name}: the model {'accepts it' if model is None else 'refuses it'}"
                      f", QEMU {'starts' if qemu is None else 'refuses it'}\n"
                      f"  model: {model or 'accepted'}\n  QEMU:  {qemu or 'started'}")
    elif model is not None and _DRIVE_REFUSAL in str(qemu):
        res.status = ERROR
        res.reason = (f"{case.name}: QEMU refused the drive, not a device, so the case tests "
                      f"no realize rule: {qemu}")
    elif model is not None:
        res.notes.append(f"both refuse: {model}")
    return res


def check_verdicts(builds: list[QemuBuild], jobs: int = 1,
                   progress: Callable[[str], None] | None = None) -> list[Result]:
    """Every case on every build, on ``jobs`` workers."""
    t0 = time.monotonic()
    every: list[RealizeCase | Unplug] = [*cases(), *UNPLUGS]
    pairs = [(b, c) for b in builds for c in every]
    got = parallel.map_ordered(
        _run, pairs, jobs,
        progress=(lambda done, bc: progress(f"realize [{done}/{len(pairs)}] {bc[0].name} "
                                            f"{bc[1].name}")) if progress else None)
    wall.CLOCK.side("realize cases", time.monotonic() - t0,
                    sum(r.status != SKIP for r in got), jobs)
    return got
