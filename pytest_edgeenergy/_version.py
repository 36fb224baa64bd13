"""The package's version: a leaf, so that any layer may say it without importing the
package's ``__init__`` (``from pytest_edgeenergy import __version__`` still works)."""

__version__ = "0.1.0"
