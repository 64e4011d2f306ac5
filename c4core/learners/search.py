"""Batched PUCT Monte Carlo tree search on top of the policy-value net, with MCTS-Solver proofs.

One tree per position of a batch; every simulation step walks each unfinished tree from its
root to one leaf and evaluates all those leaves in a single network forward, so the net sees
batches of hundreds of positions instead of one at a time.

Selection (AlphaZero's PUCT) picks, at a node with edge statistics N (visits), W (summed values
from the node mover's view) and priors P, the edge maximising::

    Q + c_puct * P * sqrt(N_node) / (1 + N)        Q = W / N, or the node's own mean when N = 0

where ``N_node = 1 + sum(N)`` counts the node's own evaluation too, so the very first choice
at a fresh node already follows the priors. An unvisited edge starts at the node's mean value
("first-play urgency" = parent value) rather than 0, so a clearly won or lost position does not
spray visits over every column; `SearchConfig.fpu_reduction` lowers it by the square root of
the visited edges' prior mass, as Leela Chess Zero and KataGo do, and
`SearchConfig.prior_temperature` flattens or sharpens the priors themselves.

MCTS-Solver (Winands, Bjornsson and Saito, "Monte-Carlo Tree Search Solver", CG 2008), extended
with draws: every edge can carry an *exact* value (+1 win, 0 draw, -1 loss for the node's
mover) and a length (plies until the game ends under the proof).

- On expansion, edges that end the game are exact: a move that completes a run wins (length 1),
  a move that fills the board without winning draws (length 1), and a move after which the
  opponent can complete a run at once loses (length 2). These are the terminal proofs one and
  two plies down, found with bitboard arithmetic on the whole batch of new leaves.
- A node is proven won when some edge is a proven win (its length: the shortest such edge),
  and proven when all its legal edges are proven (its value: the best of them; for a loss the
  length is the longest, i.e. the defender delays as long as it can).
- A proven node marks its parent's edge exact (negated, one ply longer), and the check repeats
  up the path. Proven-lost edges are never selected again; a proven draw edge is selected like
  any other, with its exact value as the leaf value.
- A proven root ends that tree's search early.

With a net whose values are its game's margin returns (`by_margin`: Dots and Boxes' box
difference over its boxes), the exact values are margin returns too, each in -1..1, and the
rules above hold as written: +1 is the most there is, so an edge worth it proves its node, a
node whose edges are all exact is proven at the best of them, and an exact edge worth less is a
leaf with its exact value, as a draw is.

The lengths bound the game's length under the proof found, which need not be the fastest win
(search proves the first win it finds): a proven win of length d means a forced win within d
plies.

Accounting (tested): the root is expanded by one network call before the simulations start,
and is not a simulation. Each simulation then adds exactly one visit to one root edge, so the
root's visit counts sum to the simulations run: ``config.simulations`` unless the root was
proven first, in which case the search stopped after the simulation that proved it (0 when the
root was proven at its own expansion, e.g. when a winning move is on the board).

Root noise (Dirichlet, as in AlphaZero) is for self-play training only and is off by default,
so evaluation is deterministic: same net, same position, same visit counts. KataGo's forced
playouts (`SearchConfig.forced_playouts`, `forced_visits`) make sure the noise's moves get
visits, and its policy target pruning (`pruned_visits`) takes those visits back out of the
policy target, so the target teaches what the search found rather than what the noise forced.

Tree reuse (`TreeReuse`): a search may start each tree from the subtree that the game's moves
since its last search reached, with that subtree's visits, values and proofs, and run only the
simulations that bring its root to `config.simulations` visits: the kept visits are evaluations
saved. A subtree holds at most one node more than its root's visits, so a kept tree still fits
its `simulations + 1` nodes.

Gumbel root search (`SearchConfig.root` = "gumbel"; Danihelka, Guez, Schrittwieser and Silver,
"Policy improvement by planning with Gumbel", ICLR 2022) changes only the root. Each legal move
a gets a score g(a) + logit(a), with g Gumbel noise when `root_noise` is on (else 0) and logit
the log prior; the m best (`considered_actions`) are the Gumbel-top-m sample without
replacement. Sequential halving then shares the simulations among them in about log2(m)
phases of equal visits each, keeping after each phase the half with the best
g + logit + sigma(Q), where sigma(q) = (c_visit + max N) * c_scale * q and Q is the completed
value: a visited move's mean (an exact move's exact value), an unvisited one's the root's
mixed value (its net value and the visited moves' prior-weighted means, weighted by visits),
rescaled to 0..1 over the legal moves. Each simulation's root move is the best-scoring one whose
visits are the halving plan's count for that simulation (`halving_plan`), so the plan holds
exactly. The move played is the best-scoring survivor; the policy target is the improved policy
softmax(logit + sigma(completed Q)), which keeps learning from a handful of simulations where
the visit counts say little. Proven-lost moves are never played and are removed from the
target, as under PUCT.

Tree storage is numpy arrays indexed by node id (``tree * capacity + slot``), one row per node
and one column per action for the edge statistics; capacity is ``simulations + 1`` since a
simulation adds at most one node. The nodes' game states live in the game's `SearchTree`
(`c4core.games.base`): Connect Four's own bitboard arrays, or `StateTree` for any game. Every
value is backed up from the view of the player to move at each node, as the tree reports it, so
a player who moves twice in a row (Dots and Boxes) is handled like any other.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import torch

from c4core.config import SearchConfig
from c4core.games import (
    BatchState,
    ExactSolver,
    Game,
    State,
    exact_solver,
    exact_value,
    game_of,
    has_margin,
    returns_of,
)
from c4core.games.base import SearchTree
from c4core.games.players import Player
from c4core.learners.net import NetPlayer, PolicyValueNet


class Evaluator(Protocol):
    """What the search asks of a network: move probabilities and values for a batch of states
    (`PolicyValueNet.evaluate`; a test may pass uniform priors)."""

    def evaluate(self, batch: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        """Probabilities [n, num_actions] (0 on illegal actions) and values [n] in -1..1 for
        the player to move."""
        ...


def by_margin(net: Evaluator) -> bool:
    """Whether `net`'s values are its game's margin returns (`PolicyValueNet.by_margin`), so
    the search backs up and proves those too; an evaluator that does not say gives outcomes."""
    return bool(getattr(net, "by_margin", False))


class EvaluationCache:
    """An `Evaluator` that remembers a network's answers for positions it has seen, and asks the
    network only about the others: transpositions within a tree, the same position in the
    batch's other trees, and the next move's search of the same game all hit it (c4a0 caches
    evaluations; Clausen removes every duplicate evaluation).

    A position is known by its observation and legal moves together, exactly (the network sees
    nothing else), so a hit is what a fresh evaluation of that position returns, up to the
    rounding by which one batch's forward may differ from another's. The network's weights
    must not change while the cache is in use: make one per set of weights. At `capacity`
    positions the oldest are forgotten first."""

    def __init__(self, net: PolicyValueNet, capacity: int):
        if capacity < 1:
            raise ValueError(f"an evaluation cache holds at least one position, got {capacity}")
        self.net, self.capacity = net, capacity
        self.table: dict[bytes, tuple[torch.Tensor, float]] = {}
        self.hits = self.misses = 0

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        """The network's: the search finds the device through them."""
        return self.net.parameters()

    @property
    def by_margin(self) -> bool:
        """The network's (`PolicyValueNet.by_margin`): the search backs up what it values."""
        return self.net.by_margin

    def evaluate(self, batch: BatchState) -> tuple[torch.Tensor, torch.Tensor]:
        observation, legal = batch.observation(), batch.legal()
        flat = torch.cat((observation.flatten(1), legal.to(observation.dtype)), 1).cpu().numpy()
        keys = [row.tobytes() for row in flat]
        new: dict[bytes, int] = {}  # each unseen position once, at its first row
        for i, key in enumerate(keys):
            if key not in self.table:
                new.setdefault(key, i)
        answers: dict[bytes, tuple[torch.Tensor, float]] = {}
        if new:
            idx = torch.tensor(list(new.values()), device=observation.device)
            logits, value = self.net(observation[idx], legal[idx])
            probs = torch.softmax(logits, 1)
            answers = {key: (probs[j], float(value[j])) for j, key in enumerate(new)}
        found = [answers[k] if k in answers else self.table[k] for k in keys]
        self.table.update(answers)
        while len(self.table) > self.capacity:
            del self.table[next(iter(self.table))]
        self.hits += len(keys) - len(new)
        self.misses += len(new)
        values = torch.tensor([v for _, v in found], device=observation.device)
        if not found:
            return torch.zeros(0, legal.shape[1], device=observation.device), values
        return torch.stack([p for p, _ in found]), values


