"""PNG figures from the long result table (:func:`.load.load` or :mod:`.external`).

matplotlib is imported inside the functions and used through ``Figure`` objects with the
Agg canvas (no pyplot state, no display). Every function returns the path it wrote, or None
when the table lacks what the figure needs (e.g. a single GPU frequency), so callers can
render "what the data supports". Figures of virtual boards say "simulated".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_LABELS = {
    "gpu_freq_hz": "GPU frequency [MHz]",
    "cpu_freq_hz": "CPU frequency [MHz]",
    "emc_freq_hz": "EMC frequency [MHz]",
    "batch_size": "batch size",
    "energy_per_item": "energy per item [J]",
    "energy_per_item_net": "net energy per item [J]",
    "latency_p50": "latency p50 [ms]",
    "latency_mean": "latency mean [ms]",
    "latency_p90": "latency p90 [ms]",
    "power_mean": "mean power [W]",
}


def _figure(width: float = 7.0, height: float = 4.5) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _scaled(column: str, values: Any) -> Any:
    if column.endswith("_freq_hz"):
        return values / 1e6
    if column.startswith("latency"):
        return values * 1e3
    return values


def _metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    rows = df[(df["metric"] == metric) & df["value"].notna()]
    if "status" in rows:
        rows = rows[rows["status"].isin(["passed"]) | rows["status"].isna()]
    return rows


def _first_metric(df: pd.DataFrame, metrics: Sequence[str]) -> tuple[str, pd.DataFrame]:
    for metric in metrics:
        rows = _metric(df, metric)
        if not rows.empty:
            return metric, rows
    return metrics[0], _metric(df, metrics[0])


def _simulated_note(df: pd.DataFrame) -> str:
    return " (simulated)" if bool(df["simulated"].fillna(False).astype(bool).any()) else ""


def _title(ax: Axes, text: str, df: pd.DataFrame) -> None:
    note = "" if "(simulated)" in text else _simulated_note(df)
    ax.set_title(text + note, fontsize=10)


def _pick(rows: pd.DataFrame, column: str, wanted: Any) -> tuple[Any, pd.DataFrame]:
    """Restrict to one value of ``column``: ``wanted`` or the most frequent one."""
    if rows.empty or rows[column].isna().all():
        return wanted, rows
    if wanted is None:
        wanted = rows[column].value_counts().index[0]
    return wanted, rows[rows[column] == wanted]


def plot_heatmap(
    df: pd.DataFrame,
    path: Path,
    *,
    x: str = "gpu_freq_hz",
    y: str = "cpu_freq_hz",
    metric: str = "energy_per_item",
    device: str | None = None,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """Energy topology: ``metric`` over ``y`` x ``x`` (CPU x GPU frequency by default) for one
    device and workload (and batch size unless it is an axis), the minimum marked."""
    rows = _metric(df, metric)
    device, rows = _pick(rows, "device", device)
    workload, rows = _pick(rows, "workload", workload)
    if "batch_size" not in (x, y):
        batch_size, rows = _pick(rows, "batch_size", batch_size)
    rows = rows.dropna(subset=[x, y])
    if rows[x].nunique() < 2 or rows[y].nunique() < 2:
        return None
    grid = rows.pivot_table(index=y, columns=x, values="value", aggfunc="mean").sort_index()
    grid = grid.sort_index(axis=1)
    fig = _figure(8.0, 5.5)
    ax = fig.add_subplot()
    image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="viridis_r")
    fig.colorbar(image, ax=ax, label=_LABELS.get(metric, metric))
    xs, ys = _scaled(x, grid.columns.to_numpy()), _scaled(y, grid.index.to_numpy())
    step_x = max(1, len(xs) // 12)
    step_y = max(1, len(ys) // 16)
    ax.set_xticks(range(0, len(xs), step_x), [f"{v:g}" for v in xs[::step_x]], rotation=45)
    ax.set_yticks(range(0, len(ys), step_y), [f"{v:g}" for v in ys[::step_y]])
    ax.set_xlabel(_LABELS.get(x, x))
    ax.set_ylabel(_LABELS.get(y, y))
    flat = grid.stack()
    best_y, best_x = flat.idxmin()
    iy, ix = list(grid.index).index(best_y), list(grid.columns).index(best_x)
    ax.plot([ix], [iy], marker="*", markersize=16, color="red", markeredgecolor="white")
    ax.annotate(
        f"min {flat.min():.3g}: {_axis_text(x, best_x)}, {_axis_text(y, best_y)}",
        (ix, iy),
        xytext=(8, 8),
        textcoords="offset points",
        color="red",
        fontsize=8,
    )
    what = f"{workload}" + (f", batch {batch_size}" if "batch_size" not in (x, y) else "")
    _title(ax, f"{_LABELS.get(metric, metric)}: {device}, {what}", rows)
    return _save(fig, path)


def _axis_text(column: str, value: Any) -> str:
    if column.endswith("_freq_hz"):
        return f"{column.split('_')[0].upper()} {float(value) / 1e6:g} MHz"
    if column == "batch_size":
        return f"batch {value}"
    return f"{column} {value}"


def plot_energy_vs_gpu_freq(
    df: pd.DataFrame,
    path: Path,
    *,
    metric: str = "energy_per_item",
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """``metric`` against GPU frequency, a line per device (mean over any other operating-point
    dimension, e.g. CPU frequency), each device's minimum marked."""
    rows = _metric(df, metric).dropna(subset=["gpu_freq_hz"])
    workload, rows = _pick(rows, "workload", workload)
    batch_size, rows = _pick(rows, "batch_size", batch_size)
    if rows["gpu_freq_hz"].nunique() < 2:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for i, (dev, part) in enumerate(rows.groupby("device", sort=True)):
        series = part.groupby("gpu_freq_hz")["value"].mean().sort_index()
        mhz = _scaled("gpu_freq_hz", series.index.to_numpy())
        color = f"C{i % 10}"
        best = int(series.to_numpy().argmin())
        label = f"{dev}: min {series.iloc[best]:.3g} at {mhz[best]:g} MHz"
        ax.plot(mhz, series.to_numpy(), marker="o", markersize=3, color=color, label=label)
        ax.plot([mhz[best]], [series.iloc[best]], "*", markersize=15, color=color, mec="black")
    ax.set_xlabel(_LABELS["gpu_freq_hz"])
    ax.set_ylabel(_LABELS.get(metric, metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="device (star: minimum)", title_fontsize=8)
    batch = f", batch {batch_size}" if batch_size is not None else ""
    _title(ax, f"{_LABELS.get(metric, metric)} vs GPU frequency: {workload}{batch}", rows)
    return _save(fig, path)


def plot_latency_power_vs_gpu_freq(
    df: pd.DataFrame,
    path: Path,
    *,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """Latency and mean power against GPU frequency, a line per device."""
    lat_metric, lat = _first_metric(df, ("latency_p50", "latency_mean", "latency_p90"))
    power = _metric(df, "power_mean")
    workload, lat = _pick(lat, "workload", workload)
    batch_size, lat = _pick(lat, "batch_size", batch_size)
    power = power[(power["workload"] == workload)]
    if batch_size is not None:
        power = power[power["batch_size"] == batch_size]
    lat, power = lat.dropna(subset=["gpu_freq_hz"]), power.dropna(subset=["gpu_freq_hz"])
    if lat["gpu_freq_hz"].nunique() < 2:
        return None
    fig = _figure(7.0, 6.0)
    ax_lat, ax_pow = fig.subplots(2, 1, sharex=True)
    for label, rows, ax in ((lat_metric, lat, ax_lat), ("power_mean", power, ax_pow)):
        for dev, part in rows.groupby("device", sort=True):
            series = part.groupby("gpu_freq_hz")["value"].mean().sort_index()
            ax.plot(
                _scaled("gpu_freq_hz", series.index.to_numpy()),
                _scaled(label, series.to_numpy()),
                marker="o",
                markersize=3,
                label=str(dev),
            )
        ax.set_ylabel(_LABELS.get(label, label))
        ax.grid(alpha=0.3)
    ax_lat.legend(fontsize=8)
    ax_pow.set_xlabel(_LABELS["gpu_freq_hz"])
    batch = f", batch {batch_size}" if batch_size is not None else ""
    _title(ax_lat, f"latency and power vs GPU frequency: {workload}{batch}", lat)
    return _save(fig, path)


def plot_energy_vs_batch(
    df: pd.DataFrame,
    path: Path,
    *,
    device: str | None = None,
    workload: str | None = None,
    metric: str = "energy_per_item",
) -> Path | None:
    """Energy per item against batch size, a line per operating point (one device)."""
    rows = _metric(df, metric).dropna(subset=["batch_size"])
    device, rows = _pick(rows, "device", device)
    workload, rows = _pick(rows, "workload", workload)
    if rows["batch_size"].nunique() < 2:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    ops = sorted(rows["op"].dropna().unique(), key=_op_sort_key(rows))
    cmap = _colormap(len(ops))
    for i, op in enumerate(ops):
        series = rows[rows["op"] == op].groupby("batch_size")["value"].mean().sort_index()
        ax.plot(
            series.index.to_numpy(dtype=float),
            series.to_numpy(),
            marker="o" if len(series) < 20 else None,
            markersize=3,
            color=cmap(i),
            label=_op_display(op),
        )
    ax.set_xlabel("batch size")
    ax.set_ylabel(_LABELS.get(metric, metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(ops) > 8 else 1, title="operating point")
    _title(ax, f"{_LABELS.get(metric, metric)} vs batch size: {device}, {workload}", rows)
    return _save(fig, path)


def plot_pareto(
    df: pd.DataFrame,
    path: Path,
    *,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """Latency against energy per item per configuration, the Pareto front of each device
    drawn, and DVFS (governor-chosen) points marked apart from pinned ones."""
    lat_metric, lat = _first_metric(df, ("latency_p90", "latency_mean", "latency_p50"))
    energy = _metric(df, "energy_per_item")
    workload, energy = _pick(energy, "workload", workload)
    batch_size, energy = _pick(energy, "batch_size", batch_size)
    keys = ["source", "run_id", "test_id"]
    joined = energy[[*keys, "device", "simulated", "dvfs", "value"]].merge(
        lat[[*keys, "value"]], on=keys, suffixes=("_energy", "_latency")
    )
    if len(joined) < 2:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for i, (dev, part) in enumerate(joined.groupby("device", sort=True)):
        color = f"C{i % 10}"
        xs = _scaled(lat_metric, part["value_latency"].to_numpy())
        ys = part["value_energy"].to_numpy()
        dvfs = part["dvfs"].fillna(False).astype(bool).to_numpy()
        ax.scatter(xs[~dvfs], ys[~dvfs], s=14, alpha=0.6, color=color, label=f"{dev}")
        if dvfs.any():
            ax.scatter(
                xs[dvfs],
                ys[dvfs],
                s=90,
                marker="D",
                facecolors="none",
                edgecolors=color,
                linewidths=1.5,
                label=f"{dev}: DVFS (default governors)",
            )
        front_x, front_y = pareto_front(list(xs), list(ys))
        ax.step(front_x, front_y, where="post", color=color, linewidth=1.2)
    ax.set_xlabel(_LABELS.get(lat_metric, lat_metric))
    ax.set_ylabel(_LABELS["energy_per_item"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    batch = f", batch {batch_size}" if batch_size is not None else ""
    _title(ax, f"latency vs energy, Pareto front: {workload}{batch}", joined)
    return _save(fig, path)


def pareto_front(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    """Points not dominated in (x, y), both minimised, sorted by x."""
    front_x: list[float] = []
    front_y: list[float] = []
    best_y = float("inf")
    for x, y in sorted(zip(xs, ys, strict=True)):
        if y < best_y:
            front_x.append(x)
            front_y.append(y)
            best_y = y
    return front_x, front_y


def plot_cross_device(
    df: pd.DataFrame, path: Path, *, metric: str = "energy_per_item"
) -> Path | None:
    """Bars per workload, one per device: the best (lowest) ``metric`` over the operating
    points and batch sizes each device ran."""
    rows = _metric(df, metric)
    if rows.empty:
        return None
    best = rows.groupby(["workload", "device"])["value"].min().unstack("device")
    fig = _figure(max(6.0, 1.2 * len(best.index) + 3), 4.5)
    ax = fig.add_subplot()
    n = len(best.columns)
    width = 0.8 / max(n, 1)
    positions = list(range(len(best.index)))
    for i, dev in enumerate(best.columns):
        ax.bar(
            [p - 0.4 + width * (i + 0.5) for p in positions],
            best[dev].to_numpy(),
            width=width,
            label=str(dev),
        )
    ax.set_xticks(positions, [str(w) for w in best.index], rotation=20, ha="right")
    ax.set_ylabel(f"lowest {_LABELS.get(metric, metric)}")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    _title(ax, f"{_LABELS.get(metric, metric)} per device (best operating point)", rows)
    return _save(fig, path)


def render_all(df: pd.DataFrame, out_dir: Path, prefix: str = "") -> list[Path]:
    """Every figure the table supports, written as ``out_dir/<prefix><name>.png``."""
    made = [
        plot_cross_device(df, out_dir / f"{prefix}cross_device.png"),
        plot_heatmap(df, out_dir / f"{prefix}energy_topology.png"),
        plot_energy_vs_gpu_freq(df, out_dir / f"{prefix}energy_vs_gpu_freq.png"),
        plot_latency_power_vs_gpu_freq(df, out_dir / f"{prefix}latency_power_vs_gpu_freq.png"),
        plot_energy_vs_batch(df, out_dir / f"{prefix}energy_vs_batch.png"),
        plot_pareto(df, out_dir / f"{prefix}pareto.png"),
    ]
    return [p for p in made if p is not None]


def _op_display(op: str) -> str:
    from pytest_edgeenergy.report.keys import op_label

    return op_label(op)


def _op_sort_key(rows: pd.DataFrame) -> Any:
    freq = rows.groupby("op")["gpu_freq_hz"].first().to_dict()

    def key(op: str) -> tuple[float, str]:
        value = freq.get(op)
        return (float(value) if value == value and value is not None else -1.0, op)

    return key


def _colormap(n: int) -> Any:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return lambda i: cmap(i / max(n - 1, 1))
