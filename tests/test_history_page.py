"""`edgeenergy history html`: the fleet page, opened in a real browser (headless Chromium).

The history: two boards of 16 runs each, added with `edgeenergy history add` as CI would. A
virtual AGX Orin whose energy per item steps up 15 % from run STEP_AT on; an Orin Nano
reported as a real board, one of whose tests was renamed to carry HTML in its id (escaped
on the page), lives in another suite and has no energy_per_item (the page falls back to
energy_j). Chromium (Debian's `chromium`, installed by `make`) dumps the DOM after the
page's script ran, logs the console to stderr, and takes a screenshot.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

import pytest
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main

START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
RUNS = 16
STEP_AT = 8
"""The run of the AGX Orin where the new level starts."""
ODD_TEST = 'suites/test_odd.py::test_<b>odd</b>["&"]'
"""A test id the page must escape."""
CHROMIUM_TIMEOUT_S = 120


def write_run(path: Path, i: int, model: str) -> Path:
    step = model == "agx-orin" and i >= STEP_AT
    report = synthetic_report(
        sim_model=model,
        simulated=model == "agx-orin",
        workloads=("resnet18",),
        batch_sizes=(8, 16),
        gpu_freqs_hz=(612e6,),
        noise=0.02,
        energy_scale=1.15 if step else 1.0,
        seed=i if model == "agx-orin" else 100 + i,
        started_at=START + timedelta(hours=i),
    )
    report["git"] = {"commit": f"{i:02d}" + "ab" * 19, "dirty": False}
    if model == "orin-nano":
        odd = report["tests"][0]
        odd["id"], odd["name"] = ODD_TEST, ODD_TEST.partition("::")[2]
        del odd["metrics"]["energy_per_item"]
    path.write_text(json.dumps(report))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "h.db"
    paths = [
        str(write_run(tmp_path / f"{model}-{i}.json", i, model))
        for model in ("agx-orin", "orin-nano")
        for i in range(RUNS)
    ]
    code, _, err = run_cli(capsys, "history", "add", *paths, "--db", str(db), "--branch", "main")
    assert code == 0, err
    return db


@pytest.fixture
def page(history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """The page written by the command, and what the command said."""
    out = tmp_path / "fleet.html"
    code, said, err = run_cli(capsys, "history", "html", str(out), "--db", str(history))
    assert code == 0, err
    return out, said


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(
            "no chromium on PATH: the fleet page is tested in headless Chromium; `make` "
            "installs Debian's chromium package (apt-get install chromium)"
        )
    return found


def browse(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``url`` with its own profile; stderr carries the console."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [
            chromium(), "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, url,
        ],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=True,
    )  # fmt: skip


def console_lines(stderr: str) -> list[str]:
    """The page's console messages (any: the page logs nothing) and uncaught errors."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def dom(page: Path, tmp_path: Path, fragment: dict[str, str] | None = None) -> str:
    url = page.as_uri() + (f"#{urlencode(fragment)}" if fragment else "")
    done = browse(url, tmp_path, "--dump-dom")
    assert console_lines(done.stderr) == []
    return done.stdout


def figures(text: str) -> list[str]:
    return re.findall(r'<figure class="series"[^>]*>', text)


def shown(text: str) -> list[str]:
    return [f for f in figures(text) if "hidden" not in f]