@dataclass(frozen=True)
class BatchSearch:
    """What a search returns for a batch; rows of finished games are all zeros (proven NaN)."""

    visits: np.ndarray
    """[n, cols] int: root visit counts; each row sums to `simulations[i]`, plus the visits a
    reused tree kept (`TreeReuse`): the search's `simulations` unless the root was proven."""
    probs: np.ndarray
    """[n, cols] float: the policy target: the visit distribution (Gumbel's improved policy)
    with proven-lost moves removed; one-hot on the chosen move when the root is proven (or when
    no simulation ran)."""
    columns: np.ndarray
    """[n] int: the chosen column (0-based)."""
    values: np.ndarray
    """[n] float: the root value for the side to move: the exact value when proven, else the
    mean of the root's own net value and every simulation's backed-up value."""
    proven: np.ndarray
    """[n] float: +1 proven win, 0 proven draw, -1 proven loss (a margin return for a net of
    margins), NaN not proven."""
    lengths: np.ndarray
    """[n] int: plies to the end of the game under the proof when proven, else 0."""
    move_proven: np.ndarray
    """[n, cols] float: the exact value of each root move for the side to move (+1, 0, -1), NaN
    where unknown or illegal."""
    simulations: np.ndarray
    """[n] int: simulations this search ran (fewer than asked when the root was proven early)."""
    priors: np.ndarray
    """[n, cols] float: the network's own move probabilities at the root (no noise), as the search
    used them (`SearchConfig.prior_temperature`)."""
    net_values: np.ndarray
    """[n] float: the network's own value of the root."""


@dataclass(frozen=True)
class SearchResult:
    """The search of one position, whole: what a test or a benchmark reads of a single search
    (serving and the play page read `search`'s batch result)."""

    column: int
    """The chosen column (0-based)."""
    visits: list[int]
    """Root visit counts per column (sum = `simulations`: `search_position` reuses no tree)."""
    probs: list[float]
    """The policy target: the visit distribution (Gumbel's improved policy) without proven-lost
    moves (one-hot when proven)."""
    value: float
    """Root value for the side to move, in -1..1."""
    proven: float | None
    """+1 proven win, 0 proven draw, -1 proven loss (a margin return for a net of margins),
    None when not proven."""
    length: int
    """Plies to the end of the game under the proof (0 when not proven)."""
    move_proven: list[float | None]
    """Exact value of each column (+1, 0, -1, or a margin return) where search proved it, else
    None."""
    simulations: int
    """Simulations run."""
    prior: list[float]
    """The network's move probabilities (`SearchConfig.prior_temperature`'s, when set)."""
    net_value: float
    """The network's value."""


