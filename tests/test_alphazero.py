"""The AlphaZero-style learner (`c4core.learners.alphazero`): self-play targets, the fit, the loop, and
the share of games played against league members.

Tiny nets on the standard board and on 4x4 connect-3, where the exact solver checks the value
targets that MCTS-Solver proves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch
from exact import dots_movers_and_results, first_player_value
from groups import in_group

from c4core.config import AlphaZeroConfig, NetConfig, SearchConfig, overridden
from c4core.games import ConnectFour, exact_from, load, position_player
from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.connect4.solver import Solver
from c4core.games.players import Player
from c4core.learners.alphazero import (
    Samples,
    _rescore,
    average_weights,
    fit,
    league_games,
    learning_rate_at,
    member_player,
    merge_duplicates,
    next_decisions,
    random_images,
    seat_games,
    self_play,
    solver_for,
    solver_openings,
    solver_samples,
    train,
)
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.learners.ranks import Ranks, joined
from c4core.learners.search import SearchPlayer

SEED = 97
SMALL = Geometry(4, 4, 3)
C3 = ConnectFour(SMALL)
TINY = AlphaZeroConfig(
    iterations=2,
    games=8,
    search=SearchConfig(simulations=8, root_noise=True),
    opening_plies=2,
    opening_plies_max=2,
    temperature_plies=2,
    batch_size=64,
    epochs=1.0,
)


def tiny_net(geometry: Geometry = STANDARD, seed: int = SEED, precision: str = "float32") -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(
        NetConfig(blocks=1, channels=8, value_hidden=8, precision=precision), ConnectFour(geometry)
    )


def edge_stacker(geometry: Geometry = STANDARD) -> PolicyValueNet:
    """A member rigged to lose: its policy all but forces column 0, so it stacks one edge
    column, threatens nothing else and never blocks a threat."""
    net = tiny_net(geometry, seed=SEED + 5)
    with torch.no_grad():
        net.policy_fc.weight.zero_()
        net.policy_fc.bias.fill_(-20.0)
        net.policy_fc.bias[0] = 20.0
    return net.eval()


def position(samples: Samples, i: int, geometry: Geometry = SMALL) -> Position:
    """Sample `i`'s position, read back from its observation's stone planes (mover's, then the
    opponent's; cell k of a plane is bit `cell_bits[k]`)."""
    mine, theirs = (samples.observation[i, p].flatten().tolist() for p in (0, 1))
    current = sum(1 << b for b, on in zip(geometry.cell_bits, mine, strict=True) if on)
    others = sum(1 << b for b, on in zip(geometry.cell_bits, theirs, strict=True) if on)
    return Position(current, current | others, geometry)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


@pytest.fixture(scope="module")
def played() -> tuple[Samples, dict[str, float]]:
    torch.set_num_threads(1)  # module fixtures run before the per-test one
    return self_play(tiny_net(), TINY, torch.Generator().manual_seed(SEED))


@pytest.mark.parametrize(
    "bad",
    [
        {"games": 0},
        {"q_weight": 1.5},
        {"replay_iterations": 0},
        {"epochs": 0.0},
        {"opening_plies": -1},
        {"batch_size": 0},
        {"opening_plies": 5, "opening_plies_max": 4},
        {"solve_from": -1},
        {"solve_nodes": 0},
        {"learning_rate_final": -1e-4},
        {"learning_rate": 1e-3, "learning_rate_final": 2e-3},
        {"average_iterations": -1},
        {"average_iterations": 1.5},
        {"reply_weight": -0.1},
        {"solver_positions": -1},
        {"solver_positions": 1.5},
        {"solver_policy": True},  # without solve_from
        {"random_image": True, "mirror": False},
    ],
)
def test_config_validation(bad: dict) -> None:
    with pytest.raises(ValueError):
        AlphaZeroConfig(**bad)


def test_self_play_search_has_noise_and_is_greedy() -> None:
    s = TINY.search
    assert s.root_noise and s.temperature == 0 and s.simulations == TINY.search.simulations
    assert s.max_trees >= TINY.games  # every game's tree in one batch


def test_policy_targets_are_distributions_over_legal_moves(played: tuple[Samples, dict]) -> None:
    samples, _ = played
    legal = samples.legal
    assert torch.allclose(samples.policy.sum(1), torch.ones(len(samples)), atol=1e-5)
    assert bool((samples.policy[~legal] == 0).all())
    assert bool((samples.value.abs() <= 1).all())


def test_samples_cover_every_decision_after_the_opening(played: tuple[Samples, dict]) -> None:
    samples, stats = played
    assert int(samples.ply.min()) == TINY.opening_plies
    # one decision per ply from the opening to each game's end
    assert len(samples) == round((stats["selfplay/plies"] - TINY.opening_plies) * TINY.games)
    assert stats["vs/self/win"] + stats["vs/self/draw"] + stats["vs/self/loss"] == pytest.approx(1.0)
    assert 0 <= stats["selfplay/proven_roots"] <= 1
    # stones: the side to move has ply // 2 stones on the board, the opponent the rest
    counts = samples.observation[:, 0].flatten(1).sum(1)
    assert bool((counts == samples.ply // 2).all())
    assert bool((samples.player == samples.ply % 2).all())  # Connect Four alternates


def test_random_openings_vary_per_game(gen: torch.Generator) -> None:
    """Each game draws its own opening length, so searched play starts at many plies. No game
    ends before ply 7 on 6x7, so the decisions at ply p (p <= 6) are exactly the games whose
    opening was at most p plies long: a count that grows with p and stays below the games."""
    cfg = overridden(
        TINY, {"games": 32, "opening_plies": 1, "opening_plies_max": 12, "search": {"simulations": 2}}
    )
    samples, _ = self_play(tiny_net(), cfg, gen)
    counts = [int((samples.ply == p).sum()) for p in range(7)]
    assert counts[0] == 0 and int(samples.ply.min()) == 1
    assert all(a <= b for a, b in zip(counts[1:], counts[2:], strict=False))
    assert 0 < counts[1] < counts[6] < cfg.games


def test_proven_value_targets_agree_with_the_solver() -> None:
    """On 4x4 connect-3 search proves many roots; those targets are the exact game values."""
    cfg = overridden(
        TINY, {"games": 16, "opening_plies": 0, "opening_plies_max": 0, "search": {"simulations": 32}}
    )
    samples, stats = self_play(tiny_net(SMALL), cfg, torch.Generator().manual_seed(SEED), C3)
    solver = Solver(SMALL)
    proven = torch.nonzero(samples.proven).squeeze(1).tolist()
    assert len(proven) > len(samples) // 2
    assert stats["selfplay/proven_roots"] == pytest.approx(len(proven) / len(samples))
    for i in proven:
        score = solver.score(position(samples, i))
        assert float(samples.value[i]) == (score > 0) - (score < 0)


def test_unproven_value_targets_mix_outcome_and_search(gen: torch.Generator) -> None:
    """With q_weight 0 an unproven target is the game's outcome for the side to move, so the
    two sides of one game get opposite targets; with q_weight 1 it is the search's value."""
    cfg = overridden(TINY, {"games": 1, "q_weight": 0.0, "search": {"simulations": 2}})
    samples, stats = self_play(tiny_net(), cfg, gen)
    z = stats["vs/self/win"] - stats["vs/self/loss"]  # one game: +1, 0 or -1 for the first player
    outcome = torch.where(samples.ply % 2 == 0, z, -z)
    unproven = ~samples.proven
    assert bool(unproven.any())
    assert torch.equal(samples.value[unproven], outcome[unproven].float())
    searched, _ = self_play(tiny_net(), replace(cfg, q_weight=1.0), torch.Generator().manual_seed(SEED))
    estimates = searched.value[~searched.proven]
    assert bool(((estimates > -1) & (estimates < 1)).all())  # root means, never a bare outcome


def test_solver_rescores_late_targets_and_adjudicates_early_ones() -> None:
    """From `solve_from` on every target is the solver's exact result; earlier decisions take
    the exact result of the game's first settled position as their outcome (q_weight 0 makes
    the target that outcome), whatever the noisy game went on to do."""
    cfg = overridden(
        TINY,
        {
            "games": 1,
            "opening_plies": 0,
            "opening_plies_max": 0,
            "temperature_plies": 16,
            "q_weight": 0.0,
            "solve_from": 4,
            "search": {"simulations": 4},
        },
    )
    solver = Solver(SMALL)
    adjudicated = 0
    for seed in range(12):
        plain, stats = self_play(
            tiny_net(SMALL), replace(cfg, solve_from=0), torch.Generator().manual_seed(seed), C3
        )
        samples, solved_stats = self_play(tiny_net(SMALL), cfg, torch.Generator().manual_seed(seed), C3)
        assert torch.equal(samples.observation, plain.observation)  # the solver only rewrites targets
        late = samples.ply >= cfg.solve_from
        assert bool(samples.proven[late].all())
        assert solved_stats["selfplay/solved"] == (1.0 if bool(late.any()) else 0.0)
        exact = {}
        for i in torch.nonzero(late).squeeze(1).tolist():
            score = solver.score(position(samples, i), weak=True)
            assert float(samples.value[i]) == score
            exact[int(samples.ply[i])] = score
        if not exact:
            continue  # the game ended before solve_from
        first = min(exact)
        for i in torch.nonzero(~samples.proven).squeeze(1).tolist():
            p = int(samples.ply[i])
            assert float(samples.value[i]) == exact[first] * (1 if (first - p) % 2 == 0 else -1)
        z = stats["vs/self/win"] - stats["vs/self/loss"]
        adjudicated += (exact[first] if first % 2 == 0 else -exact[first]) != z
    assert adjudicated > 0  # some game ended otherwise than its first settled position promised


def test_probing_search_proves_every_small_self_play_root() -> None:
    """Probing every leaf (from ply 1) on 4x4 connect-3 proves each root its search reaches, so
    every target is exact, and exact as the solver has it; the search carries the settings."""
    cfg = overridden(
        TINY,
        {
            "games": 6,
            "opening_plies": 0,
            "opening_plies_max": 0,
            "search": {"simulations": 8, "probe_from": 1, "probe_nodes": 10**6},
        },
    )
    assert (cfg.search.probe_from, cfg.search.probe_nodes) == (1, 10**6)
    samples, stats = self_play(tiny_net(SMALL), cfg, torch.Generator().manual_seed(SEED), C3)
    assert bool(samples.proven.all()) and stats["selfplay/proven_roots"] == 1.0
    solver = Solver(SMALL)
    for i in range(len(samples.ply)):
        pos = position(samples, i)
        assert float(samples.value[i]) == solver.score(pos, weak=True)


def test_solver_budget_leaves_unsettled_positions_unproven() -> None:
    """With a budget of one node the solver settles only the positions decided at once (a win
    on the board, a double threat); the rest stay as search left them."""
    cfg = overridden(TINY, {"games": 8, "solve_from": 10, "solve_nodes": 1, "search": {"simulations": 4}})
    samples, stats = self_play(tiny_net(), cfg, torch.Generator().manual_seed(SEED))
    plain, _ = self_play(tiny_net(), replace(cfg, solve_from=0), torch.Generator().manual_seed(SEED))
    assert 0.0 < stats["selfplay/solved"] < 1.0
    late = samples.ply >= cfg.solve_from
    newly = samples.proven & ~plain.proven
    assert bool(late[newly].all())  # only late positions get exact targets
    unsettled = late & ~samples.proven
    assert bool(unsettled.any()) and not bool(plain.proven[unsettled].any())


def test_fit_learns_a_fixed_window(played: tuple[Samples, dict], gen: torch.Generator) -> None:
    samples, _ = played
    net = tiny_net(seed=SEED + 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = fit(net, optimizer, samples, 1, TINY, gen)
    for _ in range(20):
        last = fit(net, optimizer, samples, 5, TINY, gen)
    assert last["policy"] + last["value"] < first["policy"] + first["value"]
    assert not net.training  # left ready to play


def test_fit_with_a_categorical_value_head_reports_the_error_of_its_mean(
    played: tuple[Samples, dict], gen: torch.Generator
) -> None:
    samples, _ = played
    torch.manual_seed(SEED)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, value_bins=9))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = fit(net, optimizer, samples, 1, TINY, gen)
    for _ in range(20):
        last = fit(net, optimizer, samples, 5, TINY, gen)
    assert last["value"] < first["value"] and last["value_error"] < first["value_error"]
    scalar = tiny_net()
    plain = fit(scalar, torch.optim.Adam(scalar.parameters()), samples, 1, TINY, gen)
    assert "value_error" not in plain  # a scalar head's squared error is its "value"


def test_mirrored_minibatch_flips_targets(played: tuple[Samples, dict]) -> None:
    """A symmetric net (weights mirrored into themselves) has the same loss with mirroring on
    and off, because every mirrored sample's targets are flipped with its planes."""
    samples, _ = played
    net = tiny_net(seed=SEED + 2)
    rows, cols = STANDARD.rows, STANDARD.cols
    with torch.no_grad():
        for conv in (m for m in net.modules() if isinstance(m, torch.nn.Conv2d)):
            conv.weight.copy_((conv.weight + conv.weight.flip(-1)) / 2)
        w = net.value_fc1.weight.view(-1, rows, cols)
        w.copy_((w + w.flip(-1)) / 2)
        w = net.policy_fc.weight.view(cols, 2, rows, cols)  # column c reads cell j as c' reads j'
        w.copy_((w + w.flip(0).flip(-1)) / 2)
        net.policy_fc.bias.copy_((net.policy_fc.bias + net.policy_fc.bias.flip(0)) / 2)
    on = replace(TINY, mirror=True, batch_size=len(samples))
    off = replace(TINY, mirror=False, batch_size=len(samples))
    sgd = torch.optim.SGD(net.parameters(), lr=0.0)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    a, b = fit(net, sgd, samples, 1, on, g1), fit(net, sgd, samples, 1, off, g2)
    assert a["value"] == pytest.approx(b["value"], rel=1e-4)
    assert a["policy"] == pytest.approx(b["policy"], rel=1e-4)


def test_random_images_map_each_sample_with_its_targets_by_one_drawn_symmetry() -> None:
    """With `random_image` each sample enters the minibatch as one image under the square's
    symmetries, drawn uniformly: planes, legal moves, policy and reply targets all mapped by the
    same symmetry, the rest as they were."""
    cfg = overridden(
        TINY, {"games": 16, "opening_plies": 0, "opening_plies_max": 0, "search": {"simulations": 4}}
    )
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), DOTS)
    samples, _ = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS)
    out = random_images(samples, DOTS.symmetries, torch.Generator().manual_seed(SEED))
    for f in ("player", "ply", "value", "proven", "has_reply"):
        assert torch.equal(getattr(out, f), getattr(samples, f))
    drawn = set()
    for i in range(len(samples)):
        fits = [
            k
            for k, sym in enumerate(DOTS.symmetries)
            if torch.equal(out.observation[i], sym.observation(samples.observation[i]))
            and all(
                torch.equal(getattr(out, f)[i], sym.policy(getattr(samples, f)[i]))
                for f in ("legal", "policy", "reply")
            )
        ]
        assert fits, i
        drawn.add(fits[0] if len(fits) == 1 else None)
    assert len(drawn - {None}) == len(DOTS.symmetries) == 8  # every image is drawn


