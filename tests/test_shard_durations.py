"""``--edge-shard-durations`` on what pytest users already have: pytest-split's
``.test_durations`` and JUnit XML, beside energy reports.

``data/shard_durations`` holds a plain suite (``test_top.py.txt``, ``test_calc.py.txt``,
laid out as ``tests/test_top.py`` and ``tests/unit/test_calc.py``) and the
``.test_durations`` pytest-split 0.11.0 wrote for it (``pytest -p no:cacheprovider
--store-durations`` in a throwaway venv with pytest 9.2 and pytest-split, nothing else):
``TestSlow::test_big`` sleeps 1 s and the 8 others take under a millisecond, so by
durations shard 1 of 2 is ``test_big`` alone, whatever the host. JUnit files are written by
the pytest under test (``--junitxml``), except the other runners' forms, written here.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from _pytest.junitxml import mangle_test_address
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.plugin.junit_times import JUnitCase, junit_address, match_cases, read_cases
from pytest_edgeenergy.plugin.shard_durations import (
    ACCEPTED,
    Durations,
    DurationsError,
    read_durations,
)
from pytest_edgeenergy.report.load import MAX_REPORT_BYTES_ENV, ReportError, load_report

DATA = Path(__file__).parent / "data" / "shard_durations"
RUN_TIMEOUT_S = 240.0
BIG = "tests/unit/test_calc.py::TestSlow::test_big"
ALL_TESTS = {
    "tests/test_top.py::test_one",
    "tests/test_top.py::test_two",
    "tests/unit/test_calc.py::test_add[1]",
    "tests/unit/test_calc.py::test_add[2]",
    "tests/unit/test_calc.py::test_add[3]",
    BIG,
    "tests/unit/test_calc.py::TestSlow::TestInner::test_deep[a.b]",
    "tests/unit/test_calc.py::TestSlow::TestInner::test_deep[c::d]",
    "tests/unit/test_calc.py::test_skipped",
}


# -- JUnit addresses and their match ---------------------------------------------------------

segment = st.text(alphabet="abcXYZ_019.-", min_size=1, max_size=6).filter(
    lambda s: s not in (".", "..")
)
node_ids = st.builds(
    lambda dirs, module, classes, function, params: (
        "/".join([*dirs, f"test_{module}.py"])
        + "".join(f"::{c}" for c in classes)
        + f"::test_{function}"
        + (f"[{params}]" if params is not None else "")
    ),
    st.lists(segment, max_size=3),
    segment,
    st.lists(st.from_regex(r"Test[A-Za-z0-9_]{0,5}", fullmatch=True), max_size=2),
    segment,
    st.none() | st.text(alphabet="ab1.:-[]/ ", max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(node_id=node_ids)
def test_the_address_is_the_one_pytest_writes(node_id: str) -> None:
    """classname and name as pytest's own junitxml computes them for the node id."""
    names = mangle_test_address(node_id)
    assert junit_address(node_id) == (".".join(names[:-1]), names[-1])


@settings(max_examples=100, deadline=None)
@given(ids=st.sets(node_ids, min_size=1, max_size=20), prefix=st.sampled_from(["", "ci.", "p.q."]))
def test_each_case_matches_the_test_it_was_written_for(ids: set[str], prefix: str) -> None:
    """With a ``--junitprefix``, or none, a case matches its test; a case two collected
    tests share is left out, never given to one of them."""
    addresses = {i: junit_address(i) for i in ids}
    shared = {a for a in addresses.values() if list(addresses.values()).count(a) > 1}
    cases = [JUnitCase(prefix + c, n, None, 1.0) for c, n in addresses.values()]
    found, unmatched = match_cases(cases, ids)
    unique = {i for i, a in addresses.items() if a not in shared}
    assert set(found) <= ids
    assert unique <= set(found)
    assert unmatched <= len(shared)


