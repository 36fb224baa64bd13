"""The manual keeps its promises: every command block is run or marked, the cheap ones run
here and show real output, the README stays a front page, and its links resolve.

The convention (docs/contributing-docs.md): a fenced ``sh``, ``bash`` or ``console`` block
is preceded by one HTML comment, ``<!-- run -->`` (this file runs it; ``run: output`` also
compares the output shown, ``exit=N`` expects the last command's status),
``<!-- tested-by: tests/test_x.py::test_name -->`` (another test runs it) or
``<!-- not-run: REASON -->``. ``mkdocs build --strict`` (in ``make test``) checks the
manual's own links and anchors; the link test here also covers README.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 250
COMMAND_LANGS = frozenset({"sh", "bash", "console"})
KINDS = frozenset({"run", "not-run", "tested-by"})
BOARD_PATH = "/tmp/board"
"""Written as is in the docs; replaced by a path in the test's own directory."""
LINKED_INTO_WORKDIR = ("suites", "benchmarks", "tests")
COMMAND_TIMEOUT_S = 120

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"^<!--\s*(?P<kind>[a-z-]+)\s*(?::\s*(?P<arg>.*?))?\s*-->$")
_NUMBER = re.compile(r"(?:(?<![\w-])-)?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
"""A number, its sign included (a net energy below idle on a busy host prints -0.02)."""
_RULE = re.compile(r"(?<![^\s])-{2,}(?![^\s])")
"""A run of dashes standing alone: a column's rule under a table's header."""
_ABS_PATH = re.compile(r"(?<![\w.])/[\w.+@-]+(?:/[\w.+@*-]*)*")
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_INLINE_CODE = re.compile(r"`[^`]*`")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file, with the marker comment before it."""

    path: Path
    line: int
    lang: str
    body: str
    kind: str | None
    arg: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def is_command(self) -> bool:
        return self.lang in COMMAND_LANGS


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``: language, dedented body, marker (None: none)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = "\n".join(line[indent:] for line in lines[i + 1 : end])
        kind, arg = _marker_before(lines, i)
        blocks.append(Block(path, i + 1, m["lang"].lower(), body, kind, arg))
        i = end + 1
    return blocks


def _marker_before(lines: list[str], fence_index: int) -> tuple[str | None, str]:
    j = fence_index - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = _MARKER.match(lines[j].strip()) if j >= 0 else None
    if m is None:
        return None, ""
    return m["kind"], (m["arg"] or "").strip()


ALL_BLOCKS = [b for path in markdown_files() for b in parse_blocks(path)]
COMMAND_BLOCKS = [b for b in ALL_BLOCKS if b.is_command]


# -- (a) every command block is run, tested elsewhere, or says why not -----------------------


def _marker_problem(block: Block) -> str | None:
    if block.kind is None:
        return "has no <!-- run -->, <!-- tested-by: ... --> or <!-- not-run: REASON --> marker"
    if block.kind not in KINDS:
        return f"has an unknown marker {block.kind!r}; allowed: {', '.join(sorted(KINDS))}"
    if block.kind == "not-run" and not block.arg:
        return "is marked not-run without a reason"
    if block.kind == "tested-by":
        return _tested_by_problem(block.arg)
    if block.kind == "run":
        try:
            run_options(block.arg)
        except ValueError as e:
            return str(e)
    return None


def _tested_by_problem(arg: str) -> str | None:
    file, sep, name = arg.partition("::")
    test_file = REPO / file
    if not sep or not name or not test_file.is_file():
        return f"names {arg!r}: give an existing tests/FILE.py::test_name"
    if not re.search(rf"^\s*def {re.escape(name)}\(", test_file.read_text(), re.MULTILINE):
        return f"names {arg!r}, but {file} has no test {name}"
    return None


def test_every_command_block_is_run_or_marked() -> None:
    assert len(COMMAND_BLOCKS) >= 20, "the block parser found too few command blocks"
    problems = [
        f"{b.where}: ```{b.lang} block {problem}"
        for b in COMMAND_BLOCKS
        if (problem := _marker_problem(b)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_markers_stand_before_command_blocks() -> None:
    """A marker before a non-command block (or before no block) is a mistake: it promises
    a check that does not happen."""
    misplaced = [
        f"{b.where}: <!-- {b.kind} --> before a ```{b.lang or 'plain'} block"
        for b in ALL_BLOCKS
        if b.kind in KINDS and not b.is_command
    ]
    assert not misplaced, "\n".join(misplaced)
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        markers = sum(1 for line in text.splitlines() if _MARKER.match(line.strip()))
        attached = sum(1 for b in ALL_BLOCKS if b.path == path and b.kind is not None)
        assert markers == attached, f"{path.relative_to(REPO)}: a marker stands before no block"


def test_a_block_without_a_marker_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```console\n$ edgeenergy --help\n```\n\n"
        "<!-- not-run: needs a Jetson -->\n\n```sh\nedgeenergy board\n```\n"
        "<!-- not-run -->\n```bash\nls\n```\n"
    )
    bare, jetson, no_reason = parse_blocks(page)
    assert _marker_problem(bare) is not None and bare.kind is None
    assert (jetson.kind, jetson.arg, _marker_problem(jetson)) == ("not-run", "needs a Jetson", None)
    assert _marker_problem(no_reason) == "is marked not-run without a reason"
    assert _tested_by_problem("tests/test_docs.py::no_such_test") is not None
    assert _tested_by_problem("tests/test_docs.py::test_a_block_without_a_marker_is_found") is None


# -- (b) the cheap blocks run here --------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    output: bool
    exit_code: int


def run_options(arg: str) -> RunOptions:
    output, exit_code = False, 0
    for word in arg.split():
        if word == "output":
            output = True
        elif word.startswith("exit=") and word[5:].isdigit():
            exit_code = int(word[5:])
        else:
            raise ValueError(f"has run option {word!r}; allowed: output, exit=N")
    return RunOptions(output, exit_code)


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """The block's commands, each with the output lines shown after it."""
    if block.lang != "console":
        return [
            (line, [])
            for line in block.body.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    found: list[tuple[str, list[str]]] = []
    lines = iter(block.body.splitlines())
    for line in lines:
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command = command[:-1] + " " + next(lines, "").strip()
            found.append((command, []))
        elif found:
            found[-1][1].append(line)
    return found


def skeleton(line: str) -> str:
    """A line with numbers and absolute paths masked, spaces collapsed and a table's rule
    (``-------``, as wide as its column's widest number) one dash: what must match between
    the output shown and a run of today."""
    masked = _NUMBER.sub("#", _ABS_PATH.sub("<path>", line))
    return " ".join(_RULE.sub("-", masked).split())


def _pages_to_run() -> list[tuple[Path, list[Block]]]:
    """Run blocks per page, in order (a page's blocks share one directory); a block repeated
    verbatim on an earlier page (docs/ before README.md) runs there only."""
    seen: set[tuple[str, str]] = set()
    pages: list[tuple[Path, list[Block]]] = []
    for path in [*markdown_files()[1:], README]:
        blocks = []
        for b in COMMAND_BLOCKS:
            if b.path != path or b.kind != "run" or (b.arg, b.body) in seen:
                continue
            seen.add((b.arg, b.body))
            blocks.append(b)
        if blocks:
            pages.append((path, blocks))
    return pages


def _workdir(tmp_path: Path) -> Path:
    for name in LINKED_INTO_WORKDIR:
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    return tmp_path


def _environment() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("EDGEENERGY_") and k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(command: str, workdir: Path) -> tuple[int, str]:
    board = str(workdir / "board")
    done = subprocess.run(
        ["bash", "-c", command.replace(BOARD_PATH, board)],
        cwd=workdir,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).replace(board, BOARD_PATH)


def missing_lines(shown: list[str], actual: str) -> list[str]:
    """The lines shown that a real run did not print (numbers and paths aside)."""
    printed = {skeleton(line) for line in actual.splitlines()}
    return [
        line
        for line in shown
        if line.strip() and line.strip() != "..." and skeleton(line) not in printed
    ]


def _check_block(block: Block, workdir: Path, *, outputs: bool = True) -> Iterator[str]:
    """What differs from the page when ``block`` runs in ``workdir``: an exit status, and
    (``outputs``) a line shown that the command no longer prints."""
    options = run_options(block.arg)
    steps = commands(block)
    assert steps, f"{block.where}: a run block without a command"
    for k, (command, shown) in enumerate(steps):
        expected = options.exit_code if k == len(steps) - 1 else 0
        code, output = _run(command, workdir)
        tail = "\n".join(output.splitlines()[-30:])
        if code != expected:
            yield f"{block.where}: `{command}` exited {code}, not {expected}:\n{tail}"
            return
        if outputs and options.output and (missing := missing_lines(shown, output)):
            yield (
                f"{block.where}: `{command}` no longer prints these lines shown in the docs:\n"
                + "\n".join(missing)
                + f"\n--- it printed:\n{tail}"
            )


@pytest.mark.parametrize(
    "page,blocks",
    _pages_to_run(),
    ids=[str(path.relative_to(REPO)) for path, _ in _pages_to_run()],
)
def test_command_blocks_run(page: Path, blocks: list[Block], tmp_path: Path) -> None:
    """A page's blocks, run in order in one directory, and then again there: an example
    runs again as written (its output may then differ: a second report in ``reports/``)."""
    workdir = _workdir(tmp_path)
    problems = [problem for block in blocks for problem in _check_block(block, workdir)]
    assert not problems, "\n\n".join(problems)
    again = [p for block in blocks for p in _check_block(block, workdir, outputs=False)]
    assert not again, "run a second time in the same directory:\n" + "\n\n".join(again)


def test_the_output_check_masks_figures_but_not_words() -> None:
    shown = ["total (rail VDD_IN): 20.1369 J, mean 10.068 W", "report: /work/x/r-2026.json"]
    assert (
        missing_lines(shown, "total (rail VDD_IN): 3.5 J, mean 1e-05 W\nreport: /tmp/a.json") == []
    )
    assert missing_lines(shown, "total (sum of rails): 3.5 J, mean 1 W\nreport: /a") == [shown[0]]
    assert missing_lines(["...", "", "a  b"], "a b") == []
    block = Block(README, 1, "console", "$ a \\\n    --b\nout\n$ c", "run", "exit=2")
    assert commands(block) == [("a  --b", ["out"]), ("c", [])]
    assert run_options("output exit=2") == RunOptions(True, 2)
    with pytest.raises(ValueError, match="allowed: output, exit=N"):
        run_options("fast")


def test_a_block_that_cannot_run_again_is_found(tmp_path: Path) -> None:
    block = Block(README, 1, "console", "$ mkdir out\n$ ls", "run", "")
    assert list(_check_block(block, tmp_path)) == []
    [again] = _check_block(block, tmp_path, outputs=False)
    assert again.startswith("README.md:1: `mkdir out` exited 1, not 0")


# -- (c) the README is a front page, and links resolve ----------------------------------------


def test_readme_is_a_front_page_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    for command in ("make run     # the main job", "make test    # ruff, mypy --strict"):
        assert any(line.startswith(command) for line in text.splitlines()), command
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    steps = [
        line for line in ci if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))
    ]
    assert steps == ["make test"], "CI must run exactly the README's test command"


