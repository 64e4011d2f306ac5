"""PPO self-play (`c4core.learners.ppo`): GAE by hand, what `collect` records, the update, and learning.

`gae` is checked against hand-computed advantages for two interleaved trajectories. `collect`
is checked for bookkeeping (decisions per game, W/D/L per opponent, colours, legality, both
sides of self-play), `ppo_update` for finite losses, moved weights and exact mirror log-probs,
and `train` for its metrics and for actually learning: a tiny net trained against `random`
beats it more often than the same net untrained. Data-parallel ranks run for real, two spawned
processes in a gloo group on loopback: a step over two ranks equals one learner's step over
both ranks' decisions, and the replicas stay equal through whole iterations.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import pytest
import torch
from exact import dots_movers_and_results
from groups import in_group

from c4core.config import NetConfig, PPOConfig
from c4core.evaluation.match import WDL, play_match
from c4core.games import ConnectFour, load
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.bots import TacticalBot
from c4core.games.dots_and_boxes.bots import GreedyBot
from c4core.games.players import RandomBot
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.learners.ppo import Rollout, _with_images, collect, gae, ppo_update, train
from c4core.learners.ranks import joined

SEED = 4321
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)


@pytest.fixture
def net() -> PolicyValueNet:
    torch.manual_seed(SEED)
    return PolicyValueNet(TINY)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def stones(planes: torch.Tensor) -> torch.Tensor:
    """Ply of each decision: the stones on its board (planes 0 and 1 are the two sides)."""
    return planes[:, :2].sum((1, 2, 3)).round().long()


class RecordingRandom(RandomBot):
    """A random bot that remembers how many games it was asked to open (empty boards)."""

    def __init__(self, name: str = "recorder"):
        self.name = name
        self.openings = 0
        self.calls = 0

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        self.calls += 1
        self.openings += int((boards.ply == 0).sum())
        assert not bool(boards.done.any())  # it is only asked about live games
        return super().act(boards, generator)


# ---- gae ---------------------------------------------------------------------------------------
# two trajectories, decisions interleaved in chronological order: 7 = (0.1, 0.3, 0.5), reward +1;
# 2 = (0.2, -0.4), reward -1
TRAJ = torch.tensor([7, 2, 7, 2, 7])
VALUES = torch.tensor([0.1, 0.2, 0.3, -0.4, 0.5])
REWARD = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0])


@pytest.mark.parametrize(
    "lam, expected",
    [
        (1.0, [0.9, -1.2, 0.7, -0.6, 0.5]),  # Monte Carlo: reward - value
        (0.0, [0.2, -0.6, 0.2, -0.6, 0.5]),  # one-step TD: next value (or reward) - value
        (0.5, [0.425, -0.9, 0.45, -0.6, 0.5]),  # A_t = delta_t + 0.5 A_{t+1}
    ],
)
def test_gae_by_hand(lam: float, expected: list[float]) -> None:
    adv = gae(TRAJ, VALUES, REWARD, lam)
    assert torch.allclose(adv, torch.tensor(expected), atol=1e-6)


def test_gae_single_decision_and_order_independence() -> None:
    assert torch.allclose(
        gae(torch.tensor([3]), torch.tensor([0.25]), torch.tensor([-1.0]), 0.9), torch.tensor([-1.25])
    )
    # relabelling trajectories does not change anything
    relabelled = gae(torch.tensor([0, 1, 0, 1, 0]), VALUES, REWARD, 0.7)
    assert torch.allclose(relabelled, gae(TRAJ, VALUES, REWARD, 0.7))


# ---- collect -----------------------------------------------------------------------------------
def test_collect_bookkeeping(net: PolicyValueNet, gen: torch.Generator) -> None:
    recorder = RecordingRandom()
    rollout, stats = collect(net, [recorder, TacticalBot(), None], 64, gen)
    per = 20  # 64 games over 3 opponents, rounded down to an even number each
    assert set(stats) == {"recorder", "tactical", "self"}
    assert all(w.games == per for w in stats.values())
    # the opponent opened exactly half of its games, so the learner opened the other half
    assert recorder.openings == per // 2
    n = 3 * per
    ply = stones(rollout.planes)
    # learner openings: half of each opponent's games, every self-play game
    assert int((ply == 0).sum()) == per // 2 * 2 + per
    assert int((ply == 1).sum()) == per // 2 * 2 + per
    # a game lasts 7..42 plies; the learner makes 3..21 of them against an opponent, all in self-play
    assert 3 * (n - per) + 7 * per <= len(rollout) <= 21 * (n - per) + 42 * per
    for field in ("planes", "legal", "actions", "logprobs", "values", "advantages", "returns"):
        assert len(getattr(rollout, field)) == len(rollout)


def test_collect_records_only_legal_actions_with_their_logprobs(net: PolicyValueNet, gen) -> None:
    rollout, _ = collect(net, [RandomBot(), None], 32, gen)
    assert bool(rollout.legal.gather(1, rollout.actions[:, None]).all())
    assert bool(rollout.legal.any(1).all())
    with torch.no_grad():
        logits, values = net(rollout.planes, rollout.legal)
    logp = torch.log_softmax(logits, 1).gather(1, rollout.actions[:, None]).squeeze(1)
    assert torch.allclose(logp, rollout.logprobs, atol=1e-5)
    assert torch.allclose(values, rollout.values, atol=1e-5)
    assert torch.allclose(rollout.returns, rollout.advantages + rollout.values)
    assert bool((rollout.logprobs <= 0).all())


def test_self_play_records_both_sides(net: PolicyValueNet, gen: torch.Generator) -> None:
    rollout, stats = collect(net, [None], 16, gen, gae_lambda=1.0)
    ply = stones(rollout.planes)
    # every ply of every game is a learner decision: both colours, from the first move on
    for k in range(7):
        assert int((ply == k).sum()) == 16
    assert len(rollout) >= 7 * 16
    assert stats["self"].games == 16
    # with lambda 1 the return is the final result for the side that moved: -1, 0 or +1
    assert set(rollout.returns.round(decimals=4).tolist()) <= {-1.0, 0.0, 1.0}


def test_versus_an_opponent_the_learner_plays_one_side(net: PolicyValueNet, gen) -> None:
    rollout, stats = collect(net, [RandomBot()], 16, gen, gae_lambda=1.0)
    ply = stones(rollout.planes)
    assert int((ply == 0).sum()) == 8 and int((ply == 1).sum()) == 8
    assert 3 * 16 <= len(rollout) <= 21 * 16
    returns = rollout.returns.round(decimals=4)
    assert set(returns.tolist()) <= {-1.0, 0.0, 1.0}
    # the learner's first decision of each game (ply 0 or 1) returns that game's result
    w = stats["random"]
    assert w.win + w.draw + w.loss == 16
    assert int(((ply <= 1) & (returns == 1)).sum()) == w.win


def test_collect_needs_an_opponent(net: PolicyValueNet, gen: torch.Generator) -> None:
    with pytest.raises(ValueError, match="at least one opponent"):
        collect(net, [], 16, gen)


def test_ppo_config_validation() -> None:
    for bad in (
        dict(games=1),
        dict(iterations=-1),
        dict(minibatch_size=0),
        dict(gae_lambda=1.5),
        dict(gae_lambda=-0.1),
    ):
        with pytest.raises(ValueError):
            PPOConfig(**bad)


# ---- update ------------------------------------------------------------------------------------
@pytest.fixture
def rollout(net: PolicyValueNet, gen: torch.Generator) -> Rollout:
    return collect(net, [RandomBot(), TacticalBot(), None], 48, gen)[0]


def test_ppo_update_changes_weights_and_reports_finite_losses(net, rollout, gen) -> None:
    before = {k: v.clone() for k, v in net.state_dict().items()}
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    losses = ppo_update(net, opt, rollout, PPOConfig(update_epochs=2, minibatch_size=128), gen)
    assert set(losses) == {"policy", "value", "entropy", "approx_kl", "clipfrac"}
    assert all(math.isfinite(v) for v in losses.values())
    assert losses["entropy"] > 0 and losses["value"] >= 0 and 0 <= losses["clipfrac"] <= 1
    changed = [k for k, v in net.state_dict().items() if not torch.equal(v, before[k])]
    assert changed
    assert not net.training  # left in eval mode for the next collection


def test_ppo_fits_a_categorical_value_head_by_its_own_loss(rollout: Rollout, gen: torch.Generator) -> None:
    """The value loss is the head's (`PolicyValueNet.value_loss`): a categorical head's
    cross-entropy, which the update lowers on a fixed rollout."""
    torch.manual_seed(SEED)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, value_bins=5))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    config = PPOConfig(update_epochs=2, minibatch_size=128, vf_coef=1.0)
    head = net.heads(rollout.planes, rollout.legal)[1]
    before = 0.5 * float(net.value_loss(head, rollout.returns))
    first = ppo_update(net, opt, rollout, config, gen)
    assert first["value"] == pytest.approx(before, rel=0.2)  # its first minibatches start there
    for _ in range(5):
        last = ppo_update(net, opt, rollout, config, gen)
    assert last["value"] < first["value"]


class _CountingAdam(torch.optim.Adam):
    steps = 0

    def step(self, closure=None):
        type(self).steps += 1
        return super().step(closure)


@pytest.mark.parametrize("mirror", [False, True])
def test_mirror_doubles_the_batch(net, rollout, gen, mirror: bool) -> None:
    _CountingAdam.steps = 0
    opt = _CountingAdam(net.parameters(), lr=1e-3)
    mb = 64
    ppo_update(net, opt, rollout, PPOConfig(update_epochs=3, minibatch_size=mb, mirror=mirror), gen)
    n = len(rollout) * (2 if mirror else 1)
    assert _CountingAdam.steps == 3 * math.ceil(n / mb)


def test_mirrored_half_has_logprobs_from_the_net(net: PolicyValueNet, rollout: Rollout) -> None:
    doubled = _with_images(net, rollout, ConnectFour().symmetries[1:])
    n = len(rollout)
    assert len(doubled) == 2 * n
    first, second = slice(0, n), slice(n, 2 * n)
    for name in ("planes", "legal", "actions", "logprobs", "values", "advantages", "returns"):
        assert torch.equal(getattr(doubled, name)[first], getattr(rollout, name))
    assert torch.equal(doubled.planes[second], rollout.planes.flip(-1))  # the board, left to right
    assert torch.equal(doubled.legal[second], rollout.legal.flip(1))
    assert torch.equal(doubled.actions[second], 6 - rollout.actions)
    assert bool(doubled.legal[second].gather(1, doubled.actions[second, None]).all())
    assert torch.equal(doubled.advantages[second], rollout.advantages)
    with torch.no_grad():
        logits, _ = net(doubled.planes[second], doubled.legal[second])
    expected = torch.log_softmax(logits, 1).gather(1, doubled.actions[second, None]).squeeze(1)
    assert torch.allclose(doubled.logprobs[second], expected, atol=1e-6)
    # an untrained net is not symmetric, so copying the original log-probs would be wrong
    assert not torch.allclose(doubled.logprobs[second], rollout.logprobs, atol=1e-4)


# ---- train -------------------------------------------------------------------------------------
def test_train_reports_namespaced_metrics() -> None:
    torch.manual_seed(SEED)
    net = PolicyValueNet(TINY)
    seen: list[tuple[int, dict[str, float]]] = []
    start = time.perf_counter()
    opt = train(
        net,
        PPOConfig(iterations=3, games=64),
        [RandomBot(), TacticalBot(), None],
        seed=SEED,
        on_iteration=lambda i, m: seen.append((i, m)),
    )
    elapsed = time.perf_counter() - start
    assert isinstance(opt, torch.optim.Optimizer)
    assert [i for i, _ in seen] == [0, 1, 2]
    for _, m in seen:
        for key in ("policy", "value", "entropy", "approx_kl", "clipfrac"):
            assert math.isfinite(m[f"losses/{key}"])
        for opp in ("random", "tactical", "self"):
            rates = [m[f"vs/{opp}/{r}"] for r in ("win", "draw", "loss")]
            assert all(0 <= r <= 1 for r in rates)
            assert sum(rates) == pytest.approx(1.0)
        assert m["charts/decisions"] >= 3 * 60
        assert all(k.split("/")[0] in {"losses", "vs", "charts"} for k in m)
    assert 0 < sum(m["charts/seconds"] for _, m in seen) <= elapsed  # each iteration's own time


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_train_is_reproducible(precision: str) -> None:
    def run() -> dict[str, torch.Tensor]:
        torch.manual_seed(SEED)
        net = PolicyValueNet(replace(TINY, precision=precision))
        train(net, PPOConfig(iterations=2, games=16), [RandomBot(), None], seed=5)
        return net.state_dict()

    a, b = run(), run()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_zero_iterations_leave_the_net_alone(net: PolicyValueNet) -> None:
    before = {k: v.clone() for k, v in net.state_dict().items()}
    train(net, PPOConfig(iterations=0), [RandomBot()], seed=0)
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def standard_error(record: WDL) -> float:
    """The standard error of a record's score per game, draws counted as half a point."""
    n, mean = record.games, record.score
    second_moment = (record.win + 0.25 * record.draw) / n
    return math.sqrt(max(second_moment - mean * mean, 0.0) / n)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_training_against_random_improves_on_random(precision: str) -> None:
    """The sampling policy that PPO trains scores better against `random` after training, by
    at least four standard errors of the difference of the two 1,000-game scores.

    bfloat16 rounds differently on AMX, on AVX-512 BF16 and where it is emulated, so each kind
    of CPU trains this seed along another trajectory: the expected gain must dwarf both the
    match noise and that spread (docs/BENCHMARKS.md, "Learning tests on every kind of CPU")."""
    torch.manual_seed(SEED)
    net = PolicyValueNet(replace(TINY, precision=precision))

    def record() -> WDL:
        return play_match(NetPlayer(net, greedy=False), RandomBot(), 1000, seed=99).total

    before = record()
    train(net, PPOConfig(iterations=25, games=128), [RandomBot()], seed=SEED)
    after = record()
    margin = 4 * math.hypot(standard_error(before), standard_error(after))
    assert after.score >= before.score + margin, (before.score, after.score, margin)


