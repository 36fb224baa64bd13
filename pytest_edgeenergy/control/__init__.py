"""Pin, verify and always restore operating points.

* :mod:`.values` parses ``612MHz``/``min``/``all``/``dvfs``, core counts, governors, modes;
* :mod:`.knobset` lists the writable knob files discovery found (nothing else is written);
* :mod:`.knobs`, :mod:`.nvpmodel`, :mod:`.jetson_clocks`: knobs as operations
  (available / show / plan / apply / verify);
* :mod:`.operating_point`: :class:`OperatingPoint`, ``resolve``, ``apply``, ``check_drift``;
* :mod:`.state`: :class:`Session` (snapshot, journal, restore on exit/exception/signals) and
  ``restore_leftover`` after a SIGKILL;
* :mod:`.grid`: ``expand`` and ``order_for_fewest_changes``; :mod:`.residency`: frequency
  residency; :mod:`.privileges`: one clear error when a real board's knobs are not writable.
"""

from __future__ import annotations

from .errors import (
    ControlError,
    NotOffered,
    NvpmodelError,
    PrivilegeError,
    RebootRequired,
    RestoreError,
    SessionBusy,
    UnknownKnobFile,
    ValueSpecError,
)
from .grid import expand, order_for_fewest_changes
from .knobset import KnobSet, knob_set
from .operating_point import (
    DVFS,
    ApplyResult,
    OperatingPoint,
    PointSpec,
    apply,
    check_drift,
    files_for,
    read_back,
    resolve,
)
from .privileges import check_privileges
from .residency import ResidencySampler, residency_to_json
from .state import RestoreReport, Session, restore_leftover

__all__ = [
    "DVFS",
    "ApplyResult",
    "ControlError",
    "KnobSet",
    "NotOffered",
    "NvpmodelError",
    "OperatingPoint",
    "PointSpec",
    "PrivilegeError",
    "RebootRequired",
    "ResidencySampler",
    "RestoreError",
    "RestoreReport",
    "Session",
    "SessionBusy",
    "UnknownKnobFile",
    "ValueSpecError",
    "apply",
    "check_drift",
    "check_privileges",
    "expand",
    "files_for",
    "knob_set",
    "order_for_fewest_changes",
    "read_back",
    "residency_to_json",
    "resolve",
    "restore_leftover",
]
