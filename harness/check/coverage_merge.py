"""Coverage of several gcov builds of one QEMU source as one measurement.

One tree configured for several targets (``sdqtest qemu build SRC --coverage
--arm``) compiles ``hw/sd`` once into ``libsystem``: every emulator's runs
add to the same ``.gcda`` files, and nothing needs merging.  Separate trees
(a riscv64 build beside an x86_64/aarch64 one) each hold their own counts;
:func:`merge` adds them line by line, branch by branch, function by function
(what ``gcov-tool merge`` does to the ``.gcda`` files, here on what gcov
reports), after checking that each file is the same source in every tree:
counts of different sources cannot be added.

The table covers every ``hw/sd/*.c`` file of the source tree
(:func:`tree_files`): a file that no build compiled is listed as such, not
left out.  With gcovr installed (``pip install 'sdqtest[bench]'``),
:func:`gcovr_report` writes gcovr's HTML (an annotated page per file) and a
Cobertura XML for CI from the same builds, each build read by gcovr into a
JSON tracefile and the tracefiles merged by gcovr (``--add-tracefile``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.check.coverage import SOURCES, Coverage, CoverageBuild, CoverageError, FileCoverage

#: The system emulators a coverage build may hold, by target name.
EMULATORS: dict[str, str] = {"x86_64": "qemu-system-x86_64",
                             "aarch64": "qemu-system-aarch64",
                             "riscv64": "qemu-system-riscv64"}
#: gcovr is given this long per build (it runs gcov on each hw/sd object).
GCOVR_TIMEOUT = 900.0


def emulators(cb: CoverageBuild) -> dict[str, Path]:
    """The emulators ``cb``'s build directory holds, by target name."""
    return {t: cb.build_dir / exe for t, exe in EMULATORS.items()
            if (cb.build_dir / exe).is_file()}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_same(a: FileCoverage, b: FileCoverage) -> None:
    """Refuse to add counts of two different sources of one path."""
    if a.source is None or b.source is None or a.source == b.source:
        return
    if _digest(a.source) != _digest(b.source):
        raise CoverageError(f"{a.path} differs between {a.source} and {b.source}: counts of "
                            "different sources cannot be merged (build each target from one "
                            "tree)")


def merge(measured: Sequence[Coverage]) -> Coverage:
    """The counts of several builds of the same sources, added (the inputs are
    left as they are)."""
    out = Coverage()
    for cov in measured:
        for path, fc in cov.files.items():
            mine = out.files.get(path)
            if mine is None:
                out.files[path] = copy.deepcopy(fc)
            else:
                _check_same(mine, fc)
                mine.merge(fc)
    return out


def source_root(cb: CoverageBuild) -> Path | None:
    """The QEMU tree ``cb`` was configured from (meson's ``meson-info.json``)."""
    try:
        info = json.loads((cb.build_dir / "meson-info" / "meson-info.json").read_text())
        src = Path(str(info["directories"]["source"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return src if src.is_dir() else None


def tree_files(root: Path | None, roots: Sequence[str] = SOURCES) -> list[str]:
    """Every ``.c`` file under ``roots`` in the tree at ``root``."""
    if root is None:
        return []
    return sorted(f"{r.rstrip('/')}/{p.name}" for r in roots
                  for p in (root / r).glob("*.c") if p.is_file())


def not_built(cov: Coverage, files: Sequence[str]) -> list[str]:
    """The tree's files that none of the measured builds compiled."""
    return [f for f in files if f not in cov.files]


def gcovr_command() -> list[str] | None:
    """How to run gcovr: beside this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / "gcovr"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("gcovr")
    return [found] if found else None


def _gcovr(cmd: list[str], cwd: Path) -> None:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                           timeout=GCOVR_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as e:
        raise CoverageError(f"gcovr took over {GCOVR_TIMEOUT:.0f} s in {cwd}") from e
    if r.returncode != 0:
        raise CoverageError(f"gcovr failed in {cwd}: {(r.stderr or r.stdout).strip()[-300:]}")


def tracefile(gcovr: list[str], cb: CoverageBuild, root: Path, out: Path) -> Path:
    """gcovr's JSON tracefile of ``cb``'s ``hw/sd`` objects, paths relative to
    ``root`` (an object with notes and no counts reads as never executed)."""
    objs = [str(p.with_suffix(".gcda")) if p.with_suffix(".gcda").is_file() else str(p)
            for p in cb.notes()]
    # an absolute filter is one that starts with '/' (gcovr: no '^')
    filt = re.escape(str(root.resolve()) + "/") + "(" + "|".join(
        re.escape(r) for r in cb.roots) + ")"
    _gcovr([*gcovr, "--root", str(root), "--filter", filt, "--gcov-executable", cb.gcov,
            "--json", str(out), *objs], cb.build_dir)
    return out


def gcovr_report(builds: Sequence[CoverageBuild], out_dir: Path, title: str) -> list[Path]:
    """gcovr's HTML (``index.html``, a page per file) and Cobertura XML
    (``coverage.xml``) of the builds' merged counts, in ``out_dir``."""
    gcovr = gcovr_command()
    if gcovr is None:
        raise CoverageError("gcovr is not installed (pip install 'sdqtest[bench]')")
    out_dir.mkdir(parents=True, exist_ok=True)
    roots = [source_root(cb) for cb in builds]
    if any(r is None for r in roots):
        raise CoverageError("a build without meson-info/meson-info.json: gcovr needs each "
                            "build's source tree")
    traces = [tracefile(gcovr, cb, r, out_dir / f"tracefile-{k}.json")
              for k, (cb, r) in enumerate(zip(builds, roots, strict=True), 1) if r]
    index, xml = out_dir / "index.html", out_dir / "coverage.xml"
    adds = [a for t in traces for a in ("--add-tracefile", str(t))]
    _gcovr([*gcovr, "--root", str(roots[0]), *adds, "--html-details", str(index),
            "--html-title", title, "--cobertura", str(xml)], out_dir)
    return [index, xml]
