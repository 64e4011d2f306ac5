"""The league report: the Elo ladder over generations, the score matrix, training curves, first- and
second-mover results, and a sample game, as one self-contained HTML file plus the same figures as PNGs.

Everything in the report is recomputed from what a league stores, never from a live process:

- **Ladder over generations.** After generation ``g`` the league had played exactly the matches
  between members up to ``gen<g>`` (and the bots), so refitting Elo on those records reproduces the
  ladder the league saw at the time. Every rating carries its 95% interval; the bots are flat
  reference lines at their final rating; the champion after each generation is starred.
- **Score matrix.** Row scores against column (a draw counts half), from the match records.
- **First and second mover.** A 0.50 score can hide "wins every game as first player, loses every
  game as second", so the champion's results against each opponent are split by who moved first.
- **Training curves.** Per iteration, across generations: win rate against each opponent
  (``vs/<opponent>/win``), ``losses/policy``, ``losses/value`` and ``losses/entropy``.
- **Sample game.** One seeded game of the champion (greedy) against ``tactical``, with numbered
  stones and the winning run marked.
- **Suite.** If snapshots carry ``suite/keeps_result`` or ``suite/best_move``, a curve over
  generations.

`build_report` takes a league store (`LocalStore`, or `c4core.registry.MLflowStore`), a league
folder, or a `Tracking` plus a league name, and writes ``report.html``, ``report.json`` and the
PNGs into a folder. `log_report` does that into MLflow: the league run's ``report/`` artifacts,
and optionally the champion version's source run, with a tag and a link in its description.

Figures use matplotlib's object API on the Agg canvas: no pyplot state, no display, safe in
worker processes. MLflow is imported only by the functions that read or write it.
"""

from __future__ import annotations

import base64
import html
import json
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from c4core.elo import EloFit
from c4core.game import STANDARD, Geometry, Position
from c4core.league import BOT_NAMES, LeagueConfig, LocalStore, champion, fit_ratings, snapshot_name
from c4core.match import WDL, MatchResult

if TYPE_CHECKING:  # mlflow loads only when a report is read from or written to it
    from mlflow.entities.model_registry import ModelVersion

    from c4core.net import Checkpoint
    from c4core.registry import MLflowStore, Tracking

REPORT_DIR = "report"
"""Artifact folder (on the league run and the champion's source run) that holds the report."""
REPORT_TAG = "c4.report"
"""League-run tag: the artifact path of the live report."""
VERSION_TAG = "report"
"""Model-version tag: the artifact URI of the report attached to the champion."""
FIGURES = ("ladder", "matrix", "game", "training", "suite")
"""The report's figures, in page order; ``suite`` only when suite metrics exist."""
SAMPLE_OPPONENT = "tactical"

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
    store: Any = None
    """The store, to load the champion's snapshot for the sample game."""

    def snapshot(self, generation: int) -> Checkpoint | None:
        return self.store.snapshot(generation) if self.store is not None else None


def read_local(store: LocalStore, config: LeagueConfig | None = None) -> LeagueData:
    """A league kept in a folder (`LocalStore`): ``gen<g>.pt``, ``gen<g>.metrics.json``, matches."""
    config = config or _config_of(store)
    metrics: dict[int, list[dict[str, float]]] = {}
    suite: dict[int, dict[str, float]] = {}
    for g in _generations(store):
        path = store.root / f"{snapshot_name(g)}.metrics.json"
        metrics[g] = json.loads(path.read_text()) if path.is_file() else []
        suite_path = store.root / f"{snapshot_name(g)}.suite.json"
        found = json.loads(suite_path.read_text()) if suite_path.is_file() else {}
        found |= {k: v for m in metrics[g] for k, v in m.items() if k.startswith("suite/")}
        if found:
            suite[g] = found
    return LeagueData(config.name, config, store.results(), metrics, suite, str(store.root), store)


