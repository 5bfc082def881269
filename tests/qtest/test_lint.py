"""The code stays ruff- and mypy-clean (the project's style rules)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tool,args", [
    ("ruff", ["check", "harness", "tests"]),
    ("mypy", []),  # pyproject: strict, package harness
])
def test_clean(tool: str, args: list[str]) -> None:
    exe = shutil.which(tool, path=str(Path(sys.executable).parent)) or shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} is not installed (pip install 'sdqtest[test]')")
    p = subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
