"""PNG figures from the long result table (:func:`.load.load` or :mod:`.external`).

matplotlib is imported inside the functions and used through ``Figure`` objects with the
Agg canvas (no pyplot state, no display). Each ``*_figure`` function builds a Figure or
raises :class:`NotDrawn` with the reason the table cannot give it (e.g. no GPU frequency
sweep); each ``plot_*`` saves one (None when not drawn), and :func:`render_all` writes every
figure the table supports and says why the others were not drawn.

Energy is ``energy_per_item`` where a workload has it, else ``energy_j`` (J per window:
results of the ``energy`` fixture); latency likewise falls back to the window's
``duration_s``. Figures of virtual boards say "simulated".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_edgeenergy.extras import require

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

ENERGY_METRICS = ("energy_per_item", "energy_j")
"""Energy metrics in order of preference, chosen per workload."""

_LATENCY = ("latency_p50", "latency_mean", "latency_p90", "duration_s")
_PARETO_LATENCY = ("latency_p90", "latency_mean", "latency_p50", "duration_s")
_MAX_LEGEND_LINES = 10

_LABELS = {
    "gpu_freq_hz": "GPU frequency [MHz]",
    "cpu_freq_hz": "CPU frequency [MHz]",
    "emc_freq_hz": "EMC frequency [MHz]",
    "batch_size": "batch size",
    "energy_per_item": "energy per item [J]",
    "energy_per_item_net": "net energy per item [J]",
    "energy_j": "energy per window [J]",
    "energy_net_j": "net energy per window [J]",
    "latency_p50": "latency p50 [ms]",
    "latency_mean": "latency mean [ms]",
    "latency_p90": "latency p90 [ms]",
    "duration_s": "window duration [s]",
    "power_mean": "mean power [W]",
    "power_peak": "peak power [W]",
}

_NAMES = {
    "gpu_freq_hz": "GPU frequency",
    "cpu_freq_hz": "CPU frequency",
    "emc_freq_hz": "EMC frequency",
    "batch_size": "batch size",
}


class NotDrawn(Exception):
    """The table lacks what a figure needs; the message says what."""


@dataclass(frozen=True)
class PlotNote:
    """A figure :func:`render_all` did not write, and why."""

    plot: str
    reason: str

    def __str__(self) -> str:
        return f"{self.plot}: {self.reason}"


@dataclass(frozen=True)
class Rendered:
    """What :func:`render_all` did: files written, figures not drawn (iterating gives the
    files)."""

    written: tuple[Path, ...] = ()
    notes: tuple[PlotNote, ...] = ()

    def __iter__(self) -> Iterator[Path]:
        return iter(self.written)

    def lines(self) -> list[str]:
        """One line per file (``wrote PATH``) and per note (``no plot written: NAME: why``)."""
        return [f"wrote {p}" for p in self.written] + [f"no plot written: {n}" for n in self.notes]


def _label(metric: str) -> str:
    return _LABELS.get(metric, metric)


def _figure(width: float = 7.0, height: float = 4.5) -> Figure:
    require("matplotlib", "analysis", "plots (edgeenergy compare --plots, --format html)")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def _panels(n: int, rows_each: int = 1, height: float = 4.5) -> tuple[Figure, list[list[Axes]]]:
    """A figure of ``n`` panel columns (wrapped after 3), each ``rows_each`` axes high."""
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig = _figure(7.0 if n == 1 else 4.6 * ncols, height * nrows)
    grid = fig.add_gridspec(nrows * rows_each, ncols)
    panels: list[list[Axes]] = []
    for i in range(n):
        r, c = divmod(i, ncols)
        first = fig.add_subplot(grid[r * rows_each, c])
        axes = [first]
        for k in range(1, rows_each):
            axes.append(fig.add_subplot(grid[r * rows_each + k, c], sharex=first))
        panels.append(axes)
    return fig, panels


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


def _passed(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows[rows["value"].notna()]
    if "status" in rows:
        rows = rows[rows["status"].isin(["passed"]) | rows["status"].isna()]
    return rows


def _metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    return _passed(df[df["metric"] == metric])


def _first_per_workload(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Rows of the first of ``metrics`` that each workload has (passed tests only)."""
    rows = _passed(df[df["metric"].isin(list(metrics))])
    if rows.empty:
        return rows
    rank = rows["metric"].map({m: i for i, m in enumerate(metrics)})
    return rows[rank == rank.groupby(rows["workload"]).transform("min")]


def _energy(df: pd.DataFrame, metric: str | None) -> pd.DataFrame:
    """Energy rows (``metric``, else :data:`ENERGY_METRICS` per workload); never empty."""
    rows = _first_per_workload(df, ENERGY_METRICS) if metric is None else _metric(df, metric)
    if rows.empty:
        if df.empty:
            raise NotDrawn("the reports hold no results")
        wanted = metric or " or ".join(ENERGY_METRICS)
        raise NotDrawn(f"no passed test has {wanted}")
    return rows