def read_mlflow(store: MLflowStore) -> LeagueData:
    """A league kept in MLflow: match records from the match runs, metrics from the generation runs."""
    metrics: dict[int, list[dict[str, float]]] = {}
    suite: dict[int, dict[str, float]] = {}
    client = store.client
    for g in _generations(store):
        run = store.generation_run(g)
        assert run is not None
        keys = [k for k in run.data.metrics if _plotted(k)]
        steps: dict[int, dict[str, float]] = {}
        for key in sorted(keys):
            for m in client.get_metric_history(run.info.run_id, key):
                steps.setdefault(m.step, {})[key] = m.value
        metrics[g] = [steps[s] for s in sorted(steps)]
        found = {k: v for k, v in run.data.metrics.items() if k.startswith("suite/")}
        if found:
            suite[g] = found
    source = f"{store.tracking.tracking_uri}, experiment {store.tracking.experiment}"
    return LeagueData(store.config.name, store.config, store.results(), metrics, suite, source, store)


def open_mlflow_league(tracking: Tracking, league: str, config_hash: str | None = None) -> MLflowStore:
    """The store of a league in MLflow, found by name alone (the newest config, unless one is given).

    The config comes from a finished snapshot's checkpoint, so nothing but MLflow is needed.
    Raises `ValueError` when there is no such league or it has no finished generation yet.
    """
    from mlflow.entities import ViewType

    from c4core.net import Checkpoint
    from c4core.registry import COMPLETE, KIND, MLflowStore

    for what, value in (("league", league), ("config hash", config_hash or "x")):
        if not value or not all(ch.isalnum() or ch in "-_." for ch in value):
            raise ValueError(f"{what} {value!r} must be letters, digits, '-', '_' or '.'")
    client = tracking.client()
    exp = client.get_experiment_by_name(tracking.experiment)
    if exp is None:
        raise ValueError(f"no experiment {tracking.experiment!r} at {tracking.tracking_uri}")
    flt = f"tags.`{KIND}` = 'league' and tags.league = '{league}'"
    if config_hash:
        flt += f" and tags.config_hash = '{config_hash}'"
    runs = client.search_runs(
        [exp.experiment_id], flt, ViewType.ACTIVE_ONLY, max_results=1, order_by=["attributes.start_time DESC"]
    )
    if not runs:
        raise ValueError(f"no league {league!r} in {tracking.tracking_uri}")
    chash = runs[0].data.tags["config_hash"]
    flt = (
        f"tags.`{KIND}` = 'generation' and tags.league = '{league}' and tags.config_hash = '{chash}' "
        f"and tags.`{COMPLETE}` = 'true'"
    )
    gens = client.search_runs([exp.experiment_id], flt, ViewType.ACTIVE_ONLY, max_results=1)
    if not gens:
        raise ValueError(f"league {league!r} has no finished generation yet")
    g = int(gens[0].data.tags["generation"])
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(gens[0].info.run_id, f"checkpoint/{snapshot_name(g)}.pt", tmp)
        config = LeagueConfig.from_dict(Checkpoint.load(path).train_config)
    if config.training_hash() != chash:
        raise ValueError(f"league {league!r}: the snapshot's config does not hash to {chash}")
    return MLflowStore(tracking, config)


def _config_of(store: LocalStore) -> LeagueConfig:
    snap = store.snapshot(1)
    if snap is None:
        raise ValueError(f"{store.root} holds no finished generation (gen1.pt)")
    config = LeagueConfig.from_dict(snap.train_config)
    try:  # a folder may have been renamed or copied: its name is the league's
        return replace(config, name=store.root.name)
    except ValueError:  # a folder name that is no league name
        return config


def _generations(store: Any) -> list[int]:
    """The finished generations, 1, 2, ... up to the first missing one (generations run in order)."""

    def finished(g: int) -> bool:
        if isinstance(store, LocalStore):  # no need to load the checkpoint to know it is there
            return (store.root / f"{snapshot_name(g)}.pt").is_file()
        return store.generation_run(g) is not None

    gens: list[int] = []
    while finished(len(gens) + 1):
        gens.append(len(gens) + 1)
    return gens


