"""Extension points: search strategies and power sources registered as entry points.

A package adds a strategy or a source by declaring a callable under one of the groups
(:data:`STRATEGIES_GROUP`, :data:`SOURCES_GROUP`) in its own ``pyproject.toml``; the
built-ins are registered the same way in this project's. Names are looked up only when one
is used (``--edge-search=NAME``, ``--edge-source=NAME``, ``edgeenergy search --strategy
NAME``), and an entry point is imported only when its name is looked up. The interfaces
the callables implement: ``docs/how-to/extensions.md``.

Rules: a name belongs to one package. A built-in name cannot be taken over (another
package's entry point of that name is ignored: a plugin installed beside the project never
changes what ``grid`` or ``ina`` mean); two other packages registering one name is an error
naming both when the name is used. Names are listed sorted.

Cheap to import (standard library only): the plugin's option table reads the built-in
names for its help text on every run (one small metadata file, not a scan of every
installed package).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata

from .errors import EdgeEnergyError, InvalidValue

__all__ = [
    "DIST_NAME",
    "SOURCES_GROUP",
    "STRATEGIES_GROUP",
    "Entry",
    "ExtensionError",
    "allowed",
    "builtin_names",
    "entry",
    "load",
    "names",
]

DIST_NAME = "pytest-edgeenergy"
"""The distribution whose entry points are the built-ins."""
STRATEGIES_GROUP = "pytest_edgeenergy.strategies"
"""Search strategies: ``name = "module:factory"``, ``factory(StrategyRequest) -> Strategy``."""
SOURCES_GROUP = "pytest_edgeenergy.sources"
"""Power sources: ``name = "module:opener"``, ``opener(SourceRequest) -> PowerSource``."""

WHAT = {STRATEGIES_GROUP: "strategy", SOURCES_GROUP: "power source"}
RESERVED = {SOURCES_GROUP: ("auto",)}
"""Names listed first that are no entry point: ``auto`` chooses among the built-in sources.
An entry point of such a name is ignored."""


class ExtensionError(EdgeEnergyError):
    """A registered strategy or source that cannot be used (its module fails to import, the
    name is registered twice, the project's own entry points are missing); the message names
    the name, the entry point and its package."""


@dataclass(frozen=True)
class Entry:
    """One registered name: the entry point and the package that declares it."""

    name: str
    value: str
    """``module:attribute``, as the package declared it."""
    package: str
    builtin: bool

    def describe(self) -> str:
        return f"{self.name} = {self.value!r} of {self.package}"


def _norm(dist_name: str) -> str:
    return dist_name.lower().replace("_", "-").replace(".", "-")


@functools.cache
def _own(group: str) -> dict[str, Entry]:
    """This project's entry points of ``group`` (one metadata file; no scan)."""
    try:
        dist = metadata.distribution(DIST_NAME)
    except metadata.PackageNotFoundError:
        return {}
    return {
        ep.name: Entry(ep.name, ep.value, DIST_NAME, True)
        for ep in dist.entry_points
        if ep.group == group
    }


@functools.cache
def _all(group: str) -> dict[str, tuple[Entry, ...]]:
    """Every installed package's entry points of ``group`` by name (built-ins first)."""
    found: dict[str, list[Entry]] = {name: [e] for name, e in _own(group).items()}
    for ep in metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        package = dist.metadata["Name"] if dist is not None else "an unknown package"
        if _norm(package) == DIST_NAME:
            continue
        found.setdefault(ep.name, []).append(Entry(ep.name, ep.value, package, False))
    return {name: tuple(entries) for name, entries in found.items()}


def _listed(group: str, registered: Iterable[str]) -> tuple[str, ...]:
    reserved = RESERVED.get(group, ())
    return (*reserved, *sorted(n for n in registered if n not in reserved))


def builtin_names(group: str) -> tuple[str, ...]:
    """The names this project registers under ``group`` (cheap: no scan), sorted after the
    reserved ones (``auto`` for sources)."""
    return _listed(group, _own(group))


def names(group: str) -> tuple[str, ...]:
    """Every name registered under ``group`` by any installed package, sorted after the
    reserved ones (``auto`` for sources)."""
    return _listed(group, _all(group))


def entry(group: str, name: str) -> Entry:
    """The entry point of ``name``; :class:`~.errors.InvalidValue` listing the registered
    names when there is none, :class:`ExtensionError` when two packages claim it."""
    own = _own(group).get(name)
    if own is not None:
        return own
    entries = _all(group).get(name) if name not in RESERVED.get(group, ()) else None
    if not entries:
        raise InvalidValue(f"unknown {WHAT.get(group, group)} {name!r}; {allowed(group)}")
    if len(entries) > 1:
        raise ExtensionError(
            f"{WHAT.get(group, group)} {name!r} is registered by more than one package "
            f"({'; '.join(e.describe() for e in entries)}): uninstall one of them"
        )
    return entries[0]


def load(group: str, name: str) -> Callable[..., object]:
    """Import and return the callable registered as ``name`` under ``group``."""
    found = entry(group, name)
    module, _, attr = found.value.partition(":")
    point = metadata.EntryPoint(name, found.value, group)
    if found.builtin:  # ours: a failure is a bug of ours and keeps its traceback
        obj: object = point.load()
    else:
        obj = _load_plugin(point, found)
    if not callable(obj):
        raise ExtensionError(
            f"{WHAT.get(group, group)} {name!r} ({found.describe()}): {module}.{attr} is not "
            "callable"
        )
    return obj


def _load_plugin(point: metadata.EntryPoint, found: Entry) -> object:
    try:
        return point.load()
    except Exception as exc:  # a plugin's import error is the plugin's: name it
        raise ExtensionError(
            f"{WHAT.get(point.group, point.group)} {found.name!r} ({found.describe()}) cannot "
            f"be loaded: {type(exc).__name__}: {exc}"
        ) from exc


def allowed(group: str) -> str:
    """``allowed: a, b, c`` for a message, or why there are none."""
    listed = names(group)
    if not _own(group):
        return (
            f"no built-in {WHAT.get(group, group)} is registered: {DIST_NAME}'s entry points "
            "are missing; install it (pip install -e .)"
            + (f"; allowed: {', '.join(listed)}" if listed else "")
        )
    return f"allowed: {', '.join(listed)}"
