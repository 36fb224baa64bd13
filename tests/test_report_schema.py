"""The shipped JSON Schema and the fast validator compiled from it."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.report.schema import (
    SCHEMA_VERSION,
    SchemaError,
    compile_schema,
    is_valid,
    report_schema,
    validate,
)

REFERENCE = jsonschema.Draft202012Validator(report_schema())
SMALL = synthetic_report(workloads=("resnet18",), batch_sizes=(8,), gpu_freqs_hz=(612e6,))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


PATHS = _paths(SMALL)[1:]
ODD_VALUES = [None, True, 0, 1, 1.0, 2.5, -3, "", "x", "0" * 32, [], [1.5], {}, {"a": 1}]


def test_schema_is_valid_draft_2020_12_reading_versions_1_and_2() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"]["enum"] == [1, SCHEMA_VERSION]
    assert SCHEMA_VERSION == 2


def test_synthetic_report_valid_for_both_validators() -> None:
    assert REFERENCE.is_valid(SMALL)
    assert is_valid(SMALL)
    validate(SMALL)


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from(PATHS),
    action=st.sampled_from(["set", "delete", "add"]),
    value=st.sampled_from(ODD_VALUES),
)
def test_fast_validator_agrees_with_jsonschema(
    path: tuple[Any, ...], action: str, value: Any
) -> None:
    doc = copy.deepcopy(SMALL)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "set":
        parent[last] = value
    elif action == "delete":
        if isinstance(parent, list):
            parent.pop(last)
        else:
            del parent[last]
    else:
        target = parent[last]
        if isinstance(target, dict):
            target["unexpected_key"] = value
        elif isinstance(target, list):
            target.append(value)
        else:
            parent[last] = [target]
    assert is_valid(doc) == REFERENCE.is_valid(doc)


def test_validate_names_the_location() -> None:
    doc = copy.deepcopy(SMALL)
    doc["tests"][0]["metrics"]["energy_j"]["unit"] = 5
    with pytest.raises(SchemaError, match=r"tests/0/metrics/energy_j/unit"):
        validate(doc)


def test_entry_definition_validation() -> None:
    entry = copy.deepcopy(SMALL["tests"][0])
    validate(entry, "test")
    entry["status"] = "maybe"
    assert not is_valid(entry, "test")
    with pytest.raises(SchemaError, match="maybe"):
        validate(entry, "test")


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer"}, 1.0, True),
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"const": 1}, True, False),
        ({"const": 1}, 1.0, True),
        ({"enum": ["a", "b"]}, "b", True),
        ({"type": "string", "minLength": 2}, "a", False),
        ({"minimum": 0}, "not a number", True),
        ({"type": "object", "additionalProperties": {"type": "number"}}, {"a": "x"}, False),
        ({"type": "object", "additionalProperties": {"type": "number"}}, {"a": 2}, True),
        ({"anyOf": [{"type": "null"}, {"type": "string"}]}, 3, False),
    ],
)
def test_compiled_keywords_match_json_schema(
    schema: dict[str, Any], value: Any, expected: bool
) -> None:
    assert compile_schema(schema)(value) is expected
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is expected


def test_unknown_keyword_is_refused() -> None:
    with pytest.raises(SchemaError, match="unsupported keyword"):
        compile_schema({"type": "string", "format": "date-time"})
    with pytest.raises(SchemaError, match="unsupported \\$ref"):
        compile_schema({"$ref": "https://example.com/x.json"})


_NODE = {
    "$defs": {
        "node": {
            "type": ["object", "null"],
            "required": ["value"],
            "additionalProperties": False,
            "properties": {
                "value": {"type": "number", "minimum": 0},
                "next": {"$ref": "#/$defs/node"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "counts": {"type": "array", "items": {"type": "integer"}},
                "kind": {"enum": ["a", "b"]},
                "mixed": {"enum": ["1", 1, None]},
            },
        },
    },
    "$ref": "#/$defs/node",
}
_OPEN = {
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "string", "minLength": 1}, "x": {}},
    "additionalProperties": {"type": ["number", "null"]},
}


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (_NODE, None),
        (_NODE, {"value": 1}),
        (_NODE, {"value": -1}),
        (_NODE, {"value": 1, "next": {"value": 2, "next": None}}),
        (_NODE, {"value": 1, "next": {"value": 2, "next": {"value": "3"}}}),
        (_NODE, {"value": 1, "next": {"next": None}}),
        (_NODE, {"value": 1, "other": 2}),
        (_NODE, {"value": 1, "tags": ["a", "b"], "counts": [1, 2.0]}),
        (_NODE, {"value": 1, "tags": ["a", 1]}),
        (_NODE, {"value": 1, "tags": [True]}),
        (_NODE, {"value": 1, "counts": [1.5]}),
        (_NODE, {"value": 1, "counts": [True]}),
        (_NODE, {"value": 1, "kind": "a"}),
        (_NODE, {"value": 1, "kind": "c"}),
        (_NODE, {"value": 1, "kind": 1}),
        (_NODE, {"value": 1, "mixed": 1.0}),
        (_NODE, {"value": 1, "mixed": True}),
        (_NODE, {"value": True}),
        (_NODE, [1]),
        (_OPEN, {"id": "a"}),
        (_OPEN, {"id": ""}),
        (_OPEN, {"id": "a", "x": [1], "y": 2.5, "z": None}),
        (_OPEN, {"id": "a", "y": "no"}),
        (_OPEN, {"x": 1}),
        (_OPEN, "not an object"),
    ],
)
def test_compiled_checks_agree_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert compile_schema(schema)(value) is expected
