"""Dots and Boxes' scripted bots, the baselines of the AlphaZero-style 4x4 system we measure
against: `greedy` takes a box whenever it can, `defensive` never draws a box's third side while
a safe line remains, `heuristic` is both and, when every line gives boxes away, opens the
smallest chain or loop, and `mcts<N>` is plain Monte Carlo tree search with random rollouts and
N simulations a move (compiled: `kernels`).

A line is *safe* when it hands the opponent nothing: it completes a box (the mover moves again)
or it gives no box its third side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from c4core.games.players import Player, sample_actions

if TYPE_CHECKING:  # torch is imported where it is used, so bot-only commands start fast
    import torch

    from c4core.games.dots_and_boxes.batch import DotsBoards

MCTS = "mcts"
"""The prefix of the `mcts<N>` bots' names: ``mcts1000`` searches 1,000 simulations a move."""
MCTS_EXPLORATION = 1.4
"""UCB1's exploration constant c of the `mcts<N>` bots (about sqrt 2, Kocsis and Szepesvari)."""


def _takes(boards: DotsBoards) -> torch.Tensor:
    """[n, lines] bool: the lines completing the most boxes, in the games where a line completes one."""
    captures = boards.captures()
    best = captures.max(1, keepdim=True).values
    return (captures == best) & (captures > 0)


def safe_lines(boards: DotsBoards) -> torch.Tensor:
    """[n, lines] bool: the legal lines that hand the opponent nothing (module docstring)."""
    return boards.legal() & ((boards.captures() > 0) | (boards.offers() == 0))


class GreedyBot(Player):
    """Dots and Boxes' baseline: take a box whenever it can (the line that completes the most
    boxes), otherwise a uniformly random line. It never looks at what a line gives away."""

    name = "greedy"

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        takes = _takes(boards)
        return sample_actions(torch.where(takes.any(1, keepdim=True), takes, boards.legal()), generator)


class DefensiveBot(Player):
    """A uniformly random safe line while one remains, else a uniformly random line. It takes a
    box only when its draw happens to fall on one."""

    name = "defensive"

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        safe = safe_lines(boards)
        return sample_actions(torch.where(safe.any(1, keepdim=True), safe, boards.legal()), generator)


class HeuristicBot(Player):
    """`greedy` and `defensive` together: take the most boxes a line completes; else a uniformly
    random safe line; else, every line giving boxes away, one that gives the fewest (the
    smallest chain or loop opened, counted as every box the opponent can then take in a row).
    It never declines boxes, so it never plays a double-cross."""

    name = "heuristic"

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import torch

        takes, safe, legal = _takes(boards), boards.legal() & (boards.offers() == 0), boards.legal()
        forced = ~takes.any(1) & ~safe.any(1) & legal.any(1)
        least = torch.zeros_like(legal)
        if bool(forced.any()):
            rows = torch.nonzero(forced).squeeze(1)
            given = boards.select(rows).gives_away()
            given = torch.where(legal[rows], given, given.max() + 1)
            least[rows] = legal[rows] & (given == given.min(1, keepdim=True).values)
        weights = torch.where(
            takes.any(1, keepdim=True), takes, torch.where(safe.any(1, keepdim=True), safe, least)
        )
        return sample_actions(weights, generator)


class MctsBot(Player):
    """Plain UCT with uniformly random rollouts, `simulations` a move, its most visited line
    (`kernels.search`); each search seeded from the caller's generator."""

    def __init__(self, simulations: int = 1000, exploration: float = MCTS_EXPLORATION):
        if simulations < 1:
            raise ValueError(f"{MCTS}<N> needs at least one simulation, got {simulations}")
        self.simulations = simulations
        self.exploration = exploration
        self.name = f"{MCTS}{simulations}"

    def act(self, boards: DotsBoards, generator: torch.Generator | None = None) -> torch.Tensor:
        import numpy as np
        import torch

        from c4core.games.dots_and_boxes import kernels

        boxes = boards.boxes
        out = torch.zeros(len(boards), dtype=torch.int64)
        live = torch.nonzero(~boards.done.cpu()).squeeze(1)
        if len(live):
            m = boards.margin().cpu()[live]
            leads = torch.where(boards.player.cpu()[live] == 0, m, -m).numpy()
            seed = int(torch.randint(1 << 30, (1,), generator=generator))
            out[live] = torch.from_numpy(
                kernels.search_many(
                    boards.lines.cpu()[live].numpy(), leads, self.simulations, seed, boxes.lines,
                    np.array(boxes.line_boxes, np.int64), np.array(boxes.box_masks, np.int64),
                    self.exploration,
                )
            )  # fmt: skip
        return out.to(boards.device)
