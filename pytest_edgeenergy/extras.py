"""Optional dependencies: a missing one names the extra that installs it, not a traceback.

The ``edgeenergy`` command turns :class:`MissingExtra` into exit status 2 and the plugin
into a usage error.
"""

from __future__ import annotations

import importlib

from .errors import EdgeEnergyError

EXTRA_OF = {"pandas": "analysis", "matplotlib": "analysis", "scipy": "analysis"}
"""Top-level modules the package imports only when needed, and the extra bringing each."""


class MissingExtra(EdgeEnergyError, ImportError):
    """An optional dependency cannot be imported; the message says what to install."""


def _message(what: str, module: str, extra: str, exc: ImportError) -> str:
    return (
        f"{what} needs {module}, which cannot be imported ({exc}); "
        f"install it with: pip install 'pytest-edgeenergy[{extra}]'"
    )


def require(module: str, extra: str, what: str) -> None:
    """Import ``module`` or raise :class:`MissingExtra` naming ``what`` needs it and the
    ``pip install`` line of ``extra``."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(_message(what, module.partition(".")[0], extra, exc)) from exc


def missing_extra(exc: ImportError) -> MissingExtra | None:
    """The :class:`MissingExtra` for a failed import of a module of :data:`EXTRA_OF` (one
    no :func:`require` guarded); None for any other module."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF.get(module)
    return MissingExtra(_message("this command", module, extra, exc)) if extra else None