# ---- data-parallel ranks -----------------------------------------------------------------------
ONE_STEP = PPOConfig(update_epochs=1, minibatch_size=10_000)
"""An update of a single gradient step over the whole rollout."""
GROUP_TRAINS = PPOConfig(iterations=2, games=48, minibatch_size=64, ranks=2)


def seeded() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def _in_group(rank: int, port: int, parts: list[Rollout], out: Any) -> None:
    """One rank of a two-process gloo group (a spawned child): one `ONE_STEP` update over its
    part of a rollout, then `GROUP_TRAINS` from a fresh net; sends back both results."""
    torch.set_num_threads(1)
    results = []
    with joined(port, rank, 2) as ranks:
        for job in ("update", "train"):
            torch.manual_seed(SEED)
            net = PolicyValueNet(TINY)
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            seen: list[dict[str, float]] = []
            if job == "update":
                ppo_update(net, opt, parts[rank], ONE_STEP, seeded(), ranks)
            else:
                players = [RandomBot(), None]
                train(
                    net,
                    GROUP_TRAINS,
                    players,
                    SEED,
                    ConnectFour(),
                    opt,
                    lambda i, m, seen=seen: seen.append(m),
                    ranks,
                )
            # numpy, not tensors: a tensor crosses a queue as shared memory, gone with this process
            results.append(({k: v.numpy().copy() for k, v in net.state_dict().items()}, seen))
    out.put((rank, results))


