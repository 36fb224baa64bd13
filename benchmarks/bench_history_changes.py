"""Benchmark: ``edgeenergy history changes``' change points: detection, false alarms, time.

Synthetic histories of ``RUNS`` = 50 runs with 3 % run-to-run noise (relative standard
deviation), in two noise models:

* ``gaussian``: plain normal noise;
* ``loudva``: real measurement noise, resampled: the residuals of the LoudVA profiling
  table (``tests/shared/data/jetson_gpufreq_batch_profiling_loudva.csv``, energy per image
  on three Jetson boards) around their neighbours (each point's log energy per image minus
  the median of the two batch sizes either side at the same board and GPU frequency), scaled
  to a standard deviation of 3 %. They are heavy-tailed (kurtosis 26): most runs are
  within 1 %, a few are 10-20 % off, as a run disturbed by another process is.

For each model ``SERIES`` series with one +8 % step at a run drawn uniformly from
[min_size, RUNS - min_size] and ``SERIES`` stationary series. A detection is a reported
change within +-1 run of the step ("exact run": at the step's run); a false alarm, a
stationary series with any change. Rates are printed with their binomial standard error
(at 2,000 series: +-0.5 % around 95 %). Two locators told there is exactly
one change, on the log values, bound what placement can do: "MLE +-1", the split of
largest L2 gain; "Bayes +-1", the centre of the 3-run window of largest posterior mass
under flat priors on the split and both levels (the Bayes rule for "within +-1" when the
noise is normal; about 96 % for a step of 8 % in 3 % Gaussian noise, so a detector that
must also decide whether there is a change at all cannot do much better). The "misses"
lines split the misses into "nothing reported" and "reported elsewhere", and give the
detection of steps with 3 runs on one side. Targets (issue 22): detection >= 95 %, false
alarms <= 5 %.

Several changes (issue 31), ``SERIES`` series per case, each case its own seeded generator,
3 % noise (standard deviation) around the level:

* ``two steps``: a level that goes up 8 % at run 15 and comes back at run 35 (50 runs), in
  Gaussian noise; ``+ 2 outliers``: the same with two runs drawn at random 25 % high (a run
  disturbed by another process); ``student-t 3``: in Student-t noise with 3 degrees of
  freedom (heavy tails) scaled to the same standard deviation. "found +-1": a change
  reported within +-1 run of each true change; "exactly": and no other change.
* ``end step``: one +8 % step with 3 runs on one side (at run 3 or 47, alternately).
* ``stationary AR(1)``: no change, autocorrelated noise (phi = 0.5, the same marginal
  standard deviation); ``stationary t3``: no change, Student-t noise. A false alarm is any
  change.

"note" is the share of the series reporting a change whose changes say the runs look
autocorrelated. Targets (issue 31): both found >= 85 % (Gaussian) and >= 45 % (outliers),
single steps still >= 95 % within +-1 and stationary series <= 5 % false alarms.

Time: the per-series time at 50 runs, and ``history changes``' scale target (300 series
of 10,000 runs <= 30 s) measured directly: 300 series of 10,000 runs of real noise, every
third with four steps, one process, detection only (reading the database is not counted).

``--command``: the whole ``edgeenergy history changes`` command (read every series, find
the changes, print) on a SQLite history of 10,000 runs x 300 results (3 M rows, stationary
3 % noise, built as ``bench_history_add.py`` builds its history; building is not timed),
best of ``--repeats`` runs.

Run ``python benchmarks/bench_history_changes.py`` (``--series N``, ``--skip-scale``,
``--command``) or ``pytest benchmarks/bench_history_changes.py --benchmark-only -s``.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_edgeenergy.history.changes import find_changes

DATA = Path(__file__).resolve().parent.parent / "tests" / "shared" / "data"
LOUDVA = DATA / "jetson_gpufreq_batch_profiling_loudva.csv"
RUNS = 50
NOISE = 0.03
STEP = 0.08
MIN_SIZE = 3
SERIES = 2000
INTERIOR = 5
"""Steps with at least this many runs on each side are "interior" in the table."""
SCALE_SERIES, SCALE_RUNS = 300, 10_000


def loudva_residuals() -> np.ndarray[Any, np.dtype[np.float64]]:
    """Real relative noise, standardised (mean 0, standard deviation 1)."""
    groups: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    with LOUDVA.open(encoding="utf-8") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            batch = int(row["Batch Size"])
            energy = float(row["Energy"]) / batch
            groups[(row["Directory"], row["Frequency"])].append((batch, math.log(energy)))
    out = []
    for points in groups.values():
        y = [v for _, v in sorted(points)]
        for i in range(2, len(y) - 2):
            out.append(y[i] - statistics.median(y[i - 2 : i] + y[i + 1 : i + 3]))
    r = np.asarray(out, dtype=np.float64)
    standard: np.ndarray[Any, np.dtype[np.float64]] = (r - r.mean()) / r.std()
    return standard


def noise(model: str, rng: np.random.Generator, size: int, pool: np.ndarray[Any, Any]) -> Any:
    eps = rng.normal(size=size) if model == "gaussian" else rng.choice(pool, size=size)
    return 1.0 + NOISE * eps


@dataclass
class Quality:
    model: str
    detected: int = 0
    exact: int = 0
    interior: int = 0
    interior_detected: int = 0
    exactly_one: int = 0
    mle_within_1: int = 0
    bayes_within_1: int = 0
    nothing: int = 0
    ends: int = 0
    ends_detected: int = 0
    false_alarms: int = 0
    series: int = 0
    seconds: float = 0.0
    calls: int = 0


def quality(model: str, series: int, pool: np.ndarray[Any, Any]) -> Quality:
    rng = np.random.default_rng(22)
    q = Quality(model, series=series)
    for _ in range(series):
        step_at = int(rng.integers(MIN_SIZE, RUNS - MIN_SIZE + 1))
        x = noise(model, rng, RUNS, pool)
        x[step_at:] *= 1.0 + STEP
        t0 = time.perf_counter()
        found = find_changes(x.tolist(), min_size=MIN_SIZE)
        q.seconds += time.perf_counter() - t0
        hit = any(abs(c.index - step_at) <= 1 for c in found)
        q.detected += hit
        q.exact += any(c.index == step_at for c in found)
        q.nothing += not found
        if min(step_at, RUNS - step_at) == MIN_SIZE:
            q.ends += 1
            q.ends_detected += hit
        if INTERIOR <= step_at <= RUNS - INTERIOR:
            q.interior += 1
            q.interior_detected += hit
        q.exactly_one += len(found) == 1 and abs(found[0].index - step_at) <= 1
        q.mle_within_1 += abs(_mle_split(np.log(x)) - step_at) <= 1
        q.bayes_within_1 += abs(_bayes_split(np.log(x)) - step_at) <= 1
        flat = noise(model, rng, RUNS, pool)
        t0 = time.perf_counter()
        q.false_alarms += bool(find_changes(flat.tolist(), min_size=MIN_SIZE))
        q.seconds += time.perf_counter() - t0
        q.calls += 2
    return q


def _split_gains(y: Any) -> tuple[Any, Any]:
    n = len(y)
    k = np.arange(MIN_SIZE, n - MIN_SIZE + 1)
    s = np.cumsum(y - y.mean())[k - 1]
    return k, s * s * n / (k * (n - k))


def _mle_split(y: Any) -> int:
    k, gains = _split_gains(y)
    return int(k[np.argmax(gains)])


def _bayes_split(y: Any) -> int:
    """The centre of the 3-run window of largest posterior mass (flat priors on the split and
    both levels, normal noise of the level estimated from neighbours' differences)."""
    k, gains = _split_gains(y)
    d = np.diff(y)
    noise_var = float(np.mean(d * d)) / 2.0
    log_post = gains / (2.0 * noise_var) - 0.5 * np.log(k * (len(y) - k))
    post = np.exp(log_post - log_post.max())
    mass = np.convolve(post, np.ones(3))[1:-1]
    return int(k[np.argmax(mass)])


def _rate(count: int, total: int) -> str:
    """A rate with its binomial standard error."""
    p = count / total
    return f"{p:.2%} +-{math.sqrt(p * (1 - p) / total):.2%}"


TWO_STEPS = (15, 35)
OUTLIER = 0.25
PHI = 0.5


def _student_t(rng: np.random.Generator, size: int) -> Any:
    """Student-t noise with 3 degrees of freedom, standard deviation 1."""
    return rng.standard_t(3, size) / math.sqrt(3.0)


def _ar1(rng: np.random.Generator, size: int) -> Any:
    """AR(1) noise, ``PHI``, stationary from its first run, standard deviation 1."""
    eps = rng.normal(size=size)
    out = np.empty(size)
    out[0] = eps[0]
    for i in range(1, size):
        out[i] = PHI * out[i - 1] + math.sqrt(1.0 - PHI * PHI) * eps[i]
    return out


def _two_steps(eps: Any) -> tuple[Any, list[int]]:
    """The level 8 % up from run 15 to run 35, in noise ``eps`` (standard deviation 1)."""
    x = 1.0 + NOISE * eps
    x[TWO_STEPS[0] : TWO_STEPS[1]] *= 1.0 + STEP
    return x, list(TWO_STEPS)


def _case(name: str, rng: np.random.Generator, end: int) -> tuple[Any, list[int]]:
    """One series of the case and its true changes (``end``: the run of the end step)."""
    if name == "two steps, gaussian":
        return _two_steps(rng.normal(size=RUNS))
    if name == "two steps + 2 outliers":
        x, at = _two_steps(rng.normal(size=RUNS))
        x[rng.choice(RUNS, 2, replace=False)] *= 1.0 + OUTLIER
        return x, at
    if name == "two steps, student-t 3":
        return _two_steps(_student_t(rng, RUNS))
    if name == "end step, gaussian":
        x = 1.0 + NOISE * rng.normal(size=RUNS)
        x[end:] *= 1.0 + STEP
        return x, [end]
    if name == "stationary AR(1)":
        return 1.0 + NOISE * _ar1(rng, RUNS), []
    if name == "stationary t3":
        return 1.0 + NOISE * _student_t(rng, RUNS), []
    raise ValueError(name)


CASES = (
    "two steps, gaussian",
    "two steps + 2 outliers",
    "two steps, student-t 3",
    "end step, gaussian",
    "stationary AR(1)",
    "stationary t3",
)


def several(series: int) -> list[str]:
    """The issue-31 cases: both changes found, nothing reported, false alarms, notes."""
    lines = [
        f"{'case':24} {'found +-1':>16} {'exactly':>8} {'nothing':>8} {'false alarm':>16} "
        f"{'note':>6} {'ms/series':>10}",
    ]
    for number, name in enumerate(CASES):
        rng = np.random.default_rng([31, number])
        found = exactly = nothing = alarms = noted = 0
        seconds = 0.0
        for i in range(series):
            x, at = _case(name, rng, MIN_SIZE if i % 2 else RUNS - MIN_SIZE)
            t0 = time.perf_counter()
            changes = find_changes(x.tolist(), min_size=MIN_SIZE)
            seconds += time.perf_counter() - t0
            near = [any(abs(c.index - a) <= 1 for c in changes) for a in at]
            found += bool(at) and all(near)
            exactly += bool(at) and all(near) and len(changes) == len(at)
            nothing += not changes
            alarms += not at and bool(changes)
            noted += bool(changes) and changes[0].autocorrelated
        reported = series - nothing
        lines.append(
            f"{name:24} {_rate(found, series) if at else '-':>16} "
            f"{f'{exactly / series:.1%}' if at else '-':>8} {nothing:>8} "
            f"{'-' if at else _rate(alarms, series):>16} "
            f"{f'{noted / reported:.0%}' if reported else '-':>6} "
            f"{1000 * seconds / series:>10.2f}"
        )
    return lines


@dataclass
class Scale:
    seconds: float = 0.0
    planted: int = 0
    found_in_stepped: int = 0
    located: int = 0
    stationary: int = 0
    stationary_alarms: int = 0


def scale(pool: np.ndarray[Any, Any]) -> Scale:
    """SCALE_SERIES series of SCALE_RUNS runs of real noise, every third with 4 steps."""
    rng = np.random.default_rng(7)
    out = Scale()
    for i in range(SCALE_SERIES):
        x = noise("loudva", rng, SCALE_RUNS, pool)
        steps = []
        if i % 3 == 0:
            at_runs = rng.choice(np.arange(500, SCALE_RUNS - 500), 4, replace=False)
            steps = sorted(int(a) for a in at_runs)
            for at in steps:
                x[at:] *= 1.0 + STEP
        values = x.tolist()
        t0 = time.perf_counter()
        found = find_changes(values, min_size=MIN_SIZE)
        out.seconds += time.perf_counter() - t0
        if steps:
            out.planted += len(steps)
            out.found_in_stepped += len(found)
            out.located += sum(any(abs(c.index - at) <= 1 for c in found) for at in steps)
        else:
            out.stationary += 1
            out.stationary_alarms += bool(found)
    return out


def report(series: int, with_scale: bool) -> str:
    pool = loudva_residuals()
    lines = [
        f"{RUNS} runs, {NOISE:.0%} noise, +{STEP:.0%} step, {series} series each, "
        f"min_size={MIN_SIZE}, alpha=0.05",
        f"loudva residuals: {len(pool)}, kurtosis {float((pool**4).mean() - 3):.0f}, "
        f"within +-1/3 sd: {float((abs(pool) < 1 / 3).mean()):.0%}",
        "",
        f"{'noise':10} {'detected +-1':>16} {'exact run':>10} {'interior':>9} {'exactly one':>12} "
        f"{'MLE +-1':>8} {'Bayes +-1':>10} {'false alarms':>15} {'ms/series':>10}",
    ]
    misses = []
    for model in ("gaussian", "loudva"):
        q = quality(model, series, pool)
        lines.append(
            f"{model:10} {_rate(q.detected, series):>16} {q.exact / series:>10.1%} "
            f"{q.interior_detected / q.interior:>9.1%} {q.exactly_one / series:>12.1%} "
            f"{q.mle_within_1 / series:>8.1%} {q.bayes_within_1 / series:>10.1%} "
            f"{_rate(q.false_alarms, series):>15} {1000 * q.seconds / q.calls:>10.2f}"
        )
        misses.append(
            f"misses, {model}: {q.nothing} nothing reported, "
            f"{series - q.detected - q.nothing} reported elsewhere; steps with {MIN_SIZE} runs "
            f"on one side found {q.ends_detected}/{q.ends}"
        )
    lines += misses
    lines += ["", *several(series)]
    if with_scale:
        sc = scale(pool)
        lines += [
            "",
            f"scale: {SCALE_SERIES} series x {SCALE_RUNS} runs of loudva noise, every third "
            f"with 4 steps of +{STEP:.0%}: {sc.seconds:.1f} s "
            f"({1000 * sc.seconds / SCALE_SERIES:.1f} ms/series)",
            f"  stepped: {sc.located}/{sc.planted} steps found +-1, "
            f"{sc.found_in_stepped} changes reported",
            f"  stationary: {sc.stationary_alarms}/{sc.stationary} series report a change",
        ]
    return "\n".join(lines)


def command(repeats: int) -> str:
    """The whole ``edgeenergy history changes`` on a SQLite history of 10,000 runs x 300
    results (best of ``repeats``; building the history is not timed)."""
    import contextlib
    import io
    import tempfile

    from bench_history_add import fill

    from pytest_edgeenergy.commands.history import history_main
    from pytest_edgeenergy.history import open_store

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "energy.db"
        with open_store(db) as store:
            rows = fill(store, SCALE_RUNS)
        spent, last = [], ""
        for _ in range(repeats):
            out = io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(out):
                status = history_main(["changes", "--db", str(db)])
            spent.append(time.perf_counter() - t0)
            assert status == 0, status
            last = out.getvalue().strip().splitlines()[-1]
    return (
        f"history changes, whole command, SQLite history of {SCALE_RUNS:,} runs x 300 results "
        f"({rows:,} rows): best {min(spent):.1f} s of {', '.join(f'{t:.1f}' for t in spent)}"
        f"\n  {last}"
    )


def test_history_changes(benchmark: Any) -> None:
    text = benchmark.pedantic(report, args=(SERIES, True), rounds=1, iterations=1)
    print("\n" + text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=SERIES)
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument(
        "--command",
        action="store_true",
        help="also time the whole command on a 3 M-row SQLite history (builds it: minutes)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of --command (best)")
    args = parser.parse_args()
    print(report(args.series, not args.skip_scale))
    if args.command:
        print(command(args.repeats))
