"""Batched PUCT search with MCTS-Solver proofs (`c4core.learners.search`).

Every net here is a tiny one with random weights: whatever search finds, it finds through its
own simulations and proofs, not through a trained policy. Tactical positions are move strings
(boards drawn in comments); the ones past the first few plies come from the solver-labelled dev
suite, whose labels are exact. On 4x4 connect-3 the proofs are checked against the exact solver.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from exact import first_player_value

from c4core.config import NetConfig, SearchConfig
from c4core.evaluation.match import play_match
from c4core.games import ConnectFour, load
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.connect4.solver import Solver
from c4core.games.players import RandomBot
from c4core.learners.net import Checkpoint, NetPlayer, PolicyValueNet
from c4core.learners.search import (
    EvaluationCache,
    SearchPlayer,
    TreeReuse,
    forced_visits,
    halving_plan,
    pruned_visits,
    search,
    search_position,
    tempered,
)
from c4core.players import make_player

SEED = 4321
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)
SMALL = Geometry(4, 4, 3)


def tiny_net(seed: int = SEED, geometry: Geometry = STANDARD) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(TINY, ConnectFour(geometry)).eval()


@pytest.fixture
def net() -> PolicyValueNet:
    return tiny_net()


# ---- tactics ----------------------------------------------------------------------------------------
# X to move, and only column 3 wins at once (column 7 is O's):
#   . . . O O . .
#   . . . X X X O
WIN_IN_1 = ("445567", {2}, 1)
# X to move: column 3 makes three in a row with both ends open on the bottom row.
#   . O . . . . O
#   . X . X . O X
WIN_IN_3 = ("267742", {2}, 3)
# X to move; the dev suite scores columns 2 and 4 as wins with X's third stone from now.
#   . . X . . . .
#   . . X . . . .
#   O O O X . O .
#   O X O O X X X
WIN_IN_5 = ("53237264313641", {1, 3}, 5)
# O to move; O has no win and X no immediate threat, yet the dev suite scores every column
# but 6 as lost within three plies (X sets up two threats): 6 is the only defence.
#   . . . . . . .
#   . . . X . . .
#   . X . O . . .
#   . O . O O . X
#   O X . O X X X
#   X O . X O X O
ONLY_DEFENCE = "6562471451742442257"


@pytest.mark.parametrize("moves,winning,plies", [WIN_IN_1, WIN_IN_3, WIN_IN_5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_forced_wins(moves: str, winning: set[int], plies: int, seed: int) -> None:
    r = search_position(tiny_net(seed), Position.from_moves(moves), SearchConfig(simulations=2000))
    assert r.column in winning
    assert r.proven == 1 and r.value == 1.0
    # a proof bounds the win's length from above; these wins take exactly `plies` at best
    assert r.length >= plies and r.length % 2 == 1
    assert r.simulations < 2000  # the proof stopped the search early
    assert r.probs[r.column] == 1.0


def test_win_in_one_is_proven_at_the_root_without_simulations(net: PolicyValueNet) -> None:
    r = search_position(net, Position.from_moves(WIN_IN_1[0]), SearchConfig(simulations=50))
    assert (r.column, r.proven, r.length, r.simulations) == (2, 1, 1, 0)
    assert sum(r.visits) == 0 and r.move_proven[2] == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_only_defence(seed: int) -> None:
    r = search_position(tiny_net(seed), Position.from_moves(ONLY_DEFENCE), SearchConfig(simulations=1500))
    assert r.column == 5
    assert r.proven is None or r.proven >= 0
    assert r.move_proven[5] != -1


def test_blocks_an_immediate_threat(net: PolicyValueNet) -> None:
    # O to move; X threatens column 7 on the bottom row, so every other column is a proven loss
    #   . . O X X X .
    r = search_position(net, Position.from_moves("43516"), SearchConfig(simulations=64))
    assert r.column == 6
    assert [v for c, v in enumerate(r.move_proven) if c != 6] == [-1] * 6


def test_a_lost_root_delays_the_loss(net: PolicyValueNet) -> None:
    # O to move is lost: X threatens the top of column 3, and after the block X plays 4 with two
    # open ends on the bottom row. Blocking loses in 4 plies, anything else in 2.
    #   . . X . . . .
    #   . . X . . O .
    #   . X X . . O O
    r = search_position(net, Position.from_moves("3637263"), SearchConfig(simulations=200))
    assert r.proven == -1 and r.value == -1.0
    assert r.column == 2 and r.length == 4
    assert r.move_proven == [-1] * 7


# ---- MCTS-Solver against the exact solver --------------------------------------------------------
def small_positions(n: int, seed: int) -> list[Position]:
    rng = np.random.default_rng(seed)
    out: list[Position] = []
    while len(out) < n:
        pos = Position(geometry=SMALL)
        for _ in range(int(rng.integers(0, 12))):
            nxt = pos.play(int(rng.choice(pos.legal_moves())))
            if nxt.is_terminal:
                break
            pos = nxt
        out.append(pos)
    return out


@pytest.mark.parametrize("simulations", [30, 300])
def test_proofs_agree_with_the_exact_solver(simulations: int) -> None:
    positions = small_positions(150, SEED)
    solver = Solver(SMALL)
    r = search(
        tiny_net(geometry=SMALL), Boards.from_positions(positions), SearchConfig(simulations=simulations)
    )
    proven = 0
    for i, pos in enumerate(positions):
        scores = solver.move_scores(pos)
        for c, exact in enumerate(r.move_proven[i]):
            if not np.isnan(exact):  # every proven move has the solver's outcome
                assert exact == np.sign(scores[c])
        if np.isnan(r.proven[i]):
            assert r.simulations[i] == simulations
            continue
        proven += 1
        best = np.sign(solver.score(pos))
        assert r.proven[i] == best
        assert np.sign(scores[r.columns[i]]) == best  # the chosen move keeps the result
        if best == 1:  # a proof of length d is a forced win within d plies, so never faster than exact
            stone = (SMALL.cells + 1) // 2 + 1 - solver.score(pos)  # the winner's stone number
            assert r.lengths[i] >= 2 * (stone - (pos.ply // 2 + 1)) + 1
    assert proven > len(positions) // 2  # the check is not vacuous


def test_enough_simulations_solve_small_boards_outright() -> None:
    positions = small_positions(40, SEED + 1)
    r = search(tiny_net(geometry=SMALL), Boards.from_positions(positions), SearchConfig(simulations=5000))
    assert not np.isnan(r.proven).any()
    solver = Solver(SMALL)
    assert [int(v) for v in r.proven] == [int(np.sign(solver.score(p))) for p in positions]


# ---- solver probes at the leaves -------------------------------------------------------------------
def test_probing_every_leaf_proves_small_roots_within_one_simulation_a_move() -> None:
    positions = small_positions(60, SEED + 2)
    solver = Solver(SMALL)
    config = SearchConfig(simulations=200, probe_from=1)
    r = search(tiny_net(geometry=SMALL), Boards.from_positions(positions), config)
    for i, pos in enumerate(positions):
        legal = len(pos.legal_moves())
        assert not np.isnan(r.proven[i]) and r.simulations[i] <= legal
        assert r.visits[i].sum() == r.simulations[i]
        scores = solver.move_scores(pos)
        assert r.proven[i] == np.sign(solver.score(pos))
        assert np.sign(scores[r.columns[i]]) == r.proven[i]  # the chosen move keeps the result
        for c, exact in enumerate(r.move_proven[i]):
            if not np.isnan(exact):
                assert exact == np.sign(scores[c])


def test_probes_below_their_stone_count_or_over_budget_change_nothing(net: PolicyValueNet) -> None:
    boards = Boards.from_positions([Position.from_moves(m) for m in ("4", "4453", "445362")])
    plain = search(net, boards, SearchConfig(simulations=64))
    for config in (
        SearchConfig(simulations=64, probe_from=30),
        SearchConfig(simulations=64, probe_from=4, probe_nodes=1),
    ):
        probed = search(net, boards, config)
        assert (probed.visits == plain.visits).all() and (probed.columns == plain.columns).all()


def test_probing_settles_a_late_standard_position_at_once(net: PolicyValueNet) -> None:
    pos = Position.from_moves(ONLY_DEFENCE)  # 19 stones: only column 6 holds
    exact = Solver(STANDARD).move_scores(pos, weak=True)
    plain = search_position(net, pos, SearchConfig(simulations=64))
    probed = search_position(net, pos, SearchConfig(simulations=64, probe_from=20))
    assert probed.column == 5 and probed.proven == exact[5]
    assert all(v is None or v == e for v, e in zip(probed.move_proven, exact, strict=True))
    assert probed.simulations <= len(pos.legal_moves()) < plain.simulations


def test_probe_spec_builds_a_probing_search_player(tmp_path: Path, net: PolicyValueNet) -> None:
    path = tmp_path / "tiny.pt"
    Checkpoint.of(net).save(path)
    player = make_player(f"{path}+mcts16+probe20")
    assert isinstance(player, SearchPlayer) and player.name == "tiny+mcts16+probe20"
    assert player.config.simulations == 16 and player.config.probe_from == 20
    boards = Boards.from_positions([Position.from_moves(ONLY_DEFENCE), Position.from_moves("4")])
    assert player.act(boards).tolist()[0] == 5
    assert player.solver is not None  # kept for the next move
    for bad in (
        f"{path}+probe20",
        "tactical+probe20",
        f"{path}+mcts16+probe0",
        f"{path}+mcts16+probe43",
        f"{path}+mcts16+probe20+probe20",
    ):
        with pytest.raises(ValueError):
            make_player(bad)


# ---- accounting -------------------------------------------------------------------------------------
def test_visits_sum_to_the_simulations(net: PolicyValueNet) -> None:
    positions = [Position()] + [Position.from_moves(m) for m in ("4", "44", "4453", "1234567")]
    for sims in (1, 7, 100):
        r = search(net, Boards.from_positions(positions), SearchConfig(simulations=sims))
        assert np.isnan(r.proven).all()
        assert (r.visits.sum(1) == sims).all() and (r.simulations == sims).all()
        assert np.allclose(r.probs.sum(1), 1.0)


def test_a_root_proven_early_counts_the_simulations_run(net: PolicyValueNet) -> None:
    r = search(net, Boards.from_positions([Position.from_moves(WIN_IN_3[0])]), SearchConfig(simulations=500))
    assert r.proven[0] == 1
    assert 0 < r.simulations[0] < 500
    assert r.visits[0].sum() == r.simulations[0]


def test_values_and_priors_are_well_formed(net: PolicyValueNet) -> None:
    pos = Position.from_moves("44")
    r = search_position(net, pos, SearchConfig(simulations=64))
    assert -1 <= r.value <= 1 and -1 <= r.net_value <= 1
    assert abs(sum(r.prior) - 1) < 1e-5 and abs(sum(r.probs) - 1) < 1e-9
    assert r.column == int(np.argmax(r.visits))
    probs, value = net.evaluate(Boards.from_positions([pos]))
    assert np.allclose(r.prior, probs[0].numpy(), atol=1e-6) and abs(r.net_value - float(value[0])) < 1e-6


def test_full_columns_get_no_visits(net: PolicyValueNet) -> None:
    pos = Position.from_moves("444444" + "333333")
    r = search_position(net, pos, SearchConfig(simulations=100))
    assert r.visits[2] == r.visits[3] == 0 and r.column not in (2, 3)


# ---- noise and determinism -----------------------------------------------------------------------
def test_evaluation_is_noise_free_and_deterministic(net: PolicyValueNet) -> None:
    assert SearchConfig().root_noise is False
    boards = Boards.from_positions([Position(), Position.from_moves("44")])
    a = search(net, boards, SearchConfig(simulations=80), torch.Generator().manual_seed(1))
    b = search(net, boards, SearchConfig(simulations=80), torch.Generator().manual_seed(2))
    assert (a.visits == b.visits).all() and (a.columns == b.columns).all()


def test_root_noise_follows_the_seed(net: PolicyValueNet) -> None:
    boards = Boards.from_positions([Position()])
    cfg = SearchConfig(simulations=80, root_noise=True)

    def visits(seed: int) -> np.ndarray:
        return search(net, boards, cfg, torch.Generator().manual_seed(seed)).visits[0]

    assert (visits(1) == visits(1)).all()
    assert any((visits(1) != visits(s)).any() for s in (2, 3, 4))
    quiet = search(net, boards, SearchConfig(simulations=80)).visits[0]
    assert (visits(1) != quiet).any()


def test_chunked_batches_match_one_batch(net: PolicyValueNet) -> None:
    positions = [Position.from_moves(m) for m in ("", "4", "43", "432", "4321")]
    whole = search(net, Boards.from_positions(positions), SearchConfig(simulations=40))
    parts = search(net, Boards.from_positions(positions), SearchConfig(simulations=40, max_trees=2))
    assert (whole.visits == parts.visits).all() and np.allclose(whole.values, parts.values)


def test_temperature_samples_from_the_visits(net: PolicyValueNet) -> None:
    boards = Boards.from_positions([Position()] * 30)
    cfg = SearchConfig(simulations=40, temperature=1.0)
    cols = search(net, boards, cfg, torch.Generator().manual_seed(0)).columns
    assert len(set(cols.tolist())) > 1  # thirty identical trees, more than one sampled move


# ---- the player -------------------------------------------------------------------------------------
def test_search_player_plays_legal_moves_and_skips_finished_games(net: PolicyValueNet) -> None:
    done = Position.from_moves("1213141")  # X won on column 1
    positions = [Position(), Position.from_moves("444444"), done]
    player = SearchPlayer(net, 16, net_name="tiny")
    assert player.name == "tiny+mcts16"
    cols = player.act(Boards.from_positions(positions), torch.Generator().manual_seed(0))
    assert cols.shape == (3,) and int(cols[1]) != 3


def test_search_player_in_a_match(net: PolicyValueNet) -> None:
    searcher = SearchPlayer(net, 8, net_name="tiny")
    result = play_match(searcher, NetPlayer(net, name="tiny"), 4, seed=SEED)
    assert result.games == 4 and result.a == "tiny+mcts8"
    assert play_match(searcher, RandomBot(), 2, seed=SEED).games == 2


def test_search_beats_random_with_a_random_net(net: PolicyValueNet) -> None:
    result = play_match(SearchPlayer(net, 32), RandomBot(), 10, seed=SEED)
    assert result.total.score > 0.8  # proofs alone see every short tactic


def test_spec_suffix_builds_a_search_player(tmp_path: Path, net: PolicyValueNet) -> None:
    path = tmp_path / "tiny.pt"
    Checkpoint.of(net).save(path)
    player = make_player(f"{path}+mcts12")
    assert isinstance(player, SearchPlayer) and player.name == "tiny+mcts12"
    assert player.config.simulations == 12
    with pytest.raises(ValueError, match="network player"):
        make_player("tactical+mcts8")
    with pytest.raises(ValueError, match="at least 1"):
        make_player(f"{path}+mcts0")


def test_config_and_geometry_are_checked(net: PolicyValueNet) -> None:
    for bad in (
        dict(simulations=0),
        dict(c_puct=0.0),
        dict(noise_fraction=2.0),
        dict(temperature=-1.0),
        dict(probe_from=-1),
        dict(probe_nodes=0),
        dict(root="alphabeta"),
        dict(considered_actions=0),
        dict(c_visit=0.0),
        dict(c_scale=-0.1),
        dict(fpu_reduction=-0.1),
        dict(prior_temperature=0.0),
        dict(forced_playouts=-1.0),
        dict(forced_playouts=2.0, root="gumbel"),
    ):
        with pytest.raises(ValueError):
            SearchConfig(**bad)
    with pytest.raises(ValueError, match="built for 6x7"):
        search(net, Boards(1, SMALL))
    with pytest.raises(ValueError, match="game is over"):
        search_position(net, Position.from_moves("1213141"))


# ---- any game through the interface: a player who moves again ----------------------------------
class Oracle:
    """An evaluator for a board small enough to enumerate: uniform priors over the legal actions,
    and, with `exact`, every state's true value for its mover (else 0); with `by_margin` its
    values are margin returns (`PolicyValueNet.by_margin`)."""

    def __init__(self, exact: bool, by_margin: bool = False):
        self.exact, self.by_margin = exact, by_margin

    def evaluate(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        legal = batch.legal().float()
        values = []
        for i in range(len(batch)):
            state = batch.state(i)
            v = first_player_value(state, margin_of if self.by_margin else None) if self.exact else 0.0
            values.append(v if state.current_player() == 0 else -v)
        return legal / legal.sum(1, keepdim=True), torch.tensor(values)


def margin_of(state) -> float:
    """A finished game's margin return for the first player."""
    return state.margin_returns()[0]


