"""Pin, verify and always restore operating points.

* :mod:`.values` parses ``612MHz``/``min``/``all``/``dvfs``, core counts, governors, modes;
* :mod:`.point`: :class:`OperatingPoint`, :data:`DVFS` and the current power mode as values;
* :mod:`.knobset`: the allow-list, the writable files of the knobs the board's discovery
  described (nothing else is written), built once from a detected board
  (:func:`~.knobset.knob_set`) and handed on: every function here takes that
  :class:`KnobSet`;
* :mod:`.plan`: the :class:`~.plan.Knob` protocol (show / plan / apply / verify / drift;
  restore = plan with the knob unpinned) that :mod:`.knobs` (cores, cpufreq, GPU, EMC) and
  :mod:`.nvpmodel` implement; :mod:`.jetson_clocks` wraps NVIDIA's tool;
* :mod:`.operating_point`: ``resolve``, ``apply`` (one loop over the knobs), ``check_drift``;
* :mod:`.journal`: what ``apply`` needs from a session (:class:`~.journal.Journal`) and the
  null journal of a direct application;
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
from .grid import count_changes, expand, order_for_fewest_changes
from .journal import DirectJournal, Journal
from .knobset import KnobSet, knob_set, knobs_at
from .operating_point import (
    DVFS,
    ApplyResult,
    OperatingPoint,
    PointSpec,
    apply,
    check_drift,
    files_for,
    point_knobs,
    read_back,
    resolve,
)
from .plan import Knob, PlanContext
from .privileges import check_privileges
from .residency import ResidencySampler, residency_to_json
from .state import RestoreReport, Session, restore_leftover

__all__ = [
    "DVFS",
    "ApplyResult",
    "ControlError",
    "DirectJournal",
    "Journal",
    "Knob",
    "KnobSet",
    "NotOffered",
    "NvpmodelError",
    "OperatingPoint",
    "PlanContext",
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
    "count_changes",
    "expand",
    "files_for",
    "knob_set",
    "knobs_at",
    "order_for_fewest_changes",
    "point_knobs",
    "read_back",
    "residency_to_json",
    "resolve",
    "restore_leftover",
]
