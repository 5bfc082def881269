"""A JSON Schema validator for the keywords sdqtest's schemas use.

``jsonschema`` is not a dependency of the package; this covers the subset
of JSON Schema 2020-12 that ``harness/schemas/*.json`` are written in (and
:func:`keywords` lets a test hold them to it).  Where ``jsonschema`` is
installed the tests validate with it too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

#: Keywords that constrain an instance, and those that only annotate.
CHECKED = {"type", "required", "properties", "additionalProperties", "items", "enum", "const",
           "minimum", "$ref"}
ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),)}


def keywords(schema: Any) -> set[str]:
    """Every keyword of ``schema``, nested schemas included."""
    out: set[str] = set()
    if not isinstance(schema, dict):
        return out
    out |= set(schema)
    for k, v in schema.items():
        if k in ("properties", "$defs"):
            for sub in v.values():
                out |= keywords(sub)
        elif k in ("items", "additionalProperties"):
            out |= keywords(v)
    return out


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           at: str = "$") -> Iterator[str]:
    """Where ``value`` breaks ``schema``: one message per violation."""
    root = root if root is not None else schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        yield from errors(value, target, root, at)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            yield f"{at}: {type(value).__name__}, not {'/'.join(kinds)}"
            return
    if "const" in schema and value != schema["const"]:
        yield f"{at}: {value!r}, not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield f"{at}: {value!r} not one of {schema['enum']}"
    if "minimum" in schema and isinstance(value, int | float) and value < schema["minimum"]:
        yield f"{at}: {value} below {schema['minimum']}"
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                yield f"{at}: no {k!r}"
        props = schema.get("properties", {})
        for k, sub in props.items():
            if k in value:
                yield from errors(value[k], sub, root, f"{at}.{k}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k in sorted(set(value) - set(props)):
                yield from errors(value[k], extra, root, f"{at}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from errors(item, schema["items"], root, f"{at}[{i}]")


def schema(name: str) -> dict[str, Any]:
    """``harness/schemas/NAME.schema.json``, as the installed package holds it."""
    data: dict[str, Any] = json.loads(
        (files("harness") / "schemas" / f"{name}.schema.json").read_text())
    return data


def names() -> list[str]:
    """Every schema the package publishes."""
    return sorted(f.name.removesuffix(".schema.json")
                  for f in (files("harness") / "schemas").iterdir()
                  if f.name.endswith(".schema.json"))


def validate(doc: Any, name: str) -> None:
    """``doc`` is valid by schema ``name`` (and by ``jsonschema`` where it
    is installed)."""
    bad = list(errors(doc, schema(name)))
    assert bad == [], bad[:10]
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.Draft202012Validator(schema(name)).validate(doc)


def check_schema() -> dict[str, Any]:
    """``sdqtest check --json``'s schema."""
    return schema("check")


def validate_check(doc: Any) -> None:
    validate(doc, "check")
