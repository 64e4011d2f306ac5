"""Dots and Boxes' scripted bots: `greedy`, which takes a box whenever it can."""

from __future__ import annotations

from typing import TYPE_CHECKING

from c4core.games.players import Player, sample_actions

if TYPE_CHECKING:  # torch is imported where it is used, so bot-only commands start fast
    import torch

    from c4core.games.base import BatchState


class GreedyBot(Player):
    """Dots and Boxes' baseline: take a box whenever it can (the line that completes the most
    boxes), otherwise a uniformly random line. It never looks at what a line gives away."""

    name = "greedy"

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        captures = boards.captures()  # a `DotsBoards`: only Dots and Boxes names this bot
        best = captures.max(1, keepdim=True).values
        weights = torch.where(best > 0, (captures == best) & (captures > 0), boards.legal())
        return sample_actions(weights, generator)