def _latency(df: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    rows = _first_per_workload(df, metrics)
    if rows.empty:
        raise NotDrawn(
            "the reports hold no results"
            if df.empty
            else f"no passed test has a latency or window duration ({', '.join(metrics)})"
        )
    return rows


def _values_text(column: str, values: Sequence[Any]) -> str:
    shown = [_axis_text(column, v) for v in sorted(values)[:6]]
    return ", ".join(shown) + (", ..." if len(values) > 6 else "")


def _missing(column: str) -> str:
    if column == "batch_size":
        return "these results carry no batch size (no test took the batch_size parameter)"
    return f"no {_NAMES.get(column, column)} was pinned in these reports"


def _sweep(rows: pd.DataFrame, column: str, workload: str | None) -> pd.DataFrame:
    """Rows of one workload with two or more values of ``column``: ``workload`` or the
    workload with the most such results."""
    known = rows.dropna(subset=[column])
    if workload is not None:
        known = known[known["workload"] == workload]
        if known.empty:
            raise NotDrawn(f"workload {workload!r} has no result with a {_NAMES[column]}")
    if known.empty:
        raise NotDrawn(_missing(column))
    counts = known.groupby("workload")[column].nunique()
    swept = counts[counts >= 2].index
    if swept.empty:
        values = known[column].unique()
        raise NotDrawn(
            f"one {_NAMES[column]} per workload only ({_values_text(column, list(values))});"
            " the plot needs two or more"
        )
    chosen = known[known["workload"].isin(swept)]["workload"].value_counts().index[0]
    return known[known["workload"] == chosen]


def _simulated_note(df: pd.DataFrame) -> str:
    return " (simulated)" if bool(df["simulated"].fillna(False).astype(bool).any()) else ""


def _title(ax: Axes, text: str, df: pd.DataFrame) -> None:
    """The axes' title, " (simulated)" added for virtual boards (wrapped to the figure by
    :func:`fit_titles`)."""
    note = "" if "(simulated)" in text else _simulated_note(df)
    ax.set_title(text + note, fontsize=10)


def _suptitle(fig: Figure, text: str, df: pd.DataFrame) -> None:
    """The figure's title, as :func:`_title`."""
    note = "" if "(simulated)" in text else _simulated_note(df)
    fig.suptitle(text + note, fontsize=10)


_TITLE_MARGIN = 0.96
"""Share of the room beside a title's anchor it may fill (a few pixels from the edge)."""


def fit_titles(fig: Figure) -> Figure:
    """Wrap the figure's titles and every axes' title that would not fit inside the figure
    (at spaces; a word too long for any line gets a smaller font), so that no title is
    clipped. The layout is drawn (Agg, no output) to know where each title stands."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    titles = [*fig.texts, *(ax.title for ax in fig.axes)]
    original = {id(t): t.get_text() for t in titles}
    for _ in range(3):  # a wrapped title moves the axes: check again in the new layout
        fig.draw_without_rendering()
        renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
        if not [t for t in titles if _wrap_to_fit(t, original[id(t)], fig, renderer)]:
            break
    return fig


def _room_px(title: Text, fig: Figure, renderer: Any) -> float:
    """The width a title may take in the figure, from its anchor and alignment."""
    box, room = title.get_window_extent(renderer), fig.bbox
    align = title.get_horizontalalignment()
    if align == "left":
        return float(room.x1 - box.x0)
    if align == "right":
        return float(box.x1 - room.x0)
    centre = (box.x0 + box.x1) / 2
    return float(2 * min(centre - room.x0, room.x1 - centre))


def _wrap_to_fit(title: Text, text: str, fig: Figure, renderer: Any) -> bool:
    """Wrap ``text`` (its own line breaks kept) into ``title`` to fit the figure's width;
    True when the title changed."""
    if not text:
        return False
    box = title.get_window_extent(renderer)
    if box.x0 >= fig.bbox.x0 and box.x1 <= fig.bbox.x1:
        return False
    width = _TITLE_MARGIN * _room_px(title, fig, renderer)
    size = float(title.get_fontproperties().get_size_in_points())

    def measured(line: str) -> float:
        w, _, _ = renderer.get_text_width_height_descent(line, title.get_fontproperties(), False)
        return float(w)

    while True:
        lines: list[str] = []
        for paragraph in text.split("\n"):
            lines.append("")
            for word in paragraph.split(" "):
                joined = f"{lines[-1]} {word}" if lines[-1] else word
                if lines[-1] and measured(joined) > width:
                    lines.append(word)
                else:
                    lines[-1] = joined
        points = float(title.get_fontproperties().get_size_in_points())
        if max(map(measured, lines)) <= width or points <= 6:
            break
        title.set_fontsize(points - 1)  # a word wider than the room
    wrapped = "\n".join(lines)
    changed = wrapped != title.get_text() or points != size
    title.set_text(wrapped)
    return changed


def _batch(value: Any) -> int | None:
    import pandas as pd

    return None if pd.isna(value) else int(value)


def _axis_text(column: str, value: Any) -> str:
    if column.endswith("_freq_hz"):
        return f"{column.split('_')[0].upper()} {float(value) / 1e6:g} MHz"
    if column == "batch_size":
        return f"batch {_batch(value)}"
    return f"{column} {value}"


def heatmap_figure(
    df: pd.DataFrame,
    *,
    x: str = "gpu_freq_hz",
    y: str = "cpu_freq_hz",
    metric: str | None = None,
    device: str | None = None,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Figure:
    """Energy topology: energy over ``y`` x ``x`` (CPU x GPU frequency by default) for one
    device, workload, batch size (unless it is an axis), configuration and set of the other
    knobs (never a mean over several), the minimum marked and the cells not measured
    hatched."""
    rows = _energy(df, metric)
    for column, wanted in (("device", device), ("workload", workload), ("batch_size", batch_size)):
        if wanted is not None:
            rows = rows[rows[column] == wanted]
    for column in (x, y):
        if rows[column].isna().all():
            raise NotDrawn(_missing(column))
    rows = rows.dropna(subset=[x, y])
    rows, config = _one_configuration(rows)
    rows = rows.assign(knobs=rows["op"].map(lambda op: _other_knobs(op, x, y)))
    groups = [c for c in ("device", "workload", "batch_size") if c not in (x, y)] + ["knobs"]
    best: pd.DataFrame | None = None
    most = (0, 0)
    for _, part in rows.groupby(groups, dropna=False, sort=True):
        size = (part[x].nunique(), part[y].nunique())
        most = max(most, size)
        if min(size) >= 2 and (best is None or len(part) > len(best)):
            best = part
    if best is None:
        raise NotDrawn(
            f"needs two or more values of both {_NAMES.get(x, x)} and {_NAMES.get(y, y)} for"
            f" one device, workload, batch size and set of the other knobs; at most"
            f" {most[0]} x {most[1]} here"
        )
    rows = best
    metric = str(rows["metric"].iloc[0])
    grid = rows.pivot_table(index=y, columns=x, values="value", aggfunc="mean").sort_index()
    grid = grid.sort_index(axis=1)
    fig = _figure(8.0, 5.5)
    ax = fig.add_subplot()
    image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap="viridis_r")
    fig.colorbar(image, ax=ax, label=_label(metric))
    xs, ys = _scaled(x, grid.columns.to_numpy()), _scaled(y, grid.index.to_numpy())
    step_x = max(1, len(xs) // 12)
    step_y = max(1, len(ys) // 16)
    ax.set_xticks(range(0, len(xs), step_x), [f"{v:g}" for v in xs[::step_x]], rotation=45)
    ax.set_yticks(range(0, len(ys), step_y), [f"{v:g}" for v in ys[::step_y]])
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    _hatch_unmeasured(ax, grid)
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
    first = rows.iloc[0]
    what = str(first["workload"])
    if "batch_size" not in (x, y) and _batch(first["batch_size"]) is not None:
        what += f", batch {_batch(first['batch_size'])}"
    knobs = f", at {first['knobs']}" if first["knobs"] else ""
    _title(ax, f"{_label(metric)}: {first['device']}, {what}{config}{knobs}", rows)
    return fit_titles(fig)


def _hatch_unmeasured(ax: Axes, grid: pd.DataFrame) -> None:
    """Grey hatched cells where ``grid`` has no value, named in a legend (``not measured``);
    nothing when every cell was measured."""
    from matplotlib.patches import Rectangle

    empty = [(ix, iy) for iy, ix in zip(*grid.isna().to_numpy().nonzero(), strict=True)]
    for n, (ix, iy) in enumerate(empty):
        ax.add_patch(
            Rectangle(
                (ix - 0.5, iy - 0.5), 1, 1, facecolor="0.85", edgecolor="0.55", hatch="//",
                linewidth=0, label="not measured" if n == 0 else "_not measured",
            )
        )  # fmt: skip
    if empty:
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)


def _batch_colors(batches: Sequence[int]) -> tuple[Callable[[int | None], Any], Any]:
    """A colour per batch size (log scale of viridis, pale end left out) and the mappable
    for a colorbar."""
    import numpy as np
    from matplotlib import cm, colormaps
    from matplotlib.colors import ListedColormap, LogNorm

    lo = max(1, min(batches))
    hi = max(lo + 1, max(batches))
    cmap = ListedColormap(colormaps["viridis"](np.linspace(0.0, 0.85, 256)))
    norm = LogNorm(lo, hi)

    def color(batch: int | None) -> Any:
        return cmap(float(norm(max(batch or lo, lo))))

    return color, cm.ScalarMappable(norm=norm, cmap=cmap)


def _batch_colorbar(fig: Figure, mappable: Any, axes: list[Axes], batches: Sequence[int]) -> None:
    bar = fig.colorbar(mappable, ax=axes, label="batch size")
    doubling = [b for b in sorted(set(batches)) if b & (b - 1) == 0]
    ticks = doubling if len(doubling) >= 3 else _batch_ticks(batches, most=8)
    bar.set_ticks(ticks, labels=[str(t) for t in ticks])
    bar.ax.minorticks_off()


_KNOB_SHORTS = (("gpu_freq_hz", "gpu"), ("cpu_freq_hz", "cpu"), ("emc_freq_hz", "emc"))
"""The knobs an axis can be, with their short names in an operating point's label."""
_WORD_KNOBS = frozenset({"mode", "gpu", "cpu", "emc", "cores"})
"""Label words followed by the word a knob was asked for by: ``gpu min``, ``mode max``."""


def _knob_parts(op: Any) -> list[str]:
    """The parts of an operating point's label (``15W``, ``gpu612MHz``, ``gpu min``)."""
    words = str(op).split(" ")
    parts: list[str] = []
    i = 0
    while i < len(words):
        take = 2 if words[i] in _WORD_KNOBS and i + 1 < len(words) else 1
        parts.append(" ".join(words[i : i + take]))
        i += take
    return parts


def _other_knobs(op: Any, *axes: str) -> str:
    """The operating point's label without the knobs of ``axes`` (``gpu_freq_hz``...): what
    else a result pinned (``15W cpu1.5GHz``), "" when nothing else. A line or a heatmap is
    drawn at one such set, never averaged over several."""
    shorts = [short for axis, short in _KNOB_SHORTS if axis in axes]

    def on_axis(part: str) -> bool:
        return any(
            part.startswith(f"{s} ") or (part.startswith(s) and part[len(s) : len(s) + 1].isdigit())
            for s in shorts
        )

    return " ".join(p for p in _knob_parts(op) if not on_axis(p))


def _knob_names(knob_sets: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The parts every set of ``knob_sets`` shares (for the title), and each set's name
    without them (for its line's label: ``only 15W`` for a set of the shared parts
    alone)."""
    parts = {k: _knob_parts(k) if k else [] for k in knob_sets}
    shared = [p for p in parts[knob_sets[0]] if all(p in other for other in parts.values())]
    text = " ".join(shared)
    alone = f"only {text}" if shared else "no other knob pinned"
    names = {k: " ".join(p for p in own if p not in shared) or alone for k, own in parts.items()}
    return text, names


def _gpu_others(op: Any) -> str:
    return _other_knobs(op, "gpu_freq_hz")


def _knobs_legend(ax: Axes, knob_sets: Sequence[str], names: dict[str, str]) -> None:
    """A legend of the line styles standing for each set of the other knobs (when colours
    stand for batch sizes on a colour bar)."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color="black", markersize=3, **_knob_style(k)) for k in range(len(knob_sets))
    ]
    labels = [names[k] for k in knob_sets]
    ax.legend(handles, labels, fontsize=7, title="other knobs", title_fontsize=7)


def _knob_order(rows: pd.DataFrame) -> list[str]:
    """The ``knobs`` column's values by CPU, then EMC frequency, then label."""
    first = rows.groupby("knobs")[["cpu_freq_hz", "emc_freq_hz"]].first()

    def key(knobs: str) -> tuple[float, float, str]:
        freqs = [float(v) if v == v and v is not None else -1.0 for v in first.loc[knobs]]
        return (freqs[0], freqs[1], knobs)

    return sorted(first.index, key=key)


_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def _knob_style(k: int) -> dict[str, Any]:
    """Line style and marker of the ``k``-th set of the other knobs."""
    return {"linestyle": _STYLES[k % len(_STYLES)], "marker": _MARKERS[k % len(_MARKERS)]}


def _line_look(
    dev: Any,
    batch: int | None,
    knobs: str,
    knob_sets: Sequence[str],
    names: dict[str, str],
    devices: Sequence[Any],
    color: Callable[[int | None], Any],
    *,
    by_batch: bool,
    by_device: bool,
) -> tuple[dict[str, Any], str]:
    """A GPU-frequency line's colour, style and marker, and its legend label: colour by
    batch size or device (else by the other knobs), line style and marker by the other
    knobs when there are several sets of them and colour says something else."""
    k = knob_sets.index(knobs)
    by_knobs = len(knob_sets) > 1
    if by_batch:
        c = color(batch)
    elif by_device:
        c = f"C{devices.index(dev) % 10}"
    else:
        c = f"C{k % 10}"
    styled = by_knobs and (by_batch or by_device)
    look = {"color": c, **_knob_style(k if styled else 0)}
    parts = [f"batch {batch}" if by_batch else str(dev)] if by_batch or by_device else []
    if by_knobs:
        parts.append(names[knobs])
    return look, ", ".join(parts)


def _freq_lines(
    fig: Figure,
    rows: pd.DataFrame,
    panels: list[list[Axes]],
    metrics: Sequence[tuple[str, pd.DataFrame]],
    *,
    mark_min: bool,
) -> tuple[str, str]:
    """Against GPU frequency: a line per device x batch size x set of the other knobs
    pinned (CPU and EMC frequency, power mode, cores: never a mean over several) for each
    of ``metrics`` (one axes each, top to bottom), a panel column per device when there
    are several devices and several batch sizes. Returns the title's words for what every
    line shares: the batch size or device, and the other knobs (``, at 15W``)."""
    devices = sorted(rows["device"].unique())
    batches = sorted({b for b in map(_batch, rows["batch_size"]) if b is not None})
    n_batches = rows["batch_size"].astype("object").nunique(dropna=False)
    by_batch = n_batches > 1
    knob_sets = _knob_order(rows.assign(knobs=rows["op"].map(_gpu_others)))
    shared, names = _knob_names(knob_sets)
    by_knobs = len(knob_sets) > 1
    color, mappable = _batch_colors(batches or [1])
    colorbar_axes: list[Axes] = []
    for p, axes in enumerate(panels):
        in_panel = devices[p : p + 1] if len(panels) > 1 else devices
        by_device = not by_batch and (len(in_panel) > 1 or not by_knobs)
        lines = 0
        for (metric, data), ax in zip(metrics, axes, strict=True):
            data = data[data["device"].isin(in_panel)]
            data = data.assign(knobs=data["op"].map(_gpu_others))
            groups = data.groupby(["device", "batch_size", "knobs"], dropna=False, sort=True)
            ordered = sorted(
                groups, key=lambda g: (g[0][0], _batch(g[0][1]) or 0, knob_sets.index(g[0][2]))
            )
            for i, ((dev, raw_batch, knobs), part) in enumerate(ordered):
                batch = _batch(raw_batch)
                series = part.groupby("gpu_freq_hz")["value"].mean().sort_index()
                mhz = _scaled("gpu_freq_hz", series.index.to_numpy())
                ys = _scaled(metric, series.to_numpy())
                look, name = _line_look(
                    dev, batch, knobs, knob_sets, names, devices, color, by_batch=by_batch,
                    by_device=by_device,
                )  # fmt: skip
                best = int(ys.argmin())
                if mark_min:
                    name += f": min {ys[best]:.3g} at {mhz[best]:g} MHz"
                ax.plot(mhz, ys, markersize=3, label=name, **look)
                if mark_min:
                    size = 15 if len(ordered) <= _MAX_LEGEND_LINES else 8
                    ax.plot([mhz[best]], [ys[best]], "*", markersize=size, color=look["color"],
                            mec="black")  # fmt: skip
                lines = max(lines, i + 1)
            ax.set_ylabel(_label(metric))
            ax.grid(alpha=0.3)
        axes[-1].set_xlabel(_label("gpu_freq_hz"))
        for ax in axes[:-1]:
            ax.tick_params(labelbottom=False)
        if len(panels) > 1:
            axes[0].set_title(str(in_panel[0]), fontsize=9)
        if by_batch and lines > _MAX_LEGEND_LINES:
            colorbar_axes += axes
            if by_knobs:
                _knobs_legend(axes[0], knob_sets, names)
            continue
        star = " (star: minimum)" if mark_min else ""
        named = ["batch size" if by_batch else "device"] if by_batch or by_device else []
        title = ", ".join(named + (["other knobs"] if by_knobs else [])) + star
        size = 8 if lines <= 8 else 7
        axes[0].legend(fontsize=size, title=title, title_fontsize=size, ncol=2 if lines > 8 else 1)
    if colorbar_axes:
        _batch_colorbar(fig, mappable, colorbar_axes, batches)
    knobs = f", at {shared}" if shared else ""
    if len(batches) == 1 and n_batches == 1:
        return f", batch {batches[0]}", knobs
    return (f", {devices[0]}" if len(devices) == 1 and by_batch else ""), knobs


def _device_panels(rows: pd.DataFrame) -> int:
    several_batches = rows["batch_size"].astype("object").nunique(dropna=False) > 1
    n = rows["device"].nunique()
    return n if n > 1 and several_batches else 1


def energy_vs_gpu_freq_figure(
    df: pd.DataFrame,
    *,
    metric: str | None = None,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Figure:
    """Energy against GPU frequency for one workload: a line per device x batch size (mean
    over any other operating-point dimension, e.g. CPU frequency), each minimum marked; a
    panel per device when several devices ran several batch sizes."""
    rows = _energy(df, metric)
    if batch_size is not None:
        rows = rows[rows["batch_size"] == batch_size]
        if rows.empty:
            raise NotDrawn(f"no energy result at batch size {batch_size}")
    rows = _sweep(rows, "gpu_freq_hz", workload)
    rows, config = _one_configuration(rows)
    metric = str(rows["metric"].iloc[0])
    fig, panels = _panels(_device_panels(rows))
    what, knobs = _freq_lines(fig, rows, panels, [(metric, rows)], mark_min=True)
    text = f"{_label(metric)} vs GPU frequency: {rows['workload'].iloc[0]}{what}{config}{knobs}"
    if len(panels) > 1:
        _suptitle(fig, text, rows)
    else:
        _title(panels[0][0], text, rows)
    return fit_titles(fig)


def latency_power_vs_gpu_freq_figure(
    df: pd.DataFrame, *, workload: str | None = None, batch_size: int | None = None
) -> Figure:
    """Latency (or window duration) and mean power against GPU frequency for one workload, a
    line per device x batch size."""
    lat = _latency(df, _LATENCY)
    if batch_size is not None:
        lat = lat[lat["batch_size"] == batch_size]
        if lat.empty:
            raise NotDrawn(f"no latency result at batch size {batch_size}")
    lat = _sweep(lat, "gpu_freq_hz", workload)
    lat, config = _one_configuration(lat)
    lat_metric = str(lat["metric"].iloc[0])
    power = _metric(df, "power_mean").dropna(subset=["gpu_freq_hz"])
    power = power[power["test_id"].isin(set(lat["test_id"]))]
    fig, panels = _panels(_device_panels(lat), rows_each=2, height=6.0)
    metrics = [(lat_metric, lat), ("power_mean", power)]
    what, knobs = _freq_lines(fig, lat, panels, metrics, mark_min=False)
    text = f"latency and power vs GPU frequency: {lat['workload'].iloc[0]}{what}{config}{knobs}"
    if len(panels) > 1:
        _suptitle(fig, text, lat)
    else:
        _title(panels[0][0], text, lat)
    return fit_titles(fig)


def _one_configuration(rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of one configuration (graph mode or runtime, precision and every other
    parameter but the operating point and batch size): the one with the most results,
    offline before a load scenario's; and the title's words for it when there were several
    (lines are never a mean over configurations)."""
    params = rows["params"].fillna("").astype(str)
    configs = [
        _config_of(p, g, pr)
        for p, g, pr in zip(params, rows["graph_mode"], rows["precision"], strict=True)
    ]
    keys = ["\x1f".join(f"{k}={v}" for k, v in c) for c in configs]
    if len(set(keys)) == 1:
        return rows, ""
    rows = rows.assign(line=keys)
    stream = {k: _stream_text(p) is not None for k, p in zip(keys, params, strict=True)}
    count = rows["line"].value_counts()
    chosen = min(count.index, key=lambda k: (stream[k], -count[k], k))
    label = "/".join(v for n, v in dict(configs[keys.index(chosen)]).items() if n in _MAIN_FIELDS)
    n = len(count)
    return rows[rows["line"] == chosen], f", {label or chosen} (1 of {n} configurations)"


def _batch_ticks(batches: Sequence[int], most: int = 13) -> list[int]:
    """Batch sizes to tick: all of them, or those that are multiples of a round step."""
    values = sorted(set(batches))
    if len(values) <= most:
        return values
    for step in (2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 512, 1000):
        ticks = [v for v in values if v % step == 0]
        if 2 <= len(ticks) <= 8:
            return ticks
    return [values[0], values[-1]]


def _batch_axis(ax: Axes, batches: Sequence[int]) -> None:
    """Integer ticks at the batch sizes run; a log2 axis when they double (8, 16, 32...)."""
    values = sorted(set(batches))
    if len(values) >= 3 and values[0] >= 1 and all(b >= 1.5 * a for a, b in pairwise(values)):
        ax.set_xscale("log", base=2)
    ticks = _batch_ticks(values)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xticks([], minor=True)
    ax.set_xlabel(_label("batch_size"))


def _op_text(op: Any) -> str:
    from pytest_edgeenergy.report.keys import op_label

    return op_label(str(op))  # the label as it is; a canonical key (older tables) as label


def _op_order(rows: pd.DataFrame) -> list[Any]:
    """Operating points by GPU, CPU, EMC frequency (unpinned first), then label."""
    first = rows.groupby("op")[["gpu_freq_hz", "cpu_freq_hz", "emc_freq_hz"]].first()

    def key(op: Any) -> tuple[float, float, float, str]:
        freqs = [float(v) if v == v and v is not None else -1.0 for v in first.loc[op]]
        return (freqs[0], freqs[1], freqs[2], _op_text(op))

    return sorted(first.index, key=key)


_MAIN_FIELDS = ("graph", "precision", "device", "op")
"""The parts of a configuration a legend names first: graph mode (the runtime in its place
when it is not torch, as in the benchmark table's config column), precision, device,
operating point."""

Config = tuple[tuple[str, str], ...]
"""A configuration of a workload: ``(name, value)`` of each part, :data:`_MAIN_FIELDS`
first, then the other parameters by name."""


def _config_pairs(params: str) -> tuple[tuple[str, str], ...]:
    """A row's parameters that say which experiment it was: every pair of ``params`` but
    records of how the run went (a JSON object or list, as a training run's
    ``training_timing``), which differ from run to run."""
    from pytest_edgeenergy.report.keys import split_params

    return tuple((k, v) for k, v in split_params(params) if not v.startswith(("{", "[")))


def _config_of(params: str, graph_mode: Any, precision: Any, op: Any = None) -> Config:
    """The configuration of a row (without the operating point when ``op`` is None)."""
    from pytest_edgeenergy.report.keys import graph_shown

    pairs = dict(_config_pairs(params))
    main = {
        "graph": graph_shown(graph_mode, pairs.pop("runtime", None)),
        "precision": precision,
        "device": pairs.pop("device", None),
        "op": _op_text(op) if op is not None else None,
    }
    known = [(k, str(v)) for k, v in main.items() if isinstance(v, str) and v]
    return tuple(known + sorted(pairs.items()))


def _stream_text(params: str) -> str | None:
    """``fixed-rate@30/s`` for a result of a load scenario; None offline."""
    pairs = dict(_config_pairs(params))
    scenario = pairs.get("scenario")
    if scenario in (None, "offline"):
        return None
    rate = pairs.get("rate_hz")
    return f"{scenario}@{rate}/s" if rate else scenario


def _streams_note(streams: pd.DataFrame) -> str:
    """``left out: mobilenet_v2 fixed-rate@30/s at batch 1 (...)``."""
    seen = dict.fromkeys(
        f"{w} {_stream_text(p)}" + (f" at batch {_batch(b)}" if _batch(b) is not None else "")
        for w, p, b in zip(
            streams["workload"], streams["params"], streams["batch_size"], strict=True
        )
    )
    return (
        f"left out: {', '.join(seen)} (a load scenario: its energy per item includes the "
        "idle time between queries)"
    )


def _labels(configs: Sequence[Config]) -> tuple[dict[Config, str], str]:
    """Legend labels naming what differs between ``configs`` (the main parts; the other
    parameters only where two would read the same) and the legend's title (what the
    labels name, and the main parts every line shares)."""
    parts = [dict(c) for c in configs]
    varying = [n for n in _MAIN_FIELDS if len({p.get(n) for p in parts}) > 1]
    shared = [parts[0][n] for n in _MAIN_FIELDS if n not in varying and n in parts[0]]
    labels = {
        c: "/".join(p[n] for n in varying if n in p) for c, p in zip(configs, parts, strict=True)
    }
    for c, p in zip(configs, parts, strict=True):
        twins = [dict(o) for o in configs if o != c and labels[o] == labels[c]]
        if twins:  # the same main parts: name the other parameters that differ
            extra = [
                f"{k}={v}"
                for k, v in p.items()
                if k not in _MAIN_FIELDS and any(t.get(k) != v for t in twins)
            ]
            labels[c] = " ".join([labels[c], *extra]).strip()
    title = "operating point" if varying in (["op"], []) else "configuration"
    if shared:
        title += f" (all {'/'.join(shared)})"
    return labels, title


def _batch_sweep(rows: pd.DataFrame, workload: str | None, note: str) -> pd.DataFrame:
    """Rows of one workload where a configuration (column ``line``) ran two or more batch
    sizes: ``workload``, or the workload with the most such results."""
    known = rows.dropna(subset=["batch_size"])
    if workload is not None:
        known = known[known["workload"] == workload]
        if known.empty:
            raise NotDrawn(f"workload {workload!r} has no result with a batch size{note}")
    if known.empty:
        raise NotDrawn(_missing("batch_size") + note)
    per_line = known.groupby(["workload", "line"])["batch_size"].nunique()
    swept = per_line[per_line >= 2].index.get_level_values("workload").unique()
    if swept.empty:
        values = _values_text("batch_size", list(known["batch_size"].unique()))
        if known.groupby("workload")["batch_size"].nunique().max() < 2:
            raise NotDrawn(
                f"one batch size per workload only ({values}); the plot needs two or more{note}"
            )
        raise NotDrawn(
            f"one batch size per configuration only ({values}); a line needs two or more of"
            f" one configuration (graph mode or runtime, precision, operating point){note}"
        )
    chosen = known[known["workload"].isin(swept)]["workload"].value_counts().index[0]
    return known[known["workload"] == chosen]


def energy_vs_batch_figure(
    df: pd.DataFrame,
    *,
    device: str | None = None,
    workload: str | None = None,
    metric: str | None = None,
) -> Figure:
    """Energy against batch size for one workload, a panel per device (or ``device``), a
    line per configuration (graph mode or runtime, precision, operating point and every
    other parameter: never an average over several). Results of a load scenario (a
    stream) are left out, and the title (or the reason it is not drawn) says which:
    their energy per item includes the idle time between queries."""
    rows = _energy(df, metric)
    if device is not None:
        rows = rows[rows["device"] == device]
        if rows.empty:
            raise NotDrawn(f"no energy result of device {device!r}")
    params = rows["params"].fillna("").astype(str)
    stream = params.map(lambda p: _stream_text(p) is not None)
    streams = rows[stream]
    configs = [
        _config_of(p, g, pr, op)
        for p, g, pr, op in zip(
            params, rows["graph_mode"], rows["precision"], rows["op"], strict=True
        )
    ]
    keys = {c: "\x1f".join(f"{k}={v}" for k, v in c) for c in configs}
    rows = rows.assign(line=[keys[c] for c in configs])[~stream]
    note = f"; {_streams_note(streams)}" if not streams.empty else ""
    rows = _batch_sweep(rows, workload, note)
    name = str(rows["workload"].iloc[0])
    streams = streams[streams["workload"] == name]
    metric = str(rows["metric"].iloc[0])
    devices = sorted(rows["device"].unique())
    fig, panels = _panels(len(devices))
    ops = _op_order(rows)
    op_of = rows.groupby("line")["op"].first()
    by_key = {k: c for c, k in keys.items()}
    lines = sorted(set(rows["line"]), key=lambda k: (ops.index(op_of[k]), by_key[k]))
    labels, legend_title = _labels([by_key[k] for k in lines])
    cmap = _colormap(len(lines))
    for dev, (ax,) in zip(devices, panels, strict=True):
        part = rows[rows["device"] == dev]
        shown = 0
        for i, key in enumerate(lines):
            series = part[part["line"] == key].groupby("batch_size")["value"].mean().sort_index()
            if series.empty:
                continue
            shown += 1
            ax.plot(
                series.index.to_numpy(dtype=float),
                series.to_numpy(),
                marker="o" if len(series) < 20 else None,
                markersize=3,
                color=cmap(i),
                label=labels[by_key[key]],
            )
        _batch_axis(ax, [int(b) for b in part["batch_size"].unique()])
        ax.set_ylabel(_label(metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2 if shown > 8 else 1, title=legend_title, title_fontsize=7)
        if len(devices) > 1:
            ax.set_title(str(dev), fontsize=9)
    text = f"{_label(metric)} vs batch size: " + (
        name if len(devices) > 1 else f"{devices[0]}, {name}"
    )
    if not streams.empty:
        text += f"\n{_streams_note(streams)}"
    if len(devices) > 1:
        _suptitle(fig, text, rows)
    else:
        _title(panels[0][0], text, rows)
    return fit_titles(fig)


def pareto_figure(
    df: pd.DataFrame, *, workload: str | None = None, batch_size: int | None = None
) -> Figure:
    """Latency against energy per configuration of one workload and batch size, the Pareto
    front of each device drawn (its non-dominated points ringed and connected), and DVFS
    (governor-chosen) points marked apart from pinned ones."""
    energy = _energy(df, None)
    lat = _latency(df, _PARETO_LATENCY)
    keys = ["source", "run_id", "test_id"]
    joined = energy[
        [*keys, "device", "simulated", "dvfs", "workload", "batch_size", "metric", "value"]
    ].merge(lat[[*keys, "metric", "value"]], on=keys, suffixes=("_energy", "_latency"))
    for column, wanted in (("workload", workload), ("batch_size", batch_size)):
        if wanted is not None:
            joined = joined[joined[column] == wanted]
    best: pd.DataFrame | None = None
    for _, part in joined.groupby(["workload", "batch_size"], dropna=False, sort=True):
        if len(part) >= 2 and (best is None or len(part) > len(best)):
            best = part
    if best is None:
        raise NotDrawn(
            "one result per workload and batch size with both energy and latency;"
            " a front needs two or more"
        )
    joined = best
    e_metric, l_metric = str(joined["metric_energy"].iloc[0]), str(joined["metric_latency"].iloc[0])
    fig = _figure()
    ax = fig.add_subplot()
    for i, (dev, part) in enumerate(joined.groupby("device", sort=True)):
        color = f"C{i % 10}"
        xs = _scaled(l_metric, part["value_latency"].to_numpy())
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
        ax.plot(
            front_x, front_y, color=color, linewidth=1.5, marker="o", markersize=7,
            markerfacecolor="none", markeredgewidth=1.2, label=f"{dev}: Pareto front",
        )  # fmt: skip
    ax.set_xlabel(_label(l_metric))
    ax.set_ylabel(_label(e_metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    batch = _batch(joined["batch_size"].iloc[0])
    what = f", batch {batch}" if batch is not None else ""
    _title(ax, f"latency vs energy, Pareto front: {joined['workload'].iloc[0]}{what}", joined)
    return fit_titles(fig)


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


def cross_device_figure(df: pd.DataFrame, *, metric: str | None = None) -> Figure:
    """Bars per workload, one per device: the best (lowest) energy over the operating points
    and batch sizes each device ran; a panel per energy metric (J/item, J/window)."""
    rows = _energy(df, metric)
    present = set(rows["metric"])
    metrics = [m for m in ENERGY_METRICS if m in present] + sorted(present - set(ENERGY_METRICS))
    bests = [
        rows[rows["metric"] == m].groupby(["workload", "device"])["value"].min().unstack("device")
        for m in metrics
    ]
    widest = max(len(b.index) for b in bests)
    fig = _figure(max(6.0, 1.2 * widest + 3), 4.5 * len(metrics))
    for m, best, ax in zip(
        metrics, bests, fig.subplots(len(metrics), 1, squeeze=False)[:, 0], strict=True
    ):
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
        ax.set_ylabel(f"lowest {_label(m)}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        _title(ax, f"{_label(m)} per device (best operating point)", rows)
    return fit_titles(fig)


def _saved(build: Callable[[], Figure], path: Path) -> Path | None:
    try:
        return _save(build(), path)
    except NotDrawn:
        return None


def plot_heatmap(
    df: pd.DataFrame,
    path: Path,
    *,
    x: str = "gpu_freq_hz",
    y: str = "cpu_freq_hz",
    metric: str | None = None,
    device: str | None = None,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """:func:`heatmap_figure` written to ``path``; None when not drawn."""
    return _saved(
        lambda: heatmap_figure(
            df, x=x, y=y, metric=metric, device=device, workload=workload, batch_size=batch_size
        ),
        path,
    )


def plot_energy_vs_gpu_freq(
    df: pd.DataFrame,
    path: Path,
    *,
    metric: str | None = None,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """:func:`energy_vs_gpu_freq_figure` written to ``path``; None when not drawn."""
    return _saved(
        lambda: energy_vs_gpu_freq_figure(
            df, metric=metric, workload=workload, batch_size=batch_size
        ),
        path,
    )


def plot_latency_power_vs_gpu_freq(
    df: pd.DataFrame,
    path: Path,
    *,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """:func:`latency_power_vs_gpu_freq_figure` written to ``path``; None when not drawn."""
    return _saved(
        lambda: latency_power_vs_gpu_freq_figure(df, workload=workload, batch_size=batch_size),
        path,
    )


def plot_energy_vs_batch(
    df: pd.DataFrame,
    path: Path,
    *,
    device: str | None = None,
    workload: str | None = None,
    metric: str | None = None,
) -> Path | None:
    """:func:`energy_vs_batch_figure` written to ``path``; None when not drawn."""
    return _saved(
        lambda: energy_vs_batch_figure(df, device=device, workload=workload, metric=metric),
        path,
    )


def plot_pareto(
    df: pd.DataFrame,
    path: Path,
    *,
    workload: str | None = None,
    batch_size: int | None = None,
) -> Path | None:
    """:func:`pareto_figure` written to ``path``; None when not drawn."""
    return _saved(lambda: pareto_figure(df, workload=workload, batch_size=batch_size), path)


def plot_cross_device(df: pd.DataFrame, path: Path, *, metric: str | None = None) -> Path | None:
    """:func:`cross_device_figure` written to ``path``; None when not drawn."""
    return _saved(lambda: cross_device_figure(df, metric=metric), path)


FIGURES: tuple[tuple[str, Callable[[pd.DataFrame], Figure]], ...] = (
    ("cross_device", cross_device_figure),
    ("energy_topology", heatmap_figure),
    ("energy_vs_gpu_freq", energy_vs_gpu_freq_figure),
    ("latency_power_vs_gpu_freq", latency_power_vs_gpu_freq_figure),
    ("energy_vs_batch", energy_vs_batch_figure),
    ("pareto", pareto_figure),
)
"""The figures of :func:`render_all`, by file name (without prefix and ``.png``)."""


def render_all(df: pd.DataFrame, out_dir: Path, prefix: str = "") -> Rendered:
    """Every figure the table supports, written as ``out_dir/<prefix><name>.png``; a note
    per figure not drawn, saying why."""
    written: list[Path] = []
    notes: list[PlotNote] = []
    for name, build in FIGURES:
        try:
            fig = build(df)
        except NotDrawn as exc:
            notes.append(PlotNote(name, str(exc)))
            continue
        written.append(_save(fig, out_dir / f"{prefix}{name}.png"))
    return Rendered(tuple(written), tuple(notes))


def _colormap(n: int) -> Any:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return lambda i: cmap(0.85 * i / max(n - 1, 1))


def render_loudva_figures(csv_path: Path, out_dir: Path, batch_size: int = 8) -> list[Path]:
    """The manual's figures from the LoudVA table: energy per item against GPU frequency per
    device at ``batch_size``, and against batch size per GPU frequency (Nano)."""
    from pytest_edgeenergy.report.external import load_loudva_csv

    frame = load_loudva_csv(csv_path)
    made = [
        plot_energy_vs_gpu_freq(
            frame, out_dir / "loudva_energy_vs_gpufreq.png", batch_size=batch_size
        ),
        plot_energy_vs_batch(frame, out_dir / "loudva_energy_vs_batch.png", device="Jetson Nano"),
    ]
    return [p for p in made if p is not None]
