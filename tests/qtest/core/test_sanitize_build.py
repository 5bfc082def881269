"""``sdqtest qemu build SRC --sanitize address,undefined``: the configure
flags, from ``configure --help`` texts written here in the two shapes QEMU
has had (its own ``--enable-asan``/``--enable-ubsan`` since 6.0, one
``--enable-sanitizers`` before)."""

from __future__ import annotations

import pytest

from harness import cli
from harness.provision.build import BuildSetupError, sanitizer_flags

NEW = """Usage: configure [options]
  --enable-asan            enable address sanitizer
  --enable-tsan            enable thread sanitizer
  --enable-ubsan           enable undefined behaviour sanitizer
"""
OLD = """  --enable-sanitizers      enable default sanitizers
  --enable-tsan            enable thread sanitizer
"""


def test_asan_and_ubsan_flags() -> None:
    assert sanitizer_flags(NEW, ("address", "undefined")) == [
        "--enable-asan", "--enable-ubsan", "--extra-cflags=-fsanitize-recover=address"]
    assert sanitizer_flags(NEW, ("undefined",)) == ["--enable-ubsan"]


def test_older_configure_has_one_switch_for_both() -> None:
    assert sanitizer_flags(OLD, ("address", "undefined")) == [
        "--enable-sanitizers", "--extra-cflags=-fsanitize-recover=address"]


def test_unknown_names_and_missing_options_are_one_line_errors() -> None:
    with pytest.raises(BuildSetupError, match="unknown sanitizer thread"):
        sanitizer_flags(NEW, ("thread",))
    with pytest.raises(BuildSetupError, match="no --enable-asan"):
        sanitizer_flags("  --enable-tsan  x\n", ("address",))


def test_cli_refuses_an_unknown_sanitizer(tmp_path: object,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["qemu", "build", "/nonexistent", "--sanitize", "address,memory"]) == 2
    assert "unknown sanitizer memory" in capsys.readouterr().err
