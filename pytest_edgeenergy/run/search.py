"""Operating-point searches on a live board: every search of one measuring session.

A searched test (a pytest test taking ``operating_point`` under ``--edge-search``) runs the
dvfs reference (nothing pinned) and then trials 0..N-1. When trial k starts, the strategy
proposes its point from every earlier result of the same search, the point is pinned
through the session's usual path (:meth:`.session.EnergySession.pin_for`: board safety,
read-back, verification, restore), and when it ends the record's measured windows become
the trial (:func:`measured_trial`). The report's ``search`` section holds every trial once;
a test's entry points at its trial (``extra.search = {"test": KEY, "trial": N}``: N indexes
that search's ``trials``, null for its dvfs ``reference``).

Typed errors, no pytest: :class:`~.errors.SearchSetupError` for a search that cannot run as
asked, :class:`~.errors.TrialSkipped` for a slot that runs nothing. The pytest adapter is
:mod:`pytest_edgeenergy.plugin.search`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..bench.scenarios import ALLOWED_MISS_FRACTION, Scenario
from ..errors import EdgeEnergyError
from ..search.driver import Search
from ..search.objective import THROUGHPUT, Objective, metrics_text
from ..search.space import Knobs, Space
from ..search.strategies import make_strategy
from ..search.trial import Trial
from .errors import PinRefused, PointError, SearchSetupError, TrialSkipped

if TYPE_CHECKING:
    from ..control.knobset import KnobSet
    from ..control.operating_point import OperatingPoint, Resolver
    from ..search.study import SharedStudy
    from .records import TestEnergy
    from .session import EnergySession

__all__ = [
    "KNOB_OF_FIELD",
    "SearchConfig",
    "SessionSearch",
    "TestSearch",
    "board_label",
    "deadline_verdict",
    "function_id",
    "interleave_trial",
    "measured_trial",
    "open_study",
    "read_prior",
    "saving",
    "search_values",
    "trial_of_entry",
]

KNOB_OF_FIELD = {
    "power_mode": "power_mode",
    "cpu_cores": "cpu_cores",
    "cpu_freq_hz": "cpu_freq_hz",
    "gpu_freq_hz": "gpu_freq_hz",
    "emc_freq_hz": "emc_freq_hz",
}
"""Operating-point fields a search varies (named as the search's knobs); ``governor`` can
only be held at one value."""

GridRequest = tuple[dict[str, list[str]], dict[str, str]]
"""The values asked for per dimension, and where each came from."""


class SearchConfig(Protocol):
    """What a search is asked to do (the plugin's ``SearchSettings`` is one)."""

    @property
    def strategy(self) -> str: ...
    @property
    def objective(self) -> str: ...
    @property
    def trials(self) -> int: ...
    @property
    def power_budget_w(self) -> float | None: ...
    @property
    def latency_budget_s(self) -> float | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def resume(self) -> Path | None: ...
    @property
    def prior(self) -> Path | None: ...


@dataclass
class TestSearch:
    """The search of one test (one function and its other parameters)."""

    key: str
    search: Search
    fixed: dict[str, Any]
    """Operating-point fields every trial pins alike (e.g. a single governor)."""
    resumed: int = 0
    """Trials taken over from the resumed report."""
    reference: Trial | None = None
    reference_resumed: bool = False
    batch_size: int | None = None
    """The batch size of the slot running now (batch size searched: the proposal's, the
    first listed for the dvfs reference)."""
    reference_batch_size: int | None = None
    claim: Any = None
    """The shared study's claim of the running trial (``--edge-search-storage``)."""
    study_trials: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Per position in ``search.trials``: its number in the shared study, the worker."""


def function_id(record_id: str) -> str:
    """The test function of a node id (``file.py::Class::test_f[params]`` without params)."""
    return record_id.partition("[")[0]


def slot_id(index: int | None) -> str:
    """``dvfs`` for the reference, ``trialK`` for trial K."""
    return "dvfs" if index is None else f"trial{index}"


class SessionSearch:
    """Every search of one session; see the module docstring."""

    def __init__(
        self, settings: SearchConfig, *, force: bool = False, scenario: Scenario | None = None
    ) -> None:
        """``scenario`` with a deadline: the latency budget (given, else the scenario's
        deadline) bounds each query's latency, not the time per item, and a trial missing
        it (:func:`deadline_verdict`) is infeasible. A resumed report that cannot serve is
        a :class:`SearchSetupError`."""
        self.settings = settings
        self.force = force
        self.scenario = scenario if scenario is not None and not scenario.offline else None
        self.deadline_s: float | None = None
        latency_budget_s = settings.latency_budget_s
        if self.scenario is not None:
            self.deadline_s = latency_budget_s or self.scenario.deadline_s
            latency_budget_s = None
        self.objective = Objective(settings.objective, settings.power_budget_w, latency_budget_s)
        self._spaces: dict[
            tuple[tuple[tuple[str, str], ...], tuple[int, ...]], tuple[Space, dict[str, Any]]
        ] = {}
        self._batch_sizes_of: dict[str, tuple[int, ...]] = {}
        self._space_of: dict[str, tuple[Space, dict[str, Any]]] = {}
        self._prior_of: dict[str, tuple[Trial, ...]] = {}
        self.searches: dict[str, TestSearch] = {}
        self.notes: list[str] = []
        """How search mode read the grid options (``all`` where the grid means one value)."""
        self._resumed: dict[str, Mapping[str, Any]] = (
            self._read_resume() if settings.resume is not None else {}
        )
        self.study = open_study(settings)
        """The study shared with other boards (``--edge-search-storage``), else None."""

    # -- set-up ------------------------------------------------------------------------

    def _read_resume(self) -> dict[str, Mapping[str, Any]]:
        from ..report.load import load_report

        path = self.settings.resume
        assert path is not None
        report = load_report(path)
        entries = report.get("search") or []
        if not entries:
            raise SearchSetupError(
                f"--edge-search-resume {path}: the report holds no search (it was not made "
                "with --edge-search)"
            )
        wanted = self._config_json()
        out: dict[str, Mapping[str, Any]] = {}
        for entry in entries:
            theirs = {k: entry.get(k) for k in wanted}
            if theirs != wanted:
                raise SearchSetupError(
                    f"--edge-search-resume {path}: {entry['test']} was searched with "
                    f"{_config_text(theirs)}, this run asks {_config_text(wanted)}; resume "
                    "with the same options"
                )
            out[entry["test"]] = entry
        return out

    def _config_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "strategy": s.strategy,
            "objective": s.objective,
            "power_budget_w": s.power_budget_w,
            "latency_budget_s": self.objective.latency_budget_s,
            "seed": s.seed,
            "scenario": self.scenario.name if self.scenario is not None else None,
            "deadline_s": self.deadline_s,
        }

    def prepare(
        self,
        function: str,
        request: GridRequest,
        knobs: KnobSet,
        batch_sizes: Sequence[int] = (),
    ) -> None:
        """Build and check the search space of one test function (``""``: the session's
        options, checked at its start) from its grid request and, when it takes
        ``batch_size`` and several are given, its batch sizes (:class:`SearchSetupError`
        when it has nothing to search or the strategy cannot serve it)."""
        key = tuple(sorted((k, v[0]) for k, v in request[0].items()))
        sizes = tuple(batch_sizes) if len(batch_sizes) > 1 else ()
        cached = self._spaces.get((key, sizes))
        if cached is None:
            cached = self._spaces[(key, sizes)] = self._build_space(request, knobs, sizes)
        self._space_of[function] = cached
        if sizes:
            self._batch_sizes_of[function] = sizes
        if self.settings.prior is not None:  # "" (session start): the whole file, checked early
            prior = self._prior_of[function] = read_prior(self.settings.prior, function)
            if not function and sizes:
                return  # whether a test searches batch sizes is known at collection
            try:
                make_strategy(
                    self.settings.strategy,
                    cached[0],
                    self.objective,
                    seed=self.settings.seed,
                    prior=prior,
                )
            except EdgeEnergyError as e:
                raise SearchSetupError(f"--edge-prior {self.settings.prior}: {e}") from None

    def _build_space(
        self, request: GridRequest, knobs: KnobSet, batch_sizes: tuple[int, ...]
    ) -> tuple[Space, dict[str, Any]]:
        from ..control.grid import expand

        values, sources = request
        if not values and not batch_sizes:
            raise SearchSetupError(
                "--edge-search has nothing to search: give grid options with several values "
                "or all, e.g. --gpu-freq=all --cpu-freq=min,max"
            )
        values, notes = search_values(values, sources, knobs, force=self.force)
        for note in notes:
            if note not in self.notes:
                self.notes.append(note)
        try:
            points = expand(values, knobs, sources=sources, force=self.force)
        except (EdgeEnergyError, OSError, ValueError) as e:
            raise PointError(str(e)) from None
        by_field: dict[str, list[Any]] = {}
        for point in points:
            for name in (*KNOB_OF_FIELD, "governor"):
                seen = by_field.setdefault(name, [])
                value = getattr(point, name)
                if value not in seen:
                    seen.append(value)
        fixed: dict[str, Any] = {}
        dims: dict[str, list[Any]] = {}
        for name, seen in by_field.items():
            if seen == [None]:
                continue
            if None in seen:
                raise SearchSetupError(
                    f"--edge-search: {_option_of(name, sources)} mixes dvfs with values; the "
                    "dvfs reference is profiled anyway, leave dvfs out of a searched dimension"
                )
            if name == "governor":
                if len(seen) > 1:
                    raise SearchSetupError(
                        f"--edge-search: {_option_of(name, sources)} lists "
                        f"{', '.join(map(str, seen))}; a governor is not searched, give one"
                    )
                fixed[name] = seen[0]
                continue
            dims[KNOB_OF_FIELD[name]] = seen
        if batch_sizes:
            dims["batch_size"] = list(batch_sizes)
        if not any(len(v) > 1 for v in dims.values()):
            given = ", ".join(f"{_option_of(k, sources)} {values[k][0]}" for k in values)
            raise SearchSetupError(
                f"--edge-search: {given} make a single point, nothing to search; give a "
                "dimension several values or all (e.g. --gpu-freq=all)"
            )
        space = Space.from_values(dims)
        try:
            make_strategy(self.settings.strategy, space, self.objective, seed=self.settings.seed)
        except EdgeEnergyError as e:
            raise SearchSetupError(f"--edge-search={self.settings.strategy}: {e}") from None
        return space, fixed

    def check_idle(self, idle_w: float | None) -> None:
        """A power budget under the board's idle power cannot be met by any point."""
        budget = self.objective.power_budget_w
        if budget is not None and idle_w is not None and budget <= idle_w:
            raise SearchSetupError(
                f"--edge-power-budget-w {budget:g}: the board draws {idle_w:.3g} W idle, so "
                "no operating point can meet it; allowed: a budget above the idle power"
            )

    # -- trials ------------------------------------------------------------------------

    def search_of(self, key: str, function: str) -> TestSearch:
        """The search ``key`` (a test and its parameters but the point) of test function
        ``function``, made at its first trial (taking over a resumed report's history)."""
        found = self.searches.get(key)
        if found is not None:
            return found
        space, fixed = self._space_of[function]
        resumed = self._resumed.get(key)
        history = [Trial.from_json(t) for t in resumed["trials"]] if resumed else []
        strategy = make_strategy(
            self.settings.strategy,
            space,
            self.objective,
            seed=self.settings.seed,
            prior=self._prior_of.get(function, ()),
            trials=self.settings.trials,
        )
        ts = TestSearch(key, Search(space, self.objective, strategy, history), fixed)
        ts.resumed = len(history)
        if self.study is not None:
            scenario = self.scenario
            self.study.join(
                key,
                space,
                self.objective,
                strategy=self.settings.strategy,
                seed=self.settings.seed,
                inputs=(
                    {"scenario": scenario.name, "deadline_s": self.deadline_s}
                    if scenario is not None
                    else None
                ),
            )
        if resumed and resumed.get("reference"):
            ref = resumed["reference"]
            ts.reference = Trial.from_json({"knobs": {}, **ref})
            ts.reference_resumed = True
            size = ref.get("batch_size")
            ts.reference_batch_size = size if isinstance(size, int) else None
        self.searches[key] = ts
        return ts

    @contextmanager
    def trial(
        self,
        session: EnergySession,
        record_id: str,
        key: str,
        index: int | None,
        *,
        bench_results: Callable[[], Sequence[Any]] = tuple,
        bench_notes: Callable[[], Mapping[str, Any]] = dict,
    ) -> Iterator[OperatingPoint]:
        """Propose and pin trial ``index`` (None: the dvfs reference) of search ``key`` for
        record ``record_id``; when the body ends, the record becomes the trial (its
        ``bench_results()``, else its windows; ``bench_notes()``: what its ``edge_bench``
        noted for the report's ``extra``, where an interleaved test's figures are).
        :class:`TrialSkipped` before anything runs when the slot was resumed, the strategy
        has nothing left, or the board refused the point (then recorded as a failed trial)."""
        from ..control.operating_point import DVFS, OperatingPoint

        function = function_id(record_id)
        ts = self.search_of(key, function)
        source = self.settings.resume
        slot = slot_id(index)
        if index is None:
            if ts.reference_resumed:
                raise TrialSkipped(f"dvfs reference taken over from {source}")
            knobs: Knobs = {}
            point = DVFS
            sizes = self._batch_sizes_of.get(function)
            ts.batch_size = ts.reference_batch_size = sizes[0] if sizes else None
        else:
            if index < ts.resumed:
                raise TrialSkipped(f"{slot} taken over from {source}")
            proposed = self._propose(session, ts, slot)
            if proposed is None:
                raise TrialSkipped(
                    f"{slot}: strategy {ts.search.strategy.name} has nothing left to try "
                    f"(space of {ts.search.space.size()} points)"
                )
            knobs = proposed
            size = knobs.get("batch_size")
            ts.batch_size = size if isinstance(size, int) else None
            fields: dict[str, Any] = {f: knobs[k] for f, k in KNOB_OF_FIELD.items() if k in knobs}
            point = OperatingPoint(**fields, **ts.fixed)
        rec = session.record(record_id)
        with ExitStack() as stack:
            try:
                pinned = stack.enter_context(session.pin_for(record_id, point))
            except PinRefused as e:
                # A point the board refuses is a failed trial, not the end of the search.
                why = f"operating point {point.id} could not be pinned: {e.reason}"
                self._finish(session, ts, index, knobs, rec, (), failed=why)
                raise TrialSkipped(f"{slot}: {why} (recorded as a failed trial)") from None
            except BaseException:
                self._drop_claim(ts, "the trial could not start")
                raise
            try:
                yield pinned
            except BaseException:
                self._drop_claim(ts, "the test was interrupted")
                raise
        for key, value in bench_notes().items():  # edge_bench merges them only at teardown
            rec.extra.setdefault(key, value)
        self._finish(session, ts, index, knobs, rec, bench_results(), failed=None)

    def _propose(self, session: EnergySession, ts: TestSearch, slot: str) -> Knobs | None:
        """The next point of ``ts``: its own strategy's, or claimed in the shared study
        (:class:`TrialSkipped` once the study holds its trials)."""
        if self.study is None:
            return ts.search.propose()
        if self.study.worker_board is None:
            self.study.set_board(board_label(session))
        claim = self.study.claim(ts.key, ts.search, self.settings.trials)
        if claim is None:
            raise TrialSkipped(
                f"{slot}: {self.study.label} holds its {self.settings.trials} trials "
                "(every board's together)"
            )
        ts.claim = claim
        return dict(claim.knobs)

    def _drop_claim(self, ts: TestSearch, why: str) -> None:
        if self.study is not None and ts.claim is not None:
            self.study.withdraw(ts.claim, why)
            ts.claim = None

    def batch_size(self, key: str, function: str) -> int | None:
        """The batch size the running slot of search ``key`` uses (None: not searched)."""
        return self.search_of(key, function).batch_size

    def _finish(
        self,
        session: EnergySession,
        ts: TestSearch,
        index: int | None,
        knobs: Knobs,
        rec: TestEnergy,
        benches: Sequence[Any],
        *,
        failed: str | None,
    ) -> None:
        trial = (
            Trial(knobs=dict(knobs), failed=failed)
            if failed is not None
            else measured_trial(
                knobs, rec, benches, deadline_s=self.deadline_s, objective=self.objective
            )
        )
        position: int | None = None
        if index is None:
            ts.reference = trial
        else:
            ts.search.record(trial)
            position = len(ts.search.trials) - 1
            if self.study is not None and ts.claim is not None:
                claim, ts.claim = ts.claim, None
                why = self.study.finish(
                    ts.key, ts.search.space, claim, trial, self.objective, self.settings.trials
                )
                ts.study_trials[position] = {
                    "study_trial": claim.number,
                    "worker": self.study.worker,
                    **({"not_counted": why} if why else {}),
                }
        # The trial is written once, in the report's search section; the entry points at it.
        rec.extra["search"] = {"test": ts.key, "trial": position}
        session.update_report(search=self.report_section())

    # -- results -----------------------------------------------------------------------

    def describe(self) -> str:
        """The objective and budgets, with the scenario's deadline per query."""
        text = self.objective.describe()
        if self.scenario is not None:
            text += f", scenario {self.scenario.name}"
            if self.deadline_s is not None:
                text += f" with every query's latency <= {self.deadline_s:g} s (p99)"
        return text

    def report_section(self) -> list[dict[str, Any]]:
        """The report's ``search`` section: one entry per searched test, every trial once
        (with the objective's value of each measured one)."""
        out = []
        for ts in self.searches.values():
            result = ts.search.result()
            entry: dict[str, Any] = {"test": ts.key, **result.to_json()}
            for trial, data in zip(result.trials, entry["trials"], strict=True):
                if trial.ok and not self.objective.missing(trial.metrics):
                    data["value"] = self.objective.value(*trial.measured, trial.metrics)
            for position, shared in ts.study_trials.items():
                entry["trials"][position].update(shared)
            reference = _trial_json(ts.reference)
            if reference is not None and ts.reference_batch_size is not None:
                reference["batch_size"] = ts.reference_batch_size
            entry.update(
                seed=self.settings.seed,
                trials_asked=self.settings.trials,
                resumed=ts.resumed,
                reference=reference,
                saving=saving(result.best, ts.reference),
                space={d.name: list(d.values) for d in ts.search.space.dims},
                notes=list(self.notes),
                prior=self._prior_json(ts.key),
            )
            if self.scenario is not None:
                entry.update(scenario=self.scenario.name, deadline_s=self.deadline_s)
            if self.study is not None:
                entry["study"] = {
                    "name": self.study.name,
                    "storage": self.study.url,
                    "worker": self.study.worker,
                }
            out.append(entry)
        return out

    def _prior_json(self, key: str) -> dict[str, Any] | None:
        prior = self._prior_of.get(function_id(key))
        if self.settings.prior is None or prior is None:
            return None
        return {"path": str(self.settings.prior), "profiles": sum(t.ok for t in prior)}

    def summary_lines(self) -> list[str]:
        """The terminal summary: each search's trials, best point, saving, front."""
        lines: list[str] = [f"note: {n}" for n in self.notes] if self.searches else []
        for ts in self.searches.values():
            result = ts.search.result()
            lines.append(
                f"{ts.key}: strategy {result.strategy}, objective "
                f"{self.describe()}, {result.profiles} points profiled"
                + (f" ({ts.resumed} resumed)" if ts.resumed else "")
            )
            if self.study is not None:
                lines.append(
                    f"  shared {self.study.label} as {self.study.worker} (this board's trials)"
                )
                lines.append(
                    f"  the whole study: edgeenergy search --storage {self.study.url} --study "
                    f"{self.study.name} --show"
                )
            prior = self._prior_json(ts.key)
            if prior is not None:
                lines.append(f"  prior: {prior['profiles']} profiles of {prior['path']}")
            if ts.reference is not None:
                lines.append(f"  {'dvfs':8} {'(reference)':48} {_figures(ts.reference)}")
            for i, t in enumerate(result.trials):
                lines.append(f"  {'trial' + str(i):8} {_knobs_text(t.knobs):48} {_figures(t)}")
            best = result.best
            if best is None and not result.trials and self.study is not None:
                lines.append("  best: this board profiled no point (the study's: --show above)")
            elif best is None:
                lines.append("  best: no profiled point met the objective's budgets")
            else:
                lines.append(f"  best: {_knobs_text(best.knobs)}: {_figures(best)}")
                s = saving(best, ts.reference)
                if s is not None:
                    lines.append(
                        f"  against dvfs: energy {s['energy_pct']:+.1f}%, time "
                        f"{s['time_pct']:+.1f}% (negative: less)"
                    )
            if self.objective.multi:
                lines.append("  pareto front (time vs energy):")
                lines += [f"    {_knobs_text(t.knobs)}: {_figures(t)}" for t in result.front]
        return lines


def open_study(settings: SearchConfig) -> SharedStudy | None:
    """The shared study ``settings`` name (``storage`` and ``study``), else None; a
    :class:`SearchSetupError` for one that cannot be opened or used with a resumed report."""
    storage: str | None = getattr(settings, "storage", None)
    name: str | None = getattr(settings, "study", None)
    if storage is None and name is None:
        return None
    if storage is None or name is None:
        given = "--edge-search-storage" if name is None else "--edge-study"
        raise SearchSetupError(
            f"{given} needs "
            f"{'--edge-study=NAME' if name is None else '--edge-search-storage=URL'} too"
        )
    if settings.resume is not None:
        raise SearchSetupError(
            "--edge-search-resume and --edge-search-storage: a shared study resumes itself "
            "(run the same command again); give one of them"
        )
    from ..search.study import DEFAULT_HEARTBEAT_S, SharedStudy

    heartbeat_s = getattr(settings, "study_heartbeat_s", None) or DEFAULT_HEARTBEAT_S
    try:
        return SharedStudy(storage, name, heartbeat_s=heartbeat_s)
    except EdgeEnergyError as e:
        raise SearchSetupError(f"--edge-search-storage: {e}") from None


def board_label(session: EnergySession) -> str | None:
    """The board in a worker's name: ``sim:MODEL``, else its module or model."""
    board = session.board
    if board is None:
        return None
    identity = board.identity
    if identity.sim_model:
        return f"sim:{identity.sim_model}"
    return identity.module or identity.model


def trial_of_entry(report: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The trial a report's test entry ran, as the report's ``search`` section holds it
    (with ``trial``: its position, None for the dvfs reference); None when the entry is no
    trial. Reads both shapes: ``extra.search = {"test", "trial"}`` pointing into the section,
    and the full copy reports made before (which it returns as it is)."""
    ref = (entry.get("extra") or {}).get("search")
    if not isinstance(ref, Mapping):
        return None
    if "knobs" in ref:  # a report of an earlier version: the trial copied into the entry
        return dict(ref)
    search = next((s for s in report.get("search") or [] if s.get("test") == ref.get("test")), None)
    if search is None:
        return None
    index = ref.get("trial")
    if index is None:
        reference = search.get("reference")
        return {**reference, "knobs": {}, "trial": None} if reference is not None else None
    trials = search.get("trials") or []
    if not isinstance(index, int) or not 0 <= index < len(trials):
        return None
    return {**trials[index], "trial": index}


def read_prior(path: Path, function: str) -> tuple[Trial, ...]:
    """The profiles ``--edge-prior`` seeds a test's auto search with. From a report: the
    trials of the same test's search, else the same test's pinned runs, else every search's
    trials (another workload's), else every pinned run; a CSV table whole. A file that
    cannot serve is a :class:`SearchSetupError` naming it."""
    from ..report.load import load_report
    from ..search.replay import ReplayError, read_replay, report_rows, table_from_rows

    def trials_of(entries: Sequence[Mapping[str, Any]]) -> tuple[Trial, ...]:
        trials = tuple(Trial.from_json(t) for e in entries for t in e.get("trials") or [])
        return trials if any(t.ok for t in trials) else ()

    try:
        if path.suffix.lower() != ".json":
            return read_replay(path).trials
        report = load_report(path)
        entries = report.get("search") or []
        mine = trials_of([e for e in entries if function_id(str(e.get("test"))) == function])
        if mine:
            return mine
        same = [r for r in report_rows(report) if r["test"] == function]
        if same:
            return table_from_rows(same, str(path)).trials
        every = trials_of(entries)
        if every:
            return every
        if report_rows(report):
            return read_replay(path).trials
        raise ReplayError(path, "has no profiled point (no pinned test, no search trial)")
    except (EdgeEnergyError, OSError, ValueError, KeyError, TypeError) as e:
        text = str(e) if str(path) in str(e) else f"{path}: {e}"
        raise SearchSetupError(f"--edge-prior {text}") from None


def search_values(
    values: Mapping[str, list[str]], sources: Mapping[str, str], knobs: KnobSet, *, force: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """The grid options as a search reads them, and a note for each change.

    ``--cpu-cores=all`` spans every core count the board can hold online (1..N), not only
    N as in a grid; ``--emc-freq=all`` on an EMC without a table of rates (the bpmp
    interface: only its min and max) spans ``min,max``. Everything else is the grid's.
    """
    from ..control.errors import ControlError, NotOffered
    from ..control.operating_point import Resolver
    from ..control.values import format_freq

    resolver = Resolver(knobs, force=force, sources=sources)
    out = {k: list(v) for k, v in values.items()}
    notes: list[str] = []

    def replace_all(key: str, by: list[str]) -> None:
        out[key] = [
            ",".join(
                ",".join(by) if item.strip().lower() == "all" else item.strip()
                for item in text.split(",")
            )
            for text in out[key]
        ]

    if any(_says_all(t) for t in out.get("cpu_cores", [])):
        try:
            (total,) = resolver.cores("all")
        except (ControlError, OSError, ValueError) as e:
            raise PointError(str(e)) from None
        counts = [str(k) for k in range(1, int(total or 0) + 1) if _holds(resolver, k)]
        replace_all("cpu_cores", counts)
        notes.append(
            f"{resolver.source('cpu_cores')} all: searched as {len(counts)} core counts "
            f"({', '.join(counts)} online)"
        )
    if any(_says_all(t) for t in out.get("emc_freq", [])):
        try:
            resolver.emc_freqs("all")
        except NotOffered:
            try:
                lo, hi = resolver.emc_freqs("min,max")
            except (ControlError, OSError, ValueError) as e:
                raise PointError(str(e)) from None
            assert lo is not None and hi is not None
            replace_all("emc_freq", ["min", "max"])
            notes.append(
                f"{resolver.source('emc_freq')} all: the EMC exposes no table of rates, only "
                f"its range; searched as min,max ({format_freq(lo)}, {format_freq(hi)})"
            )
    return out, notes


def _says_all(text: str) -> bool:
    return any(item.strip().lower() == "all" for item in text.split(","))


def _holds(resolver: Resolver, count: int) -> bool:
    """Whether ``count`` cores can be held online (the others offline) on this board."""
    from ..control.errors import ControlError

    try:
        resolver.cores(str(count))
    except ControlError:
        return False
    return True


def measured_trial(
    knobs: Knobs,
    rec: TestEnergy,
    benches: Sequence[Any],
    *,
    deadline_s: float | None = None,
    objective: Objective | None = None,
) -> Trial:
    """The trial a finished record makes: per item over its ``edge_bench`` repeats (time and
    energy pooled: Σ duration / Σ items, Σ energy / Σ duration), else per window of work
    over its ``energy`` windows; a failed trial when the test did not pass or measured
    nothing valid. In a load scenario time per item is the schedule's (about 1 / rate), so
    energy per item includes the idle gaps; with ``deadline_s`` a trial whose queries miss
    it (:func:`deadline_verdict`) is marked infeasible. An ``objective`` that reads named
    metrics (max-train-throughput) takes them from the record's ``extra["interleave"]``
    (:func:`interleave_trial`)."""
    if rec.status not in ("passed", None):
        why = f"test {rec.status}" + (f": {rec.reason}" if rec.reason else "")
        return Trial(knobs=dict(knobs), failed=why)
    repeats = [r for b in benches for r in b.repeats]
    windows = [r.window for r in repeats] if repeats else list(rec.windows)
    if not windows:
        return Trial(knobs=dict(knobs), failed="the test measured nothing (no energy window)")
    bad = next((w for w in windows if not w.valid), None)
    if bad is not None:
        return Trial(knobs=dict(knobs), failed=f"measurement invalid: {bad.invalid_reason}")
    duration_s = sum(w.duration_s for w in windows)
    energies = [w.total.energy_j for w in windows]
    items = sum(r.items for r in repeats) if repeats else 1
    energy_j = sum(e for e in energies if e is not None)
    if duration_s <= 0 or None in energies or energy_j <= 0 or items <= 0:
        return Trial(knobs=dict(knobs), failed="measurement invalid: no time or energy")
    if objective is not None and objective.needs:
        return interleave_trial(knobs, rec.extra, objective, duration_s, energy_j / duration_s)
    return Trial(
        knobs=dict(knobs),
        time_s=duration_s / items,
        power_w=energy_j / duration_s,
        infeasible=deadline_verdict(repeats, deadline_s),
    )


def interleave_trial(
    knobs: Knobs,
    extra: Mapping[str, Any],
    objective: Objective,
    duration_s: float,
    power_w: float,
) -> Trial:
    """The trial of an interleaved training + inference test under ``objective``
    (max-train-throughput): its metrics from ``extra["interleave"]`` (the workload's
    ``train_minibatches_per_s``, ``latency_p99_s``, ``power_w``), time per training
    minibatch (the window's ``duration_s`` when none finished). A test without them is a
    failed trial naming the objective and the field."""
    figures = extra.get("interleave")
    if not isinstance(figures, Mapping):
        return Trial(
            knobs=dict(knobs),
            failed=f"objective {objective.name} needs an interleaved test (its report "
            'entry\'s extra["interleave"]); this test has none',
        )
    metrics = {n: figures.get(n) for n in objective.needs}
    missing = objective.missing(metrics)  # type: ignore[arg-type]
    if missing:
        return Trial(
            knobs=dict(knobs),
            failed=f"objective {objective.name} needs extra[\"interleave\"][\"{missing[0]}\"] "
            "(a number >= 0); the test did not record it",
        )
    window_w = figures.get("power_w")
    if isinstance(window_w, (int, float)) and not isinstance(window_w, bool) and window_w > 0:
        power_w = float(window_w)
    throughput = float(metrics[THROUGHPUT])  # type: ignore[arg-type]
    return Trial(
        knobs=dict(knobs),
        time_s=1.0 / throughput if throughput > 0 else duration_s,
        power_w=power_w,
        metrics={k: float(v) for k, v in metrics.items()},  # type: ignore[arg-type]
        infeasible=None if throughput > 0 else "no training minibatch finished in the window",
    )


def deadline_verdict(repeats: Sequence[Any], deadline_s: float | None) -> str | None:
    """Why scheduled repeats miss ``deadline_s`` (more than
    :data:`~..bench.scenarios.ALLOWED_MISS_FRACTION` of their queries over it), else None."""
    scheduled = [r for r in repeats if r.schedule is not None]
    if deadline_s is None or not scheduled:
        return None
    latencies = [x for r in scheduled for x in r.latencies_s]
    if not latencies:
        return None
    misses = sum(1 for x in latencies if x > deadline_s)
    if misses <= ALLOWED_MISS_FRACTION * len(latencies):
        return None
    return (
        f"{misses} of {len(latencies)} queries over the {deadline_s:g} s deadline "
        f"(allowed: {ALLOWED_MISS_FRACTION:.0%})"
    )


def saving(best: Trial | None, reference: Trial | None) -> dict[str, float] | None:
    """How the best point compares with the dvfs reference, in percent (negative: less)."""
    if best is None or reference is None or not reference.ok:
        return None
    assert best.energy_j is not None and best.time_s is not None
    assert reference.energy_j is not None and reference.time_s is not None
    return {
        "energy_pct": 100.0 * (best.energy_j / reference.energy_j - 1.0),
        "time_pct": 100.0 * (best.time_s / reference.time_s - 1.0),
    }


def _trial_json(trial: Trial | None) -> dict[str, Any] | None:
    if trial is None:
        return None
    out = trial.to_json()
    out.pop("knobs")
    return out


def _figures(t: Trial) -> str:
    if not t.ok:
        return f"failed: {t.failed}"
    text = f"{t.time_s:.4g} s  {t.power_w:.4g} W  {t.energy_j:.4g} J"
    text += metrics_text(t.metrics)
    return text + (f"  infeasible: {t.infeasible}" if t.infeasible is not None else "")


def _knobs_text(knobs: Mapping[str, object]) -> str:
    from ..search.trial import knobs_text

    return knobs_text(knobs)


def _option_of(name: str, sources: Mapping[str, str]) -> str:
    dim = name.removesuffix("_hz")
    return sources.get(dim, "--" + dim.replace("_", "-"))


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in config.items() if v is not None)
