"""Animate a virtual board: knobs in, clocks and rail values out, many times a second.

Each tick reads the tree's current knob files (cpufreq/devfreq governor and limits, online
CPUs, TPC mask, EMC lock/rate/cap) and the host's real CPU load, picks the running clocks
like the kernel would (:mod:`.dvfs`), writes them back (``scaling_cur_freq``, ``cur_freq``,
EMC rate), computes rail power (:mod:`.power`), writes the rail files in place and the
ground-truth record (:mod:`.truth`), and moves temperatures slowly toward their loaded
value. Everything is opened once; a tick is a few dozen ``pread``/``pwrite`` calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Generic, TypeVar

from ..board.sysfs import format_cpu_list
from ..errors import EdgeEnergyError
from .dvfs import pick_freq
from .files import LIST_WIDTH, live_bytes, pread_token
from .hostload import HostLoad
from .models import BoardModel, get_model
from .power import ClusterState, PowerState, rail_power_w, total_power_w
from .railfiles import RailWriter
from .truth import TRUTH_DIR, TruthUnavailable, TruthWriter, read_truth

MARKER = "etc/edgeenergy-virtual-board.json"
LOAD_OVERRIDE = f"{TRUTH_DIR}/load_override"
"""``host`` (default): utilisation from the host's real CPU load; a number 0..1 pins it."""
LOCK_FILE = f"{TRUTH_DIR}/runner.lock"
CPU_DIR = "sys/devices/system/cpu"
THERMAL_TAU_S = 20.0
THERMAL_PERIOD_S = 0.1
_V = TypeVar("_V")
KNOB_PERIOD_S = 0.02
"""Knob files (governors, limits, online CPUs, caps) are re-read at most this often."""


class NotAVirtualBoard(EdgeEnergyError, FileNotFoundError):
    """The directory has no virtual-board marker."""


class SimAlreadyRunning(EdgeEnergyError, RuntimeError):
    """Another animator holds the tree's lock."""


class SimStartError(EdgeEnergyError, RuntimeError):
    """The simulator process did not come up (it exited, or no first tick in time)."""


def read_marker(root: Path) -> dict[str, object]:
    """The virtual-board marker of ``root``; :class:`NotAVirtualBoard` if there is none."""
    path = root / MARKER
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise NotAVirtualBoard(
            f"{root}: not a virtual board (no {MARKER}); create one with "
            "`edgeenergy sim create MODEL DIR`"
        ) from None
    except ValueError as exc:
        raise NotAVirtualBoard(f"{path}: unreadable virtual-board marker ({exc})") from None
    if not isinstance(data, dict) or data.get("simulated") is not True:
        raise NotAVirtualBoard(f"{path}: marker does not say simulated: true")
    return data


def acquire_lock(root: Path) -> int:
    """Take the tree's animator lock (non-blocking); returns the lock fd."""
    path = root / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SimAlreadyRunning(f"{root}: another simulator is animating this tree") from None
    return fd


def _int(token: str, default: int) -> int:
    try:
        return int(token, 16) if token.startswith(("0x", "0X")) else int(token)
    except ValueError:
        return default


class _Files:
    """The animator's open files, and whether knob files are re-read this tick."""

    __slots__ = ("fds", "scan")

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.scan = True

    def open(self, path: Path, flags: int) -> int:
        """Open ``path`` (or return -1 when it does not exist) and remember the fd."""
        if not path.exists():
            return -1
        fd = os.open(path, flags)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


class _FileValue(Generic[_V]):
    """An open knob file read with ``pread``, keeping the last good value; the text is
    parsed again only when its bytes changed."""

    __slots__ = ("fd", "files", "raw", "value")

    def __init__(self, path: Path, default: _V, files: _Files) -> None:
        self.fd = files.open(path, os.O_RDONLY)
        self.files = files
        self.raw = b""
        self.value = default

    def _parse(self, token: str) -> _V:
        raise NotImplementedError

    def get(self) -> _V:
        if self.fd >= 0 and self.files.scan:
            try:
                raw = os.pread(self.fd, 64, 0)
            except OSError:
                return self.value
            if raw != self.raw:
                self.raw = raw
                parts = raw.split()
                if parts:
                    self.value = self._parse(parts[0].decode("ascii", "replace"))
        return self.value


