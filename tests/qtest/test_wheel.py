"""sdqtest as a user installs it: the wheel built from this tree, installed
into a fresh virtual environment, run from a directory that is not the
checkout.  Everything it reads at run time (image recipes, the bug
catalogue's C tests and fixes, the field corpus, the explore corpus) must
come with the wheel as package data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from harness.qemu import builds

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: What a wheel is built from (the rest of the checkout is not shipped).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "harness")
#: Files of the tree that are not meant for the wheel.
NOT_SHIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
#: The build ``check --group card`` runs on.
BUILD = "11.1"


def _run(cmd: list[str], cwd: Path, env: dict[str, str],
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd)}: status {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _clean_env() -> dict[str, str]:
    """The caller's environment without what points Python or pytest at the checkout."""
    env = dict(os.environ)
    for var in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "VIRTUAL_ENV",
                "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST"):
        env.pop(var, None)
    return env


def _build_wheel(tmp: Path, env: dict[str, str]) -> Path:
    """``pip wheel`` of a copy of the sources (a build in the checkout would
    leave ``build/`` there, and a stale ``build/`` would leak into the wheel)."""
    src = tmp / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=NOT_SHIPPED)
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"),
          str(src)], tmp, env, timeout=180)
    (wheel,) = (tmp / "dist").glob("sdqtest-*.whl")
    return wheel


def _shipped(root: Path) -> set[str]:
    """Every file of the tree's ``harness`` package, as a path in a wheel."""
    return {p.relative_to(root).as_posix() for p in (root / "harness").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _check_contents(wheel: Path) -> None:
    """Every file of ``harness/`` is in the wheel, nothing else is, and no
    ``pytest11`` entry point loads the plugin into every pytest session."""
    z = zipfile.ZipFile(wheel)
    names = set(z.namelist())
    missing = _shipped(ROOT) - names
    assert not missing, f"files of harness/ left out of the wheel: {sorted(missing)[:20]}"
    for data in ("harness/py.typed", "harness/images/recipes.toml",
                 "harness/bugs/data/tests/sdqtest-sdhci.h",
                 "harness/scenarios/explore_corpus.json", "harness/check/__init__.py"):
        assert data in names, data
    assert not [n for n in names if not n.startswith(("harness/", "sdqtest-"))], names
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "pytest11" not in z.read(meta).decode()


def _install(tmp: Path, wheel: Path, env: dict[str, str]) -> Path:
    """A fresh venv (no system site-packages) with the wheel; the dependencies
    come from the package index, as for a user.  pip runs from outside
    (``--python``), so the venv needs none of its own.  Returns its python."""
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    py = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-compile",
          str(wheel)], tmp, env, timeout=300)
    return py


def _check_data(py: Path, cwd: Path, env: dict[str, str]) -> None:
    """The installed package finds its data: recipes, the bug catalogue's C
    tests, the field corpus and the explore corpus."""
    out = _run([str(py), "-c",
                "from harness import images\n"
                "from harness.bugs.catalog import BUGS, C_HELPERS\n"
                "from harness.replay.engine import field_corpus\n"
                "from harness.scenarios import explore\n"
                "print(len(images.recipes()), C_HELPERS.is_file(),"
                " all(b.c_test is None or b.c_test.is_file() for b in BUGS),"
                " len(field_corpus()), len(explore.load()['inputs']))"], cwd, env).stdout
    n_recipes, helpers, c_tests, n_field, n_corpus = out.split()
    assert int(n_recipes) > 0 and helpers == c_tests == "True", out
    assert int(n_field) >= 20 and int(n_corpus) > 0, out


def test_the_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    env = _clean_env()
    wheel = _build_wheel(tmp_path, env)
    _check_contents(wheel)
    py = _install(tmp_path, wheel, env)
    sdq = py.parent / "sdqtest"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(py), "-c", "import harness; print(harness.__file__)"], elsewhere, env)
    assert Path(where.stdout.strip()).is_relative_to(py.parent.parent), where.stdout
    _check_data(py, elsewhere, env)

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _run([str(sdq), "--version"], elsewhere, env).stdout.strip() == f"sdqtest {version}"
    listed = _run([str(sdq), "bugs"], elsewhere, env).stdout
    assert "0001-sd-lock-pwd-len" in listed, listed
    for command in ("replay", "review"):
        assert "usage: sdqtest " + command in _run([str(sdq), command, "--help"],
                                                   elsewhere, env).stdout

    # The pytest plugin: absent unless asked for, with its --sdq- options when asked.
    plain = _run([str(py), "-m", "pytest", "--help"], elsewhere, env).stdout
    asked = _run([str(py), "-m", "pytest", "-p", "harness.pytest_plugin", "--help"],
                 elsewhere, env).stdout
    assert "--sdq-qemu" not in plain and "--sdq-qemu" in asked and "--sdq-machine" in asked

    if BUILD not in builds.installed():
        pytest.skip(f"the wheel works; 'check --qemu {BUILD}' not run: QEMU {BUILD} is not "
                    "installed (sdqtest qemu install)")
    out = _run([str(sdq), "check", "--qemu", BUILD, "--group", "card"], elsewhere, env,
               timeout=300)
    assert "card" in out.stdout and "agree" in out.stdout, out.stdout