@pytest.mark.parametrize("random_image", [False, True])
def test_fit_with_random_images_takes_one_image_a_sample(
    random_image: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), DOTS)
    cfg = overridden(
        TINY, {"games": 4, "opening_plies": 0, "opening_plies_max": 0, "search": {"simulations": 4}}
    )
    samples, _ = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS)
    rows: list[int] = []
    heads = net.heads
    monkeypatch.setattr(net, "heads", lambda planes, legal: rows.append(len(planes)) or heads(planes, legal))
    optimizer = torch.optim.Adam(net.parameters())
    fit(
        net,
        optimizer,
        samples,
        3,
        replace(cfg, batch_size=10, random_image=random_image),
        torch.Generator(),
        DOTS,
    )
    assert rows == [10 if random_image else 80] * 3


@pytest.mark.slow  # two whole training runs
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_train_reports_every_iteration_and_is_reproducible(precision: str) -> None:
    seen: list[tuple[int, dict[str, float]]] = []
    net1, net2 = tiny_net(precision=precision), tiny_net(precision=precision)
    train(net1, TINY, seed=5, on_iteration=lambda i, m: seen.append((i, m)))
    train(net2, TINY, seed=5)
    assert [i for i, _ in seen] == list(range(TINY.iterations))
    for key in ("losses/policy", "losses/value", "vs/self/win", "selfplay/plies", "charts/seconds"):
        assert all(key in m for _, m in seen)
    for p1, p2 in zip(net1.parameters(), net2.parameters(), strict=True):
        assert torch.equal(p1, p2)


