"""Machine compat defaults for the SD card on 7.2, 10.0, 11.1 and a series build."""

from __future__ import annotations

import pytest

from harness.model.compat import (
    KNOWN_MACHINE_TYPES,
    UnknownMachineError,
    defaults_for,
    machine_version,
    resolve_machine,
)
from harness.profile import BuildProfile


def _types(q35: list[str], i440fx: list[str]) -> tuple[str, ...]:
    return tuple(f"pc-q35-{v}" for v in q35) + tuple(f"pc-i440fx-{v}" for v in i440fx)


V72 = BuildProfile((7, 2, 0), _types(["2.4", "7.1", "7.2"], ["1.4", "7.2"]),
                   {"spec_version": "2"})
V100 = BuildProfile((10, 0, 13), _types(["2.4", "9.0", "9.1", "10.0"], ["9.0", "10.0"]),
                    {"spec_version": "3"})
V111 = BuildProfile((11, 1, 3), _types(["5.2", "9.0", "9.1", "11.0", "11.1"], ["11.1"]),
                    {"spec_version": "3"})
SERIES = BuildProfile((11, 1, 50), _types(["9.0", "9.1", "11.0", "11.1", "11.2"], []),
                      {"spec_version": "3", "erase-blocks-as-zero": "true"})


def test_spec_version_boundary_9_0_9_1() -> None:
    for prof in (V100, V111):
        assert defaults_for("pc-q35-9.0", prof)["spec_version"] == 2
        assert defaults_for("pc-q35-9.1", prof)["spec_version"] == 3
    assert defaults_for("pc-q35-7.2", V72)["spec_version"] == 2
    assert defaults_for("pc-i440fx-1.4", V72)["spec_version"] == 2


def test_erase_blocks_as_zero_boundary_11_0_11_1() -> None:
    assert "erase-blocks-as-zero" not in defaults_for("pc-q35-11.0", V111)
    assert defaults_for("pc-q35-11.0", SERIES)["erase-blocks-as-zero"] is False
    assert defaults_for("pc-q35-11.1", SERIES)["erase-blocks-as-zero"] is True
    assert defaults_for("pc-q35-9.0", SERIES) == {"spec_version": 2,
                                                 "erase-blocks-as-zero": False}
    # A newer type the build reports counts as newest: no compat entry applies.
    assert defaults_for("pc-q35-11.2", SERIES)["erase-blocks-as-zero"] is True


def test_aliases_resolve_to_newest() -> None:
    assert resolve_machine("q35", V100) == "pc-q35-10.0"
    assert resolve_machine("pc", V72) == "pc-i440fx-7.2"
    assert resolve_machine("q35", SERIES) == "pc-q35-11.2"
    assert defaults_for("q35", V111)["spec_version"] == 3


def test_unknown_machine_is_refused() -> None:
    with pytest.raises(UnknownMachineError, match="QEMU refuses it too"):
        defaults_for("pc-q35-2.4", V111)  # removed from 11.1
    with pytest.raises(UnknownMachineError, match="QEMU refuses it too"):
        defaults_for("pc-q35-99.0", BuildProfile((11, 1, 0)))
    with pytest.raises(UnknownMachineError):
        resolve_machine("pc", SERIES)  # this build lists no i440fx type


def test_known_types_and_build_defaults() -> None:
    assert "pc-q35-2.4" in KNOWN_MACHINE_TYPES and "pc-q35-11.1" in KNOWN_MACHINE_TYPES
    assert "pc-q35-4.0.1" in KNOWN_MACHINE_TYPES and "pc-q35-2.3" not in KNOWN_MACHINE_TYPES
    assert machine_version("pc-q35-4.0.1") == (4, 0, 1)
    assert defaults_for(None, V72) == {"spec_version": 2}
    # An empty machine list means "the model's known list".
    assert defaults_for("pc-q35-9.0", BuildProfile((10, 2, 2)))["spec_version"] == 2
