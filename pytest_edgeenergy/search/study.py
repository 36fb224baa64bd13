"""One search study shared by several processes (boards) through Optuna's storage.

Every process running the same search joins the Optuna study ``name`` in ``storage``: a
PostgreSQL or SQLite URL (Optuna's ``RDBStorage``, with its heartbeat: a RUNNING trial
whose process stopped beating for 3 heartbeats is failed by :func:`optuna.storages.
fail_stale_trials`), or ``journal:PATH`` / a path ending in ``.log`` (Optuna's
``JournalStorage`` over a file on a shared filesystem; it has no heartbeat of its own, so a
lease written as the trial's user attr ``alive_at`` plays its part, failed the same way).

The strategies stay stateless: before each proposal the process reads every trial of its
search from the study (:meth:`SharedStudy.view`): measured ones and those whose point failed
form the history; trials other processes are running are given as provisional failed trials
("pending"), so no strategy proposes a point another board is profiling; trials failed by
the heartbeat ("lost") are left out, and their points are claimed again first (a point
lost :data:`MAX_LOST` times is left out for good); withdrawn ones are left out. A point
is claimed by creating a RUNNING trial with its params, then re-reading the study: when an
earlier trial (lower trial id) holds the same point, or the total is already reached, the
claim is withdrawn (state PRUNED, user attr ``withdrawn``) and the process proposes again.
``total`` counts trials of all processes together: a process stops when measured and
failed trials reach it, and waits while the remainder is running elsewhere (so a trial lost
with its board is profiled again by whoever is left).

The study records what its searches are (study user attr ``search`` for ``edgeenergy
search``, ``search TEST`` for a pytest test: space, objective, budgets and, replayed, the
table's SHA-256 and ``--where`` filters; live, a load scenario's deadline); a process
asking anything else is refused, naming the difference. A worker's strategy and seed are
its own (recorded on its trials). For Optuna's own tools (``optuna.load_study``,
optuna-dashboard) the study names its metrics, stores each measured trial's budgets as
Optuna constraints (system attr ``constraints``: <= 0 is met, as Optuna's constrained
samplers store them, so ``best_trial`` and the plots skip over-budget trials) and a lost
trial's reason (user attr ``lost``). Optuna and SQLAlchemy are imported here only, and this
module only when a study is asked for.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import EdgeEnergyError, InvalidValue
from ..redact import redact_text
from .driver import Search
from .objective import THROUGHPUT, Objective
from .space import Knobs, Point, Space
from .trial import Trial

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage

__all__ = [
    "CONSTRAINTS_KEY",
    "DEFAULT_HEARTBEAT_S",
    "STUDY_FORMAT",
    "Claim",
    "SharedStudy",
    "StudyError",
    "StudyTrial",
    "constraint_names",
    "constraints",
    "metric_names",
    "parse_storage",
    "redact",
    "search_key",
    "worker_id",
]

DEFAULT_HEARTBEAT_S = 10
"""Seconds between heartbeats; a trial is failed after :data:`GRACE_BEATS` missed ones."""
GRACE_BEATS = 3
MAX_LOST = 2
"""A point whose trial was lost (its process stopped beating) is profiled again first; one
lost this often is left out (as if failed, not counted): it may be what stops the board."""
_OPEN_ATTEMPTS = 8
_MAX_WITHDRAWALS = 200
"""Withdrawn claims of one proposal before giving up (a strategy proposing only taken
points would otherwise loop)."""

STUDY_FORMAT = 2
"""What this version's records mean (study user attr :data:`FORMAT_KEY`). Format 1 (no
such attr; searches under ``config:TEST``, the seed and strategy part of the search, no
constraints) is read by ``--show`` but not joined."""
FORMAT_KEY = "edgeenergy study format"
CONSTRAINTS_KEY = "constraints"
"""The trial system attr Optuna's constrained samplers store their constraint values in
(``optuna.samplers._base._CONSTRAINTS_KEY``); Optuna reads a trial as feasible when every
value is <= 0."""

Kind = Literal["rdb", "journal"]
Status = Literal["measured", "failed", "running", "lost", "withdrawn"]

_ALLOWED = "postgresql://..., sqlite:///PATH, journal:PATH or a PATH ending in .log"


class StudyError(EdgeEnergyError):
    """A shared study that cannot be used as asked (the message says why)."""


def redact(url: str) -> str:
    """``url`` without its password (``postgresql://user:***@host/db``, ``?password=***``)."""
    return redact_text(url)


def parse_storage(url: str) -> tuple[Kind, str]:
    """The kind of storage ``url`` names and its target (an SQLAlchemy URL with the psycopg
    driver, or the journal file's path); :class:`~..errors.InvalidValue` otherwise."""
    text = url.strip()
    if text.startswith("journal:"):
        path = text.removeprefix("journal:")
        if not path:
            raise InvalidValue(f"study storage {text!r} names no file: give journal:PATH")
        return "journal", path
    if "://" not in text:
        if text.endswith(".log"):
            return "journal", text
        raise InvalidValue(f"study storage {redact(text)!r} is not supported; give {_ALLOWED}")
    scheme, _, rest = text.partition("://")
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        return "rdb", "postgresql+psycopg://" + rest
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/" or rest.endswith(":memory:"):
            raise InvalidValue(f"study storage {text!r} names no file: give sqlite:///PATH")
        return "rdb", text
    raise InvalidValue(f"study storage {redact(text)!r} is not supported; give {_ALLOWED}")


def worker_id(board: str | None = None) -> str:
    """This process in the study: ``host/pid`` (and the board, when given)."""
    base = f"{socket.gethostname()}/pid{os.getpid()}"
    return f"{base}/{board}" if board else base


@dataclass(frozen=True)
class StudyTrial:
    """One trial of the study as this module reads it."""

    number: int
    trial_id: int
    test: str
    worker: str
    status: Status
    trial: Trial
    reason: str | None = None
    """Why a trial is failed, lost or withdrawn."""
    strategy: str | None = None
    seed: int | None = None
    """The strategy and seed of the worker that claimed it (None: a format 1 study)."""

    @property
    def counted(self) -> bool:
        """Counts towards the total: measured, failed or running."""
        return self.status in ("measured", "failed", "running")

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "worker": self.worker,
            "status": self.status,
            **self.trial.to_json(),
            **({"reason": self.reason} if self.reason is not None else {}),
            **({"strategy": self.strategy, "seed": self.seed} if self.strategy else {}),
        }