@pytest.fixture(scope="module")
def whole_rollout() -> Rollout:
    torch.manual_seed(SEED)
    return collect(PolicyValueNet(TINY), [RandomBot(), TacticalBot(), None], 48, seeded())[0]


@pytest.fixture(scope="module")
def group(whole_rollout: Rollout) -> dict[str, list[tuple[dict[str, torch.Tensor], list[dict[str, float]]]]]:
    """Ranks 0 and 1 of a real group, each given an uneven part of `whole_rollout` (so each
    rank's gradient must weigh by its share of the step): for each job, every rank's
    (parameters, metrics), by rank."""
    cut = len(whole_rollout) // 3
    fields = ("planes", "legal", "actions", "logprobs", "values", "advantages", "returns")
    parts = [
        Rollout(*(getattr(whole_rollout, k)[rows] for k in fields))
        for rows in (slice(0, cut), slice(cut, None))
    ]
    got = in_group(_in_group, parts)
    return {
        job: [({k: torch.from_numpy(v) for k, v in got[r][j][0].items()}, got[r][j][1]) for r in (0, 1)]
        for j, job in enumerate(("update", "train"))
    }


def test_a_step_over_two_ranks_is_one_step_over_all_their_decisions(group, whole_rollout) -> None:
    (rank0, _), (rank1, _) = group["update"]
    torch.manual_seed(SEED)
    net = PolicyValueNet(TINY)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    ppo_update(net, torch.optim.Adam(net.parameters(), lr=1e-3), whole_rollout, ONE_STEP, seeded())
    alone = net.state_dict()
    assert all(torch.equal(rank0[k], rank1[k]) for k in alone)
    assert all(torch.allclose(rank0[k], alone[k], atol=1e-6) for k in alone)
    assert any(not torch.allclose(rank0[k], before[k]) for k in alone)  # a step was taken