def test_cases_match_through_a_prefix_a_deeper_root_and_the_file() -> None:
    ids = ["tests/unit/test_x.py::TestC::test_y[1]", "tests/unit/test_x.py::test_z"]
    cases = [
        JUnitCase("tests.unit.test_x.TestC", "test_y[1]", None, 1.0),  # as pytest writes it
        JUnitCase("ci.tests.unit.test_x.TestC", "test_y[1]", None, 3.0),  # --junitprefix=ci
        JUnitCase("test_x", "test_z", None, 2.0),  # written from tests/unit/
        JUnitCase("tests.unit.test_x", "test_gone", None, 9.0),  # not collected
        JUnitCase("other.test_x", "test_z", None, 9.0),  # another file
    ]
    found, unmatched = match_cases(cases, ids)
    assert found == {ids[0]: [1.0, 3.0], ids[1]: [2.0]}
    assert unmatched == 2
    # Two collected tests with one address: the file tells them apart, else neither gets it.
    twins = ["a/b.py::C::test_t", "a/b/C.py::test_t"]
    assert junit_address(twins[0]) == junit_address(twins[1]) == ("a.b.C", "test_t")
    by_file = [JUnitCase("a.b.C", "test_t", "a/b/C.py", 1.0)]
    assert match_cases(by_file, twins) == ({twins[1]: [1.0]}, 0)
    assert match_cases([JUnitCase("a.b.C", "test_t", None, 1.0)], twins) == ({}, 1)


OTHER_RUNNER = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="all" tests="4" time="1,240.5">
  <testsuite name="unit">
    <testsuite name="calc">
      <properties><property name="seed" value="1"/></properties>
      <testcase classname="proj.tests.unit.test_calc" name="test_add[1]" time="1,234.5"/>
      <testcase classname="proj.tests.unit.test_calc" name="test_skipped" time="0">
        <skipped message="not today"/>
      </testcase>
      <testcase classname="proj.tests.unit.test_calc" name="test_no_time"/>
      <testcase classname="proj.tests.unit.test_calc" name="test_blank_time" time=""/>
      <testcase classname="proj.tests.unit.test_calc.TestSlow" name="test_big" time="6.0">
        <system-out><![CDATA[<testcase name="not one" time="99"/>]]></system-out>
      </testcase>
    </testsuite>
  </testsuite>
