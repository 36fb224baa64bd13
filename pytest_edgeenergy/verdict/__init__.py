"""Every gate: the expression language (:mod:`.expr`), what a gate reads of a report
(:mod:`.view`), the verdict's types (:mod:`.model`), the independent-runs judge
(:mod:`.independent`) with its significance tests (:mod:`.stats`), the paired judge of A/B
rounds (:mod:`.paired`), and the gate's entries: against baselines (:func:`.paired.gate_baselines`,
:func:`.independent.gate_against`), in a comparison (:mod:`.compare`), against the history
(:mod:`.history`), of an A/B run (:func:`.paired.ab_verdict`).

Rendering a verdict for people is :mod:`pytest_edgeenergy.present.verdict`'s. Nothing heavy
is imported here: scipy loads inside the tests that need it.
"""
