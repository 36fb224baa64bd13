"""Exceptions of the control layer. Each message names the thing and what is allowed."""

from __future__ import annotations

from ..errors import EdgeEnergyError


class ControlError(EdgeEnergyError):
    """Base class of every control-layer error."""


class ValueSpecError(ControlError, ValueError):
    """A frequency, core count, governor or power-mode value that cannot be used."""


class NotOffered(ValueSpecError):
    """A frequency the board does not offer; the message lists the offered ones."""


class UnknownKnobFile(ControlError, PermissionError):
    """A write aimed at a file that discovery did not find as a knob file."""


class KnobUnavailable(ControlError, OSError):
    """The board lacks the knob (no GPU devfreq, no nvpmodel, no EMC interface...)."""


class NvpmodelError(ControlError, OSError):
    """``nvpmodel`` printed ``NVPM ERROR`` or failed; the message names PARAM and path."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        path: str | None = None,
        lines: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.param = param
        self.path = path
        self.lines = lines

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RebootRequired(ValueSpecError):
    """A power-mode switch that changes GPU power-gating masks (nvpmodel would reboot)."""


class ToolError(ControlError, OSError):
    """An external tool (``jetson_clocks``) failed."""


class PrivilegeError(ControlError, PermissionError):
    """Knob files on a real board that this process may not write."""


class SessionBusy(ControlError, OSError):
    """Another live session holds the board's state file."""


class RestoreError(ControlError, OSError):
    """Restoring the board left some knob files different from the snapshot."""


class StateFileError(ControlError, ValueError):
    """A state file that cannot be read (corrupt, foreign, for another root)."""


class StateDirError(ControlError, PermissionError):
    """The board's state directory (lock and journal) cannot be written, so this session
    may not pin the board; the message names the directory and how to make it writable."""