class _Reader(_FileValue[int]):
    """A knob file holding a number."""

    __slots__ = ()

    def _parse(self, token: str) -> int:
        return _int(token, self.value)

    def int(self) -> int:
        return self.get()


class _TextReader(_FileValue[str]):
    """A knob file holding a word (a governor name)."""

    __slots__ = ()

    def _parse(self, token: str) -> str:
        return token

    def text(self) -> str:
        return self.get()


class _Writer:
    """A live file written in place, only when the value changes."""

    __slots__ = ("fd", "last", "width")

    def __init__(self, path: Path, files: _Files, width: int = 12) -> None:
        self.fd = files.open(path, os.O_WRONLY)
        self.last: int | str | None = None
        self.width = width

    def put(self, value: int | str) -> None:
        if self.fd >= 0 and value != self.last:
            os.pwrite(self.fd, live_bytes(value, self.width), 0)
            self.last = value


class _Cluster:
    def __init__(self, root: Path, model: BoardModel, index: int, fds: _Files) -> None:
        spec = model.clusters[index]
        self.spec = spec
        self.offered = spec.freqs_khz
        self.top = spec.freqs_khz[-1]
        d = root / CPU_DIR / "cpufreq" / f"policy{spec.policy}"
        self.governor = _TextReader(d / "scaling_governor", model.cpu_governor, fds)
        self.min = _Reader(d / "scaling_min_freq", spec.freqs_khz[0], fds)
        self.max = _Reader(d / "scaling_max_freq", self.top, fds)
        self.setspeed = _Reader(d / "scaling_setspeed", self.top, fds)
        self.cur = [_Writer(d / "scaling_cur_freq", fds), _Writer(d / "cpuinfo_cur_freq", fds)]
        self.online = [
            _Reader(root / CPU_DIR / f"cpu{c}" / "online", 1, fds) if c != 0 else None
            for c in spec.cpus
        ]
        self.freq_khz = self.offered[0]

    def online_cpus(self) -> list[int]:
        return [
            c
            for c, reader in zip(self.spec.cpus, self.online, strict=True)
            if reader is None or reader.int() == 1
        ]

    def update(self, load: float) -> int:
        governor = self.governor.text()
        setspeed = self.setspeed.int() if governor == "userspace" else None
        f = pick_freq(governor, self.offered, self.min.int(), self.max.int(), load, setspeed)
        self.freq_khz = f
        for w in self.cur:
            w.put(f)
        return f


class _Gpu:
    def __init__(self, root: Path, model: BoardModel, fds: _Files) -> None:
        g = model.gpu
        d = root / g.devfreq_dir
        self.offered = g.freqs_hz
        self.top = g.freqs_hz[-1]
        self.governor = _TextReader(d / "governor", g.governor, fds)
        self.min = _Reader(d / "min_freq", g.freqs_hz[0], fds)
        self.max = _Reader(d / "max_freq", self.top, fds)
        self.setspeed = _Reader(d / "userspace" / "set_freq", self.top, fds)
        self.cur = [_Writer(d / "cur_freq", fds), _Writer(d / "target_freq", fds)]
        self.load = _Writer(root / g.device_dir / "load", fds) if g.has_load else None
        self.tpcs = g.tpcs
        self.tpc_mask = _Reader(root / g.device_dir / "tpc_pg_mask", 0, fds) if g.tpcs else None
        self.freq_hz = self.offered[0]

    def active_share(self) -> float:
        if self.tpc_mask is None or self.tpcs <= 0:
            return 1.0
        mask = self.tpc_mask.int()
        active = sum(1 for i in range(self.tpcs) if not (mask >> i) & 1)
        return active / self.tpcs

    def update(self, load: float) -> int:
        governor = self.governor.text()
        setspeed = self.setspeed.int() if governor == "userspace" else None
        f = pick_freq(governor, self.offered, self.min.int(), self.max.int(), load, setspeed)
        self.freq_hz = f
        for w in self.cur:
            w.put(f)
        if self.load is not None:
            self.load.put(round(load * 1000))
        return f


