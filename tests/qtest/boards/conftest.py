"""The ARM builds the board tests run on: ``--sdq-qemu`` or ``$QTEST_QEMU_BINARY``
when it is an ARM binary, else every installed ARM build (``7.2-arm`` ...)."""

from __future__ import annotations

import pytest

from harness.qemu import builds


def _arm_builds(config: pytest.Config) -> list[builds.QemuBuild]:
    specs = [s for s in (config.getoption("sdq_qemu") or []) if "arm" in s or "aarch64" in s]
    try:
        return builds.selected_arm(specs or None)
    except builds.BuildError as e:
        raise pytest.UsageError(f"sdqtest: {e}") from e


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "arm_build" not in metafunc.fixturenames:
        return
    found = _arm_builds(metafunc.config)
    if found:
        metafunc.parametrize("arm_build", found, ids=[f"qemu-{b.name}" for b in found],
                             scope="session")
    else:
        metafunc.parametrize("arm_build", [pytest.param(None, marks=pytest.mark.skip(
            reason="no ARM QEMU build: run 'sdqtest qemu install' or pass --sdq-qemu PATH"))],
            ids=["no-arm-qemu"])
