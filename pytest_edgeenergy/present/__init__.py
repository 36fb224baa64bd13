"""What a person reads: the text table (:mod:`.tables`: aligned text, Markdown, CSV, HTML),
the PNG figures (:mod:`.plots`), the comparison (:mod:`.compare`), a gate's verdict
(:mod:`.verdict`), and the session summaries of the terminal (:mod:`.summary`,
:mod:`.bench_summary`, :mod:`.interleave_summary`; one window's text for ``edgeenergy
measure``).

Nothing here imports pytest: the plugin writes these lines to pytest's terminal itself.
pandas and matplotlib load inside the functions that need them.
"""