class _Emc:
    def __init__(self, root: Path, model: BoardModel, fds: _Files) -> None:
        e = model.emc
        self.offered = e.rates_hz
        self.top = e.rates_hz[-1]
        self.style = e.style
        d = root / e.files_dir
        self.cap = _Reader(root / e.cap_path, 0, fds)
        self.governor: _TextReader | None = None
        self.locked: _Reader | None
        if e.style == "bpmp":
            self.min = _Reader(d / "min_rate", self.offered[0], fds)
            self.max = _Reader(d / "max_rate", self.top, fds)
            self.locked = _Reader(d / "mrq_rate_locked", 0, fds)
            self.pinned = _Reader(d / "rate", self.top, fds)
            self.out = _Writer(d / "rate", fds)
        elif e.style == "t210":
            bw = root / "sys/kernel/debug/tegra_bwmgr"
            self.min = _Reader(bw / "emc_min_rate", self.offered[0], fds)
            self.max = _Reader(bw / "emc_max_rate", self.top, fds)
            self.locked = _Reader(d / "clk_state", 0, fds)
            self.pinned = _Reader(d / "clk_update_rate", self.top, fds)
            self.out = _Writer(d / "clk_rate", fds)
        else:
            self.min = _Reader(d / "min_freq", self.offered[0], fds)
            self.max = _Reader(d / "max_freq", self.top, fds)
            self.locked = None
            self.pinned = self.max
            self.governor = _TextReader(d / "governor", "nvhost_podgov", fds)
            self.out = _Writer(d / "cur_freq", fds)
        self.freq_hz = self.offered[0]

    def update(self, load: float) -> int:
        cap = self.cap.int()
        hi = self.max.int()
        if 0 < cap < hi:
            hi = cap
        if self.locked is not None and self.locked.int() == 1:
            f = pick_freq("userspace", self.offered, self.min.int(), hi, load, self.pinned.int())
            if self.style == "t210":
                self.out.put(f)
        else:
            governor = self.governor.text() if self.governor is not None else "schedutil"
            f = pick_freq(governor, self.offered, self.min.int(), hi, load)
            self.out.last = None  # others (jetson_clocks --restore) write this file too
            self.out.put(f)
        self.freq_hz = f
        return f


