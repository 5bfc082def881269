"""The board builds the board tests run on: ``--sdq-qemu`` or ``$QTEST_QEMU_BINARY``
when it is an ARM or RISC-V binary, else every installed board build.

``arm_build``: the ARM ones (``7.2-arm`` ...); ``riscv_build``: the RISC-V ones
(``7.2-riscv`` ...); ``board_build``: both (a test over every board skips the
boards a build has no machine type for)."""

from __future__ import annotations

import pytest

from harness.check.boards import binary_family
from harness.qemu import builds

#: fixture -> the binary families it takes (:func:`harness.check.boards.binary_family`).
_FIXTURES = {"arm_build": ("arm",), "riscv_build": ("riscv",), "board_build": ("arm", "riscv")}


def _board_builds(config: pytest.Config) -> list[builds.QemuBuild]:
    specs = [s for s in (config.getoption("sdq_qemu") or [])
             if any(t in s for t in ("arm", "aarch64", "riscv"))]
    try:
        return builds.selected_arm(specs or None)
    except builds.BuildError as e:
        raise pytest.UsageError(f"sdqtest: {e}") from e


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name, families in _FIXTURES.items():
        if name not in metafunc.fixturenames:
            continue
        found = [b for b in _board_builds(metafunc.config)
                 if binary_family(str(b.binary)) in families]
        if found:
            metafunc.parametrize(name, found, ids=[f"qemu-{b.name}" for b in found],
                                 scope="session")
        else:
            what = "/".join(f.upper().replace("RISCV", "RISC-V") for f in families)
            metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(
                reason=f"no {what} QEMU build: run 'sdqtest qemu install' or pass "
                       "--sdq-qemu PATH"))], ids=[f"no-{'-'.join(families)}-qemu"])