def test_train_resets_a_resumed_optimizer_settings() -> None:
    net = tiny_net()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.5)
    train(net, replace(TINY, iterations=1), seed=1, optimizer=optimizer)
    assert optimizer.param_groups[0]["lr"] == TINY.learning_rate
    assert optimizer.param_groups[0]["weight_decay"] == TINY.weight_decay


def test_replay_window_holds_latest_iterations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit sees the samples of at most `replay_iterations` iterations."""
    import c4core.learners.alphazero as az

    sizes: list[int] = []
    new: list[int] = []
    real_fit, real_play = az.fit, az.self_play

    def spy_fit(net, optimizer, window, steps, config, generator, game=C3):
        sizes.append(len(window))
        return real_fit(net, optimizer, window, steps, config, generator, game)

    def spy_play(*args, **kwargs):
        out = real_play(*args, **kwargs)
        new.append(len(out[0]))
        return out

    monkeypatch.setattr(az, "fit", spy_fit)
    monkeypatch.setattr(az, "self_play", spy_play)
    train(tiny_net(), replace(TINY, iterations=4, replay_iterations=2), seed=3)
    assert sizes == [new[0], new[0] + new[1], new[1] + new[2], new[2] + new[3]]


# ---- league share ------------------------------------------------------------------------------
LEAGUE = replace(TINY, games=16, league_share=0.5)


@pytest.fixture(scope="module")
def league_played(counting_player: type[Player]) -> tuple[Samples, dict[str, float], int]:
    """Half of 16 games against two raw-policy members (the edge stacker and a stranger net);
    also the moves the members were asked for."""
    import c4core.learners.alphazero as az

    torch.set_num_threads(1)
    counters: list[Any] = []

    def counted(net, config):
        counters.append(counting_player(real(net, config)))
        return counters[-1]

    real = az.member_player
    opponents = [("edge", edge_stacker()), ("stranger", tiny_net(seed=SEED + 3))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(az, "member_player", counted)
        samples, stats = self_play(
            tiny_net(), LEAGUE, torch.Generator().manual_seed(SEED), opponents=opponents
        )
    return samples, stats, sum(c.moves for c in counters)


@pytest.fixture(scope="module")
def searched_league() -> tuple[Samples, dict[str, float]]:
    """All 8 games against the learner's own net, searching as many simulations as it does."""
    torch.set_num_threads(1)
    cfg = replace(TINY, league_share=1.0, league_simulations=TINY.search.simulations)
    return self_play(tiny_net(), cfg, torch.Generator().manual_seed(SEED), opponents=[("peer", tiny_net())])


@pytest.mark.parametrize("share, members", [(0.0, 2), (0.5, 0)])
def test_no_league_games_is_plain_self_play(played: tuple[Samples, dict], share: float, members: int) -> None:
    """A zero share with members, or a share without any, draws and records exactly what
    plain self-play does."""
    opponents = [(f"m{k}", edge_stacker()) for k in range(members)]
    cfg = replace(TINY, league_share=share)
    samples, stats = self_play(tiny_net(), cfg, torch.Generator().manual_seed(SEED), opponents=opponents)
    plain, plain_stats = played
    for field in Samples.__dataclass_fields__:
        assert torch.equal(getattr(samples, field), getattr(plain, field)), field
    assert stats == plain_stats


def test_train_with_unused_opponents_learns_what_plain_training_does() -> None:
    once = replace(TINY, iterations=1)
    net1, net2 = tiny_net(), tiny_net()
    train(net1, once, seed=5, opponents=[("edge", edge_stacker())])
    train(net2, once, seed=5)
    for p1, p2 in zip(net1.parameters(), net2.parameters(), strict=True):
        assert torch.equal(p1, p2)


def test_train_reports_the_members_it_played() -> None:
    seen: list[dict[str, float]] = []
    cfg = replace(TINY, iterations=1, league_share=0.5)
    train(
        tiny_net(),
        cfg,
        seed=5,
        on_iteration=lambda i, m: seen.append(m),
        opponents=[("edge", edge_stacker())],
    )
    assert {"vs/self/win", "vs/edge/win", "vs/edge/draw", "vs/edge/loss", "losses/policy"} <= set(seen[0])