def heading_anchors(path: Path) -> set[str]:
    """The ids python-markdown's toc gives the headings of ``path`` (its default slugify)."""
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not re.match(r"^#{1,6} ", line):
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line.lstrip("#").strip())
        text = text.replace("`", "").replace("**", "")
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
        slug = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}_{n}")
    return anchors


def broken_links(path: Path) -> list[str]:
    """Relative links of ``path`` to a file that does not exist or a heading it lacks."""
    text = _INLINE_CODE.sub(
        "", "\n".join(_without_fences(path.read_text(encoding="utf-8").splitlines()))
    )
    broken = []
    for m in _LINK.finditer(text):
        target = m["target"]
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
            broken.append(f"{target}: {resolved.name} has no heading #{anchor}")
    return broken


def _without_fences(lines: list[str]) -> Iterator[str]:
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            yield line


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(path: Path) -> None:
    assert not broken_links(path), "\n".join(broken_links(path))


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Top\n\n## The `edge_bench` fixture\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#the-edge_bench-fixture) [gone](c.md) [bad](b.md#nope) `[code](c.md)`\n"
        "```\n[fenced](c.md)\n```\n[web](https://example.org/x)\n"
    )
    assert broken_links(page) == ["c.md: no such file", "b.md#nope: b.md has no heading #nope"]


