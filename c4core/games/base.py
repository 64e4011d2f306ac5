"""The game interface: what an algorithm may ask of a game, after OpenSpiel's game and state API.

A game is a description (`Game`) plus two views of its positions: a scalar `State` for serving,
the app and tests, and a `BatchState` that steps thousands of games at once as tensors for
self-play and matches. Algorithms (players, the net, search, matches, learners) use only what
is written here, so games never import algorithms and an algorithm works for every game.

Every game is two-player and zero-sum. Players are numbered 0 (moves first) and 1, and the
player to move is always asked (`State.current_player`, `BatchState.to_move`), never derived
from the move number: in Dots and Boxes a player who completes a box moves again.

`tests/test_games.py` is the contract's conformance test; every registered game passes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # torch is imported where it is used, so a rules-only command starts fast
    import numpy as np
    import torch

    from c4core.games.players import Player


@dataclass(frozen=True)
class Symmetry:
    """One symmetry of a game: a relabelling of board cells and of actions that maps every
    game to an equally good game (Connect Four's left-right mirror; a square board's rotations
    and reflections)."""

    name: str
    """Short name: "identity", "mirror", "rot90", ..."""
    cells: tuple[int, ...]
    """Permutation of the observation's board cells, flattened row-major over its last two
    dimensions: cell ``i`` of the transformed observation is cell ``cells[i]`` of the original."""
    actions: tuple[int, ...]
    """Permutation of actions: action ``a`` of a game is action ``actions[a]`` of its image."""

    def observation(self, obs: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        """The image of observations ``[..., H, W]`` (numpy or torch) under this symmetry."""
        flat = obs.reshape(*obs.shape[:-2], obs.shape[-2] * obs.shape[-1])  # an empty batch too
        return flat[..., list(self.cells)].reshape(obs.shape)

    def action(self, actions: torch.Tensor) -> torch.Tensor:
        """The images of a tensor of action indices: action ``a`` becomes ``actions[a]``."""
        return actions.new_tensor(self.actions)[actions]

    def policy(self, probs: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        """The image of per-action values ``[..., num_actions]``: the value of action ``a`` moves
        to action ``actions[a]``."""
        inverse = [0] * len(self.actions)
        for a, b in enumerate(self.actions):
            inverse[b] = a
        return probs[..., inverse]


@runtime_checkable
class State(Protocol):
    """One position, immutable: `apply` returns the next state and leaves this one as it was."""

    @property
    def is_terminal(self) -> bool:
        """Whether the game is over."""
        ...

    def legal_actions(self) -> list[int]:
        """The legal actions in increasing order; empty exactly when the game is over."""
        ...

    def apply(self, action: int) -> State:
        """The state after the player to move takes `action`; `ValueError` when it is illegal
        or the game is over."""
        ...

    def current_player(self) -> int:
        """The player to move, 0 or 1 (not meaningful once the game is over)."""
        ...

    @property
    def ply(self) -> int:
        """Moves played since the initial state (Connect Four's stones, Dots and Boxes' lines)."""
        ...

    def returns(self) -> tuple[float, float]:
        """Each player's result, +1 win, 0 draw, -1 loss, summing to 0; (0, 0) before the end."""
        ...

    def observation(self) -> np.ndarray:
        """The network's input for this state from the mover's side: float32
        `Game.observation_shape`."""
        ...

    def key(self) -> int:
        """A non-negative int below 2**63 naming the position from the mover's side: two states
        with one key have the same legal actions and the same future for whoever moves, so a
        table of values (`c4core.learners.tabular`) can be indexed by it."""
        ...