@pytest.mark.parametrize("games, share, expected", [(16, 0.5, [4, 4]), (12, 0.5, [4, 2]), (7, 1.0, [4, 2])])
def test_league_games_pair_colours_and_split_evenly(games: int, share: float, expected: list[int]) -> None:
    """The league's share rounds down to even, dealt over the members in colour pairs: the
    learner is first in exactly half of each member's games; the rest is self-play."""
    member, learner_first = seat_games(replace(TINY, games=games, league_share=share), 2)
    assert len(member) == games
    assert [int((member == k).sum()) for k in range(2)] == expected
    assert int((member < 0).sum()) == games - sum(expected)
    for k in range(2):
        assert int(learner_first[member == k].sum()) == expected[k] // 2


def test_league_games_report_each_member_from_the_learners_side(
    league_played: tuple[Samples, dict, int],
) -> None:
    _, stats, _ = league_played
    per_member = LEAGUE.games * LEAGUE.league_share / 2
    for name in ("self", "edge", "stranger"):
        rates = [stats[f"vs/{name}/{r}"] for r in ("win", "draw", "loss")]
        assert sum(rates) == pytest.approx(1.0)
        assert all((r * per_member) == pytest.approx(round(r * per_member)) for r in rates)  # whole games


def test_only_the_learners_decisions_become_samples(league_played: tuple[Samples, dict, int]) -> None:
    """Every ply after the opening is a learner's decision (a sample) or a member's move (not
    one): the two counts add up to all the plies played."""
    samples, stats, member_moves = league_played
    after_opening = round((stats["selfplay/plies"] - LEAGUE.opening_plies) * LEAGUE.games)
    assert member_moves > 0
    assert len(samples) + member_moves == after_opening
    assert torch.allclose(samples.policy.sum(1), torch.ones(len(samples)), atol=1e-5)


def test_a_member_rigged_to_lose_gives_the_learner_its_wins(
    league_played: tuple[Samples, dict, int], searched_league: tuple[Samples, dict]
) -> None:
    """The learner beats the edge stacker more often than it beats its own net searching as
    deeply as it does, and wins more than it loses against it."""
    _, stats, _ = league_played
    _, peer_stats = searched_league
    assert stats["vs/edge/win"] > peer_stats["vs/peer/win"]
    assert stats["vs/edge/win"] > stats["vs/edge/loss"]


def test_searching_members_play_legal_whole_games(searched_league: tuple[Samples, dict]) -> None:
    """A member with `league_simulations` searches greedily without noise or probes; the games
    it plays run to their end (an illegal move would raise) and leave no self-play."""
    cfg = replace(TINY, league_simulations=3, search=replace(TINY.search, probe_from=20))
    player = member_player(tiny_net(), cfg)
    assert isinstance(player, SearchPlayer)
    assert player.config.simulations == 3 and not player.config.root_noise
    assert player.config.temperature == 0 and player.config.probe_from == 0
    assert isinstance(member_player(tiny_net(), TINY), NetPlayer)
    samples, stats = searched_league
    assert "vs/self/win" not in stats
    assert sum(stats[f"vs/peer/{r}"] for r in ("win", "draw", "loss")) == pytest.approx(1.0)
    assert STANDARD.connect * 2 - 1 <= stats["selfplay/plies"] <= STANDARD.cells
    legal = samples.legal
    assert bool((samples.policy[~legal] == 0).all())


def test_solver_adjudicates_league_games_from_the_learners_side() -> None:
    """In two league games on 4x4 connect-3 the learner moves on even plies in the first and
    odd plies in the second, so a sample's ply names its game. Within each game the late
    targets are exact and the earlier ones take the exact result of that game's first settled
    decision (q_weight 0 makes the target that outcome; the learner's decisions are an even
    number of plies apart, so all on its side), whatever the game went on to do."""
    cfg = overridden(
        TINY,
        {
            "games": 2,
            "league_share": 1.0,
            "opening_plies": 0,
            "opening_plies_max": 0,
            "temperature_plies": 16,
            "q_weight": 0.0,
            "solve_from": 4,
            "search": {"simulations": 4},
        },
    )
    opponents = [("stranger", tiny_net(SMALL, seed=SEED + 3))]
    adjudicated = 0
    for seed in range(12):
        samples, _ = self_play(
            tiny_net(SMALL), cfg, torch.Generator().manual_seed(seed), C3, opponents=opponents
        )
        plain, _ = self_play(
            tiny_net(SMALL),
            replace(cfg, solve_from=0),
            torch.Generator().manual_seed(seed),
            C3,
            opponents=opponents,
        )
        assert torch.equal(samples.observation, plain.observation)  # the solver only rewrites targets
        assert bool(samples.proven[samples.ply >= cfg.solve_from].all())
        for parity in (0, 1):
            mine = torch.nonzero(samples.ply % 2 == parity).squeeze(1).tolist()
            late = [i for i in mine if samples.ply[i] >= cfg.solve_from]
            if not late:
                continue  # that game ended before solve_from
            settled = float(samples.value[min(late, key=lambda i: int(samples.ply[i]))])
            early = [i for i in mine if not samples.proven[i]]
            assert all(float(samples.value[i]) == settled for i in early)
            adjudicated += any(float(plain.value[i]) != settled for i in early)
    assert adjudicated > 0  # some game ended otherwise than its first settled position promised


# ---- data-parallel ranks ------------------------------------------------------------------------
GROUP = replace(TINY, games=16, league_share=0.5, ranks=2)
"""Two ranks of 8 games each, half of them against a league member."""


def _group_rank(rank: int, port: int, out: Any) -> None:
    """One rank of a two-process gloo group (a spawned child) training `GROUP` from `tiny_net`;
    sends back its parameters (numpy: a tensor would go with this process) and metrics."""
    torch.set_num_threads(1)
    with joined(port, rank, 2) as ranks:
        net, seen = tiny_net(), []
        member = [("peer", edge_stacker())]
        train(net, GROUP, SEED, ConnectFour(), None, lambda i, m: seen.append(m), member, ranks)
        out.put((rank, ({k: v.numpy().copy() for k, v in net.state_dict().items()}, seen)))


@pytest.fixture(scope="module")
def group() -> dict[int, tuple[dict[str, torch.Tensor], list[dict[str, float]]]]:
    got = in_group(_group_rank)
    return {r: ({k: torch.from_numpy(v) for k, v in state.items()}, seen) for r, (state, seen) in got.items()}


@pytest.mark.slow
def test_ranks_pool_their_games_and_share_one_fit(group) -> None:
    (state0, seen0), (state1, seen1) = group[0], group[1]
    assert all(torch.equal(state0[k], state1[k]) for k in state0)  # rank 0's fit, shared
    untrained = tiny_net().state_dict()
    assert any(not torch.equal(state0[k], untrained[k]) for k in state0)
    assert len(seen0) == len(seen1) == GROUP.iterations
    fitted = {"losses/policy", "losses/value", "losses/entropy"}
    for m0, m1 in zip(seen0, seen1, strict=True):
        assert {k for k in m0 if k.startswith("losses/")} == fitted
        assert not any(k.startswith("losses/") for k in m1)  # only rank 0 fits
        timeless = {k for k in m1 if "seconds" not in k}
        assert {k: m0[k] for k in timeless} == {k: m1[k] for k in timeless}  # the group's, on both
        for opp in ("self", "peer"):
            assert sum(m0[f"vs/{opp}/{r}"] for r in ("win", "draw", "loss")) == pytest.approx(1.0)
    # each rank plays the games a learner alone plays with its seed and its half of the games,
    # so the group's first iteration holds exactly both halves' decisions
    alone = replace(GROUP, games=8, ranks=1)
    member = [("peer", edge_stacker())]
    halves = [
        self_play(tiny_net(), alone, torch.Generator().manual_seed(Ranks(r, 2).seed(SEED)), opponents=member)
        for r in (0, 1)
    ]
    assert seen0[0]["charts/decisions"] == sum(len(samples) for samples, _ in halves)


