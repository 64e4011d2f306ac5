"""Compiled Dots and Boxes: plain Monte Carlo tree search with random rollouts, the `mcts<N>`
baseline bots, in numba so that a 400-game match against them stays short; its `closes`, the
boxes a line completes, serves the endgame search (`endgame`) too.

One search is UCT (Kocsis and Szepesvari 2006) on the line bitboard of `rules`: from the root,
each simulation descends by UCB1 (the mean result of a child from the view of the player who
moved into it, plus ``c * sqrt(ln N_parent / N_child)``), expands one untried line, plays at
random to the end, and backs the game's result (+1, 0, -1 by the final box difference) up the
path, each node's from the view of the player who moved into it. The player to move is carried
along, never derived from the depth: a line that completes a box keeps the turn. The move played
is the root's most visited line. Nothing is shared between searches, so a search is a function
of its position and its seed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def closes(lines: np.int64, line: np.int64, line_boxes: np.ndarray, box_masks: np.ndarray) -> np.int64:
    """The boxes that drawing `line` onto `lines` completes (0, 1 or 2)."""
    after = lines | (np.int64(1) << line)
    n = 0
    for k in range(2):
        b = line_boxes[line, k]
        if b >= 0 and after & box_masks[b] == box_masks[b]:
            n += 1
    return n


@njit(cache=True)
def _random_line(lines: np.int64, n_lines: int) -> np.int64:
    """A uniformly random undrawn line of `lines` (which must have one)."""
    free = 0
    for a in range(n_lines):
        if not (lines >> a) & 1:
            free += 1
    k = np.random.randint(free)
    for a in range(n_lines):
        if not (lines >> a) & 1:
            if k == 0:
                return np.int64(a)
            k -= 1
    return np.int64(-1)


@njit(cache=True)
def _rollout(
    lines: np.int64, n_lines: int, full: np.int64, line_boxes: np.ndarray, box_masks: np.ndarray
) -> int:
    """Uniformly random play from `lines` to the end: the boxes the player to move there takes,
    minus the other player's."""
    margin, sign = 0, 1
    while lines != full:
        line = _random_line(lines, n_lines)
        taken = closes(lines, line, line_boxes, box_masks)
        lines |= np.int64(1) << line
        margin += sign * taken
        if taken == 0:
            sign = -sign
    return margin


@njit(cache=True)
def search(
    lines: np.int64,
    lead: int,
    simulations: int,
    seed: int,
    n_lines: int,
    line_boxes: np.ndarray,
    box_masks: np.ndarray,
    exploration: float,
) -> np.int64:
    """The line UCT plays in the unfinished position `lines`, whose mover leads by `lead` boxes,
    after `simulations` simulations (`exploration`: UCB1's c)."""
    np.random.seed(seed)
    full = (np.int64(1) << n_lines) - 1
    cap = simulations + 1
    node_lines = np.zeros(cap, np.int64)
    children = np.full((cap, n_lines), -1, np.int64)
    visits = np.zeros(cap, np.float64)
    value = np.zeros(cap, np.float64)  # summed results, from the view of whoever moved into the node
    gain = np.zeros(cap, np.int64)  # the boxes the move into the node took
    path = np.zeros(n_lines + 1, np.int64)
    into = np.zeros(n_lines + 1, np.int64)  # that mover, +1 the root's mover, -1 the other
    node_lines[0] = lines
    count = 1
    untried = np.zeros(n_lines, np.int64)
    for _ in range(simulations):
        node, depth, sign, margin = 0, 0, 1, 0  # sign: the mover at `node`, relative to the root's
        while node_lines[node] != full:
            here = node_lines[node]
            k = 0
            for a in range(n_lines):
                if not (here >> a) & 1 and children[node, a] < 0:
                    untried[k] = a
                    k += 1
            if k > 0:  # expand one untried line, then roll out from it
                line = untried[np.random.randint(k)]
                child = count
                count += 1
                taken = closes(here, line, line_boxes, box_masks)
                node_lines[child] = here | (np.int64(1) << line)
                gain[child] = taken
                children[node, line] = child
            else:  # every line tried: UCB1 over the children
                best, child = -np.inf, -1
                log_n = math.log(visits[node])
                for a in range(n_lines):
                    c = children[node, a]
                    if c >= 0:
                        score = value[c] / visits[c] + exploration * math.sqrt(log_n / visits[c])
                        if score > best:
                            best, child = score, c
            depth += 1
            path[depth], into[depth] = child, sign
            margin += sign * gain[child]
            if gain[child] == 0:
                sign = -sign
            node = child
            if k > 0:
                break
        if node_lines[node] != full:
            margin += sign * _rollout(node_lines[node], n_lines, full, line_boxes, box_masks)
        total = lead + margin
        result = 1.0 if total > 0 else (-1.0 if total < 0 else 0.0)  # for the root's mover
        visits[0] += 1.0
        for d in range(1, depth + 1):
            visits[path[d]] += 1.0
            value[path[d]] += into[d] * result
    best, choice = -1.0, np.int64(-1)
    for a in range(n_lines):
        c = children[0, a]
        if c >= 0 and visits[c] > best:
            best, choice = visits[c], np.int64(a)
    return choice


@njit(cache=True)
def search_many(
    lines: np.ndarray,
    leads: np.ndarray,
    simulations: int,
    seed: int,
    n_lines: int,
    line_boxes: np.ndarray,
    box_masks: np.ndarray,
    exploration: float,
) -> np.ndarray:
    """`search` of each position, the i-th seeded `seed + i`."""
    out = np.zeros(len(lines), np.int64)
    for i in range(len(lines)):
        out[i] = search(
            lines[i], leads[i], simulations, seed + i, n_lines, line_boxes, box_masks, exploration
        )
    return out
