"""Player specs: the strings that name a player on the command line and in league records.

The scripted bots are each game's (`Game.bots`): ``random`` plays every game, ``tactical`` and
``lookahead`` Connect Four, ``greedy``, ``defensive``, ``heuristic`` and ``mcts<N>`` Dots and
Boxes, and ``perfect`` is the exact solver (Connect Four's on small boards, Dots and Boxes' up
to 3x3 boxes); a
path to a ``.pt`` file is a checkpoint played greedily by its network, and a registry URI
(``models:/connect4@champion``, ``models:/connect4/7``, ``models:/connect4/Production``) is a
registered snapshot, fetched by the caller's `registry` function (the CLI's reads MLflow through
`c4core.tracking.uris`; this module never imports it). Any network spec followed by ``+mcts<N>``
plays with N simulations of search per move (`c4core.learners.search`), and ``+mcts<N>+probe<P>`` also
probes the exact solver at search leaves of at least P stones (search plus an oracle: its
strength is not the network's own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from c4core.games import GAMES, ConnectFour, Game, solvable
from c4core.games.players import Player

if TYPE_CHECKING:
    from c4core.learners.net import Checkpoint

RegistryFetch = Callable[[str], "tuple[Checkpoint, str]"]
"""Fetches a ``models:/`` URI: the checkpoint and the player's name (``connect4/7``)."""

SEARCH_SUFFIX = "+mcts"
"""``SPEC+mcts256``: the network player SPEC names, with 256 simulations of search per move."""
PROBE_SUFFIX = "+probe"
"""``SPEC+mcts256+probe20``: that search, probing the exact solver at leaves of 20+ stones."""


def make_player(
    spec: str, game: Game = ConnectFour(), device: str = "cpu", registry: RegistryFetch | None = None
) -> Player:
    """Build the player of `game` a spec names; `ValueError` with the accepted forms when it
    names none, or names a player of another game. A registry URI needs `registry`, which
    fetches it."""
    head, sep, stones = spec.rpartition(PROBE_SUFFIX)
    if sep and stones.isascii() and stones.isdigit():
        from c4core.learners.search import SearchPlayer

        inner = make_player(head, game, device, registry)
        if not isinstance(inner, SearchPlayer) or inner.config.probe_from:
            raise ValueError(f"{PROBE_SUFFIX}<stones> goes after a search ({head}+mcts<N>), in {spec!r}")
        if not solvable(game):
            raise ValueError(f"{PROBE_SUFFIX} probes the exact solver: {game.title} has none")
        moves = game.max_game_length
        if not 1 <= int(stones) <= moves:
            raise ValueError(f"{PROBE_SUFFIX} needs a count of moves played within 1..{moves}, in {spec!r}")
        return SearchPlayer(inner.net, None, replace(inner.config, probe_from=int(stones)), inner.net_name)
    head, sep, sims = spec.rpartition(SEARCH_SUFFIX)
    if sep and head and sims.isascii() and sims.isdigit():
        from c4core.learners.search import SearchPlayer  # a network player with search on top

        return SearchPlayer.around(make_player(head, game, device, registry), int(sims))
    if spec.startswith("models:/"):
        if registry is None:
            raise ValueError(f"{spec} is a registry URI: it needs an MLflow tracking URI")
        ckpt, name = registry(spec)
        if ckpt.game != game:
            raise ValueError(f"{spec} plays {ckpt.game.title}, not {game.title}")
        return ckpt.player(name, device=device)
    bots = game.bots()
    if spec in bots:
        return bots[spec]()
    elsewhere = [make() for make in GAMES.values() if spec in make().bots()]
    if elsewhere:
        raise ValueError(f"{spec} plays {', '.join(g.name for g in elsewhere)} only, not {game.title}")
    path = Path(spec)
    if path.suffix == ".pt" or path.is_file():
        from c4core.learners.net import Checkpoint  # torch loads only for snapshots

        ckpt = Checkpoint.load(path)
        if ckpt.game != game:
            raise ValueError(f"{spec} plays {ckpt.game.title}, not {game.title}")
        return ckpt.player(path.stem, device=device)
    raise ValueError(
        f"unknown player {spec!r}: use {', '.join(bots)}, a checkpoint file (.pt), "
        f"or a registry URI (models:/{game.variant}@champion)"
    )
