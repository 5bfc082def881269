"""The base build's model check, kept between reviews of the same base.

Reviewing several series against one base tree runs the same model check
on the same base binary every time.  Its verdicts are kept under the
sdqtest cache, keyed by the binary's contents, the runs asked for and the
harness's own source (a change to the model or a scenario makes a new key),
so a second review checks only the patched build.  Each verdict keeps
what differed from the model (:attr:`ModelEvidence.whats`), which the findings
use to say whom the model agrees with.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import harness
from harness.paths import cache_dir
from harness.review.classify import ModelEvidence


def _harness_digest() -> str:
    h = hashlib.sha256()
    root = Path(harness.__file__).parent
    for p in sorted(root.rglob("*.py")) + sorted(root.rglob("*.json")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def key_of(binary_digest: str, runs: list[tuple[str, str]], limit: int = 1) -> str:
    """The key of a base check: the binary, the harness, the runs and the
    limit of differences a run records (``--max-differences``)."""
    h = hashlib.sha256(binary_digest.encode())
    h.update(_harness_digest().encode())
    h.update(json.dumps(sorted(runs)).encode())
    h.update(f"limit={limit}".encode())
    return h.hexdigest()[:24]


def path_of(key: str) -> Path:
    return cache_dir() / "review" / "base-checks" / f"{key}.json"


def load(key: str) -> dict[str, ModelEvidence] | None:
    try:
        doc = json.loads(path_of(key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    return {str(k): ModelEvidence(str(v[0]), str(v[1]), tuple(str(x) for x in v[2]) if len(v) > 2
                            else ()) for k, v in doc.items()}


def store(key: str, verdicts: dict[str, ModelEvidence]) -> None:
    p = path_of(key)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps({k: [v.status, v.reason, list(v.whats)]
                                for k, v in verdicts.items()}))
    tmp.replace(p)
