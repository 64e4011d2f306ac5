"""The scripted bots of every game (`c4core.games.players`, each game's `bots` and `perfect`):
legality and tactics.

Every bot must return a legal column for every unfinished game of a batch; `tactical` must take
a win when it has one, block a lone threat when it has none, and otherwise sample columns in
proportion to the centre weights 1,2,3,4,3,2,1. `lookahead` wins and blocks alike, plays a
double threat when it has a safe one, and never fills the cell under an opponent's win when
another move is left; the ground truth here is the scalar `Position`, not the batched engine.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from c4core.evaluation.match import play_match
from c4core.games import ConnectFour, DotsAndBoxes, load
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.bots import LookaheadBot, TacticalBot
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.connect4.solver import PerfectBot
from c4core.games.dots_and_boxes.bots import DefensiveBot, GreedyBot, HeuristicBot, MctsBot
from c4core.games.dots_and_boxes.rules import DotsState
from c4core.games.dots_and_boxes.solver import DotsSolver
from c4core.games.dots_and_boxes.suite import DotsItem
from c4core.games.players import RandomBot, sample_actions
from c4core.players import make_player

SMALL = Geometry(4, 4, 3)


def random_positions(rng, random_move_string, g, n, live=True):
    """Live positions of random length, or (`live=False`) games played out to the end."""
    if not live:
        return [Position.from_moves(random_move_string(rng, g), g) for _ in range(n)]
    lengths = rng.integers(0, g.cells, size=n)
    return [Position.from_moves(random_move_string(rng, g, int(m), unfinished=True), g) for m in lengths]


def assert_legal(cols: torch.Tensor, boards: Boards) -> None:
    live = ~boards.done
    assert cols.shape == (len(boards),) and cols.dtype == torch.int64
    chosen = boards.legal()[torch.arange(len(boards)), cols.clamp(0, boards.geometry.cols - 1)]
    in_range = (cols >= 0) & (cols < boards.geometry.cols)
    assert bool((in_range & chosen)[live].all())


@pytest.mark.parametrize(
    "make, g, n",
    [
        (RandomBot, STANDARD, 1_000),
        (TacticalBot, STANDARD, 1_000),
        (RandomBot, SMALL, 500),
        (TacticalBot, SMALL, 500),
        (LookaheadBot, STANDARD, 1_000),
        (LookaheadBot, SMALL, 500),
        (lambda: PerfectBot(SMALL), SMALL, 300),
    ],
    ids=["random", "tactical", "random-4x4", "tactical-4x4", "lookahead", "lookahead-4x4", "perfect-4x4"],
)
def test_bots_play_only_legal_moves(make, g, n, rng, torch_gen, random_move_string):
    bot = make()
    # mostly live positions, plus some finished ones whose column must simply be ignored
    positions = random_positions(rng, random_move_string, g, n)
    positions += random_positions(rng, random_move_string, g, n // 10, live=False)
    boards = Boards.from_positions(positions)
    assert bool(boards.done.any()) and not bool(boards.done.all())
    for _ in range(3):  # act, play (Boards.play itself refuses illegal columns), act again
        cols = bot.act(boards, torch_gen)
        assert_legal(cols, boards)
        boards.play(cols)
    # act_position agrees on a single live game
    for pos in positions[:20]:
        if not pos.is_terminal:
            assert bot.act_position(pos, torch_gen) in pos.legal_moves()


def test_random_bot_is_uniform_over_legal_columns(torch_gen):
    pos = Position.from_moves("444444" + "111111")  # columns 1 and 4 are full
    boards = Boards.from_positions([pos] * 6_000)
    counts = np.bincount(RandomBot().act(boards, torch_gen).numpy(), minlength=7)
    assert counts[0] == counts[3] == 0
    assert chisquare(counts[[1, 2, 4, 5, 6]]).pvalue > 1e-3


def tactical_cases(rng, random_move_string, g, n):
    """Random live positions split into (has an immediate win, must block one lone threat)."""
    wins, blocks = [], []
    while len(wins) < n or len(blocks) < n:
        length = int(rng.integers(g.connect, g.cells))
        pos = Position.from_moves(random_move_string(rng, g, length, unfinished=True), g)
        mine, theirs = pos.threats()
        landing = pos.possible()
        if mine & landing:
            if len(wins) < n:
                wins.append(pos)
        elif bin(theirs & landing).count("1") == 1:
            blocks.append(pos)
    return wins, blocks[:n]


@pytest.mark.parametrize("bot", [TacticalBot(), LookaheadBot()], ids=lambda b: b.name)
@pytest.mark.parametrize("g", [STANDARD, SMALL, Geometry(5, 6, 4)], ids=str)
def test_tactical_wins_and_blocks(bot, g, rng, torch_gen, random_move_string):
    wins, blocks = tactical_cases(rng, random_move_string, g, 300)
    for _ in range(3):
        cols = bot.act(Boards.from_positions(wins), torch_gen)
        assert all(p.is_winning_move(int(c)) for p, c in zip(wins, cols, strict=True))
        cols = bot.act(Boards.from_positions(blocks), torch_gen)
        for p, c in zip(blocks, cols, strict=True):
            # the only column where the opponent, to move instead, would win at once
            (block,) = [m for m in p.legal_moves() if Position(p.opponent, p.mask, g).is_winning_move(m)]
            assert int(c) == block


def test_tactical_examples(torch_gen):
    bot = TacticalBot()
    # X holds the bottom of columns 1-3; O to move must block column 4
    block = Position.from_moves("11223")
    assert {bot.act_position(block, torch_gen) for _ in range(20)} == {3}
    # X to move wins at column 4 (and only there) rather than blocking O's three in column 7
    win = Position.from_moves("172737")
    assert win.is_winning_move(3) and {bot.act_position(win, torch_gen) for _ in range(20)} == {3}
    # two wins (X on 2-4 of the bottom row): both get played, never anything else
    two = Position.from_moves("223344")
    assert {bot.act_position(two, torch_gen) for _ in range(40)} == {0, 4}


def test_tactical_centre_weights(torch_gen):
    n = 8_000
    cols = TacticalBot().act(Boards(n), torch_gen).numpy()
    counts = np.bincount(cols, minlength=7)
    weights = np.array(STANDARD.centre_weights, dtype=np.float64)
    expected = n * weights / weights.sum()
    assert chisquare(counts, expected).pvalue > 1e-3
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    # the same shape on the small board: 1,2,2,1
    cols = TacticalBot().act(Boards(n, SMALL), torch_gen).numpy()
    counts = np.bincount(cols, minlength=4)
    weights = np.array(SMALL.centre_weights, dtype=np.float64)
    assert chisquare(counts, n * weights / weights.sum()).pvalue > 1e-3


def test_tactical_weights_skip_full_columns(torch_gen):
    pos = Position.from_moves("444444")  # the heaviest column is full
    cols = TacticalBot().act(Boards.from_positions([pos] * 6_000), torch_gen).numpy()
    counts = np.bincount(cols, minlength=7)
    assert counts[3] == 0
    weights = np.array([1, 2, 3, 3, 2, 1], dtype=np.float64)
    assert chisquare(counts[[0, 1, 2, 4, 5, 6]], 6_000 * weights / weights.sum()).pvalue > 1e-3


@pytest.mark.parametrize(
    "make, g, won, drawn",
    [
        (RandomBot, STANDARD, "1212121", None),
        (TacticalBot, STANDARD, "1212121", None),
        (RandomBot, Geometry(2, 3, 3), "11223", "123123"),
        (TacticalBot, Geometry(2, 3, 3), None, "123123"),
        (lambda: PerfectBot(SMALL), SMALL, "12121", "3233143142244211"),
    ],
)
def test_act_position_rejects_finished_games(make, g, won, drawn):
    bot = make()
    if won is not None:
        pos = Position.from_moves(won, g)
        assert pos.won
        with pytest.raises(ValueError, match=r"the game is over: there is no move to make"):
            bot.act_position(pos)
    if drawn is not None:
        pos = Position.from_moves(drawn, g)
        assert pos.is_full and not pos.won
        with pytest.raises(ValueError, match=r"the game is over"):
            bot.act_position(pos)


def test_sample_actions_and_each_games_bots(torch_gen):
    weights = torch.tensor([[0, 0, 5, 0], [0, 0, 0, 0], [1, 0, 0, 0]])
    cols = sample_actions(weights, torch_gen)
    assert cols[0] == 2 and cols[2] == 0 and 0 <= cols[1] < 4
    small = Geometry(rows=4, cols=4, connect=3)
    connect4, dots = ConnectFour(small).bots(), DotsAndBoxes.from_params(rows=2, cols=2).bots()
    assert list(connect4) == ["random", "tactical", "lookahead", "perfect"]
    assert list(dots) == ["random", "greedy", "defensive", "heuristic", "mcts1000", "perfect"]
    assert all(name == make().name for bots in (connect4, dots) for name, make in bots.items())
    assert dots["mcts25"]().simulations == 25 and "mcts0" not in dots and "mctsx" not in dots
    assert connect4["random"]().kernel is not None and connect4["tactical"]().kernel is not None
    assert connect4["lookahead"]().kernel is None  # it plays through the tensor engine
    assert connect4["random"]() is not connect4["random"]()  # a fresh bot each call


def _after(pos: Position, col: int) -> tuple[bool, int]:
    """After the mover plays `col`: whether the opponent then wins at once, and how many
    columns the mover could then win in (a double threat when two or more)."""
    g = pos.geometry
    nxt = pos.play(col)
    if nxt.won:
        return False, 0
    hands_over = any(nxt.is_winning_move(m) for m in nxt.legal_moves())
    mine = Position(nxt.opponent, nxt.mask, g)  # the mover's stones, as if it were to move again
    return hands_over, sum(mine.is_winning_move(m) for m in nxt.legal_moves())


def lookahead_cases(rng, random_move_string, g, n):
    """Random live positions with no win to take and no threat to block, split into (a safe
    double threat exists, some move hands a win over while another does not)."""
    forks, traps = [], []
    while len(forks) < n or len(traps) < n:
        moves = random_move_string(rng, g, int(rng.integers(4, g.cells)), unfinished=True)
        pos = Position.from_moves(moves, g)
        mine, theirs = pos.threats()
        if (mine | theirs) & pos.possible():
            continue
        after = {c: _after(pos, c) for c in pos.legal_moves()}
        safe = {c for c, (bad, _) in after.items() if not bad}
        double = {c for c in safe if after[c][1] >= 2}
        if len(forks) < n and double:
            forks.append((pos, double))
        elif len(traps) < n and safe and len(safe) < len(after):
            traps.append((pos, safe))
    return forks, traps


@pytest.mark.parametrize("g", [STANDARD, Geometry(5, 6, 4)], ids=str)
def test_lookahead_plays_double_threats_and_avoids_handing_over_wins(g, rng, torch_gen, random_move_string):
    forks, traps = lookahead_cases(rng, random_move_string, g, 150)
    bot = LookaheadBot()
    for cases in (forks, traps):
        boards = Boards.from_positions([p for p, _ in cases])
        for _ in range(3):
            cols = bot.act(boards, torch_gen)
            assert all(int(c) in allowed for (_, allowed), c in zip(cases, cols, strict=True))


def test_lookahead_examples(torch_gen):
    bot = LookaheadBot()
    # X holds columns 2 and 3 of the bottom row: only column 4 makes two open threats (1 and 5)
    fork = Position.from_moves("2233")
    assert {bot.act_position(fork, torch_gen) for _ in range(20)} == {3}
    # X holds 1-2 of the bottom row, O 3 above it; every column is safe but none forks, so the
    # choice follows the centre weights over all seven columns
    quiet = Position.from_moves("1122")
    assert len({bot.act_position(quiet, torch_gen) for _ in range(200)}) == 7


def test_lookahead_beats_tactical():
    # the double threats it plays are what `tactical` loses to (measured: 0.71 over 2,000 games)
    r = play_match(LookaheadBot(), TacticalBot(), 600, seed=3)
    assert r.total.score > 0.6


# ---- Dots and Boxes' bots ------------------------------------------------------------------------------
@pytest.mark.parametrize("rows,cols", [(2, 2), (3, 3)])
def test_greedy_takes_a_box_whenever_it_can_and_only_then_plays_at_random(rows: int, cols: int) -> None:
    """Over random Dots and Boxes positions: where a line completes a box, greedy draws one that
    completes the most (checked on the scalar state); elsewhere its lines spread over many."""
    game = load("dots_and_boxes", rows=rows, cols=cols)
    rng = np.random.default_rng(rows)
    states = []
    for _ in range(300):
        state = game.new_state()
        for _ in range(rng.integers(0, game.num_actions)):
            state = state.apply(int(rng.choice(state.legal_actions())))
        states.append(state)
    actions = GreedyBot().act(game.batch_of(states), torch.Generator().manual_seed(1))
    taken, free = 0, []
    for state, a in zip(states, actions.tolist(), strict=True):
        gains = {b: state.apply(b).margin() - state.margin() for b in state.legal_actions()}
        gains = {b: g if state.current_player() == 0 else -g for b, g in gains.items()}
        assert a in gains
        if max(gains.values()) > 0:
            assert gains[a] == max(gains.values())
            taken += 1
        else:
            free.append(a)
    assert taken > 30 and len(set(free)) > game.num_actions // 2


def test_greedy_beats_random_and_each_bot_plays_its_own_game_only() -> None:
    dots = load("dots_and_boxes", rows=3, cols=3)
    assert play_match(GreedyBot(), RandomBot(), 200, seed=3, game=dots).total.score > 0.9
    with pytest.raises(ValueError, match="greedy plays dots_and_boxes only, not Connect Four"):
        make_player("greedy")
    with pytest.raises(ValueError, match="tactical plays connect4 only, not Dots and Boxes"):
        make_player("tactical", dots)
    assert isinstance(make_player("random", dots), RandomBot)


def random_dots_states(game, n: int, seed: int, left: int | None = None) -> list[DotsState]:
    """Unfinished positions of uniformly random play: of any length, or with `left` lines left."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        state = game.new_state()
        drawn = game.num_actions - left if left is not None else int(rng.integers(0, game.num_actions))
        for _ in range(drawn):
            state = state.apply(int(rng.choice(state.legal_actions())))
        if not state.is_terminal:
            out.append(state)
    return out


