"""Reading a report is bounded: what is not a report is refused quickly, in bounded memory,
with a message naming the file (``edgeenergy compare``: exit 2), never a traceback.

``'[' * 100000`` used to raise RecursionError, and ``/dev/zero`` to eat 4 GB in 4 s; a FIFO
blocked the reader forever. The memory bound is checked by running ``edgeenergy compare``
under an address-space limit, where reading without bound fails with MemoryError.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.report.load import (
    MAX_REPORT_BYTES,
    MAX_REPORT_BYTES_ENV,
    ReportError,
    load_report,
)

MEMORY_LIMIT_BYTES = 768 * 2**20
"""Address space of the compare subprocess: room for Python and the report code, far less
than reading /dev/zero without bound takes."""


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def _compare_in_subprocess(*argv: str) -> subprocess.CompletedProcess[str]:
    """``edgeenergy compare ARGV`` in a process of limited memory; a reader that blocks
    (a FIFO) runs into the timeout, which fails the test."""
    env = {k: v for k, v in os.environ.items() if k != MAX_REPORT_BYTES_ENV}
    return subprocess.run(
        [sys.executable, "-m", "pytest_edgeenergy.commands", "compare", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited_memory,
        env=env,
        check=False,
    )


def _run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = compare_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_REPORT_BYTES_ENV, raising=False)


# -- what is not a report -------------------------------------------------------------------


def test_deeply_nested_list_is_refused_without_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "brackets.json"
    path.write_text("[" * 100_000)
    code, out, err = _run(capsys, path)
    assert code == 2 and out == ""
    assert err == (
        f"edgeenergy compare: error: {path}: not a pytest-edgeenergy report "
        "(top level is a JSON list, not an object)\n"
    )


def test_deeply_nested_object_is_refused_without_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"settings": ' + "[" * 100_000)
    code, out, err = _run(capsys, path)
    assert code == 2 and out == ""
    assert f"{path}: JSON nested too deeply to read" in err and "Traceback" not in err


def test_dev_zero_is_refused_in_bounded_memory() -> None:
    done = _compare_in_subprocess("/dev/zero")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == (
        "edgeenergy compare: error: /dev/zero: is a character device, not a report file "
        "(a report is a JSON file)\n"
    )


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    done = _compare_in_subprocess(str(fifo))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{fifo}: is a pipe (FIFO), not a report file" in done.stderr


def test_large_file_that_is_no_json_object_is_refused_from_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "zeros.json"
    path.write_bytes(b"\n" + b"\0" * (4 * 2**20))
    code, _, err = _run(capsys, path)
    assert code == 2
    assert (
        f"{path}: not a pytest-edgeenergy report: a report is a JSON object, and this file "
        "starts with b'\\x00' (byte 1), not '{'"
    ) in err


# -- the size limit -------------------------------------------------------------------------


def test_report_over_the_size_limit_is_refused_naming_the_limit_and_its_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(synthetic_report(n_tests=2)))
    size = path.stat().st_size
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, str(size - 1))
    code, _, err = _run(capsys, path)
    assert code == 2
    assert (
        f"{path}: is {size} bytes, over the {size - 1} bytes a report may have; not read "
        f"(set {MAX_REPORT_BYTES_ENV} to read larger reports)"
    ) in err
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, str(size))
    assert load_report(path)["tests"]


def test_reports_larger_than_the_first_block_read_whole_up_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = synthetic_report(n_tests=60)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(report, indent=1))
    size = path.stat().st_size
    assert size > 4 * 64 * 1024  # several blocks
    assert load_report(path) == json.loads(path.read_text())
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, str(size))
    assert load_report(path)["tests"]
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, str(size - 1))
    with pytest.raises(ReportError, match=rf"is {size} bytes, over the {size - 1} bytes"):
        load_report(path)


@pytest.mark.parametrize("setting", ["abc", "0", "-5", "1.5e9"])
def test_a_limit_that_is_no_size_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(synthetic_report(n_tests=1)))
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, setting)
    code, _, err = _run(capsys, path)
    assert code == 2
    assert f"{MAX_REPORT_BYTES_ENV}: {setting!r} is not a size" in err


def test_the_default_limit_is_generous() -> None:
    # 50 reports of 2,000 results are ~4 MiB each; the default leaves room for far more.
    assert MAX_REPORT_BYTES == 256 * 2**20


# -- any bytes: a report or a ReportError, nothing else -------------------------------------

_PREFIXES = [b"", b"[" * 3000, b"{" * 3000, b'{"a":' + b"[" * 3000, b"\xef\xbb\xbf", b"  \n"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefix=st.sampled_from(_PREFIXES), body=st.binary(max_size=300))
def test_any_bytes_give_a_report_or_a_report_error(
    tmp_path_factory: pytest.TempPathFactory, prefix: bytes, body: bytes
) -> None:
    path = tmp_path_factory.mktemp("bytes") / "r.json"
    path.write_bytes(prefix + body)
    try:
        load_report(path)
    except ReportError as exc:
        assert str(exc).startswith(f"{path}: ")