def test_ranks_stay_equal_and_count_every_rank_s_games(group) -> None:
    (state0, seen0), (state1, seen1) = group["train"]
    assert all(torch.equal(state0[k], state1[k]) for k in state0)
    assert len(seen0) == len(seen1) == GROUP_TRAINS.iterations
    for m0, m1 in zip(seen0, seen1, strict=True):
        # the counts and losses are the group's, so both ranks report the same (but time)
        assert {k: v for k, v in m0.items() if k != "charts/seconds"} == {
            k: v for k, v in m1.items() if k != "charts/seconds"
        }
        for opp in ("random", "self"):
            assert sum(m0[f"vs/{opp}/{r}"] for r in ("win", "draw", "loss")) == pytest.approx(1.0)
    # rank 0 plays the games a learner alone plays with the same seed and its share of them,
    # so the group's first iteration counts those decisions and rank 1's on top
    torch.manual_seed(SEED)
    alone: list[dict[str, float]] = []
    half = PPOConfig(iterations=1, games=GROUP_TRAINS.games // 2, minibatch_size=64)
    train(PolicyValueNet(TINY), half, [RandomBot(), None], SEED, on_iteration=lambda i, m: alone.append(m))
    assert seen0[0]["charts/decisions"] > alone[0]["charts/decisions"]


def test_a_config_for_two_ranks_does_not_train_alone(net: PolicyValueNet) -> None:
    with pytest.raises(ValueError, match="2 ranks"):
        train(net, PPOConfig(iterations=1, games=16, ranks=2), [RandomBot()], seed=0)
    with pytest.raises(ValueError, match="ranks"):
        PPOConfig(games=16, ranks=9)


# ---- another game: Dots and Boxes, where completing a box moves again ----------------------------
DOTS = load("dots_and_boxes", rows=2, cols=2)


def dots_net(value_target: str = "outcome") -> PolicyValueNet:
    torch.manual_seed(SEED)
    return PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8, value_target=value_target), DOTS)