class Animator:
    """Owns the open files of one virtual board and advances it one tick at a time."""

    def __init__(self, root: Path, *, seed: int | None = None, lock: bool = True) -> None:
        self.root = Path(root)
        marker = read_marker(self.root)
        self.model = get_model(str(marker.get("model")))
        interval_ms = marker.get("update_interval_ms", 5.0)
        self.interval_s = (
            float(interval_ms) / 1000.0 if isinstance(interval_ms, (int, float)) else 0.005
        )
        self._lock_fd = acquire_lock(self.root) if lock else -1
        root = self.root
        model = self.model
        self._files = _Files()
        fds = self._files
        self.clusters = [_Cluster(root, model, i, fds) for i in range(len(model.clusters))]
        self.gpu = _Gpu(root, model, fds)
        self.emc = _Emc(root, model, fds)
        self.online_list = _Writer(root / CPU_DIR / "online", fds, LIST_WIDTH)
        self.load_override = _TextReader(root / LOAD_OVERRIDE, "host", fds)
        self.rails = RailWriter(root, model)
        self.truth = TruthWriter(root, model.rail_names, model.total_rail)
        self._host: HostLoad | None = None
        self._rng = random.Random(seed)
        self._zones: list[tuple[int, float, float, float]] = []
        self._temps: list[float] = []
        for i, zone in enumerate(model.thermal):
            if zone.fixed_c is not None:
                continue
            path = root / f"sys/devices/virtual/thermal/thermal_zone{i}/temp"
            fd = os.open(path, os.O_RDWR)
            current = _int(pread_token(fd), int(zone.idle_c * 1000)) / 1000.0
            self._zones.append((fd, zone.idle_c, zone.c_per_w, 0.0))
            self._temps.append(current)
        self._last_thermal_t: float | None = None
        self._last_scan: float | None = None
        self._state: PowerState | None = None
        self._rail_names = self.model.rail_names
        self.last_power_w: dict[str, float] = {}
        self.last_load = 0.0

    def _load(self) -> float:
        text = self.load_override.text()
        if text != "host":
            try:
                return min(1.0, max(0.0, float(text)))
            except ValueError:
                pass
        if self._host is None:
            self._host = HostLoad()
        return self._host.utilisation()

    def state(self, load: float) -> PowerState:
        """Update the clocks from the knob files and return the power-model state."""
        clusters: list[ClusterState] = []
        online: list[int] = []
        for c in self.clusters:
            cpus = c.online_cpus()
            online += cpus
            clusters.append(ClusterState(c.update(load), c.top, len(cpus)))
        self.online_list.put(format_cpu_list(online))
        return PowerState(
            clusters=tuple(clusters),
            gpu_freq_hz=self.gpu.update(load),
            gpu_top_hz=self.gpu.top,
            emc_freq_hz=self.emc.update(load),
            emc_top_hz=self.emc.top,
            load=load,
            gpu_active_share=self.gpu.active_share(),
        )

    def tick(
        self,
        now: float | None = None,
        *,
        load: float | None = None,
        noise: bool = True,
        rescan: bool | None = None,
    ) -> None:
        """Advance one step: clocks, rails, ground truth, temperatures.

        Knob files are re-read on the first tick and then at most every ``KNOB_PERIOD_S``
        (like the kernel's DVFS polling); ``rescan`` forces (True) or skips (False) that.
        """
        started = time.monotonic()
        due = self._last_scan is None or started - self._last_scan >= KNOB_PERIOD_S
        self._files.scan = due if rescan is None else rescan
        if self._files.scan:
            self._last_scan = started
        u = self._load() if load is None else load
        self.last_load = u
        state = self._state
        if state is None or self._files.scan or u != state.load:
            # Clocks can only move when a knob was re-read or the load changed.
            state = self._state = self.state(u)
        rng = self._rng.uniform
        jitter = [rng(-1.0, 1.0) for _ in self._rail_names] if noise else None
        power = rail_power_w(self.model, state, jitter)
        t = time.monotonic() if now is None else now
        shown = self.rails.write(list(power.values()))
        self.truth.update(t, shown)
        self.last_power_w = dict(zip(self._rail_names, shown, strict=True))
        self._thermal(t, total_power_w(self.model, self.last_power_w))

    def _thermal(self, t: float, total_w: float) -> None:
        if self._last_thermal_t is not None and t - self._last_thermal_t < THERMAL_PERIOD_S:
            return
        dt = 0.0 if self._last_thermal_t is None else t - self._last_thermal_t
        self._last_thermal_t = t
        share = min(1.0, dt / THERMAL_TAU_S)
        for i, (fd, idle_c, c_per_w, _) in enumerate(self._zones):
            target = idle_c + c_per_w * total_w
            temp = self._temps[i] + (target - self._temps[i]) * share
            self._temps[i] = temp
            os.pwrite(fd, live_bytes(round(temp * 1000)), 0)

    def close(self) -> None:
        """Close every file and release the tree's lock."""
        self.rails.close()
        self.truth.close()
        for fd, _, _, _ in self._zones:
            os.close(fd)
        self._zones = []
        if self._host is not None:
            self._host.close()
            self._host = None
        self._files.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def run(
    root: Path,
    *,
    stop: threading.Event | None = None,
    duration_s: float | None = None,
    seed: int | None = None,
    parent_pid: int | None = None,
    remove_when_orphaned: bool = False,
) -> None:
    """Animate the virtual board under ``root`` until ``stop`` is set or ``duration_s`` passed.

    Ticks every ``update_interval_ms`` of the tree's marker; a late tick is not made up
    (no bursts). With ``parent_pid`` it also stops when that process is gone (a SIGKILLed
    pytest must not leave a simulator behind) and then, with ``remove_when_orphaned``,
    deletes the tree it animated. Raises :class:`NotAVirtualBoard` or
    :class:`SimAlreadyRunning`.
    """
    if duration_s is not None and duration_s < 0:
        raise ValueError(f"duration_s must be >= 0 seconds, got {duration_s}")
    animator = Animator(Path(root), seed=seed)
    try:
        interval = animator.interval_s
        start = time.monotonic()
        end = start + duration_s if duration_s is not None else None
        next_t = start
        next_parent_check = start
        orphaned = False
        while stop is None or not stop.is_set():
            animator.tick()
            now = time.monotonic()
            if end is not None and now >= end:
                break
            if parent_pid is not None and now >= next_parent_check:
                next_parent_check = now + PARENT_CHECK_S
                if os.getppid() != parent_pid:
                    orphaned = True
                    break
            next_t += interval
            if next_t < now:
                next_t = now
            wait = next_t - now
            if end is not None:
                wait = min(wait, end - now)
            if stop is not None:
                if stop.wait(wait):
                    break
            elif wait > 0:
                time.sleep(wait)
    finally:
        animator.close()
    if orphaned and remove_when_orphaned:
        shutil.rmtree(root, ignore_errors=True)


