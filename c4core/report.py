"""The league report: the Elo ladder over generations, the score matrix, training curves, first- and
second-mover results, and a sample game, as one self-contained HTML file plus the same figures as PNGs.

The report is pure: league data in, files out. It is drawn from a `LeagueData` (the records, the
training metrics, a store for the champion's snapshot), never from a live process, and it knows
no tracking system. `read_local` reads a league folder (`LocalStore`) into one; for a league in
MLflow, `c4core.tracking.reports.read_league` does, and `c4core.tracking.reports.log_report` logs the result.

- **Ladder over generations.** After generation ``g`` the league had played exactly the matches
  between members up to ``gen<g>`` (and the bots), so refitting Elo on those records reproduces the
  ladder the league saw at the time. Every rating carries its 95% interval; the bots are flat
  reference lines at their final rating; the champion after each generation is starred. In a
  league with exploiters (`c4core.config.ROLES`) their snapshots are dashed, in colour families
  of their own, and the tables name every member's role; the champion is always a main-agent
  snapshot (`c4core.league.members.champion`).
- **Exploitability.** With a main exploiter: its score against the champion it trained on, per
  generation (`c4core.league.members.exploitability`), against 0.5 and the score that resets it; and
  how many iterations it took to reach 55% in training against each champion in turn
  (`c4core.league.members.iterations_to_beat`).
- **Score matrix.** Row scores against column (a draw counts half), from the match records.
- **First and second mover.** A 0.50 score can hide "wins every game as first player, loses every
  game as second", so the champion's results against each opponent are split by who moved first.
- **Training curves.** Per iteration, across generations: win rate against each opponent
  (``vs/<opponent>/win``), ``losses/policy``, ``losses/value`` and ``losses/entropy``.
- **Sample game.** One seeded game of the champion (greedy) against its game's baseline bot
  (``tactical``, or Dots and Boxes' ``greedy``), played through the game interface and drawn
  for its game: Connect Four's stones numbered by move with the winning run marked, Dots and
  Boxes' lines numbered by move with each box in its owner's colour.
- **Suite.** If snapshots carry ``suite/keeps_result`` or ``suite/best_move`` (or Dots and
  Boxes' ``suite/keeps_value`` and ``suite/keeps_outcome``), a curve over
  generations; Dots and Boxes' strategy probes (``suite/probe/<principle>``) dashed beside them,
  so the page shows which principle the league learns first and which never.

`build_report` takes a `LeagueData`, a `LocalStore` or a league folder, and writes ``report.html``,
``report.json`` and the PNGs into a folder. The page comes from the Jinja2 template
``templates/report.html.j2`` (package data), rendered with autoescaping, images inlined as base64.

Figures use matplotlib's object API on the Agg canvas: no pyplot state, no display, safe in
worker processes.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np

from c4core.config import (
    BOT_NAMES,
    LEAGUE_BOTS,
    MAIN,
    ROLES,
    TABULAR_LEARNERS,
    LeagueConfig,
    generation_of,
    role_of,
    snapshot_name,
)
from c4core.evaluation.elo import EloFit
from c4core.evaluation.match import WDL, MatchResult, head_to_head
from c4core.figures import elo, percent
from c4core.games import ConnectFour, Game
from c4core.games.connect4.rules import Geometry, Position, has_won
from c4core.league.members import BEAT_SCORE, champion, exploitability, fit_ratings, iterations_to_beat
from c4core.league.store import LeagueStore, LocalStore

if TYPE_CHECKING:
    from c4core.learners.net import Checkpoint

FIGURES = ("ladder", "exploitability", "matrix", "game", "training", "suite")
"""The report's figures, in page order; ``exploitability`` only when a main exploiter has played
the champion it trained on, ``suite`` only when suite metrics exist."""
SAMPLE_OPPONENT = "tactical"
ROLE_LABELS = {MAIN: "main", "main-exploiter": "main exploiter", "league-exploiter": "league exploiter"}
"""How the page names each role (`c4core.config.ROLES`)."""
_EXPLOITER_STYLE = {"main-exploiter": ("Oranges", "--", 0.08), "league-exploiter": ("Purples", "-.", 0.16)}
"""Each exploiter role's colour family, line style, and nudge right on the ladder (so that its
error bars clear the main agent's), in the figures; the main agent's: viridis, solid."""

_FIRST_COLOUR, _SECOND_COLOUR, _BOARD_COLOUR = "#d62728", "#f2c500", "#1f4e9c"


# ---- the data a report is drawn from --------------------------------------------------------------
@dataclass
class LeagueData:
    """What a league stores, read once: the records, the training metrics, the snapshots."""

    name: str
    """League name."""
    config: LeagueConfig
    """The league's config (from a snapshot's training config)."""
    results: list[MatchResult]
    """Every recorded match."""
    metrics: dict[int, list[dict[str, float]]]
    """Per generation, the training metrics of every iteration (index = iteration)."""
    suite: dict[int, dict[str, float]] = field(default_factory=dict)
    """Per generation, ``suite/*`` metrics of its snapshot, where there are any."""
    source: str = ""
    """Where the data came from (a folder, or a tracking URI), for the page footer."""
    store: LeagueStore | None = None
    """The league's store, to load the champion's snapshot for the sample game; None for no game."""
    role_metrics: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    """Per exploiter snapshot (``gen2-me``, ``gen2-le``, ...), the training metrics of every
    iteration; the main agent's are `metrics`."""
    nash_conv: dict[int, float] = field(default_factory=dict)
    """Per generation, the exact NashConv of its main-agent snapshot (`c4core.evaluation.exploitability`),
    where it was computed: on boards small enough to enumerate."""

    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        return self.store.snapshot(generation, role) if self.store is not None else None


def read_local(store: LocalStore, config: LeagueConfig | None = None) -> LeagueData:
    """A league kept in a folder (`LocalStore`): ``gen<g>.pt``, ``gen<g>.metrics.json``, matches,
    and the exploiters' ``gen<g>-me.pt``, ``gen<g>-me.metrics.json`` (and ``-le``)."""
    config = config or _config_of(store)
    metrics: dict[int, list[dict[str, float]]] = {}
    suite: dict[int, dict[str, float]] = {}
    role_metrics: dict[str, list[dict[str, float]]] = {}
    gens = _generations(store)
    for g in gens:
        metrics[g] = _read_metrics(store, snapshot_name(g))
        suite_path = store.root / f"{snapshot_name(g)}.suite.json"
        found = json.loads(suite_path.read_text()) if suite_path.is_file() else {}
        found |= {k: v for m in metrics[g] for k, v in m.items() if k.startswith("suite/")}
        if found:
            suite[g] = found
    # the generation after the last finished one too: its exploiters may be done before its main agent
    for g in range(1, len(gens) + 2):
        for role in config.roles_at(g):
            name = snapshot_name(g, role)
            if role != MAIN and (store.root / f"{name}.pt").is_file():
                role_metrics[name] = _read_metrics(store, name)
    return LeagueData(
        config.name, config, store.results(), metrics, suite, str(store.root), store, role_metrics
    )


def _read_metrics(store: LocalStore, member: str) -> list[dict[str, float]]:
    path = store.root / f"{member}.metrics.json"
    return json.loads(path.read_text()) if path.is_file() else []


def _config_of(store: LocalStore) -> LeagueConfig:
    snap = store.snapshot(1)
    if snap is None:
        raise ValueError(f"{store.root} holds no finished generation (gen1.pt)")
    config = LeagueConfig.from_dict(snap.train_config)
    try:  # a folder may have been renamed or copied: its name is the league's
        return replace(config, name=store.root.name)
    except ValueError:  # a folder name that is no league name
        return config


def _generations(store: LocalStore) -> list[int]:
    """The finished generations, 1, 2, ... up to the first missing one (generations run in order).
    A snapshot file is there or not: no need to load it."""
    gens: list[int] = []
    while (store.root / f"{snapshot_name(len(gens) + 1)}.pt").is_file():
        gens.append(len(gens) + 1)
    return gens


def is_plotted(key: str) -> bool:
    """Whether the training curves draw metric `key` (a reader need fetch only these histories)."""
    return key in ("losses/policy", "losses/value", "losses/entropy") or (
        key.startswith("vs/") and key.endswith("/win")
    )


# ---- the numbers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleGame:
    """One game, move by move, through the game interface."""

    first: str
    """Who moved first."""
    second: str
    """Who moved second."""
    actions: tuple[int, ...]
    """Every move in order, as the game's actions."""
    movers: tuple[int, ...]
    """Who made each move: 0 the first player, 1 the second (in Dots and Boxes a player who
    takes a box moves again)."""
    winner: str | None
    """The winner's name, or None for a draw."""
    seed: int
    """Seed of the opponent's random choices."""
    game: Game = ConnectFour()
    """The game played."""

    @property
    def moves(self) -> str:
        """The game in its move notation (Connect Four: columns 1..cols)."""
        return self.game.moves_string(self.actions)

    @property
    def run(self) -> tuple[tuple[int, int], ...]:
        """Connect Four's winning run(s), as cells ``(row from the top, column)``; empty for a
        draw and for other games."""
        if self.winner is None or not isinstance(self.game, ConnectFour):
            return ()
        g = self.game.geometry
        pos = Position.from_moves(self.moves, g)
        return tuple(sorted({bit_cell(b, g) for r in winning_runs(pos.opponent, g) for b in r}))


@dataclass(frozen=True)
class SplitRow:
    """The champion against one opponent, split by who moved first (from the champion's side)."""

    opponent: str
    first: WDL
    """The champion's results in the games it moved first."""
    second: WDL
    """The champion's results in the games the opponent moved first."""

    @property
    def total(self) -> WDL:
        return self.first + self.second


@dataclass
class LeagueReport:
    """Everything the report shows, computed from `LeagueData`."""

    data: LeagueData
    members: list[str]
    """Bots first, then snapshots by generation, each generation's main agent before its
    exploiters."""
    fit: EloFit
    """The joint fit over every record."""
    history: dict[int, EloFit]
    """Per generation ``g``, the fit over the matches among members up to ``gen<g>``."""
    champions: dict[int, str]
    """The champion after each generation."""
    champion: str
    scores: np.ndarray
    """``scores[i, j]``: score of member i against member j (NaN where they never met)."""
    games: np.ndarray
    """Games between member i and member j."""
    splits: list[SplitRow]
    sample: SampleGame | None
    exploitability: dict[int, float] = field(default_factory=dict)
    """Per generation whose main exploiter has played the champion it trained on, its score
    against it (`c4core.league.members.exploitability`); empty in a league without a main exploiter."""
    iterations_to_beat: list[dict[str, Any]] = field(default_factory=list)
    """With a main exploiter: per champion it trained on, in turn, the generation it first did,
    the iterations trained on it, and the iterations it took to score `BEAT_SCORE` in training
    (None: not yet) (`c4core.league.members.iterations_to_beat`); empty without one."""

    @property
    def has_roles(self) -> bool:
        """Whether any member is an exploiter's snapshot (the page then names every role)."""
        return any(role_of(m) not in (MAIN, None) for m in self.members)

    @property
    def vs_tactical(self) -> WDL | None:
        """The champion's results against ``tactical``, or None if they never met."""
        return head_to_head(self.data.results, self.champion, SAMPLE_OPPONENT)

    def to_json(self) -> dict[str, Any]:
        """The report's numbers (what ``report.json`` holds)."""
        fit = self.fit
        vs_tac = self.vs_tactical
        return {
            "league": self.data.name,
            "config_hash": self.data.config.training_hash(),
            "generations": max(self.history, default=0),
            "of_generations": self.data.config.generations,
            "champion": self.champion,
            "members": self.members,
            "ratings": {m: fit.ratings[m] for m in self.members},
            "ci95": {m: list(fit.ci95[m]) for m in self.members},
            "games": {m: fit.games[m] for m in self.members},
            "ladder": [
                {
                    "generation": g,
                    "champion": self.champions[g],
                    "ratings": f.ratings,
                    "ci95": f.to_json()["ci95"],
                }
                for g, f in sorted(self.history.items())
            ],
            "scores": [[None if math.isnan(v) else v for v in row] for row in self.scores.tolist()],
            "champion_vs": {
                s.opponent: {"first": _wdl(s.first), "second": _wdl(s.second), "total": _wdl(s.total)}
                for s in self.splits
            },
            "champion_vs_tactical_score": vs_tac.score if vs_tac is not None else None,
            "sample_game": None
            if self.sample is None
            else {
                "first": self.sample.first,
                "second": self.sample.second,
                "moves": self.sample.moves,
                "winner": self.sample.winner,
                "run": [list(c) for c in self.sample.run],
                "seed": self.sample.seed,
            },
            "suite": {str(g): m for g, m in sorted(self.data.suite.items())},
        } | self._roles_json()

    def _roles_json(self) -> dict[str, Any]:
        """The roles' numbers, only in a league with exploiters (an older league's JSON stays as it was)."""
        out: dict[str, Any] = {}
        if self.has_roles:
            out["roles"] = {m: role_label(m) for m in self.members}
        if self.exploitability or self.iterations_to_beat:
            out["exploitability"] = {str(g): v for g, v in sorted(self.exploitability.items())}
            out["iterations_to_beat"] = self.iterations_to_beat
        if self.data.nash_conv:
            out["nash_conv"] = {str(g): v for g, v in sorted(self.data.nash_conv.items())}
        return out


def _wdl(w: WDL) -> dict[str, int]:
    return {"win": w.win, "draw": w.draw, "loss": w.loss}


def order_members(names: Iterable[str]) -> list[str]:
    """Bots first (in `BOT_NAMES` order), then snapshots by generation, each generation's in
    `ROLES` order (``gen2``, ``gen2-me``, ``gen2-le``, ``gen3``, ...), then anything else by name."""
    names = set(names)
    bots = [b for b in BOT_NAMES if b in names]
    snaps = sorted(
        (n for n in names if generation_of(n) is not None),
        key=lambda n: (generation_of(n), ROLES.index(role_of(n))),
    )
    rest = sorted(names - set(bots) - set(snaps))
    return bots + snaps + rest


def role_label(member: str) -> str:
    """What the page calls `member`'s role: ``main``, ``main exploiter``, ``league exploiter``,
    ``bot``, or ``other`` for a name that is none of these."""
    role = role_of(member)
    if role is not None:
        return ROLE_LABELS[role]
    return "bot" if member in BOT_NAMES else "other"


def ladder_history(results: Sequence[MatchResult]) -> dict[int, EloFit]:
    """Per generation ``g``, Elo refit on the matches whose snapshots are all ``gen<g>`` or older:
    the ladder as it stood after generation ``g``, from the match records alone."""

    def newest(r: MatchResult) -> int:  # the later snapshot of a match; 0 between bots
        return max(generation_of(r.a) or 0, generation_of(r.b) or 0)

    last = max(map(newest, results), default=0)
    out: dict[int, EloFit] = {}
    for g in range(1, last + 1):
        fit = fit_ratings([r for r in results if newest(r) <= g])
        if fit is not None and snapshot_name(g) in fit.ratings:
            out[g] = fit
    return out


def score_matrix(results: Sequence[MatchResult], members: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Scores (row against column, a draw counting half; NaN where they never met) and games."""
    index = {m: i for i, m in enumerate(members)}
    n = len(members)
    wins, draws, games = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n), dtype=np.int64)
    for r in results:
        if r.a not in index or r.b not in index:
            continue
        i, j, t = index[r.a], index[r.b], r.total
        wins[i, j] += t.win
        wins[j, i] += t.loss
        draws[i, j] += t.draw
        draws[j, i] += t.draw
        games[i, j] += t.games
        games[j, i] += t.games
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(games > 0, (wins + 0.5 * draws) / np.maximum(games, 1), np.nan)
    return scores, games


def first_second(results: Sequence[MatchResult], member: str, order: Sequence[str]) -> list[SplitRow]:
    """`member`'s results against each opponent, split by who moved first, in `order`."""
    rows: dict[str, SplitRow] = {}
    for r in results:
        if r.a == member:
            rows[r.b] = SplitRow(r.b, r.a_first, r.b_first)
        elif r.b == member:
            rows[r.a] = SplitRow(r.a, r.b_first.flipped(), r.a_first.flipped())
    return [rows[m] for m in order if m in rows]


def winning_runs(stones: int, g: Geometry) -> list[tuple[int, ...]]:
    """Every run of `g.connect` stones in a bitboard, as bit indices (see
    `c4core.games.connect4.rules`'s layout).

    A run is `g.connect` of the stones, one step of a `Geometry.directions` apart, that on their
    own pass `c4core.games.connect4.rules.has_won`: the rule of what wins lives there, not here.
    """
    bits = [b for b in range(g.height * g.cols) if stones >> b & 1]
    runs = []
    for d in g.directions:
        for b in bits:
            run = tuple(b + i * d for i in range(g.connect))
            only = sum(1 << i for i in run)
            if only & stones == only and has_won(only, g):
                runs.append(run)
    return runs


def bit_cell(bit: int, g: Geometry) -> tuple[int, int]:
    """``(row from the top, column)`` of a bit index."""
    return g.rows - 1 - bit % g.height, bit // g.height


def play_sample_game(
    checkpoint: Checkpoint,
    name: str,
    seed: int = 0,
    champion_first: bool = True,
    opponent: str | None = None,
) -> SampleGame:
    """One seeded game of a snapshot (greedy) against a scripted bot of its game, its league's
    baseline unless `opponent` names another (`LEAGUE_BOTS`), from the initial state."""
    import torch

    game = checkpoint.game
    bot_name = opponent or LEAGUE_BOTS[game.name][-1]
    champ, bot = checkpoint.player(name), game.bots()[bot_name]()
    players = (champ, bot) if champion_first else (bot, champ)
    gen = torch.Generator().manual_seed(seed)
    state, actions, movers = game.new_state(), [], []
    while not state.is_terminal:
        mover = state.current_player()
        action = players[mover].act_position(state, gen)
        actions.append(action)
        movers.append(mover)
        state = state.apply(action)
    first_result = state.returns()[0]
    winner = None if first_result == 0 else players[0 if first_result > 0 else 1].name
    return SampleGame(players[0].name, players[1].name, tuple(actions), tuple(movers), winner, seed, game)


def compute(data: LeagueData, seed: int = 0) -> LeagueReport:
    """The report's numbers. Plays the sample game when the champion's snapshot is at hand."""
    fit = fit_ratings(data.results)
    if fit is None:
        raise ValueError(f"league {data.name!r} has no match records yet")
    members = order_members(fit.ratings)
    history = ladder_history(data.results)
    champions = {g: champion(f) for g, f in history.items()}
    champ = champion(fit)
    scores, games = score_matrix(data.results, members)
    splits = first_second(data.results, champ, members)
    sample = None
    g = generation_of(champ)
    ckpt = data.snapshot(g) if g is not None else None
    if ckpt is not None and ckpt.game.name in _DRAW_GAME:  # a game the report can draw
        sample = play_sample_game(ckpt, champ, seed)
    rep = LeagueReport(data, members, fit, history, champions, champ, scores, games, splits, sample)
    if any(role_of(m) == "main-exploiter" for m in members):
        rep.exploitability, rep.iterations_to_beat = exploiter_numbers(data, max(history, default=0))
    return rep


def exploiter_numbers(data: LeagueData, upto: int) -> tuple[dict[int, float], list[dict[str, Any]]]:
    """The main exploiter's numbers up to generation `upto`: `exploitability` per generation where
    it is known, and `iterations_to_beat` (at `BEAT_SCORE`) from its training metrics."""
    scores = {g: exploitability(data.results, g) for g in range(2, upto + 1)}
    metrics = {
        g: data.role_metrics[name]
        for g in range(2, upto + 1)
        if (name := snapshot_name(g, "main-exploiter")) in data.role_metrics
    }
    rows = iterations_to_beat(data.results, data.config, metrics, upto, BEAT_SCORE)
    return {g: v for g, v in scores.items() if v is not None}, rows


# ---- figures ---------------------------------------------------------------------------------------
def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _snap_colours(members: Sequence[str]) -> dict[str, Any]:
    """A colour per snapshot, in `members` order: the main agent's along viridis (as before
    roles), each exploiter role's along a lighter family of its own (`_EXPLOITER_STYLE`)."""
    from matplotlib import colormaps

    by_role: dict[str, list[str]] = {}
    for m in members:
        if generation_of(m) is not None:
            by_role.setdefault(role_of(m), []).append(m)
    colour: dict[str, Any] = {}
    for role, snaps in by_role.items():
        if role == MAIN:
            cmap, lo, span = colormaps["viridis"], 0.0, 0.85
        else:  # mid-range of a sequential family: lighter than viridis, never white
            cmap, lo, span = colormaps[_EXPLOITER_STYLE[role][0]], 0.45, 0.4
        colour |= {m: cmap(lo + span * k / max(len(snaps) - 1, 1)) for k, m in enumerate(snaps)}
    return {m: colour[m] for m in members if m in colour}


LADDER_KEY_ROWS = 18
"""Entries in a column of the Elo ladder's key: as many as its 4.6-inch height holds at 8 points."""


def draw_ladder(rep: LeagueReport) -> Any:
    """Elo of every snapshot after each generation, with 95% bands; exploiters dashed; bots flat;
    champion (always a main-agent snapshot) starred."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    fig = _figure(8, 4.6)
    ax = fig.add_subplot()
    gens = sorted(rep.history)
    colours = _snap_colours(rep.members)
    for m, colour in colours.items():
        xs = [g for g in gens if m in rep.history[g].ratings]
        if not xs:
            continue
        ys = np.array([rep.history[g].ratings[m] for g in xs])
        lo = np.array([rep.history[g].ci95[m][0] for g in xs])
        hi = np.array([rep.history[g].ci95[m][1] for g in xs])
        if role_of(m) == MAIN:
            if len(xs) > 1:
                ax.fill_between(xs, lo, hi, color=colour, alpha=0.15, linewidth=0)
            ax.errorbar(xs, ys, yerr=[ys - lo, hi - ys], color=colour, marker="o", ms=4, capsize=3, label=m)
        else:  # a probe, not a contender: dashed, hollow, no band, nudged right off the main agent's
            _, style, nudge = _EXPLOITER_STYLE[role_of(m)]
            ax.errorbar(
                np.array(xs) + nudge, ys, yerr=[ys - lo, hi - ys], color=colour, marker="s", ms=4,
                mfc="white", capsize=2, linestyle=style, linewidth=1.2, elinewidth=0.8, label=m,
            )  # fmt: skip
    for bot, style in zip(rep.data.config.bots, ("--", ":"), strict=True):
        if bot in rep.fit.ratings:
            ax.axhline(
                rep.fit.ratings[bot], color="0.3", linestyle=style, linewidth=1.2, label=f"{bot} (bot)"
            )
    ax.scatter(
        gens,
        [rep.history[g].ratings[rep.champions[g]] for g in gens],
        marker="*",
        s=260,
        color="gold",
        edgecolor="black",
        zorder=5,
        label="champion after the generation",
    )
    ax.set_xticks(gens[:: max(1, math.ceil(len(gens) / 20))])  # at most about twenty labels
    ax.set_xlim(min(gens, default=1) - 0.5, max(gens, default=1) + 0.5)
    ax.set_xlabel("after generation")
    ax.set_ylabel("Elo (random = 0), 95% interval")
    ax.set_title(f"League {rep.data.name}: Elo ladder over generations")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    for role, (family, style, _) in _EXPLOITER_STYLE.items():  # one key per exploiter role present
        if any(role_of(m) == role for m in colours):
            colour = colormaps[family](0.6)
            handles.append(
                Line2D(
                    [], [], color=colour, linestyle=style, marker="s", mfc="white", label=ROLE_LABELS[role]
                )
            )
    # the key lists every snapshot: a column holds LADDER_KEY_ROWS, and the figure widens for each
    # further column, so that a long league's key never squeezes the axes to nothing
    columns = math.ceil(len(handles) / LADDER_KEY_ROWS)
    fig.set_size_inches(8 + 1.2 * (columns - 1), 4.6)
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
        ncols=columns,
    )
    return fig


def draw_exploitability(rep: LeagueReport) -> Any:
    """The main exploiter's score against the champion it trained on, per generation, against an
    even 0.5 and the score at which it starts again (`exploiter_reset_score`); and, on an axis
    of its own, each generation's exact NashConv where the board allowed one. Either may be
    missing."""
    fig = _figure(6.5, 3.6)
    ax = fig.add_subplot()
    exact = rep.data.nash_conv
    gens = sorted(set(rep.exploitability) | set(exact))
    handles = []
    if rep.exploitability:
        scored = sorted(rep.exploitability)
        ys = [rep.exploitability[g] for g in scored]
        handles += ax.plot(scored, ys, color="tab:orange", marker="s", label="main exploiter (left)")
        handles.append(ax.axhline(0.5, color="0.3", linestyle="--", linewidth=1.2, label="even (0.5)"))
        reset = rep.data.config.exploiter_reset_score
        handles.append(
            ax.axhline(reset, color="tab:red", linestyle=":", linewidth=1.2, label=f"reset ({reset:g})")
        )
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("score against the champion (draw = 1/2)")
    ax.grid(alpha=0.3)
    if exact:
        right = ax.twinx() if rep.exploitability else ax
        xs = sorted(exact)
        label = "exact NashConv of the main agent" + (" (right)" if rep.exploitability else "")
        handles += right.plot(xs, [exact[g] for g in xs], color="tab:blue", marker="o", label=label)
        right.set_ylim(-0.06, 2.06)
        right.set_ylabel("NashConv (0: unexploitable)")
    ax.set_xticks(gens)
    ax.set_xlim(min(gens, default=2) - 0.5, max(gens, default=2) + 0.5)
    ax.set_xlabel("generation")
    title = (
        "the main exploiter against the champion it trained on" if rep.exploitability else "exact NashConv"
    )
    ax.set_title(f"Exploitability: {title}", fontsize=10)
    ax.legend(handles=handles, fontsize=8, loc="lower right")
    return fig


def draw_matrix(rep: LeagueReport) -> Any:
    """Heatmap of scores, row against column, with every cell's value printed."""
    from matplotlib import colormaps

    n = len(rep.members)
    fig = _figure(max(4.5, 0.75 * n + 2.2), max(3.8, 0.65 * n + 1.6))
    ax = fig.add_subplot()
    cmap = colormaps["RdYlGn"].with_extremes(bad="0.85")
    im = ax.imshow(np.ma.masked_invalid(rep.scores), cmap=cmap, vmin=0.0, vmax=1.0)
    for i in range(n):
        for j in range(n):
            v = rep.scores[i, j]
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=9, color="black")
    ax.set_xticks(range(n), rep.members, rotation=45, ha="right")
    ax.set_yticks(range(n), rep.members)
    for label in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        if role_of(label.get_text()) not in (MAIN, None):  # an exploiter: set apart from contenders
            label.set(style="italic", color="0.35")
    ax.set_xlabel("against (column)")
    ax.set_ylabel("score of (row)")
    ax.set_title("Score matrix: row vs column")
    fig.colorbar(im, ax=ax, shrink=0.8, label="score (draw = 1/2)")
    return fig


def draw_training(rep: LeagueReport) -> Any:
    """Win rate against each opponent, policy and value loss, and entropy, per iteration."""
    fig = _figure(10, 6.4)
    axes = fig.subplots(2, 2, sharex=True)
    x0, starts, series = 0, [], {}
    for g in sorted(rep.data.metrics):
        its = rep.data.metrics[g]
        starts.append((x0, g, len(its)))
        for i, m in enumerate(its):
            for k, v in m.items():
                if is_plotted(k):
                    series.setdefault(k, {})[x0 + i] = v
        x0 += len(its)
    panels = [
        (axes[0, 0], "win rate against each opponent", sorted(k for k in series if k.startswith("vs/"))),
        (axes[0, 1], "policy loss (PPO: clipped surrogate; AlphaZero: cross-entropy)", ["losses/policy"]),
        (axes[1, 0], "value loss", ["losses/value"]),
        (axes[1, 1], "entropy", ["losses/entropy"]),
    ]
    colours = _snap_colours(rep.members) | {"random": "0.55", "tactical": "black", "self": "tab:red"}
    for ax, title, keys in panels:
        for k in keys:
            pts = series.get(k, {})
            if not pts:
                continue
            xs = np.arange(x0)
            ys = np.array([pts.get(x, np.nan) for x in xs])
            label = k.split("/")[1] if k.startswith("vs/") else None
            colour = colours.get(label, None) if label else "tab:blue"
            ax.plot(xs, ys, marker=".", ms=3, linewidth=1.2, label=label, color=colour)
        for start, _, _ in starts[1:]:
            ax.axvline(start - 0.5, color="0.7", linestyle=":", linewidth=1)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylim(-0.03, 1.03)
    if series:
        axes[0, 0].legend(fontsize=7, ncol=2, loc="lower right")
    every = max(1, math.ceil(len(starts) / 10))  # at most about ten labels, so they never collide
    shown = starts[::every]
    for ax in axes[1]:
        ax.set_xticks([s + n / 2 - 0.5 for s, _, n in shown], [str(g) for _, g, _ in shown])
        ax.set_xlabel("iterations, generation by generation (generation numbers below)")
    fig.suptitle(f"League {rep.data.name}: training per iteration")
    return fig


def draw_game(game: SampleGame) -> Any:
    """The final position of a sample game, drawn for its game (`_DRAW_GAME`)."""
    return _DRAW_GAME[game.game.name](game)


def _draw_connect4(game: SampleGame) -> Any:
    """Connect Four's final board, stones numbered by move, the winning run circled."""
    from matplotlib.patches import Circle, FancyBboxPatch

    g = game.game.geometry
    fig = _figure(0.75 * g.cols + 0.6, 0.75 * g.rows + 1.1)
    ax = fig.add_subplot()
    ax.add_patch(FancyBboxPatch((-0.5, -0.5), g.cols, g.rows, boxstyle="round,pad=0.05", color=_BOARD_COLOUR))
    heights = [0] * g.cols
    where: dict[tuple[int, int], int] = {}
    for n, c in enumerate(game.actions):
        where[(g.rows - 1 - heights[c], c)] = n
        heights[c] += 1
    for r in range(g.rows):
        for c in range(g.cols):
            y = g.rows - 1 - r
            n = where.get((r, c))
            face = "white" if n is None else (_FIRST_COLOUR if n % 2 == 0 else _SECOND_COLOUR)
            ax.add_patch(Circle((c, y), 0.4, facecolor=face, edgecolor="black", linewidth=0.5))
            if n is not None:
                ax.text(c, y, str(n + 1), ha="center", va="center", fontsize=9, weight="bold",
                        color="white" if n % 2 == 0 else "black")  # fmt: skip
    for r, c in game.run:
        ax.add_patch(Circle((c, g.rows - 1 - r), 0.46, fill=False, edgecolor="lime", linewidth=3, zorder=4))
    ax.set_xlim(-0.7, g.cols - 0.3)
    ax.set_ylim(-0.7, g.rows - 0.3)
    ax.set_aspect("equal")
    ax.set_xticks(range(g.cols), [str(c + 1) for c in range(g.cols)])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    outcome = f"{game.winner} wins" if game.winner else "draw"
    ax.set_title(
        f"{game.first} (red, first) vs {game.second} (yellow)\n{outcome} in {len(game.actions)} moves",
        fontsize=10,
    )
    return fig


def _draw_dots_and_boxes(game: SampleGame) -> Any:
    """Dots and Boxes' final board: every line numbered by move in its drawer's colour, every box
    filled in its owner's."""
    from matplotlib.patches import Rectangle

    boxes = game.game.boxes
    fig = _figure(0.9 * boxes.cols + 0.9, 0.9 * boxes.rows + 1.3)
    ax = fig.add_subplot()
    state = game.game.new_state()
    for n, (action, mover) in enumerate(zip(game.actions, game.movers, strict=True)):
        y, x = boxes.line_cells[action]  # on the 2R+1 x 2C+1 grid: dots at even cells, lines between
        x0, y0 = x // 2, y // 2  # the line's first dot; a horizontal line ends one dot right
        x1, y1 = (x0 + 1, y0) if y % 2 == 0 else (x0, y0 + 1)
        colour = _FIRST_COLOUR if mover == 0 else _SECOND_COLOUR
        ax.plot([x0, x1], [-y0, -y1], color=colour, linewidth=4, solid_capstyle="round", zorder=2)
        label = {"boxstyle": "round,pad=0.15", "fc": "white", "lw": 0}
        ax.text((x0 + x1) / 2, -(y0 + y1) / 2, str(n + 1), ha="center", va="center", fontsize=7,
                weight="bold", zorder=3, bbox=label)  # fmt: skip
        state = state.apply(action)
    for b in range(boxes.boxes):
        owner = 0 if state.owned[0] >> b & 1 else 1
        r, c = divmod(b, boxes.cols)
        face = _FIRST_COLOUR if owner == 0 else _SECOND_COLOUR
        ax.add_patch(Rectangle((c, -r - 1), 1, 1, facecolor=face, alpha=0.25, zorder=1))
    for r in range(boxes.rows + 1):
        for c in range(boxes.cols + 1):
            ax.plot(c, -r, "o", color="black", markersize=5, zorder=4)
    ax.set_xlim(-0.3, boxes.cols + 0.3)
    ax.set_ylim(-boxes.rows - 0.3, 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    first = bin(state.owned[0]).count("1")
    outcome = f"{game.winner} wins" if game.winner else "draw"
    score = f"{first}-{boxes.boxes - first} in boxes"
    ax.set_title(f"{game.first} (red, first) vs {game.second} (yellow)\n{outcome}, {score}", fontsize=10)
    return fig


_DRAW_GAME = {ConnectFour.name: _draw_connect4, "dots_and_boxes": _draw_dots_and_boxes}
"""How the report draws a sample game of each game it can draw (a game missing here gets no
sample game)."""
_NOTATION = {
    ConnectFour.name: lambda game: f"columns 1-{game.geometry.cols}",
    "dots_and_boxes": lambda game: "lines h<row>,<col> and v<row>,<col>, rows and columns from 0",
}
"""How the page names each drawn game's move notation."""


PROBE_PREFIX = "suite/probe/"
"""The metrics of Dots and Boxes' strategy probes, one a principle (`dots_and_boxes.probes`)."""


def draw_suite(rep: LeagueReport) -> Any:
    """Suite metrics of each snapshot over generations."""
    fig = _figure(6.5, 3.6)
    ax = fig.add_subplot()
    gens = sorted(rep.data.suite)
    keys = ("suite/keeps_result", "suite/best_move", "suite/keeps_value", "suite/keeps_outcome")
    probes = sorted({k for m in rep.data.suite.values() for k in m if k.startswith(PROBE_PREFIX)})
    for key in (*keys, *probes):  # Connect Four's suite, or Dots and Boxes' with its strategy probes
        ys = [rep.data.suite[g].get(key, np.nan) for g in gens]
        if not np.isnan(ys).all():
            label = key.removeprefix(PROBE_PREFIX) if key in probes else key.split("/")[1]
            style = dict(linestyle="--", marker="s") if key in probes else dict(marker="o")
            ax.plot(gens, ys, label=label.replace("_", " "), **style)
    ax.set_xticks(gens)
    ax.set_ylim(0, 1)
    ax.set_xlabel("generation")
    ax.set_ylabel("fraction of counted positions")
    ax.set_title("Solver-labelled suite")
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


# ---- the page --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportFiles:
    """What `build_report` wrote."""

    html: Path
    """The self-contained page (images inlined)."""
    data: Path
    """``report.json``: the numbers on the page."""
    images: dict[str, Path]
    """PNG per figure name (`FIGURES`)."""
    report: LeagueReport = field(compare=False, repr=False)
    """The computed report."""

    @property
    def folder(self) -> Path:
        return self.html.parent

    def paths(self) -> list[Path]:
        return [self.html, self.data, *self.images.values()]


TEMPLATE = "report.html.j2"
"""The page's Jinja2 template, in the package's ``templates/`` folder."""


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("c4core", "templates"),
        autoescape=True,  # every name on the page is data: a league may call a member "<script>"
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.get_template(TEMPLATE)


def render_html(rep: LeagueReport, images: dict[str, Path]) -> str:
    """The page, with every image inlined as base64 and nothing fetched from anywhere."""
    fit, champ, config = rep.fit, rep.champion, rep.data.config
    lo, hi = fit.ci95[champ]
    last = max(rep.history, default=0)
    tiles = [
        ("champion", champ, None),
        ("champion Elo", elo(fit.ratings[champ]), f"95% CI [{elo(lo)}, {elo(hi)}]"),
    ]
    vs_tac = rep.vs_tactical
    if vs_tac is not None:
        wdl = f"W {vs_tac.win} / D {vs_tac.draw} / L {vs_tac.loss}"
        tiles.append(("score vs tactical", percent(vs_tac.score), wdl))  # a draw counts half
    tiles.append(
        ("generations", f"{last} of {config.generations}", f"{config.match_games} games per pairing")
    )
    matrix = [
        (m, [None if math.isnan(v) else v for v in row])
        for m, row in zip(rep.members, rep.scores.tolist(), strict=True)
    ]
    to_beat = [
        (
            r["champion"] or "-",
            r["from_generation"],
            r["trained"],
            "not yet" if r["iterations"] is None else r["iterations"],
        )
        for r in rep.iterations_to_beat
    ]
    return _template().render(
        rep=rep,
        data=rep.data,
        config=config,
        config_hash=config.training_hash(),
        # every kind of generation the league trains (PPO, then AlphaZero-style; or a table)
        training=config.describe_training(),
        net=None if config.main_learner in TABULAR_LEARNERS else f"{config.net.blocks}x{config.net.channels}",
        tiles=tiles,
        ladder=fit.ladder(),
        roles={m: role_label(m) for m in fit.ratings} if rep.has_roles else None,
        matrix=matrix,
        to_beat=to_beat,
        nash_conv=rep.data.nash_conv,
        beat_percent=f"{BEAT_SCORE:.0%}",
        images={name: base64.b64encode(path.read_bytes()).decode("ascii") for name, path in images.items()},
        sample_opponent=rep.sample.second if rep.sample is not None else None,
        move_notation=_NOTATION[rep.sample.game.name](rep.sample.game) if rep.sample is not None else None,
        last=last,
        drawn=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def write_report(rep: LeagueReport, out_dir: str | Path) -> ReportFiles:
    """Draw the figures, the page and ``report.json`` into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {"ladder": draw_ladder(rep), "matrix": draw_matrix(rep), "training": draw_training(rep)}
    if rep.exploitability or rep.data.nash_conv:
        figures["exploitability"] = draw_exploitability(rep)
    if rep.sample is not None:
        figures["game"] = draw_game(rep.sample)
    if rep.data.suite:
        figures["suite"] = draw_suite(rep)
    images = {}
    for name in FIGURES:
        if name in figures:
            images[name] = out / f"{name}.png"
            figures[name].savefig(images[name], format="png")
    page = out / "report.html"
    page.write_text(render_html(rep, images), encoding="utf-8")
    data = out / "report.json"
    data.write_text(json.dumps(rep.to_json(), indent=1))
    return ReportFiles(page, data, images, rep)


def build_report(
    source: LeagueData | LocalStore | str | Path,
    out_dir: str | Path,
    *,
    config: LeagueConfig | None = None,
    seed: int = 0,
) -> ReportFiles:
    """Compute a league's report and write it to `out_dir`. The one call for the CLI and the DAG.

    `source` is the league's `LeagueData` (`c4core.tracking.reports.read_league` reads one from MLflow),
    or, for a league kept locally, its `LocalStore` or folder (``runs/NAME``). `config` is needed
    only for a folder whose snapshots lack their training config; `seed` seeds the opponent of
    the sample game.
    """
    if isinstance(source, (str, Path)):
        if not Path(source).is_dir():
            raise ValueError(f"no league folder at {source}")
        source = LocalStore(source)
    if isinstance(source, LocalStore):
        source = read_local(source, config)
    if not isinstance(source, LeagueData):
        raise TypeError(
            f"a report is drawn from LeagueData, a LocalStore or a folder, not {type(source).__name__}"
        )
    return write_report(compute(source, seed), out_dir)
