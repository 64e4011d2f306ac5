"""Compiled (numba) game loops for the scripted bots: whole matches without leaving machine code.

The tensor engine in `c4core.games.connect4.batch` steps batches one op at a time, and every torch op costs a
few microseconds, which caps bot-only play near half a million games/s. These kernels run the
same bitboard rules (see the layout in `c4core.games.connect4.rules`) one game per loop iteration, compiled,
and spread over cores with ``prange``, which is what a `random` vs `tactical` match needs.

Randomness is a counter-based splitmix64 stream per (seed, game, purpose), so results depend on
the seed alone, never on the thread count or scheduling.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

# OpenMP, numba's default layer, shares its thread pool with torch and resets torch's thread
# count; the plain work-queue layer keeps the two apart.
numba.config.THREADING_LAYER = "workqueue"

#: Kernel ids of the scripted bots (`bots`, and `random` of `c4core.games.players`).
RANDOM, TACTICAL = 0, 1
KERNELS = {"random": RANDOM, "tactical": TACTICAL}
"""The bots (`Player.kernel`) with a compiled twin here, and each one's id."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _mix(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _stream(seed: np.int64, game: np.int64, purpose: np.int64) -> np.uint64:
    return _mix(_mix(np.uint64(seed) + _GOLDEN) ^ _mix(np.uint64(game) * np.uint64(4) + np.uint64(purpose)))


@njit(cache=True, inline="always")
def _next(state: np.uint64) -> tuple:
    state = state + _GOLDEN
    return state, _mix(state)


@njit(cache=True, inline="always")
def has_won(stones: np.int64, height: np.int64, k: np.int64) -> bool:
    for d in (np.int64(1), height, height - 1, height + 1):
        if (k - 1) * d > 62:
            continue  # no run spans that many bits, and a shift by >= 64 is undefined in machine code
        run = stones
        for i in range(1, k):
            run &= stones >> (i * d)
        if run != 0:
            return True
    return False


@njit(cache=True, inline="always")
def winning_cells(
    stones: np.int64, mask: np.int64, height: np.int64, k: np.int64, board: np.int64
) -> np.int64:
    found = np.int64(0)
    for d in (np.int64(1), height, height - 1, height + 1):
        if (k - 1) * d > 62:
            continue  # as in has_won: no run fits, and the shifts below would be undefined
        for j in range(k):
            cand = board
            for i in range(k):
                if i != j:
                    s = (i - j) * d
                    if s > 0:
                        cand &= stones >> s
                    else:
                        cand &= stones << (-s)
            found |= cand
    return found & board & ~mask


@njit(cache=True, inline="always")
def _column_of(bits: np.int64, height: np.int64, cols: np.int64) -> np.int64:
    col_mask = (np.int64(1) << height) - 1
    for c in range(cols):
        if (bits >> (c * height)) & col_mask:
            return c
    return -1


@njit(cache=True, inline="always")
def _pick(
    kind: np.int64,
    cur: np.int64,
    mask: np.int64,
    rows: np.int64,
    cols: np.int64,
    k: np.int64,
    bottom: np.int64,
    board: np.int64,
    state: np.uint64,
) -> tuple:
    height = rows + 1
    possible = (mask + bottom) & board
    if kind == TACTICAL:
        wins = winning_cells(cur, mask, height, k, board) & possible
        if wins != 0:
            return _column_of(wins, height, cols), state
        blocks = winning_cells(cur ^ mask, mask, height, k, board) & possible
        if blocks != 0:
            return _column_of(blocks, height, cols), state
    top = np.int64(1) << (rows - 1)
    total = np.int64(0)
    for c in range(cols):
        if not (mask >> (c * height)) & top:
            total += (min(c, cols - 1 - c) + 1) if kind == TACTICAL else 1
    state, r = _next(state)
    # multiply-shift maps 32 random bits onto [0, total) without a slow 64-bit modulo
    pick = np.int64(((r >> np.uint64(32)) * np.uint64(total)) >> np.uint64(32))
    for c in range(cols):
        if not (mask >> (c * height)) & top:
            w = (min(c, cols - 1 - c) + 1) if kind == TACTICAL else 1
            if pick < w:
                return c, state
            pick -= w
    return -1, state


@njit(cache=True, inline="always")
def _drop(cur: np.int64, mask: np.int64, col: np.int64, height: np.int64) -> tuple:
    new_mask = mask | (mask + (np.int64(1) << (col * height)))
    mover = cur | (new_mask ^ mask)
    return cur ^ mask, new_mask, mover


@njit(cache=True, parallel=True)
def play_match(
    kind_a: int, kind_b: int, pairs: int, seed: int, opening: int, rows: int, cols: int, k: int
) -> np.ndarray:
    """Play `pairs` pairs of games between two scripted bots; both games of a pair share a
    random opening of `opening` plies, and A moves first in the even game of each pair.

    Returns int8 outcomes per game from A's side: 1 win, 0 draw, -1 loss.
    """
    height = np.int64(rows + 1)
    cells = rows * cols
    bottom = np.int64(0)
    for c in range(cols):
        bottom |= np.int64(1) << (c * height)
    board = bottom * ((np.int64(1) << rows) - 1)
    out = np.zeros(2 * pairs, dtype=np.int8)
    for p in prange(pairs):
        for side in range(2):
            cur = np.int64(0)
            mask = np.int64(0)
            ply = 0
            outcome = 0
            over = False
            state = _stream(seed, p, 0)  # the same opening for both games of the pair
            while ply < opening and not over:
                col, state = _pick(RANDOM, cur, mask, rows, cols, k, bottom, board, state)
                cur, mask, mover = _drop(cur, mask, col, height)
                ply += 1
                if has_won(mover, height, k):
                    # player 1 made ply 1, 3, ...; A is player 1 when side == 0
                    first_won = ply % 2 == 1
                    outcome = 1 if first_won == (side == 0) else -1
                    over = True
                elif ply == cells:
                    over = True
            state = _stream(seed, 2 * p + side, 1)
            while not over:
                a_to_move = (ply % 2 == 0) == (side == 0)
                col, state = _pick(
                    kind_a if a_to_move else kind_b, cur, mask, rows, cols, k, bottom, board, state
                )
                cur, mask, mover = _drop(cur, mask, col, height)
                ply += 1
                if has_won(mover, height, k):
                    outcome = 1 if a_to_move else -1
                    over = True
                elif ply == cells:
                    over = True
            out[2 * p + side] = outcome
    return out
