"""Check, before any test runs, that this process may write the knobs it will pin.

Only a real board (root ``/``, not a virtual board) is checked: fixture and virtual trees
belong to the user. The answer is ONE error listing every file that needs privileges and
how to grant them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .errors import PrivilegeError
from .knobset import KnobSet

Access = Callable[[Path, int], bool]

GRANT_HELP = """\
Grant it in one of these ways:
  - run as root, e.g. `sudo -E env PATH=$PATH pytest ...` (or `sudo edgeenergy ...`);
  - or let a group write the cpufreq, CPU online and GPU devfreq files at boot with a udev
    rule, e.g. /etc/udev/rules.d/99-edgeenergy.rules:
      ACTION=="add", SUBSYSTEM=="cpu", RUN+="/bin/sh -c 'chgrp edgeenergy /sys%p/online \
/sys%p/cpufreq/scaling_min_freq /sys%p/cpufreq/scaling_max_freq /sys%p/cpufreq/scaling_governor; \
chmod g+w /sys%p/online /sys%p/cpufreq/scaling_min_freq /sys%p/cpufreq/scaling_max_freq \
/sys%p/cpufreq/scaling_governor'"
      ACTION=="add", SUBSYSTEM=="devfreq", RUN+="/bin/sh -c 'chgrp edgeenergy /sys%p/min_freq \
/sys%p/max_freq /sys%p/governor; chmod g+w /sys%p/min_freq /sys%p/max_freq /sys%p/governor'"
    then `sudo groupadd -f edgeenergy && sudo usermod -aG edgeenergy $USER`, reboot.
  Power modes (nvpmodel) and the EMC clock (debugfs) need root in any case."""


def missing_privileges(
    knobs: KnobSet,
    files: Iterable[Path],
    *,
    needs_nvpmodel: bool = False,
    access: Access = os.access,
    euid: int | None = None,
) -> list[str]:
    """The files (and tools) this process cannot use; empty when all is well."""
    uid = os.geteuid() if euid is None else euid
    missing = [str(p) for p in dict.fromkeys(files) if not access(p, os.W_OK)]
    if needs_nvpmodel and uid != 0:
        where = knobs.nvpmodel_bin or knobs.root / "usr/bin/nvpmodel"
        missing.append(f"{where} -m (nvpmodel must run as root)")
    return missing


def check_privileges(
    knobs: KnobSet,
    files: Iterable[Path] | None = None,
    *,
    needs_nvpmodel: bool = False,
    real: bool | None = None,
    access: Access = os.access,
    euid: int | None = None,
) -> None:
    """Raise :class:`PrivilegeError` listing every knob file this process may not write.

    ``files`` defaults to every knob file of the board; ``real`` defaults to
    :attr:`KnobSet.real` (fixture and virtual trees are never checked).
    """
    if not (knobs.real if real is None else real):
        return
    wanted = list(files) if files is not None else list(knobs.files)
    missing = missing_privileges(
        knobs, wanted, needs_nvpmodel=needs_nvpmodel, access=access, euid=euid
    )
    if not missing:
        return
    uid = os.geteuid() if euid is None else euid
    listing = "\n".join(f"  {m}" for m in missing)
    raise PrivilegeError(
        f"pytest-edgeenergy needs write access to {len(missing)} knob file(s) on this board "
        f"to pin and later restore the operating point (running as uid {uid}):\n"
        f"{listing}\n{GRANT_HELP}"
    )