def test_collect_seats_the_learner_by_who_is_to_move(gen: torch.Generator, counting_player) -> None:
    """Against `greedy` on Dots and Boxes the learner moves whenever its seat is to move, twice
    in a row after a box: together they draw every line of every game, and an untrained net,
    which gives boxes away, loses more than it wins."""
    greedy = counting_player(GreedyBot())
    rollout, stats = collect(dots_net(), [greedy], 32, gen, DOTS, opening_plies=0)
    assert len(rollout) + greedy.moves == 32 * DOTS.num_actions
    assert rollout.planes.shape[1:] == DOTS.observation_shape
    assert rollout.legal.shape[1] == DOTS.num_actions
    assert stats["greedy"].games == 32 and stats["greedy"].loss > stats["greedy"].win


@pytest.mark.parametrize("value_target", ["outcome", "margin"])
def test_each_decision_returns_its_own_movers_result(gen: torch.Generator, value_target: str) -> None:
    """In self-play on Dots and Boxes, with lambda 1 a decision's return is the final result of
    the player who made it, whoever moved before it (its box margin over the boxes for a net
    that learns margins): checked against the movers and results replayed from the observations."""
    games = 16
    net = dots_net(value_target)
    rollout, stats = collect(net, [None], games, gen, DOTS, gae_lambda=1.0, opening_plies=0)
    assert len(rollout) == games * DOTS.num_actions  # the learner drew every line
    assert stats["self"].games == games  # the record counts outcomes either way
    movers, results = dots_movers_and_results(rollout.planes, games, margin=value_target == "margin")
    graded = bool(((results != 0) & (abs(results) < 1)).any())  # a win by less than every box
    assert graded == (value_target == "margin")
    steps = movers.reshape(-1, games)
    assert bool((steps[1:] == steps[:-1]).any())  # some player moved twice in a row
    assert torch.allclose(rollout.returns, torch.from_numpy(results).float(), atol=1e-5)


def test_ppo_trains_a_dots_and_boxes_net_with_its_symmetries(gen: torch.Generator) -> None:
    """Augmentation adds each decision's images under the square's eight symmetries."""
    net = dots_net()
    rollout, _ = collect(net, [None], 8, gen, DOTS, opening_plies=0)
    _CountingAdam.steps = 0
    opt = _CountingAdam(net.parameters(), lr=1e-3)
    losses = ppo_update(
        net, opt, rollout, PPOConfig(update_epochs=1, minibatch_size=64, mirror=True), gen, game=DOTS
    )
    assert _CountingAdam.steps == math.ceil(8 * len(rollout) / 64)
    assert all(math.isfinite(v) for v in losses.values())
