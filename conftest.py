"""Repository-wide pytest configuration: the ``pytester`` fixture for plugin tests."""

pytest_plugins = ["pytester"]
