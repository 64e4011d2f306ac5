"""Dots and Boxes' strategy probes (`c4core.games.dots_and_boxes.probes`): every tag meets its
definition on the scalar rules, the symmetric images keep their tags and values, and the bots
score as their rules say (greedy and heuristic never double-cross, heuristic never sacrifices,
`perfect` keeps every probe)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from c4core.games import load
from c4core.games.dots_and_boxes.bots import GreedyBot, HeuristicBot
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.probes import TAGS, Probe, image, make_probes, tag_of
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