class TreeReuse:
    """Tree reuse between moves, as AlphaZero and KataGo keep the subtree of the move played:
    where each game of a batch stands in the forest of its last search. Pass one to `search`
    with the games' ids, and tell it every move played (`played`). The next search of a game
    starts from a copy of the subtree its moves reached, with its visits, values and proofs, and
    runs only the simulations that bring the root to `SearchConfig.simulations` visits, so the
    kept visits are evaluations saved, and the policy target counts them as its own. Gumbel's
    root is refused: its halving plan starts from an unvisited root."""

    def __init__(self) -> None:
        self.at: dict[int, tuple[_Forest, int]] = {}
        """Each game's forest and node, by the game's id."""

    def played(self, games: np.ndarray, actions: np.ndarray) -> None:
        """Follow each of `games` (ids) down its move in `actions`. A game not among them has
        finished, and one whose move leaves its kept tree starts afresh: both are forgotten, so
        no finished game keeps an old forest alive."""
        moved: dict[int, tuple[_Forest, int]] = {}
        for game, action in zip(games.tolist(), actions.tolist(), strict=True):
            if game in self.at:
                forest, node = self.at[game]
                child = int(forest.child[node, action])
                if child >= 0:
                    moved[game] = (forest, child)
        self.at = moved


def search(
    net: Evaluator,
    boards: BatchState,
    config: SearchConfig = SearchConfig(),
    generator: torch.Generator | None = None,
    solver: ExactSolver | None = None,
    reuse: TreeReuse | None = None,
    games: np.ndarray | None = None,
) -> BatchSearch:
    """Search every unfinished game of `boards` (one tree each, any game), `config.max_trees`
    trees at a time.

    With `config.probe_from`, leaves of at least that many moves are probed with `solver`, the
    game's exact solver (`Game.exact_solver`), `config.probe_nodes` nodes each; pass one to keep
    its table warm across calls, else a fresh one is made. With `reuse`, each game (its id in
    `games`, one per row of `boards`; by default the rows' indices) starts from the subtree its
    moves reached since its last search, and `reuse` then holds this search's trees."""
    if reuse is not None and config.root == "gumbel":
        raise ValueError("tree reuse keeps visits, and Gumbel's root plans its visits from none")
    ids = np.arange(len(boards)) if games is None else np.asarray(games, np.int64)
    if len(ids) != len(boards):
        raise ValueError(f"{len(ids)} game ids for {len(boards)} games")
    game = game_of(boards)
    if isinstance(net, PolicyValueNet) and net.game != game:
        ours, theirs = ("x".join(map(str, g.observation_shape[1:])) for g in (net.game, game))
        raise ValueError(
            f"the net is built for {ours} observations and {net.game.num_actions} actions "
            f"({net.game.title}), not {game.title}'s {theirs} and {game.num_actions}"
        )
    if config.probe_from:
        if solver is None:
            solver = _probe_solver(game)
    else:
        solver = None
    n, cols = len(boards), game.num_actions
    out = {
        "visits": np.zeros((n, cols), np.int64),
        "probs": np.zeros((n, cols), np.float64),
        "columns": np.zeros(n, np.int64),
        "values": np.zeros(n, np.float64),
        "proven": np.full(n, np.nan),
        "lengths": np.zeros(n, np.int64),
        "move_proven": np.full((n, cols), np.nan),
        "simulations": np.zeros(n, np.int64),
        "priors": np.zeros((n, cols), np.float64),
        "net_values": np.zeros(n, np.float64),
    }
    live = np.flatnonzero(~boards.done.cpu().numpy())
    if len(live):
        # one numpy generator, seeded from the torch one, drives noise and move sampling alike
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        rng = np.random.default_rng(seed)
        for lo in range(0, len(live), config.max_trees):
            idx = live[lo : lo + config.max_trees]
            capacity = config.simulations + 1
            tree = _tree_of(game, len(idx) * capacity, by_margin(net))
            tree.place(np.arange(len(idx), dtype=np.int64) * capacity, boards, idx)
            forest = _Forest(net, tree, game.num_actions, len(idx), config, rng, solver)
            if reuse is not None:
                forest.transplant([reuse.at.get(int(g)) for g in ids[idx]])
            forest.run()
            for key, value in forest.results().items():
                out[key][idx] = value
            if reuse is not None:
                reuse.at.update(
                    (int(g), (forest, int(root))) for g, root in zip(ids[idx], forest.roots, strict=True)
                )
    return BatchSearch(**out)


def search_position(
    net: Evaluator,
    position: State,
    config: SearchConfig = SearchConfig(),
    generator: torch.Generator | None = None,
    solver: ExactSolver | None = None,
) -> SearchResult:
    """Search one position: visit distribution, chosen column and root value (`solver` as in
    `search`)."""
    if position.is_terminal:
        raise ValueError("the game is over: there is no move to search")
    r = search(net, game_of(position).batch_of([position]), config, generator, solver)
    proven = None if np.isnan(r.proven[0]) else float(r.proven[0])
    return SearchResult(
        column=int(r.columns[0]),
        visits=[int(v) for v in r.visits[0]],
        probs=[float(p) for p in r.probs[0]],
        value=float(r.values[0]),
        proven=proven,
        length=int(r.lengths[0]),
        move_proven=[None if np.isnan(v) else float(v) for v in r.move_proven[0]],
        simulations=int(r.simulations[0]),
        prior=[float(p) for p in r.priors[0]],
        net_value=float(r.net_values[0]),
    )


