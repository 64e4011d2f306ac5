"""AlphaZero-style learner: self-play with search, trained on what the search found.

Expert iteration (Silver et al. 2017, "Mastering the game of Go without human knowledge";
Anthony et al. 2017, "Thinking fast and slow with deep learning and tree search"): one
iteration plays `games` games in a single batch, against itself (or a `league_share` of them
against league members, below), the learner's every move chosen by `c4core.learners.search` with
Dirichlet noise at the root, and records for every decision of the learner

- the **policy target**: the root's visit distribution (proven-lost moves removed, one-hot on
  the proof's move when the root is proven);
- the **value target**: the exact value where MCTS-Solver proved the root, else a mix of the
  game's outcome z and the search's root value q, ``(1 - q_weight) * z + q_weight * q``
  (the z/q mix of Oracle's "Lessons from AlphaZero" Connect Four study: z alone is noisy,
  q alone is biased towards the network's own view). For a net that learns margins
  (`NetConfig.value_target`), z, the exact values and the search's are margin returns.

The network is then fitted by cross-entropy to the policy targets plus squared error to the
value targets on minibatches drawn uniformly from a **replay window** of the last
`replay_iterations` iterations, with each position's images under the game's symmetries added
(Connect Four's left-right mirror; supervised targets map exactly, unlike PPO's on-policy
ratios), or with `random_image` each position as one image drawn among them (`random_images`).
Moves are sampled in proportion to the policy target (the visits, or Gumbel's improved
policy) for the first `temperature_plies` plies after the random opening, then played as the
search chooses. Any game of the interface (`c4core.games`)
trains alike: the player to move is asked of the game, never derived from the ply, so the
outcome z of a decision is its own mover's even when a player moves twice in a row.

With `solve_from`, the game's exact solver (`Game.exact_solver`: Connect Four's alpha-beta, Dots
and Boxes' retrograde table) rescores the targets as Leela Chess Zero rescores its games with
endgame tablebases: late decisions it settles cheaply get their exact result as value target,
and each game's earlier decisions take the exact result of its first settled position as their
outcome z. In Connect Four the openings, where the suite's hard positions are, stay the
network's to learn: the solver would need seconds to minutes a position there. A game without a
solver trains without rescoring. With `solver_policy` as well, a rescored decision whose every
move the solver settles takes the uniform policy over its best moves as policy target, in place
of the search's, and the best move's value as its exact value, so it is not solved again. On a
game with margins the best moves are those of best margin, whatever the net's value target
(`policy_by_margin`).

With `solver_positions`, each iteration also adds that many positions the solver labels
(`solver_samples`) to the replay window: random positions, drawn as the solver-labelled suites
are, with the exact value and a uniform policy over the best moves as targets. Self-play's data
follows its own games; these cover the positions those games leave, where a net fitted on
self-play alone stays weakest. The suite the league scores on is held out of them.

With `league_share`, that share of each iteration's games pits the learner against league
members instead of itself (colours alternated, members' games split evenly), in the same batch
as the self-play games. Only the learner's decisions become samples: its search's visits are
the policy target and the outcome from its side (mixed with its root q, or proven, or
rescored) the value target, exactly as in self-play. The members' moves are no targets: they
are not the learner's search output, and fitting its policy to another net's moves would be
imitation, not expert iteration; what the learner takes from a member is the positions it
reaches and the outcomes its play forces. The league rates every snapshot the learner
produces against every member, on the same ladder as the PPO snapshots.

Three sample-efficiency levers, each off by default (`AlphaZeroConfig`): `merge_duplicates`
merges the window's copies of a position into one sample with mean targets (`merge_duplicates`
below), `learning_rate_final` anneals the step size along a half cosine over a generation
(`learning_rate_at`), and `average_iterations` makes the snapshot the mean of its last
iterations' weights (`average_weights`). A fourth is the net's: with `NetConfig.reply_head`
every decision also carries the next decision's policy target (`next_decisions`), which an
auxiliary head learns, as KataGo's net predicts the opponent's reply.

With `ranks` above 1 the learner trains data-parallel (`c4core.learners.ranks`): each rank self-plays
its share of the games on a random stream of its own, every rank's decisions are pooled into
one replay window, and rank 0 alone fits the net on it, with a thread added for each rank that
waits (`Ranks.every_core`), and shares the new weights.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from c4core.config import AlphaZeroConfig, SearchConfig
from c4core.evaluation.match import WDL
from c4core.games import (
    BatchState,
    ConnectFour,
    ExactSolver,
    Game,
    State,
    Symmetry,
    exact_from,
    exact_solver,
    exact_value,
    has_margin,
    move_values,
    position_player,
    returns_of,
    solvable,
)
from c4core.games.players import Player, play_opening
from c4core.learners.net import NetPlayer, PolicyValueNet
from c4core.learners.ranks import ALONE, Ranks
from c4core.learners.search import EvaluationCache, Evaluator, SearchPlayer, TreeReuse, search


@dataclass(frozen=True)
class Samples:
    """Training positions (the net's inputs) and their targets."""

    observation: torch.Tensor
    """[n, *observation_shape] float32: each position as the net reads it (`Game`)."""
    legal: torch.Tensor
    """[n, actions] bool: its legal actions."""
    player: torch.Tensor
    """[n] int64: the player to move, 0 or 1."""
    ply: torch.Tensor
    """[n] int64: actions played before it."""
    policy: torch.Tensor
    """[n, actions] float32 policy target (sums to 1 over legal actions)."""
    value: torch.Tensor
    """[n] float32 value target for the player to move, in -1..1."""
    proven: torch.Tensor
    """[n] bool: the value target is exact (MCTS-Solver proved the root), not a z/q estimate."""
    reply: torch.Tensor
    """[n, actions] float32: the reply head's target (`NetConfig.reply_head`): the policy target
    of the same game's next decision, one ply later; zeros where `has_reply` is False."""
    has_reply: torch.Tensor
    """[n] bool: the learner searched the next ply of the game (not so after the game's last
    move, or where a league member moves next)."""

    def __len__(self) -> int:
        return self.ply.shape[0]

    @staticmethod
    def cat(parts: list[Samples]) -> Samples:
        return Samples(*(torch.cat([getattr(p, f) for p in parts]) for f in Samples.__dataclass_fields__))

    def take(self, idx: torch.Tensor) -> Samples:
        return Samples(*(getattr(self, f)[idx] for f in Samples.__dataclass_fields__))

    def image(self, symmetry: Symmetry) -> Samples:
        """These samples' images under `symmetry`: the planes and every per-action target mapped,
        the rest as they are (`AlphaZeroConfig.mirror`)."""
        per_action = {f: symmetry.policy(getattr(self, f)) for f in ("legal", "policy", "reply")}
        return replace(self, observation=symmetry.observation(self.observation), **per_action)


def self_play(
    net: PolicyValueNet,
    config: AlphaZeroConfig,
    generator: torch.Generator,
    game: Game = ConnectFour(),
    solver: ExactSolver | None = None,
    opponents: Sequence[tuple[str, PolicyValueNet]] = (),
) -> tuple[Samples, dict[str, float]]:
    """Play `config.games` searched games, `league_games` of them against `opponents` (member
    name, frozen net) and the rest against itself; returns every decision of the learner with
    its targets and statistics (first player's W/D/L in self-play, the learner's against each
    member played, game length, share of proven roots). With `config.solve_from`, `solver`
    rescores the targets (one is made when none is given), and with `config.search.probe_from`
    the search probes it too."""
    if solver is None and (config.solve_from or config.search.probe_from):
        solver = solver_for(game, config)
    device = next(net.parameters()).device
    member, learner_seat = (t.to(device) for t in seat_games(config, len(opponents)))
    players = [member_player(member_net, config) for _, member_net in opponents]
    boards = game.new_batch(config.games, device)
    opening = torch.randint(
        config.opening_plies, config.opening_plies_max + 1, (config.games,), generator=generator
    ).to(device)
    plies = play_opening(boards, opening, generator).cpu()
    sampled_until = (opening + config.temperature_plies).cpu()
    scfg = replace(config.search, max_trees=config.games)  # every game in one batch
    evaluator = EvaluationCache(net, config.evaluation_cache) if config.evaluation_cache else net
    reuse = TreeReuse() if config.reuse_tree else None
    rows: list[tuple[torch.Tensor, ...]] = []
    positions: list[State] = []  # the rescored decisions' positions, in order
    late_values: list[torch.Tensor] = []  # and their moves' exact values, for `solver_policy`
    net.eval()
    while not bool(boards.done.all()):
        # the learner moves in every self-play game, and in a league game when its seat is up
        learner = ~boards.done & ((member < 0) | (boards.to_move() == learner_seat))
        cols = torch.zeros(len(boards), dtype=torch.int64, device=device)
        live = torch.nonzero(learner).squeeze(1)
        if len(live):
            row, cols[live] = _learner_moves(
                evaluator, boards, live, plies, scfg, generator, solver, sampled_until, reuse
            )
            rows.append(row)
            if config.solve_from:
                late = live.cpu()[plies[live.cpu()] >= config.solve_from]
                positions += [boards.state(int(i)) for i in late]
                if config.solver_policy:
                    late_boards = boards.select(late.to(device))
                    late_values.append(
                        move_values(solver, late_boards, policy_by_margin(game, net.by_margin))
                    )
        for k, player in enumerate(players):
            idx = torch.nonzero(~boards.done & ~learner & (member == k)).squeeze(1)
            if len(idx):
                cols[idx] = player.act(boards.select(idx), generator).to(device)
        if reuse is not None:
            moving = torch.nonzero(~boards.done).squeeze(1).cpu()
            reuse.played(moving.numpy(), cols.cpu()[moving].numpy())
        plies += (~boards.done).cpu().long()
        boards.play(cols)

    in_game, observation, legal, player, ply, policy, q, exact, kept = (
        torch.cat(x) for x in zip(*rows, strict=True)
    )
    proven_roots = float((~torch.isnan(exact)).sum()) / max(len(exact), 1)
    returns = boards.returns().cpu()
    result = returns_of(boards, net.by_margin).cpu()[:, 0]  # for the first player
    solve_stats: dict[str, float] = {}
    if config.solve_from:
        start = time.perf_counter()
        assert solver is not None  # made above
        # only the learner's decisions are solved: a member's position is no target, and the
        # learner's first settled decision of a league game is at most one ply past it; its
        # mover tells the adjudication which player the exact result is for
        values = torch.cat(late_values) if late_values else None  # in `positions`' order
        # a position whose every move is settled has the best of them as its value (NaN else)
        known = best_moves(values, outcome=not net.by_margin)[0] if values is not None else None
        solved = _rescore(solver, ply, config.solve_from, positions, net.by_margin, known)
        exact = torch.where(torch.isnan(solved), exact, solved)
        result = _adjudicate(result, in_game, ply, player, solved)
        if values is not None:
            settled = ~values.isnan().any(1)
            rescored = torch.nonzero(ply >= config.solve_from).squeeze(1)
            policy[rescored[settled]] = best_moves(values[settled])[1]
        solve_stats = {
            "selfplay/solved": float(
                (~torch.isnan(solved)).sum() / max(int((ply >= config.solve_from).sum()), 1)
            ),
            "charts/solve_seconds": time.perf_counter() - start,
        }
    result = result[in_game]
    z = torch.where(player == 0, result, -result)  # the outcome for the player to move
    value = torch.where(torch.isnan(exact), (1 - config.q_weight) * z + config.q_weight * q, exact)
    after = next_decisions(in_game, ply)
    has_reply = after >= 0
    reply = torch.where(has_reply[:, None], policy[after.clamp(min=0)], 0.0)
    samples = Samples(observation, legal, player, ply, policy, value, ~torch.isnan(exact), reply, has_reply)
    stats = (
        _league_rates(returns, member, learner_seat, [name for name, _ in opponents])
        | {"selfplay/plies": float(plies.float().mean()), "selfplay/proven_roots": proven_roots}
        | solve_stats
    )
    if isinstance(evaluator, EvaluationCache):
        stats["selfplay/cache_hits"] = evaluator.hits / max(evaluator.hits + evaluator.misses, 1)
    if reuse is not None:
        stats["selfplay/kept_visits"] = float(kept.float().mean())
    return samples, stats


def next_decisions(game: torch.Tensor, ply: torch.Tensor) -> torch.Tensor:
    """For decisions [n] (each game's index and ply; one decision at most a game and ply), the
    index of the same game's decision one ply later, -1 where there is none."""
    if not len(ply):
        return torch.zeros(0, dtype=torch.long)
    key = game.long() * (int(ply.max()) + 2) + ply.long()
    order = torch.argsort(key)
    ordered = key[order]
    at = torch.searchsorted(ordered, key + 1).clamp(max=len(key) - 1)
    return torch.where(ordered[at] == key + 1, order[at], -1)


def solver_openings(
    game: Game,
    n: int,
    generator: torch.Generator,
    held_out: Callable[[BatchState], torch.Tensor] | None = None,
    first: int = 0,
) -> tuple[BatchState, torch.Tensor]:
    """The positions `solver_samples` labels, and their plies: `n` games opened by a uniformly
    random count of the game's `position_player`'s moves (uniformly random ones, but for 4x4
    Dots and Boxes' mixed policy), from ply `first` (0: the first ply the solver settles
    cheaply, `c4core.games.exact_from`, 0 but for an endgame search) to the longest game less
    one, less those that ended and those `held_out` marks [n]."""
    first = first or exact_from(game)
    if first >= game.max_game_length:
        raise ValueError(
            f"no ply from {first} on is before {game.title}'s longest game ({game.max_game_length})"
        )
    boards = game.new_batch(n)
    counts = torch.randint(first, game.max_game_length, (n,), generator=generator)
    plies = play_opening(boards, counts, generator, opener=position_player(game))
    keep = ~boards.done.cpu()
    if held_out is not None:
        keep &= ~held_out(boards).cpu()
    idx = torch.nonzero(keep).squeeze(1)
    return boards.select(idx), plies.cpu()[idx]


def solver_samples(
    game: Game,
    solver: ExactSolver,
    n: int,
    generator: torch.Generator,
    margin: bool = False,
    held_out: Callable[[BatchState], torch.Tensor] | None = None,
    first: int = 0,
) -> Samples:
    """Positions labelled by the game's exact `solver` (`AlphaZeroConfig.solver_positions`): the
    `solver_openings` of `n` games, less those with a move the solver does not settle. Each
    one's value target is its mover's exact value (a margin value with `margin`), the best of its
    moves' (`c4core.games.move_values`), and its policy target uniform over the moves of that
    value (of best margin on a game with margins: `policy_by_margin`); all proven, none with a
    reply target."""
    boards, plies = solver_openings(game, n, generator, held_out, first)
    values = move_values(solver, boards, policy_by_margin(game, margin))
    settled = ~values.isnan().any(1)
    idx, values = torch.nonzero(settled).squeeze(1), values[settled]
    boards = boards.select(idx)
    best, policy = best_moves(values, outcome=not margin)
    return Samples(
        observation=boards.observation().cpu(),
        legal=boards.legal().cpu(),
        player=boards.to_move().cpu(),
        ply=plies[idx],
        policy=policy,
        value=best,
        proven=torch.ones(len(idx), dtype=torch.bool),
        reply=torch.zeros(len(idx), game.num_actions),
        has_reply=torch.zeros(len(idx), dtype=torch.bool),
    )


def policy_by_margin(game: Game, margin: bool) -> bool:
    """Whether the solver's move values that make policy targets (`solver_samples`,
    `solver_policy`) are margin values: for a net that learns margins, and for every game that
    has them (`has_margin`), since the moves of best margin are those of best outcome that also
    win by the most, the moves the suites count as keeping the value; an outcome target alone
    would spread the policy over every move that keeps the result (in Dots and Boxes, taking
    the last two boxes of a chain as well as declining them)."""
    return margin or has_margin(game)


def best_moves(values: torch.Tensor, outcome: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """From every legal move's exact value [n, actions] (`c4core.games.move_values`, all
    settled): each position's best value [n] (with `outcome`, its sign: the result of margin
    values, for a net that learns results), and the uniform policy over its moves of that
    value [n, actions]."""
    best = values.max(1).values
    top = values >= best[:, None] - 1e-6  # margin values are fractions of the boxes
    return (best.sign() if outcome else best), top.float() / top.sum(1, keepdim=True)


def solver_for(game: Game, config: AlphaZeroConfig) -> ExactSolver:
    """The game's exact solver that rescores (`solve_from`), that the search probes
    (`probe_from`) and that labels positions (`solver_positions`), `solve_nodes` a position;
    `ValueError` for a game without one."""
    if not solvable(game):
        raise ValueError(
            f"{game.title} has no exact solver: set solve_from, probe_from and solver_positions to 0"
        )
    return exact_solver(game, config.solve_nodes)


def league_games(config: AlphaZeroConfig, members: int) -> int:
    """Games of an iteration played against league members: `league_share` of `games`, rounded
    down to even so that every member's games pair up by colour; none without members."""
    n = round(config.games * config.league_share) if members else 0
    return n - n % 2


def seat_games(config: AlphaZeroConfig, members: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Who plays whom: [games] the league member each game is against (-1: self-play) and
    [games] the learner's seat there, 0 first or 1 second (in self-play it is both). The
    self-play games come first; the league games follow in colour pairs (learner first, then
    second) dealt round-robin, so the members' shares differ by one pair at most and each
    member meets the learner on both colours equally often."""
    n = league_games(config, members)
    in_league = torch.arange(n)
    member = torch.cat((torch.full((config.games - n,), -1), (in_league // 2) % max(members, 1)))
    learner_seat = torch.cat((torch.zeros(config.games - n, dtype=torch.int64), in_league % 2))
    return member, learner_seat


def member_player(net: PolicyValueNet, config: AlphaZeroConfig) -> Player:
    """A league member as the learner's opponent (`league_simulations`).

    Without search it samples its raw policy, as PPO's opponents play. With search it plays
    the most visited move without root noise: that is the member at its rated strength (the
    league's matches play greedily too), the games still vary with the random openings and the
    learner's own noise and sampled moves, and a member that sampled visits would teach the
    learner to beat a weaker player than the one on the ladder. It never probes the solver:
    an oracle's strength is not the member's own."""
    if not config.league_simulations:
        return NetPlayer(net, greedy=False)
    member_search = replace(
        config.search, root_noise=False, temperature=0.0, probe_from=0, max_trees=config.games
    )
    return SearchPlayer(net, config.league_simulations, member_search)


def _learner_moves(
    net: Evaluator,
    boards: BatchState,
    live: torch.Tensor,
    plies: torch.Tensor,
    scfg: SearchConfig,
    generator: torch.Generator,
    solver: ExactSolver | None,
    sampled_until: torch.Tensor,
    reuse: TreeReuse | None = None,
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """The learner's searched moves in the games at `live`, sampled in proportion to the policy
    target before `sampled_until`, and the decisions' record (game, position, target, q, proof,
    root visits kept by `reuse`)."""
    here = boards.select(live)
    r = search(net, here, scfg, generator, solver, reuse, live.cpu().numpy())
    probs = torch.from_numpy(r.probs).float()
    cols = torch.from_numpy(r.columns)
    ply = plies[live.cpu()]
    early = torch.nonzero(ply < sampled_until[live.cpu()]).squeeze(1)
    if len(early):
        cols[early] = torch.multinomial(probs[early], 1, generator=generator).squeeze(1)
    row = (
        live.cpu(),
        here.observation().cpu(),
        here.legal().cpu(),
        here.to_move().cpu(),
        ply,
        probs,
        torch.from_numpy(r.values).float(),
        torch.from_numpy(r.proven).float(),  # NaN where search proved nothing
        torch.from_numpy(r.visits.sum(1) - r.simulations),
    )
    return row, cols.to(boards.device)


def _league_rates(
    returns: torch.Tensor, member: torch.Tensor, learner_seat: torch.Tensor, names: list[str]
) -> dict[str, float]:
    """``vs/self/*`` (the first player's view) over the self-play games and ``vs/<member>/*``
    (the learner's) over each member's games, for those played, from the games' `returns`."""
    first = returns[:, 0]
    learner = returns[torch.arange(len(returns)), learner_seat.cpu()]
    member = member.cpu()
    groups = [("self", first[member < 0])] + [(name, learner[member == k]) for k, name in enumerate(names)]
    rates: dict[str, float] = {}
    for name, outcomes in groups:
        if len(outcomes):
            wdl = WDL.of(outcomes.numpy())
            rates[f"vs/{name}/win"] = wdl.win / wdl.games
            rates[f"vs/{name}/draw"] = wdl.draw / wdl.games
            rates[f"vs/{name}/loss"] = wdl.loss / wdl.games
    return rates


def _rescore(
    solver: ExactSolver,
    ply: torch.Tensor,
    solve_from: int,
    positions: Sequence[State],
    margin: bool = False,
    known: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact result (+1, 0, -1 for the player to move; with `margin`, its margin value) of each
    decision at or past `solve_from` (whose `positions` are given in order) that the solver
    settles within its budget; NaN elsewhere. Values already `known` (in `positions`' order, NaN
    where not) are taken, not solved again. The latest plies go first, so the table built on
    them speeds up the earlier ones."""
    solved = torch.full((len(ply),), float("nan"))
    late = torch.nonzero(ply >= solve_from).squeeze(1)
    if known is not None:
        solved[late] = known
    position_of = dict(zip(late.tolist(), positions, strict=True))
    order = late[torch.argsort(ply[late], descending=True, stable=True)]
    for i in order[torch.isnan(solved[order])].tolist():
        value = exact_value(solver, position_of[i], margin)
        if value is not None:
            solved[i] = float(value)
    return solved


def _adjudicate(
    result: torch.Tensor, game: torch.Tensor, ply: torch.Tensor, player: torch.Tensor, solved: torch.Tensor
) -> torch.Tensor:
    """Each game's result (for the first player) replaced by the exact result of its first
    settled decision, where it has one."""
    out = result.clone()
    settled = torch.nonzero(~torch.isnan(solved)).squeeze(1)
    seen: set[int] = set()
    for i in settled[torch.argsort(ply[settled], stable=True)].tolist():  # earliest first
        g = int(game[i])
        if g not in seen:
            seen.add(g)
            out[g] = solved[i] if int(player[i]) == 0 else -solved[i]
    return out


def merge_duplicates(samples: Samples) -> Samples:
    """One sample per distinct position (observation and legal actions alike), its policy and
    value targets the means of its copies'; where some copies are proven, the mean of the proven
    values alone (an exact value outranks an estimate), and the sample is proven; its reply
    target the mean of the copies that have one. In the order of each position's first copy."""
    n = len(samples)
    if n == 0:
        return samples
    rows = torch.cat((samples.observation.reshape(n, -1), samples.legal.float()), 1)
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    groups = int(inverse.max()) + 1
    first = torch.full((groups,), n, dtype=torch.long).scatter_reduce(0, inverse, torch.arange(n), "amin")
    # renumber the groups by their first copy, so the merged samples keep the window's order
    order = torch.argsort(first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(groups)
    group, first = rank[inverse], first[order]

    def total(x: torch.Tensor) -> torch.Tensor:
        return torch.zeros((groups, *x.shape[1:]), dtype=x.dtype).index_add_(0, group, x)

    copies = total(torch.ones(n))
    proven = samples.proven.float()
    proven_copies = total(proven)
    estimate = total(samples.value) / copies
    exact = total(samples.value * proven) / proven_copies.clamp(min=1)
    is_proven = proven_copies > 0
    replied = samples.has_reply.float()
    reply_copies = total(replied)
    return Samples(
        observation=samples.observation[first],
        legal=samples.legal[first],
        player=samples.player[first],
        ply=samples.ply[first],
        policy=total(samples.policy) / copies[:, None],
        value=torch.where(is_proven, exact, estimate),
        proven=is_proven,
        reply=total(samples.reply * replied[:, None]) / reply_copies.clamp(min=1)[:, None],
        has_reply=reply_copies > 0,
    )


def learning_rate_at(config: AlphaZeroConfig, iteration: int) -> float:
    """The step size of a generation's `iteration` (0-based): `learning_rate` throughout, or with
    `learning_rate_final` a half cosine from `learning_rate` at the first to it at the last."""
    if not config.learning_rate_final or config.iterations < 2:
        return config.learning_rate
    t = iteration / (config.iterations - 1)
    span = config.learning_rate - config.learning_rate_final
    return config.learning_rate_final + span * (1 + math.cos(math.pi * t)) / 2


def average_weights(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean of network state dicts, entry by entry (computed in float32, kept in each entry's
    dtype); entries that are not floating point (counters) are the last state's."""
    out = {}
    for key, last in states[-1].items():
        if last.is_floating_point():
            mean = torch.stack([s[key].float() for s in states]).mean(0)
            out[key] = mean.to(last.dtype)
        else:
            out[key] = last.clone()
    return out


def random_images(batch: Samples, symmetries: Sequence[Symmetry], generator: torch.Generator) -> Samples:
    """Each of `batch`'s samples as its image under one of `symmetries` (the identity first),
    drawn uniformly, its targets mapped with it (`AlphaZeroConfig.random_image`)."""
    pick = torch.randint(len(symmetries), (len(batch),), generator=generator)
    out = replace(batch, **{f: getattr(batch, f).clone() for f in Samples.__dataclass_fields__})
    for k, symmetry in enumerate(symmetries[1:], 1):
        rows = pick == k
        mapped = batch.take(rows).image(symmetry)
        for f in Samples.__dataclass_fields__:
            getattr(out, f)[rows] = getattr(mapped, f)
    return out


def fit(
    net: PolicyValueNet,
    optimizer: torch.optim.Optimizer,
    window: Samples,
    steps: int,
    config: AlphaZeroConfig,
    generator: torch.Generator,
    game: Game = ConnectFour(),
) -> dict[str, float]:
    """`steps` gradient steps on uniform minibatches of the replay window; mean losses (with a
    categorical value head, ``value_error`` too: the squared error of its mean, which a scalar
    head's ``value`` is; with a reply head, ``reply``: its cross-entropy over the samples that
    have a reply target, weighted by `AlphaZeroConfig.reply_weight` in the loss)."""
    device = next(net.parameters()).device
    images = game.symmetries[1:] if config.mirror else ()
    replies = net.config.reply_head and config.reply_weight > 0
    net.train()
    totals = {"policy": 0.0, "value": 0.0, "entropy": 0.0} | ({"reply": 0.0} if replies else {})
    for _ in range(steps):
        idx = torch.randint(len(window), (min(config.batch_size, len(window)),), generator=generator)
        batch = window.take(idx)
        if config.random_image:  # which needs `mirror`
            batch = random_images(batch, game.symmetries, generator)
        elif images:
            batch = Samples.cat([batch, *(batch.image(s) for s in images)])
        planes, legal = batch.observation, batch.legal
        policy, value = batch.policy, batch.value
        reply, has_reply = batch.reply, batch.has_reply
        reply_logits = None
        if replies:
            logits, head, reply_logits = net.heads_with_reply(planes.to(device), legal.to(device))
        else:
            logits, head = net.heads(planes.to(device), legal.to(device))
        logp = torch.log_softmax(logits, 1)
        policy_loss = -(policy.to(device) * logp).sum(1).mean()
        target = value.to(device)
        value_loss = net.value_loss(head, target)
        loss = policy_loss + value_loss
        if reply_logits is not None:
            weight = has_reply.to(device).float()
            cross = -(reply.to(device) * torch.log_softmax(reply_logits, 1)).sum(1)
            reply_loss = (cross * weight).sum() / weight.sum().clamp(min=1.0)
            loss = loss + config.reply_weight * reply_loss
            totals["reply"] += reply_loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        totals["policy"] += policy_loss.item()
        totals["value"] += value_loss.item()
        totals["entropy"] += float(-(logp.exp() * logp).sum(1).mean().detach())
        if net.config.value_bins:  # the categorical head's cross-entropy is not comparable
            with torch.no_grad():
                error = (net.value_of(head) - target).square().mean()
            totals["value_error"] = totals.get("value_error", 0.0) + error.item()
    net.eval()
    return {k: v / max(steps, 1) for k, v in totals.items()}


def train(
    net: PolicyValueNet,
    config: AlphaZeroConfig,
    seed: int,
    game: Game = ConnectFour(),
    optimizer: torch.optim.Optimizer | None = None,
    on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    opponents: Sequence[tuple[str, PolicyValueNet]] = (),
    ranks: Ranks = ALONE,
    held_out: Callable[[BatchState], torch.Tensor] | None = None,
) -> torch.optim.Optimizer:
    """Run `config.iterations` self-play-and-fit iterations in place; returns the optimizer.

    `opponents` are league members (name, frozen net in eval mode on the learner's device)
    that `config.league_share` of each iteration's games are played against.
    `on_iteration(i, metrics)` receives ``losses/{policy,value,entropy}``,
    ``vs/self/{win,draw,loss}`` (the first player's, over the self-play games),
    ``vs/<member>/{win,draw,loss}`` (the learner's, for each member played), ``selfplay/*``
    and ``charts/*``. Data-parallel, every rank calls this with the same network, opponents
    and `config.ranks` of them; the metrics then average every rank's games (the ranks play
    equal shares), and only rank 0's include the losses and the positions the solver labelled
    (`config.solver_positions`): it alone fits. `held_out` marks the positions those must not be
    drawn from (`Suite.holds`: the suite the league scores on).
    """
    if ranks.world != config.ranks:
        raise ValueError(f"the AlphaZero config asks for {config.ranks} ranks, and {ranks.world} train")
    if optimizer is None:
        optimizer = torch.optim.Adam(net.parameters())
    for group in optimizer.param_groups:  # a resumed optimizer keeps its moments, not its settings
        group["lr"], group["weight_decay"] = config.learning_rate, config.weight_decay
    averaged: list[dict[str, torch.Tensor]] = []  # the weights after each of the last iterations
    gen = torch.Generator().manual_seed(ranks.seed(seed))
    share = replace(config, games=config.games // ranks.world, ranks=1) if ranks.world > 1 else config
    window: list[Samples] = []
    # one solver for the whole run: its table carries over between iterations
    solver = solver_for(game, config) if config.uses_solver else None
    for it in range(config.iterations):
        start = time.perf_counter()
        rate = learning_rate_at(config, it)
        for group in optimizer.param_groups:
            group["lr"] = rate
        samples, stats = self_play(net, share, gen, game, solver, opponents)
        played = time.perf_counter() - start
        if ranks.world > 1:  # every rank's decisions, in rank order; the statistics averaged
            samples = Samples.cat(ranks.gather(samples))
            stats = dict(zip(sorted(stats), ranks.mean([stats[k] for k in sorted(stats)]), strict=True))
        decisions = len(samples)
        if config.solver_positions and ranks.rank == 0:  # it alone fits
            assert solver is not None  # made above
            labelling = time.perf_counter()
            labelled = solver_samples(
                game,
                solver,
                config.solver_positions,
                gen,
                net.by_margin,
                held_out,
                config.solver_positions_from,
            )
            samples = Samples.cat([samples, labelled])
            stats["charts/solver_positions"] = float(len(labelled))
            stats["charts/label_seconds"] = time.perf_counter() - labelling
        window = (window + [samples])[-config.replay_iterations :]
        steps = max(1, math.ceil(config.epochs * len(samples) / config.batch_size))
        losses = {}
        fitting = time.perf_counter()
        if ranks.rank == 0:
            data = Samples.cat(window)
            if config.merge_duplicates:
                merged = merge_duplicates(data)
                stats["charts/distinct_share"] = len(merged) / max(len(data), 1)
                data = merged
            with ranks.every_core():  # the other ranks only wait for the new weights meanwhile
                losses = fit(net, optimizer, data, steps, config, gen, game)
        ranks.share(net)
        if config.average_iterations > 1 and it >= config.iterations - config.average_iterations:
            averaged.append({k: v.detach().clone() for k, v in net.state_dict().items()})
        metrics = {f"losses/{k}": v for k, v in losses.items()} | stats
        metrics["charts/learning_rate"] = rate
        metrics["charts/decisions"] = float(decisions)
        metrics["charts/selfplay_seconds"] = played
        # rank 0's fit and sharing its weights; the other ranks' wait for them
        metrics["charts/fit_seconds"] = time.perf_counter() - fitting
        metrics["charts/seconds"] = time.perf_counter() - start
        if on_iteration is not None:
            on_iteration(it, metrics)
    if len(averaged) > 1:  # every rank holds the same weights each iteration, so the same mean
        net.load_state_dict(average_weights(averaged))
    return optimizer