def test_a_config_for_two_ranks_does_not_train_alone() -> None:
    with pytest.raises(ValueError, match="2 ranks"):
        train(tiny_net(), replace(TINY, ranks=2), SEED)
    with pytest.raises(ValueError, match="AlphaZero ranks"):
        replace(TINY, ranks=9)


# ---- another game: Dots and Boxes, where completing a box moves again ----------------------------
DOTS = load("dots_and_boxes", rows=2, cols=2)


@pytest.mark.parametrize("value_target", ["outcome", "margin"])
def test_self_play_on_dots_and_boxes_targets_each_movers_outcome(value_target: str) -> None:
    """On Dots and Boxes a sample's player is whoever is to move, twice in a row after a box,
    and with q_weight 0 an unproven value target is the game's outcome for that player (its
    margin return for a net that learns margins): both checked against the movers and results
    replayed from the observations."""
    games = 4
    cfg = overridden(
        TINY,
        {
            "games": games,
            "q_weight": 0.0,
            "opening_plies": 0,
            "opening_plies_max": 0,
            "search": {"simulations": 4},
        },
    )
    torch.manual_seed(SEED)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, value_target=value_target), DOTS)
    samples, stats = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS)
    assert len(samples) == games * DOTS.num_actions and stats["selfplay/plies"] == DOTS.num_actions
    assert samples.observation.shape[1:] == DOTS.observation_shape
    movers, results = dots_movers_and_results(samples.observation, games, margin=value_target == "margin")
    assert torch.equal(samples.player, torch.from_numpy(movers))
    assert not torch.equal(samples.player, samples.ply % 2)  # a box was taken: not alternation
    unproven = ~samples.proven
    assert bool(unproven.any())
    assert torch.equal(samples.value[unproven], torch.from_numpy(results).float()[unproven])
    assert bool((samples.policy[~samples.legal] == 0).all())


def test_rescoring_takes_each_late_positions_exact_result_from_the_games_own_solver() -> None:
    """Dots and Boxes' solver (a table of every set of drawn lines) rescores through the game
    interface: each decision at or past `solve_from` gets its exact result for its mover, the
    exhaustive minimax's, and earlier ones stay unsettled."""
    rng = np.random.default_rng(SEED)
    states = []
    for _ in range(30):
        state = DOTS.new_state()
        for _ in range(int(rng.integers(0, DOTS.num_actions))):
            state = state.apply(int(rng.choice(state.legal_actions())))
        states.append(state)
    ply = torch.tensor([s.ply for s in states])
    late = [s for s in states if s.ply >= 5]
    solved = _rescore(solver_for(DOTS, TINY), ply, 5, late)
    for state, value in zip(states, solved.tolist(), strict=True):
        if state.ply < 5:
            assert np.isnan(value)
        else:
            mover = 1 if state.current_player() == 0 else -1
            assert value == mover * first_player_value(state)
    cfg = overridden(TINY, {"games": 4, "solve_from": 5, "opening_plies": 0, "opening_plies_max": 0})
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), DOTS)
    samples, stats = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS)
    assert stats["selfplay/solved"] == 1.0 and bool(samples.proven[samples.ply >= 5].all())


def test_rescoring_a_net_that_learns_margins_takes_the_exact_margin() -> None:
    """For a net whose value is the margin return, rescoring gives each late decision perfect
    play's final box difference over the boxes for its mover, the exhaustive minimax of the
    margin: the sign of the outcome, graded."""
    rng = np.random.default_rng(SEED)
    late = []
    while len(late) < 30:
        state = DOTS.new_state()
        for _ in range(int(rng.integers(5, DOTS.num_actions))):
            state = state.apply(int(rng.choice(state.legal_actions())))
        late.append(state)
    ply = torch.tensor([s.ply for s in late])
    solver = solver_for(DOTS, TINY)
    margins = _rescore(solver, ply, 5, late, margin=True)
    outcomes = _rescore(solver, ply, 5, late)
    for state, value in zip(late, margins.tolist(), strict=True):
        mover = 1 if state.current_player() == 0 else -1
        assert value == pytest.approx(mover * first_player_value(state, lambda s: s.margin_returns()[0]))
    assert torch.equal(torch.sign(margins), outcomes)
    assert bool(((margins.abs() > 0) & (margins.abs() < 1)).any())  # some are graded


def test_solver_policy_targets_the_best_moves_of_every_rescored_decision() -> None:
    """With `solver_policy`, each decision at or past `solve_from` targets the uniform policy over
    exactly the lines of best exhaustive-minimax margin for its mover (the same player after a
    box), though the net learns outcomes; earlier decisions keep the search's policy, and the
    games are the same as without it."""
    games = 4
    cfg = overridden(
        TINY,
        {
            "games": games,
            "solve_from": 5,
            "opening_plies": 0,
            "opening_plies_max": 0,
            "search": {"simulations": 4},
        },
    )
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8), DOTS)
    plain, _ = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS)
    taught, _ = self_play(net, replace(cfg, solver_policy=True), torch.Generator().manual_seed(SEED), DOTS)
    assert torch.equal(plain.observation, taught.observation) and torch.equal(plain.value, taught.value)
    late = taught.ply >= cfg.solve_from
    assert torch.equal(plain.policy[~late], taught.policy[~late])
    assert not torch.equal(plain.policy[late], taught.policy[late])
    steps = len(taught) // games  # every game draws every line: decision t * games + i is game i's t-th
    checked = 0
    for i in range(games):
        state = DOTS.new_state()
        for t in range(steps):
            k = t * games + i
            assert torch.equal(taught.observation[k], torch.from_numpy(state.observation()).float())
            if state.ply >= cfg.solve_from:
                sign = 1 if state.current_player() == 0 else -1
                values = {
                    a: sign * first_player_value(state.apply(a), lambda s: s.margin_returns()[0])
                    for a in state.legal_actions()
                }
                best = [a for a, v in values.items() if v == max(values.values())]
                assert torch.nonzero(taught.policy[k]).squeeze(1).tolist() == best
                assert taught.policy[k, best].tolist() == pytest.approx([1 / len(best)] * len(best))
                checked += 1
            if t + 1 < steps:  # the move played: the one whose position the next decision shows
                shown = taught.observation[k + games]
                state = next(
                    after
                    for after in map(state.apply, state.legal_actions())
                    if torch.equal(torch.from_numpy(after.observation()).float(), shown)
                )
    assert checked == int(late.sum()) > 0