def attr(tag: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', tag)
    assert found, (name, tag)
    return found.group(1)


def test_the_console_check_sees_an_error(tmp_path: Path) -> None:
    """The check below could fail: a page with a script error is caught by it."""
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>null.x;</script></body></html>")
    done = browse(broken.as_uri(), tmp_path, "--dump-dom")
    assert any("Uncaught TypeError" in line for line in console_lines(done.stderr))


def test_the_page_shows_every_series_with_its_changes(
    page: tuple[Path, str], tmp_path: Path
) -> None:
    path, said = page
    text = dom(path, tmp_path)
    found = figures(text)
    assert len(found) == 4  # 2 boards x 2 tests
    counts = re.fullmatch(r"wrote (.+): (\d+) series, (\d+) changes?, (\d+) boards?\n", said)
    assert counts and counts.group(1) == str(path)
    assert int(counts.group(2)) == 4 and int(counts.group(4)) == 2
    changes = sum(int(attr(f, "data-changes")) for f in found)
    assert int(counts.group(3)) == changes
    # one marker (an SVG group with id change-FIGURE-K) per change, every id distinct
    markers = re.findall(r'<g id="(change-\d+-\d+)"', text)
    assert len(markers) == changes == len(set(markers))
    # the figures' SVG ids are distinct in the page, and every reference finds its target
    ids = re.findall(r'\sid="([^"]+)"', text)
    assert len(ids) == len(set(ids))
    assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', text)) <= set(ids)

    agx = re.search(r'<section class="board" data-device="([^"]+)"><h3>sim:agx-orin ', text)
    assert agx
    steps = [f for f in found if attr(f, "data-device") == agx.group(1)]
    assert len(steps) == 2 and all(attr(f, "data-changes") == "1" for f in steps)
    # the commits at the step: the last run before it .. the first run after it
    commits = f"{STEP_AT - 1:02d}abababab..{STEP_AT:02d}abababab"
    assert text.count(commits) >= 2
    assert "+15" in text or "+14" in text or "+16" in text

    # the virtual board is labelled simulated, the real one is not
    assert text.count('<span class="sim">simulated</span>') == 2  # its table and section heads
    # text from the reports is escaped: the odd test id shows as text, with energy_j
    assert "<b>odd</b>" not in text
    assert "test_&lt;b&gt;odd&lt;/b&gt;" in text
    odd = [f for f in found if attr(f, "data-suite") == "suites/test_odd.py"]
    assert len(odd) == 1 and attr(odd[0], "data-metric") == "energy_j"
    # the latest run of each board, side by side
    latest = text[text.index('<table id="latest">') : text.index("</table>")]
    assert latest.count("<th data-device=") == 2
    assert latest.count(f"{RUNS - 1:02d}abababab") == 2
    assert "4 of 4 series shown" in text


def test_the_filters_keep_their_state_in_the_url(page: tuple[Path, str], tmp_path: Path) -> None:
    path, _ = page
    every = figures(dom(path, tmp_path))
    boards = sorted({attr(f, "data-device") for f in every})
    assert len(boards) == 2

    text = dom(path, tmp_path, {"board": boards[0]})
    assert {attr(f, "data-device") for f in shown(text)} == {boards[0]}
    assert len(shown(text)) == 2 and 'data-shown="2"' in text
    # the other board's column of the latest-run table is hidden too
    assert re.search(rf'<th data-device="{boards[1]}" hidden', text)

    text = dom(path, tmp_path, {"suite": "suites/test_odd.py"})
    assert [attr(f, "data-suite") for f in shown(text)] == ["suites/test_odd.py"]
    text = dom(path, tmp_path, {"point": "gpu_freq_hz=612000000", "suite": "suites/test_infer.py"})
    assert len(shown(text)) == 3

    # a value the page does not offer selects nothing: every series shown
    text = dom(path, tmp_path, {"board": "no-such-board"})
    assert len(shown(text)) == 4 and "4 of 4 series shown" in text
    # the controls offer each board, suite and operating point, and "every"
    for name, values in (("board", 2), ("suite", 2), ("point", 1)):
        control = re.search(rf'<select id="f-{name}".*?</select>', text, re.S)
        assert control and control.group(0).count("<option") == values + 1


def test_the_screenshot_is_readable(page: tuple[Path, str], tmp_path: Path) -> None:
    from matplotlib.image import imread

    path, _ = page
    shot = tmp_path / "fleet.png"
    done = browse(
        path.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1280,2000",
        "--hide-scrollbars",
    )  # fmt: skip
    assert console_lines(done.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    rgb = pixels[..., :3]
    assert float(rgb.std()) > 0.05  # not one colour
    # plots drawn: the page's blue trend lines and red change markers are there
    blue = (abs(rgb[..., 0] - 0x1F / 255) < 0.05) & (abs(rgb[..., 2] - 0xB4 / 255) < 0.05)
    red = (abs(rgb[..., 0] - 0xD6 / 255) < 0.05) & (abs(rgb[..., 1] - 0x27 / 255) < 0.05)
    assert int(blue.sum()) > 500 and int(red.sum()) > 50


def test_bad_input_exits_2_before_reading_the_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "none.db")
    out = tmp_path / "no-such-dir" / "page.html"
    code, _, err = run_cli(capsys, "history", "html", str(out), "--db", db)
    assert code == 2 and f"cannot write the page {out}" in err and "no directory" in err
    code, _, err = run_cli(capsys, "history", "html", str(tmp_path), "--db", db)
    assert code == 2 and "is a directory" in err
    assert not (tmp_path / "none.db").exists()
    code, _, err = run_cli(
        capsys, "history", "html", str(tmp_path / "p.html"), "--since", "last week", "--db", db
    )
    assert code == 2 and "'last week' is not a date" in err


def test_an_empty_selection_is_a_page_that_says_so(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "empty.html"
    code, said, _ = run_cli(
        capsys, "history", "html", str(out), "--since", "2027-01-01", "--db", str(history)
    )
    assert code == 0 and said == f"wrote {out}: 0 series, 0 changes, 0 boards\n"
    assert "No series in the history match." in out.read_text()


def test_a_series_whose_runs_drift_says_they_look_autocorrelated(
    page: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The note of ``history changes`` under the series' changes; none under a clean step."""
    db, paths = tmp_path / "drift.db", []
    for i in range(48):  # a slow drift: a sine of 24 runs, 6 %, under 2 % noise
        report = synthetic_report(
            workloads=("resnet18",), batch_sizes=(8,), gpu_freqs_hz=(612e6,), noise=0.02,
            energy_scale=1 + 0.06 * math.sin(2 * math.pi * i / 24), seed=i,
            started_at=START + timedelta(hours=i),
        )  # fmt: skip
        report["git"] = {"commit": f"{i:02d}" + "ab" * 19, "dirty": False}
        paths.append(tmp_path / f"drift-{i}.json")
        paths[-1].write_text(json.dumps(report))
    code, _, err = run_cli(capsys, "history", "add", *map(str, paths), "--db", str(db))
    assert code == 0, err
    out = tmp_path / "drift.html"
    code, said, err = run_cli(capsys, "history", "html", str(out), "--db", str(db))
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    notes = re.findall(r'<p class="autocorrelated">Note: ([^<]*)</p>', text)
    changes = re.search(r", (\d+) changes, ", said)
    assert changes and int(changes.group(1)) > 0 and len(notes) == 1  # one note for the series
    assert "runs look autocorrelated" in notes[0] and re.search(r"\(r = 0\.\d\d\)\.$", notes[0])
    assert 'class="autocorrelated"' not in page[0].read_text(encoding="utf-8")
