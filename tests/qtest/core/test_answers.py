"""QEMU's answers kept by the binary's contents (:mod:`harness.qemu.answers`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.check import compat_matrix, realize
from harness.qemu import answers
from harness.qemu.builds import QemuBuild


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SDQTEST_FRESH", raising=False)
    answers._digest_of.cache_clear()


def _binary(tmp_path: Path, name: str, text: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    p = d / "qemu-system-x86_64"
    p.write_text(text)
    return p


def test_the_key_is_the_contents_and_the_modules(tmp_path: Path) -> None:
    a, b = _binary(tmp_path, "a", "one"), _binary(tmp_path, "b", "one")
    other = _binary(tmp_path, "c", "two")
    assert answers.build_id(a) == answers.build_id(b) != answers.build_id(other)
    (b.parent / "accel-qtest-x86_64.so").write_text("module")
    assert answers.build_id(b) != answers.build_id(a)


def test_asked_once_then_kept_unless_fresh_or_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _binary(tmp_path, "a", "one")
    asked: list[int] = []

    def ask() -> list[int]:
        asked.append(1)
        return [len(asked)]

    assert answers.cached(binary, "k", "x", ask) == [1]
    assert answers.cached(binary, "k", "x", ask) == [1] and len(asked) == 1
    assert answers.cached(binary, "k", "y", ask) == [2]  # another key
    assert answers.cached(binary, "n", "x", ask, keep=lambda a: False) == [3]
    assert answers.cached(binary, "n", "x", ask, keep=lambda a: False) == [4]
    monkeypatch.setenv("SDQTEST_FRESH", "1")
    assert answers.cached(binary, "k", "x", ask) == [5]


def test_kept_compat_and_realize_answers_are_qemus_own(qemu_build: QemuBuild,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept answers are read back, and equal what a live QEMU answers
    (``SDQTEST_FRESH``: every case asked again)."""
    machines = compat_matrix.machines_of(qemu_build)[-3:]
    some = realize.cases()[::4]
    kept = ([compat_matrix.realised(qemu_build, m) for m in machines],
            [realize.qemu_verdict(qemu_build, c) for c in some])
    files = sorted(answers.folder().rglob("*.json"))
    assert len([f for f in files if f.name.startswith(("compat-", "realize-"))]) \
        == len(machines) + len(some)
    again = ([compat_matrix.realised(qemu_build, m) for m in machines],
             [realize.qemu_verdict(qemu_build, c) for c in some])
    monkeypatch.setenv("SDQTEST_FRESH", "1")
    live = ([compat_matrix.realised(qemu_build, m) for m in machines],
            [realize.qemu_verdict(qemu_build, c) for c in some])
    assert kept == again == live
    assert any(v is not None for v in kept[1]) and any(v is None for v in kept[1])


def test_a_copy_of_the_binary_elsewhere_is_the_same_build(qemu_build: QemuBuild,
                                                          tmp_path: Path) -> None:
    """The probe kept for a binary serves a copy of it, with the copy's path."""
    from harness.qemu import builds

    copy = tmp_path / "copy" / qemu_build.binary.name
    copy.parent.mkdir()
    shutil.copy2(qemu_build.binary, copy)
    for extra in qemu_build.binary.parent.iterdir():  # an installed build's bundle link
        if extra.is_symlink():
            (copy.parent / extra.name).symlink_to(extra.resolve())
    first = builds.probe(qemu_build.binary)
    second = builds.probe(copy)
    assert second.binary == copy.absolute() and second.profile == first.profile
