"""Every public class name is unique in the package: one ``Finding``, one
``Divergence``, one ``Verdict``, one outcome class of each idea, so that a
name read in a traceback or a docstring says which class it is.

No name is shared: :data:`LEFT` is empty.  The test fails on a new clash
and on a listed one that is gone (the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent

#: Class name -> the modules (relative to ``harness/``) defining it, for a
#: name still shared: none, every public class name is defined in one module.
LEFT: dict[str, frozenset[str]] = {}


def public_classes() -> dict[str, set[str]]:
    """Each public top-level class name -> the modules defining it."""
    out: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                out.setdefault(node.name, set()).add(str(path.relative_to(ROOT)))
    return out


def test_public_class_names_are_unique() -> None:
    shared = {name: frozenset(mods) for name, mods in public_classes().items()
              if len(mods) > 1}
    new = {n: sorted(m) for n, m in shared.items() if LEFT.get(n) != m}
    assert not new, f"public class names defined more than once (rename one): {new}"
    gone = sorted(set(LEFT) - set(shared))
    assert not gone, f"no longer shared, drop from LEFT: {gone}"


def test_the_check_vocabulary_is_one_class_each() -> None:
    """The result vocabulary of the check and the review: one class each."""
    classes = public_classes()
    for name in ("Finding", "Divergence", "Difference", "Scoreboard", "Testbench"):
        assert len(classes.get(name, ())) == 1, (name, classes.get(name))
    assert classes["Finding"] == {"check/scoreboard.py"}
    assert classes["Divergence"] == {"check/divergence.py"}
    assert "Board" in classes and classes["Board"] == {"hwdefs/boards.py"}
