"""Connect Four's scripted bots: `tactical`, the reference league's bar, and `lookahead`.

Both act on `Boards` through its threat bitboards; `tactical` also has a compiled twin in
`kernels`, so a match between it and `random` runs in machine code (`ConnectFour.kernel_match`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from c4core.games.players import Player, sample_actions

if TYPE_CHECKING:  # torch is imported where it is used, so bot-only commands start fast
    import torch

    from c4core.games.connect4.batch import Boards


class TacticalBot(Player):
    """Win if it can, block if it must, otherwise a random move weighted towards the centre.

    The weights are 1,2,3,4,3,2,1 on seven columns; this is the reference league's bar.
    """

    name = "tactical"
    kernel = "tactical"

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
        return sample_actions(weights, generator)


class LookaheadBot(Player):
    """`tactical` that also looks one reply ahead: win if it can, block if it must, else play a
    double threat (a move after which it has two winning cells to play, of which the opponent
    can block only one) if it has one, else a centre-weighted random move among those that do
    not hand the opponent a win by filling the cell under it.

    The double threats are what `tactical` wins by, when its random moves happen on one; this
    bot looks for them, so a learner trained against it meets them far more often.
    """

    name = "lookahead"

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
        return sample_actions(weights, generator)
