"""``sdqtest bugs``: the list, and its refusals (no QEMU run)."""

from __future__ import annotations

import pytest

from harness.bugs.catalog import BUGS
from harness.cli import main


def test_the_list_names_every_bug_with_the_ledgers_versions(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bugs"]) == 0
    out = capsys.readouterr().out
    for b in BUGS:
        assert b.name in out and b.key in out and b.title in out
        line = next(ln for ln in out.splitlines() if ln.startswith(b.name + " "))
        assert b.entry.versions.describe() in line and b.severity.value in line


@pytest.mark.parametrize("argv", [["bugs", "--verify"], ["bugs", "--qemu-src", "/nonexistent"],
                                  ["bugs", "no-such-bug"],
                                  ["bugs", "--verify", "--qemu-src", "/nonexistent"]])
def test_bad_use_is_one_line_and_exit_2(argv: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err
