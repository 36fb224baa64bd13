"""The jetson_clocks knob: ``--show``, ``--store FILE``, ``--restore FILE`` and the plain
run (every clock at its maximum), through ``<root>/usr/bin/jetson_clocks`` as argument lists.

The plain run also writes files the control layer does not snapshot (cpuidle ``disable``,
fan); a caller that pins with it must ``store`` first and ``restore`` afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from ..board.nvpmodel import JetsonClocksShow, parse_jetson_clocks_show
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
        return asdict(self.read_show())

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
        """After a plain run: CPU and GPU min == max, as jetson-stats judges it."""
        if not self._pinned:
            return []
        shown = self.read_show()
        mismatches: list[Mismatch] = []
        bin_path = Path(self._bin())
        for cpu in shown.cpus:
            if cpu.online and cpu.min_freq_hz != cpu.max_freq_hz:
                mismatches.append(
                    Mismatch(bin_path, f"cpu{cpu.cpu} min == max", str(cpu.min_freq_hz), self.name)
                )
        gpu = shown.gpu
        if gpu is not None and gpu.min_freq_hz != gpu.max_freq_hz:
            mismatches.append(Mismatch(bin_path, "GPU min == max", str(gpu.min_freq_hz), self.name))
        return mismatches