def extra_move_positions() -> list:
    """Dots and Boxes 2x2 positions, with 4 to 6 lines left, at which a box can be taken (so
    the mover may move twice in a row), plus the empty 1x2 board."""
    rng = np.random.default_rng(SEED)
    game = load("dots_and_boxes", rows=2, cols=2)
    found = []
    while len(found) < 12:
        state = game.new_state()
        for _ in range(int(rng.integers(6, 9))):
            state = state.apply(int(rng.choice(state.legal_actions())))
        if state.is_terminal:
            continue
        movers = {state.apply(a).current_player() for a in state.legal_actions()}
        if movers == {0, 1}:  # some move keeps the turn, some passes it
            found.append(state)
    return [load("dots_and_boxes", rows=1, cols=2).new_state(), *found]


@pytest.fixture(scope="module")
def dots_positions() -> list:
    return extra_move_positions()


def test_search_proves_exact_values_when_a_player_moves_twice(dots_positions: list) -> None:
    """MCTS-Solver backs proofs up by the player to move: each root and each root move proven
    is the exhaustive minimax value, from the view of the player to move at the root."""
    for state in dots_positions:
        r = search_position(Oracle(exact=False), state, SearchConfig(simulations=20_000))
        mover = state.current_player()
        exact = first_player_value(state) * (1 if mover == 0 else -1)
        assert r.proven == exact, str(state)
        for action, proven in enumerate(r.move_proven):
            if proven is not None:
                after = state.apply(action)
                sign = 1 if after.current_player() == mover else -1
                child = first_player_value(after) * (1 if after.current_player() == 0 else -1)
                assert proven == sign * child
        assert r.move_proven[r.column] == exact  # it plays a move that keeps the value