# -- the reference is complete -----------------------------------------------------------------


def _help_entries(pytester: pytest.Pytester, *args: str) -> tuple[set[str], set[str]]:
    result = pytester.runpytest_inprocess("--help", *args)
    lines = result.outlines
    flags = {m[1] for line in lines if (m := re.match(r"^  (--[a-z][\w-]*)", line))}
    inis = {m[1] for line in lines if (m := re.match(r"^  ([a-z][\w]*) \(", line))}
    return flags, inis


def test_every_plugin_option_is_in_the_options_reference(pytester: pytest.Pytester) -> None:
    flags, inis = _help_entries(pytester)
    base_flags, base_inis = _help_entries(pytester, "-p", "no:edgeenergy")
    ours, our_inis = flags - base_flags, inis - base_inis
    assert "--edge-board" in ours and "edge_board" in our_inis
    suites_flags = set(
        re.findall(r'"(--edge-[a-z-]+)"', (REPO / "suites" / "conftest.py").read_text())
    )
    assert "--edge-weights" in suites_flags
    reference = (DOCS / "reference" / "options.md").read_text(encoding="utf-8")
    missing = [f for f in sorted(ours | suites_flags) if f"`{f}" not in reference]
    missing += [i for i in sorted(our_inis) if f"`{i}`" not in reference]
    missing += [
        env
        for env in sorted("EDGEENERGY_" + i.removeprefix("edge_").upper() for i in our_inis)
        if f"`{env}" not in reference
    ]
    assert not missing, f"docs/reference/options.md does not describe: {', '.join(missing)}"


def test_every_edgeenergy_command_is_in_the_cli_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pytest_edgeenergy.commands import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    names = re.findall(r"^    ([a-z][\w-]+)", capsys.readouterr().out, re.MULTILINE)
    assert "compare" in names
    reference = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    missing = [n for n in names if f"## `edgeenergy {n}`" not in reference]
    assert not missing, f"docs/reference/cli.md has no section for: {', '.join(missing)}"
