"""pytest-edgeenergy: energy of deep-learning workloads on NVIDIA Jetson boards."""

__version__ = "0.1.0"
