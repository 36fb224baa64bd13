"""The report JSON Schema shipped in the package, and a fast validator compiled from it.

``jsonschema`` is the reference, but validating a report of thousands of tests with it takes
seconds. The schema is therefore compiled once into generated Python functions (the keywords
the schema uses, nothing more; about 70x faster); ``jsonschema`` runs only when a check fails,
to word the error. A keyword the compiler does not know makes compilation fail, so the schema
cannot grow past what is checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from ..errors import EdgeEnergyError

SCHEMA_VERSION = 2
"""The ``schema_version`` this version of pytest-edgeenergy writes; older versions are read
and migrated (:func:`.load.migrate`)."""

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})


class SchemaError(EdgeEnergyError, ValueError):
    """A document does not match the report schema; the message names where and why."""


@cache
def report_schema() -> dict[str, Any]:
    """The report JSON Schema (draft 2020-12) as shipped in the package."""
    text = resources.files(__package__).joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


_MISSING = object()


def _json_equal(a: Any, b: Any) -> bool:
    # JSON equality: true is not 1, 1 equals 1.0.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


class _CodeGen:
    """Compiles the schema into Python source: one function per object or array sub-schema.

    Generated code beats nested closures several times over on large reports, and keeping a
    function per compound schema keeps the nesting depth far below Python's block limit.
    """

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.functions: list[str] = []
        self.namespace: dict[str, Any] = {"_json_equal": _json_equal, "_MISSING": _MISSING}
        self.refs: dict[str, str] = {}
        self.inlining: list[str] = []
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def _const(self, value: Any, prefix: str = "c") -> str:
        name = self._name(prefix)
        self.namespace[name] = value
        return name

    def _target(self, pointer: str) -> Mapping[str, Any]:
        prefix = "#/$defs/"
        if not pointer.startswith(prefix) or pointer[len(prefix) :] not in self.root["$defs"]:
            raise SchemaError(f"report schema: unsupported $ref {pointer!r}")
        target: Mapping[str, Any] = self.root["$defs"][pointer[len(prefix) :]]
        return target

    def ref(self, pointer: str) -> str:
        if pointer not in self.refs:
            target = self._target(pointer)
            name = self._name("ref")
            self.refs[pointer] = name
            self.function(target, name)
        return self.refs[pointer]

    def _ref(self, pointer: str, var: str, ind: str) -> list[str]:
        """A reference's checks inline (saves a call per value), or a call if recursive."""
        target = self._target(pointer)
        if pointer in self.inlining:
            return [f"{ind}if not {self.ref(pointer)}({var}):\n", f"{ind}    return False\n"]
        self.inlining.append(pointer)
        try:
            return self.emit(target, var, ind)
        finally:
            self.inlining.pop()

    def function(self, schema: Mapping[str, Any], name: str | None = None) -> str:
        name = name or self._name("f")
        body = self.emit(schema, "v", "        ")
        # Required keys are read without an ``in`` test first: a missing one raises KeyError,
        # which means invalid (nothing else in the generated code can raise it).
        self.functions.append(
            f"def {name}(v):\n    try:\n"
            + "".join(body)
            + "        pass\n    except KeyError:\n        return False\n    return True\n"
        )
        return name

    def emit(self, schema: Mapping[str, Any], var: str, ind: str) -> list[str]:
        unknown = set(schema) - _ANNOTATIONS - _KEYWORDS
        if unknown:
            raise SchemaError(f"report schema: unsupported keyword(s) {sorted(unknown)}")
        out: list[str] = []
        fail = f"{ind}    return False\n"
        kind = f"type({var})"
        if "type" in schema:
            # The type, taken once, serves every check of this schema below.
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            kind = "_t"
            cond = " or ".join(_TYPE_EXPR[n].format(t=kind, v=var) for n in names)
            out += [f"{ind}{kind} = type({var})\n", f"{ind}if not ({cond}):\n", fail]
        if "const" in schema:
            out += [f"{ind}if not _json_equal({var}, {self._const(schema['const'])}):\n", fail]
        if "enum" in schema:
            if all(type(o) is str for o in schema["enum"]):
                # A string equals only the same string in JSON: a set lookup will do.
                options = self._const(frozenset(schema["enum"]), "enum")
                out += [f"{ind}if not ({kind} is str and {var} in {options}):\n", fail]
            else:
                options = self._const(tuple(schema["enum"]))
                out += [f"{ind}if not any(_json_equal({var}, o) for o in {options}):\n", fail]
        if "minimum" in schema:
            low = self._const(schema["minimum"])
            number = _TYPE_EXPR["number"].format(t=kind, v=var)
            out += [f"{ind}if ({number}) and {var} < {low}:\n", fail]
        if "minLength" in schema:
            n = int(schema["minLength"])
            out += [f"{ind}if {kind} is str and len({var}) < {n}:\n", fail]
        if "pattern" in schema:
            search = self._const(re.compile(schema["pattern"]).search, "re")
            out += [f"{ind}if {kind} is str and {search}({var}) is None:\n", fail]
        # After the checks that read the type variable: an inlined reference may reuse it.
        if "$ref" in schema:
            out += self._ref(schema["$ref"], var, ind)
        if "anyOf" in schema:
            alternatives = " or ".join(f"{self.function(s)}({var})" for s in schema["anyOf"])
            out += [f"{ind}if not ({alternatives}):\n", fail]
        if "items" in schema:
            out += self._items(schema["items"], var, ind, self._is(schema, "array", var))
        if {"properties", "required", "additionalProperties"} & set(schema):
            out += self._object(schema, var, ind, self._is(schema, "object", var))
        return out

    @staticmethod
    def _is(schema: Mapping[str, Any], name: str, var: str) -> str:
        """A test that ``var`` is of JSON type ``name``, cheap where the type is known."""
        if "type" not in schema or "$ref" in schema:  # an inlined $ref may reuse _t
            return _TYPE_EXPR[name].format(t=f"type({var})", v=var)
        if schema["type"] == name or schema["type"] == [name]:
            return "True"  # checked above: nothing else gets this far
        return _TYPE_EXPR[name].format(t="_t", v=var)

    def _items(self, item_schema: Mapping[str, Any], var: str, ind: str, guard: str) -> list[str]:
        x = self._name("x")
        kind = item_schema.get("type") if set(item_schema) == {"type"} else None
        if isinstance(kind, str) and kind in _TYPE_SETS:
            # Exact types, all checked in C: e.g. every sample a number.
            types = self._const(_TYPE_SETS[kind], "types")
            return [
                f"{ind}if {guard} and not {types}.issuperset(map(type, {var})):\n",
                f"{ind}    return False\n",
            ]
        if isinstance(kind, str):
            cond = _TYPE_EXPR[kind].format(t=f"type({x})", v=x)
        else:
            cond = f"{self.function(item_schema)}({x})"
        return [
            f"{ind}if {guard}:\n",
            f"{ind}    for {x} in {var}:\n",
            f"{ind}        if not ({cond}):\n",
            f"{ind}            return False\n",
        ]

    def _object(self, schema: Mapping[str, Any], var: str, ind: str, guard: str) -> list[str]:
        k, x = self._name("k"), self._name("x")
        out = [f"{ind}if {guard}:\n"]
        required = list(schema.get("required", ()))
        props: Mapping[str, Any] = schema.get("properties", {})
        reads, unread = [], [key for key in required if key not in props]
        for key, sub in props.items():
            if key in required:  # read directly: KeyError when missing (see function())
                body = self.emit(sub, x, ind + "    ")
                if body:
                    reads += [f"{ind}    {x} = {var}[{key!r}]\n", *body]
                else:
                    unread.append(key)
                continue
            body = self.emit(sub, x, ind + "        ")
            if body:
                reads.append(f"{ind}    {x} = {var}.get({key!r}, _MISSING)\n")
                reads.append(f"{ind}    if {x} is not _MISSING:\n")
                reads += body
        if unread:
            cond = " and ".join(f"{key!r} in {var}" for key in unread)
            out += [f"{ind}    if not ({cond}):\n", f"{ind}        return False\n"]
        out += reads
        extra = schema.get("additionalProperties", True)
        known = self._const(frozenset(props), "keys")
        if extra is False:
            if set(required) == set(props):
                # Every known key is present, so any other key makes the dict longer.
                out += [
                    f"{ind}    if len({var}) != {len(props)}:\n",
                    f"{ind}        return False\n",
                ]
            else:
                out += [
                    f"{ind}    if not {known}.issuperset({var}):\n",
                    f"{ind}        return False\n",
                ]
        elif isinstance(extra, dict):
            if not props:
                body = self.emit(extra, x, ind + "        ")
                if body:
                    out += [f"{ind}    for {x} in {var}.values():\n", *body]
            else:
                body = self.emit(extra, x, ind + "            ")
                if body:
                    out += [
                        f"{ind}    for {k}, {x} in {var}.items():\n",
                        f"{ind}        if {k} not in {known}:\n",
                        *body,
                    ]
        return out if len(out) > 1 else []