def test_a_fresh_leaf_is_valued_from_the_view_of_its_parents_mover(dots_positions: list) -> None:
    """One simulation expands one root move; with every state valued exactly, the root's value
    is the mean of its own value and that child's, negated only when the turn passed."""
    for state in dots_positions[1:]:
        r = search_position(Oracle(exact=True), state, SearchConfig(simulations=1))
        root = first_player_value(state) * (1 if state.current_player() == 0 else -1)
        assert r.net_value == pytest.approx(root)
        if r.proven is not None:
            continue
        (move,) = np.flatnonzero(r.visits)
        after = state.apply(int(move))
        child = first_player_value(after) * (1 if state.current_player() == 0 else -1)
        assert r.value == pytest.approx((root + child) / 2)


def test_backup_flips_the_sign_where_the_mover_changes_not_every_ply() -> None:
    """A path root -> n1 -> n2 where the root's mover takes a box at the root and moves again
    at n1: a value v for the mover at n2 counts -v at n1 and at the root, and +v at n2."""
    from c4core.learners.search import StateTree, _Forest

    game = load("dots_and_boxes", rows=1, cols=2)
    tree = StateTree(game, 8)
    forest = _Forest(Oracle(exact=False), tree, game.num_actions, 1, SearchConfig(simulations=7), None)
    tree.movers[:4] = [0, 0, 1, 1]  # root and n1: player 0; n2: player 1
    nodes, edges = np.array([[0, 1, 2]]), np.array([[3, 4, 5]])
    forest._backup(nodes, edges, np.array([3]), np.array([0.5]))
    assert forest.value_sum[0, 3] == forest.value_sum[1, 4] == -0.5
    assert forest.value_sum[2, 5] == 0.5
    assert forest.visits[0, 3] == forest.visits[1, 4] == forest.visits[2, 5] == 1