def _plotted(key: str) -> bool:
    return key in ("losses/policy", "losses/value", "losses/entropy") or (
        key.startswith("vs/") and key.endswith("/win")
    )


# ---- the numbers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleGame:
    """One game of the champion against an opponent."""

    first: str
    """Who moved first."""
    second: str
    """Who moved second."""
    moves: str
    """The game in solver notation (columns 1..cols)."""
    winner: str | None
    """The winner's name, or None for a draw."""
    run: tuple[tuple[int, int], ...]
    """Cells ``(row from the top, column)`` of the winning run(s); empty for a draw."""
    seed: int
    """Seed of the opponent's random choices."""
    geometry: Geometry = STANDARD


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
    """Bots first, then snapshots by generation."""
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

    def to_json(self) -> dict[str, Any]:
        """The report's numbers (what ``report.json`` holds)."""
        fit = self.fit
        vs_tac = next((s for s in self.splits if s.opponent == SAMPLE_OPPONENT), None)
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
            "champion_vs_tactical_score": vs_tac.total.score if vs_tac else None,
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
        }


def _wdl(w: WDL) -> dict[str, int]:
    return {"win": w.win, "draw": w.draw, "loss": w.loss}


def _gen_of(member: str) -> int:
    return int(member[3:]) if member.startswith("gen") and member[3:].isdigit() else 0


def order_members(names: Iterable[str]) -> list[str]:
    """Bots first (in `BOT_NAMES` order), then snapshots by generation, then anything else by name."""
    names = set(names)
    bots = [b for b in BOT_NAMES if b in names]
    snaps = sorted((n for n in names if _gen_of(n)), key=_gen_of)
    rest = sorted(names - set(bots) - set(snaps))
    return bots + snaps + rest


def ladder_history(results: Sequence[MatchResult]) -> dict[int, EloFit]:
    """Per generation ``g``, Elo refit on the matches whose snapshots are all ``gen<g>`` or older:
    the ladder as it stood after generation ``g``, from the match records alone."""
    last = max((_gen_of(n) for r in results for n in (r.a, r.b)), default=0)
    out: dict[int, EloFit] = {}
    for g in range(1, last + 1):
        fit = fit_ratings([r for r in results if max(_gen_of(r.a), _gen_of(r.b)) <= g])
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
            rows[r.a] = SplitRow(r.a, _flip(r.b_first), _flip(r.a_first))
    return [rows[m] for m in order if m in rows]


def _flip(w: WDL) -> WDL:
    return WDL(w.loss, w.draw, w.win)


def winning_runs(stones: int, g: Geometry) -> list[tuple[int, ...]]:
    """Every run of `g.connect` stones in a bitboard, as bit indices (see `c4core.game`'s layout).

    The same shifted-AND as `c4core.game.has_won`, keeping where each run starts: bit ``b`` of
    the AND along direction ``d`` means stones at ``b, b+d, ..., b+(k-1)d``.
    """
    runs = []
    for d in g.directions:
        start = stones
        for i in range(1, g.connect):
            start &= stones >> (i * d)
        while start:
            low = start & -start
            b = low.bit_length() - 1
            runs.append(tuple(b + i * d for i in range(g.connect)))
            start ^= low
    return runs


def bit_cell(bit: int, g: Geometry) -> tuple[int, int]:
    """``(row from the top, column)`` of a bit index."""
    return g.rows - 1 - bit % g.height, bit // g.height


