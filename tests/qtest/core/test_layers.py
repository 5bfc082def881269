"""Dependencies point one way: the layer rule of ``harness/__init__.py``.

Every module's imports (those inside functions too) are read with ``ast``.
The test fails on an import cycle between modules and on an import that
goes against :data:`LAYERS`, the one statement of the rule; the package
docstring shows the same table, rendered by :func:`render`.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent

#: Layer -> the layers its modules may import (besides their own layer),
#: lowest layers first.  driver and scenarios see devices only through
#: target; qemu and model never see each other.
LAYERS: dict[str, tuple[str, ...]] = {
    "errors": (),
    "base": ("errors",),
    "target": ("base", "errors"),
    "provision": ("base", "errors"),
    "model": ("target", "base", "errors"),
    "qemu": ("provision", "target", "base", "errors"),
    "driver": ("target", "base", "errors"),
    "scenarios": ("driver", "target", "base", "errors"),
    "check": ("scenarios", "driver", "qemu", "provision", "model", "target", "base", "errors"),
    "explore": ("check", "scenarios", "driver", "qemu", "provision", "model", "target", "base",
                "errors"),
    "guest": ("qemu", "provision", "target", "base", "errors"),
    "fuzz": ("check", "scenarios", "driver", "qemu", "provision", "model", "target", "base",
             "errors"),
    "bench": ("guest", "check", "scenarios", "driver", "qemu", "provision", "model", "target",
              "base", "errors"),
    "bisect": ("bench", "guest", "check", "scenarios", "driver", "qemu", "provision", "model",
               "target", "base", "errors"),
    "bugs": ("bisect", "check", "scenarios", "driver", "qemu", "provision", "model", "target",
             "base", "errors"),
    "review": ("bisect", "bench", "guest", "check", "scenarios", "driver", "qemu", "provision",
               "model", "target", "base", "errors"),
    "cli": ("review", "bugs", "bisect", "bench", "fuzz", "guest", "explore", "check",
            "scenarios", "driver", "qemu", "provision", "model", "target", "base", "errors"),
}

#: Module (or package prefix) -> layer.  Every module must be listed.
MODULES: dict[str, str] = {
    "harness.errors": "errors",
    "harness.paths": "base",
    "harness.profile": "base",
    "harness.machine": "base",
    "harness.table": "base",
    "harness.progress": "base",
    "harness.images": "base",
    "harness.hwdefs": "base",
    "harness.ledger": "base",
    "harness.provision": "provision",
    "harness.target": "target",
    "harness.model": "model",
    "harness.qemu": "qemu",
    "harness.guest": "guest",
    "harness.driver": "driver",
    "harness.scenarios": "scenarios",
    "harness.check": "check",
    "harness.replay": "check",
    "harness.explore": "explore",
    "harness.fuzz": "fuzz",
    "harness.bench": "bench",
    "harness.bisect": "bisect",
    "harness.bugs": "bugs",
    "harness.review": "review",
    "harness.__main__": "cli",
    "harness.cli": "cli",
    "harness.commands": "cli",
    "harness.pytest_plugin": "cli",
}

def render() -> str:
    """The table as the package docstring shows it, highest layer first."""
    by_layer: dict[str, list[str]] = {name: [] for name in LAYERS}
    for mod, layer in MODULES.items():
        short = mod.removeprefix("harness.")
        by_layer[layer].append(short + (".*" if (ROOT / short).is_dir() else ""))
    lines = []
    for name in reversed(LAYERS):
        lines.append(f"    {name:10} {', '.join(by_layer[name])}")
        allowed = ", ".join(LAYERS[name]) or "nothing"
        lines += textwrap.wrap(allowed, 86, initial_indent=" " * 15 + "-> ",
                               subsequent_indent=" " * 18)
    return "\n".join(lines)


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = ["harness", *p.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def sources() -> dict[str, tuple[str, bool]]:
    """Module -> (its source, whether it is a package)."""
    return {m: (p.read_text(), p.name == "__init__.py") for m, p in modules().items()}


def imports(mods: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the harness modules it imports (anywhere in its body).

    ``from P import name`` counts as importing ``P.name`` when that is a
    module, else ``P``; a parent package imported implicitly does not count.
    """

    def known(name: str) -> str:
        while name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for mod, (text, is_package) in mods.items():
        package = mod if is_package else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(text, mod)):
            if isinstance(node, ast.Import):
                deps |= {known(a.name) for a in node.names if a.name.split(".")[0] == "harness"}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                if base.split(".")[0] != "harness":
                    continue
                for a in node.names:
                    full = f"{base}.{a.name}"
                    deps.add(full if full in mods else known(base))
        deps.discard(mod)
        graph[mod] = deps
    return graph


def layer_of(mod: str) -> str | None:
    best = max((m for m in MODULES if mod == m or mod.startswith(m + ".")), key=len,
               default=None)
    return MODULES[best] if best else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules() if m != "harness" and layer_of(m) is None] == []


def test_no_import_cycles() -> None:
    found = cycles(imports(sources()))
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_imports_follow_the_layers() -> None:
    bad = []
    for mod, deps in imports(sources()).items():
        mine = layer_of(mod)
        if mine is None:
            continue
        for dep in sorted(deps):
            theirs = layer_of(dep)
            if theirs is not None and theirs != mine and theirs not in LAYERS[mine]:
                bad.append(f"{mod} ({mine}) imports {dep} ({theirs})")
    assert bad == [], "imports against the layers:\n" + "\n".join(bad)


def test_layers_are_one_way() -> None:
    """The table itself: no two layers may import each other."""
    for name, allowed in LAYERS.items():
        for other in allowed:
            assert name not in LAYERS[other], f"{name} and {other} may import each other"
    assert "model" not in LAYERS["qemu"] and "qemu" not in LAYERS["model"]


def test_package_docstring_states_the_table() -> None:
    assert render() in (harness.__doc__ or ""), "harness/__init__.py should read:\n" + render()


def test_the_checker_sees_what_it_must() -> None:
    """The graph builder finds imports inside functions, relative ones, and
    cycles; the layer check flags an upward import."""
    fake = {
        "harness": ("", True),
        "harness.model": ("", True),
        "harness.qemu": ("", True),
        "harness.model.a": ("import os\n\ndef f():\n    from harness.qemu import b\n", False),
        "harness.qemu.b": ("from . import c\nimport harness.qemu\n", False),
        "harness.qemu.c": ("from harness.model.a import f\n", False),
    }
    graph = imports(fake)
    assert graph == {"harness": set(), "harness.model": set(), "harness.qemu": set(),
                     "harness.model.a": {"harness.qemu.b"},
                     "harness.qemu.b": {"harness.qemu.c", "harness.qemu"},
                     "harness.qemu.c": {"harness.model.a"}}
    assert cycles(graph) == [["harness.model.a", "harness.qemu.b", "harness.qemu.c"]]
    assert "qemu" not in LAYERS[layer_of("harness.model.a") or ""]
