"""Exhaustive minimax over the game interface, for boards small enough to enumerate: the
oracle that tests check rules, search and learners against."""

from __future__ import annotations

from collections.abc import Callable

from c4core.games import State


def first_player_value(state: State, outcome: Callable[[State], float] | None = None) -> float:
    """The value of `state` for the first player under perfect play by both sides, by a
    memoised minimax that asks each state who moves (so a player may move twice in a row).
    `outcome` scores a finished game for the first player (default: its return)."""
    score = outcome or (lambda s: s.returns()[0])
    memo: dict[State, float] = {}

    def value(s: State) -> float:
        if s in memo:
            return memo[s]
        if s.is_terminal:
            v = score(s)
        else:
            children = [value(s.apply(a)) for a in s.legal_actions()]
            v = max(children) if s.current_player() == 0 else min(children)
        memo[s] = v
        return v

    return value(state)
