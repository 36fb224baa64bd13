"""Secrets hidden before anything is written: the redaction itself and the places that
record a command line or settings without a database (report headers, the board's lock
file). The history database and the shared study: test_history_postgres.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.control.knobset import knobs_at
from pytest_edgeenergy.control.state import STATE_IN_ROOT, Session
from pytest_edgeenergy.redact import (
    HIDDEN,
    hide_values,
    redact_argv,
    redact_text,
    redact_value,
    secret_name,
)
from pytest_edgeenergy.report.model import build_device, build_header
from pytest_edgeenergy.sim.tree import create

PASSWORD = "pw-Zq81!x"
URL = f"postgresql://ci:{PASSWORD}@db.example:5432/energy?sslmode=require"
SHOWN = "postgresql://ci:***@db.example:5432/energy?sslmode=require"

# A password may hold anything but white space and the characters a URL must escape there
# ('/', '?', '#': unescaped, they end the user part for every URL parser; SQLAlchemy reads
# 'u:0@?@h' as password '0' and query '@h'); an unescaped '@' is hidden all the same below.
passwords = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="/?#"),
    min_size=1,
    max_size=16,
)
users = st.text("abcdefgh_.-0123", max_size=8)


@given(user=users, password=passwords)
def test_a_url_password_is_hidden_in_every_form_of_argument(user: str, password: str) -> None:
    url = f"postgresql+psycopg://{user}:{password}@db.example/energy"
    shown = f"postgresql+psycopg://{user}:***@db.example/energy"
    argv = ["pytest", url, f"--edge-history={url}", "-o", f"edge_history={url}"]
    assert redact_argv(argv) == ["pytest", shown, f"--edge-history={shown}", "-o",
                                 f"edge_history={shown}"]  # fmt: skip
    assert redact_text(f"cannot open {url}: refused") == f"cannot open {shown}: refused"


def test_a_password_with_an_at_sign_or_spaces_is_hidden_whole() -> None:
    assert redact_text("postgresql://u:p@ss@h/db") == "postgresql://u:***@h/db"
    # one argument: the space belongs to the password (SQLAlchemy reads it so)
    assert redact_argv(["--db=postgresql://u:a b@h/db"]) == ["--db=postgresql://u:***@h/db"]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://ci@/e?host=/run&password=s3&x=1", "postgresql://ci@/e?host=/run&password=***&x=1"),
        ("https://api.example/v1?token=abc#top", "https://api.example/v1?token=***#top"),
        ("postgresql://h/e?sslpassword=k", "postgresql://h/e?sslpassword=***"),
        ("--db-password=s3", "--db-password=***"),
        ("API_KEY=s3 and more", "API_KEY=*** and more"),
        ("https://ghp_abc@github.com/o/r.git", "https://***@github.com/o/r.git"),
        ("redis://:s3@cache:6379", "redis://:***@cache:6379"),
    ],
)  # fmt: skip
def test_query_passwords_tokens_and_secret_parameters_are_hidden(text: str, shown: str) -> None:
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "",
        "suites/test_infer.py::test_x[resnet18-bs16]",
        "--edge-board=sim:orin-nano",
        "http://localhost:8080/page",
        "postgresql://ci@db/energy",
        "sqlite:///reports/energy.db",
        "bypass=3",
        "mail me@example.com",
        "--edge-fail=energy_per_item:mean:5%",
    ],
)
def test_text_without_a_secret_is_unchanged(text: str) -> None:
    assert redact_text(text) == text
    assert redact_argv([text]) == [text]


@given(st.text())
def test_any_text_is_read_without_error_and_hiding_twice_changes_nothing(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once
    assert redact_argv(text.split(" ")) == redact_argv(redact_argv(text.split(" ")))


def test_the_value_after_a_secret_named_option_is_hidden() -> None:
    argv = ["tool", "--token", "abc", "--api-key", "k", "--db", URL, "--password=p"]
    assert redact_argv(argv) == [
        "tool", "--token", HIDDEN, "--api-key", HIDDEN, "--db", SHOWN, "--password=***"
    ]  # fmt: skip


def test_settings_are_walked_and_secret_named_keys_hidden() -> None:
    settings = {
        "edge_gate_history": URL,
        "edge_search_storage": URL,
        "edge_items": 8,
        "nested": {"urls": [URL, None], "password": "x", "token": None},
    }
    assert redact_value(settings) == {
        "edge_gate_history": SHOWN,
        "edge_search_storage": SHOWN,
        "edge_items": 8,
        "nested": {"urls": [SHOWN, None], "password": HIDDEN, "token": None},
    }
    assert secret_name("sslpassword") and secret_name("--github-token")
    assert not secret_name("edge_gate_history") and not secret_name("bypass")


def test_known_passwords_are_hidden_wherever_a_message_quotes_them() -> None:
    message = f'FATAL: password "{PASSWORD}" rejected for {URL}'
    assert hide_values(message, [PASSWORD, None]) == f'FATAL: password "***" rejected for {SHOWN}'


def test_a_report_header_holds_no_password() -> None:
    device = build_device(Identity(model="x", soc="tegra234"), RailMap(rails=(), total_rail=None))
    header = build_header(
        device,
        command_line=["pytest", f"--edge-history={URL}", "--edge-search-storage", URL],
        settings={"edge_gate_history": URL, "edge_search_storage": URL},
    )
    assert PASSWORD not in json.dumps(header)
    assert header["command_line"][1:] == [f"--edge-history={SHOWN}", "--edge-search-storage",
                                          SHOWN]  # fmt: skip
    assert header["settings"] == {"edge_gate_history": SHOWN, "edge_search_storage": SHOWN}


def test_the_board_lock_file_holds_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = create("orin-nano", tmp_path / "board")
    monkeypatch.setattr(sys, "argv", ["pytest", "suites/", f"--edge-history={URL}"])
    with Session(knobs_at(board), handle_signals=False):
        lock = (board / (STATE_IN_ROOT + ".lock")).read_text()
    assert PASSWORD not in lock
    assert f"--edge-history={SHOWN}" in json.loads(lock)["command"]


def test_a_usage_error_naming_the_history_hides_its_password(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(energy):\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--edge-history={URL}", "--edge-baseline=base/",
        "--edge-fail=energy_j:mean:5%", timeout=120,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert f"--edge-history {SHOWN} and --edge-baseline base" in text
    assert PASSWORD not in text


def test_a_url_that_is_not_one_is_named_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_edgeenergy.commands import main

    report = tmp_path / "r.json"
    report.write_text("{}")
    bad_port = f"postgresql://ci:{PASSWORD}@db.example:port/energy"
    assert main(["history", "add", str(report), "--db", bad_port]) == 2
    err = capsys.readouterr().err
    assert err == (
        "edgeenergy: history database URL 'postgresql://ci:***@db.example:port/energy' is not "
        "a URL: invalid literal for int() with base 10: 'port'\n"
    )
