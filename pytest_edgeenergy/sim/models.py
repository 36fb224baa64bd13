"""Per-model facts of the virtual Jetson boards: data only.

Every path is relative to the board's root and spelled like on the real board (no leading
slash). Values marked "assumption" in a comment were not found in the project's reference
(``shared/reference/jetson-sysfs.md``) and are plausible stand-ins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..board.generations import MODEL_NAMES as MODEL_NAMES
from ..errors import EdgeEnergyError

ChipDriver = Literal["ina3221x", "ina3221", "ina238"]
EmcStyle = Literal["t210", "bpmp", "bwmgr"]
TegrastatsStyle = Literal["l4t32", "jp5", "jp6", "jp7"]
ParamType = Literal["FILE", "CLOCK"]

NC = "NC"
"""Label of a monitor channel that is not connected."""


class UnknownBoardModel(EdgeEnergyError, ValueError):
    """A virtual board model name that does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown virtual board model {name!r}: expected one of {', '.join(MODEL_NAMES)}"
        )
        self.name = name


@dataclass(frozen=True)
class RailSpec:
    """One measured rail: which power-model domains it carries and its bus voltage."""

    name: str
    domains: tuple[str, ...]
    """Domains of :class:`PowerCoefficients` summed into this rail; empty for the total."""
    voltage_mv: int


@dataclass(frozen=True)
class ChipSpec:
    """One power-monitor chip on an I2C bus."""

    driver: ChipDriver
    bus: int
    address: int
    controller: str
    """The I2C controller's device directory, e.g. ``sys/devices/platform/bus@0/c240000.i2c``."""
    index: int
    """``iio:deviceN`` (iio) or ``hwmonN`` (hwmon) number."""
    channels: tuple[str, ...]
    """Rail name per channel in channel order; :data:`NC` for an unconnected channel."""
    shunt_uohm: int = 5000

    @property
    def device(self) -> str:
        return f"{self.bus}-{self.address:04x}"

    @property
    def device_dir(self) -> str:
        return f"{self.controller}/i2c-{self.bus}/{self.device}"

    @property
    def layout(self) -> Literal["iio", "hwmon"]:
        return "iio" if self.driver == "ina3221x" else "hwmon"

    @property
    def data_dir(self) -> str:
        """The directory holding the value files."""
        if self.layout == "iio":
            return f"{self.device_dir}/iio:device{self.index}"
        return f"{self.device_dir}/hwmon/hwmon{self.index}"

    @property
    def first_channel(self) -> int:
        """Channel number of the first channel in file names (iio 0, hwmon 1)."""
        return 0 if self.layout == "iio" else 1


@dataclass(frozen=True)
class ClusterSpec:
    """One cpufreq policy: the CPUs it drives and its frequency table (kHz)."""

    cpus: tuple[int, ...]
    freqs_khz: tuple[int, ...]
    core: str

    @property
    def policy(self) -> int:
        return self.cpus[0]


@dataclass(frozen=True)
class GpuSpec:
    """Where the GPU's devfreq and device files live, and what it offers."""

    devfreq_dir: str
    """Real devfreq directory (files ``available_frequencies``, ``min_freq`` ...)."""
    device_dir: str
    """Real device directory (``load``, ``railgate_enable``, ``tpc_pg_mask``, ``of_node``)."""
    power_dir: str
    """Real directory holding ``power/control``."""
    links: tuple[tuple[str, str], ...]
    """(link, target) pairs, both relative to the root; written as relative symlinks."""
    conf_devfreq: str
    """Devfreq directory as named in nvpmodel.conf (absolute board path)."""
    conf_device: str
    """Directory of ``tpc_pg_mask``/``fbp_pg_mask`` as named in nvpmodel.conf."""
    conf_power_control: str
    """``power/control`` file as named in nvpmodel.conf."""
    freqs_hz: tuple[int, ...]
    governors: tuple[str, ...]
    governor: str
    of_name: str
    of_compatible: tuple[str, ...]
    tpcs: int = 0
    """Number of TPCs; 0 when the board has no ``tpc_pg_mask`` file."""
    has_fbp_mask: bool = False
    has_load: bool = True
    has_railgate: bool = True
    has_3d_scaling: bool = False


@dataclass(frozen=True)
class EmcSpec:
    """External memory controller clock: interface style, rates (Hz), nvpmodel cap file."""

    style: EmcStyle
    rates_hz: tuple[int, ...]
    cap_path: str
    conf_type: ParamType

    @property
    def files_dir(self) -> str:
        if self.style == "bpmp":
            return "sys/kernel/debug/bpmp/debug/clk/emc"
        if self.style == "t210":
            return "sys/kernel/debug/clk/override.emc"
        return "sys/devices/virtual/devfreq/bwmgr"


@dataclass(frozen=True)
class ThermalZoneSpec:
    """One thermal zone; its temperature follows total power slowly."""

    type: str
    idle_c: float
    c_per_w: float = 0.0
    fixed_c: float | None = None
    """A constant reading (``PMIC-Die`` 100 °C placeholder, ``-256`` for a gated block)."""


@dataclass(frozen=True)
class ModeSpec:
    """One nvpmodel power mode. ``-1`` means the offered maximum, ``0`` minimum / no cap."""

    id: int
    name: str
    online: tuple[int, ...]
    cpu_max_khz: tuple[int, ...]
    """Per cluster (same order as :attr:`BoardModel.clusters`)."""
    cpu_min_khz: int = 0
    gpu_max_hz: int = -1
    gpu_min_hz: int = 0
    emc_max_hz: int = 0
    tpc_pg_mask: int | None = None
    fbp_pg_mask: int | None = None


@dataclass(frozen=True)
class PowerCoefficients:
    """Power model coefficients (W). See :mod:`pytest_edgeenergy.sim.power`."""

    cpu_base_w: float
    core_idle_w: float
    core_dyn_w: float
    """Per online core at the top CPU frequency and full load."""
    gpu_idle_w: float
    gpu_dyn_w: float
    """At the top GPU frequency, all TPCs active and full load."""
    soc_w: float
    soc_emc_w: float
    """Extra SOC power at the top EMC rate."""
    ddr_w: float
    ddr_dyn_w: float
    """Extra DRAM power at the top EMC rate and full load."""
    cv_w: float = 0.0
    io_w: float = 0.0
    carrier_w: float = 0.0
    """Unmeasured part seen only by the total-input rail."""
    regulator_efficiency: float = 0.85


