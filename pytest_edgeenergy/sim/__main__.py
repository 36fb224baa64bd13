"""``python -m pytest_edgeenergy.sim run ROOT [--seconds S] | create MODEL ROOT``: the virtual
board's process (:class:`.runner.SimProcess` starts it); its parser is the command's."""

import sys

from ..commands.sim import process_main

if __name__ == "__main__":
    sys.exit(process_main())
