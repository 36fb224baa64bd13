"""Reports: the versioned JSON result file, and what reads it.

* ``schema.json`` / :mod:`.schema`: the JSON Schema (``schema_version`` 1) and a fast
  validator compiled from it;
* :mod:`.model`: typed builders (header, device fingerprint, metrics, test entries);
* :mod:`.writer`: :class:`~.writer.ReportWriter`, atomic rewrite after every test;
* :mod:`.load`: :func:`~.load.load_report` with clear errors (parsed by ``orjson`` when
  installed), :func:`~.load.load` to a long pandas table;
* :mod:`.compare`: ``edgeenergy compare`` (:func:`~.compare.compare_main`), reading many
  reports in forked workers (:mod:`.parallel`);
* :mod:`.gate`: the statistical regression gate;
* :mod:`.plots`: PNG figures; :mod:`.external`: outside tables (LoudVA) as reports;
* :mod:`.synthetic`: well-formed synthetic reports for tests and benchmarks.

Nothing heavy is imported here: pandas, matplotlib and scipy load inside the functions
that need them.
"""