def play_sample_game(
    checkpoint: Checkpoint,
    name: str,
    seed: int = 0,
    champion_first: bool = True,
    opponent: str = SAMPLE_OPPONENT,
) -> SampleGame:
    """One seeded game of a snapshot (greedy) against a scripted bot, from the empty board."""
    import torch

    from c4core.bots import BOTS
    from c4core.net import NetPlayer

    g = checkpoint.geometry
    champ = NetPlayer(checkpoint.build("cpu"), name=name)
    bot = BOTS[opponent]()
    players = (champ, bot) if champion_first else (bot, champ)
    gen = torch.Generator().manual_seed(seed)
    pos = Position(geometry=g)
    moves = []
    while not pos.is_terminal:
        col = players[pos.ply % 2].act_position(pos, gen)
        pos = pos.play(col)
        moves.append(str(col + 1))
    winner, run = None, ()
    if pos.won:
        winner = players[(pos.ply - 1) % 2].name
        cells = {bit_cell(b, g) for r in winning_runs(pos.opponent, g) for b in r}  # the mover's stones
        run = tuple(sorted(cells))
    return SampleGame(players[0].name, players[1].name, "".join(moves), winner, run, seed, g)


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
    ckpt = data.snapshot(_gen_of(champ))
    if ckpt is not None:
        sample = play_sample_game(ckpt, champ, seed)
    return LeagueReport(data, members, fit, history, champions, champ, scores, games, splits, sample)


# ---- figures ---------------------------------------------------------------------------------------
def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _snap_colours(members: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    snaps = [m for m in members if _gen_of(m)]
    cmap = colormaps["viridis"]
    return {m: cmap(0.85 * k / max(len(snaps) - 1, 1)) for k, m in enumerate(snaps)}


def draw_ladder(rep: LeagueReport) -> Any:
    """Elo of every snapshot after each generation, with 95% bands; bots flat; champion starred."""
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
        if len(xs) > 1:
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.15, linewidth=0)
        ax.errorbar(xs, ys, yerr=[ys - lo, hi - ys], color=colour, marker="o", ms=4, capsize=3, label=m)
    for bot, style in zip(BOT_NAMES, ("--", ":"), strict=True):
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
    ax.set_xticks(gens)
    ax.set_xlim(min(gens, default=1) - 0.5, max(gens, default=1) + 0.5)
    ax.set_xlabel("after generation")
    ax.set_ylabel("Elo (random = 0), 95% interval")
    ax.set_title(f"League {rep.data.name}: Elo ladder over generations")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
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
                if _plotted(k):
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
    """The final board of a game, stones numbered by move, the winning run circled."""
    from matplotlib.patches import Circle, FancyBboxPatch

    g = game.geometry
    fig = _figure(0.75 * g.cols + 0.6, 0.75 * g.rows + 1.1)
    ax = fig.add_subplot()
    ax.add_patch(FancyBboxPatch((-0.5, -0.5), g.cols, g.rows, boxstyle="round,pad=0.05", color=_BOARD_COLOUR))
    heights = [0] * g.cols
    where: dict[tuple[int, int], int] = {}
    for n, ch in enumerate(game.moves):
        c = int(ch) - 1
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
        f"{game.first} (red, first) vs {game.second} (yellow)\n{outcome} in {len(game.moves)} moves",
        fontsize=10,
    )
    return fig


