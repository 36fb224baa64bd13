"""Errors of the energy history (the database of runs), meant for the user."""

from __future__ import annotations

from pytest_edgeenergy.errors import EdgeEnergyError


class HistoryError(EdgeEnergyError):
    """The history database cannot be opened or used; the message names it."""


class SchemaTooNew(HistoryError):
    """The database was written by a newer pytest-edgeenergy than this one."""


class NoHistory(HistoryError):
    """A command that reads the history was given a database that is not there or holds
    no history; the message names it and how to create it."""
