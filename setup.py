"""Build the optional native reader of the INA sampler (everything else is in pyproject.toml).

``optional=True``: where no C compiler or Python headers exist (a bare board), the build of
the extension fails with a warning and the package installs without it; the sampler then
reads in a Python thread (``sampler: python``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pytest_edgeenergy.meters._preadring",
            sources=["pytest_edgeenergy/meters/_preadring.c"],
            extra_compile_args=["-std=gnu11", "-O2"],
            optional=True,
        )
    ]
)
