"""The energy benchmark fixture ``edge_bench``: fixed work in energy windows, warm-up,
repeats, statistics, memory pre-flight. Plain Python; torch is imported only for CUDA."""