def test_search_refuses_probes_on_a_board_without_a_solver() -> None:
    big = load("dots_and_boxes", rows=4, cols=5)  # beyond the endgame search's boards
    with pytest.raises(ValueError, match="does not have"):
        search_position(Oracle(exact=False), big.new_state(), SearchConfig(simulations=4, probe_from=2))


def test_probes_settle_leaves_through_the_games_own_solver(dots_positions: list) -> None:
    """Dots and Boxes' solver settles every leaf it is asked about (a table lookup), so with
    probes from the first line on, a few simulations prove the root and each move they tried with
    the exhaustive minimax's values, backed up by the player to move."""
    for state in dots_positions:
        if state.is_terminal:
            continue
        r = search_position(Oracle(exact=False), state, SearchConfig(simulations=40, probe_from=1))
        mover = state.current_player()
        assert r.proven == first_player_value(state) * (1 if mover == 0 else -1), str(state)
        tried = [a for a, proven in enumerate(r.move_proven) if proven is not None]
        assert tried
        for action in tried:
            after = state.apply(action)
            child = first_player_value(after) * (1 if mover == 0 else -1)
            assert r.move_proven[action] == child


def test_a_search_on_margins_proves_the_best_margin_and_plays_for_it(dots_positions: list) -> None:
    """With margin values, every proof is the exhaustive minimax of the margin return, by the
    player to move, and the move played keeps the root's: where an outcome's proof takes any
    winning move, this one takes a move that wins by the most (the positions hold such a
    choice). A root is proven once all its moves are, or one wins every box, so a search that
    keeps choosing a proven move worth less may stop unproven, as with a proven draw."""
    choices = proved = 0
    for state in dots_positions:
        r = search_position(Oracle(exact=False, by_margin=True), state, SearchConfig(simulations=20_000))
        sign = 1 if state.current_player() == 0 else -1
        best = sign * first_player_value(state, margin_of)
        if r.proven is not None:
            proved += 1
            assert r.proven == pytest.approx(best), str(state)
        for action, proven in enumerate(r.move_proven):
            if proven is not None:
                assert keeps(state, action, proven, margin_of)
        outcome = sign * first_player_value(state)
        keeps_outcome = [a for a in state.legal_actions() if keeps(state, a, outcome, None)]
        keeps_margin = [a for a in state.legal_actions() if keeps(state, a, best, margin_of)]
        choices += len(keeps_margin) < len(keeps_outcome)
        assert r.column in keeps_margin, str(state)
    assert choices > 0 and proved > len(dots_positions) / 2


