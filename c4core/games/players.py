"""The player interface every opponent implements, the `random` bot, and random openings.

A `Player` maps a batch of any game's states (`c4core.games.BatchState`) to one action per game.
Matches, the league, self-play and serving only ever call `act`, so a network, a search or a
script all plug in the same way (OpenSpiel's bot idea). `random` plays every game; each game
names its own scripted bots (`Game.bots`: Connect Four's `tactical` and `lookahead`, Dots and
Boxes' `greedy`, and `perfect` where the game has an exact solver), and a scripted bot may also
name a compiled kernel of its game (`Player.kernel`), which lets a match between two such bots
run in machine code (`Game.kernel_match`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from c4core.games.base import BatchState, State

if TYPE_CHECKING:  # torch is imported where it is used, so bot-only commands start fast
    import torch


class Player(ABC):
    """Something that picks an action for every game of a batch."""

    name: str = "player"
    kernel: str | None = None
    """The name of a scripted bot that its game can also play in compiled code
    (`Game.kernel_match`), else None."""

    @abstractmethod
    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        """Actions [n] for every game; only those of unfinished games are used.

        Each returned action of an unfinished game must be legal.
        """

    def policy(self, boards: BatchState) -> torch.Tensor | None:
        """The distribution `act` draws from, [n, actions] (0 on illegal actions), where the
        player can say it; None where it cannot (a scripted bot's tie-breaks)."""
        return None

    def act_position(self, position: State, generator: torch.Generator | None = None) -> int:
        """Convenience for a single position (the API, the play page, tests)."""
        from c4core.games import game_of

        if position.is_terminal:
            raise ValueError("the game is over: there is no move to make")
        return int(self.act(game_of(position).batch_of([position]), generator)[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def sample_actions(weights: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One action per row, drawn with probability proportional to `weights` [n, actions].

    Rows whose weights are all zero (finished games) get an arbitrary action, which
    `BatchState.play` ignores.
    """
    import torch

    weights = weights.float()
    empty = weights.sum(1) <= 0
    weights = torch.where(empty.unsqueeze(1), torch.ones_like(weights), weights)
    return torch.multinomial(weights, 1, generator=generator).squeeze(1)


class RandomBot(Player):
    """A uniformly random legal move."""

    name = "random"
    kernel = "random"

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        return sample_actions(boards.legal(), generator)


def play_opening(
    boards: BatchState,
    plies: int | torch.Tensor,
    generator: torch.Generator | None,
    paired: bool = False,
    opener: Player | None = None,
) -> torch.Tensor:
    """Open the games of `boards` in place with `opener`'s moves (None: uniformly random legal
    moves): `plies` moves in every game, or per game when `plies` is a tensor [n] (a game that
    ends early stops there). With `paired`, games 2i and 2i+1 share one opening, as a match's
    colour-swapped pairs do. Returns the moves each game was opened with, [n] int64.

    Matches and the learners open their games here, so a seed draws the same openings
    wherever it is used."""
    import torch

    n, device = len(boards), boards.device
    if paired and n % 2:
        raise ValueError(f"paired openings need an even number of games, got {n}")
    step = 2 if paired else 1
    lead = torch.arange(0, n, step, device=device)  # the games that draw; a pair's second copies
    counts = None if isinstance(plies, int) else plies.to(device)
    most = plies if counts is None else int(counts.max()) if n else 0
    opener = opener or RandomBot()
    played = torch.zeros(n, dtype=torch.int64, device=device)
    for ply in range(most):
        idx = lead if counts is None else lead[(counts[lead] > ply) & ~boards.done[lead]]
        cols = opener.act(boards.select(idx), generator).to(device)
        chosen = torch.zeros(n, dtype=torch.int64, device=device)
        moving = torch.zeros(n, dtype=torch.bool, device=device)
        for k in range(step):
            chosen[idx + k], moving[idx + k] = cols, True
        played += moving & ~boards.done
        boards.play(chosen, moving)
    return played
