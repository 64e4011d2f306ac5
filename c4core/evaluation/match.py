"""Matches: N seeded games between two players, both colours equally, with random openings.

Games come in pairs that share a random opening of `opening_plies` plies; A moves first in one game
of the pair and B in the other, so first-move advantage never leaks into a rating and greedy players
never replay a single game. Results are reported from A's side, in total and split by who moved
first. Two scripted bots that their game can play in compiled code do so (`Game.kernel_match`:
Connect Four's `random` and `tactical`); anything else steps a batch of the game (`Game.new_batch`),
each player acting on the games where it is to move, whoever that is after the last move (in Dots
and Boxes a player who completes a box moves again).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from c4core.games import ConnectFour, Game

if TYPE_CHECKING:  # torch loads only when a network plays, so bot-only matches start fast
    import torch

    from c4core.games.players import Player


@dataclass(frozen=True)
class WDL:
    """Wins, draws and losses from one player's side."""

    win: int = 0
    draw: int = 0
    loss: int = 0

    @property
    def games(self) -> int:
        return self.win + self.draw + self.loss

    @property
    def score(self) -> float:
        """Points per game, a draw counting half."""
        return (self.win + 0.5 * self.draw) / self.games if self.games else 0.0

    def __add__(self, other: WDL) -> WDL:
        return WDL(self.win + other.win, self.draw + other.draw, self.loss + other.loss)

    def flipped(self) -> WDL:
        """The same games from the other side: wins become losses."""
        return WDL(self.loss, self.draw, self.win)

    @classmethod
    def of(cls, outcomes: np.ndarray) -> WDL:
        return cls(int((outcomes > 0).sum()), int((outcomes == 0).sum()), int((outcomes < 0).sum()))


@dataclass(frozen=True)
class MatchResult:
    """The record of one match, from A's side."""

    a: str
    """Name of player A."""
    b: str
    """Name of player B."""
    seed: int
    """Seed of the openings and of every random choice."""
    opening_plies: int
    """Random plies played before the players take over."""
    a_first: WDL
    """A's results in the games where A moved first."""
    b_first: WDL
    """A's results in the games where B moved first."""
    seconds: float = field(default=0.0, compare=False)
    """Wall time the match took."""

    @property
    def total(self) -> WDL:
        return self.a_first + self.b_first

    @property
    def games(self) -> int:
        return self.total.games

    def to_record(self) -> dict[str, Any]:
        """The JSON match record (`c4 elo` reads these)."""
        t = self.total
        return {
            "a": self.a,
            "b": self.b,
            "games": self.games,
            "seed": self.seed,
            "opening_plies": self.opening_plies,
            "win": t.win,
            "draw": t.draw,
            "loss": t.loss,
            "a_first": {"win": self.a_first.win, "draw": self.a_first.draw, "loss": self.a_first.loss},
            "b_first": {"win": self.b_first.win, "draw": self.b_first.draw, "loss": self.b_first.loss},
            "seconds": round(self.seconds, 4),
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> MatchResult:
        return cls(
            a=rec["a"],
            b=rec["b"],
            seed=int(rec.get("seed", 0)),
            opening_plies=int(rec.get("opening_plies", 0)),
            a_first=WDL(**rec["a_first"]),
            b_first=WDL(**rec["b_first"]),
            seconds=float(rec.get("seconds", 0.0)),
        )


def head_to_head(results: Iterable[MatchResult], a: str, b: str) -> WDL | None:
    """A's wins, draws and losses against B in their recorded match, whichever side recorded it;
    None when they have not played."""
    for r in results:
        if (r.a, r.b) == (a, b):
            return r.total
        if (r.a, r.b) == (b, a):
            return r.total.flipped()
    return None


def play_match(
    a: Player,
    b: Player,
    games: int,
    seed: int = 0,
    opening_plies: int = 4,
    game: Game = ConnectFour(),
    device: str = "cpu",
    batch_pairs: int = 4096,
) -> MatchResult:
    """Play `games` games (an even number) of `game` between A and B and return A's record."""
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise ValueError(f"games must be an even number of at least 2 (both colours), got {games!r}")
    if not 0 <= opening_plies < game.max_game_length:
        raise ValueError(f"opening_plies must be between 0 and {game.max_game_length - 1}")
    start = time.perf_counter()
    kernel_match = getattr(game, "kernel_match", None)
    out = kernel_match(a, b, games // 2, seed, opening_plies) if kernel_match is not None else None
    if out is None:
        import torch

        chunks = []
        pairs = games // 2
        for i, lo in enumerate(range(0, pairs, batch_pairs)):
            n = min(batch_pairs, pairs - lo)
            gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
            chunks.append(_play_batch(a, b, n, opening_plies, game, device, gen))
        out = np.concatenate(chunks)
    return MatchResult(
        a=a.name,
        b=b.name,
        seed=seed,
        opening_plies=opening_plies,
        a_first=WDL.of(out[0::2]),
        b_first=WDL.of(out[1::2]),
        seconds=time.perf_counter() - start,
    )


def _play_batch(
    a: Player,
    b: Player,
    pairs: int,
    opening_plies: int,
    game: Game,
    device: str,
    gen: torch.Generator,
) -> np.ndarray:
    """Outcomes from A's side for `pairs` game pairs; game 2i has A first, 2i+1 B first."""
    import torch

    from c4core.games.players import play_opening

    boards = game.new_batch(2 * pairs, device)
    play_opening(boards, opening_plies, gen, paired=True)
    a_seat = torch.arange(2 * pairs, device=boards.device) % 2  # A is player 0 in even games
    while not bool(boards.done.all()):
        a_to_move = boards.to_move() == a_seat
        cols = torch.zeros(len(boards), dtype=torch.int64, device=boards.device)
        for player, turn in ((a, a_to_move), (b, ~a_to_move)):
            idx = torch.nonzero(turn & ~boards.done).squeeze(1)
            if len(idx):
                cols[idx] = player.act(boards.select(idx), gen).to(boards.device)
        boards.play(cols)
    returns = boards.returns().cpu()
    return returns[torch.arange(2 * pairs), a_seat.cpu()].numpy().astype(np.int8)
