"""The jetson_clocks knob: ``--show``, ``--store FILE``, ``--restore FILE`` and the plain
run (every clock at its maximum), through ``<root>/usr/bin/jetson_clocks`` as argument lists.

The plain run also writes files the control layer does not snapshot (cpuidle ``disable``,
fan); a caller that pins with it must ``store`` first and ``restore`` afterwards.
:meth:`JetsonClocksKnob.verify` reads the pinning back from ``--show``;
:meth:`JetsonClocksKnob.show` keeps every clock line by the name the tool prints, Thor's
``gpu-nvd-0`` (its codec clock) beside ``gpu-gpc-0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from ..board.nvpmodel import ClockShow, CpuClockShow, JetsonClocksShow, parse_jetson_clocks_show
from .errors import KnobUnavailable, ToolError
from .knobset import KnobSet
from .steps import Mismatch, StepRunner, ToolCall, run_tool

Action = Literal["pin", "store", "restore"]


class JetsonClocksKnob:
    """NVIDIA's ``jetson_clocks`` tool."""

    name = "jetson_clocks"

    def __init__(self, knobs: KnobSet) -> None:
        self.knobs = knobs
        self._pinned = False

    def available(self) -> bool:
        return self.knobs.jetson_clocks_bin is not None

    def files(self) -> tuple[Path, ...]:
        """The knob files it changes that the control layer knows (a subset: see above)."""
        return self.knobs.files

    def _bin(self) -> str:
        if self.knobs.jetson_clocks_bin is None:
            raise KnobUnavailable(f"no jetson_clocks tool at {self.knobs.root / 'usr/bin'}")
        return str(self.knobs.jetson_clocks_bin)

    def _run(self, call: ToolCall) -> str:
        result = run_tool(call)
        if result.returncode != 0:
            raise ToolError(
                f"{' '.join(call.argv)} failed (exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[-500:] or 'no output'}"
            )
        return result.stdout

    def read_show(self) -> JetsonClocksShow:
        """``jetson_clocks --show``, parsed."""
        return parse_jetson_clocks_show(self._run(ToolCall((self._bin(), "--show"))))

    def show(self) -> dict[str, Any]:
        """``--show`` as JSON: the parsed fields, and ``clocks``, every clock line but the
        CPUs' by its name (:func:`named_clocks`)."""
        shown = self.read_show()
        clocks = {name: asdict(clock) for name, clock in named_clocks(shown).items()}
        return {**asdict(shown), "clocks": clocks}

    def plan(
        self, action: Action, store_file: Path | None = None, *, overwrite: bool = False
    ) -> list[ToolCall]:
        """``pin`` (plain run), ``store [FILE]`` or ``restore [FILE]`` as one call.

        ``--store`` asks before overwriting an existing file: answered ``Y`` only when
        ``overwrite`` is set.
        """
        argv: tuple[str, ...]
        if action == "pin":
            argv = (self._bin(),)
        elif action in ("store", "restore"):
            argv = (self._bin(), f"--{action}")
            if store_file is not None:
                argv += (str(store_file),)
        else:
            raise ValueError(f"jetson_clocks action {action!r}; allowed: pin, store, restore")
        answer = "Y\n" if overwrite else "N\n"
        return [ToolCall(argv, input=answer, knob=self.name, description=action)]

    def apply(self, steps: Sequence[ToolCall], runner: StepRunner | None = None) -> None:
        for step in steps:
            if runner is not None:
                result = runner.call(step)
                if result is not None and result.returncode != 0:
                    raise ToolError(
                        f"{' '.join(step.argv)} failed (exit {result.returncode}): "
                        f"{(result.stderr or result.stdout).strip()[-500:] or 'no output'}"
                    )
            else:
                self._run(step)
            self._pinned = len(step.argv) == 1

    def verify(self) -> list[Mismatch]:
        """After a plain run: what :func:`pinning_mismatches` finds in ``--show``."""
        if not self._pinned:
            return []
        return pinning_mismatches(self.read_show(), Path(self._bin()), self.name)


def named_clocks(shown: JetsonClocksShow) -> dict[str, ClockShow]:
    """Every clock line of ``--show`` but the CPUs', by the name the tool prints: the GPU's
    first (``GPU``; on Thor ``gpu-gpc-0`` and its codec clock ``gpu-nvd-0``), then ``EMC``,
    then the accelerators (``DLA0_CORE``, ``PVA0_VPS0`` ...)."""
    emc = (shown.emc,) if shown.emc is not None else ()
    return {c.name: c for c in (*shown.gpu_clocks, *emc, *shown.other_clocks)}


def _min_max(clock: CpuClockShow | ClockShow) -> str:
    def hz(value: int | None) -> str:
        return "?" if value is None else str(value)

    return f"MinFreq {hz(clock.min_freq_hz)} Hz, MaxFreq {hz(clock.max_freq_hz)} Hz"


def _pinned(clock: CpuClockShow | ClockShow) -> bool:
    return clock.min_freq_hz is not None and clock.min_freq_hz == clock.max_freq_hz


def pinning_mismatches(
    shown: JetsonClocksShow, tool: Path, knob: str = "jetson_clocks"
) -> list[Mismatch]:
    """Whether ``--show`` says every clock is pinned, as jetson-stats judges it: online CPUs
    and GPU clocks at min == max, EMC at its MaxFreq (the tool shows nvpmodel's EMC cap
    there) with the override set.

    Never passes vacuously: no online CPU line, no GPU graphics clock or no EMC line in
    the output is a mismatch naming what is missing.
    """
    found: list[Mismatch] = []

    def miss(expected: str, actual: str) -> None:
        found.append(Mismatch(tool, expected, actual, knob))

    checked = [c for c in shown.cpus if c.online is not False]
    if not checked:
        listed = ",".join(str(c.cpu) for c in shown.cpus) or "none"
        miss(
            "an online CPU line with MinFreq == MaxFreq",
            f"no online CPU in jetson_clocks --show (CPU lines: {listed})",
        )
    for cpu in checked:
        if not _pinned(cpu):
            miss(f"cpu{cpu.cpu} MinFreq == MaxFreq", _min_max(cpu))
    if shown.gpu is None:
        names = ", ".join(c.name for c in shown.gpu_clocks) or "none"
        miss(
            "a GPU line (GPU or gpu-gpc-N) with MinFreq == MaxFreq",
            f"no GPU graphics clock in jetson_clocks --show (GPU lines: {names})",
        )
    for gpu in shown.gpu_clocks:
        if not _pinned(gpu):
            miss(f"{gpu.name} MinFreq == MaxFreq", _min_max(gpu))
    emc = shown.emc
    if emc is None:
        miss("an EMC line at its MaxFreq", "no EMC line in jetson_clocks --show")
        return found
    if emc.max_freq_hz is None or emc.cur_freq_hz != emc.max_freq_hz:
        miss(f"EMC CurrentFreq == MaxFreq ({emc.max_freq_hz} Hz)", f"{emc.cur_freq_hz} Hz")
    if emc.freq_override is False:
        miss("EMC FreqOverride=1", "FreqOverride=0")
    return found
