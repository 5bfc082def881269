"""A destination QEMU that refuses its incoming stream while it starts."""

from __future__ import annotations

import pytest

from harness.qemu import migrate
from harness.qemu.session import QemuLaunchError


class _Session:
    """Fails to start as a QEMU does that loads a stream cut short at once."""

    def __init__(self, stderr: str) -> None:
        self.failed_stderr = stderr

    def start(self) -> None:
        raise QemuLaunchError("QEMU refused to start: ...")


def test_a_stream_refused_while_starting_is_a_refused_load() -> None:
    s = _Session("qemu-system-x86_64: -mon chardev=qmp: warning: '-mon' is deprecated\n"
                 "qemu-system-x86_64: load of migration failed: Input/output error\n")
    with pytest.raises(migrate.MigrationRefused) as e:
        migrate.start_destination(s)  # type: ignore[arg-type]
    assert e.value.stage == "load"
    assert "load of migration failed" in e.value.reason and "warning" not in e.value.reason


def test_another_launch_failure_stays_one() -> None:
    with pytest.raises(QemuLaunchError):
        migrate.start_destination(_Session("qemu: no such machine"))  # type: ignore[arg-type]