</testsuites>
"""


def test_nested_testsuites_of_other_runners_are_read() -> None:
    cases = read_cases([OTHER_RUNNER.encode()[:100], OTHER_RUNNER.encode()[100:]])
    assert [(c.name, c.seconds) for c in cases] == [
        ("test_add[1]", 1234.5),
        ("test_skipped", 0.0),
        ("test_big", 6.0),
    ]
    found, unmatched = match_cases(cases, ALL_TESTS)
    assert found == {
        "tests/unit/test_calc.py::test_add[1]": [1234.5],
        "tests/unit/test_calc.py::test_skipped": [0.0],
        BIG: [6.0],
    }
    assert unmatched == 0


# -- files and directories -------------------------------------------------------------------


def _lay_out_durations(where: Path) -> Path:
    shutil.copy(DATA / ".test_durations", where / ".test_durations")
    return where / ".test_durations"


def test_a_utf16_junit_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(OTHER_RUNNER.replace('"UTF-8"', '"UTF-16"').encode("utf-16"))
    assert [c.name for c in read_durations(path).cases] == [
        "test_add[1]",
        "test_skipped",
        "test_big",
    ]


def test_pytest_splits_durations_file_is_read(tmp_path: Path) -> None:
    durations = read_durations(_lay_out_durations(tmp_path))
    assert set(durations.by_id) == ALL_TESTS and not durations.cases
    timing = durations.timing(ALL_TESTS - {"tests/test_top.py::test_one"})
    assert len(timing.seconds) == 8 and timing.seconds[BIG] > 1.0
    assert (timing.entries, timing.unmatched) == (9, 1)
    # pytest-split before 0.4 wrote a list of [node id, seconds] pairs.
    old = tmp_path / "old_durations"
    old.write_text(json.dumps([["t.py::a", 1.5], ["t.py::b", 0]]))
    assert read_durations(old).by_id == {"t.py::a": [1.5], "t.py::b": [0.0]}


def test_the_kind_is_read_from_the_content_and_a_directory_mixes_them(tmp_path: Path) -> None:
    (tmp_path / "junit.json").write_text(OTHER_RUNNER)  # JUnit, whatever its name says
    split = tmp_path / "times.xml"
    split.write_text(json.dumps({BIG: 2.0, "tests/test_top.py::test_one": 0.5}))
    assert read_durations(split).by_id == {BIG: [2.0], "tests/test_top.py::test_one": [0.5]}
    _lay_out_durations(tmp_path)
    (tmp_path / "notes.txt").write_text("not read: a directory gives *.json, *.xml")
    (tmp_path / "sub.json").mkdir()
    durations = read_durations(tmp_path)
    assert len(durations.cases) == 3
    timing = durations.timing(ALL_TESTS)
    assert timing.seconds[BIG] == 2.0  # the median of 6.0 (JUnit), 2.0 and 1.0006
    assert timing.seconds["tests/test_top.py::test_one"] == pytest.approx(0.25, abs=0.01)
    assert timing.unmatched == 0 and timing.entries == 9 + 3


def _bomb() -> str:
    levels = ['<!ENTITY l0 "lol">'] + [
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE t [{"".join(levels)}]>\n'
        '<testsuites><testcase classname="a" name="&l9;" time="1"/></testsuites>'
    )


BAD_FILES = [
    (_bomb(), "declares an XML entity (line 2); entities are refused"),
    (
        '<!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n<testsuites>&e;</testsuites>',
        "declares an XML entity (line 1)",
    ),
    ('<testsuites><testsuite><testcase name="a" time="1">', "truncated XML: the text ends"),
    ("<testsuites><testcase></testsuite>", "corrupt XML at line 1, column 25: mismatched tag"),
    ("<coverage line-rate='1'/>", "XML whose root is <coverage>, not JUnit's <testsuites>"),
    (
        '<testsuite><testcase name="t" time="-1"/></testsuite>',
        "testcase 't' at line 1 has time='-1', not a number of seconds >= 0",
    ),
    ('{"t.py::a": "1.5"}', "neither a report nor durations: 't.py::a' is a string, not"),
    ('{"t.py::a": NaN}', "neither a report nor durations: 't.py::a' is NaN, not"),
    ('{"benchmarks": [], "machine_info": {}}', "'benchmarks' is a list, not a number"),
    ("[1, 2]", "is a JSON list, not one of [node id, seconds] pairs"),
    ("[" * 100_000, "JSON nested too deeply to read"),
    ('{"a": 1', "corrupt JSON at line 1, column 8"),
    ("", "is empty: neither JSON nor XML"),
    ("name,seconds\n", "starts with b'n': neither JSON nor XML"),
]


@pytest.mark.parametrize(("text", "problem"), BAD_FILES)
def test_a_bad_file_is_one_line_naming_it_and_what_is_accepted(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "durations.json"
    path.write_text(text)
    with pytest.raises(DurationsError) as info:
        read_durations(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ") and problem in message
    assert message.endswith(f"; {ACCEPTED}")


def test_a_bad_report_is_refused_in_the_report_loaders_words(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"schema_version": 2, "tests": []}')
    with pytest.raises(ReportError) as loader:
        load_report(path)
    with pytest.raises(DurationsError) as info:
        read_durations(path)
    assert str(info.value) == str(loader.value)


def test_a_fifo_or_a_device_is_refused_without_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo("junit.xml")
    with pytest.raises(DurationsError) as info:
        read_durations(Path("junit.xml"))  # opening it would wait for a writer
    assert str(info.value) == f"'junit.xml' is a pipe (FIFO); {ACCEPTED}"
    with pytest.raises(DurationsError, match=r"^'/dev/zero' is a character device; give"):
        read_durations(Path("/dev/zero"))  # it never ends
    Path("times.json").write_text("{}")
    assert read_durations(tmp_path) == Durations({}, [])  # a directory passes its FIFO by


def test_a_file_over_the_size_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(OTHER_RUNNER)
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, "100")
    with pytest.raises(DurationsError) as info:
        read_durations(path)
    assert str(info.value) == (
        f"{path}: is {path.stat().st_size} bytes, over the 100 bytes a durations file may "
        f"have; not read (set {MAX_REPORT_BYTES_ENV} to read more); {ACCEPTED}"
    )


def test_a_missing_path_says_what_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DurationsError) as info:
        read_durations(Path("r.json"))
    assert str(info.value) == f"'r.json' does not exist; {ACCEPTED}"


# -- the plugin on a plain suite -------------------------------------------------------------

BASE = ("-p", "no:cacheprovider", "-p", "no:randomly")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """The plain suite of ``data/shard_durations`` with its ``.test_durations``."""
    unit = pytester.path / "tests" / "unit"
    unit.mkdir(parents=True)
    for package in (unit.parent, unit):
        (package / "__init__.py").write_text("")
    shutil.copy(DATA / "test_top.py.txt", unit.parent / "test_top.py")
    shutil.copy(DATA / "test_calc.py.txt", unit / "test_calc.py")
    _lay_out_durations(pytester.path)
    return pytester


def _shard(pytester: pytest.Pytester, k: int, *args: str) -> tuple[set[str], list[str]]:
    """The test ids shard ``k`` of 2 keeps (collected only), and pytest's output lines."""
    result = pytester.runpytest_subprocess(
        *BASE, "--collect-only", "-q", f"--edge-shard={k}/2", *args, timeout=RUN_TIMEOUT_S
    )
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    lines = result.stdout.lines
    return {line for line in lines if line.startswith("tests/")}, lines