@dataclass(frozen=True)
class BoardModel:
    """Everything the simulator needs to write and animate one Jetson model."""

    name: str
    soc: str
    l4t: str
    release_lines: tuple[str, ...]
    """``/etc/nv_tegra_release`` lines."""
    kernel: str
    dt_model: str
    dt_compatible: tuple[str, ...]
    module: str
    ram_kb: int
    swap_kb: int
    cpu_count: int
    clusters: tuple[ClusterSpec, ...]
    cpu_params: tuple[tuple[str, int], ...]
    """nvpmodel CPU clock PARAM names and the CPU whose cpufreq files each one names."""
    cpu_governors: tuple[str, ...]
    cpu_governor: str
    idle_states: tuple[str, ...]
    gpu: GpuSpec
    emc: EmcSpec
    thermal: tuple[ThermalZoneSpec, ...]
    chips: tuple[ChipSpec, ...]
    rails: tuple[RailSpec, ...]
    total_rail: str | None
    modes: tuple[ModeSpec, ...]
    default_mode: int
    coefficients: PowerCoefficients
    tegrastats: TegrastatsStyle
    tegrastats_rails: tuple[str, ...] = ()
    """Order of rails in tegrastats lines; empty = chip channel order (NC included)."""

    @property
    def l4t_major(self) -> int:
        return int(self.l4t.split(".")[0])

    @property
    def rail_names(self) -> tuple[str, ...]:
        """Connected rails in chip/channel order."""
        return tuple(c for chip in self.chips for c in chip.channels if c != NC)

    def rail(self, name: str) -> RailSpec:
        for rail in self.rails:
            if rail.name == name:
                return rail
        raise KeyError(f"{self.name}: no rail {name!r} (rails: {', '.join(self.rail_names)})")

    def mode(self, mode_id: int) -> ModeSpec:
        for mode in self.modes:
            if mode.id == mode_id:
                return mode
        raise KeyError(f"{self.name}: no power mode {mode_id}")

    def cluster_of(self, cpu: int) -> ClusterSpec:
        for cluster in self.clusters:
            if cpu in cluster.cpus:
                return cluster
        raise KeyError(f"{self.name}: cpu{cpu} is in no cluster")


def _steps(first: int, step: int, last: int) -> tuple[int, ...]:
    return tuple(range(first, last + 1, step))


# ---------------------------------------------------------------------------------------
# Shared tables
# ---------------------------------------------------------------------------------------

_NANO_CPU_KHZ = (
    102000, 204000, 307200, 403200, 518400, 614400, 710400, 825600, 921600,
    1036800, 1132800, 1224000, 1326000, 1428000, 1479000,
)  # fmt: skip
_NANO_GPU_HZ = _steps(76800000, 76800000, 921600000)
_TX2_CPU_KHZ = _steps(345600, 153600, 2035200)
_TX2_GPU_HZ = (
    114750000, 216750000, 318750000, 420750000, 522750000, 624750000, 726750000,
    854250000, 930750000, 1032750000, 1122000000, 1236750000, 1300500000,
)  # fmt: skip
_XNX_CPU_KHZ = (*_steps(115200, 76800, 1881600), 1907200)
_XNX_GPU_HZ = (
    114750000, 204000000, 306000000, 408000000, 510000000, 599250000, 701250000,
    752250000, 803250000, 854250000, 905250000, 956250000, 1007250000, 1058250000,
    1109250000,
)  # fmt: skip
_AGXX_CPU_KHZ = _steps(115200, 76800, 2265600)
_AGXX_GPU_HZ = (
    114750000, 216750000, 318750000, 420750000, 522750000, 624750000, 675750000,
    828750000, 905250000, 1032750000, 1198500000, 1236750000, 1338750000, 1377000000,
)  # fmt: skip
_ORIN_NANO_CPU_KHZ = _steps(115200, 76800, 1728000)
_ORIN_NX_CPU_KHZ = (*_steps(115200, 76800, 1958400), 1984000)
_AGXO_CPU_KHZ = (*_steps(115200, 76800, 2188800), 2201600)
_AGXO_GPU_HZ = (
    114750000, 216750000, 318750000, 420750000, 522750000, 624750000, 726750000,
    828750000, 930750000, 1032750000, 1134750000, 1236750000, 1300500000,
)  # fmt: skip
_ORIN_NANO_GPU_HZ = _steps(306000000, 102000000, 1020000000)
# Orin NX 16GB in its "Super" configuration: the 7 studied steps plus 1173 MHz (MAXN_SUPER/40W).
_ORIN_NX_GPU_HZ = (*_steps(306000000, 102000000, 918000000), 1173000000)
# Thor tables are assumptions (only the 2.6 GHz / 1.575 GHz maxima are public knowledge).
_THOR_CPU_KHZ = (
    972000, 1190400, 1420800, 1651200, 1881600, 2112000, 2342400, 2572800, 2601000,
)  # fmt: skip
_THOR_GPU_HZ = (*_steps(306000000, 102000000, 1530000000), 1575000000)

_T210_EMC_HZ = (
    204000000, 408000000, 665600000, 800000000, 1065600000, 1331200000, 1600000000,
)  # fmt: skip
_T186_EMC_HZ = (
    40800000, 204000000, 408000000, 665600000, 800000000, 1062400000, 1331200000,
    1600000000, 1866000000,
)  # fmt: skip
_XNX_EMC_HZ = (204000000, 408000000, 665600000, 800000000, 1065600000, 1331200000, 1600000000,
               1866000000)  # fmt: skip
_AGXX_EMC_HZ = (
    204000000, 408000000, 665600000, 800000000, 1065600000, 1331200000, 1600000000,
    1866000000, 2133000000,
)  # fmt: skip
_ORIN_EMC_HZ = (204000000, 665600000, 2133000000, 3199000000)
# Thor: min 665.6 MHz and max 4266 MHz as jetson_clocks --show prints them; steps assumed.
_THOR_EMC_HZ = (665600000, 2133000000, 3199000000, 4266000000)

_GOV_L4T32 = ("interactive", "conservative", "ondemand", "userspace", "powersave", "performance",
              "schedutil")  # fmt: skip