def test_4x4_self_play_is_rescored_by_the_endgame_search_from_the_ply_it_reaches() -> None:
    """4x4's solver is the endgame search: from the ply it reaches cheaply, every decision of a
    few games is settled, within the rescoring's budget, and none before it is."""
    four = load("dots-and-boxes-4x4")
    cfg = overridden(TINY, {"games": 2, "solve_from": exact_from(four), "search": {"simulations": 4}})
    net = PolicyValueNet(NetConfig(blocks=0, channels=4, value_hidden=4), four)
    samples, _ = self_play(net, cfg, torch.Generator().manual_seed(SEED), four, solver=solver_for(four, cfg))
    late = samples.ply >= cfg.solve_from
    assert bool(late.any()) and torch.equal(samples.proven, late)
    assert set(samples.value[late].tolist()) <= {-1.0, 0.0, 1.0}


class Counted:
    """A solver whose position solves (`outcome`, `margin_value`) are counted; the rest passes through."""

    def __init__(self, solver: Any):
        self.solver, self.solves = solver, 0

    def outcome(self, state: Any, max_nodes: int | None = None) -> Any:
        self.solves += 1
        return self.solver.outcome(state, max_nodes)

    def margin_value(self, state: Any, max_nodes: int | None = None) -> Any:
        self.solves += 1
        return self.solver.margin_value(state, max_nodes)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.solver, name)


@pytest.mark.parametrize("target", ["outcome", "margin"])
def test_solver_policy_takes_each_rescored_value_from_its_moves(target: str) -> None:
    """With `solver_policy`, a rescored decision whose moves the solver's batch settles takes the
    best of them as its value: no position is solved a second time, and the values are the same."""
    cfg = overridden(TINY, {"games": 4, "solve_from": 5, "search": {"simulations": 4}})
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, value_target=target), DOTS)
    plain, taught = Counted(solver_for(DOTS, cfg)), Counted(solver_for(DOTS, cfg))
    without, _ = self_play(net, cfg, torch.Generator().manual_seed(SEED), DOTS, solver=plain)
    with_policy, _ = self_play(
        net, replace(cfg, solver_policy=True), torch.Generator().manual_seed(SEED), DOTS, solver=taught
    )
    assert torch.equal(without.value, with_policy.value) and torch.equal(without.proven, with_policy.proven)
    assert plain.solves >= int((without.ply >= cfg.solve_from).sum()) > 0
    assert taught.solves == 0
    graded = (without.value.abs() > 0) & (without.value.abs() < 1)  # box margins, not outcomes
    assert bool(graded[without.proven].any()) == (target == "margin")


def test_a_board_without_a_solver_refuses_rescoring() -> None:
    big = load("dots_and_boxes", rows=4, cols=5)
    net = PolicyValueNet(NetConfig(blocks=0, channels=4, value_hidden=4), big)
    with pytest.raises(ValueError, match="has no exact solver"):
        self_play(net, replace(TINY, solve_from=4), torch.Generator().manual_seed(SEED), big)


# ---- positions labelled by the solver ------------------------------------------------------------
class Drawn:
    """A `held_out` that keeps the positions it is shown and holds out every `every`-th."""

    def __init__(self, every: int = 0):
        self.every = every
        self.boards: Any = None

    def __call__(self, boards: Any) -> torch.Tensor:
        self.boards = boards.select(torch.arange(len(boards)))  # a copy: the caller goes on
        held = torch.zeros(len(boards), dtype=torch.bool)
        if self.every:
            held[:: self.every] = True
        return held


@pytest.mark.parametrize("margin", [False, True])
def test_solver_samples_take_the_exhaustive_minimaxs_values_and_best_moves(margin: bool) -> None:
    """On 2x2 boxes each labelled position's value is its mover's under exhaustive minimax (the
    margin return with `margin`), its policy uniform over exactly the lines of best margin (with
    an outcome target too: some of the lines that keep the outcome win by less), and only the
    unfinished positions the opening drew are labelled, in their order."""
    drawn = Drawn()
    samples = solver_samples(
        DOTS, solver_for(DOTS, TINY), 30, torch.Generator().manual_seed(SEED), margin, drawn
    )

    def margins(state: Any) -> float:
        return state.margin_returns()[0]

    outcome = margins if margin else None
    unfinished = [drawn.boards.state(i) for i in range(len(drawn.boards)) if not bool(drawn.boards.done[i])]
    assert len(samples) == len(unfinished) == 30  # no opening of fewer moves than lines ends a game
    assert bool(samples.proven.all()) and not bool(samples.has_reply.any())
    plies, narrower = set(), 0
    for i, state in enumerate(unfinished):
        sign = 1 if state.current_player() == 0 else -1
        value = sign * first_player_value(state, outcome)
        assert samples.value[i].item() == pytest.approx(value, abs=1e-6)
        assert int(samples.player[i]) == state.current_player() and int(samples.ply[i]) == state.ply
        assert torch.equal(samples.observation[i], torch.from_numpy(state.observation()).float())
        after = {a: sign * first_player_value(state.apply(a), margins) for a in state.legal_actions()}
        keeps = [a for a, v in after.items() if v == pytest.approx(max(after.values()))]
        support = torch.nonzero(samples.policy[i]).squeeze(1).tolist()
        assert support == keeps and samples.policy[i, keeps].tolist() == pytest.approx(
            [1 / len(keeps)] * len(keeps)
        )
        keeps_outcome = [a for a, v in after.items() if np.sign(v) == np.sign(value)]
        narrower += len(keeps) < len(keeps_outcome)
        plies.add(state.ply)
    assert len(plies) > DOTS.num_actions // 2  # the opening's length is drawn
    assert narrower > 0


def test_solver_samples_leave_out_held_positions_and_those_the_solver_does_not_settle() -> None:
    """Finished games and `held_out` positions are never labelled, and nor is a position with a
    move whose position the solver does not settle: on Connect-3 4x4 a solver that settles only
    positions of 9 moves or more labels positions of 8 moves or more alone."""

    class Late:
        def __init__(self) -> None:
            self.solver = solver_for(C3, TINY)

        def outcome(self, state: Position, max_nodes: int | None = None) -> int | None:
            return self.solver.outcome(state, max_nodes) if state.ply >= 9 else None

    gen = torch.Generator().manual_seed(SEED)
    shown = Drawn()
    every = solver_samples(C3, solver_for(C3, TINY), 80, gen, held_out=shown)
    assert len(every) == int((~shown.boards.done).sum()) < 80
    late = solver_samples(C3, Late(), 80, torch.Generator().manual_seed(SEED), held_out=Drawn())
    assert 0 < len(late) < len(every) and int(late.ply.min()) >= 8 and int(every.ply.min()) < 8
    drawn = Drawn(every=2)
    kept = solver_samples(C3, solver_for(C3, TINY), 80, torch.Generator().manual_seed(SEED), held_out=drawn)
    held = drawn.boards.select(torch.arange(0, 80, 2))
    held_obs = {bytes(o.numpy()) for o, done in zip(held.observation(), held.done, strict=True) if not done}
    assert held_obs and not held_obs & {bytes(o.numpy()) for o in kept.observation}