@runtime_checkable
class BatchState(Protocol):
    """A batch of games stepped together as tensors, on any torch device. Finished games ignore
    further actions, so callers step the whole batch at once."""

    done: torch.Tensor
    """[n] bool: finished games."""
    device: torch.device
    """Where the tensors live."""

    def __len__(self) -> int: ...

    def legal(self) -> torch.Tensor:
        """[n, num_actions] bool: the legal actions, all False for finished games."""
        ...

    def play(self, actions: torch.Tensor, where: torch.Tensor | None = None) -> None:
        """The player to move takes `actions` [n] in every unfinished game (of those `where`
        marks, [n] bool, when given); `ValueError` when any such action is illegal, so no player
        can sneak an illegal move into a record."""
        ...

    def to_move(self) -> torch.Tensor:
        """[n] int64: the player to move in each game, 0 or 1."""
        ...

    def returns(self) -> torch.Tensor:
        """[n, 2] float32: each player's result as in `State.returns`; zeros for unfinished games."""
        ...

    def observation(self) -> torch.Tensor:
        """[n, *observation_shape] float32: the network input from each mover's side."""
        ...

    def keys(self) -> torch.Tensor:
        """[n] int64: each game's `State.key`."""
        ...

    def select(self, idx: torch.Tensor) -> BatchState:
        """A new batch holding copies of the games at `idx`."""
        ...

    def state(self, i: int) -> State:
        """Game `i` as a scalar `State`."""
        ...