_GOV_ORIN = ("conservative", "ondemand", "userspace", "powersave", "performance", "schedutil")
_GPU_GOV_OLD = ("wmark_active", "wmark_simple", "nvhost_podgov", "userspace", "performance",
                "simple_ondemand")  # fmt: skip
_GPU_GOV_ORIN = ("userspace", "performance", "simple_ondemand", "nvhost_podgov")

_L4T32_LIB_LINES = (
    "4b5a5f4a4f0cf6e8e1b4a6a6fbd0c2c3d1e54a12 */usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1",
    "1f4c5f3f0a0b9e4a78a76e0e2ee3f2f11f73f5a7 */usr/lib/aarch64-linux-gnu/tegra/libnvbuf_utils.so",
    "6b1f3d52d5c2c4d1a4e65a0d2b1b0f1f5c0a8e4e */usr/lib/aarch64-linux-gnu/tegra/libnvos.so",
)
_ORIN_RELEASE_TAIL = (
    "# KERNEL_VARIANT: oot",
    "TARGET_USERSPACE_LIB_DIR=nvidia",
    "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia",
)

# ---------------------------------------------------------------------------------------
# GPU layouts per generation
# ---------------------------------------------------------------------------------------


def _gpu_old(
    node: str,
    of_name: str,
    compatible: tuple[str, ...],
    freqs: tuple[int, ...],
    tpcs: int,
    three_d: bool,
) -> GpuSpec:
    """T210/T186/T194 layout: ``/sys/devices/<node>`` with ``gpu.0`` pointing at it."""
    dev = f"sys/devices/{node}"
    return GpuSpec(
        devfreq_dir=f"{dev}/devfreq/{node}",
        device_dir=dev,
        power_dir=dev,
        links=(
            ("sys/devices/gpu.0", dev),
            ("sys/devices/platform/gpu.0", dev),
            (f"sys/class/devfreq/{node}", f"{dev}/devfreq/{node}"),
            (f"{dev}/devfreq/{node}/device", dev),
        ),
        conf_devfreq=f"/sys/devices/gpu.0/devfreq/{node}",
        conf_device="/sys/devices/gpu.0",
        conf_power_control="/sys/devices/gpu.0/power/control",
        freqs_hz=freqs,
        governors=_GPU_GOV_OLD,
        governor="nvhost_podgov",
        of_name=of_name,
        of_compatible=compatible,
        tpcs=tpcs,
        has_3d_scaling=three_d,
    )


_GPU_NANO = _gpu_old(
    "57000000.gpu", "gpu", ("nvidia,tegra210-gm20b", "nvidia,gm20b"), _NANO_GPU_HZ, 0, True
)
_GPU_TX2 = _gpu_old("17000000.gp10b", "gp10b", ("nvidia,gp10b",), _TX2_GPU_HZ, 0, True)
_GPU_XNX = _gpu_old("17000000.gv11b", "gv11b", ("nvidia,gv11b",), _XNX_GPU_HZ, 3, True)
_GPU_AGXX = _gpu_old("17000000.gv11b", "gv11b", ("nvidia,gv11b",), _AGXX_GPU_HZ, 4, True)

_GPU_AGXO = GpuSpec(
    devfreq_dir="sys/devices/17000000.ga10b/devfreq/17000000.ga10b",
    device_dir="sys/devices/17000000.ga10b",
    power_dir="sys/devices/17000000.ga10b",
    links=(
        (
            "sys/devices/17000000.ga10b/devfreq_dev",
            "sys/devices/17000000.ga10b/devfreq/17000000.ga10b",
        ),
        ("sys/devices/gpu.0", "sys/devices/17000000.ga10b"),
        ("sys/devices/platform/gpu.0", "sys/devices/17000000.ga10b"),
        ("sys/class/devfreq/17000000.ga10b", "sys/devices/17000000.ga10b/devfreq/17000000.ga10b"),
        ("sys/devices/17000000.ga10b/devfreq/17000000.ga10b/device", "sys/devices/17000000.ga10b"),
    ),
    conf_devfreq="/sys/devices/17000000.ga10b/devfreq/17000000.ga10b",
    conf_device="/sys/devices/gpu.0",
    conf_power_control="/sys/devices/gpu.0/power/control",
    freqs_hz=_AGXO_GPU_HZ,
    governors=_GPU_GOV_ORIN,
    governor="nvhost_podgov",
    of_name="ga10b",
    of_compatible=("nvidia,ga10b",),
    tpcs=8,
    has_3d_scaling=True,
)


def _gpu_orin_jp6(freqs: tuple[int, ...], tpcs: int) -> GpuSpec:
    dev = "sys/devices/platform/bus@0/17000000.gpu"
    devfreq = f"{dev}/devfreq/17000000.gpu"
    return GpuSpec(
        devfreq_dir=devfreq,
        device_dir=dev,
        power_dir=dev,
        links=(
            ("sys/devices/platform/17000000.gpu", dev),
            (f"{dev}/devfreq_dev", devfreq),
            ("sys/devices/platform/gpu.0", dev),
            ("sys/devices/gpu.0", dev),
            ("sys/class/devfreq/17000000.gpu", devfreq),
            (f"{devfreq}/device", dev),
        ),
        conf_devfreq="/sys/devices/platform/17000000.gpu/devfreq_dev",
        conf_device="/sys/devices/platform/gpu.0",
        conf_power_control="/sys/devices/platform/gpu.0/power/control",
        freqs_hz=freqs,
        governors=_GPU_GOV_ORIN,
        governor="nvhost_podgov",
        of_name="gpu",
        of_compatible=("nvidia,ga10b",),
        tpcs=tpcs,
        has_fbp_mask=True,
    )


_THOR_PCI = "sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0"
_GPU_THOR = GpuSpec(
    devfreq_dir="sys/devices/virtual/devfreq/gpu-gpc-0",
    device_dir="sys/devices/virtual/devfreq/gpu-gpc-0",
    power_dir=_THOR_PCI,
    links=(
        ("sys/class/devfreq/gpu-gpc-0", "sys/devices/virtual/devfreq/gpu-gpc-0"),
        ("sys/bus/pci/devices/0000:01:00.0", _THOR_PCI),
    ),
    conf_devfreq="/sys/class/devfreq/gpu-gpc-0",
    conf_device="/sys/class/devfreq/gpu-gpc-0",
    conf_power_control="/sys/bus/pci/devices/0000:01:00.0/power/control",
    freqs_hz=_THOR_GPU_HZ,
    governors=_GPU_GOV_ORIN,
    governor="nvhost_podgov",
    of_name="gpu",
    of_compatible=("nvidia,gb10b",),
    has_load=False,
    has_railgate=False,
)

# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

_T210_I2C = "sys/devices/7000c400.i2c"
_T186_I2C = "sys/devices/3160000.i2c"
_T194_I2C_NX = "sys/devices/31c0000.i2c"
_T194_I2C = "sys/devices/c240000.i2c"
_T234_I2C = "sys/devices/platform/bus@0/c240000.i2c"
_T264_I2C = "sys/devices/platform/bus@0/c250000.i2c"  # assumption


def _zones(*spec: tuple[str, float, float]) -> tuple[ThermalZoneSpec, ...]:
    return tuple(ThermalZoneSpec(t, idle, k) for t, idle, k in spec)


_PMIC = ThermalZoneSpec("PMIC-Die", 100.0, fixed_c=100.0)


def _offline(zone_type: str) -> ThermalZoneSpec:
    return ThermalZoneSpec(zone_type, -256.0, fixed_c=-256.0)


NANO = BoardModel(
    name="nano",
    soc="tegra210",
    l4t="32.7.4",
    release_lines=(
        "# R32 (release), REVISION: 7.4, GCID: 33514132, BOARD: t210ref, EABI: aarch64, "
        "DATE: Fri Jun  9 04:25:08 UTC 2023",
        *_L4T32_LIB_LINES,
    ),
    kernel="4.9.337-tegra",
    dt_model="NVIDIA Jetson Nano Developer Kit",
    dt_compatible=("nvidia,p3450-0000", "nvidia,jetson-nano", "nvidia,tegra210"),
    module="p3448-0000",
    ram_kb=4059136,
    swap_kb=2029568,
    cpu_count=4,
    clusters=(ClusterSpec((0, 1, 2, 3), _NANO_CPU_KHZ, "cortex-a57"),),
    cpu_params=(("CPU_A57", 0),),
    cpu_governors=_GOV_L4T32,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_GPU_NANO,
    emc=EmcSpec("t210", _T210_EMC_HZ, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "FILE"),
    thermal=(
        ThermalZoneSpec("PLL-therm", 30.0, 0.9),
        ThermalZoneSpec("CPU-therm", 31.0, 1.2),
        _PMIC,
        ThermalZoneSpec("GPU-therm", 30.5, 1.3),
        ThermalZoneSpec("AO-therm", 33.0, 0.8),
        ThermalZoneSpec("thermal-fan-est", 31.0, 1.0),
    ),
    chips=(ChipSpec("ina3221x", 6, 0x40, _T210_I2C, 0, ("POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU")),),
    rails=(
        RailSpec("POM_5V_IN", (), 5080),
        RailSpec("POM_5V_GPU", ("gpu",), 5048),
        RailSpec("POM_5V_CPU", ("cpu",), 5048),
    ),
    total_rail="POM_5V_IN",
    modes=(
        ModeSpec(0, "MAXN", (0, 1, 2, 3), (-1,)),
        ModeSpec(1, "5W", (0, 1), (918000,), gpu_max_hz=640000000, emc_max_hz=1600000000),
    ),
    default_mode=0,
    coefficients=PowerCoefficients(
        cpu_base_w=0.05,
        core_idle_w=0.03,
        core_dyn_w=0.36,
        gpu_idle_w=0.05,
        gpu_dyn_w=4.4,
        soc_w=0.42,
        soc_emc_w=0.25,
        ddr_w=0.22,
        ddr_dyn_w=0.45,
        io_w=0.05,
        carrier_w=0.3,
    ),
    tegrastats="l4t32",
)

TX2 = BoardModel(
    name="tx2",
    soc="tegra186",
    l4t="32.7.4",
    release_lines=(
        "# R32 (release), REVISION: 7.4, GCID: 33514132, BOARD: t186ref, EABI: aarch64, "
        "DATE: Fri Jun  9 04:25:08 UTC 2023",
        *_L4T32_LIB_LINES,
    ),
    kernel="4.9.337-tegra",
    dt_model="quill",
    dt_compatible=("nvidia,p2771-0000", "nvidia,tegra186"),
    module="p3310-1000",
    ram_kb=8042496,
    swap_kb=4021248,
    cpu_count=6,
    clusters=(
        ClusterSpec((0, 3, 4, 5), _TX2_CPU_KHZ, "cortex-a57"),
        ClusterSpec((1, 2), _TX2_CPU_KHZ, "denver2"),
    ),
    cpu_params=(("CPU_A57", 0), ("CPU_DENVER", 1)),
    cpu_governors=_GOV_L4T32,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_GPU_TX2,
    emc=EmcSpec("bpmp", _T186_EMC_HZ, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "FILE"),
    thermal=(
        ThermalZoneSpec("BCPU-therm", 31.0, 1.0),
        ThermalZoneSpec("MCPU-therm", 31.0, 1.0),
        ThermalZoneSpec("GPU-therm", 29.0, 1.1),
        ThermalZoneSpec("PLL-therm", 30.5, 0.8),
        ThermalZoneSpec("Tboard_tegra", 26.0, 0.3),
        ThermalZoneSpec("Tdiode_tegra", 27.0, 0.6),
        _PMIC,
        ThermalZoneSpec("thermal-fan-est", 29.2, 0.9),
    ),
    # Bus/addresses are an assumption (0-0040 / 0-0041 on the module).
    chips=(
        ChipSpec("ina3221x", 0, 0x40, _T186_I2C, 0, ("VDD_GPU", "VDD_SOC", "VDD_WIFI")),
        ChipSpec("ina3221x", 0, 0x41, _T186_I2C, 1, ("VDD_IN", "VDD_CPU", "VDD_DDR")),
    ),
    rails=(
        RailSpec("VDD_GPU", ("gpu",), 19104),
        RailSpec("VDD_SOC", ("soc",), 19104),
        RailSpec("VDD_WIFI", ("io",), 19104),
        RailSpec("VDD_IN", (), 19112),
        RailSpec("VDD_CPU", ("cpu",), 19104),
        RailSpec("VDD_DDR", ("ddr",), 19104),
    ),
    total_rail="VDD_IN",
    modes=(
        ModeSpec(0, "MAXN", (0, 1, 2, 3, 4, 5), (-1, -1)),
        ModeSpec(
            1, "MAXQ", (0, 3, 4, 5), (1267200, 1267200), gpu_max_hz=854250000, emc_max_hz=1600000000
        ),
        ModeSpec(
            2,
            "MAXP_CORE_ALL",
            (0, 1, 2, 3, 4, 5),
            (1420800, 1420800),
            gpu_max_hz=1122000000,
            emc_max_hz=1866000000,
        ),
        ModeSpec(
            3,
            "MAXP_CORE_ARM",
            (0, 3, 4, 5),
            (2035200, 2035200),
            gpu_max_hz=1122000000,
            emc_max_hz=1866000000,
        ),
        ModeSpec(
            4,
            "MAXP_CORE_DENVER",
            (0, 1, 2),
            (2035200, 2035200),
            gpu_max_hz=1122000000,
            emc_max_hz=1866000000,
        ),
    ),
    default_mode=3,
    coefficients=PowerCoefficients(
        cpu_base_w=0.06,
        core_idle_w=0.02,
        core_dyn_w=0.55,
        gpu_idle_w=0.07,
        gpu_dyn_w=6.5,
        soc_w=0.36,
        soc_emc_w=0.3,
        ddr_w=0.18,
        ddr_dyn_w=0.7,
        io_w=0.33,
        carrier_w=0.25,
    ),
    tegrastats="l4t32",
    tegrastats_rails=("VDD_IN", "VDD_CPU", "VDD_GPU", "VDD_SOC", "VDD_WIFI", "VDD_DDR"),
)