def test_4x4_solver_samples_open_no_earlier_than_the_endgame_search_reaches() -> None:
    """On 4x4, whose solver is the endgame search, the random openings are drawn from the ply it
    reaches (`exact_from`), not from the empty board, and what they reach is labelled."""
    four = load("dots-and-boxes-4x4")
    drawn = Drawn()
    samples = solver_samples(
        four, solver_for(four, TINY), 6, torch.Generator().manual_seed(SEED), held_out=drawn
    )
    plies = [drawn.boards.state(i).ply for i in range(len(drawn.boards))]
    assert min(plies) >= exact_from(four) > 0 and len(set(plies)) > 1
    assert len(samples) > 0 and bool(samples.proven.all())
    assert samples.policy.sum(1).tolist() == pytest.approx([1.0] * len(samples))
    first = exact_from(four) - 4  # `AlphaZeroConfig.solver_positions_from`: further into the middle game
    _, earlier = solver_openings(four, 64, torch.Generator().manual_seed(SEED), first=first)
    assert first <= int(earlier.min()) < exact_from(four)
    with pytest.raises(ValueError, match="longest game"):
        solver_openings(four, 1, torch.Generator(), first=four.max_game_length)


def test_4x4_solver_samples_come_from_the_games_position_player() -> None:
    """4x4's positions to label are opened by its `position_player` (the mixed policy its endgame
    probes come from), not by uniformly random moves, whose 4x4 endgames are mostly boxes left
    to collect: its positions have fewer lines that take a box than uniformly random openings of
    the same lengths have. 3x3, which its table solves from every ply, keeps uniformly random moves."""
    from c4core.games.players import RandomBot, play_opening

    four = load("dots-and-boxes-4x4")
    assert position_player(four).name == "mixed" and position_player(C3).name == RandomBot.name
    drawn = Drawn()
    solver_samples(four, solver_for(four, TINY), 64, torch.Generator().manual_seed(SEED), held_out=drawn)
    plies = torch.tensor([drawn.boards.state(i).ply for i in range(len(drawn.boards))])
    uniform = four.new_batch(len(plies))
    play_opening(uniform, plies, torch.Generator().manual_seed(SEED))
    capturing = [float((b.captures() > 0).sum(1).float().mean()) for b in (drawn.boards, uniform)]
    assert capturing[0] < capturing[1] / 2, capturing


def test_training_adds_the_solver_positions_to_each_iterations_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `solver_positions`, every fit's window holds the self-play decisions and the labelled
    positions of its iterations; the decisions are reported apart from them."""
    import c4core.learners.alphazero as az

    sizes: list[int] = []
    real_fit = az.fit

    def spy_fit(net, optimizer, window, steps, config, generator, game=C3):
        sizes.append(len(window))
        return real_fit(net, optimizer, window, steps, config, generator, game)

    monkeypatch.setattr(az, "fit", spy_fit)
    seen: list[dict[str, float]] = []
    config = replace(TINY, iterations=2, replay_iterations=2, solver_positions=40)
    train(tiny_net(SMALL), config, seed=3, game=C3, on_iteration=lambda i, m: seen.append(m))
    added = [m["charts/solver_positions"] for m in seen]
    decisions = [m["charts/decisions"] for m in seen]
    assert all(0 < a <= 40 for a in added) and all(m["charts/label_seconds"] > 0 for m in seen)
    assert sizes == [decisions[0] + added[0], sum(decisions) + sum(added)]


def test_a_board_without_a_solver_refuses_solver_positions() -> None:
    big = load("dots_and_boxes", rows=4, cols=5)
    net = PolicyValueNet(NetConfig(blocks=0, channels=4, value_hidden=4), big)
    with pytest.raises(ValueError, match="has no exact solver"):
        train(net, replace(TINY, iterations=1, solver_positions=8), seed=1, game=big)


# ---- the sample-efficiency levers ----------------------------------------------------------------
def test_merged_duplicates_take_the_mean_targets_and_proven_values_win() -> None:
    """Three copies of one position (one proven), two of another, one of a third."""
    obs = torch.zeros(6, 2, 2, 2)
    obs[[0, 2, 4], 0, 0, 0] = 1.0  # position A
    obs[[1, 3], 1, 1, 1] = 1.0  # position B; sample 5 is the empty position C
    legal = torch.ones(6, 3, dtype=torch.bool)
    policy = torch.tensor([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1], [0.5, 0.5, 0], [1, 0, 0.0]])
    value = torch.tensor([0.2, 0.5, 1.0, -0.5, 0.4, 0.3])
    proven = torch.tensor([False, False, True, False, False, False])
    ply, player = torch.tensor([2, 3, 2, 3, 2, 0]), torch.tensor([0, 1, 0, 1, 0, 0])
    reply = torch.tensor([[0, 1, 0], [0, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0.0]])
    has_reply = torch.tensor([True, False, True, True, False, False])
    merged = merge_duplicates(Samples(obs, legal, player, ply, policy, value, proven, reply, has_reply))
    assert len(merged) == 3  # A, B, C, in the order of each one's first copy
    assert torch.equal(merged.observation, obs[[0, 1, 5]]) and merged.ply.tolist() == [2, 3, 0]
    assert torch.allclose(merged.policy[0], torch.tensor([0.5, 1 / 6, 1 / 3]))
    assert torch.allclose(merged.policy[1], torch.tensor([0.0, 0.5, 0.5]))
    assert torch.equal(merged.policy[2], policy[5])
    assert merged.value.tolist() == pytest.approx([1.0, 0.0, 0.3])  # A's exact value, not 0.53
    assert merged.proven.tolist() == [True, False, False]
    # A's two copies with a reply target average them; B's one; C has none
    assert torch.allclose(merged.reply, torch.tensor([[0, 0.5, 0.5], [1, 0, 0], [0, 0, 0.0]]))
    assert merged.has_reply.tolist() == [True, True, False]


def test_merging_a_self_play_window_keeps_every_position_once_with_its_copies_means(
    played: tuple[Samples, dict],
) -> None:
    samples, _ = played
    window = Samples.cat([samples, samples.take(torch.arange(0, len(samples), 3))])  # some twice
    merged = merge_duplicates(window)
    groups: dict[bytes, list[int]] = {}
    for i in range(len(window)):
        groups.setdefault(window.observation[i].numpy().tobytes(), []).append(i)
    assert len(merged) == len(groups) < len(window)
    for j in range(len(merged)):
        copies = groups[merged.observation[j].numpy().tobytes()]
        assert torch.allclose(merged.policy[j], window.policy[copies].mean(0))
        exact = [i for i in copies if window.proven[i]]
        want = window.value[exact or copies].mean()
        assert merged.value[j] == pytest.approx(float(want)) and bool(merged.proven[j]) == bool(exact)
    assert torch.allclose(merged.policy.sum(1), torch.ones(len(merged)))


def test_the_learning_rate_anneals_along_a_half_cosine_within_a_generation() -> None:
    config = replace(TINY, iterations=5, learning_rate=1e-3, learning_rate_final=1e-4)
    rates = [learning_rate_at(config, i) for i in range(5)]
    assert rates[0] == pytest.approx(1e-3) and rates[-1] == pytest.approx(1e-4)
    assert rates[2] == pytest.approx(5.5e-4)  # halfway down at the middle iteration
    assert all(a > b for a, b in zip(rates, rates[1:], strict=False))
    assert {learning_rate_at(TINY, i) for i in range(3)} == {TINY.learning_rate}  # off: constant
    seen: list[float] = []
    optimizer = train(
        tiny_net(SMALL),
        replace(config, iterations=3),
        seed=2,
        game=C3,
        on_iteration=lambda i, m: seen.append(m["charts/learning_rate"]),
    )
    assert seen == pytest.approx([1e-3, 5.5e-4, 1e-4])
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)


def test_averaged_weights_are_the_mean_of_the_last_iterations() -> None:
    net = tiny_net(SMALL)
    states: list[dict[str, torch.Tensor]] = []

    def keep(i: int, metrics: dict[str, float]) -> None:
        states.append({k: v.detach().clone() for k, v in net.state_dict().items()})
        assert 0 < metrics["charts/distinct_share"] <= 1  # merged: the window's distinct share

    config = replace(TINY, iterations=3, average_iterations=2, merge_duplicates=True)
    train(net, config, seed=4, game=C3, on_iteration=keep)
    assert len(states) == 3
    for key, value in net.state_dict().items():
        if value.is_floating_point():
            assert torch.allclose(value, (states[1][key] + states[2][key]) / 2), key
    assert not torch.equal(states[1]["policy_fc.weight"], states[2]["policy_fc.weight"])  # it trained
    # the helper alone: the mean, in each entry's dtype, counters from the last state
    a = {"w": torch.tensor([1.0, 2.0], dtype=torch.bfloat16), "n": torch.tensor(1)}
    b = {"w": torch.tensor([3.0, 4.0], dtype=torch.bfloat16), "n": torch.tensor(2)}
    mean = average_weights([a, b])
    assert mean["w"].dtype == torch.bfloat16 and mean["w"].tolist() == [2.0, 3.0] and mean["n"] == 2


def test_self_play_with_an_evaluation_cache_reports_its_hits() -> None:
    """The cache changes no target's shape or legality, and the same games repeat positions."""
    config = replace(TINY, evaluation_cache=50_000)
    samples, stats = self_play(tiny_net(), config, torch.Generator().manual_seed(SEED))
    _, plain = self_play(tiny_net(), TINY, torch.Generator().manual_seed(SEED))
    assert 0 < stats["selfplay/cache_hits"] < 1 and "selfplay/cache_hits" not in plain
    assert torch.allclose(samples.policy.sum(1), torch.ones(len(samples)), atol=1e-5)
    assert bool((samples.policy[~samples.legal] == 0).all())