PARENT_CHECK_S = 0.2
"""How often an animating child checks that the process that started it still exists."""


class SimProcess:
    """Run ``python -m pytest_edgeenergy.sim run ROOT`` in a child process.

    Entering starts it and waits until the ground truth shows a first tick; leaving sends
    SIGTERM, then SIGKILL if it has not exited within ``stop_timeout_s``.
    """

    def __init__(
        self,
        root: Path,
        *,
        start_timeout_s: float = 20.0,
        stop_timeout_s: float = 5.0,
        seconds: float | None = None,
        owns_tree: bool = False,
    ) -> None:
        self.root = Path(root)
        self.owns_tree = owns_tree
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.seconds = seconds
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "pytest_edgeenergy.sim", "run", str(self.root)]
        if self.seconds is not None:
            cmd += ["--seconds", str(self.seconds)]
        cmd += ["--parent-pid", str(os.getpid())]
        if self.owns_tree:
            cmd.append("--remove-when-orphaned")
        return cmd

    def start(self) -> None:
        """Start the child and wait for its first tick; :class:`SimStartError` on failure."""
        read_marker(self.root)
        started = time.monotonic()
        env = dict(os.environ)
        package_parent = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_parent, env.get("PYTHONPATH", "")) if p
        )
        self._stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop())
            prefix="edgeenergy-sim-", suffix=".log"
        )
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=env,
        )
        deadline = started + self.start_timeout_s
        while True:
            with contextlib.suppress(TruthUnavailable):
                if read_truth(self.root).t_s > started:
                    return
            if self.process.poll() is not None:
                raise SimStartError(
                    f"simulator for {self.root} exited with status {self.process.returncode}"
                    f": {self._stderr_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise SimStartError(
                    f"simulator for {self.root} showed no tick within {self.start_timeout_s} s"
                    f": {self._stderr_tail()}"
                )
            time.sleep(0.01)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        text = Path(self._stderr.name).read_text(errors="replace").strip()
        return text[-2000:] or "(no output)"

    def stop(self) -> int | None:
        """Terminate the child (SIGTERM, then SIGKILL); returns its exit status."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return proc.returncode

    def __enter__(self) -> SimProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
