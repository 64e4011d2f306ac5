"""Every config of the library and the league profiles: frozen dataclasses, no torch, no numba.

A `LeagueConfig` holds the whole recipe of a league: the network (`NetConfig`), both learners
(`PPOConfig`, `AlphaZeroConfig`, whose self-play search is a `SearchConfig`), matches and the
board, which it stores once (the net is built for the league's game). Configs are logged whole
as MLflow params, and `LeagueConfig.training_hash` keys every resumable record by one rule
(`training_key`): every field, minus one explicit exclusion set (`unkeyed`), minus fields added
since the key's schema that hold their default (`NEW`), plus the schema's version (`KEY_SCHEMA`). Reading
a config, as the DAG's form check and the report do, imports nothing heavy. Member names
(`snapshot_name`, `generation_of`, `BOT_NAMES`) live here too, beside the config they follow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from types import UnionType
from typing import Any, get_args, get_origin, get_type_hints

from c4core.games import VARIANTS, Game, exact_from, has_margin, load, solvable

KEY_SCHEMA = 2
"""The version of the training key's rule (`training_key`), hashed with the fields: a new rule
re-keys every league once. Schema 2 replaced the three mechanisms before it (fields hashed only
when changed, each config's inert settings, and the identity dict) with this one rule."""

NEW = {"key": "new"}
"""Field metadata, ``field(default=..., metadata=NEW)``, for a field added after `KEY_SCHEMA` was
set: it enters the training key only when it differs from its default, so adding it re-keys no
league. Never change such a field's default: leagues that kept it would then resume records made
under the old value. A new `KEY_SCHEMA` may drop the marks."""


LEAGUE_BOTS: Mapping[str, tuple[str, ...]] = {
    "connect4": ("random", "tactical"),
    "dots_and_boxes": ("random", "greedy"),
}
"""Each game's scripted league members (`Game.bots`), which anchor its ratings: ``random``
(pinned at 0 Elo) and the game's baseline bot, the bar the closing summary scores a champion
against and that the PPO learner trains against."""
LEAGUE_GAMES = tuple(LEAGUE_BOTS)
"""The games a league can train on, each on any board of its own (`c4core.games`), its named
variants included."""
BOT_NAMES = tuple(dict.fromkeys(bot for bots in LEAGUE_BOTS.values() for bot in bots))
"""Every scripted member's name, whatever the game: a member so named is a bot."""
NET_LEARNERS = ("ppo", "alphazero")
"""The learners that train a network."""
TABULAR_LEARNERS = ("q-learning", "sarsa")
"""The learners that fit a table of every position (`c4core.learners.tabular`)."""
MAIN_LEARNERS = ("ppo", *TABULAR_LEARNERS)
"""The learners a league's main agent can be given (`LeagueConfig.main_learner`)."""
TABULAR_MOVES = 16
"""The longest game, in moves, whose positions are enumerated (in Python) for a table
(`c4core.learners.tabular`) and for exact NashConv (`c4core.evaluation.exploitability`): Connect-3
on 4x4 (16 cells, 23,930 positions in play) and Dots and Boxes on 2x2 boxes (12 lines) are such
games."""

LEAGUE_VARIANTS = tuple(v for v, game in VARIANTS.items() if game.name in LEAGUE_GAMES)
"""The named variants (`c4core.games.VARIANTS`) a league can be asked for by one name: the
choices of the trigger form's Game field."""

MAIN = "main"
ROLES = (MAIN, "main-exploiter", "league-exploiter")
"""The league's learners, after AlphaStar's: the main agent and its two kinds of exploiter."""
ROLE_SUFFIX = {MAIN: "", "main-exploiter": "-me", "league-exploiter": "-le"}
"""What a role's snapshot names carry after ``gen<g>`` (`snapshot_name`)."""


ROOT_RULES = ("puct", "gumbel")
"""How a search's root spends its simulations (`SearchConfig.root`)."""


@dataclass(frozen=True)
class SearchConfig:
    """Search settings; the defaults are for evaluation (noise off, greedy move choice)."""

    simulations: int = 256
    """Simulations per position (the root's expansion is not counted)."""
    c_puct: float = 1.5
    """Exploration constant of the PUCT rule (not tuned; AlphaZero used 1.25 near the root)."""
    root_noise: bool = False
    """Mix Dirichlet noise into the root priors: self-play training only, never evaluation."""
    dirichlet_alpha: float = 1.0
    """Dirichlet concentration (AlphaZero scaled it as about 10 / typical number of moves)."""
    noise_fraction: float = 0.25
    """Weight of the noise in the root priors when `root_noise` is on."""
    temperature: float = 0.0
    """0 plays the most visited move; above 0 samples in proportion to visits ** (1 / temperature)."""
    max_trees: int = 1024
    """Trees searched together; a larger batch is searched in chunks of this size to bound memory."""
    probe_from: int = 0
    """Probe the game's exact solver (`Game.exact_solver`) at every new leaf with at least this many
    moves played (Connect Four's stones, Dots and Boxes' lines); 0 never. A leaf it settles within
    `probe_nodes` is proven, as an endgame tablebase settles a chess engine's leaves, and
    MCTS-Solver carries the proof up. This is search plus an exact oracle, not the network's own
    strength: report it apart from plain search. A probe that runs out of budget on a cold table may
    finish on a warm one, so a probing search depends on what its solver has seen before, as an
    engine's does on its hash table."""
    probe_nodes: int = 20_000
    """Node budget of one probe: a leaf that needs more is left to the network."""
    root: str = field(default="puct", metadata=NEW)
    """How the root spends its simulations: ``"puct"`` (AlphaZero's rule, as at every other
    node), or ``"gumbel"``, Gumbel AlphaZero's sequential halving (Danihelka et al., "Policy
    improvement by planning with Gumbel", ICLR 2022). With ``"gumbel"`` the root samples
    `considered_actions` moves without replacement by Gumbel noise plus the log priors (the
    noise is `root_noise`'s, in place of Dirichlet's; without it the top priors), halves them
    by their noisy scores plus `sigma(Q)` until one remains, plays it, and its policy target is
    the improved policy ``softmax(log prior + sigma(completed Q))`` rather than the visits. Below
    the root the search is PUCT either way."""
    considered_actions: int = field(default=16, metadata=NEW)
    """Gumbel's m: moves the root considers at most (all, for any board with 16 or fewer)."""
    c_visit: float = field(default=50.0, metadata=NEW)
    """Gumbel's sigma(q) = (c_visit + most root visits) * c_scale * q, with the root's completed
    Q rescaled to 0..1 over its legal moves (the paper's and mctx's 50 and 0.1)."""
    c_scale: float = field(default=0.1, metadata=NEW)
    """See `c_visit`."""
    fpu_reduction: float = field(default=0.0, metadata=NEW)
    """First-play urgency: an unvisited edge's value is the node's mean value minus this times the
    square root of the prior mass of the node's visited edges (Leela Chess Zero's and KataGo's
    reduction), so that once the likely moves are searched an unlikely one must look better
    than the node to be tried; 0 takes the node's mean, as AlphaZero's parent-value rule does.
    Every PUCT node, the root too; Gumbel's root completes its unvisited moves its own way."""
    prior_temperature: float = field(default=1.0, metadata=NEW)
    """The network's priors at every node become ``p ** (1 / T)``, renormalised over the legal
    moves, before any root noise (AlphaZero.jl's ``prior_temperature``): above 1 flattens them,
    so the search tries more moves, below 1 sharpens them; 1 leaves them as they are. Gumbel's
    root takes its logits from the tempered priors."""
    forced_playouts: float = field(default=0.0, metadata=NEW)
    """KataGo's forced playouts and policy target pruning (Wu, "Accelerating Self-Play Learning
    in Go", 2019), PUCT's root only, for self-play: a root move whose prior (after root noise) is
    P gets a simulation whenever it has fewer than ``sqrt(k * P * root visits)`` visits, with k
    this value (KataGo's 2), so noise makes every move explored; then the policy target takes
    from each move but the most visited the visits forcing gave it beyond what PUCT alone would
    have, and drops moves left with one visit, so the noise's visits do not teach the policy.
    The most visited move is still the one chosen, and the root value is the search's; a move
    sampled in proportion to the target (`temperature`) follows the pruned one. 0 is off."""

    def __post_init__(self) -> None:
        if type(self.simulations) is not int or self.simulations < 1:
            raise ValueError(f"simulations must be a whole number of at least 1, got {self.simulations!r}")
        if not self.c_puct > 0:
            raise ValueError(f"c_puct must be positive, got {self.c_puct}")
        if not self.dirichlet_alpha > 0 or not 0 <= self.noise_fraction <= 1:
            raise ValueError("dirichlet_alpha must be positive and noise_fraction within 0..1")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be 0 or more, got {self.temperature}")
        if self.max_trees < 1:
            raise ValueError(f"max_trees must be at least 1, got {self.max_trees}")
        if type(self.probe_from) is not int or self.probe_from < 0:
            raise ValueError(f"probe_from must be 0 (never) or a number of moves, got {self.probe_from!r}")
        if self.probe_nodes < 1:
            raise ValueError(f"probe_nodes must be at least 1, got {self.probe_nodes}")
        if self.root not in ROOT_RULES:
            raise ValueError(f"root must be one of {', '.join(ROOT_RULES)}, got {self.root!r}")
        if type(self.considered_actions) is not int or self.considered_actions < 1:
            raise ValueError(
                f"considered_actions must be a whole number of at least 1, got {self.considered_actions!r}"
            )
        if not (self.c_visit > 0 and self.c_scale > 0):
            raise ValueError(f"c_visit and c_scale must be positive, got {self.c_visit} and {self.c_scale}")
        if not self.fpu_reduction >= 0:
            raise ValueError(f"fpu_reduction must be 0 or more, got {self.fpu_reduction}")
        if not self.prior_temperature > 0:
            raise ValueError(f"prior_temperature must be positive, got {self.prior_temperature}")
        if not self.forced_playouts >= 0:
            raise ValueError(f"forced_playouts must be 0 (off) or more, got {self.forced_playouts}")
        if self.forced_playouts and self.root == "gumbel":
            raise ValueError("forced_playouts is PUCT's root: Gumbel's root plans its own visits")


PRECISIONS = ("float32", "bfloat16")
"""What a net's trunk can compute in (`NetConfig.precision`)."""

VALUE_TARGETS = ("outcome", "margin")
"""What a net's value head can learn (`NetConfig.value_target`)."""

AUTO_PRECISION = "auto"
"""The precision a user asks for by default (`league_config`): the profile's, except that a
CPU without native bfloat16 computes a bfloat16 profile in float32."""


@dataclass(frozen=True)
class NetConfig:
    """Network shape, and what its trunk computes in. Its input and output sizes are its game's
    (`Game.observation_shape`, `Game.num_actions`): the net is built for a game
    (`c4core.learners.net.PolicyValueNet`), so the board is stored once, in the league's config."""

    blocks: int = 2
    """Residual blocks (the reference uses 4)."""
    channels: int = 32
    """Convolution channels (the reference uses 64)."""
    value_hidden: int = 64
    """Width of the value head's hidden layer."""
    threat_planes: bool = True
    """See both sides' winning cells as input (False blanks Connect Four's planes 3 and 4, for
    ablations)."""
    precision: str = "float32"
    """What the convolutional trunk computes in: ``"float32"``, or ``"bfloat16"``, mixed
    precision through `torch.autocast`, in channels-last layout (the convolutions in bfloat16;
    the weights, the heads, the losses and the optimizer in float32). It travels with every
    snapshot, so its training, matches, search and serving all compute alike. On a CPU with
    AMX or AVX-512 BF16 the bfloat16 trunk made a PPO iteration of the cpu recipe about 3x
    faster (docs/BENCHMARKS.md); elsewhere it is emulated, and slow (`league_config`)."""

    value_target: str = field(default="outcome", metadata=NEW)
    """What the value head learns, and so what the search backs up and proves: ``"outcome"``,
    the game's result (win +1, draw 0, loss -1), or ``"margin"``, the result graded by how much
    it was won by, for a game that has one (`c4core.games.has_margin`: Dots and Boxes' box
    difference over its boxes), so that of two winning moves the net prefers the one that wins
    more, as the solver's value does. Both learners train on it (PPO's reward, the
    AlphaZero-style learner's outcome z, search values and exact rescoring), and it travels
    with every snapshot, so its search in matches and serving backs up the same values. Matches
    and Elo score the outcome either way."""

    value_bins: int = field(default=0, metadata=NEW)
    """0 for a scalar value head (tanh, fitted by squared error), or the number of values, evenly
    spaced over -1..1, of a categorical head (as MuZero's and KataGo's score heads): a softmax
    over those values, fitted by cross-entropy to each target split between its two nearest
    values, whose mean is the value the search and PPO see. With the margin as target, 2B + 1
    bins hold a B-box board's every final margin exactly (19 on 3x3 Dots and Boxes), so a
    one-box difference is one bin apart rather than a fraction of a squared error."""

    reply_head: bool = field(default=False, metadata=NEW)
    """Add an auxiliary head that predicts the next decision's policy target: the opponent's
    reply, or the mover's own next move after a Dots and Boxes capture (KataGo's opponent-policy
    head, Wu 2019). Only the AlphaZero-style learner fits it (`AlphaZeroConfig.reply_weight`);
    the search and every player ignore it, and its only effect is through the trunk the two
    heads share. A snapshot without it loads into a net with it, the new head fresh."""

    def __post_init__(self) -> None:
        if self.blocks < 0 or self.channels < 1 or self.value_hidden < 1:
            raise ValueError(f"bad network size: {self}")
        if self.value_bins == 1 or self.value_bins < 0:
            raise ValueError(f"value_bins must be 0 (a scalar head) or at least 2, got {self.value_bins}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown net precision {self.precision!r}: choose from {', '.join(PRECISIONS)}")
        if self.value_target not in VALUE_TARGETS:
            raise ValueError(
                f"unknown value target {self.value_target!r}: choose from {', '.join(VALUE_TARGETS)}"
            )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NetConfig:
        """The config `asdict` wrote; one written before the board was stored once also holds
        the observation's size and the action count (``rows``, ``cols``, ``planes``,
        ``actions``), which its game gives now."""
        return cls(**{k: v for k, v in d.items() if k not in _LEGACY_NET_KEYS})


_LEGACY_NET_KEYS = frozenset({"rows", "cols", "planes", "actions"})


@dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters (names after CleanRL's ppo.py)."""

    iterations: int = 20
    """PPO iterations (collect, then update) per generation."""
    games: int = 512
    """Games collected per iteration, split evenly over the opponents."""
    learning_rate: float = 1e-3
    """Adam step size."""
    update_epochs: int = 4
    """Passes over each iteration's data."""
    minibatch_size: int = 1024
    """Learner decisions per gradient step."""
    clip_coef: float = 0.2
    """PPO ratio clipping."""
    ent_coef: float = 0.01
    """Entropy bonus weight."""
    vf_coef: float = 0.5
    """Value loss weight."""
    gae_lambda: float = 0.9
    """GAE lambda; 1.0 is the plain Monte Carlo return, lower bootstraps more from the value."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    mirror: bool = False
    """Add every decision's images under the game's symmetries (`Game.symmetries`: Connect
    Four's left-right mirror) to the update. Off by default: on Connect Four it learns faster
    early but collapses the policy's entropy later (docs/BENCHMARKS.md)."""
    opening_plies: int = 4
    """Random plies that open every training game, as in league matches: without them a
    sharpening policy keeps replaying a few openings and overfits to them."""
    target_kl: float | None = 0.03
    """Stop an iteration's epochs early once the approximate KL to the old policy passes this."""
    dual_clip: float | None = 3.0
    """Dual-clip PPO (Ye et al. 2020): bound the loss of a negative-advantage decision at this
    ratio. Mirrored decisions are off-policy, and one whose old probability was tiny would
    otherwise get an unbounded ratio and wreck the update."""
    ranks: int = 1
    """Data-parallel processes one PPO learner trains on, each with one torch thread
    (`torch.distributed`, gloo on loopback): each rank plays ``games / ranks`` of the games
    with a random stream of its own, and every gradient step averages over all ranks' decisions,
    so one update still sees every game. Hashed when changed: the games differ with the ranks."""

    def __post_init__(self) -> None:
        if self.iterations < 0 or self.games < 2 or self.minibatch_size < 1:
            raise ValueError(f"bad PPO config: {self}")
        if self.ranks < 1 or self.games // self.ranks < 2:
            raise ValueError(
                f"PPO ranks must be at least 1, each with at least 2 of the {self.games} games, "
                f"got {self.ranks}"
            )
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError("gae_lambda must be within 0..1")


@dataclass(frozen=True)
class TabularConfig:
    """Tabular Q-learning and SARSA hyperparameters per generation (`c4core.learners.tabular`), after
    C3RL's Connect-3 experiment: its ε schedule, with the α and γ it did not state chosen here."""

    iterations: int = 10
    """Iterations per generation: each plays `games` self-play games and records its metrics."""
    games: int = 1000
    """Self-play games per iteration."""
    alpha: float = 0.1
    """Step size: how far one update moves an action's value toward its target."""
    gamma: float = 0.99
    """Discount per move: below 1, of two wins the table prefers the sooner."""
    epsilon_start: float = 0.3
    """Exploration at the league's first game: ε = max(`epsilon_min`, `epsilon_start` (1 - g/G))
    for the league's game g, G being `schedule_games`."""
    epsilon_min: float = 0.02
    """The floor of that schedule."""
    schedule_games: int = 100_000
    """G, the games over which ε falls to its floor (C3RL's 100,000): a fixed span, so a league
    run for more generations replays its first ones unchanged."""
    parallel: int = 64
    """Games stepped at once; the updates of one step to one position and action are averaged."""

    def __post_init__(self) -> None:
        if min(self.iterations, self.games, self.parallel, self.schedule_games) < 1:
            raise ValueError("tabular iterations, games, parallel and schedule_games must be at least 1")
        if not 0.0 < self.alpha <= 1.0 or not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"tabular alpha and gamma must be within (0, 1], got {self.alpha}, {self.gamma}")
        if not 0.0 <= self.epsilon_min <= self.epsilon_start <= 1.0:
            raise ValueError("tabular epsilons need 0 <= epsilon_min <= epsilon_start <= 1")


@dataclass(frozen=True)
class AlphaZeroConfig:
    """Hyperparameters of the AlphaZero-style learner, per generation."""

    iterations: int = 10
    """Self-play-then-update rounds per generation."""
    games: int = 256
    """Self-play games per iteration, all searched together in one batch."""
    search: SearchConfig = field(default_factory=lambda: SearchConfig(simulations=64, root_noise=True))
    """The self-play search: simulations per move, c_puct, root noise (on: AlphaZero's Dirichlet
    noise, concentration about 10 / legal moves), and solver probes at leaves of at least
    `search.probe_from` moves (0 never), so that play from the middle game on follows exact
    results where the solver reaches them and earlier positions learn from outcomes closer to
    perfect play's. Its move choice is greedy (the learner samples early moves itself) and all
    `games` are searched in one batch, whatever `max_trees` says."""
    opening_plies: int = 4
    """Fewest uniformly random plies that open a game (not trained on), so the games vary."""
    opening_plies_max: int = 4
    """Most random opening plies: each game draws its count uniformly from `opening_plies`
    to this, so the net also learns positions that strong play never reaches (the solver
    suites are random walks of 4 to 36 plies; people on the play page wander too)."""
    temperature_plies: int = 8
    """Plies after the opening whose move is sampled in proportion to the policy target (the
    visits, or Gumbel's improved policy); the search's own choice after."""
    q_weight: float = 0.5
    """Weight of the search's root value against the game outcome in unproven value targets."""
    replay_iterations: int = 4
    """Replay window: train on the samples of this many latest iterations."""
    epochs: float = 2.0
    """Gradient steps per iteration = epochs * new samples / batch_size (minibatches drawn from
    the whole window, so a sample is seen about epochs * replay_iterations times)."""
    batch_size: int = 512
    """Samples per gradient step (before `mirror` adds their images)."""
    learning_rate: float = 1e-3
    """Adam step size (of a generation's first iteration, with `learning_rate_final`)."""
    learning_rate_final: float = 0.0
    """Anneal the step size over each generation's iterations, from `learning_rate` at the first
    to this at the last, along a half cosine (Loshchilov and Hutter's SGDR, restarted every
    generation; c4a0 steps its rate down between generations instead); 0 keeps it constant."""
    weight_decay: float = 1e-4
    """L2 penalty (Adam's weight_decay), as AlphaZero regularises its net."""
    merge_duplicates: bool = False
    """Merge the replay window's copies of one position (same observation) into one sample whose
    targets are their means, proven values taking precedence over estimates, before each fit
    (Clausen finds 30-80% duplicates in Connect Four self-play; AlphaZero.jl merges them by
    default). Off: every copy is a sample, so common openings weigh more."""
    average_iterations: int = 0
    """Make the generation's snapshot the mean of the weights after each of its last this many
    iterations (all of them when it has fewer: stochastic weight averaging, Izmailov et al. 2018;
    KataGo's candidates are such averages); 0 or 1 keeps the last iteration's weights. Training
    goes on from the average."""
    mirror: bool = True
    """Add every sample's images under the game's symmetries (`Game.symmetries`: Connect Four's
    left-right mirror) to each minibatch."""
    random_image: bool = field(default=False, metadata=NEW)
    """With `mirror`, put each sample into its minibatch as one of its images, drawn uniformly
    among the game's symmetries (itself included), instead of as all of them, as AlphaGo Zero
    transformed each training position by one random symmetry: the images' variety at one
    image's cost a step (the square's eight images make a step eight times the work)."""
    solve_from: int = 0
    """Rescore self-play with the game's exact solver (`Game.exact_solver`) from this ply on; 0
    never. Decisions at or past it that the solver settles within `solve_nodes` take their exact
    result (win, draw or loss) as value target, and each game's earlier decisions take, as
    their outcome z, the exact result of the game's first settled position instead of how the
    noisy self-play continuation happened to end (Leela Chess Zero rescores its training games
    with endgame tablebases the same way). Openings stay the network's own to learn."""
    solve_nodes: int = 200_000
    """Node budget of one exact solve: a position that needs more keeps its search targets."""
    solver_positions: int = field(default=0, metadata=NEW)
    """Positions the game's exact solver labels (`c4core.learners.alphazero.solver_samples`) that
    each iteration adds to the replay window beside its self-play decisions; 0 none. Each comes
    after a uniformly random count of moves of the game's `position_player` (uniformly random
    moves, but for 4x4 Dots and Boxes' mixed policy), as the solver-labelled suites are drawn,
    though never before the ply from which the solver settles positions cheaply
    (`c4core.games.exact_from`: 4x4's endgame search reaches only the last lines), so the net
    also learns exact values and best moves where self-play seldom goes (the openings its own
    games leave, the lines strong play never draws); its targets are the mover's exact value
    and a uniform policy over the moves of best exact value (of best margin on a game that has
    margins: `c4core.learners.alphazero.policy_by_margin`). Positions of the suite the league
    scores its snapshots on, and their images under the game's symmetries, are never among
    them (`Suite.holds`), and nor are those the solver does not settle within `solve_nodes`.
    They count as new samples for `epochs`, so the fit takes more steps. Data-parallel, rank 0
    labels them: it alone fits."""
    solver_positions_from: int = field(default=0, metadata=NEW)
    """The first ply of the positions `solver_positions` labels; 0: the ply from which the game's
    solver settles positions cheaply (`c4core.games.exact_from`: 20 on 4x4 Dots and Boxes, 0 for
    a table). An earlier ply reaches further into the middle game, at the cost of slower solves
    and of the positions the solver does not settle within `solve_nodes`, which are left out."""
    solver_policy: bool = field(default=False, metadata=NEW)
    """Make the policy target of each self-play decision that the solver rescores (`solve_from`),
    where it settles every move, uniform over the moves of best exact value (of best margin on a
    game that has margins: `alphazero.policy_by_margin`) instead of the search's improved
    policy (and the reply head's target with it): the net learns perfect play's moves on its
    own games' positions, as `solver_positions` teaches them on random ones. Needs
    `solve_from`."""
    league_share: float = 0.0
    """Fraction of each iteration's games the learner plays against league members drawn by
    PFSP (`c4core.league.matchmaking.pfsp_weights`) instead of itself; 0 is pure self-play, as AlphaZero."""
    league_simulations: int = 0
    """How a drawn member plays in those games: 0 samples its raw network's policy; above 0 it
    searches with this many simulations a move (no root noise), as the learner does."""
    evaluation_cache: int = field(default=0, metadata=NEW)
    """Remember up to this many positions' network evaluations during each iteration's self-play
    (`c4core.learners.search.EvaluationCache`), so a position met again, in the same tree,
    another game's tree or the next move's search, costs no forward; 0 off. A hit returns what
    the network returned for it before, which may differ from a fresh forward in its last bits."""
    reuse_tree: bool = field(default=False, metadata=NEW)
    """Start each of the learner's searches from the subtree its game's moves reached since its
    last search (`c4core.learners.search.TreeReuse`), with that subtree's visits, values and
    proofs, and simulate only until the root has `search.simulations` visits: the kept visits
    are evaluations saved, and the policy target counts them. Not with Gumbel's root
    (`SearchConfig.root`), which plans its visits from an unvisited root."""
    reply_weight: float = field(default=0.15, metadata=NEW)
    """Weight of the reply head's cross-entropy in the loss, for a net that has one
    (`NetConfig.reply_head`; KataGo's 0.15). A decision whose next move no search of the learner
    chose (the game's last, or a league member's turn next) adds nothing to it."""
    ranks: int = 1
    """Data-parallel processes the learner trains on, each with one torch thread
    (`c4core.learners.ranks`): each rank plays ``games / ranks`` of an iteration's games with a random
    stream of its own, all ranks' decisions are pooled, and rank 0 fits the net on them, with a
    thread added for each rank that waits, and shares its weights. A batched search's time hardly
    grows with its batch, so ranks pay off on large iterations (docs/BENCHMARKS.md). Hashed
    when changed: the games differ with the ranks."""

    @property
    def uses_solver(self) -> bool:
        """Whether it needs the game's exact solver: to rescore, to probe or to label positions."""
        return bool(self.solve_from or self.search.probe_from or self.solver_positions)

    def __post_init__(self) -> None:
        if self.iterations < 0 or self.games < 1 or self.batch_size < 1:
            raise ValueError(f"bad AlphaZero config: {self}")
        if not 0.0 <= self.q_weight <= 1.0:
            raise ValueError("q_weight must be within 0..1")
        if self.replay_iterations < 1 or not self.epochs > 0:
            raise ValueError("replay_iterations must be at least 1 and epochs positive")
        if self.opening_plies < 0 or self.temperature_plies < 0:
            raise ValueError("opening_plies and temperature_plies must be 0 or more")
        if self.opening_plies_max < self.opening_plies:
            raise ValueError("opening_plies_max must be at least opening_plies")
        if self.solve_from < 0 or self.solve_nodes < 1:
            raise ValueError("solve_from must be 0 (never) or a ply, and solve_nodes at least 1")
        if type(self.solver_positions) is not int or self.solver_positions < 0:
            raise ValueError(f"solver_positions must be 0 (none) or more, got {self.solver_positions!r}")
        if type(self.solver_positions_from) is not int or self.solver_positions_from < 0:
            raise ValueError(
                f"solver_positions_from must be 0 (the game's) or a ply, got {self.solver_positions_from!r}"
            )
        if self.random_image and not self.mirror:
            raise ValueError("random_image draws one of the images mirror adds: set mirror")
        if self.solver_policy and not self.solve_from:
            raise ValueError(
                "solver_policy takes its moves from the decisions the solver rescores: set solve_from"
            )
        if not 0.0 <= self.league_share <= 1.0:
            raise ValueError(f"league_share must be within 0..1, got {self.league_share}")
        if type(self.league_simulations) is not int or self.league_simulations < 0:
            raise ValueError(f"league_simulations must be 0 or more, got {self.league_simulations!r}")
        if not 0.0 <= self.learning_rate_final <= self.learning_rate:
            raise ValueError(
                f"learning_rate_final must be within 0..learning_rate ({self.learning_rate}), "
                f"got {self.learning_rate_final}"
            )
        if type(self.average_iterations) is not int or self.average_iterations < 0:
            raise ValueError(f"average_iterations must be 0 (off) or more, got {self.average_iterations!r}")
        if not self.reply_weight >= 0:
            raise ValueError(f"reply_weight must be 0 or more, got {self.reply_weight}")
        if self.reuse_tree and self.search.root == "gumbel":
            raise ValueError(
                "reuse_tree keeps visits, and Gumbel's root (search.root) plans its visits from none"
            )
        if self.ranks < 1 or self.games < self.ranks:
            raise ValueError(
                f"AlphaZero ranks must be at least 1, each with at least one of the {self.games} games, "
                f"got {self.ranks}"
            )


@dataclass(frozen=True)
class LeagueConfig:
    """Everything that defines a league run; its hash keys resumable work."""

    name: str = "default"
    """League name: snapshots and records are grouped by it."""
    profile: str = "custom"
    """Which profile this config came from (informational)."""
    generations: int = 4
    """Generations to run."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO learner hyperparameters per generation."""
    alphazero: AlphaZeroConfig = field(default_factory=AlphaZeroConfig)
    """AlphaZero-style learner hyperparameters per generation (see `alphazero_from`)."""
    alphazero_from: int = 0
    """First generation trained by the AlphaZero-style learner, continuing from the previous
    snapshot; earlier generations train by PPO. 0: PPO throughout."""
    main_learner: str = "ppo"
    """The main agent's learner (`c4core.learners.plugins.LEARNERS`): ``"ppo"`` (and the AlphaZero-style
    learner from `alphazero_from` on), or a tabular one, ``"q-learning"`` or ``"sarsa"``, which
    self-plays a table of every position (games of at most `TABULAR_MOVES` moves). Exploiters
    always learn by PPO, so a league may mix a table and networks."""
    tabular: TabularConfig = field(default_factory=TabularConfig)
    """Tabular learner hyperparameters per generation (with a tabular `main_learner`)."""
    net: NetConfig = field(default_factory=NetConfig)
    """Network shape."""
    match_games: int = 400
    """Games per pairing when a new snapshot plays the league (even: both colours)."""
    opening_plies: int = 4
    """Random opening plies in league matches."""
    top_snapshots: int = 3
    """How many snapshots the PPO learner trains against, besides both bots and itself."""
    opponent_sampling: str = "top"
    """How the PPO learner picks those snapshots: ``"top"``, the best-rated ones (the tutorial's
    rule); ``"pfsp"``, drawn by prioritized fictitious self-play (`pfsp_weights`), so the
    snapshots the learner does worst against are drawn most."""
    pfsp_prior: float = 0.5
    """With PFSP: the score taken for a snapshot the learner has no record against."""
    roles: tuple[str, ...] = ("main",)
    """The league's learners (AlphaStar's roles, Vinyals et al. 2019), each training one
    snapshot a generation, all at once in processes of their own: ``"main"``, the main agent
    (always first; only its snapshots can be champion), ``"main-exploiter"``, which trains
    only against the current champion, and ``"league-exploiter"``, which trains against the
    whole league drawn by PFSP. Exploiters learn by PPO and join from generation 2, once there
    is a champion."""
    exploiter_base: str = "first"
    """Where a main exploiter starts, and restarts after a reset: ``"first"``, the main agent's
    first snapshot, or ``"fresh"``, a new network. A league exploiter starts there too. With a
    tabular main agent they start fresh: a network cannot start from a table. From the
    first snapshot, a `cpu` league's exploiter scored 0.50-0.61 against every later champion,
    from a fresh net 0.01-0.18 (docs/BENCHMARKS.md)."""
    exploiter_reset_score: float = 0.7
    """A main exploiter whose last snapshot scored at least this against the champion it
    trained on starts again from `exploiter_base` (AlphaStar resets at 70% wins)."""
    exploiter_reset_generations: int = 4
    """A main exploiter also starts again after this many generations from its last start."""
    processes: int = 0
    """Learner processes a generation trains in at once (each with one torch thread); 0: one per
    role, at most the machine's cores. 1 trains the roles one after another in this process."""
    gating_games: int = 400
    """Games of the gating match in which the league's champion challenges the registry-wide
    champion of another league (colours alternated, random openings as in league matches)."""
    gating_score: float = 0.55
    """Score the challenger needs in the gating match to take the registry-wide title
    (AlphaZero's gate); a draw counts half."""
    game: str = "connect4"
    """The game the league plays (one of `LEAGUE_GAMES`), on the board `rows`, `cols` and
    `connect` say; `variant` names the two together (``connect4``, ``connect3-4x4``), and each
    variant is a registered model of its own."""
    rows: int = 6
    """Board rows."""
    cols: int = 7
    """Board columns."""
    connect: int = 4
    """Stones in a row to win."""
    seed: int = 0
    """Seed of training and matches."""
    device: str = "cpu"
    """Torch device for training and net play."""

    def __post_init__(self) -> None:
        if not self.name or not all(ch.isalnum() or ch in "-_." for ch in self.name):
            raise ValueError(f"league name {self.name!r} must be letters, digits, '-', '_' or '.'")
        if self.generations < 1:
            raise ValueError("generations must be at least 1")
        if self.match_games < 2 or self.match_games % 2:
            raise ValueError("match_games must be an even number of at least 2")
        if self.gating_games < 2 or self.gating_games % 2:
            raise ValueError("gating_games must be an even number of at least 2")
        if self.opponent_sampling not in ("top", "pfsp"):
            raise ValueError(f"opponent_sampling must be 'top' or 'pfsp', got {self.opponent_sampling!r}")
        if not 0.0 <= self.pfsp_prior <= 1.0:
            raise ValueError(f"pfsp_prior must be within 0..1, got {self.pfsp_prior}")
        if not 0.5 <= self.gating_score <= 1.0:
            raise ValueError(f"gating_score must be within 0.5..1, got {self.gating_score}")
        if not self.roles or self.roles[0] != MAIN or len(set(self.roles)) != len(self.roles):
            raise ValueError(f"roles must start with {MAIN!r} and name each role once, got {self.roles!r}")
        if unknown := set(self.roles) - set(ROLES):
            raise ValueError(f"unknown role(s) {', '.join(sorted(unknown))}: choose from {', '.join(ROLES)}")
        if self.exploiter_base not in ("fresh", "first"):
            raise ValueError(f"exploiter_base must be 'fresh' or 'first', got {self.exploiter_base!r}")
        if not 0.5 < self.exploiter_reset_score <= 1.0:
            raise ValueError(f"exploiter_reset_score must be within 0.5..1, got {self.exploiter_reset_score}")
        if self.exploiter_reset_generations < 1 or self.processes < 0:
            raise ValueError("exploiter_reset_generations must be at least 1, and processes 0 or more")
        if self.alphazero_from < 0:
            raise ValueError("alphazero_from must be 0 (never) or a generation number")
        if max(self.ppo.ranks, self.alphazero.ranks) > 1 and self.device != "cpu":
            raise ValueError("learner ranks are CPU processes: a learner on a GPU trains alone (ranks 1)")
        if self.game not in LEAGUE_GAMES:
            raise ValueError(f"the league trains on {', '.join(LEAGUE_GAMES)} only, got game {self.game!r}")
        _ = self.board  # a bad board size fails here, naming it
        az = self.alphazero
        if not solvable(self.board) and self.alphazero_from and az.uses_solver:
            raise ValueError(
                f"{self.board.title} has no exact solver: the AlphaZero-style learner's solve_from, "
                "probe_from and solver_positions must be 0"
            )
        if az.solver_positions_from >= self.board.max_game_length:
            raise ValueError(
                f"solver_positions_from must be a ply before {self.board.title}'s longest game "
                f"({self.board.max_game_length}), got {az.solver_positions_from}"
            )
        if self.net.value_target == "margin" and not has_margin(self.board):
            raise ValueError(
                f"{self.board.title} has no margin to learn: the net's value_target must be 'outcome'"
            )
        if self.game != "connect4" and not self.net.threat_planes:
            raise ValueError("threat_planes=False blanks Connect Four's threat planes: other games keep them")
        if self.main_learner not in MAIN_LEARNERS:
            raise ValueError(
                f"unknown main learner {self.main_learner!r}: choose from {', '.join(MAIN_LEARNERS)}"
            )
        if self.main_learner in TABULAR_LEARNERS:
            if not self.enumerable:
                raise ValueError(
                    f"a {self.main_learner} table needs a game of at most {TABULAR_MOVES} moves, "
                    f"not {self.board.title}: try --game connect3-4x4"
                )
            if self.alphazero_from:
                raise ValueError(f"a {self.main_learner} main agent learns by itself: no alphazero_from")

    @property
    def enumerable(self) -> bool:
        """Whether every position of the league's game can be enumerated (`TABULAR_MOVES`): a
        table can learn it, and every snapshot gets an exact NashConv."""
        return self.board.max_game_length <= TABULAR_MOVES

    @property
    def bots(self) -> tuple[str, ...]:
        """The league's scripted members (`LEAGUE_BOTS`): ``random``, then its game's baseline."""
        return LEAGUE_BOTS[self.game]

    @property
    def board(self) -> Game:
        """The game the league plays, with its parameters (`c4core.games`)."""
        takes = load(self.game).params  # the board fields this game reads
        return load(self.game, **{k: getattr(self, k) for k in takes})

    @property
    def variant(self) -> str:
        """The game and board in one name (``connect4`` for the standard 6x7 board,
        ``connect3-4x4``): the registered model the league's snapshots go to."""
        return self.board.variant

    def learner(self, generation: int, role: str = "main") -> str:
        """Which learner trains `role`'s snapshot of `generation`: the main agent's
        (`main_learner`, or ``"alphazero"`` from `alphazero_from` on); exploiters' ``"ppo"``."""
        if role != MAIN:
            return "ppo"
        return "alphazero" if 0 < self.alphazero_from <= generation else self.main_learner

    def learner_config(
        self, generation: int, role: str = "main"
    ) -> PPOConfig | AlphaZeroConfig | TabularConfig:
        """The hyperparameters of the learner of `role`'s snapshot of `generation`."""
        learner = self.learner(generation, role)
        return self.tabular if learner in TABULAR_LEARNERS else getattr(self, learner)

    def roles_at(self, generation: int) -> tuple[str, ...]:
        """The roles that train a snapshot in `generation`: the main agent alone in the first
        (no champion exists yet for an exploiter to train against), every role after."""
        return self.roles if generation > 1 else (MAIN,)

    def ranks(self, generation: int, role: str = "main") -> int:
        """Data-parallel processes `role`'s learner of `generation` trains on (its learner's)."""
        return getattr(self.learner_config(generation, role), "ranks", 1)

    def iterations(self, generation: int, role: str = "main") -> int:
        """Training iterations of `role`'s snapshot of `generation` (its learner's)."""
        return self.learner_config(generation, role).iterations

    def describe_training(self) -> str:
        """One line on how the generations train, for logs and model cards."""
        p, a, t = self.ppo, self.alphazero, self.tabular
        if self.main_learner in TABULAR_LEARNERS:
            return (
                f"{self.generations} {self.main_learner} generation(s) x {t.iterations} iterations x "
                f"{t.games} self-play games, one table for both seats (alpha {t.alpha}, gamma {t.gamma}, "
                f"epsilon {t.epsilon_start} falling to {t.epsilon_min})"
            )
        ppo_gens = (
            self.generations if not self.alphazero_from else min(self.generations, self.alphazero_from - 1)
        )
        parts = []
        if ppo_gens:
            parts.append(
                f"{ppo_gens} PPO generation(s) x {p.iterations} iterations x {p.games} games against "
                f"{', '.join(self.bots)}, the best snapshots and itself"
            )
        if self.generations > ppo_gens:
            parts.append(
                f"{self.generations - ppo_gens} AlphaZero generation(s) x {a.iterations} iterations x "
                f"{a.games} self-play games searched at {a.search.simulations} simulations a move"
                + (f", rescored by the exact solver from ply {a.solve_from}" if a.solve_from else "")
                + (
                    f", the search probing it at leaves from ply {a.search.probe_from}"
                    if a.search.probe_from
                    else ""
                )
                + (", its policy target the solver's best moves" if a.solver_policy else "")
                + (
                    f", with {a.solver_positions} solver-labelled random positions an iteration"
                    + (f" from ply {a.solver_positions_from}" if a.solver_positions_from else "")
                    if a.solver_positions
                    else ""
                )
            )
        return ", then ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LeagueConfig:
        """The config `to_dict` wrote; also reads configs written before the AlphaZero learner
        held its search as a `SearchConfig` (its search fields flat in ``alphazero``), and before
        the board was stored once (`NetConfig.from_dict`)."""
        d = dict(d)
        az = dict(d.get("alphazero", {}))
        search = dict(az.pop("search", {}))
        for key in _LEGACY_SEARCH_KEYS & az.keys():
            search[key] = az.pop(key)
        d["alphazero"] = AlphaZeroConfig(**az, search=replace(AlphaZeroConfig().search, **search))
        d["ppo"] = PPOConfig(**d.get("ppo", {}))
        d["tabular"] = TabularConfig(**d.get("tabular", {}))
        d["net"] = NetConfig.from_dict(d.get("net", {}))
        if "roles" in d:  # JSON and MLflow give a list back
            d["roles"] = tuple(d["roles"])
        return cls(**d)

    def training_hash(self) -> str:
        """Hash of the training key (`training_key`): a rerun of the same league reuses its work,
        and a changed recipe never does."""
        return hashlib.sha256(json.dumps(training_key(self), sort_keys=True).encode()).hexdigest()[:12]


_LEGACY_SEARCH_KEYS = frozenset(
    {"simulations", "c_puct", "dirichlet_alpha", "noise_fraction", "probe_from", "probe_nodes"}
)


def unkeyed(config: LeagueConfig) -> frozenset[str]:
    """The training key's one exclusion set: the fields of `config`, as dotted paths, that cannot
    change what a generation produces. Its name, length, profile and device, how its champion
    challenges other leagues' and how many learner processes it runs; and the settings that no
    generation of it uses: a learner it never trains, a solver budget with the solver off, the
    PFSP prior where nothing is drawn by PFSP, how exploiters start where there are none."""
    out = {"name", "generations", "profile", "device", "gating_games", "gating_score", "processes"}
    alone = len(config.roles) == 1
    az = config.alphazero
    if not config.alphazero_from:  # no generation uses the AlphaZero-style learner
        out |= {"alphazero", "alphazero_from"}
    else:
        if not az.solve_from and not az.solver_positions:
            out.add("alphazero.solve_nodes")
        if not az.search.probe_from:
            out.add("alphazero.search.probe_nodes")
        if not az.league_share:
            out.add("alphazero.league_simulations")
    if config.main_learner in TABULAR_LEARNERS and alone:  # no network trains
        out |= {"ppo", "net"}
    else:
        out.add("tabular")
    if config.opponent_sampling != "pfsp" and not (config.alphazero_from and az.league_share) and alone:
        out.add("pfsp_prior")
    if alone:  # no exploiter: how exploiters start and reset changes nothing
        out |= {"exploiter_base", "exploiter_reset_score", "exploiter_reset_generations"}
    return frozenset(out)


def training_key(config: LeagueConfig) -> dict[str, Any]:
    """What a league's training hash covers, by one rule: every field of `config`, nested
    configs field by field, minus the exclusion set (`unkeyed`), minus the fields marked `NEW`
    that hold their default, plus the key's schema (`KEY_SCHEMA`)."""
    skip = unkeyed(config)

    def keyed(c: Any, prefix: str) -> dict[str, Any]:
        out = {}
        for f in fields(c):
            path, value = prefix + f.name, getattr(c, f.name)
            if path in skip or (f.metadata.get("key") == NEW["key"] and value == f.default):
                continue
            out[f.name] = keyed(value, path + ".") if is_dataclass(value) else value
        return out

    return {"schema": KEY_SCHEMA, **keyed(config, "")}


_CPU = LeagueConfig(
    profile="cpu",
    generations=7,
    # six PPO generations, the main agent alone on two data-parallel ranks, one per core
    ppo=PPOConfig(iterations=25, games=768, ranks=2),
    # then AlphaZero-style generations continuing from them, rescored by the exact solver from
    # ply 16, a quarter of their games against snapshots drawn by PFSP (the roles ablation kept
    # the league share and dropped the main exploiter), self-played on two ranks, 1,024 games an
    # iteration: a search's time hardly grows with its batch, so larger iterations learn as much
    # a core-second, and two ranks split them. One such generation lifts the PPO champion past
    # what more PPO reached against `tactical` (docs/BENCHMARKS.md). The self-play search is
    # Gumbel's root at 16 simulations: at equal wall time it beat the PUCT search at 64 head to
    # head, where the other levers tied (docs/BENCHMARKS.md).
    alphazero=AlphaZeroConfig(
        iterations=10,
        games=1024,
        search=SearchConfig(simulations=16, root_noise=True, root="gumbel"),
        opening_plies=2,
        opening_plies_max=24,
        replay_iterations=8,
        solve_from=16,
        league_share=0.25,
        ranks=2,
    ),
    alphazero_from=7,
    # the trunk in bfloat16 where the CPU computes it natively (`league_config`)
    net=NetConfig(blocks=2, channels=32, precision="bfloat16"),
    match_games=400,
)
"""The `cpu` profile: the quick league, six PPO generations and one AlphaZero-style one. The
`cpu-az` profile is the same recipe run for 20 generations, so it shares the key and goes on
from where a `cpu` league of the same name stopped."""

PROFILES: dict[str, LeagueConfig] = {
    "smoke": LeagueConfig(
        profile="smoke",
        generations=2,
        ppo=PPOConfig(iterations=2, games=32, minibatch_size=256, update_epochs=1),
        net=NetConfig(blocks=1, channels=8, value_hidden=16),
        match_games=20,
        gating_games=20,
    ),
    "cpu": _CPU,
    "cpu-az": replace(_CPU, profile="cpu-az", generations=20),
    "gpu": LeagueConfig(
        profile="gpu",
        generations=20,
        ppo=PPOConfig(iterations=25, games=2048, learning_rate=3e-4, minibatch_size=2048),
        net=NetConfig(blocks=4, channels=64),
        match_games=400,
        device="cuda",
        roles=ROLES,  # AlphaStar's three kinds of learner, a GPU pod each
    ),
}


def profile(profile_name: str, /, **overrides: Any) -> LeagueConfig:
    """A named profile, with field overrides; a nested config's fields go in a dict, at any
    depth (``alphazero={"search": {"simulations": 32}}``)."""
    if profile_name not in PROFILES:
        raise ValueError(f"unknown profile {profile_name!r}: choose from {', '.join(PROFILES)}")
    return overridden(PROFILES[profile_name], overrides)


def overridden(config: Any, overrides: Mapping[str, Any]) -> Any:
    """`config` with fields replaced; a nested config's fields go in a dict, at any depth."""
    nested = {
        k: overridden(getattr(config, k), v)
        for k, v in overrides.items()
        if isinstance(v, Mapping) and is_dataclass(getattr(config, k, None))
    }
    return replace(config, **{**overrides, **nested})


FIXED_FIELDS = frozenset({"name", "profile", "game", "rows", "cols", "connect", "device"})
"""The `LeagueConfig` fields no recipe field (`with_fields`) replaces: the league's name, profile
and board, and where it trains, which the entry points' own arguments set and check."""
_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


def with_fields(config: LeagueConfig, values: Mapping[str, Any]) -> LeagueConfig:
    """`config` with fields replaced by their dotted paths, as `training_key` spells them
    (``{"alphazero.search.probe_from": 12}``): the recipes no flag of the CLI and no field of the
    DAG's form name. Each value is checked against its field's type (a whole number serves where
    a number is asked for, a list where a tuple is); the configs' own checks follow. A ValueError
    names an unknown path, a fixed field (`FIXED_FIELDS`) or a value of the wrong kind."""
    nested: dict[str, Any] = {}
    for path, value in values.items():
        *groups, name = str(path).split(".")
        if not groups and name in FIXED_FIELDS:
            raise ValueError(f"{path!r} is set by its own option, not as a recipe field")
        node, into = config, nested
        for group in groups:
            node = getattr(node, _field_name(node, group, path))
            if not is_dataclass(node):
                raise ValueError(f"unknown recipe field {path!r}: {group!r} holds no fields")
            into = into.setdefault(group, {})
        hint = get_type_hints(type(node))[_field_name(node, name, path)]
        if is_dataclass(hint):
            raise ValueError(f"{path!r} is a group of fields: name one of them, as {path}.FIELD")
        into[name] = _typed(path, value, hint)
    return overridden(config, nested)


def _field_name(node: Any, name: str, path: str) -> str:
    names = [f.name for f in fields(node)]
    if name not in names:
        raise ValueError(f"unknown recipe field {path!r}: {type(node).__name__} has {', '.join(names)}")
    return name


def _typed(path: str, value: Any, hint: Any) -> Any:
    """`value` as field `path` of type `hint` holds it; a ValueError when it is of another kind."""
    if get_origin(hint) is UnionType:  # an optional field: ``float | None``
        if value is None:
            return None
        (hint,) = (a for a in get_args(hint) if a is not type(None))
    if get_origin(hint) is tuple:
        (item,) = get_args(hint)[:1]
        if isinstance(value, list | tuple) and all(type(v) is item for v in value):
            return tuple(value)
        raise ValueError(f"{path} takes a list, each item {_KINDS[item]}, got {value!r}")
    if hint is float and type(value) is int:
        return float(value)
    if type(value) is not hint:
        raise ValueError(f"{path} takes {_KINDS[hint]}, got {value!r}")
    return value


def with_training(
    config: LeagueConfig, iterations: int | None = None, games: int | None = None
) -> LeagueConfig:
    """`config` with both learners' iterations per generation and games per iteration replaced
    where given (the trigger form's and the CLI's overrides)."""
    change = {k: v for k, v in (("iterations", iterations), ("games", games)) if v is not None}
    if not change:
        return config
    return replace(
        config,
        ppo=replace(config.ppo, **change),
        alphazero=replace(config.alphazero, **change),
        tabular=replace(config.tabular, **change),
    )


def league_config(
    profile_name: str,
    name: str = "default",
    *,
    generations: int | None = None,
    iterations: int | None = None,
    games: int | None = None,
    match_games: int | None = None,
    seed: int | None = None,
    device: str | None = None,
    roles: tuple[str, ...] | None = None,
    ranks: int | None = None,
    precision: str | None = None,
    native_bfloat16: bool = True,
    game: str | None = None,
    rows: int | None = None,
    cols: int | None = None,
    connect: int | None = None,
    learner: str | None = None,
    value_target: str | None = None,
    recipe: Mapping[str, Any] | None = None,
) -> LeagueConfig:
    """The config a user asks for, from the CLI's flags or the DAG's trigger form: profile
    `profile_name` named `name`, with each setting given replacing the profile's (iterations
    and games those of both learners, and so are `ranks`; `precision`,
    `NetConfig.precision`). `game` is a game or a named variant (`c4core.games.VARIANTS`:
    ``connect3-4x4``), and `rows`, `cols` and `connect` replace its board's; the net is built
    for that game; a board without an exact solver (`c4core.games.solvable`) drops the
    profile's solver settings, and one whose solver is an endgame search moves the profile's
    rescoring and leaf probes no earlier than the ply it reaches (`c4core.games.exact_from`).
    `learner` is the main agent's (`LeagueConfig.main_learner`); a tabular one
    trains every generation (no AlphaZero-style ones). `value_target` is what the net's value
    head learns (`NetConfig.value_target`). `recipe` replaces fields by dotted path, last, over
    the profile and the settings above (`with_fields`). A precision of None or ``"auto"`` keeps
    the profile's, but a bfloat16 profile off CUDA trains in float32 on a CPU without native bfloat16
    (`native_bfloat16`, which the entry points read from the host: `c4core.entry.native_bfloat16`):
    emulated, it is several times slower, not faster. A ValueError names a
    bad value."""
    given = {
        "generations": generations,
        "match_games": match_games,
        "seed": seed,
        "device": device,
        "roles": tuple(roles) if roles is not None else None,
        "main_learner": learner,
        # a table learns alone: the profile's AlphaZero-style generations follow PPO, not it
        "alphazero_from": 0 if learner in TABULAR_LEARNERS else None,
        "net": {"value_target": value_target} if value_target is not None else None,
    }
    board = {k: v for k, v in (("rows", rows), ("cols", cols), ("connect", connect)) if v is not None}
    if game is not None or board:
        chosen = load(game or LEAGUE_GAMES[0], **board)
        given |= {"game": chosen.name, **chosen.params}
        if not solvable(chosen):  # the profile's solver settings need a solver
            given["alphazero"] = {"solve_from": 0, "search": {"probe_from": 0}}
    config = profile(profile_name, name=name, **{k: v for k, v in given.items() if v is not None})
    if reach := exact_from(config.board):
        az = config.alphazero  # a setting of 0 (off) stays off
        search = replace(az.search, probe_from=az.search.probe_from and max(az.search.probe_from, reach))
        az = replace(az, solve_from=az.solve_from and max(az.solve_from, reach), search=search)
        config = replace(config, alphazero=az)
    if ranks is not None:
        ppo, alphazero = replace(config.ppo, ranks=ranks), replace(config.alphazero, ranks=ranks)
        config = replace(config, ppo=ppo, alphazero=alphazero)
    if precision in (None, AUTO_PRECISION):
        emulated = config.net.precision == "bfloat16" and not config.device.startswith("cuda")
        precision = "float32" if emulated and not native_bfloat16 else None
    elif precision not in PRECISIONS:
        raise ValueError(
            f"unknown net precision {precision!r}: choose from {', '.join((AUTO_PRECISION, *PRECISIONS))}"
        )
    if precision is not None:
        config = replace(config, net=replace(config.net, precision=precision))
    config = with_training(config, iterations, games)
    return with_fields(config, recipe) if recipe else config


# ---- member names --------------------------------------------------------------------------------


def snapshot_name(generation: int, role: str = MAIN) -> str:
    """The member name of `role`'s snapshot of generation `generation`: ``gen<g>`` for the main
    agent (as before roles existed), ``gen<g>-me`` and ``gen<g>-le`` for the exploiters."""
    return f"gen{generation}{ROLE_SUFFIX[role]}"


def _parse(member: str) -> tuple[int, str] | None:
    body = member.removeprefix("gen")
    if body == member:
        return None
    for role, suffix in ROLE_SUFFIX.items():
        digits = body.removesuffix(suffix) if suffix else body
        if (digits != body or not suffix) and digits.isascii() and digits.isdigit():
            return int(digits), role
    return None


def generation_of(member: str) -> int | None:
    """The generation whose snapshot `member` names (``gen3`` and ``gen3-me`` -> 3); None for a
    bot or any other name."""
    parsed = _parse(member)
    return parsed[0] if parsed else None


def role_of(member: str) -> str | None:
    """The role whose snapshot `member` names (``gen3`` -> ``"main"``, ``gen3-le`` ->
    ``"league-exploiter"``); None for a bot or any other name."""
    parsed = _parse(member)
    return parsed[1] if parsed else None
