"""The measurement session behind the pytest plugin: board, virtual board, meter, results.

One :class:`EnergySession` lives per pytest session. It is built lazily (or at session start
when a board option was given), owns the virtual board's process when there is one, and is
closed on every exit path by the plugin.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings import Settings

if TYPE_CHECKING:
    from .board.detect import Board
    from .meters.meter import IdleBaseline, Meter, Window, WindowResult


class BoardSetupError(Exception):
    """The board could not be set up; the message says what was looked for and what to do."""


@dataclass
class TestEnergy:
    """The windows one test measured and how it ended."""

    nodeid: str
    windows: list[WindowResult] = field(default_factory=list)
    status: str | None = None
    reason: str | None = None
    duration_s: float | None = None


class EnergySession:
    """Board + meter for a pytest session; see the module docstring."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stack = ExitStack()
        self._open = False
        self.board: Board | None = None
        self.meter: Meter | None = None
        self.idle: IdleBaseline | None = None
        self.root: Path | None = None
        self.tests: dict[str, TestEnergy] = {}
        self.report_path: Path | None = None

    # -- set-up -------------------------------------------------------------------------

    def open(self) -> None:
        """Set up the board, start the sampler and measure idle power. Idempotent."""
        if self._open:
            return
        try:
            self._open_board()
        except BaseException:
            self._stack.close()
            raise
        self._open = True

    def _open_board(self) -> None:
        from .board.detect import detect
        from .meters.factory import open_source
        from .meters.meter import Meter

        s = self.settings
        if s.sim_model is not None:
            self.root = self._start_sim(s.sim_model)
        else:
            self.root = s.root if s.root is not None else Path("/")
        board = detect(self.root)
        if s.source in ("auto", "ina") and not board.rails.rails and s.sim_model is None:
            raise BoardSetupError(
                f"no power monitor (INA3221/INA238) found under {self.root}: "
                "on a machine without a Jetson run on a virtual board with "
                "--edge-board=sim:MODEL (e.g. sim:orin-nano), or pass --edge-root=DIR "
                "pointing at a board tree"
            )
        self.board = board
        source = open_source(s.source, self.root, interval_s=s.interval_s)
        self._stack.callback(source.close)
        meter = Meter(source, interval_s=s.interval_s)
        meter.start()
        self._stack.callback(meter.stop)
        self.meter = meter
        if s.idle_s > 0:
            self.idle = meter.measure_idle(seconds=s.idle_s)

    def _start_sim(self, model: str) -> Path:
        from .sim.runner import SimProcess
        from .sim.tree import create

        root = Path(tempfile.mkdtemp(prefix=f"edgeenergy-sim-{model}-"))
        self._stack.callback(shutil.rmtree, root, True)
        create(model, root)
        proc: AbstractContextManager[Any] = SimProcess(root)
        self._stack.enter_context(proc)
        return root

    def close(self) -> None:
        """Stop the sampler and the virtual board; remove a temporary virtual board."""
        self._stack.close()
        self._open = False

    # -- measuring ----------------------------------------------------------------------

    @property
    def simulated(self) -> bool:
        return bool(self.board is not None and self.board.identity.simulated)

    def record(self, nodeid: str) -> TestEnergy:
        return self.tests.setdefault(nodeid, TestEnergy(nodeid))

    def finish_test(self, nodeid: str) -> None:
        """Called after a test's teardown: the report on disk gains this test at once."""
        if not self._open or nodeid not in self.tests:
            return
        # The report writer lands with the report layer; until then results stay in memory.

    @contextmanager
    def window(self, nodeid: str, label: str) -> Iterator[Window]:
        """Measure the body as one energy window attributed to test ``nodeid``."""
        self.open()
        assert self.meter is not None
        with self.meter.window(label) as w:
            yield w
        self.record(nodeid).windows.append(w.result)
