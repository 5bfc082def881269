"""The corpus directory: kept inputs and findings, on disk.

Layout of a campaign directory::

    inputs/<hash>.json      an input worth mutating (it reached something new)
    findings/<slug>/        the reproducers of one finding (see :mod:`.emit`)
    findings.json           signature -> build, directory, times seen

An input file is ``{"ops": [...]}``, named by the hash of its operations,
so the same input kept twice (or by two shards) is one file.
:func:`merge` joins several campaign directories into one, findings
deduplicated by signature (the first reproducer kept, the counts added).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from harness.fuzz.ops import Op


def input_hash(ops: list[Op]) -> str:
    text = json.dumps(ops, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Corpus:
    """A campaign directory (created when missing)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.inputs_dir = self.root / "inputs"
        self.findings_dir = self.root / "findings"
        self.inputs_dir.mkdir(parents=True, exist_ok=True)
        self.findings_dir.mkdir(parents=True, exist_ok=True)
        self.index_file = self.root / "findings.json"
        self.index: dict[str, dict[str, Any]] = (
            json.loads(self.index_file.read_text()) if self.index_file.is_file() else {})

    def add_input(self, ops: list[Op]) -> Path:
        p = self.inputs_dir / f"{input_hash(ops)}.json"
        if not p.exists():
            p.write_text(json.dumps({"ops": ops}) + "\n")
        return p

    def inputs(self) -> list[list[Op]]:
        out = []
        for p in sorted(self.inputs_dir.glob("*.json")):
            try:
                out.append(list(json.loads(p.read_text())["ops"]))
            except (ValueError, KeyError, TypeError):
                continue  # a torn file from an interrupted run: not an input
        return out

    def known(self, sig: str) -> bool:
        return sig in self.index

    def seen(self, sig: str) -> None:
        """Count one more input that hit the known finding ``sig``."""
        self.index[sig]["count"] += 1
        self.save()

    def record(self, sig: str, build: str, directory: Path, **info: Any) -> None:
        self.index[sig] = {"build": build, "dir": str(directory.relative_to(self.root)),
                           "count": 1, **info}
        self.save()

    def save(self) -> None:
        tmp = self.index_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.index, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.index_file)


def merge(dest: Path, sources: list[Path]) -> Corpus:
    """Merge the campaign directories ``sources`` into ``dest``: every
    input, and each finding once by signature (counts added)."""
    out = Corpus(dest)
    for src in sources:
        c = Corpus(src)
        for p in c.inputs_dir.glob("*.json"):
            if not (out.inputs_dir / p.name).exists():
                shutil.copy2(p, out.inputs_dir / p.name)
        for sig, info in c.index.items():
            if sig in out.index:
                out.index[sig]["count"] += int(info.get("count", 1))
                builds = set(out.index[sig].get("builds", [out.index[sig]["build"]]))
                out.index[sig]["builds"] = sorted(builds | {info["build"]})
                continue
            target = out.root / info["dir"]
            if (c.root / info["dir"]).is_dir() and not target.exists():
                shutil.copytree(c.root / info["dir"], target)
            out.index[sig] = dict(info)
    out.save()
    return out