class SearchTree(Protocol):
    """Optional fast path: a game's own storage for the states of the batched search's nodes
    (`Game.search_tree`). Nodes are ints below the `total` the tree was made for; the search
    keeps the edge statistics itself and asks the tree only about states."""

    def place(self, nodes: np.ndarray, batch: BatchState, games: np.ndarray) -> None:
        """Store the games at indices `games` of `batch` at `nodes` (the roots)."""
        ...

    def to_move(self, nodes: np.ndarray) -> np.ndarray:
        """The player to move at each of `nodes`."""
        ...

    def add_children(self, parents: np.ndarray, actions: np.ndarray, children: np.ndarray) -> None:
        """Store at `children` the states reached by playing `actions` at `parents`."""
        ...

    def expand(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each of `nodes`: legal actions [k, num_actions] bool; each action's exact value
        for the node's mover where the tree already knows it (+1, 0, -1; NaN elsewhere), at
        least for the actions that end the game; and plies to the end under that value."""
        ...

    def batch(self, nodes: np.ndarray, device: torch.device) -> BatchState:
        """The states at `nodes` as a batch, for one network forward."""
        ...

    def probe(
        self, nodes: np.ndarray, solver: ExactSolver, from_ply: int, max_nodes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact values of `nodes` of at least `from_ply` moves for their movers from the game's
        exact `solver` (`max_nodes` each), NaN where it does not settle them or they are earlier,
        and a bound on the plies to the end."""
        ...


class ExactSolver(Protocol):
    """Optional: a game's exact solver (`Game.exact_solver`). The learners' search probes it at
    its leaves (`SearchConfig.probe_from`), the AlphaZero-style learner rescores its targets with
    it (`AlphaZeroConfig.solve_from`), and the game's `perfect` bot plays by it.

    A solver may also offer ``move_values(boards, margin=False, max_nodes=None)``: every legal
    move's exact value for each of a `BatchState`'s movers at once, as `c4core.games.move_values`
    computes them move by move, so that labelling positions (`AlphaZeroConfig.solver_positions`
    and `solver_policy`) takes no solve per move."""

    def outcome(self, state: State, max_nodes: int | None = None) -> int | None:
        """The result of an unfinished `state` for the player to move when both sides play
        perfectly from there: +1 win, 0 draw, -1 loss; None when it is not settled within
        `max_nodes` nodes of search (None: the solver's own budget). A solver that looks its
        values up settles every state."""
        ...


class Suite(Protocol):
    """Optional: a game's solver-labelled positions, on which a player is scored by the move it
    picks in each (`Game.suite`). The league scores every main-agent snapshot on its game's
    suite, logs the metrics on its generation run and the headline ones as version tags.

    A suite a game makes from the league's seed may also offer ``holds(states) -> [n] bool``:
    whether each of a `BatchState`'s positions is one of its own or an image of one under the
    game's symmetries, so that the learner which draws random positions to label by the solver
    (`AlphaZeroConfig.solver_positions`) keeps the suite held out (`c4core.games.held_out`)."""

    name: str
    """What the suite is, for messages and the version tag ``suite_file``: a file's name, or the
    board and seed it was made from."""
    tags: Mapping[str, str]
    """The metrics of `score` that also become version tags, each with its tag key, the count
    (``suite/counted``) last: its tag marks the scoring done."""

    def score(self, player: Player) -> dict[str, float]:
        """The ``suite/*`` metrics of `player` on the suite: rates in 0..1 (NaN for an empty
        bucket) and ``suite/counted``, the positions that count."""
        ...


@runtime_checkable
class Game(Protocol):
    """A game's description, and the factory of its states and of its scripted bots.

    A game may also offer, and algorithms do without when it does not (`c4core.games.solvable`
    and `exact_solver` look them up):

    - ``solvable: bool`` and ``exact_solver(max_nodes=None) -> ExactSolver``: an exact solver,
      and whether it reaches this board (`exact_solver` raises `ValueError` when not);
    - ``exact_from: int``: the first ply from which that solver settles positions cheaply, where
      an endgame search reaches only the last moves (0, or absent: every ply);
    - ``position_player: Player | None``: the scripted player whose moves draw the positions a
      learner asks that solver to label, as its suite draws them (None, or absent: uniformly
      random moves);
    - ``suite(path=None, seed=0) -> Suite | None``: its solver-labelled suite, read from the file
      `path` for a game whose suites are files (Connect Four; None: no suite), made from `seed`
      for one that makes its own (Dots and Boxes, on the boards its solver labels; None
      elsewhere); `ValueError` for a file it cannot read or a game that reads none;
    - ``has_margin: bool``: whether its results also come graded by how much they were won
      by: its states' and batches' ``margin_returns()`` (as `State.returns`, each player's
      result in -1..1 with the sign of `returns`: Dots and Boxes' box difference over its
      boxes), and its exact solver's ``margin_value(state, max_nodes=None)`` (perfect play's
      margin return from `state` for the player to move). A net whose value head learns them
      (`NetConfig.value_target`) trains and searches on them; matches and Elo use `returns`;
    - ``search_tree(total) -> SearchTree``: its own storage for the batched search's nodes
      (for outcome values: a search on margin returns keeps its nodes as `State` objects);
    - ``kernel_match(a, b, pairs, seed, opening_plies)``: a match between two of its scripted
      bots played in compiled code (A's outcomes of `pairs` colour-swapped game pairs, A first
      in the even games; None when it cannot play those two)."""

    name: str
    """The game's registry name, e.g. "connect4" or "dots_and_boxes"."""
    num_actions: int
    """Number of distinct actions; an action is an int in ``range(num_actions)``."""
    observation_shape: tuple[int, int, int]
    """(planes, height, width) of one observation."""
    max_game_length: int
    """The most actions a game can last."""

    @property
    def params(self) -> Mapping[str, int]:
        """The game's parameters (Connect Four: rows, cols, connect); with `name` they build it
        again through `c4core.games.load`."""
        ...

    @property
    def variant(self) -> str:
        """A name for the game and its parameters together, e.g. "connect4" (the standard
        board) or "connect3-4x4": champions and ratings never mix variants."""
        ...

    @property
    def title(self) -> str:
        """The game and its board as people write them, for messages and model cards, e.g.
        "Connect Four" (the standard board) or "Connect-3 on 4x4"."""
        ...

    @property
    def symmetries(self) -> tuple[Symmetry, ...]:
        """Every symmetry of the game, the identity first."""
        ...

    def new_state(self) -> State:
        """The initial state."""
        ...

    def new_batch(self, n: int, device: str | torch.device = "cpu") -> BatchState:
        """`n` games at the initial state."""
        ...

    def batch_of(self, states: Sequence[State], device: str | torch.device = "cpu") -> BatchState:
        """A batch holding the given states."""
        ...

    def parse_action(self, text: str) -> int:
        """An action typed in the game's move notation; `ValueError` saying what is expected."""
        ...

    def format_action(self, action: int) -> str:
        """An action in the game's move notation (the inverse of `parse_action`)."""
        ...

    def state_from_moves(self, moves: str) -> State:
        """Replay a move string (`moves_string`'s format) from the initial state; `ValueError`
        naming the first bad or illegal move."""
        ...

    def moves_string(self, actions: Sequence[int]) -> str:
        """A sequence of actions as one move string."""
        ...

    def bots(self) -> Mapping[str, Callable[[], Player]]:
        """The game's scripted players by name (`c4core.games.players`), ``random`` first and
        ``perfect`` where the game has an exact solver; each call of a value makes a fresh one."""
        ...
