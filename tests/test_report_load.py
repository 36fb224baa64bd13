"""Loading reports: clear errors naming the file, and the long DataFrame."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.report import load as load_module
from pytest_edgeenergy.report.load import (
    LONG_COLUMNS,
    ReportError,
    load,
    load_report,
    read_json,
    require_tests,
    version_notes,
)
from pytest_edgeenergy.report.schema import SCHEMA_VERSION


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_valid_report_loads(tmp_path: Path) -> None:
    report = synthetic_report()
    assert load_report(_write(tmp_path / "r.json", report)) == json.loads(json.dumps(report))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b"", "is empty"),
        (b"\xff\xfe{", "not UTF-8"),
        (b"[1, 2]", "not a pytest-edgeenergy report (top level is a JSON list"),
        (b'{"benchmarks": [], "machine_info": {}}', "looks like a pytest-benchmark file"),
        (b'{"a": 1}', "not a pytest-edgeenergy report (top-level keys: a)"),
        (b'{"schema_version": "1"}', "schema_version '1' is not a positive integer"),
    ],
)
def test_bad_files_name_the_file_and_problem(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError) and info.value.path == path


def test_directory_is_not_a_report(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="is a directory"):
        load_report(tmp_path)


def test_truncated_report_says_truncated_with_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(synthetic_report(), indent=1)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ReportError, match=r"cut.json: truncated JSON.*line \d+, column \d+"):
        load_report(path)


def test_corrupt_report_says_where(tmp_path: Path) -> None:
    lines = json.dumps(synthetic_report(), indent=1).splitlines()
    lines[10] = lines[10] + " @@"
    path = tmp_path / "corrupt.json"
    path.write_text("\n".join(lines))
    with pytest.raises(ReportError, match=r"corrupt JSON at line 11, column \d+"):
        load_report(path)


def test_newer_schema_is_refused_with_versions(tmp_path: Path) -> None:
    report = synthetic_report()
    report["schema_version"] = SCHEMA_VERSION + 1
    report["new_field"] = {"x": 1}
    path = _write(tmp_path / "new.json", report)
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert str(info.value) == (
        f"{path}: written by a newer pytest-edgeenergy (schema {SCHEMA_VERSION + 1}); "
        f"this version reads {SCHEMA_VERSION}"
    )


def test_schema_violation_names_the_location(tmp_path: Path) -> None:
    report = synthetic_report()
    del report["tests"][1]["metrics"]["energy_j"]["unit"]
    path = _write(tmp_path / "v.json", report)
    with pytest.raises(ReportError, match=r"v.json: report does not match .*tests/1/metrics"):
        load_report(path)


def test_other_tool_and_inconsistent_simulated_flag(tmp_path: Path) -> None:
    report = synthetic_report()
    report["tool"]["name"] = "other-tool"
    with pytest.raises(ReportError, match="written by other-tool"):
        load_report(_write(tmp_path / "o.json", report))
    report = synthetic_report()
    report["simulated"] = False
    with pytest.raises(ReportError, match=r"disagrees with 'device.simulated'"):
        load_report(_write(tmp_path / "s.json", report))


def test_empty_report_loads_but_callers_needing_results_say_so(tmp_path: Path) -> None:
    report = synthetic_report(n_tests=0)
    path = _write(tmp_path / "empty.json", report)
    loaded = load_report(path)
    assert loaded["tests"] == []
    with pytest.raises(ReportError, match=r"empty.json: has no test results"):
        require_tests(loaded, path)
    frame = load([path])
    assert list(frame.columns) == list(LONG_COLUMNS) and len(frame) == 0


def test_different_tool_versions_load_and_are_noted() -> None:
    old, new = synthetic_report(seed=1), synthetic_report(seed=2)
    old["tool"]["version"] = "0.0.9"
    unfinished = synthetic_report(seed=3)
    unfinished["finished_at"] = None
    notes = version_notes([("a.json", old), ("b.json", new), ("c.json", unfinished)])
    assert any("different pytest-edgeenergy versions" in n and "a.json 0.0.9" in n for n in notes)
    assert any(n.startswith("c.json: the run did not finish") for n in notes)
    assert version_notes([("b.json", new)]) == []


def test_long_frame_one_row_per_test_and_metric(tmp_path: Path) -> None:
    a = synthetic_report(seed=1)
    b = synthetic_report(sim_model="nano", seed=2, gpu_freqs_hz=(614.4e6,))
    frame = load([_write(tmp_path / "a.json", a), _write(tmp_path / "b.json", b)])
    assert list(frame.columns) == list(LONG_COLUMNS)
    expected_rows = sum(len(t["metrics"]) for r in (a, b) for t in r["tests"])
    assert len(frame) == expected_rows
    row = frame[
        (frame["source"] == str(tmp_path / "b.json")) & (frame["metric"] == "energy_per_item")
    ].iloc[0]
    test = b["tests"][0]
    assert row["test_id"] == test["id"]
    assert row["device"] == "sim:nano (simulated)" and bool(row["simulated"])
    assert row["gpu_freq_hz"] == pytest.approx(614.4e6)
    assert row["op"] == "gpu614.4MHz"
    assert row["unit"] == "J/item"
    assert row["value"] == pytest.approx(test["metrics"]["energy_per_item"]["value"])
    assert row["n"] == 5 and len(row["samples"]) == 5
    assert row["batch_size"] == test["params"]["batch_size"]
    assert set(frame["device_fingerprint"]) == {
        a["device"]["fingerprint"],
        b["device"]["fingerprint"],
    }


def test_load_stops_at_the_first_bad_file(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.json", synthetic_report())
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ReportError, match=r"bad.json: truncated"):
        load([good, bad])


# -- the optional fast parser (orjson) reads exactly what json reads -------------------------

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)  # orjson reads integers beyond 64 bits as floats
    | st.floats()  # NaN and infinities: json writes them, orjson refuses, json reads them
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=_json_values, indent=st.sampled_from([None, 1]))
def test_fast_and_plain_parsing_read_the_same_report(
    tmp_path_factory: pytest.TempPathFactory, value: Any, indent: int | None
) -> None:
    report = synthetic_report(n_tests=1)
    report["settings"] = {"value": value}
    path = tmp_path_factory.mktemp("parse") / "r.json"
    path.write_text(json.dumps(report, indent=indent))
    expected = json.loads(path.read_text())
    fast = load_report(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(load_module, "_orjson_loads", None)
        plain = load_report(path)
    assert repr(fast) == repr(plain) == repr(expected)  # repr: NaN == NaN, -0.0 vs 0.0


_numbers = st.recursive(
    st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**25), 10**25)),
    lambda kids: st.lists(kids, max_size=4),
    max_leaves=20,
)


def _long_integers(x: Any) -> bool:
    if isinstance(x, list):
        return any(_long_integers(v) for v in x)
    return isinstance(x, int) and len(str(abs(x))) >= 19


@settings(max_examples=300, deadline=None)
@given(doc=_numbers, indent=st.sampled_from([None, 1]))
@example(doc=[0.0016956194305141829, 12345678901234567890], indent=None)
@example(doc=[0.00012345678901234567], indent=None)
def test_only_an_integer_of_19_digits_sends_a_text_to_json(doc: Any, indent: int | None) -> None:
    """orjson reads integers beyond 64 bits as floats: such a text must go to json, and a
    text of floats (0.0016956194305141829: 19 digits after the point) must not."""
    raw = json.dumps(doc, indent=indent).encode()
    assert load_module._has_long_integer(raw) == _long_integers(doc)


class _Pairs(tuple):  # type: ignore[type-arg]
    """A JSON object as written: its (key, value) pairs, a key possibly given twice."""


_texts = st.text(alphabet=st.sampled_from('ab:"\\ \u00e9'), max_size=5)
_trees = st.recursive(
    st.one_of(st.integers(-5, 5), _texts, st.booleans(), st.none()),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.lists(st.tuples(st.sampled_from(["a", "b", "a:b", ':"']), kids), max_size=4).map(
            _Pairs
        ),
    ),
    max_leaves=12,
)


def _render(x: Any, colon: str, escape: bool) -> str:
    """JSON text of ``x``, with ``colon`` between a key and its value and, if ``escape``,
    every colon inside a string written as ``\\u003a``."""
    if isinstance(x, _Pairs):
        return "{" + ", ".join(_render(k, colon, escape) + colon + _render(v, colon, escape)
                               for k, v in x) + "}"  # fmt: skip
    if isinstance(x, list):
        return "[" + ", ".join(_render(v, colon, escape) for v in x) + "]"
    text = json.dumps(x)
    return text.replace(":", "\\u003a") if escape and isinstance(x, str) else text


def _repeats_a_key(x: Any) -> bool:
    if isinstance(x, _Pairs):
        keys = [k for k, _ in x]
        return len(set(keys)) < len(keys) or any(_repeats_a_key(v) for _, v in x)
    return isinstance(x, list) and any(_repeats_a_key(v) for v in x)


@settings(max_examples=300, deadline=None)
@given(
    tree=_trees,
    colon=st.sampled_from([":", ": ", " :", "\n:\t"]),
    escape=st.booleans(),
    fast=st.booleans(),
)
def test_a_key_given_twice_in_any_object_is_refused_by_either_parser(
    tmp_path_factory: pytest.TempPathFactory, tree: Any, colon: str, escape: bool, fast: bool
) -> None:
    top = _Pairs([("x", tree)])
    text = _render(top, colon, escape)
    path = tmp_path_factory.mktemp("keys") / "r.json"
    path.write_text(text)
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(load_module, "_orjson_loads", None)
        try:
            doc = read_json(path)
        except ReportError as exc:
            assert _repeats_a_key(top), exc
            assert "appears twice in one JSON object" in exc.problem
        else:
            assert not _repeats_a_key(top), text
            assert doc == json.loads(text)


def test_a_report_with_a_key_given_twice_is_refused_naming_the_key(tmp_path: Path) -> None:
    text = json.dumps(synthetic_report(n_tests=1))
    twice = text.replace('"energy_per_item": {', '"energy_per_item": {"unit": "J", ', 1)
    assert twice != text
    path = tmp_path / "r.json"
    path.write_text(twice)
    with pytest.raises(ReportError) as info:
        load_report(path)
    assert str(info.value) == (
        f"{path}: the key 'unit' appears twice in one JSON object (which value counts is "
        "ambiguous); a report names each key once"
    )


def test_broken_json_is_worded_the_same_by_either_parser(tmp_path: Path) -> None:
    text = json.dumps(synthetic_report(), indent=1)
    lines = text.splitlines()
    lines[10] += " @@"
    broken = {
        "cut.json": text[: len(text) // 2].encode(),
        "corrupt.json": "\n".join(lines).encode(),
        "bom.json": b"\xef\xbb\xbf" + text.encode(),
        "latin.json": text.replace('"pytest"', '"py\xe9test"').encode("latin-1"),
    }

    def problems() -> dict[str, str]:
        out = {}
        for name, data in broken.items():
            path = tmp_path / name
            path.write_bytes(data)
            with pytest.raises(ReportError) as info:
                load_report(path)
            out[name] = info.value.problem
        return out

    fast = problems()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(load_module, "_orjson_loads", None)
        plain = problems()
    assert fast == plain
    assert fast["cut.json"].startswith("truncated JSON: the text ends early at line ")
    assert fast["corrupt.json"].startswith("corrupt JSON at line 11, column ")
    assert fast["bom.json"].startswith("corrupt JSON at line 1, column 1: Unexpected UTF-8 BOM")
    assert fast["latin.json"].startswith("is not UTF-8 text (byte ")


def test_orjson_is_used_when_installed() -> None:
    pytest.importorskip("orjson")
    assert load_module._orjson_loads is not None


def test_integers_beyond_64_bits_survive_the_round_trip(tmp_path: Path) -> None:
    import pytest_edgeenergy.report.load as load_mod
    from pytest_edgeenergy.report.model import build_result
    from pytest_edgeenergy.report.writer import ReportWriter

    big = -9223372036854775809  # one below int64: orjson would read it as a float
    path = tmp_path / "big.json"
    writer = ReportWriter(path, _header_for_big_ints(), overwrite=True)
    writer.add_test(build_result("t::a", status="passed", params={"seed": big, "n": 2**70}))
    writer.finish()
    params = load_mod.load_report(path)["tests"][0]["params"]
    assert params["seed"] == big and isinstance(params["seed"], int)
    assert params["n"] == 2**70


def _header_for_big_ints() -> dict[str, object]:
    from pytest_edgeenergy.board.types import Identity, RailMap
    from pytest_edgeenergy.report.model import build_device, build_header

    device = build_device(Identity(model="x", simulated=True, sim_model="nano"), RailMap((), None))
    return dict(build_header(device))
