"""The paced test workload (tests/paced.py): late wake-ups do not add up in a window."""

from __future__ import annotations

import pytest
from paced import Paced, with_paced


class LateClock:
    """A clock whose every sleep wakes ``late_s[i]`` after the time asked for."""

    def __init__(self, late_s: list[float]) -> None:
        self.now = 100.0
        self.late_s = list(late_s)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds + self.late_s.pop(0)


def _window(work: Paced, clock: LateClock, calls: int) -> float:
    work.restart()
    start = clock()
    for _ in range(calls):
        work()
    return clock() - start


def test_a_window_lasts_its_calls_periods_and_its_last_lateness_only() -> None:
    late = [0.004, 0.030, 0.002, 0.001, 0.007]
    clock = LateClock(late)
    work = Paced(0.1, clock=clock, sleep=clock.sleep)
    assert _window(work, clock, 5) == pytest.approx(5 * 0.1 + late[-1])
    # time.sleep(0.1) per call would have lasted 5 x 0.1 + sum(late).


def test_a_call_later_than_its_deadline_returns_at_once_and_the_rest_catch_up() -> None:
    clock = LateClock([0.25, 0.0, 0.0])  # the first wake-up 2.5 periods late
    work = Paced(0.1, clock=clock, sleep=clock.sleep)
    assert _window(work, clock, 5) == pytest.approx(0.5)
    assert clock.late_s == []  # calls 2 and 3 did not sleep; 4 and 5 did


def test_each_window_has_its_own_anchor() -> None:
    clock = LateClock([0.0] * 6)
    work = Paced(0.1, clock=clock, sleep=clock.sleep)
    _window(work, clock, 3)
    clock.now += 7.0  # between windows: closing one, opening the next
    assert _window(work, clock, 3) == pytest.approx(0.3)


def test_a_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="period_s must be > 0 s"):
        Paced(0.0)


def test_a_workload_file_starting_with_the_source_has_paced() -> None:
    scope: dict[str, object] = {}
    exec(compile(with_paced("work = Paced(0.1)\n"), "test_w.py", "exec"), scope)
    assert isinstance(scope["work"], scope["Paced"])  # type: ignore[arg-type]
