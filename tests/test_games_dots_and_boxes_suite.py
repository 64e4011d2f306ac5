"""The Dots and Boxes suite (`c4core.games.dots_and_boxes.suite`): made the same from a seed, spread over the
drawn-line counts, only positions whose choice matters, and scored against exact play."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from c4core.games import ConnectFour, held_out, load
from c4core.games.dots_and_boxes.bots import GreedyBot
from c4core.games.dots_and_boxes.endgame import EndgameSolver
from c4core.games.dots_and_boxes.solver import DotsPerfectBot
from c4core.games.dots_and_boxes.suite import DRAWN, make_probe_suite, make_suite, score_suite
from c4core.games.players import RandomBot

THREE = load("dots-and-boxes-3x3")


@pytest.fixture(scope="module")
def suite() -> list:
    return make_suite(THREE, positions=200, seed=1)


def test_the_suite_is_made_the_same_from_a_seed_and_spread_over_the_depths(suite: list) -> None:
    assert [it.state for it in make_suite(THREE, positions=200, seed=1)] == [it.state for it in suite]
    assert make_suite(THREE, positions=200, seed=1) is suite  # labelled once a process, then reused
    depths = Counter(bin(it.state.lines).count("1") for it in suite)
    lo, hi = DRAWN[(3, 3)]
    assert set(depths) == set(range(lo, hi + 1)) and max(depths.values()) - min(depths.values()) <= 1
    for item in suite:
        legal = [item.values[a] for a in item.state.legal_actions()]
        assert not item.state.is_terminal and min(legal) < max(legal) == item.best  # the choice matters


def test_perfect_keeps_everything_and_the_bots_less(suite: list) -> None:
    perfect = score_suite(DotsPerfectBot(THREE.boxes), THREE, suite)
    assert (perfect.counted, perfect.keeps_value, perfect.keeps_outcome) == (200, 1.0, 1.0)
    greedy, random = (score_suite(bot, THREE, suite) for bot in (GreedyBot(), RandomBot()))
    assert random.keeps_value < greedy.keeps_value < 1.0
    assert greedy.keeps_value <= greedy.keeps_outcome  # keeping the value keeps the outcome


def test_only_boards_a_solver_labels_have_a_suite_and_small_ones_a_shorter_one() -> None:
    assert 0 < len(make_suite(load("dots_and_boxes", rows=2, cols=2))) < 1200
    with pytest.raises(ValueError, match="no suite for Dots and Boxes on 5x5 boxes: suites are made on"):
        make_suite(load("dots_and_boxes", rows=5, cols=5))
    assert load("dots_and_boxes", rows=5, cols=5).suite() is None


def test_4x4_endgame_probes_are_labelled_by_the_search_from_real_endgames() -> None:
    """On 4x4 the suite's positions have at most 24 lines left, come from the mixed policy's
    games (so greedy, which plays random play's positions almost perfectly, keeps less), and
    their labels are the endgame search's."""
    four = load("dots-and-boxes-4x4")
    items = make_suite(four, positions=38, seed=2)
    lo, hi = DRAWN[(4, 4)]
    assert len(items) == 38 and four.num_actions - lo == 24
    assert {bin(it.state.lines).count("1") for it in items} == set(range(lo, hi + 1))
    solver = EndgameSolver(four.boxes, table_bits=18)
    assert all(it.best == solver.value(it.state) for it in items)
    greedy, perfect = score_suite(GreedyBot(), four, items), score_suite(LabelledBot(items), four, items)
    assert greedy.keeps_value < perfect.keeps_value == 1.0


class LabelledBot(RandomBot):
    """A line of the best label in each suite position it is asked about (a perfect player for
    boards without the table)."""

    def __init__(self, items) -> None:
        self.best = {it.state.lines: [a for a, v in enumerate(it.values) if v == it.best] for it in items}

    def act(self, boards, generator=None):
        import torch

        return torch.tensor([self.best.get(int(lines), [0])[0] for lines in boards.lines])


def test_eval_suite_scores_a_dots_and_boxes_player(capsys: pytest.CaptureFixture[str]) -> None:
    from c4core.cli import main

    args = [
        "eval-suite",
        "--player",
        "greedy",
        "--game",
        "dots-and-boxes-3x3",
        "--positions",
        "100",
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["suite/counted"] == 100 and 0 < out["suite/keeps_value"] < 1
    assert main(["eval-suite", "--player", "tactical", "--game", "dots-and-boxes-3x3"]) == 2
    assert "tactical plays connect4 only" in capsys.readouterr().err


def test_the_suite_holds_its_positions_probes_and_their_images_alone() -> None:
    """`Suite.holds`, the suite a learner keeps out of the positions it labels by the solver
    (`c4core.games.held_out`): each suite position and strategy probe under each of the board's
    eight symmetries is held, by its drawn lines; a position with one line more, when that is
    none of them, is not."""
    holds = held_out(THREE, 1)
    assert holds is not None and held_out(ConnectFour(), 1) is None
    everything = [it.state for it in make_suite(THREE, seed=1)] + [
        p.state for p in make_probe_suite(THREE, 1)
    ]

    def images(lines: int) -> list[int]:
        drawn = [a for a in range(THREE.num_actions) if lines >> a & 1]
        return [sum(1 << s.actions[a] for a in drawn) for s in THREE.symmetries]

    suite = {image for state in everything for image in images(state.lines)}
    sets = [image for state in everything[::40] for image in images(state.lines)]
    more = [lines | 1 << next(a for a in range(THREE.num_actions) if not lines >> a & 1) for lines in sets]
    more = [lines for lines in more if lines not in suite]

    def boards(line_sets: list[int]):
        batch = THREE.new_batch(len(line_sets))
        for a in range(THREE.num_actions):  # drawn in line order: any order draws the same set
            where = torch.tensor([bool(lines >> a & 1) for lines in line_sets])
            batch.play(torch.full((len(line_sets),), a), where)
        assert batch.lines.tolist() == line_sets
        return batch

    assert len(set(sets)) > len(everything[::40]) > 20 and len(more) > 20
    assert bool(holds(boards(sets)).all())
    assert not bool(holds(boards(more)).any())