class SearchPlayer(Player):
    """A network with search on top, as a `Player`: ``<net name>+mcts<simulations>``, and
    ``...+probe<stones>`` when its leaves are probed with the exact solver."""

    def __init__(
        self,
        net: PolicyValueNet,
        simulations: int | None = None,
        config: SearchConfig = SearchConfig(),
        net_name: str = "net",
    ):
        self.config = config if simulations is None else replace(config, simulations=simulations)
        self.net = net.eval()
        self.net_name = net_name
        self.name = f"{net_name}+mcts{self.config.simulations}"
        if self.config.root == "gumbel":
            self.name += "+gumbel"
        self.solver: ExactSolver | None = None
        self._solved: Game | None = None  # the game `solver` solves
        if self.config.probe_from:
            self.name += f"+probe{self.config.probe_from}"

    @classmethod
    def around(cls, player: Player, simulations: int, config: SearchConfig = SearchConfig()) -> SearchPlayer:
        """Put search on top of a network player (`NetPlayer`); `ValueError` for anything else."""
        if not isinstance(player, NetPlayer):
            raise ValueError(f"search needs a network player (a checkpoint), not {player.name!r}")
        return cls(player.net, simulations, config, net_name=player.name)

    def act(self, boards: BatchState, generator: torch.Generator | None = None) -> torch.Tensor:
        game = game_of(boards)
        if self.config.probe_from and (self.solver is None or self._solved != game):
            # one solver for the player's life: its table stays warm from move to move
            self.solver, self._solved = _probe_solver(game), game
        result = search(self.net, boards, self.config, generator, self.solver)
        return torch.from_numpy(result.columns).to(boards.device)


def _probe_solver(game: Game) -> ExactSolver:
    """A fresh exact solver for probing `game`'s leaves; `ValueError` for a game without one."""
    try:
        return exact_solver(game)
    except ValueError:
        needs = "probing leaves needs the exact solver"
        raise ValueError(f"{needs}, which {game.variant} does not have") from None