def keeps(state, action: int, value: float, outcome) -> bool:
    """Whether `action` keeps `state`'s exact `value` (for its mover, scored by `outcome`)."""
    after = state.apply(action)
    sign = 1 if state.current_player() == 0 else -1
    return sign * first_player_value(after, outcome) == pytest.approx(value)


def test_probes_on_margins_settle_leaves_at_the_solvers_margin_value(dots_positions: list) -> None:
    """The solver's probes give a margin search the margin value, so a few simulations prove
    the root at the exhaustive minimax of the margin."""
    for state in dots_positions:
        r = search_position(
            Oracle(exact=False, by_margin=True), state, SearchConfig(simulations=40, probe_from=1)
        )
        sign = 1 if state.current_player() == 0 else -1
        assert r.proven == pytest.approx(sign * first_player_value(state, margin_of)), str(state)


def test_a_game_without_margins_refuses_a_margin_search() -> None:
    with pytest.raises(ValueError, match="has no margin returns"):
        search_position(
            Oracle(exact=False, by_margin=True), Position.from_moves("44"), SearchConfig(simulations=4)
        )


# ---- the evaluation cache ---------------------------------------------------------------------------
def test_cache_hits_return_what_a_fresh_evaluation_does(net: PolicyValueNet) -> None:
    """A batch with repeated positions: each distinct one is evaluated once, every row gets the
    network's own answer, and asking again is all hits with the same answers."""
    moves = ["", "4", "44", "4", "", "123", "44", "321"]  # 123 and 321 reach one position
    boards = Boards.from_positions([Position.from_moves(m) for m in moves])
    cache = EvaluationCache(net, capacity=100)
    with torch.no_grad():
        probs, values = cache.evaluate(boards)
        fresh_probs, fresh_values = net.evaluate(boards)
        assert (cache.hits, cache.misses) == (4, 4)
        assert torch.allclose(probs, fresh_probs, atol=1e-6)
        assert torch.allclose(values, fresh_values, atol=1e-6)
        again = cache.evaluate(boards)
    assert (cache.hits, cache.misses) == (12, 4)
    assert torch.equal(again[0], probs) and torch.equal(again[1], values)


def test_a_cached_search_searches_alike_with_fewer_forwards(net: PolicyValueNet) -> None:
    """Transpositions and the batch's repeated roots hit the cache; the visits come out as an
    uncached search's, and the cache never holds more than its capacity."""
    boards = Boards.from_positions([Position.from_moves(m) for m in ("", "", "4", "43", "34")])
    config = SearchConfig(simulations=48)
    cache = EvaluationCache(net, capacity=10_000)
    plain, cached = search(net, boards, config), search(cache, boards, config)
    assert np.array_equal(plain.visits, cached.visits) and np.array_equal(plain.columns, cached.columns)
    assert np.allclose(plain.values, cached.values, atol=1e-5)
    assert cache.hits > 0 and cache.misses < 5 * (48 + 1)
    small = EvaluationCache(net, capacity=8)
    search(small, boards, config)
    assert len(small.table) == 8
    with pytest.raises(ValueError, match="at least one position"):
        EvaluationCache(net, capacity=0)


