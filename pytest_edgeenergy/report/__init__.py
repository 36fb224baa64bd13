"""Reports: the versioned JSON result file, and what reads it.

* ``schema.json`` / :mod:`.schema`: the JSON Schema (``schema_version`` 1) and a fast
  validator compiled from it;
* :mod:`.model`: typed builders (header, device fingerprint, metrics, test entries);
* :mod:`.writer`: :class:`~.writer.ReportWriter`, atomic rewrite after every test;
* :mod:`.load`: :func:`~.load.load_report` with clear errors (parsed by ``orjson`` when
  installed), :func:`~.load.load` to a long pandas table;
* :mod:`.keys`: how results line up across reports (join keys, operating-point labels);
* :mod:`.baselines`: the baseline runs a gate reads (a file or a directory of earlier runs);
* :mod:`.merge`: shard reports of several boards merged into one per device model;
* :mod:`.external`: outside tables (LoudVA) read as reports.

What judges reports is :mod:`pytest_edgeenergy.verdict`; what shows them to people (tables,
figures, the comparison) is :mod:`pytest_edgeenergy.present`; the ``edgeenergy`` verbs over
them are :mod:`pytest_edgeenergy.commands`.

Nothing heavy is imported here: pandas loads inside the functions that need it.
"""
