"""The root of the errors meant for users.

Every exception whose message is written for the person running pytest or ``edgeenergy``
(an unknown mode, a frequency not offered, a corrupt report, not root...) derives from
:class:`EdgeEnergyError`. Only the boundaries, the plugin's hooks and fixtures and the CLI's
``main``, turn these (and ``OSError``, which names the file) into one-line messages;
any other exception is a bug of ours and keeps its traceback.
"""

from __future__ import annotations


class EdgeEnergyError(Exception):
    """An error meant for the user: its message names the thing and what is allowed."""


class InvalidValue(EdgeEnergyError, ValueError):
    """A value given by the user (option, argument, file content) that cannot be used."""