# {t}: the value's type (an expression or a variable holding it), {v}: the value.
_TYPE_EXPR = {
    "object": "{t} is dict",
    "array": "{t} is list",
    "string": "{t} is str",
    "boolean": "{t} is bool",
    "null": "{v} is None",
    "integer": "{t} is int or ({t} is float and {v}.is_integer())",
    "number": "{t} is float or {t} is int",
}


_TYPE_SETS: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
    "number": frozenset({int, float}),
}


_KEYWORDS = frozenset(
    {
        "type",
        "const",
        "enum",
        "$ref",
        "anyOf",
        "minimum",
        "minLength",
        "pattern",
        "items",
        "properties",
        "required",
        "additionalProperties",
    }
)


def compile_schema(schema: Mapping[str, Any], definition: str | None = None) -> Check:
    """A fast ``doc -> bool`` check for ``schema`` (or its ``$defs`` entry ``definition``).

    Supports the keywords in :data:`_KEYWORDS` and local ``#/$defs/`` references;
    :class:`SchemaError` for anything else.
    """
    gen = _CodeGen(schema)
    name = gen.function(schema) if definition is None else gen.ref(f"#/$defs/{definition}")
    exec("".join(gen.functions), gen.namespace)
    check: Check = gen.namespace[name]
    return check


@cache
def _compiled(definition: str | None) -> Check:
    return compile_schema(report_schema(), definition)


def _subschema(definition: str | None) -> dict[str, Any]:
    schema = report_schema()
    if definition is None:
        return schema
    return {
        "$schema": schema["$schema"],
        "$defs": schema["$defs"],
        "$ref": f"#/$defs/{definition}",
    }


def _explain(doc: Any, definition: str | None) -> str:
    import jsonschema  # type: ignore[import-untyped]

    validator = jsonschema.Draft202012Validator(_subschema(definition))
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"at {where}: {error.message}"


def is_valid(doc: Any, definition: str | None = None) -> bool:
    """True when ``doc`` matches the report schema (or its ``$defs`` entry ``definition``)."""
    return _compiled(definition)(doc)


def validate(doc: Any, definition: str | None = None) -> None:
    """Raise :class:`SchemaError` naming the first problem when ``doc`` does not match."""
    if _compiled(definition)(doc):
        return
    reason = _explain(doc, definition)
    if not reason:
        # The compiled checks and jsonschema disagree; jsonschema is the reference.
        return
    what = "report" if definition is None else f"{definition} entry"
    raise SchemaError(f"{what} does not match report schema {SCHEMA_VERSION}: {reason}")