# ---- Gumbel root search -----------------------------------------------------------------------------
@pytest.mark.parametrize("considered", [1, 2, 3, 4, 7, 16, 24])
@pytest.mark.parametrize("simulations", [1, 2, 5, 8, 16, 64, 256])
def test_a_halving_plan_can_be_followed_and_halves_the_moves(considered: int, simulations: int) -> None:
    """Every simulation finds a move with the visits the plan names, the first phase visits
    every considered move once before any twice, and later phases visit fewer moves."""
    plan = halving_plan(considered, simulations)
    assert len(plan) == simulations
    visits = np.zeros(considered, np.int64)
    for due in plan:
        (at,) = np.flatnonzero(visits == due)[:1]
        visits[at] += 1
    assert visits.sum() == simulations
    assert (plan[: min(considered, simulations)] == 0).all()
    reached = [int((visits > k).sum()) for k in range(int(visits.max()))]
    assert reached == sorted(reached, reverse=True)


def test_halving_plans_of_known_sizes() -> None:
    assert halving_plan(4, 8).tolist() == [0, 0, 0, 0, 1, 1, 2, 2]
    assert halving_plan(2, 4).tolist() == [0, 0, 1, 1]
    assert halving_plan(1, 3).tolist() == [0, 1, 2]


class FirstMoveValues:
    """An evaluator with the same priors everywhere, a value `after[a]` (for the player to move
    there) at the position after the first move a, and 0 everywhere else."""

    def __init__(self, prior: list[float], after: dict[int, float]):
        self.prior = torch.tensor(prior)
        self.after = {Position.from_moves(str(a + 1)).mask: v for a, v in after.items()}

    def evaluate(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        legal = batch.legal().float()
        probs = legal * self.prior
        values = [
            self.after.get(batch.state(i).mask, 0.0) if batch.state(i).ply == 1 else 0.0
            for i in range(len(batch))
        ]
        return probs / probs.sum(1, keepdim=True), torch.tensor(values)


def test_gumbel_halves_to_the_best_move_and_targets_the_improved_policy() -> None:
    """A known tiny tree: 8 simulations over the 4 moves of highest prior (3, 4, 2 and 5),
    then the 2 best of them by logit + sigma(Q), then the better; every deeper position is worth 0.
    The first-move values make move 4 (q 0.6) and move 2 (q 0.4) beat move 3, the most
    likely, whose q is -0.5. The target is softmax(log prior + sigma(completed Q)) as the paper
    defines it, computed here from the tree's numbers."""
    prior = np.array([0.02, 0.07, 0.15, 0.35, 0.2, 0.12, 0.09])
    q_first = {3: -0.5, 4: 0.6, 2: 0.4, 5: -0.2}  # for the root's mover
    oracle = FirstMoveValues(prior.tolist(), {a: -q for a, q in q_first.items()})
    cfg = SearchConfig(simulations=8, root="gumbel", considered_actions=4)
    r = search_position(oracle, Position(), cfg)
    assert r.visits == [0, 0, 3, 1, 3, 1, 0]
    assert r.column == 4
    # the tree's own numbers: one visit each at q_first, two more each at 0 for moves 2 and 4
    n = np.array(r.visits, float)
    q = np.array([0, 0, 0.4 / 3, -0.5, 0.6 / 3, -0.2, 0])
    seen = n > 0
    mixed = (0.0 + n.sum() * (prior[seen] * q[seen]).sum() / prior[seen].sum()) / (1 + n.sum())
    completed = np.where(seen, q, mixed)
    scaled = (completed - completed.min()) / (completed.max() - completed.min())
    logits = np.log(prior) + (50 + n.max()) * 0.1 * scaled
    target = np.exp(logits) / np.exp(logits).sum()
    assert np.allclose(r.probs, target)
    assert r.probs[4] == max(r.probs) and min(r.probs) > 0  # unvisited moves keep a share
    assert r.value == pytest.approx((0 + n @ q) / (1 + n.sum()))


def test_gumbel_search_is_well_formed_and_follows_its_noise(net: PolicyValueNet) -> None:
    positions = [Position()] + [Position.from_moves(m) for m in ("4", "44", "4453", "444444" + "333333")]
    boards = Boards.from_positions(positions)
    for sims in (1, 7, 64):
        r = search(net, boards, SearchConfig(simulations=sims, root="gumbel"))
        assert (r.visits.sum(1) == r.simulations).all() and np.allclose(r.probs.sum(1), 1.0)
        assert (r.simulations[np.isnan(r.proven)] == sims).all()
    assert r.visits[4, 2] == r.visits[4, 3] == 0 and r.probs[4, 2] == r.probs[4, 3] == 0  # full columns
    noisy = SearchConfig(simulations=16, root="gumbel", root_noise=True)
    opening = Boards.from_positions([Position()] * 40)

    def columns(seed: int | None) -> np.ndarray:
        config = noisy if seed is not None else SearchConfig(simulations=16, root="gumbel")
        return search(net, opening, config, torch.Generator().manual_seed(seed or 0)).columns

    assert (columns(1) == columns(1)).all()
    assert len(set(columns(1).tolist())) > 1  # Gumbel noise samples different first moves
    assert len(set(columns(None).tolist())) == 1  # without it the search is deterministic


def test_gumbel_keeps_the_proofs(net: PolicyValueNet) -> None:
    """It proves and plays a forced win, finds the only defence, and never plays or targets a
    proven-lost move."""
    moves, winning, _ = WIN_IN_3
    r = search_position(net, Position.from_moves(moves), SearchConfig(simulations=500, root="gumbel"))
    assert r.proven == 1 and r.column in winning
    r = search_position(net, Position.from_moves(ONLY_DEFENCE), SearchConfig(simulations=1500, root="gumbel"))
    assert r.column == 5
    r = search_position(net, Position.from_moves("43516"), SearchConfig(simulations=64, root="gumbel"))
    assert r.column == 6 and r.probs[6] == 1.0 and sum(r.visits) == 64


# ---- tree reuse -----------------------------------------------------------------------------------
def test_a_reused_tree_starts_from_the_subtree_of_the_move_played(net: PolicyValueNet) -> None:
    """After one search of game 7, the played move's child keeps its edge visits, and the next
    search only tops its root up to the simulations: the kept visits are evaluations saved."""
    reuse, cfg = TreeReuse(), SearchConfig(simulations=64)
    before = search(
        net, Boards.from_positions([Position.from_moves("44")]), cfg, reuse=reuse, games=np.array([7])
    )
    column = int(before.columns[0])
    forest, root = reuse.at[7]
    kept = forest.visits[int(forest.child[root, column])].copy()
    assert 0 < kept.sum() == before.visits[0, column] - 1  # its own first visit evaluated it
    reuse.played(np.array([7]), np.array([column]))
    after_move = Boards.from_positions([Position.from_moves("44" + str(column + 1))])
    again = search(net, after_move, cfg, reuse=reuse, games=np.array([7]))
    assert again.visits[0].sum() == 64 and (again.visits[0] >= kept).all()
    assert again.simulations[0] == 64 - kept.sum()
    fresh = search(net, after_move, cfg)
    assert again.net_values[0] == pytest.approx(fresh.net_values[0])  # the kept root's own evaluation
    assert np.allclose(again.priors[0], fresh.priors[0])


def test_reuse_follows_whole_games_and_forgets_finished_ones(net: PolicyValueNet) -> None:
    """Six games played to the end with reuse: every search tops its roots up to the
    simulations from what was kept, never needs more nodes than a forest holds, and forgets a
    game that ends or leaves its tree."""
    boards = Boards(6)
    reuse, cfg = TreeReuse(), SearchConfig(simulations=24)
    rng = np.random.default_rng(0)
    kept_any = False
    while not bool(boards.done.all()):
        live = np.flatnonzero(~boards.done.numpy())
        r = search(net, boards.select(torch.from_numpy(live)), cfg, reuse=reuse, games=live)
        unproven = np.isnan(r.proven)
        assert (r.visits.sum(1)[unproven] == 24).all()
        kept = r.visits.sum(1) - r.simulations
        kept_any |= bool((kept > 0).any())
        for forest, _ in reuse.at.values():
            assert (forest.used <= forest.capacity).all()
            assert (forest.visits[forest.roots].sum(1) + 1 >= forest.used).all()  # nodes fit visits
        cols = torch.zeros(len(boards), dtype=torch.int64)
        cols[live] = torch.from_numpy(r.columns)
        wander = live[rng.random(len(live)) < 0.2]  # sometimes a move the search did not pick
        cols[wander] = torch.from_numpy(rng.integers(0, 7, len(wander)))
        legal = boards.legal()
        cols = torch.where(legal[torch.arange(len(boards)), cols], cols, legal.float().argmax(1))
        reuse.played(live, cols[live].numpy())
        boards.play(cols)
        assert set(reuse.at) <= set(live.tolist())
    assert kept_any
    reuse.played(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert not reuse.at  # no game left: no forest kept alive


def test_reused_dots_and_boxes_trees_keep_their_proofs(dots_positions: list) -> None:
    """Through the game's own states (a player may move twice): a few simulations, a move,
    then a reused search proves the exhaustive minimax value from the kept subtree."""
    game = load("dots_and_boxes", rows=2, cols=2)
    checked = 0
    for state in dots_positions[1:]:
        reuse = TreeReuse()
        first = search(Oracle(exact=False), game.batch_of([state]), SearchConfig(simulations=30), reuse=reuse)
        after = state.apply(int(first.columns[0]))
        reuse.played(np.array([0]), first.columns)
        if after.is_terminal or 0 not in reuse.at:
            continue
        forest, node = reuse.at[0]
        kept = int(forest.visits[node].sum())
        again = search(
            Oracle(exact=False), game.batch_of([after]), SearchConfig(simulations=20_000), reuse=reuse
        )
        assert again.visits[0].sum() == again.simulations[0] + kept  # it started from the kept visits
        assert again.proven[0] == first_player_value(after) * (1 if after.current_player() == 0 else -1)
        checked += kept > 0
    assert checked >= 3


def test_reuse_refuses_gumbel_and_mismatched_ids(net: PolicyValueNet) -> None:
    boards = Boards.from_positions([Position()])
    with pytest.raises(ValueError, match="Gumbel"):
        search(net, boards, SearchConfig(simulations=4, root="gumbel"), reuse=TreeReuse())
    with pytest.raises(ValueError, match="2 game ids for 1"):
        search(net, boards, SearchConfig(simulations=4), reuse=TreeReuse(), games=np.array([0, 1]))


# ---- first-play urgency, prior temperature, forced playouts -------------------------------------
def test_first_play_reduction_keeps_unlikely_moves_unvisited_once_the_likely_one_is_searched() -> None:
    """Every position is worth 0 but the one after move 3, good for the root's mover: the more
    an unvisited move's value is reduced below the root's mean, the fewer moves are tried."""
    oracle = FirstMoveValues([0.1, 0.1, 0.1, 0.4, 0.1, 0.1, 0.1], {3: -0.5})
    tried = []
    for reduction in (0.0, 0.5, 2.0):
        r = search_position(oracle, Position(), SearchConfig(simulations=16, fpu_reduction=reduction))
        assert sum(r.visits) == 16 and r.column == 3
        tried.append(sum(v > 0 for v in r.visits))
    assert tried[0] == 7 and tried[0] > tried[1] > tried[2] == 1


def test_tempered_priors_are_powers_renormalised_and_the_search_uses_them() -> None:
    prior = np.array([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4]])
    flat = tempered(prior, 2.0)
    expected = np.sqrt(prior) / np.sqrt(prior).sum(1, keepdims=True)
    assert np.allclose(flat, expected) and flat[0, 3] == 0 and np.allclose(flat.sum(1), 1)
    assert np.allclose(tempered(prior, 0.5)[1], prior[1] ** 2 / (prior[1] ** 2).sum())
    assert tempered(prior, 1.0) is prior
    net_prior = [0.02, 0.03, 0.05, 0.8, 0.05, 0.03, 0.02]
    oracle = FirstMoveValues(net_prior, {})
    plain = search_position(oracle, Position(), SearchConfig(simulations=32))
    flat_search = search_position(oracle, Position(), SearchConfig(simulations=32, prior_temperature=2.0))
    assert np.allclose(flat_search.prior, tempered(np.array([net_prior]), 2.0)[0])
    assert flat_search.visits[3] < plain.visits[3]  # flatter priors spread the visits


def test_policy_target_pruning_of_a_known_root() -> None:
    """By hand, with c_puct 1.5 and k 2: 18 visits, so the most visited move's score is
    0.1 + 1.5 * 0.5 * sqrt(19) / 11 = 0.397. Move 1 (q 0) stays at or below it from 4 visits on,
    and forcing gave it at most floor(sqrt(2 * 0.3 * 18)) = 3: it keeps 4 of 7. Move 2 (q -0.9)
    would stay below it with no visit, so its one visit goes; move 3 had none."""
    visits = np.array([[10, 7, 1, 0]])
    q = np.array([[0.1, 0.0, -0.9, 0.0]])
    prior = np.array([[0.5, 0.3, 0.1, 0.1]])
    assert np.allclose(forced_visits(prior, visits.sum(1), 2.0), np.sqrt(2 * prior * 18))
    assert pruned_visits(visits, q, prior, np.ones((1, 4), bool), 1.5, 2.0).tolist() == [[10, 4, 0, 0]]
    # a move that may not be played counts nothing, even the most visited
    allowed = np.array([[False, True, True, True]])
    assert pruned_visits(visits, q, prior, allowed, 1.5, 2.0)[0, 0] == 0


def test_forced_playouts_visit_every_root_move_and_pruning_takes_the_forced_visits_back() -> None:
    """Every position is worth 0, so PUCT alone shares 64 visits about as the priors do, and the
    rarest moves get one. Forcing (k = 2) gives each move at least sqrt(2 * P * 63) by the last
    simulation; pruning, worked by hand as in the test above, takes the rarest moves' back out
    of the target, and leaves moves 2 and 4 their 3, which PUCT alone gave them too."""
    prior = [0.02, 0.03, 0.05, 0.8, 0.05, 0.03, 0.02]
    oracle = FirstMoveValues(prior, {})
    plain = search_position(oracle, Position(), SearchConfig(simulations=64))
    forced = search_position(oracle, Position(), SearchConfig(simulations=64, forced_playouts=2.0))
    due = np.ceil(np.sqrt(2 * np.array(prior) * 63))
    assert (np.array(forced.visits) >= due).all() and not (np.array(plain.visits) >= due).all()
    assert forced.visits == [2, 2, 3, 50, 3, 2, 2] and forced.column == plain.column == 3
    assert np.allclose(forced.probs, np.array([0, 0, 3, 50, 3, 0, 0]) / 56)
    assert np.allclose(plain.probs, np.array(plain.visits) / 64)  # no pruning without forcing