@dataclass
class Claim:
    """A point this process holds in the study (a RUNNING trial it beats for)."""

    trial_id: int
    number: int
    knobs: Knobs
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)


@dataclass(frozen=True)
class StudyView:
    """The trials of one search, and what a proposal is made from."""

    trials: tuple[StudyTrial, ...]

    @property
    def done(self) -> int:
        return sum(t.status in ("measured", "failed") for t in self.trials)

    @property
    def counted(self) -> int:
        return sum(t.counted for t in self.trials)

    def _lost(self) -> tuple[set[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
        """Points held by counted trials, and how often each other point was lost."""
        held = {_key(t.trial.knobs) for t in self.trials if t.counted}
        lost = Counter(
            _key(t.trial.knobs)
            for t in self.trials
            if t.status == "lost" and _key(t.trial.knobs) not in held
        )
        return held, lost

    def retry(self) -> Knobs | None:
        """The first lost point to profile again (lost fewer than :data:`MAX_LOST` times
        and held by no counted trial): its board stopped, not the point."""
        held, lost = self._lost()
        for t in self.trials:
            point = _key(t.trial.knobs)
            if t.status == "lost" and point not in held and lost[point] < MAX_LOST:
                return dict(t.trial.knobs)
        return None

    def history(self) -> list[Trial]:
        """Measured and failed trials, then as provisional failed trials: running ones and
        points lost :data:`MAX_LOST` times (not proposed again, not counted)."""
        out = [t.trial for t in self.trials if t.status in ("measured", "failed")]
        out += [
            Trial(knobs=t.trial.knobs, failed=f"pending: being profiled by {t.worker}")
            for t in self.trials
            if t.status == "running"
        ]
        _, lost = self._lost()
        out += [
            Trial(knobs=dict(point), failed=f"lost {n} times: the board stopped in it")
            for point, n in lost.items()
            if n >= MAX_LOST
        ]
        return out


def _key(knobs: Knobs) -> tuple[Any, ...]:
    return tuple(sorted(knobs.items()))


def search_key(test: str) -> str:
    """The study user attr holding search ``test``'s identity (``""``: ``edgeenergy search``)."""
    return f"search {test}" if test else "search"


def _identity(space: Space, objective: Objective, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "space": {d.name: list(d.values) for d in space.dims},
        "objective": objective.name,
        "power_budget_w": objective.power_budget_w,
        "latency_budget_s": objective.latency_budget_s,
        **inputs,
    }


def _directions(objective: Objective) -> list[Literal["minimize", "maximize"]]:
    if objective.multi:
        return ["minimize", "minimize"]
    return ["maximize" if objective.maximises else "minimize"]


def metric_names(objective: Objective) -> list[str]:
    """The names of the values Optuna records for ``objective`` (its axes' labels)."""
    if objective.multi:
        return ["time_s", "energy_j"]
    return {
        "min-energy": ["energy_j"],
        "min-time": ["time_s"],
        "min-edp": ["edp_j_s"],
        "max-train-throughput": [THROUGHPUT],
    }[objective.name]


def _values(objective: Objective, trial: Trial) -> list[float]:
    """A measured trial's values as Optuna records them (in the study's directions)."""
    if objective.multi:
        return list(objective.values(*trial.measured))
    value = objective.value(*trial.measured, trial.metrics)
    return [-value if objective.maximises else value]


def constraint_names(objective: Objective) -> list[str]:
    """What each of :func:`constraints`' values is (the study records them per search)."""
    names = []
    if objective.power_budget_w is not None:
        names.append(f"power_w - {objective.power_budget_w:g} (the power budget, W)")
    if objective.latency_budget_s is not None:
        what = "latency_p99_s" if objective.needs else "time_s"
        names.append(f"{what} - {objective.latency_budget_s:g} (the latency budget, s)")
    names.append("1 when marked infeasible (a missed deadline, no training minibatch), else 0")
    return names


def constraints(objective: Objective, trial: Trial) -> list[float]:
    """A measured trial's constraint values for Optuna (each <= 0 when met): how far over
    each budget, and whether it is marked infeasible."""
    time_s, power_w = trial.measured
    out = []
    if objective.power_budget_w is not None:
        out.append(power_w - objective.power_budget_w)
    if objective.latency_budget_s is not None:
        out.append(objective.latency_s(time_s, trial.metrics) - objective.latency_budget_s)
    out.append(1.0 if trial.infeasible is not None else 0.0)
    return out


class SharedStudy:
    """This process's handle on the study ``name`` in ``storage`` (see the module)."""

    def __init__(
        self,
        storage: str,
        name: str,
        *,
        worker: str | None = None,
        heartbeat_s: int = DEFAULT_HEARTBEAT_S,
    ) -> None:
        from ..extras import require

        require("optuna", "search", "a shared search study")
        if not name.strip():
            raise InvalidValue("--study: empty study name")
        self.kind, target = parse_storage(storage)
        self.url = redact(storage.strip())
        self.name = name
        self.worker = worker or worker_id()
        self.worker_board: str | None = None
        """The board in :attr:`worker` once :meth:`set_board` named it ("" for none)."""
        self.heartbeat_s = heartbeat_s
        self.grace_s = GRACE_BEATS * heartbeat_s
        self._storage = self._open(target)
        self._studies: dict[tuple[str, ...], optuna.Study] = {}
        self._own: dict[str, dict[str, Any]] = {}
        """Per search: this worker's strategy and seed (recorded on each trial it claims)."""

    def _open(self, target: str) -> BaseStorage:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        try:
            if self.kind == "journal":
                from optuna.storages.journal import JournalStorage

                from .journal import JournalFile

                Path(target).parent.mkdir(parents=True, exist_ok=True)
                return JournalStorage(JournalFile(target))
            if target.startswith("postgresql"):
                from ..extras import require

                require("psycopg", "history", f"the PostgreSQL study storage {self.url}")
            for attempt in range(_OPEN_ATTEMPTS):
                try:
                    return optuna.storages.RDBStorage(
                        target, heartbeat_interval=self.heartbeat_s, grace_period=self.grace_s
                    )
                except Exception as e:  # sqlalchemy's errors: no sqlalchemy import here
                    if not type(e).__module__.startswith("sqlalchemy"):
                        raise
                    if attempt + 1 == _OPEN_ATTEMPTS:
                        raise StudyError(
                            f"study storage {self.url}: {redact(_first_line(e))}"
                        ) from None
                    # Workers starting together on an empty database race to create
                    # Optuna's tables: the losers try again once the winner's are there.
                    time.sleep(random.uniform(0.2, 1.0))
            raise AssertionError("unreachable")
        except EdgeEnergyError as e:  # the journal file's own (it names the file)
            raise StudyError(str(e)) from None
        except (OSError, ValueError, ImportError) as e:
            raise StudyError(f"study storage {self.url}: {redact(str(e))}") from None

    def set_board(self, board: str | None) -> None:
        """Name this process's board in its worker id (``host/pid/board``)."""
        self.worker_board = board or ""
        self.worker = worker_id(board)

    @property
    def label(self) -> str:
        return f"study {self.name!r} in {self.url}"

    def _study(self, objective: Objective) -> optuna.Study:
        import optuna

        directions = _directions(objective)
        study = self._studies.get(tuple(directions))
        if study is None:
            try:
                study = optuna.create_study(
                    storage=self._storage, study_name=self.name, directions=directions
                )
                # Only the creator records its heartbeat: a process that wrote its own
                # when it found none yet (a reader, a worker joining in the same instant)
                # could overwrite the creator's and stretch every later grace.
                study.set_user_attr("heartbeat_s", self.heartbeat_s)
            except optuna.exceptions.DuplicatedStudyError:
                study = optuna.load_study(study_name=self.name, storage=self._storage)
                self._adopt_heartbeat(study)
            self._studies[tuple(directions)] = study
        return study

    def _adopt_heartbeat(self, study: optuna.Study) -> None:
        """Use the study's heartbeat (its creator's ``--study-heartbeat-s``): a process
        judging staleness with a shorter grace would fail trials that are alive. Reads
        only; until the creator has written it, this process keeps its own."""
        recorded = study.user_attrs.get("heartbeat_s")
        if not isinstance(recorded, int) or isinstance(recorded, bool) or recorded < 1:
            return
        self.heartbeat_s = recorded
        self.grace_s = GRACE_BEATS * recorded
        if self.kind == "rdb":
            from optuna.storages import RDBStorage

            assert isinstance(self._storage, RDBStorage)
            self._storage.heartbeat_interval = recorded
            self._storage.grace_period = self.grace_s

    def load(self) -> optuna.Study:
        """The existing study (:class:`StudyError` when there is none of this name)."""
        import optuna

        try:
            study = optuna.load_study(study_name=self.name, storage=self._storage)
            self._adopt_heartbeat(study)
            return study
        except KeyError:
            names = [s.study_name for s in optuna.get_all_study_summaries(self._storage)]
            raise StudyError(
                f"{self.label}: no such study; studies there: {', '.join(names) or 'none'}"
            ) from None

    # -- joining -----------------------------------------------------------------------

    def join(
        self,
        test: str,
        space: Space,
        objective: Objective,
        *,
        strategy: str,
        seed: int,
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        """Create or join the study; refuse a search that differs from the recorded one
        (space, objective, budgets and ``inputs``: what the measurements come from, e.g. a
        replayed table's digest and filters). ``strategy`` and ``seed`` are this worker's."""
        study = self._study(objective)
        self._check_format(study)
        key = search_key(test)
        wanted = _identity(space, objective, inputs or {})
        theirs = study.user_attrs.get(key)
        if theirs is None:
            study.set_user_attr(key, {**wanted, "constraints": constraint_names(objective)})
            theirs = study.user_attrs.get(key, wanted)
        differ = [
            k for k in {**theirs, **wanted} if k != "constraints" and theirs.get(k) != wanted.get(k)
        ]
        if differ:
            said = "; ".join(
                f"{k} {_shown(theirs.get(k))} there, {_shown(wanted.get(k))} here" for k in differ
            )
            raise StudyError(
                f"{self.label}{_of(test)} was made for another search ({said}); run the same "
                "search, or give another study name"
            )
        names = metric_names(objective)
        if study.metric_names is None:
            study.set_metric_names(names)
        elif study.metric_names != names:
            raise StudyError(
                f"{self.label} records {', '.join(study.metric_names)}; objective "
                f"{objective.name} records {', '.join(names)}: give another study name"
            )
        self._own[test] = {"strategy": strategy, "seed": seed}

    def _check_format(self, study: optuna.Study) -> None:
        """Refuse a study of another format (this version cannot add to it); record the
        format in a new one."""
        attrs = study.user_attrs
        written = attrs.get(FORMAT_KEY)
        if written is None and any(k.startswith("config:") for k in attrs):
            written = 1
        if written is None:
            study.set_user_attr(FORMAT_KEY, STUDY_FORMAT)
        elif written != STUDY_FORMAT:
            from pytest_edgeenergy._version import __version__

            raise StudyError(
                f"{self.label} has study format {written}; this pytest-edgeenergy "
                f"({__version__}) adds to format {STUDY_FORMAT} only (--show reads "
                f"{'both' if written == 1 else 'format 1 and 2'}): give another study name"
            )

    # -- reading -----------------------------------------------------------------------

    def fail_stale(self, study: optuna.Study) -> None:
        """Fail trials whose process stopped beating (found by Optuna's heartbeat for RDB,
        by the lease here for a journal), their reason in the user attr ``lost``."""
        import optuna
        from optuna.storages import RDBStorage

        self._adopt_heartbeat(study)
        if isinstance(self._storage, RDBStorage):
            stale = self._storage._get_stale_trial_ids(study._study_id)
        else:
            now = time.time()
            stale = [
                t._trial_id
                for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
                if isinstance(alive := t.user_attrs.get("alive_at"), (int, float))
                and now - alive > self.grace_s
            ]
        why = (
            f"no heartbeat for {self.grace_s} s (its process stopped): the point went back to "
            "the pool"
        )
        for trial_id in stale:
            try:
                self._storage.set_trial_user_attr(trial_id, "lost", why)
                self._storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:
                pass  # its process finished it meanwhile, or another failed it

    def view(self, test: str, objective: Objective) -> StudyView:
        """Every trial of search ``test``, stale ones failed first."""
        study = self._study(objective)
        self.fail_stale(study)
        return StudyView(tuple(t for t in read_trials(study) if t.test == test))

    # -- claiming and finishing --------------------------------------------------------

    def claim(self, test: str, search: Search, total: int) -> Claim | None:
        """Claim the next point of search ``test`` (``search``: its space, objective and
        strategy), or None when the study holds ``total`` done trials or the strategy has
        nothing left; waits while other processes run the remainder."""
        objective = search.objective
        withdrawals = 0
        while True:
            view = self.view(test, objective)
            running = view.counted - view.done
            if view.done >= total:
                return None
            knobs = None
            if view.counted < total:
                knobs = (
                    view.retry()
                    or Search(search.space, objective, search.strategy, view.history()).propose()
                )
            if knobs is None:
                if running == 0:
                    return None
                # The remainder runs elsewhere: wait, a lost trial's point comes back.
                time.sleep(min(1.0, max(0.2, self.heartbeat_s / 4)))
                continue
            claim = self._create(test, search.space, knobs, objective)
            why = self._conflict(test, search.space, claim, objective, total)
            if why is None:
                return claim
            self._withdraw(claim, why)
            withdrawals += 1
            if withdrawals >= _MAX_WITHDRAWALS:
                raise StudyError(
                    f"{self.label}{_of(test)}: {withdrawals} claims withdrawn in a row; the "
                    f"strategy {search.strategy.name!r} keeps proposing points other "
                    "processes hold"
                )
            # Processes proposing from the same history collide: step aside a random moment.
            time.sleep(random.uniform(0.0, 0.05 * min(withdrawals, 10)))

    def _create(self, test: str, space: Space, knobs: Knobs, objective: Objective) -> Claim:
        import optuna
        from optuna.distributions import CategoricalDistribution

        study = self._study(objective)
        own = self._own.get(test, {})
        template = optuna.trial.create_trial(
            state=optuna.trial.TrialState.RUNNING,
            params=dict(knobs),
            distributions={d.name: CategoricalDistribution(d.values) for d in space.dims},
            user_attrs={"test": test, "worker": self.worker, "alive_at": time.time(), **own},
        )
        trial_id = self._storage.create_new_trial(study._study_id, template_trial=template)
        claim = Claim(trial_id, self._storage.get_trial(trial_id).number, dict(knobs))
        self._beat(claim)  # at once: Optuna never fails a trial that never beat
        thread = threading.Thread(target=self._beating, args=(claim,), daemon=True)
        thread.start()
        return claim

    def _beat(self, claim: Claim) -> None:
        from optuna.storages._heartbeat import BaseHeartbeat

        if self.kind == "rdb":
            assert isinstance(self._storage, BaseHeartbeat)
            self._storage.record_heartbeat(claim.trial_id)
        else:
            self._storage.set_trial_user_attr(claim.trial_id, "alive_at", time.time())

    def _beating(self, claim: Claim) -> None:
        import optuna

        while not claim._stop.wait(self.heartbeat_s):
            try:
                self._beat(claim)
            except optuna.exceptions.UpdateFinishedTrialError:
                return
            except Exception:  # a storage hiccup: the next beat tries again
                continue

    def _conflict(
        self, test: str, space: Space, claim: Claim, objective: Objective, total: int
    ) -> str | None:
        """Why ``claim`` must not stand: an earlier trial holds its point, or the total is
        reached by earlier trials; None when it stands."""
        point = space.point(claim.knobs)
        earlier = [
            t
            for t in self.view(test, objective).trials
            if t.counted and t.trial_id < claim.trial_id
        ]
        holder = next((t for t in earlier if _point(space, t) == point), None)
        if holder is not None:
            return f"trial {holder.number} of {holder.worker} holds the point"
        if len(earlier) >= total:
            return f"the study holds its {total} trials"
        return None

    def withdraw(self, claim: Claim, why: str) -> None:
        """Give ``claim`` up without a result (not counted; its point goes back)."""
        self._withdraw(claim, why)

    def _withdraw(self, claim: Claim, why: str) -> None:
        import optuna

        claim._stop.set()
        try:
            self._storage.set_trial_user_attr(claim.trial_id, "withdrawn", why)
            self._storage.set_trial_state_values(claim.trial_id, optuna.trial.TrialState.PRUNED)
        except optuna.exceptions.UpdateFinishedTrialError:
            pass

    def finish(
        self, test: str, space: Space, claim: Claim, trial: Trial, objective: Objective, total: int
    ) -> str | None:
        """Record ``trial`` as the claim's outcome; the reason when the study does not
        count it (withdrawn as a late duplicate, or already failed by the heartbeat)."""
        import optuna

        claim._stop.set()
        why = self._conflict(test, space, claim, objective, total)
        if why is not None:
            self._withdraw(claim, why)
            return f"withdrawn: {why}"
        state = optuna.trial.TrialState
        try:
            if trial.ok:
                time_s, power_w = trial.measured
                self._storage.set_trial_user_attr(claim.trial_id, "time_s", time_s)
                self._storage.set_trial_user_attr(claim.trial_id, "power_w", power_w)
                if trial.infeasible is not None:
                    self._storage.set_trial_user_attr(
                        claim.trial_id, "infeasible", trial.infeasible
                    )
                if trial.metrics:
                    self._storage.set_trial_user_attr(
                        claim.trial_id, "metrics", dict(trial.metrics)
                    )
                self._storage.set_trial_system_attr(
                    claim.trial_id, CONSTRAINTS_KEY, constraints(objective, trial)
                )
                self._storage.set_trial_state_values(
                    claim.trial_id, state.COMPLETE, _values(objective, trial)
                )
            else:
                self._storage.set_trial_user_attr(claim.trial_id, "failed", trial.failed)
                self._storage.set_trial_state_values(claim.trial_id, state.FAIL)
        except optuna.exceptions.UpdateFinishedTrialError:
            return (
                f"the study had failed it: no heartbeat for {self.grace_s} s (its measurement "
                "is in this report only)"
            )
        return None


def read_trials(study: optuna.Study) -> list[StudyTrial]:
    """Every trial of ``study`` as :class:`StudyTrial`, by trial id."""
    import optuna

    state = optuna.trial.TrialState
    out = []
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t._trial_id):
        attrs = t.user_attrs
        knobs: Knobs = dict(t.params)
        status: Status
        reason: str | None = None
        trial = Trial(knobs=knobs, failed="not measured")
        if "withdrawn" in attrs:
            status, reason = "withdrawn", str(attrs["withdrawn"])
        elif t.state == state.COMPLETE and "time_s" in attrs:
            status = "measured"
            trial = Trial.from_json(
                {
                    "knobs": knobs,
                    "time_s": float(attrs["time_s"]),
                    "power_w": float(attrs["power_w"]),
                    "infeasible": attrs.get("infeasible"),
                    "metrics": attrs.get("metrics") or {},
                }
            )
        elif t.state == state.FAIL and "failed" in attrs:
            status, reason = "failed", str(attrs["failed"])
            trial = Trial(knobs=knobs, failed=reason)
        elif t.state == state.RUNNING:
            status = "running"
        else:
            status = "lost"
            reason = str(
                attrs.get("lost")
                or "its process stopped (no heartbeat): the point went back to the pool"
            )
        seed = attrs.get("seed")
        out.append(
            StudyTrial(
                number=t.number,
                trial_id=t._trial_id,
                test=str(attrs.get("test", "")),
                worker=str(attrs.get("worker", "?")),
                status=status,
                trial=trial,
                reason=reason,
                strategy=str(attrs["strategy"]) if "strategy" in attrs else None,
                seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            )
        )
    return out


def _point(space: Space, t: StudyTrial) -> Point | None:
    try:
        return space.point(t.trial.knobs)
    except InvalidValue:
        return None


def _of(test: str) -> str:
    return f", search {test!r}," if test else ""


def _shown(value: object) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
