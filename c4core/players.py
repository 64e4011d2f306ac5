"""Player specs: the strings that name a player on the command line and in league records.

``random`` and ``tactical`` are the scripted bots, ``perfect`` is the exact solver (small
boards only), and a path to a ``.pt`` file is a checkpoint played greedily by its network.
"""

from __future__ import annotations

from pathlib import Path

from c4core.bots import BOTS, Player
from c4core.game import STANDARD, Geometry


def make_player(spec: str, geometry: Geometry = STANDARD, device: str = "cpu") -> Player:
    """Build the player a spec names; `ValueError` with the accepted forms when it names none."""
    if spec in BOTS:
        return BOTS[spec]()
    if spec == "perfect":
        from c4core.solver import PerfectBot

        return PerfectBot(geometry)
    path = Path(spec)
    if path.suffix == ".pt" or path.is_file():
        from c4core.net import Checkpoint, NetPlayer  # torch loads only for networks

        ckpt = Checkpoint.load(path)
        if ckpt.geometry != geometry:
            raise ValueError(f"{spec} plays {ckpt.geometry}, not {geometry}")
        return NetPlayer(ckpt.build(device), name=path.stem)
    raise ValueError(f"unknown player {spec!r}: use random, tactical, perfect, or a checkpoint file (.pt)")