def test_a_plain_suite_shards_by_pytest_splits_durations(suite: pytest.Pytester) -> None:
    first, lines = _shard(suite, 1, "--edge-shard-durations=.test_durations")
    assert first == {BIG}
    assert (
        "edgeenergy: shard 1/2: kept 1 of 9 tests (balanced by durations in .test_durations: "
        "9 of 9 tests timed)"
    ) in lines
    second, _ = _shard(suite, 2, "--edge-shard-durations=.test_durations")
    assert second == ALL_TESTS - {BIG}
    by_count, lines = _shard(suite, 1)
    assert len(by_count) == 5 and "(balanced by count)" in lines[0]


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_a_plain_suite_shards_by_its_junit_xml(suite: pytest.Pytester, family: str) -> None:
    """pytest's own --junitxml of the suite (test_big sleeps 1 s, the others do nothing),
    with a --junitprefix: the same shards as by the durations file."""
    run = suite.runpytest_subprocess(
        *BASE, "--junitxml=out/junit.xml", "--junitprefix=ci", "-o", f"junit_family={family}",
        timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    run.assert_outcomes(passed=8, skipped=1)
    first, lines = _shard(suite, 1, "--edge-shard-durations=out")
    assert first == {BIG}
    assert "(balanced by durations in out: 9 of 9 tests timed)" in lines[0]


def test_entries_matching_no_collected_test_are_counted(suite: pytest.Pytester) -> None:
    _, lines = _shard(suite, 1, "--edge-shard-durations=.test_durations", "-k", "not test_add")
    assert lines[0] == (
        "edgeenergy: shard 1/2: kept 1 of 6 tests (balanced by durations in .test_durations: "
        "6 of 6 tests timed; 3 of its 9 entries match no collected test)"
    )
    foreign = suite.path / "foreign.xml"
    foreign.write_text(
        '<testsuite><testcase classname="other" name="t1" time="2"/>'
        '<testcase classname="other" name="t2" time="1"/></testsuite>'
    )
    kept, lines = _shard(suite, 1, f"--edge-shard-durations={foreign}")
    assert len(kept) == 5
    assert lines[0].endswith(
        f"(balanced by count: none of the 2 entries in {foreign} matches a collected test)"
    )


def test_a_bad_durations_file_is_a_usage_error(suite: pytest.Pytester) -> None:
    bad = suite.path / "junit.xml"
    bad.write_text(_bomb())
    result = suite.runpytest_subprocess(
        *BASE, "--edge-shard=1/2", f"--edge-shard-durations={bad}", timeout=RUN_TIMEOUT_S
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        f"ERROR: --edge-shard-durations (command line): {bad}: declares an XML entity (line 2)"
        in err
    )
    assert "Traceback" not in err