def draw_suite(rep: LeagueReport) -> Any:
    """Suite metrics of each snapshot over generations."""
    fig = _figure(6.5, 3.6)
    ax = fig.add_subplot()
    gens = sorted(rep.data.suite)
    for key in ("suite/keeps_result", "suite/best_move"):
        ys = [rep.data.suite[g].get(key, np.nan) for g in gens]
        ax.plot(gens, ys, marker="o", label=key.split("/")[1].replace("_", " "))
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


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.champ { background: #fff4c2; font-weight: bold; } .muted { color: #777; font-size: 0.9em; }
img { max-width: 100%; height: auto; } .tiles { display: flex; gap: 2em; flex-wrap: wrap; }
.tile { background: #f5f5f5; padding: 0.6em 1em; border-radius: 6px; }
.tile b { display: block; font-size: 1.5em; }
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


def _wdl_cells(w: WDL) -> str:
    return f"<td>{w.win}</td><td>{w.draw}</td><td>{w.loss}</td><td>{w.score:.3f}</td>"


def render_html(rep: LeagueReport, images: dict[str, Path]) -> str:
    """The page, with every image inlined as base64 and nothing fetched from anywhere."""
    fit, champ, d = rep.fit, rep.champion, rep.data
    lo, hi = fit.ci95[champ]
    last = max(rep.history, default=0)
    vs_tac = next((s for s in rep.splits if s.opponent == SAMPLE_OPPONENT), None)
    tiles = [
        ("champion", champ),
        ("champion Elo", f"{fit.ratings[champ]:.1f}", f"95% CI [{lo:.1f}, {hi:.1f}]"),
    ]
    if vs_tac is not None:
        t = vs_tac.total
        tiles.append(("score vs tactical", f"{t.score:.3f}", f"W {t.win} / D {t.draw} / L {t.loss}"))
    tiles.append(
        ("generations", f"{last} of {d.config.generations}", f"{d.config.match_games} games per pairing")
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>League {_e(d.name)}: report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>League <code>{_e(d.name)}</code></h1>",
        f'<p class="muted">profile {_e(d.config.profile)}, config {_e(d.config.training_hash())}, net '
        f"{d.config.net.blocks}x{d.config.net.channels}, {d.config.ppo.iterations} iterations x "
        f"{d.config.ppo.games} games per generation. Source: {_e(d.source)}.</p>",
        '<div class="tiles">',
    ]
    for label, value, *note in tiles:
        small = f'<span class="muted">{_e(note[0])}</span>' if note else ""
        out.append(
            f'<div class="tile">{_e(label)}<b id="tile-{label.replace(" ", "-")}">{_e(value)}</b>'
            f"{small}</div>"
        )
    out.append("</div>")

    out += ["<h2>Elo ladder</h2>", _img(images["ladder"], "Elo ladder over generations")]
    out.append(
        '<table id="ladder"><tr><th>member</th><th>Elo</th><th>95% lo</th><th>95% hi</th><th>games</th></tr>'
    )
    for name, r, rlo, rhi in fit.ladder():
        cls = ' class="champ"' if name == champ else ""
        out.append(
            f"<tr{cls}><td>{_e(name)}</td><td>{r:.1f}</td><td>{rlo:.1f}</td><td>{rhi:.1f}</td>"
            f"<td>{fit.games[name]}</td></tr>"
        )
    out.append("</table>")
    out.append(
        '<p class="muted">Joint Bradley-Terry fit over every match record, random pinned at 0; the plot '
        "refits on the matches played up to each generation. Stars mark the champion after each "
        "generation.</p>"
    )

    out += ["<h2>Score matrix</h2>", _img(images["matrix"], "score matrix, row against column")]
    out.append('<details><summary>as a table</summary><table id="matrix"><tr><th>row vs column</th>')
    out += [f"<th>{_e(m)}</th>" for m in rep.members]
    out.append("</tr>")
    for i, m in enumerate(rep.members):
        cells = "".join("<td></td>" if math.isnan(v) else f"<td>{v:.3f}</td>" for v in rep.scores[i])
        out.append(f"<tr><td>{_e(m)}</td>{cells}</tr>")
    out.append("</table></details>")

    out.append(f"<h2>The champion ({_e(champ)}) as first and as second mover</h2>")
    out.append(
        '<table id="splits"><tr><th rowspan="2">opponent</th><th colspan="4">champion moves first</th>'
        '<th colspan="4">opponent moves first</th><th colspan="4">total</th></tr><tr>'
        + "<th>W</th><th>D</th><th>L</th><th>score</th>" * 3
        + "</tr>"
    )
    for s in rep.splits:
        out.append(
            f"<tr><td>{_e(s.opponent)}</td>{_wdl_cells(s.first)}{_wdl_cells(s.second)}{_wdl_cells(s.total)}</tr>"
        )
    out.append("</table>")

    if rep.sample is not None and "game" in images:
        gm = rep.sample
        out += [
            f"<h2>A sample game: {_e(gm.first)} vs {_e(gm.second)}</h2>",
            _img(images["game"], "sample game"),
        ]
        result = f"{gm.winner} wins" if gm.winner else "a draw"
        out.append(
            f'<p>Moves (columns 1-{gm.geometry.cols}): <code id="moves">{_e(gm.moves)}</code>; {_e(result)}. '
            f'<span class="muted">The champion plays greedily; {_e(SAMPLE_OPPONENT)} draws with seed '
            f"{gm.seed}."
            "</span></p>"
        )
    out += ["<h2>Training</h2>", _img(images["training"], "training curves")]
    if "suite" in images:
        out += ["<h2>Solver-labelled suite</h2>", _img(images["suite"], "suite metrics over generations")]
    when = datetime.now(UTC).isoformat(timespec="seconds")
    out.append(f'<p class="muted">Drawn {when} after generation {last}. The numbers are in report.json.</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_report(rep: LeagueReport, out_dir: str | Path) -> ReportFiles:
    """Draw the figures, the page and ``report.json`` into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = {"ladder": draw_ladder(rep), "matrix": draw_matrix(rep), "training": draw_training(rep)}
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
    source: Any,
    out_dir: str | Path,
    *,
    league: str | None = None,
    config: LeagueConfig | None = None,
    seed: int = 0,
) -> ReportFiles:
    """Read a league, compute its report and write it to `out_dir`. The one call for the CLI and the DAG.

    `source` is any of: an `MLflowStore` (`c4core.registry`), a `LocalStore`, a league folder
    (``runs/NAME``), or a `Tracking` with `league` naming the league (its newest config). `config`
    is needed only for a local folder whose snapshots lack their training config; `seed` seeds the
    opponent of the sample game.
    """
    if isinstance(source, (str, Path)):
        if not Path(source).is_dir():
            raise ValueError(f"no league folder at {source}")
        source = LocalStore(source)
    if isinstance(source, LeagueData):
        data = source
    elif isinstance(source, LocalStore):
        data = read_local(source, config)
    elif hasattr(source, "league_run_id"):  # an MLflowStore (duck-typed: mlflow loads only if used)
        data = read_mlflow(source)
    elif hasattr(source, "tracking_uri"):  # a Tracking
        if not league:
            raise ValueError("reading a league from MLflow needs its name")
        data = read_mlflow(open_mlflow_league(source, league))
    else:
        raise TypeError(f"cannot read a league from {type(source).__name__}")
    return write_report(compute(data, seed), out_dir)


# ---- MLflow ----------------------------------------------------------------------------------------
def log_report(store: MLflowStore, version: ModelVersion | None = None, seed: int = 0) -> ReportFiles:
    """Build the report and log it to the league run's ``report/`` artifacts (overwriting the last
    one, so the run always shows the latest). With `version` (the champion's), also log it to
    that version's source run and link it from the version's tag ``report`` and its description.
    The returned paths live in a temporary folder that is gone once this returns."""
    client = store.client
    with tempfile.TemporaryDirectory() as tmp:
        files = build_report(store, Path(tmp) / REPORT_DIR, seed=seed)
        client.log_artifacts(store.league_run_id, str(files.folder), REPORT_DIR)
        client.set_tag(store.league_run_id, REPORT_TAG, f"{REPORT_DIR}/report.html")
        if version is not None and version.run_id:
            client.log_artifacts(version.run_id, str(files.folder), REPORT_DIR)
            uri = f"{client.get_run(version.run_id).info.artifact_uri}/{REPORT_DIR}/report.html"
            client.set_model_version_tag(version.name, version.version, VERSION_TAG, uri)
            line = f"League report: `{uri}`"
            desc = version.description or ""
            if line not in desc:
                kept = [ln for ln in desc.splitlines() if not ln.startswith("League report: ")]
                while kept and not kept[-1].strip():
                    kept.pop()
                client.update_model_version(
                    version.name, version.version, "\n".join([*kept, "", line]).strip()
                )
    return files