def halving_plan(considered: int, simulations: int) -> np.ndarray:
    """Sequential halving's plan for a root that considers `considered` moves: element i is the
    visits that simulation i's root move has before it. Every phase gives each remaining move
    the same number of visits, ``max(1, simulations // (ceil(log2 m) * remaining))``, then
    halves the remaining moves (never below two), until the simulations are spent; one move
    considered gets them all."""
    if considered <= 1:
        return np.arange(simulations)
    phases = math.ceil(math.log2(considered))
    plan: list[int] = []
    held, remaining = 0, considered
    while len(plan) < simulations:
        for _ in range(max(1, simulations // (phases * remaining))):
            plan += [held] * remaining
            held += 1
        remaining = max(2, remaining // 2)
    return np.array(plan[:simulations], np.int64)


def tempered(prior: np.ndarray, temperature: float) -> np.ndarray:
    """Priors [n, moves] raised to ``1 / temperature`` and renormalised per row; illegal moves
    (prior 0) stay 0 (`SearchConfig.prior_temperature`)."""
    if temperature == 1.0:
        return prior
    powered = np.power(prior.astype(np.float64), 1.0 / temperature)
    return powered / np.maximum(powered.sum(1, keepdims=True), np.finfo(np.float64).tiny)


def forced_visits(prior: np.ndarray, total: np.ndarray, k: float) -> np.ndarray:
    """KataGo's forced playouts: the visits ``sqrt(k * P * N)`` below which a root move of prior
    P is simulated next, at a root of N visits ([n, moves] priors, [n] visits)."""
    return np.sqrt(k * prior * np.asarray(total, np.float64)[:, None])


def pruned_visits(
    visits: np.ndarray, q: np.ndarray, prior: np.ndarray, allowed: np.ndarray, c_puct: float, k: float
) -> np.ndarray:
    """KataGo's policy target pruning of root visits [n, moves] given their mean values `q`,
    priors (noise included: what PUCT used) and the moves that may be played. The most visited
    move keeps its visits. Every other move gives back visits, at most its forced ones
    (`forced_visits`), while its PUCT score with fewer visits would still stay at or below the
    most visited move's: those are the visits only forcing gave it. A move so reduced to one
    visit or none is dropped. Moves that may not be played count nothing."""
    n = np.where(allowed, visits, 0).astype(np.float64)
    total = n.sum(1)
    rows = np.arange(len(n))
    best = np.where(allowed, n + 1e-6 * prior, -np.inf).argmax(1)
    scale = c_puct * prior * np.sqrt(1 + total)[:, None]
    best_score = q[rows, best] + scale[rows, best] / (1 + n[rows, best])
    gap = best_score[:, None] - q
    with np.errstate(divide="ignore", invalid="ignore"):
        # the fewest visits at which the move's score is no more than the best's
        needed = np.where(gap > 0, np.ceil(scale / gap - 1), n)
    floor = n - np.floor(forced_visits(prior, total, k))
    keep = np.clip(np.maximum(needed, floor), 0, n)
    keep = np.where((keep < n) & (keep <= 1), 0, keep)
    keep[rows, best] = n[rows, best]
    return keep


# ---- tree storage ------------------------------------------------------------------------------
def _tree_of(game: Game, total: int, margin: bool = False) -> SearchTree:
    """The game's own tree storage for `total` nodes where it has one and the values are
    outcomes, else `StateTree`."""
    own = getattr(game, "search_tree", None)
    return own(total) if own is not None and not margin else StateTree(game, total, margin)


class StateTree:
    """Tree storage for any game: one scalar `State` per node, through the interface alone.

    It knows exactly only the edges that end the game (their returns, length 1; with `margin`
    their margin returns, and the solver's margin values where it probes); a game that needs
    speed registers its own storage as `Game.search_tree` (Connect Four's keeps bitboard
    arrays, `c4core.games.connect4.tree`)."""

    def __init__(self, game: Game, total: int, margin: bool = False):
        if margin and not has_margin(game):
            raise ValueError(f"{game.title} has no margin returns: its values are outcomes")
        self.game, self.margin = game, margin
        self.states: list[State | None] = [None] * total
        self.movers = np.zeros(total, np.int64)
        self.after: dict[int, dict[int, State]] = {}  # each expanded node's children, by action

    def place(self, nodes: np.ndarray, batch: BatchState, games: np.ndarray) -> None:
        for node, i in zip(nodes, games, strict=True):
            self._put(int(node), batch.state(int(i)))

    def _put(self, node: int, state: State) -> None:
        self.states[node] = state
        self.movers[node] = state.current_player()

    def to_move(self, nodes: np.ndarray) -> np.ndarray:
        return self.movers[nodes]

    def add_children(self, parents: np.ndarray, actions: np.ndarray, children: np.ndarray) -> None:
        for parent, action, child in zip(parents, actions, children, strict=True):
            self._put(int(child), self.after[int(parent)][int(action)])

    def expand(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        shape = (len(nodes), self.game.num_actions)
        legal, exact = np.zeros(shape, bool), np.full(shape, np.nan)
        for row, node in enumerate(nodes):
            state = self.states[int(node)]
            mover = state.current_player()
            after = self.after[int(node)] = {a: state.apply(a) for a in state.legal_actions()}
            for action, child in after.items():
                legal[row, action] = True
                if child.is_terminal:
                    exact[row, action] = returns_of(child, self.margin)[mover]
        return legal, exact, np.ones(shape, np.int64)

    def batch(self, nodes: np.ndarray, device: torch.device) -> BatchState:
        return self.game.batch_of([self.states[int(n)] for n in nodes], device)

    def probe(
        self, nodes: np.ndarray, solver: ExactSolver, from_ply: int, max_nodes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        values = np.full(len(nodes), np.nan)
        plies = np.array([self.states[int(n)].ply for n in nodes], np.int64)
        for i in np.flatnonzero(plies >= from_ply):
            state = self.states[int(nodes[i])]
            if not state.is_terminal:
                value = exact_value(solver, state, self.margin, max_nodes)
                values[i] = np.nan if value is None else value
        return values, self.game.max_game_length - plies


def _device_of(net: Evaluator) -> torch.device:
    """Where the evaluator's weights live (the CPU for one without weights)."""
    params = getattr(net, "parameters", None)
    first = next(iter(params()), None) if params is not None else None
    return first.device if first is not None else torch.device("cpu")


# ---- the forest ---------------------------------------------------------------------------------
def edge_values(
    visits: np.ndarray, value_sum: np.ndarray, exact: np.ndarray, unvisited: float | np.ndarray
) -> np.ndarray:
    """Each edge's value for its node's mover, from the nodes' gathered rows: its exact value
    where known, else its visits' mean, else `unvisited` (one value, or one a node as a column)."""
    q = np.where(visits > 0, value_sum / np.maximum(visits, 1), unvisited)
    return np.where(np.isnan(exact), q, exact)


class _Forest:
    """Many trees stored in flat numpy arrays, searched in lockstep."""

    def __init__(
        self,
        net: Evaluator,
        tree: SearchTree,
        num_actions: int,
        trees: int,
        config: SearchConfig,
        rng: np.random.Generator,
        solver: ExactSolver | None = None,
    ):
        self.net, self.tree, self.config, self.rng, self.solver = net, tree, config, rng, solver
        self.device = _device_of(net)
        b, c = trees, num_actions
        self.trees = b
        self.capacity = cap = config.simulations + 1
        total = b * cap
        self.node_value = np.zeros(total, np.float64)
        self.node_exact = np.full(total, np.nan)
        self.node_length = np.zeros(total, np.int64)
        self.legal = np.zeros((total, c), bool)
        # 32-bit edge arrays: a 1024-tree chunk at 256 simulations then needs about 60 MB
        self.prior = np.zeros((total, c), np.float32)
        self.visits = np.zeros((total, c), np.int32)
        self.value_sum = np.zeros((total, c), np.float32)
        self.child = np.full((total, c), -1, np.int32)
        self.exact = np.full((total, c), np.nan, np.float32)  # exact value for the node's mover, NaN unknown
        self.length = np.zeros((total, c), np.int32)
        self.used = np.ones(b, np.int64)  # slot 0 of every tree is its root
        self.roots = np.arange(b, dtype=np.int64) * cap
        self.root_prior = np.zeros((b, c))
        self.kept = np.zeros(b, np.int64)  # root visits each tree kept from an earlier search
        self.transplanted = np.zeros(b, bool)  # roots that came with a kept subtree
        self.gumbel = config.root == "gumbel"
        self.noise = np.zeros((b, c))  # Gumbel's g at each root (0 without root noise)
        self.plan = np.zeros((b, 0), np.int64)  # Gumbel's halving plan per root (`_plan_halving`)

    # ---- main loop ------------------------------------------------------------------------------
    def run(self) -> None:
        roots = self.roots
        fresh = roots[~self.transplanted]  # a kept root comes expanded and evaluated
        self._expand(fresh)
        self._evaluate(fresh)  # roots always get a net evaluation: it is reported, proven or not
        self.root_prior = self.prior[roots].copy()
        if self.gumbel:
            self._plan_halving()
        elif self.config.root_noise:
            self._add_root_noise()
        budget = self.config.simulations - self.kept  # a kept tree tops its root up
        active = np.flatnonzero(np.isnan(self.node_exact[roots]) & (budget > 0))
        for step in range(self.config.simulations):
            if not len(active):
                break
            self._simulate(active)
            active = active[np.isnan(self.node_exact[roots[active]]) & (budget[active] > step + 1)]

    def _simulate(self, trees: np.ndarray) -> None:
        """One simulation in each of `trees`: select, expand, evaluate, back up, prove."""
        k = len(trees)
        node = self.roots[trees].copy()
        path_nodes: list[np.ndarray] = []
        path_edges: list[np.ndarray] = []
        depth = np.zeros(k, np.int64)  # path length of each tree
        leaf_value = np.zeros(k)  # value for the mover at the last path node
        new_node = np.full(k, -1, np.int64)
        going = np.arange(k)
        while len(going):
            at = node[going]
            edge = self._select_root(trees) if self.gumbel and not path_nodes else self._select(at)
            nodes_d = np.full(k, -1, np.int64)
            edges_d = np.full(k, -1, np.int64)
            nodes_d[going], edges_d[going] = at, edge
            path_nodes.append(nodes_d)
            path_edges.append(edges_d)
            depth[going] += 1
            exact = self.exact[at, edge]
            known = ~np.isnan(exact)
            # an exact edge (in practice a proven draw) is a leaf with its exact value
            leaf_value[going[known]] = exact[known]
            nxt = self.child[at, edge]
            fresh = ~known & (nxt < 0)
            if fresh.any():
                made = self._add_children(trees[going[fresh]], at[fresh], edge[fresh])
                new_node[going[fresh]] = made
            deeper = ~known & (nxt >= 0)
            node[going[deeper]] = nxt[deeper]
            going = going[deeper]

        nodes, edges = np.stack(path_nodes, 1), np.stack(path_edges, 1)
        grown = np.flatnonzero(new_node >= 0)
        if len(grown):
            made = new_node[grown]
            self._expand(made)
            self._probe(made)
            unproven = np.isnan(self.node_exact[made])
            self._evaluate(made[unproven])
            child_value = np.where(unproven, self.node_value[made], self.node_exact[made])
            # the value is for the child's mover: the parent's when it moves again, else negated
            last = nodes[grown, depth[grown] - 1]
            same = self.tree.to_move(made) == self.tree.to_move(last)
            leaf_value[grown] = np.where(same, child_value, -child_value)

        self._backup(nodes, edges, depth, leaf_value)
        proved = grown[~np.isnan(self.node_exact[new_node[grown]])]
        if len(proved):
            self._propagate(nodes[proved], edges[proved], depth[proved], new_node[proved])

    def transplant(self, sources: list[tuple[_Forest, int] | None]) -> None:
        """Start tree i from a copy of `sources[i]`'s subtree (a forest and a node; None: a
        fresh tree), level by level. A subtree has at most one node more than its root's visits,
        which are fewer than the simulations (its parent's edge took one to make it), so it
        fits; should one not, an edge whose child did not fit keeps its statistics and grows a
        fresh child when next selected. The roots' states are already placed; the states below
        are played out again from them, through the game's tree."""
        by_forest: dict[int, tuple[_Forest, list[int], list[int]]] = {}
        for i, source in enumerate(sources):
            if source is not None:
                _, tree_list, node_list = by_forest.setdefault(id(source[0]), (source[0], [], []))
                tree_list.append(i)
                node_list.append(source[1])
        rows = (
            "node_value",
            "node_exact",
            "node_length",
            "legal",
            "prior",
            "visits",
            "value_sum",
            "exact",
            "length",
        )
        for forest, tree_list, node_list in by_forest.values():
            trees, src = np.array(tree_list, np.int64), np.array(node_list, np.int64)
            self.transplanted[trees] = True
            dst = self.roots[trees]
            while len(src):  # one level of the kept subtrees; `trees` stays sorted
                for name in rows:
                    getattr(self, name)[dst] = getattr(forest, name)[src]
                # what expanding did when the node was made (a StateTree keeps its children)
                self.tree.expand(dst)
                row, action = np.nonzero(forest.child[src] >= 0)
                owner = trees[row]
                _, first, count = np.unique(owner, return_index=True, return_counts=True)
                slot = self.used[owner] + np.arange(len(owner)) - np.repeat(first, count)
                fits = slot < self.capacity
                row, action, owner, slot = row[fits], action[fits], owner[fits], slot[fits]
                made = owner * self.capacity + slot
                np.add.at(self.used, owner, 1)
                self.child[dst[row], action] = made
                self.tree.add_children(dst[row], action, made)
                trees, src, dst = owner, forest.child[src[row], action].astype(np.int64), made
        self.kept = self.visits[self.roots].sum(1).astype(np.int64)

    # ---- steps ----------------------------------------------------------------------------------
    def _select(self, at: np.ndarray) -> np.ndarray:
        """The PUCT edge at each node of `at` (unproven nodes, so some edge is selectable)."""
        cfg = self.config
        n = self.visits[at]
        w = self.value_sum[at]
        exact = self.exact[at]
        prior = self.prior[at]
        total = n.sum(1)
        first_play = (self.node_value[at] + w.sum(1)) / (1 + total)
        if cfg.fpu_reduction:
            first_play = first_play - cfg.fpu_reduction * np.sqrt(np.where(n > 0, prior, 0.0).sum(1))
        q = edge_values(n, w, exact, first_play[:, None])
        u = cfg.c_puct * prior * np.sqrt(1 + total)[:, None] / (1 + n)
        selectable = self.legal[at] & ~(exact == -1)
        score = np.where(selectable, q + u, -np.inf)
        if cfg.forced_playouts:
            # at a root, a move short of its forced visits goes first, the furthest short first
            short = forced_visits(prior, total, cfg.forced_playouts) - n
            due = selectable & (short > 0) & (at % self.capacity == 0)[:, None]
            score = np.where(due.any(1)[:, None], np.where(due, short, -np.inf), score)
        return score.argmax(1)

    def _plan_halving(self) -> None:
        """Gumbel's noise at every root, when `root_noise` is on, and each root's halving plan
        for min(m, legal moves) considered moves."""
        legal = self.legal[self.roots]
        if self.config.root_noise:
            self.noise = np.where(legal, self.rng.gumbel(size=legal.shape), 0.0)
        considered = np.minimum(self.config.considered_actions, legal.sum(1))
        plans = {m: halving_plan(int(m), self.config.simulations) for m in np.unique(considered)}
        self.plan = np.stack([plans[m] for m in considered])

    def _logits(self, trees: np.ndarray) -> np.ndarray:
        """Log priors (the net's, without noise) at the roots of `trees`; -inf where illegal."""
        prior = np.maximum(self.root_prior[trees], np.finfo(np.float64).tiny)
        return np.where(self.legal[self.roots[trees]], np.log(prior), -np.inf)

    def _sigma(self, trees: np.ndarray) -> np.ndarray:
        """Gumbel's sigma(completed Q) for every move at the roots of `trees`."""
        roots = self.roots[trees]
        n = self.visits[roots].astype(np.float64)
        q = edge_values(n, self.value_sum[roots], self.exact[roots], np.nan)
        legal = self.legal[roots]
        seen = legal & ~np.isnan(q)
        prior = self.root_prior[trees]
        mass = np.where(seen, prior, 0.0).sum(1)
        seen_mean = np.where(seen, prior * np.nan_to_num(q), 0.0).sum(1) / np.maximum(mass, 1e-12)
        total = n.sum(1)
        mixed = (self.node_value[roots] + total * seen_mean) / (1 + total)
        completed = np.where(seen, q, mixed[:, None])
        low = np.where(legal, completed, np.inf).min(1, keepdims=True)
        high = np.where(legal, completed, -np.inf).max(1, keepdims=True)
        scaled = (completed - low) / np.maximum(high - low, 1e-8)
        cfg = self.config
        return (cfg.c_visit + n.max(1, keepdims=True)) * cfg.c_scale * np.where(legal, scaled, 0.0)

    def _select_root(self, trees: np.ndarray) -> np.ndarray:
        """Gumbel's root move for the next simulation of each of `trees`: the best
        g + logit + sigma(Q) among the moves whose visits are what the halving plan says."""
        roots = self.roots[trees]
        visits = self.visits[roots]
        step = visits.sum(1)
        due = visits == self.plan[trees, step][:, None]
        legal = self.legal[roots]
        score = self.noise[trees] + self._logits(trees) + self._sigma(trees)
        return np.where(legal & due, score, -np.inf).argmax(1)

    def _add_children(self, trees: np.ndarray, parents: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """Create the nodes reached by playing `edges` at `parents` (one per tree)."""
        made = trees * self.capacity + self.used[trees]
        self.used[trees] += 1
        self.child[parents, edges] = made
        self.tree.add_children(parents, edges, made)
        return made

    def _expand(self, nodes: np.ndarray) -> None:
        """Legal moves and the edges the game's tree already knows exactly; settle what that
        proves."""
        if not len(nodes):
            return
        legal, exact, length = self.tree.expand(nodes)
        self.legal[nodes] = legal
        self.exact[nodes] = exact
        self.length[nodes] = length
        self._settle(nodes)

    def _settle(self, nodes: np.ndarray) -> np.ndarray:
        """Mark the nodes whose edges prove them; returns which of `nodes` are proven now."""
        exact, legal, length = self.exact[nodes], self.legal[nodes], self.length[nodes].astype(np.int64)
        wins = legal & (exact == 1)
        known = ~legal | ~np.isnan(exact)
        won = wins.any(1)
        proven = won | known.all(1)
        best = np.where(legal, np.nan_to_num(exact, nan=-2.0), -2.0).max(1)
        value = np.where(won, 1.0, best)
        at_best = legal & (exact == value[:, None])
        shortest = np.where(at_best, length, np.iinfo(np.int64).max).min(1)
        longest = np.where(at_best, length, 0).max(1)
        done = nodes[proven]
        self.node_exact[done] = value[proven]
        self.node_length[done] = np.where(won, shortest, longest)[proven]
        return proven

    def _probe(self, nodes: np.ndarray) -> None:
        """Settle unproven `nodes` deep enough for the solver, where it finishes within budget.

        The solver's weak result (win, draw or loss) carries no length, so the proof's length is
        the most the game can still last: a bound, as lengths are everywhere (module docstring).
        Roots are never probed, so a proven root always has proven edges to choose from."""
        if self.solver is None:
            return
        nodes = nodes[np.isnan(self.node_exact[nodes])]
        if not len(nodes):
            return
        value, length = self.tree.probe(nodes, self.solver, self.config.probe_from, self.config.probe_nodes)
        done = ~np.isnan(value)
        self.node_exact[nodes[done]] = value[done]
        self.node_length[nodes[done]] = length[done]

    @torch.no_grad()
    def _evaluate(self, nodes: np.ndarray) -> None:
        """One network forward for all of `nodes`: priors and values."""
        if not len(nodes):
            return
        probs, value = self.net.evaluate(self.tree.batch(nodes, self.device))
        self.prior[nodes] = tempered(probs.cpu().numpy(), self.config.prior_temperature)
        self.node_value[nodes] = value.double().cpu().numpy()

    def _add_root_noise(self) -> None:
        cfg = self.config
        for root in self.roots:
            legal = self.legal[root]
            noise = self.rng.dirichlet(np.full(int(legal.sum()), cfg.dirichlet_alpha))
            mixed = self.prior[root].copy()
            mixed[legal] = (1 - cfg.noise_fraction) * mixed[legal] + cfg.noise_fraction * noise
            self.prior[root] = mixed

    def _backup(
        self, nodes: np.ndarray, edges: np.ndarray, depth: np.ndarray, leaf_value: np.ndarray
    ) -> None:
        """Add each simulation's value to every edge on its path, from the view of the player
        to move at that edge's node: the sign flips wherever the mover differs from the mover at
        the path's last node (every ply in Connect Four, not after a Dots and Boxes capture)."""
        rows = np.arange(len(depth))
        last_mover = self.tree.to_move(nodes[rows, depth - 1])
        for d in range(nodes.shape[1]):
            on = depth > d
            r = rows[on]
            sign = np.where(self.tree.to_move(nodes[r, d]) == last_mover[on], 1.0, -1.0)
            self.visits[nodes[r, d], edges[r, d]] += 1
            self.value_sum[nodes[r, d], edges[r, d]] += sign * leaf_value[on]

    def _propagate(self, nodes: np.ndarray, edges: np.ndarray, depth: np.ndarray, proven: np.ndarray) -> None:
        """Carry newly proven leaves up their paths while the parents become proven too."""
        rows = np.arange(len(depth))
        d = depth - 1
        child = proven
        while len(rows):
            parent, edge = nodes[rows, d], edges[rows, d]
            same = self.tree.to_move(parent) == self.tree.to_move(child)
            self.exact[parent, edge] = np.where(same, self.node_exact[child], -self.node_exact[child])
            self.length[parent, edge] = 1 + self.node_length[child]
            settled = self._settle(parent) & (d > 0)
            rows, d, child = rows[settled], d[settled] - 1, parent[settled]

    # ---- results --------------------------------------------------------------------------------
    def results(self) -> dict[str, np.ndarray]:
        roots = self.roots
        visits = self.visits[roots]
        exact, legal, length = self.exact[roots], self.legal[roots], self.length[roots].astype(np.int64)
        proven = self.node_exact[roots]
        prior = self.root_prior
        is_proven = ~np.isnan(proven)
        # proven root: the proof's best moves, the shortest win or the longest loss; ties by visits
        at_best = legal & (exact == proven[:, None])
        want_short = (proven == 1)[:, None]
        key = np.where(want_short, -length, length) * 1e6 + visits + 0.5 * prior
        proven_choice = np.where(at_best, key, -np.inf).argmax(1)
        allowed = legal & ~(exact == -1)
        counts = np.where(allowed, visits, 0).astype(np.float64)
        if self.gumbel:
            # unproven root: the best-scoring move among the most visited (halving's survivor)
            trees = np.arange(self.trees)
            score = self._logits(trees) + self._sigma(trees)
            # softmax over the allowed moves; a row with none (a proven root) plays its proof
            top = np.where(allowed, score, -np.inf).max(1, keepdims=True)
            improved = np.exp(np.where(allowed, score - np.where(np.isfinite(top), top, 0.0), -np.inf))
            basis = improved / np.maximum(improved.sum(1, keepdims=True), np.finfo(np.float64).tiny)
            survivor = allowed & (counts == counts.max(1, keepdims=True))
            choice = np.where(survivor, score + self.noise, -np.inf).argmax(1)
        else:
            # unproven root: the most visited move that is not a proven loss, ties by prior
            basis = counts
            choice = np.where(allowed, counts + 0.5 * prior, -np.inf).argmax(1)
            if self.config.forced_playouts:  # the target without the forced visits
                q, cfg = edge_values(visits, self.value_sum[roots], exact, 0.0), self.config
                basis = pruned_visits(visits, q, self.prior[roots], allowed, cfg.c_puct, cfg.forced_playouts)
        if self.config.temperature > 0:
            for i in np.flatnonzero(~is_proven & (counts.sum(1) > 0)):
                weights = basis[i] ** (1.0 / self.config.temperature)
                choice[i] = self.rng.choice(len(weights), p=weights / weights.sum())
        columns = np.where(is_proven, proven_choice, choice)
        one_hot = np.eye(self.legal.shape[1])[columns]
        sums = basis.sum(1, keepdims=True)
        probs = np.where(
            is_proven[:, None] | (counts.sum(1, keepdims=True) == 0),
            one_hot,
            basis / np.maximum(sums, 1e-300),
        )
        total = visits.sum(1)
        mean = (self.node_value[roots] + self.value_sum[roots].sum(1)) / (1 + total)
        return {
            "visits": visits,
            "probs": probs,
            "columns": columns,
            "values": np.where(is_proven, proven, mean),
            "proven": proven,
            "lengths": np.where(is_proven, self.node_length[roots], 0),
            "move_proven": np.where(legal, exact, np.nan),
            "simulations": total - self.kept,
            "priors": prior,
            "net_values": self.node_value[roots].copy(),
        }
