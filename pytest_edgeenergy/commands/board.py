"""``edgeenergy board [show|restore]``: identity, rails and knobs of a board, or restore the
knobs a killed session changed."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .common import CliError, board_arguments
from .common import target as board_target


def add_parser(sub: Any) -> None:
    """``edgeenergy board``, on the command's subparsers ``sub``."""
    b = sub.add_parser("board", help="identity, rails and knobs of a board (or restore it)")
    b.add_argument(
        "action",
        nargs="?",
        choices=("show", "restore"),
        default="show",
        help="show (default) or restore the knobs a killed session changed",
    )
    board_arguments(b)
    b.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    return _restore(args) if args.action == "restore" else _board(args)


def _board(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from ..board.detect import board_json, detect
    from ..meters.native import board_sampler
    from ..run.target import make_virtual_board

    target = board_target(args)
    with ExitStack() as stack:
        root = target.root
        if root is None:
            assert target.sim_model is not None
            root = make_virtual_board(target.sim_model, stack)
        data = board_json(detect(root))
    sampler = board_sampler(bool(data["rails"]))
    data["sampler"], data["sampler_note"] = sampler["kind"], sampler["note"]
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(_board_text(data))
    return 0


def _board_text(data: dict[str, Any]) -> str:
    from ..knobs_text import knob_lines

    ident = data["identity"]
    lines = [
        f"model:   {ident.get('model') or 'unknown'}"
        + ("  (SIMULATED virtual board)" if ident.get("simulated") else ""),
        f"soc:     {ident.get('soc') or '-'}   L4T {ident.get('l4t') or '-'}   "
        f"JetPack {ident.get('jetpack') or '-'}",
    ]
    total = data["total"]
    lines.append(
        "total:   "
        + (f"rail {total['rail']}" if total["method"] == "rail" else "sum of all rails")
        + (f"  ({total['note']})" if total.get("note") else "")
    )
    lines.append("rails:")
    for r in data["rails"]:
        where = (
            f"{r.get('chip', '')} {r.get('layout', '')} {r.get('device', '')} ch{r.get('channel')}"
        )
        lines.append(
            f"  {r['name']:<20} {where:<28} {r.get('unit', '')}"
            + ("  (total)" if r["is_total"] else "")
        )
    if data.get("sampler"):
        note = data.get("sampler_note")
        lines.append(f"sampler: {data['sampler']}" + (f"  ({note})" if note else ""))
    modes = data.get("power_modes") or []
    if modes:
        lines.append("power modes: " + ", ".join(f"{m['id']} {m['name']}" for m in modes))
    current = data.get("current_power_mode")
    if current:
        lines.append(f"current power mode: {current['id']} {current['name']}")
    lines.extend(knob_lines(data["knobs"]))
    return "\n".join(lines)


def _restore(args: argparse.Namespace) -> int:
    from ..control.state import restore_leftover

    target = board_target(args)
    if target.root is None:
        raise CliError(
            f"board restore --board {target.text}: a virtual board made for this command "
            "has nothing to restore; name the board with --root DIR (/ on a Jetson)"
        )
    result = restore_leftover(target.root)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.message)
    return 0 if result.ok else 1
