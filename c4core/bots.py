"""Players: one interface for every opponent, plus the scripted bots `random`, `tactical`,
`lookahead` and `greedy`.

A `Player` maps a batch of any game's states (`c4core.games.BatchState`) to one action per game.
Matches, the league, self-play and serving only ever call `act`, so a network, a search or a
script all plug in the same way (OpenSpiel's bot idea). `random` plays every game; `tactical` and
`lookahead` are Connect Four's, and also name a compiled kernel, which lets a match between two
of them run entirely in `c4core.kernels`; `greedy` is Dots and Boxes'.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from c4core import kernels
from c4core.games import BatchState, State, game_of

if TYPE_CHECKING:  # torch is imported where it is used, so bot-only commands start fast
    import torch

    from c4core.batch import Boards


class Player(ABC):
    """Something that picks an action for every game of a batch."""

    name: str = "player"
    kernel: int | None = None
    """Compiled-kernel id (`c4core.kernels`) when the player is a scripted bot, else None."""
    plays: tuple[str, ...] | None = None
    """The games (`Game.name`) it can play; None: every game of the interface."""

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
        if position.is_terminal:
            raise ValueError("the game is over: there is no move to make")
        return int(self.act(game_of(position).batch_of([position]), generator)[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def sample_columns(weights: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One column per row, drawn with probability proportional to `weights` [n, cols].

    Rows whose weights are all zero (finished games) get an arbitrary column, which
    `Boards.play` ignores.
    """
    import torch

    weights = weights.float()
    empty = weights.sum(1) <= 0
    weights = torch.where(empty.unsqueeze(1), torch.ones_like(weights), weights)
    return torch.multinomial(weights, 1, generator=generator).squeeze(1)


class RandomBot(Player):
    """A uniformly random legal move."""

    name = "random"
    kernel = kernels.RANDOM

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        return sample_columns(boards.legal(), generator)


def play_opening(
    boards: BatchState, plies: int | torch.Tensor, generator: torch.Generator | None, paired: bool = False
) -> torch.Tensor:
    """Open the games of `boards` in place with uniformly random legal moves: `plies` moves in
    every game, or per game when `plies` is a tensor [n] (a game that ends early stops there).
    With `paired`, games 2i and 2i+1 share one opening, as a match's colour-swapped pairs do.
    Returns the moves each game was opened with, [n] int64.

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
    opener = RandomBot()
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


class TacticalBot(Player):
    """Win if it can, block if it must, otherwise a random move weighted towards the centre.

    The weights are 1,2,3,4,3,2,1 on seven columns; this is the reference league's bar.
    """

    name = "tactical"
    kernel = kernels.TACTICAL
    plays = ("connect4",)

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        legal = boards.legal()
        mine, theirs = boards.threats()
        wins = boards.column_bits(mine) & legal
        blocks = boards.column_bits(theirs) & legal
        centre = torch.tensor(boards.geometry.centre_weights, device=boards.device)
        weights = legal * centre
        weights = torch.where(blocks.any(1, keepdim=True), blocks.long(), weights)
        weights = torch.where(wins.any(1, keepdim=True), wins.long(), weights)
        return sample_columns(weights, generator)


class LookaheadBot(Player):
    """`tactical` that also looks one reply ahead: win if it can, block if it must, else play a
    double threat (a move after which it has two winning cells to play, of which the opponent
    can block only one) if it has one, else a centre-weighted random move among those that do
    not hand the opponent a win by filling the cell under it.

    The double threats are what `tactical` wins by, when its random moves happen on one; this
    bot looks for them, so a learner trained against it meets them far more often.
    """

    name = "lookahead"
    plays = ("connect4",)

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        n, cols = len(boards), boards.geometry.cols
        legal = boards.legal()
        mine, theirs = boards.threats()
        wins = boards.column_bits(mine) & legal
        blocks = boards.column_bits(theirs) & legal
        # every move of every game at once: row i * cols + c is game i after this side plays c
        after = boards.select(torch.arange(n, device=boards.device).repeat_interleave(cols))
        tried = legal.reshape(-1)
        after.play(torch.arange(cols, device=boards.device).repeat(n), tried)
        # after the move the opponent is to move: its threats are `mine` there, ours `theirs`
        replies, ours = after.threats()
        open_cells = after.legal()
        hands_over = (after.column_bits(replies) & open_cells).any(1).reshape(n, cols)
        forks = ((after.column_bits(ours) & open_cells).sum(1) >= 2).reshape(n, cols)
        safe = legal & ~hands_over
        centre = torch.tensor(boards.geometry.centre_weights, device=boards.device)
        weights = torch.where(safe.any(1, keepdim=True), safe, legal) * centre
        weights = torch.where((safe & forks).any(1, keepdim=True), (safe & forks).long(), weights)
        weights = torch.where(blocks.any(1, keepdim=True), blocks.long(), weights)
        weights = torch.where(wins.any(1, keepdim=True), wins.long(), weights)
        return sample_columns(weights, generator)


class GreedyBot(Player):
    """Dots and Boxes' baseline: take a box whenever it can (the line that completes the most
    boxes), otherwise a uniformly random line. It never looks at what a line gives away."""

    name = "greedy"
    plays = ("dots_and_boxes",)

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        captures = boards.captures()  # a `DotsBoards`: `plays` keeps other games out
        best = captures.max(1, keepdim=True).values
        weights = torch.where(best > 0, (captures == best) & (captures > 0), boards.legal())
        return sample_columns(weights, generator)


BOTS: dict[str, type[Player]] = {
    "random": RandomBot,
    "tactical": TacticalBot,
    "lookahead": LookaheadBot,
    "greedy": GreedyBot,
}
