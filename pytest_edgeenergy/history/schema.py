"""The tables of the energy history and their forward migrations.

The database records its own version in ``schema_version`` (one row). :data:`MIGRATIONS`
holds one function per version, in order: ``MIGRATIONS[i]`` takes a database from version
``i`` to ``i + 1``. Opening a store applies the missing ones in one transaction; a database
of a newer version than :data:`SCHEMA_VERSION` is refused (see :mod:`.store`).

``results`` repeats the run's device and start time so that a series (device x operating
point x test x metric, ordered by time) is read through one index, without a join per row.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

metadata = sa.MetaData()

version_table = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("device", sa.String(64), nullable=False),  # the report's device fingerprint
    sa.Column("device_label", sa.Text, nullable=False),
    sa.Column("model", sa.Text),
    sa.Column("sim_model", sa.Text),
    sa.Column("simulated", sa.Boolean, nullable=False),
    sa.Column("report_schema", sa.Integer, nullable=False),  # as the file said, before migration
    sa.Column("tool_version", sa.Text),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
    sa.Column("git_commit", sa.Text),
    sa.Column("branch", sa.Text),
    sa.Column("dirty", sa.Boolean),
    sa.Column("command_line", sa.JSON(none_as_null=True)),
    sa.Column("settings", sa.JSON(none_as_null=True)),
    sa.Column("device_info", sa.JSON(none_as_null=True)),  # the report's whole device entry
    sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
)

results = sa.Table(
    "results",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column(
        "run_id",
        sa.String(32),
        sa.ForeignKey("runs.run_id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("device", sa.String(64), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("test_id", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),  # the test id without its parameters
    sa.Column("params", sa.JSON(none_as_null=True)),
    sa.Column("point", sa.Text, nullable=False),  # the requested operating point's key
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("valid", sa.Boolean),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("unit", sa.Text),
    sa.Column("value", sa.Double),
    sa.Column("stats", sa.JSON(none_as_null=True)),
    sa.Column("samples", sa.JSON(none_as_null=True)),
    sa.Index("ix_results_series", "device", "test_id", "metric", "started_at"),
    sa.Index("ix_results_metric", "metric", "started_at"),
    sa.Index("ix_results_run", "run_id"),
)

RUNS_COLUMNS = tuple(c.name for c in runs.columns)


def _create_v1(conn: sa.Connection) -> None:
    """Version 1: ``runs`` and ``results`` with the series index."""
    metadata.create_all(conn, tables=[runs, results])


MIGRATIONS: tuple[Callable[[sa.Connection], None], ...] = (_create_v1,)
"""``MIGRATIONS[i]`` migrates a database of version ``i`` to ``i + 1`` (0: empty)."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this pytest-edgeenergy writes and reads."""
