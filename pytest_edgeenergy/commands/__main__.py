"""``python -m pytest_edgeenergy.commands ...``: the ``edgeenergy`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
