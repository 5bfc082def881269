"""One version, written in pyproject.toml: ``harness.__version__`` and
``sdqtest --version`` read it from the installed distribution's metadata."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import harness
from harness.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_the_version_is_pyprojects(capsys: pytest.CaptureFixture[str]) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert harness.__version__ == version
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"sdqtest {version}\n"
    assert not [p for p in (ROOT / "harness").rglob("*.py")
                if f'"{version}"' in p.read_text()], "a second copy of the version"
