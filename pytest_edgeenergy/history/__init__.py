"""The energy history: a database of every run (SQLite or PostgreSQL), and what reads it.

``store`` (SQLAlchemy; imported on first use, never by the plugin's import path) keeps the
runs and results (``edgeenergy history`` is :mod:`pytest_edgeenergy.commands.history`). The
store's names are importable from here: ``from pytest_edgeenergy.history import open_store``.
"""

from __future__ import annotations

from typing import Any

_STORE_NAMES = frozenset({"open_store", "HistoryStore", "AddResult", "Series", "SeriesPoint"})


def __getattr__(name: str) -> Any:
    if name in _STORE_NAMES:
        from pytest_edgeenergy.history import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
