"""The model's defaults come from its own table, never from the build's
``device-list-properties``; versions the table was not checked against are
reported as unverified."""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci as H
from harness.machine import Machine
from harness.model import defaults, target
from harness.model.compat import defaults_for
from harness.model.sdcard import SDCard
from harness.model.target import ModelTarget
from harness.profile import BuildProfile

_Q35 = ("pc-q35-9.0", "pc-q35-9.1", "pc-q35-11.0", "pc-q35-11.1")
#: 11.1.3 as a build whose compiled-in defaults moved: ADMA2 dropped from
#: capareg, sd-spec-version 3, maxcurr and uhs set, the card back at spec 2.
MOVED = BuildProfile(
    (11, 1, 3), _Q35, {"spec_version": "2"},
    {"capareg": str(H.CAPAREG_DEFAULT & ~H.CAPAB.mask("ADMA2")), "maxcurr": "16",
     "sd-spec-version": "3", "uhs": "2"})


def test_table_covers_every_property_the_model_consumes() -> None:
    assert set(defaults.properties("sdhci-pci")) == set(target._SDHCI_PARAMS)
    assert set(defaults.properties("sd-card")) == set(target._CARD_PARAMS)


@pytest.mark.parametrize("version,spec", [
    ((7, 2, 22), 2), ((9, 0, 4), 2), ((9, 1, 0), 3), ((10, 0, 13), 3), ((11, 1, 3), 3)])
def test_card_spec_version_class_default(version: tuple[int, int, int], spec: int) -> None:
    assert defaults.class_default("sd-card", "spec_version", version).value == spec


def test_sdhci_class_defaults() -> None:
    got = {p: d.value for p, d in defaults.class_defaults("sdhci-pci", MOVED).items()}
    assert got == {"capareg": 0x057834B4, "maxcurr": 0, "sd-spec-version": 2, "uhs": 0}
    assert H.CAPAREG_DEFAULT == 0x057834B4


def test_build_class_defaults_do_not_move_the_model() -> None:
    assert defaults_for(None, MOVED) == {"spec_version": 3}
    assert defaults_for("pc-q35-9.0", MOVED) == {"spec_version": 2}  # compat on top
    assert defaults_for(None, MOVED, "sdhci-pci")["capareg"] == 0x057834B4
    t = ModelTarget(Machine(type="pc-q35-11.1"), profile=MOVED, size=1 << 20)
    assert t.sdhci.capareg == 0x057834B4 and t.read(H.CAPAB.offset, 4) == 0x057834B4
    assert (t.sdhci.sd_spec_version, t.sdhci.maxcurr, t.sdhci.uhs_mode) == (2, 0, 0)
    assert isinstance(t.card, SDCard) and t.card.spec_version == 3


def test_explicit_properties_still_reach_the_model() -> None:
    m = Machine(type="pc-q35-11.1", sdhci={"capareg": 0x05E80080, "maxcurr": 16},
                card={"spec_version": 2})
    t = ModelTarget(m, profile=MOVED, size=1 << 20)
    assert t.read(H.CAPAB.offset, 4) == 0x05E80080 and t.sdhci.maxcurr == 16
    assert isinstance(t.card, SDCard) and t.card.spec_version == 2


def test_erase_default_needs_the_property_but_comes_from_the_table() -> None:
    off = BuildProfile((11, 1, 50), _Q35, {"spec_version": "3", "erase-blocks-as-zero": "false"})
    assert defaults_for(None, off)["erase-blocks-as-zero"] is True
    assert "erase-blocks-as-zero" not in defaults_for(None, MOVED)


def test_known_versions_are_verified() -> None:
    for v in ((7, 2, 22), (10, 0, 13), (11, 1, 3)):
        assert defaults.unverified(BuildProfile(v, sd_card_properties={"spec_version": "3"})) \
            == []


def test_newer_version_uses_the_newest_rows_and_says_unverified() -> None:
    newer = BuildProfile((12, 0, 0), sd_card_properties={"spec_version": "2"},
                         sdhci_properties={"capareg": "0"})
    notes = defaults.unverified(newer)
    assert len(notes) == 1 and "12.0.0 is newer" in notes[0] and "11.1" in notes[0]
    assert defaults_for(None, newer) == {"spec_version": 3}
    assert defaults_for(None, newer, "sdhci-pci")["capareg"] == 0x057834B4
    # A development build after 11.1 is newer too.
    assert defaults.unverified(BuildProfile((11, 1, 50)))


def test_property_older_than_its_first_row_is_unverified() -> None:
    backport = BuildProfile((10, 0, 13), sd_card_properties={
        "spec_version": "3", "erase-blocks-as-zero": "false"})
    d = defaults.class_default("sd-card", "erase-blocks-as-zero", backport.version)
    assert d.value is True and "11.1.50" in d.unverified
    assert [n for n in defaults.unverified(backport) if "erase-blocks-as-zero" in n]


def test_unknown_property_is_refused() -> None:
    with pytest.raises(KeyError, match="no sd-card property 'spi'"):
        defaults.class_default("sd-card", "spi", (11, 1, 3))
