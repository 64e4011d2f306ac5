"""Dots and Boxes' strategy probes (`c4core.games.dots_and_boxes.probes`): every tag meets its
definition on the scalar rules, the symmetric images keep their tags and values, and the bots
score as their rules say (greedy and heuristic never double-cross, heuristic never sacrifices,
`perfect` keeps every probe)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from c4core.games import load
from c4core.games.dots_and_boxes.bots import GreedyBot, HeuristicBot
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.probes import (
    RANDOM_MOVES,
    TAGS,
    MixedBot,
    Probe,
    image,
    make_probes,
    mixed_move,
    tag_of,
)
from c4core.games.dots_and_boxes.rules import DotsState
from c4core.games.dots_and_boxes.solver import DotsPerfectBot, DotsSolver
from c4core.games.dots_and_boxes.suite import score_suite

THREE = load("dots-and-boxes-3x3")


@pytest.fixture(scope="module")
def probes() -> tuple[Probe, ...]:
    return make_probes(THREE, DotsSolver(THREE.boxes).action_values, 40, seed=3, drawn=(3, 22), games=600)


def boxes_of(state: DotsState) -> int:
    return sum(bin(o).count("1") for o in state.owned)


def takes(state: DotsState, line: int) -> bool:
    return boxes_of(state.apply(line)) > boxes_of(state)


def offers(state: DotsState, line: int) -> bool:
    return any(m >> line & 1 and bin(state.lines & m).count("1") == 2 for m in state.boxes.box_masks)


def handed_over(state: DotsState) -> int:
    """Boxes the player to move takes in a row (any capturing line each time)."""
    start = boxes_of(state)
    while captures := [a for a in state.legal_actions() if takes(state, a)]:
        state = state.apply(captures[-1])
    return boxes_of(state) - start


def test_every_probe_meets_its_tags_definition(probes: tuple[Probe, ...]) -> None:
    counts = Counter(p.tag for p in probes)
    assert all(counts[t] == 40 for t in ("forced_capture", "double_cross", "parity_sacrifice"))
    assert counts["loop_control"] > 0
    for p in probes:
        state, legal = p.state, p.state.legal_actions()
        optimal = [a for a in legal if p.keeps_value(a)]
        assert 0 < len(optimal) < len(legal)
        capture = any(takes(state, a) for a in legal)
        if p.tag == "forced_capture":
            assert capture and all(takes(state, a) for a in optimal)
        elif p.tag in ("double_cross", "loop_control"):
            assert capture and not any(takes(state, a) for a in optimal)
            assert handed_over(state.apply(optimal[0])) == (2 if p.tag == "double_cross" else 4)
        else:
            assert not capture and any(not offers(state, a) for a in legal)
            assert all(offers(state, a) for a in optimal)


def test_symmetric_images_keep_their_tag_and_values(probes: tuple[Probe, ...]) -> None:
    solver = DotsSolver(THREE.boxes)
    for p in probes[::10]:
        for symmetry in THREE.symmetries:
            state, values = image(p.state, p.values, symmetry)
            assert state.margin() == p.state.margin() and state.ply == p.state.ply
            assert values == tuple(int(v) for v in solver.action_values(np.array([state.lines]))[0])
            assert tag_of(state, values) == p.tag
            assert THREE.boxes.completed(state.lines) == state.owned[0] | state.owned[1]


def test_the_bots_score_per_principle_as_their_rules_say(probes: tuple[Probe, ...]) -> None:
    def per_tag(bot) -> dict[str, float]:
        return score_suite(bot, THREE, (), probes).probes

    perfect, greedy, heuristic = (
        per_tag(b) for b in (DotsPerfectBot(THREE.boxes), GreedyBot(), HeuristicBot())
    )
    assert perfect == {t: 1.0 for t in TAGS}
    assert greedy["double_cross"] == greedy["loop_control"] == heuristic["double_cross"] == 0.0
    assert heuristic["parity_sacrifice"] == 0.0 < greedy["parity_sacrifice"]  # greedy's draws may sacrifice
    assert heuristic["forced_capture"] > 0.9 and greedy["forced_capture"] > 0.9


def test_4x4_probes_from_the_endgame_search() -> None:
    four = load("dots-and-boxes-4x4")
    solver = EndgameSolver(four.boxes, table_bits=18)
    found = make_probes(four, solver.action_values, 5, seed=1, drawn=(22, 34), games=60)
    assert {p.tag for p in found} >= {"forced_capture", "double_cross", "parity_sacrifice"}
    for p in found:
        assert max(p.values) == solver.value(p.state) and tag_of(p.state, p.values) == p.tag


def test_the_mixed_bot_plays_the_mixed_policy_on_a_batch() -> None:
    """`MixedBot` draws what `mixed_move` draws: every legal line with the share `RANDOM_MOVES`,
    else a capture, else a safe line, else any. Checked by
    the share of lines outside the preferred set, the same as `mixed_move`'s, on 4x4 positions of
    every kind (a capture open, safe lines left, every line preferred)."""
    four = load("dots-and-boxes-4x4")
    rng = np.random.default_rng(5)
    states = []
    for _ in range(60):
        state = DotsState(four.boxes)
        for _ in range(int(rng.integers(10, 36))):
            if not state.is_terminal:
                state = state.apply(mixed_move(state, rng))
        if not state.is_terminal:
            states.append(state)
    draws = 400
    boards = four.batch_of([s for s in states for _ in range(draws)])
    batched = MixedBot().act(boards, torch.Generator().manual_seed(5)).view(len(states), draws).tolist()
    kinds = set()
    for state, lines in zip(states, batched, strict=True):
        legal = state.legal_actions()
        captures = [a for a in legal if takes(state, a)]
        preferred = captures or [a for a in legal if not offers(state, a)] or legal
        kinds.add("captures" if captures else "safe" if len(preferred) < len(legal) else "all")
        expected = RANDOM_MOVES * (len(legal) - len(preferred)) / len(legal)
        bound = 4 * (expected * (1 - expected) / draws) ** 0.5 + 1e-9
        scalar = [mixed_move(state, rng) for _ in range(draws)]
        for drawn in (lines, scalar):
            assert set(drawn) <= set(legal)
            outside = sum(line not in preferred for line in drawn) / draws
            assert abs(outside - expected) <= bound, (state, outside, expected)
    assert kinds == {"captures", "safe", "all"}