def endgame_dots_states(game, n: int, seed: int) -> list[DotsState]:
    """Positions where the safe lines have just run out: random lines that give no box a third
    side, while there are any (no box is ever on offer, so none is taken)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        state = game.new_state()
        while quiet := [b for b in state.legal_actions() if not _third_sides(state, b)]:
            state = state.apply(int(rng.choice(quiet)))
        out.append(state)
    return out


def _mover_gain(state: DotsState, line: int) -> int:
    """The boxes the mover takes by drawing `line` (scalar rules)."""
    return sum(bin(o).count("1") for o in state.apply(line).owned) - sum(
        bin(o).count("1") for o in state.owned
    )


def _third_sides(state: DotsState, line: int) -> int:
    """The boxes `line` gives a third side to."""
    boxes = state.boxes
    return sum(mask >> line & 1 and bin(state.lines & mask).count("1") == 2 for mask in boxes.box_masks)


def _given_away(state: DotsState, line: int) -> int:
    """The boxes the opponent takes after the quiet `line`, taking every box it can in a row."""
    after = state.apply(line)
    taker, before = after.current_player(), bin(after.owned[after.current_player()]).count("1")
    while not after.is_terminal and (takes := [b for b in after.legal_actions() if _mover_gain(after, b)]):
        after = after.apply(takes[0])
    return bin(after.owned[taker]).count("1") - before


@pytest.mark.parametrize("rows,cols", [(2, 3), (3, 3), (4, 4)])
def test_defensive_never_offers_a_box_while_a_safe_line_remains(rows: int, cols: int) -> None:
    """Checked on the scalar state: a safe line takes a box or gives none its third side."""
    game = load("dots_and_boxes", rows=rows, cols=cols)
    states = random_dots_states(game, 300, seed=rows * cols)
    actions = DefensiveBot().act(game.batch_of(states), torch.Generator().manual_seed(2)).tolist()
    choices = 0
    for state, a in zip(states, actions, strict=True):
        safe = {b for b in state.legal_actions() if _mover_gain(state, b) or not _third_sides(state, b)}
        assert a in (safe or state.legal_actions())
        choices += 0 < len(safe) < len(state.legal_actions())
    assert choices > 50  # positions where an unsafe line was there to avoid


@pytest.mark.parametrize("rows,cols", [(3, 3), (4, 4)])
def test_heuristic_takes_else_plays_safe_else_gives_away_the_fewest(rows: int, cols: int) -> None:
    game = load("dots_and_boxes", rows=rows, cols=cols)
    states = random_dots_states(game, 300, seed=rows + cols) + endgame_dots_states(game, 100, seed=rows)
    actions = HeuristicBot().act(game.batch_of(states), torch.Generator().manual_seed(3)).tolist()
    cases = {"take": 0, "safe": 0, "forced": 0}
    for state, a in zip(states, actions, strict=True):
        legal = state.legal_actions()
        gains = {b: _mover_gain(state, b) for b in legal}
        if max(gains.values()) > 0:
            assert gains[a] == max(gains.values())
            cases["take"] += 1
        elif safe := {b for b in legal if not _third_sides(state, b)}:
            assert a in safe
            cases["safe"] += 1
        else:
            given = {b: _given_away(state, b) for b in legal}
            assert given[a] == min(given.values())
            cases["forced"] += 1
    assert min(cases.values()) > 10, cases


def test_mcts_keeps_the_outcome_where_the_tree_is_small_and_follows_its_seed() -> None:
    """With 6 lines left (at most 720 orders of play), 2,000 simulations settle the root: in every
    such 3x3 position where the line decides the outcome, `mcts2000` keeps it (random play does
    not); searches are seeded."""
    game = load("dots_and_boxes", rows=3, cols=3)
    solver = DotsSolver(game.boxes)
    items = []
    for state in random_dots_states(game, 400, seed=9, left=6):
        item = DotsItem(state, tuple(int(v) for v in solver.action_values(np.array([state.lines]))[0]))
        if not all(item.keeps_outcome(b) for b in state.legal_actions()):
            items.append(item)
    boards = game.batch_of([it.state for it in items])
    assert len(items) > 50
    for player, least in ((MctsBot(2000), 1.0), (RandomBot(), 0.0)):
        actions = player.act(boards, torch.Generator().manual_seed(4)).tolist()
        kept = np.mean([it.keeps_outcome(a) for it, a in zip(items, actions, strict=True)])
        assert kept >= least and (least or kept < 0.9)
    again = [MctsBot(50).act(boards, torch.Generator().manual_seed(s)).tolist() for s in (5, 5, 6)]
    assert again[0] == again[1] != again[2]


def test_the_baselines_rank_as_their_rules_say() -> None:
    """On 3x3, each bot beats the one whose rule it adds to: greedy and defensive beat random,
    heuristic beats both."""
    dots = load("dots_and_boxes", rows=3, cols=3)
    for a, b in (
        (DefensiveBot(), RandomBot()),
        (HeuristicBot(), GreedyBot()),
        (HeuristicBot(), DefensiveBot()),
    ):
        assert play_match(a, b, 200, seed=4, game=dots).total.score > 0.6, (a, b)
    bots = [make_player(s, dots) for s in ("greedy", "defensive", "heuristic", "mcts20")]
    for bot in bots:  # every line legal, finished games skipped
        states = random_dots_states(dots, 50, seed=1)
        actions = bot.act(dots.batch_of(states), torch.Generator().manual_seed(0)).tolist()
        assert all(a in s.legal_actions() for s, a in zip(states, actions, strict=True))
