"""Workloads measured by the suites: model builders (vision, detection, NLP, training), input
generation, graph mode / precision / device conversion and memory footprints.

Every module imports torch, torchvision and transformers inside its functions only: the
plugin imports this package's siblings at pytest start on a 4 GB Jetson, and the suites skip
cleanly where torch is missing.
"""
