"""The QEMU builds a command works on, as every ``sdqtest`` command picks them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from harness.errors import UsageError
from harness.provision import install
from harness.qemu import builds


def names_a_build(specs: list[str] | None) -> bool:
    """``--qemu`` or ``$QTEST_QEMU_BINARY`` says which build to use (else:
    every installed one)."""
    return bool(specs) or bool(os.environ.get("QTEST_QEMU_BINARY"))


def select_builds(specs: list[str] | None, *,
                  install_missing: bool = True) -> list[builds.QemuBuild]:
    """``--qemu`` specs, else ``$QTEST_QEMU_BINARY``, else every installed build.

    With nothing given and nothing installed, installs Debian's builds first
    (when ``install_missing``).  No build at all is a :class:`UsageError`.
    """
    if not names_a_build(specs) and install_missing:
        if not install.installed_builds():
            install.install(["all"], log=lambda m: print(m, file=sys.stderr))
    return _found(builds.selected, specs, "no QEMU build")


def select_board_builds(specs: list[str] | None) -> list[builds.QemuBuild]:
    """The builds ``--board`` runs on: ``--qemu`` specs, else ``$QTEST_QEMU_BINARY``
    if it is an ARM or RISC-V binary, else every installed board build (Debian's
    ``qemu-system-arm`` and RISC-V packages, installed first if none is)."""
    from harness.provision import install_arm

    if not names_a_build(specs) and not install_arm.installed_board_builds():
        install_arm.install_boards(["all"], log=lambda m: print(m, file=sys.stderr))
    return _found(builds.selected_arm, specs, "no board (ARM or RISC-V) QEMU build")


def _found(select: Callable[[list[str] | None], Sequence[builds.QemuBuild]],
           specs: list[str] | None, none: str) -> list[builds.QemuBuild]:
    """``select(specs)``, a bad spec or an empty answer as a one-line UsageError."""
    try:
        found = select(specs)
    except builds.BuildError as e:
        raise UsageError(str(e)) from e
    if not found:
        raise UsageError(f"{none}: run 'sdqtest qemu install' or pass --qemu PATH")
    return list(found)
