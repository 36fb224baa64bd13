"""The nvpmodel knob: query and select power modes with the board's own ``nvpmodel``.

The tool runs as ``<root>/usr/bin/nvpmodel -m ID`` with an argument list (never a shell
string). A mode whose GPU power-gating masks (TPC/FBP/GPU_POWER_GATING) differ from the
current mode makes nvpmodel ask to reboot: such a switch is refused unless ``force=True``,
which answers ``YES`` on stdin as jetson-stats does (on a real board nvpmodel then
reboots). Unforced calls answer ``NO`` so the tool can never hang on its prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..board.detect import read_power_mode_status
from ..board.nvpmodel import NvpmodelQueryError, PowerMode, parse_query
from .errors import KnobUnavailable, NvpmodelError, RebootRequired, UnknownKnobFile
from .knobset import KnobSet
from .plan import PlanContext
from .point import CurrentMode, OperatingPoint
from .steps import Mismatch, StepRunner, ToolCall, ToolResult, run_tool
from .values import resolve_power_mode

__all__ = ["CurrentMode", "NvpmodelKnob", "nvpmodel_error"]

_PARAM_RE = re.compile(r"PARAM\s+(?P<param>[A-Za-z0-9_]+)")
_PATH_RE = re.compile(r"PATH:?\s*(?P<path>/\S+)")
_WRITE_RE = re.compile(r"Error (?:writing|opening|reading)\s+(?:\S+\s+to\s+)?(?P<path>/[^:\s]+)")


def nvpmodel_error(argv: Sequence[str], result: ToolResult) -> NvpmodelError | None:
    """An :class:`NvpmodelError` for ``NVPM ERROR`` lines or a failed run, else None."""
    lines = [
        line.strip()
        for line in (result.stdout + "\n" + result.stderr).splitlines()
        if line.strip().startswith("NVPM ERROR")
    ]
    if not lines and result.returncode == 0:
        return None
    param = next((m.group("param") for ln in lines if (m := _PARAM_RE.search(ln))), None)
    path = next((m.group("path") for ln in lines if (m := _PATH_RE.search(ln))), None)
    if path is None:
        path = next((m.group("path") for ln in lines if (m := _WRITE_RE.search(ln))), None)
    where = []
    if param is not None:
        where.append(f"PARAM {param}")
    if path is not None:
        where.append(f"path {path}")
    detail = " | ".join(lines) if lines else (result.stderr or result.stdout).strip()[-500:]
    message = (
        f"{' '.join(argv)} failed (exit {result.returncode})"
        + (f" at {', '.join(where)}" if where else "")
        + f": {detail or 'no output'}"
    )
    return NvpmodelError(message, param=param, path=path, lines=tuple(lines))


class NvpmodelKnob:
    """Power modes from ``nvpmodel.conf``, set through the ``nvpmodel`` tool (a
    :class:`~pytest_edgeenergy.control.plan.Knob` whose steps are tool calls)."""

    name = "nvpmodel"

    def __init__(self, knobs: KnobSet) -> None:
        self.knobs = knobs
        self._expected: PowerMode | None = None

    def available(self) -> bool:
        return self.knobs.nvpmodel_conf is not None and self.knobs.nvpmodel_bin is not None

    def files(self) -> tuple[Path, ...]:
        """Files ``nvpmodel -m`` may write (the conf's PARAM paths and its status file)."""
        extra = (self.knobs.nvpmodel_status,) if self.knobs.nvpmodel_status else ()
        return tuple(p for p in self.knobs.nvpmodel_files + extra if self.knobs.allows(p))

    def check_inside(self, mode: PowerMode, *, source: str = "--power-mode") -> None:
        """Raise :class:`UnknownKnobFile` when selecting ``mode`` would make nvpmodel write
        a file outside the board (a PARAM path through ``..`` or a link), or one that is a
        symbolic link: the tool writes wherever its conf says, so the mode is refused."""
        conf = self.knobs.require_conf()
        bad: list[str] = []
        for setting in mode.settings:
            param = conf.params.get(setting.param)
            path = param.path_for(setting.arg, self.knobs.root) if param else None
            if path is None or not path.exists():
                continue
            why = self.knobs.refused.get(str(path))
            if why is None and not self.knobs.allows(path):
                why = "not a knob file discovered inside the board"
            if why is not None:
                bad.append(f"PARAM {setting.param} {setting.arg} {path}: {why}")
        if bad:
            raise UnknownKnobFile(
                f"{source} {mode.name}: refusing to run nvpmodel -m {mode.id}, which would "
                f"write outside the board's knob files ({self.knobs.root / 'etc/nvpmodel.conf'}"
                "):\n  " + "\n  ".join(bad)
            )

    def _bin(self) -> Path:
        if self.knobs.nvpmodel_bin is None:
            raise KnobUnavailable(
                f"no nvpmodel tool at {self.knobs.root / 'usr/bin/nvpmodel'}: cannot set a "
                f"power mode on this board"
            )
        return self.knobs.nvpmodel_bin

    def current(self, *, ask_tool: bool = False) -> CurrentMode | None:
        """The current mode from nvpmodel's status file (``var/lib/nvpmodel/status``, which
        ``nvpmodel -m`` rewrites), else from ``nvpmodel -q``; ``ask_tool`` asks the tool first.
        Reading the file spares a tool run (a second on a Nano) at every check."""
        conf = self.knobs.nvpmodel_conf
        status = read_power_mode_status(self.knobs.root, conf)
        if status is not None and not ask_tool:
            return CurrentMode(status.id, status.name, "var/lib/nvpmodel/status")
        if self.knobs.nvpmodel_bin is not None:
            result = run_tool(ToolCall((str(self.knobs.nvpmodel_bin), "-q"), knob=self.name))
            try:
                query = parse_query(result.stdout)
            except NvpmodelQueryError:
                pass
            else:
                return CurrentMode(query.id, query.name, "nvpmodel -q")
        if status is None:
            return None
        return CurrentMode(status.id, status.name, "var/lib/nvpmodel/status")

    def show(self) -> dict[str, Any]:
        conf = self.knobs.nvpmodel_conf
        current = self.current()
        return {
            "current": current.to_json() if current is not None else None,
            "modes": [{"id": m.id, "name": m.name} for m in conf.modes] if conf else [],
            "default_id": conf.default_id if conf else None,
        }

    def resolve(self, mode: PowerMode | str | int, *, source: str = "--power-mode") -> PowerMode:
        """A mode of this board's conf (name in any case, or id)."""
        if isinstance(mode, PowerMode):
            return mode
        return resolve_power_mode(str(mode), self.knobs.require_conf(), source=source)

    def check_switch(
        self,
        mode: PowerMode,
        *,
        current: CurrentMode | None,
        force: bool = False,
        source: str = "--power-mode",
    ) -> None:
        """Raise :class:`RebootRequired` when switching from ``current`` to ``mode`` changes
        a GPU power-gating mask and ``force`` is not set."""
        if force or current is None:
            return
        conf = self.knobs.require_conf()
        try:
            old = conf.mode(current.id)
        except ValueError:
            return
        old_masks, new_masks = conf.gating_masks(old), conf.gating_masks(mode)
        if old_masks == new_masks:
            return
        changes = ", ".join(
            f"{key} {old_masks.get(key, '-')} -> {new_masks.get(key, '-')}"
            for key in sorted(set(old_masks) | set(new_masks))
            if old_masks.get(key) != new_masks.get(key)
        )
        raise RebootRequired(
            f"{source} {mode.name}: switching from mode {old.id} {old.name} to {mode.id} "
            f"{mode.name} changes GPU power gating ({changes}), which needs a reboot; pick a "
            "mode with the same masks, or pass --edge-force-mode (a real board then reboots)"
        )

    def plan(
        self,
        mode: PowerMode | str | int | None,
        *,
        force: bool = False,
        current: CurrentMode | None = None,
        source: str = "--power-mode",
    ) -> list[ToolCall]:
        """The ``nvpmodel -m ID`` call selecting ``mode`` (nothing for None)."""
        if mode is None:
            return []
        resolved = self.resolve(mode, source=source)
        self.check_inside(resolved, source=source)
        if current is None:
            current = self.current()
        self.check_switch(resolved, current=current, force=force, source=source)
        return [
            ToolCall(
                (str(self._bin()), "-m", str(resolved.id)),
                input="YES\n" if force else "NO\n",
                knob=self.name,
                description=f"power mode {resolved.id} {resolved.name}",
            )
        ]

    def files_for(self, point: OperatingPoint) -> tuple[Path, ...]:
        return self.files() if point.power_mode is not None else ()

    def plan_point(self, point: OperatingPoint, ctx: PlanContext) -> list[ToolCall]:
        """Select the point's mode; an unpinned mode goes back to ``ctx.baseline_mode``
        (forced again when the session forced a switch before)."""
        if point.power_mode is not None:
            return self.plan(point.power_mode, force=ctx.force)
        wanted = ctx.baseline_mode
        if wanted is None or self.knobs.nvpmodel_bin is None:
            return []
        now = self.current()
        if now is None or now.id == wanted.id:
            return []
        return self.plan(wanted.id, force=ctx.force or ctx.restore_forced, current=now)

    def expect_point(self, point: OperatingPoint, ctx: PlanContext) -> None:
        """Nothing to add: :meth:`verify` checks the mode :meth:`apply` selected."""

    def drift(self, point: OperatingPoint, ctx: PlanContext) -> list[str]:
        """The power mode no longer the pinned one (another actor ran ``nvpmodel -m``)."""
        if point.power_mode is None:
            return []
        current = self.current()
        if current is not None and (current.name or "").lower() == point.power_mode.lower():
            return []
        now = "unknown" if current is None else f"{current.id} {current.name}"
        return [f"drift: power mode pinned {point.power_mode}, now {now}"]

    def apply(self, steps: Sequence[ToolCall], runner: StepRunner | None = None) -> None:
        """Run the planned calls; ``NVPM ERROR`` output raises :class:`NvpmodelError`."""
        if not steps:
            return
        conf = self.knobs.require_conf()
        for step in steps:
            result = runner.call(step) if runner is not None else run_tool(step)
            if result is None:  # dry run
                continue
            error = nvpmodel_error(step.argv, result)
            if error is not None:
                raise error
            if "-m" in step.argv:
                self._expected = conf.mode(step.argv[step.argv.index("-m") + 1])

    def verify(self) -> list[Mismatch]:
        """The current mode read back against the last one selected."""
        if self._expected is None:
            return []
        current = self.current()
        expected = f"{self._expected.id} {self._expected.name}"
        if current is not None and current.id == self._expected.id:
            return []
        actual = None if current is None else f"{current.id} {current.name}"
        return [Mismatch(self._bin(), expected, actual, self.name)]
