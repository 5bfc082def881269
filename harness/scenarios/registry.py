"""The scenario registry: named operation sequences written once against Target.

A scenario is a function ``fn(target, ctx)`` registered with
:func:`scenario`.  It drives the target (usually through the host driver)
and may note facts the specification promises with :meth:`Context.expect`;
comparing model and QEMU is the lockstep target's job, not the scenario's.  Requirements
(virtual time, a device property) turn into skips with a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness import images
from harness.ledger import boundaries
from harness.profile import BuildProfile
from harness.target import Target


@dataclass(frozen=True)
class Miss:
    """A recipe or specification fact QEMU's answers did not meet."""

    message: str
    #: The deviation key (``harness.model`` tables) the scenario blames, if any.
    deviation: str | None = None


@dataclass
class Context:
    """What a scenario may know about the run."""

    profile: BuildProfile
    machine: str
    image: str                     #: recipe name of the card image
    params: Mapping[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Spec expectations that did not hold (on QEMU's answers).
    misses: list[Miss] = field(default_factory=list)
    #: Called at each :meth:`migrate_point` (the check layer's migration
    #: runs set it); None: migration points do nothing.
    migrator: Callable[[str], None] | None = None
    #: Labels of the migration points the run passed, in order.
    migrations: list[str] = field(default_factory=list)

    def expect(self, ok: bool, message: str, deviation: str | None = None) -> None:
        """A fact the image recipe or the specification promises, checked
        on QEMU's answers.

        Whether QEMU matches the model is the lockstep comparison's job; a
        miss here, where they agree, is a verdict: the runner accepts it as
        a known deviation only when ``deviation`` names a listed deviation
        the model consulted during the run, and fails the run otherwise.
        """
        if not ok:
            self.misses.append(Miss(message, deviation))

    def migrate_point(self, label: str) -> None:
        """A place where the machine may be migrated to another QEMU process.

        Invisible to the guest by design: the model simply goes on, and on
        QEMU the run continues on the destination (see
        :mod:`harness.qemu.migrate`).  Without a migrator it does nothing."""
        self.migrations.append(label)
        if self.migrator is not None:
            self.migrator(label)

    def note(self, text: str) -> None:
        self.notes.append(text)


Requirement = Callable[[BuildProfile], "str | None"]


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str
    fn: Callable[[Target, Context], None]
    doc: str = ""
    image: str = "sdsc-16m"
    needs_clock: bool = False
    requires: tuple[Requirement, ...] = ()
    sd_card: Mapping[str, Any] = field(default_factory=dict)
    sdhci: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The card's QEMU device type (``sd-card`` or ``emmc``); ``sd_card``
    #: holds that device's properties.
    card: str = "sd-card"
    #: the run migrates the build to itself mid-scenario (its own QEMU
    #: processes: :mod:`harness.check.migration`), not one lockstep run
    migrates: bool = False

    def skip_reason(self, profile: BuildProfile, has_clock: bool) -> str | None:
        if self.needs_clock and not has_clock:
            return "needs virtual time (qtest accelerator), which this build lacks"
        for req in self.requires:
            why = req(profile)
            if why:
                return why
        return None


REGISTRY: dict[str, Scenario] = {}


def scenario(
    name: str,
    group: str,
    *,
    image: str = "sdsc-16m",
    needs_clock: bool = False,
    requires: tuple[Requirement, ...] = (),
    sd_card: Mapping[str, Any] | None = None,
    sdhci: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    card: str = "sd-card",
    migrates: bool = False,
    doc: str | None = None,
    variant: str = "",
) -> Callable[[Callable[[Target, Context], None]], Callable[[Target, Context], None]]:
    """Register ``fn`` as scenario ``name`` in ``group``; its one-line
    description ``doc``, by default the first sentence of ``fn``'s docstring
    (:func:`first_sentence`), ending with ``; VARIANT.`` for one of several
    scenarios a loop registers from one function."""

    def deco(fn: Callable[[Target, Context], None]) -> Callable[[Target, Context], None]:
        text = first_sentence(fn.__doc__ or "") if doc is None else doc
        if variant:
            text = f"{text.removesuffix('.')}; {variant}."
        add(Scenario(name, group, fn, text, image,
                     needs_clock, requires, dict(sd_card or {}), dict(sdhci or {}),
                     dict(params or {}), card, migrates))
        return fn

    return deco


#: Words whose period ends no sentence (``e.g. QEMU`` goes on).
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.", "approx.", "No.", "Fig.", "Sec.")


def first_sentence(doc: str) -> str:
    """The first sentence of ``doc``'s first paragraph, on one line: up to the
    first ``.``, ``!`` or ``?`` outside brackets that ends the paragraph or
    is followed by a space and a capital or a bracket (not an abbreviation's
    period, not an ellipsis); the whole paragraph when none is."""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    depth = 0
    for i, ch in enumerate(para):
        depth += (ch in "([{") - (ch in ")]}")
        if ch not in ".!?" or depth > 0 or para[i - 1:i] == ".":
            continue
        after = para[i + 1:i + 3]
        if after and not (after[:1] == " " and (after[1:].isupper() or after[1:] == "(")):
            continue
        if not any(para[:i + 1].endswith(" " + a) or para[:i + 1] == a for a in _ABBREVIATIONS):
            return para[:i + 1]
    return para


def add(sc: Scenario) -> None:
    if sc.name in REGISTRY:
        raise ValueError(f"scenario {sc.name} registered twice")
    REGISTRY[sc.name] = sc


def has_property(device: str, prop: str) -> Requirement:
    """Requirement: the build's ``device`` has property ``prop``."""

    def req(p: BuildProfile) -> str | None:
        props = p.properties(device)
        return None if prop in props else f"{device} has no property {prop} in this build"

    return req


def card_size_accepted(image: str) -> Requirement:
    """Requirement: the build takes a card image of the recipe's size.  Before
    QEMU 10.1 the whole image (an eMMC's partitions included) must be a power
    of 2; from 10.1 a size above 2 GiB need only be a multiple of 512 KiB
    (boundary ``sd.state-and-size-rules``)."""

    def req(p: BuildProfile) -> str | None:
        size = images.recipe(image).size
        if size & (size - 1) == 0 or p.version >= boundaries.SD_STATE_AND_SIZE_RULES.since:
            return None
        return f"a {size}-byte card needs QEMU >= 10.1 (earlier sizes are powers of 2)"

    return req


def emmc_usable(p: BuildProfile) -> str | None:
    """Requirement: ``-device emmc`` goes on sdhci-pci's bus in this build."""
    return p.emmc_unusable()