_XNX_CORE_MAX = 1907200
XAVIER_NX = BoardModel(
    name="xavier-nx",
    soc="tegra194",
    l4t="32.7.4",
    release_lines=(
        "# R32 (release), REVISION: 7.4, GCID: 33514132, BOARD: t186ref, EABI: aarch64, "
        "DATE: Fri Jun  9 04:25:08 UTC 2023",
        *_L4T32_LIB_LINES,
    ),
    kernel="4.9.337-tegra",
    dt_model="NVIDIA Jetson Xavier NX Developer Kit",
    dt_compatible=("nvidia,p3509-0000+p3668-0000", "nvidia,jetson-xavier-nx", "nvidia,tegra194"),
    module="p3668-0000",
    ram_kb=7950932,
    swap_kb=3975464,
    cpu_count=6,
    clusters=(
        ClusterSpec((0, 1), _XNX_CPU_KHZ, "carmel"),
        ClusterSpec((2, 3), _XNX_CPU_KHZ, "carmel"),
        ClusterSpec((4, 5), _XNX_CPU_KHZ, "carmel"),
    ),
    cpu_params=(("CPU_DENVER_0", 0), ("CPU_DENVER_1", 2), ("CPU_DENVER_2", 4)),
    cpu_governors=_GOV_L4T32,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_GPU_XNX,
    emc=EmcSpec("bpmp", _XNX_EMC_HZ, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "FILE"),
    thermal=(
        ThermalZoneSpec("AO-therm", 33.0, 0.5),
        ThermalZoneSpec("GPU-therm", 32.0, 0.9),
        _PMIC,
        ThermalZoneSpec("AUX-therm", 32.5, 0.6),
        ThermalZoneSpec("CPU-therm", 33.0, 0.9),
        ThermalZoneSpec("thermal-fan-est", 32.5, 0.8),
    ),
    chips=(
        ChipSpec("ina3221x", 7, 0x40, _T194_I2C_NX, 0, ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")),
    ),
    rails=(
        RailSpec("VDD_IN", (), 5048),
        RailSpec("VDD_CPU_GPU_CV", ("cpu", "gpu", "cv"), 5040),
        RailSpec("VDD_SOC", ("soc",), 5040),
    ),
    total_rail="VDD_IN",
    modes=(
        ModeSpec(0, "MODE_15W_2CORE", (0, 1), (_XNX_CORE_MAX,) * 3, emc_max_hz=1600000000),
        ModeSpec(1, "MODE_15W_4CORE", (0, 1, 2, 3), (1420800,) * 3, emc_max_hz=1600000000),
        ModeSpec(2, "MODE_15W_6CORE", (0, 1, 2, 3, 4, 5), (1420800,) * 3, emc_max_hz=1600000000),
        ModeSpec(
            3, "MODE_10W_2CORE", (0, 1), (1497600,) * 3, gpu_max_hz=803250000, emc_max_hz=1600000000
        ),
        ModeSpec(
            4,
            "MODE_10W_4CORE",
            (0, 1, 2, 3),
            (1190400,) * 3,
            gpu_max_hz=803250000,
            emc_max_hz=1600000000,
        ),
        ModeSpec(
            5,
            "MODE_10W_DESKTOP",
            (0, 1, 2, 3),
            (1190400,) * 3,
            gpu_max_hz=599250000,
            emc_max_hz=1600000000,
        ),
        ModeSpec(6, "MODE_20W_2CORE", (0, 1), (_XNX_CORE_MAX,) * 3),
        ModeSpec(7, "MODE_20W_4CORE", (0, 1, 2, 3), (1497600,) * 3),
        ModeSpec(8, "MODE_20W_6CORE", (0, 1, 2, 3, 4, 5), (1420800,) * 3),
    ),
    default_mode=2,
    coefficients=PowerCoefficients(
        cpu_base_w=0.15,
        core_idle_w=0.04,
        core_dyn_w=0.75,
        gpu_idle_w=0.1,
        gpu_dyn_w=6.0,
        soc_w=1.05,
        soc_emc_w=0.8,
        ddr_w=0.45,
        ddr_dyn_w=0.9,
        cv_w=0.02,
        io_w=0.15,
        carrier_w=0.6,
    ),
    tegrastats="l4t32",
)

_AGXX_ALL = (0, 1, 2, 3, 4, 5, 6, 7)
AGX_XAVIER = BoardModel(
    name="agx-xavier",
    soc="tegra194",
    l4t="32.7.4",
    release_lines=(
        "# R32 (release), REVISION: 7.4, GCID: 33514132, BOARD: t186ref, EABI: aarch64, "
        "DATE: Fri Jun  9 04:25:08 UTC 2023",
        *_L4T32_LIB_LINES,
    ),
    kernel="4.9.337-tegra",
    dt_model="Jetson-AGX",
    dt_compatible=("nvidia,p2972-0000", "nvidia,galen", "nvidia,tegra194"),
    module="p2888-0001",
    ram_kb=16202752,
    swap_kb=8101376,
    cpu_count=8,
    clusters=tuple(ClusterSpec((c, c + 1), _AGXX_CPU_KHZ, "carmel") for c in (0, 2, 4, 6)),
    cpu_params=tuple((f"CPU_DENVER_{i}", 2 * i) for i in range(4)),
    cpu_governors=_GOV_L4T32,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_GPU_AGXX,
    emc=EmcSpec("bpmp", _AGXX_EMC_HZ, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "FILE"),
    thermal=(
        ThermalZoneSpec("AO-therm", 26.5, 0.2),
        ThermalZoneSpec("GPU-therm", 28.0, 0.35),
        ThermalZoneSpec("iwlwifi", 30.0, 0.05),
        ThermalZoneSpec("Tdiode_tegra", 31.25, 0.3),
        _PMIC,
        ThermalZoneSpec("AUX-therm", 27.0, 0.25),
        ThermalZoneSpec("CPU-therm", 28.0, 0.35),
        ThermalZoneSpec("thermal-fan-est", 27.45, 0.3),
        ThermalZoneSpec("Tboard_tegra", 27.0, 0.1),
    ),
    chips=(
        ChipSpec("ina3221x", 1, 0x40, _T194_I2C, 0, ("GPU", "CPU", "SOC")),
        ChipSpec("ina3221x", 1, 0x41, _T194_I2C, 1, ("CV", "VDDRQ", "SYS5V")),
    ),
    rails=(
        RailSpec("GPU", ("gpu",), 19024),
        RailSpec("CPU", ("cpu",), 19024),
        RailSpec("SOC", ("soc",), 19024),
        RailSpec("CV", ("cv",), 19024),
        RailSpec("VDDRQ", ("ddr",), 19024),
        RailSpec("SYS5V", ("io",), 4992),
    ),
    total_rail=None,
    modes=(
        ModeSpec(0, "MAXN", _AGXX_ALL, (-1,) * 4),
        ModeSpec(
            1, "MODE_10W", (0, 1), (1190400,) * 4, gpu_max_hz=522750000, emc_max_hz=1066000000
        ),
        ModeSpec(
            2, "MODE_15W", (0, 1, 2, 3), (1190400,) * 4, gpu_max_hz=675750000, emc_max_hz=1333000000
        ),
        ModeSpec(
            3,
            "MODE_30W_ALL",
            _AGXX_ALL,
            (1190400,) * 4,
            gpu_max_hz=905250000,
            emc_max_hz=1600000000,
        ),
        ModeSpec(
            4,
            "MODE_30W_6CORE",
            (0, 1, 2, 3, 4, 5),
            (1420800,) * 4,
            gpu_max_hz=905250000,
            emc_max_hz=1600000000,
        ),
        ModeSpec(
            5,
            "MODE_30W_4CORE",
            (0, 1, 2, 3),
            (1804800,) * 4,
            gpu_max_hz=905250000,
            emc_max_hz=1600000000,
        ),
        ModeSpec(
            6, "MODE_30W_2CORE", (0, 1), (2112000,) * 4, gpu_max_hz=905250000, emc_max_hz=1600000000
        ),
        ModeSpec(
            7,
            "MODE_15W_DESKTOP",
            (0, 1, 2, 3),
            (1190400,) * 4,
            gpu_max_hz=675750000,
            emc_max_hz=1333000000,
        ),
    ),
    default_mode=2,
    coefficients=PowerCoefficients(
        cpu_base_w=0.2,
        core_idle_w=0.025,
        core_dyn_w=1.2,
        gpu_idle_w=0.6,
        gpu_dyn_w=14.0,
        soc_w=2.45,
        soc_emc_w=1.0,
        ddr_w=0.17,
        ddr_dyn_w=1.2,
        cv_w=0.0,
        io_w=2.65,
    ),
    tegrastats="l4t32",
)

_ORIN_NANO_ALL = (0, 1, 2, 3, 4, 5)
ORIN_NANO = BoardModel(
    name="orin-nano",
    soc="tegra234",
    l4t="36.4.7",
    release_lines=(
        "# R36 (release), REVISION: 4.7, GCID: 42132812, BOARD: generic, EABI: aarch64, "
        "DATE: Thu Sep 18 22:54:44 UTC 2025",
        *_ORIN_RELEASE_TAIL,
    ),
    kernel="5.15.148-tegra",
    dt_model="NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
    dt_compatible=("nvidia,p3767-0005", "nvidia,tegra234"),
    module="p3767-0005",
    ram_kb=7802880,
    swap_kb=3901440,
    cpu_count=6,
    clusters=(
        ClusterSpec((0, 1, 2, 3), _ORIN_NANO_CPU_KHZ, "cortex-a78ae"),
        ClusterSpec((4, 5), _ORIN_NANO_CPU_KHZ, "cortex-a78ae"),
    ),
    cpu_params=tuple((f"CPU_A78_{i}", i) for i in range(6)),
    cpu_governors=_GOV_ORIN,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_gpu_orin_jp6(_ORIN_NANO_GPU_HZ, 4),
    emc=EmcSpec("bpmp", _ORIN_EMC_HZ, "sys/kernel/nvpmodel_clk_cap/emc", "CLOCK"),
    thermal=(
        ThermalZoneSpec("cpu-thermal", 46.5, 0.9),
        ThermalZoneSpec("soc2-thermal", 45.5, 0.8),
        ThermalZoneSpec("soc0-thermal", 46.0, 0.85),
        ThermalZoneSpec("gpu-thermal", 49.0, 0.95),
        ThermalZoneSpec("tj-thermal", 49.0, 0.95),
        ThermalZoneSpec("soc1-thermal", 47.0, 0.8),
    ),
    chips=(ChipSpec("ina3221", 1, 0x40, _T234_I2C, 1, ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")),),
    rails=(
        RailSpec("VDD_IN", (), 5064),
        RailSpec("VDD_CPU_GPU_CV", ("cpu", "gpu", "cv"), 5056),
        RailSpec("VDD_SOC", ("soc",), 5056),
    ),
    total_rail="VDD_IN",
    modes=(
        ModeSpec(
            0,
            "15W",
            _ORIN_NANO_ALL,
            (1497600, 1497600),
            729600,
            612000000,
            emc_max_hz=2133000000,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            1,
            "25W",
            _ORIN_NANO_ALL,
            (1344000, 1344000),
            729600,
            918000000,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            2,
            "MAXN_SUPER",
            _ORIN_NANO_ALL,
            (-1, -1),
            729600,
            -1,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            3,
            "7W",
            (0, 1, 2, 3),
            (960000, 960000),
            729600,
            408000000,
            emc_max_hz=2133000000,
            tpc_pg_mask=252,
            fbp_pg_mask=2,
        ),
    ),
    default_mode=1,
    coefficients=PowerCoefficients(
        cpu_base_w=0.1,
        core_idle_w=0.03,
        core_dyn_w=0.45,
        gpu_idle_w=0.12,
        gpu_dyn_w=7.5,
        soc_w=1.45,
        soc_emc_w=1.5,
        ddr_w=0.35,
        ddr_dyn_w=0.9,
        cv_w=0.0,
        io_w=0.1,
        carrier_w=1.6,
    ),
    tegrastats="jp6",
)

_ORIN_NX_ALL = (0, 1, 2, 3, 4, 5, 6, 7)
ORIN_NX = BoardModel(
    name="orin-nx",
    soc="tegra234",
    l4t="36.5.0",
    release_lines=(
        "# R36 (release), REVISION: 5.0, GCID: 43688277, BOARD: generic, EABI: aarch64, "
        "DATE: Fri Jan 16 03:50:45 UTC 2026",
        *_ORIN_RELEASE_TAIL,
    ),
    kernel="5.15.148-tegra",
    dt_model="NVIDIA Jetson Orin NX Engineering Reference Developer Kit Super",
    dt_compatible=("nvidia,p3767-0000", "nvidia,tegra234"),
    module="p3767-0000",
    ram_kb=15928356,
    swap_kb=7964176,
    cpu_count=8,
    clusters=(
        ClusterSpec((0, 1, 2, 3), _ORIN_NX_CPU_KHZ, "cortex-a78ae"),
        ClusterSpec((4, 5, 6, 7), _ORIN_NX_CPU_KHZ, "cortex-a78ae"),
    ),
    cpu_params=tuple((f"CPU_A78_{i}", i) for i in range(8)),
    cpu_governors=_GOV_ORIN,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_gpu_orin_jp6(_ORIN_NX_GPU_HZ, 4),
    emc=EmcSpec("bpmp", _ORIN_EMC_HZ, "sys/kernel/nvpmodel_clk_cap/emc", "CLOCK"),
    thermal=ORIN_NANO.thermal,
    chips=(ChipSpec("ina3221", 1, 0x40, _T234_I2C, 1, ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")),),
    rails=(
        RailSpec("VDD_IN", (), 5064),
        RailSpec("VDD_CPU_GPU_CV", ("cpu", "gpu", "cv"), 5056),
        RailSpec("VDD_SOC", ("soc",), 5056),
    ),
    total_rail="VDD_IN",
    modes=(
        ModeSpec(
            0,
            "MAXN_SUPER",
            _ORIN_NX_ALL,
            (-1, -1),
            729600,
            -1,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            1,
            "10W",
            (0, 1, 2, 3),
            (1190400, 1190400),
            729600,
            510000000,
            emc_max_hz=2133000000,
            tpc_pg_mask=252,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            2,
            "15W",
            (0, 1, 2, 3),
            (1420800, 1420800),
            729600,
            612000000,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            3,
            "25W",
            _ORIN_NX_ALL,
            (1344000, 1344000),
            729600,
            816000000,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
        ModeSpec(
            4,
            "40W",
            _ORIN_NX_ALL,
            (1497600, 1497600),
            729600,
            1173000000,
            emc_max_hz=-1,
            tpc_pg_mask=240,
            fbp_pg_mask=2,
        ),
    ),
    default_mode=2,
    coefficients=PowerCoefficients(
        cpu_base_w=0.12,
        core_idle_w=0.03,
        core_dyn_w=0.7,
        gpu_idle_w=0.15,
        gpu_dyn_w=13.0,
        soc_w=1.6,
        soc_emc_w=1.8,
        ddr_w=0.4,
        ddr_dyn_w=1.2,
        cv_w=0.0,
        io_w=0.12,
        carrier_w=1.7,
    ),
    tegrastats="jp6",
)

_AGXO_ALL = tuple(range(12))
AGX_ORIN = BoardModel(
    name="agx-orin",
    soc="tegra234",
    l4t="35.5.0",
    release_lines=(
        "# R35 (release), REVISION: 5.0, GCID: 35550185, BOARD: t186ref, EABI: aarch64, "
        "DATE: Tue Feb 20 04:46:31 UTC 2024",
        *_ORIN_RELEASE_TAIL,
    ),
    kernel="5.10.192-tegra",
    dt_model="Jetson AGX Orin Developer Kit",
    dt_compatible=("nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234"),
    module="p3701-0005",
    ram_kb=64323660,
    swap_kb=32161824,
    cpu_count=12,
    clusters=tuple(
        ClusterSpec((c, c + 1, c + 2, c + 3), _AGXO_CPU_KHZ, "cortex-a78ae") for c in (0, 4, 8)
    ),
    cpu_params=(("CPU_A78_0", 0), ("CPU_A78_1", 4), ("CPU_A78_2", 8)),
    cpu_governors=_GOV_ORIN,
    cpu_governor="schedutil",
    idle_states=("WFI", "c7"),
    gpu=_GPU_AGXO,
    emc=EmcSpec("bpmp", _ORIN_EMC_HZ, "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "FILE"),
    thermal=(
        _offline("CV0-therm"),
        ThermalZoneSpec("CPU-therm", 41.4, 0.35),
        ThermalZoneSpec("Tboard_tegra", 29.0, 0.05),
        ThermalZoneSpec("SOC2-therm", 39.0, 0.3),
        ThermalZoneSpec("Tdiode_tegra", 30.75, 0.1),
        ThermalZoneSpec("SOC0-therm", 39.0, 0.3),
        _offline("CV1-therm"),
        ThermalZoneSpec("GPU-therm", 40.0, 0.4),
        ThermalZoneSpec("tj-therm", 41.6, 0.4),
        ThermalZoneSpec("SOC1-therm", 38.9, 0.3),
        _offline("CV2-therm"),
    ),
    chips=(
        ChipSpec("ina3221", 1, 0x40, _T234_I2C, 1, ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0")),
        ChipSpec("ina3221", 1, 0x41, _T234_I2C, 2, (NC, "VDDQ_VDD2_1V8AO", NC)),
    ),
    rails=(
        RailSpec("VDD_GPU_SOC", ("gpu", "soc"), 19152),
        RailSpec("VDD_CPU_CV", ("cpu", "cv"), 19152),
        RailSpec("VIN_SYS_5V0", ("io",), 4984),
        RailSpec("VDDQ_VDD2_1V8AO", ("ddr",), 19144),
    ),
    total_rail=None,
    modes=(
        ModeSpec(0, "MAXN", _AGXO_ALL, (-1, -1, -1), 0, -1, tpc_pg_mask=0),
        ModeSpec(
            1,
            "MODE_15W",
            (0, 1, 2, 3),
            (1113600, 1113600, 1113600),
            0,
            420750000,
            emc_max_hz=2133000000,
            tpc_pg_mask=248,
        ),
        ModeSpec(
            2,
            "MODE_30W",
            tuple(range(8)),
            (1728000, 1728000, 1728000),
            0,
            624750000,
            emc_max_hz=3199000000,
            tpc_pg_mask=240,
        ),
        ModeSpec(
            3,
            "MODE_50W",
            _AGXO_ALL,
            (1497600, 1497600, 1497600),
            0,
            828750000,
            emc_max_hz=3199000000,
            tpc_pg_mask=0,
        ),
    ),
    default_mode=2,
    coefficients=PowerCoefficients(
        cpu_base_w=0.3,
        core_idle_w=0.04,
        core_dyn_w=1.1,
        gpu_idle_w=0.45,
        gpu_dyn_w=24.0,
        soc_w=1.9,
        soc_emc_w=2.2,
        ddr_w=0.28,
        ddr_dyn_w=2.4,
        cv_w=0.05,
        io_w=3.5,
    ),
    tegrastats="jp5",
)

_THOR_ALL = tuple(range(14))
THOR = BoardModel(
    name="thor",
    soc="tegra264",
    l4t="38.4.0",
    release_lines=(
        "# R38 (release), REVISION: 4.0, GCID: 42974425, BOARD: generic, EABI: aarch64, "
        "DATE: Thu Dec 18 21:19:34 UTC 2025",
        *_ORIN_RELEASE_TAIL,
    ),
    kernel="6.8.12-tegra",
    dt_model="NVIDIA Jetson AGX Thor Developer Kit",
    dt_compatible=("nvidia,p3971-0089+p3834-0008", "nvidia,p3834-0008", "nvidia,tegra264"),
    module="p3834-0008",
    ram_kb=128790528,
    swap_kb=0,
    cpu_count=14,
    # One cpufreq policy for all 14 cores and its PARAM name are assumptions.
    clusters=(ClusterSpec(_THOR_ALL, _THOR_CPU_KHZ, "neoverse-v3ae"),),
    cpu_params=(("CPU_V3AE", 0),),
    cpu_governors=_GOV_ORIN,
    cpu_governor="schedutil",
    idle_states=("WFI", "cc7"),
    gpu=_GPU_THOR,
    # bpmp debugfs as on Orin: jetson_clocks --show on Thor prints FreqOverride (mrq_rate_locked).
    emc=EmcSpec("bpmp", _THOR_EMC_HZ, "sys/kernel/nvpmodel_clk_cap/emc", "CLOCK"),
    thermal=(
        ThermalZoneSpec("cpu-thermal", 45.0, 0.12),
        ThermalZoneSpec("soc2-thermal", 42.0, 0.1),
        ThermalZoneSpec("soc0-thermal", 43.0, 0.1),
        ThermalZoneSpec("gpu-thermal", 42.5, 0.14),
        ThermalZoneSpec("tj-thermal", 45.0, 0.14),
        ThermalZoneSpec("soc1-thermal", 42.5, 0.1),
    ),
    # The INA238's bus/address and hwmon index are assumptions; the INA3221 is 2-0040/hwmon6.
    chips=(
        ChipSpec("ina3221", 2, 0x40, _T264_I2C, 6, ("VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0")),
        ChipSpec("ina238", 2, 0x44, _T264_I2C, 4, ("VIN",), shunt_uohm=2000),
    ),
    rails=(
        RailSpec("VDD_GPU", ("gpu",), 19200),
        RailSpec("VDD_CPU_SOC_MSS", ("cpu", "soc", "ddr"), 19200),
        RailSpec("VIN_SYS_5V0", ("io",), 5000),
        RailSpec("VIN", (), 19600),
    ),
    total_rail="VIN",
    modes=(
        ModeSpec(0, "MAXN", _THOR_ALL, (-1,), 0, -1, emc_max_hz=-1),
        ModeSpec(1, "120W", _THOR_ALL, (2342400,), 0, 1326000000, emc_max_hz=-1),
    ),
    default_mode=1,
    coefficients=PowerCoefficients(
        cpu_base_w=1.0,
        core_idle_w=0.15,
        core_dyn_w=2.6,
        gpu_idle_w=2.5,
        gpu_dyn_w=62.0,
        soc_w=5.5,
        soc_emc_w=4.0,
        ddr_w=1.5,
        ddr_dyn_w=6.0,
        io_w=3.0,
        carrier_w=4.0,
        regulator_efficiency=0.88,
    ),
    tegrastats="jp7",
)

MODELS: dict[str, BoardModel] = {
    m.name: m for m in (NANO, TX2, XAVIER_NX, AGX_XAVIER, ORIN_NANO, ORIN_NX, AGX_ORIN, THOR)
}


def get_model(name: str) -> BoardModel:
    """The board model called ``name``; :class:`UnknownBoardModel` if there is none."""
    try:
        return MODELS[name]
    except KeyError:
        raise UnknownBoardModel(name) from None
