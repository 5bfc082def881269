"""One error tree: every exception class of the harness derives from
SdqtestError and sits where the tree in harness/errors.py shows it."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from harness import errors
from tests.qtest.core.test_layers import modules

#: Raised to stop a scenario, but a result (see harness/errors.py).
#: Control flow, not errors: a divergence ends a run with its report, StopRun
#: ends a strict retry at the step it must explain, ModelStopped ends a run
#: where the model stopped a transfer QEMU keeps running, Fallback ends an
#: optimistic lockstep attempt that the runner then runs step by step,
#: _OverTime stops a mutant's in-process check at its time limit.
NOT_ERRORS = {"harness.check.divergence.Divergence", "harness.check.lockstep.StopRun",
              "harness.check.lockstep.ModelStopped", "harness.check.optimistic.Fallback",
              "harness.check.scoreboard.Stopped", "harness.bisect.mutants._OverTime"}

_NODE = re.compile(r"^    (?P<indent>[| ]*)(?:\+-- )?(?P<name>[A-Z]\w+)"
                   r"(?: \((?P<extra>\w+)\))?\s*(?:\[(?P<module>[\w.]+)\])?")


def tree() -> dict[str, tuple[str | None, str | None, str]]:
    """Name -> (parent, second base, module) from the errors.py docstring."""
    text = (errors.__doc__ or "").split("::", 1)[1].split("\n\n")[1]
    out: dict[str, tuple[str | None, str | None, str]] = {}
    stack: list[str] = []
    for line in text.splitlines():
        m = _NODE.match(line)
        if m is None or ("+--" not in line and line.strip() != "SdqtestError"):
            continue
        depth = len(m["indent"]) // 4 + (1 if "+--" in line else 0)
        del stack[depth:]
        parent = stack[-1] if stack else None
        stack.append(m["name"])
        out[m["name"]] = (parent, m["extra"], "harness." + (m["module"] or "errors"))
    return out


def harness_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in modules():
        if name.endswith("__main__"):
            continue
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == name):
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


def test_the_tree_parses() -> None:
    t = tree()
    assert t["SdqtestError"] == (None, None, "harness.errors")
    assert t["QtestTimeout"] == ("QemuGone", None, "harness.qemu.qtest")
    assert t["InstallError"] == ("SdqtestError", "RuntimeError", "harness.provision.install")
    assert len(t) > 25


def test_every_error_derives_from_the_root() -> None:
    bad = [n for n, cls in harness_exceptions().items()
           if n not in NOT_ERRORS and not issubclass(cls, errors.SdqtestError)]
    assert bad == [], f"not under SdqtestError: {bad}"


def test_every_error_is_in_the_documented_tree() -> None:
    t = tree()
    documented = {f"{mod}.{name}" for name, (_p, _x, mod) in t.items()}
    found = set(harness_exceptions()) - NOT_ERRORS
    assert sorted(found - documented) == [], "add them to the tree in harness/errors.py"
    assert sorted(documented - found) == [], "the tree names classes that are not there"


@pytest.mark.parametrize("name", sorted(tree()))
def test_the_tree_shows_the_real_bases(name: str) -> None:
    parent, extra, module = tree()[name]
    cls = getattr(importlib.import_module(module), name)
    bases = [b.__name__ for b in cls.__bases__ if b.__module__ != "builtins"]
    builtin = [b.__name__ for b in cls.__bases__ if b.__module__ == "builtins"]
    if parent is None:
        assert builtin == ["Exception"] and not bases
        return
    assert bases == [parent], f"{name}: bases {bases}, the tree says {parent}"
    assert builtin == ([extra] if extra else []), f"{name}: builtin bases {builtin}"