def test_gumbel_self_play_targets_more_moves_than_it_visits() -> None:
    """With 4 simulations over 7 columns, visit-count targets name at most 4 moves; Gumbel's
    improved policy gives a share to every move not proven lost, so most of its targets name
    more, and they stay distributions over legal moves."""
    few = replace(TINY.search, simulations=4)
    gumbel, _ = self_play(
        tiny_net(), replace(TINY, search=replace(few, root="gumbel")), torch.Generator().manual_seed(SEED)
    )
    puct, _ = self_play(tiny_net(), replace(TINY, search=few), torch.Generator().manual_seed(SEED))
    assert torch.allclose(gumbel.policy.sum(1), torch.ones(len(gumbel)), atol=1e-5)
    assert bool((gumbel.policy[~gumbel.legal] == 0).all())
    assert int((puct.policy > 0).sum(1).max()) <= 4
    named = (gumbel.policy > 0).sum(1)[~gumbel.proven]
    assert float((named > 4).float().mean()) > 0.5


def test_self_play_with_tree_reuse_keeps_visits_and_well_formed_targets() -> None:
    """Reuse keeps some of the chosen subtree's visits at the next move of the same game,
    and the targets stay distributions over legal moves."""
    config = replace(TINY, reuse_tree=True)
    samples, stats = self_play(tiny_net(), config, torch.Generator().manual_seed(SEED))
    _, plain = self_play(tiny_net(), TINY, torch.Generator().manual_seed(SEED))
    assert stats["selfplay/kept_visits"] > 0 and "selfplay/kept_visits" not in plain
    assert torch.allclose(samples.policy.sum(1), torch.ones(len(samples)), atol=1e-5)
    assert bool((samples.policy[~samples.legal] == 0).all())


def test_tree_reuse_refuses_gumbels_root() -> None:
    with pytest.raises(ValueError, match="Gumbel"):
        replace(TINY, reuse_tree=True, search=replace(TINY.search, root="gumbel"))


# ---- the reply head -----------------------------------------------------------------------------
def test_next_decisions_find_the_same_games_next_ply() -> None:
    game = torch.tensor([0, 1, 0, 1, 0, 2])
    ply = torch.tensor([4, 3, 5, 5, 7, 2])
    # game 0: plies 4 and 5 follow, 7 is last; game 1 skips ply 4 (a member's move); game 2 ends
    assert next_decisions(game, ply).tolist() == [2, -1, -1, -1, -1, -1]
    assert next_decisions(torch.tensor([3, 3]), torch.tensor([1, 0])).tolist() == [-1, 0]
    assert len(next_decisions(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))) == 0


def test_each_decision_but_a_games_last_targets_the_next_decisions_policy(
    played: tuple[Samples, dict],
) -> None:
    """Self-play: the learner makes every move after the opening, so all but each game's last
    decision have a reply target, and it is the policy target of a decision one ply later."""
    samples, _ = played
    assert int(samples.has_reply.sum()) == len(samples) - TINY.games
    assert torch.allclose(samples.reply[samples.has_reply].sum(1), torch.ones(int(samples.has_reply.sum())))
    assert not samples.reply[~samples.has_reply].any()
    for i in torch.nonzero(samples.has_reply).squeeze(1).tolist():
        later = torch.nonzero(samples.ply == samples.ply[i] + 1).squeeze(1)
        assert any(torch.equal(samples.policy[j], samples.reply[i]) for j in later.tolist())


def test_league_games_give_no_reply_target_where_a_member_moves_next(
    league_played: tuple[Samples, dict, int],
) -> None:
    """In Connect Four a member replies to every learner move of a league game, so those
    decisions have none. A league game's learner decisions number at least its member's moves
    less one, so at most ``samples - member moves`` decisions, the self-play games' all but
    last, can have a reply."""
    samples, _, member_moves = league_played
    league = league_games(LEAGUE, 2)
    assert 0 < int(samples.has_reply.sum()) <= len(samples) - member_moves
    assert int(samples.has_reply.sum()) < len(samples) - (LEAGUE.games - league)


def test_fit_learns_the_reply_head_and_a_zero_weight_leaves_it_alone(
    played: tuple[Samples, dict], gen: torch.Generator
) -> None:
    samples, _ = played
    torch.manual_seed(SEED)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, reply_head=True))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = fit(net, optimizer, samples, 1, TINY, gen)
    for _ in range(20):
        last = fit(net, optimizer, samples, 5, TINY, gen)
    assert last["reply"] < first["reply"]
    before = net.reply_fc.weight.detach().clone()
    unweighted = fit(net, optimizer, samples, 3, replace(TINY, reply_weight=0.0), gen)
    assert "reply" not in unweighted and torch.equal(net.reply_fc.weight, before)
    plain = tiny_net()
    assert "reply" not in fit(plain, torch.optim.Adam(plain.parameters()), samples, 1, TINY, gen)
