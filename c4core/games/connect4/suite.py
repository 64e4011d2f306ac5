"""Strength against perfect play: scoring a player on a solver-labelled suite of positions.

A suite is JSONL, one position a line (format in ``shared/suite/README.md``)::

    {"moves": "4453", "ply": 4, "scores": [-5, -5, -2, -3, -4, -2, -2]}

``scores`` holds the exact value of each column for the side to move (Pons's convention: positive
a forced win, 0 a draw, negative a loss, ``null`` a full column). Two metrics, after c4a0:

- **keeps the result**: the chosen move has the same outcome class (win, draw, loss) as the best
  move, so a won position stays won and a drawn one drawn;
- **best move**: the chosen move has the best score.

Only positions where the choice matters are counted: some legal move has a different outcome
class from the best one (in a position where every move loses, no move can be wrong). Both are
also reported per ply bucket (4-10, 11-20, 21-36; a suite with other plies gets an ``other``
bucket, so the buckets always add up to the total).

All counted positions go through the player's batched `act` in one call, so a network (or a
search over it) sees them as one batch. A greedy player, with or without search, scores the
same every time; a stochastic one (``random``, ``tactical``) gives one draw of its score per
seed, around its expectation.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from c4core.figures import percent
from c4core.games import ConnectFour, Game
from c4core.games.connect4.rules import STANDARD, Geometry, Position

if TYPE_CHECKING:  # torch loads only when a suite is scored, so parsing one stays light
    from c4core.games.players import Player

BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("ply_4_10", 4, 10),
    ("ply_11_20", 11, 20),
    ("ply_21_36", 21, 36),
)
"""Ply buckets of the report: name, first ply, last ply (inclusive)."""
OTHER = "ply_other"
"""The bucket of positions outside `BUCKETS` (reported only when there are some)."""


def outcome(score: int) -> int:
    """Outcome class of a solver score: +1 win, 0 draw, -1 loss."""
    return (score > 0) - (score < 0)


def bucket_of(ply: int) -> str:
    """The report bucket a ply falls in."""
    for name, lo, hi in BUCKETS:
        if lo <= ply <= hi:
            return name
    return OTHER


@dataclass(frozen=True)
class SuitePosition:
    """One labelled position."""

    moves: str
    """The game so far, in solver notation."""
    scores: tuple[int | None, ...]
    """Exact score of each column for the side to move; None for a full column."""
    source: str = ""
    """Where it was read (``file:line``), for messages."""
    geometry: Geometry = STANDARD
    """The board it is played on."""

    @property
    def ply(self) -> int:
        return len(self.moves)

    @cached_property
    def position(self) -> Position:
        return Position.from_moves(self.moves, self.geometry)

    @property
    def best(self) -> int:
        """The best score."""
        return max(s for s in self.scores if s is not None)

    @property
    def counted(self) -> bool:
        """Whether the choice matters: some legal move has another outcome class than the best."""
        best = outcome(self.best)
        return any(outcome(s) != best for s in self.scores if s is not None)

    def keeps_result(self, col: int) -> bool:
        """Whether column `col` (0-based) has the best move's outcome class."""
        s = self.scores[col]
        return s is not None and outcome(s) == outcome(self.best)

    def is_best(self, col: int) -> bool:
        """Whether column `col` (0-based) has the best score."""
        return self.scores[col] == self.best


def parse_suite(
    lines: Iterable[str], source: str = "<suite>", geometry: Geometry = STANDARD
) -> list[SuitePosition]:
    """Parse and check suite lines; `ValueError` naming ``source:line`` for the first bad one."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        try:
            out.append(_parse_line(line, where, geometry))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    if not out:
        raise ValueError(f"{source} holds no positions")
    return out


def load_suite(path: str | Path, geometry: Geometry = STANDARD) -> list[SuitePosition]:
    """Read a suite file (`parse_suite` on its lines); `ValueError` when missing or malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"no such suite file: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read suite {path} ({type(e).__name__})") from None
    return parse_suite(text.splitlines(), str(path), geometry)


def _parse_line(line: str, where: str, g: Geometry) -> SuitePosition:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg})") from None
    if not isinstance(rec, dict):
        raise ValueError('expected an object like {"moves": "4453", "ply": 4, "scores": [...]}')
    missing = [k for k in ("moves", "scores") if k not in rec]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    moves, scores = rec["moves"], rec["scores"]
    if not isinstance(moves, str):
        raise ValueError(f"moves must be a string of column digits, got {type(moves).__name__}")
    pos = Position.from_moves(moves, g)  # its ValueError already says which move is wrong
    if pos.is_terminal:
        raise ValueError("the game is already over after these moves")
    if "ply" in rec and (type(rec["ply"]) is not int or rec["ply"] != len(moves)):
        raise ValueError(f"ply is {rec['ply']!r} but moves has {len(moves)} moves")
    if not isinstance(scores, list) or len(scores) != g.cols:
        got = len(scores) if isinstance(scores, list) else type(scores).__name__
        raise ValueError(f"scores must be a list of {g.cols} entries (one per column), got {got}")
    for c, s in enumerate(scores):
        if s is not None and type(s) is not int:
            raise ValueError(f"score of column {c + 1} is {s!r}; use a whole number or null")
        if (s is None) == pos.can_play(c):
            state = "playable" if pos.can_play(c) else "full"
            raise ValueError(f"column {c + 1} is {state} but its score is {s!r}")
    return SuitePosition(moves=moves, scores=tuple(scores), source=where, geometry=g)


@dataclass(frozen=True)
class Tally:
    """Counts over one set of counted positions."""

    counted: int = 0
    """Positions where the choice matters."""
    keeps: int = 0
    """Of those, how many the player kept the result in."""
    best: int = 0
    """Of those, how many it played a best move in."""

    def add(self, keeps: bool, best: bool) -> Tally:
        return Tally(self.counted + 1, self.keeps + keeps, self.best + best)

    @property
    def keeps_rate(self) -> float:
        """Fraction kept (NaN when nothing was counted)."""
        return self.keeps / self.counted if self.counted else math.nan

    @property
    def best_rate(self) -> float:
        """Fraction of best moves (NaN when nothing was counted)."""
        return self.best / self.counted if self.counted else math.nan


@dataclass(frozen=True)
class SuiteReport:
    """A player's score on a suite."""

    player: str
    """The player's name."""
    positions: int
    """Positions in the suite."""
    total: Tally
    """All counted positions."""
    buckets: dict[str, Tally] = field(default_factory=dict)
    """Counted positions per ply bucket (`BUCKETS`, then `OTHER` if any); they add up to `total`."""
    seed: int = 0
    """Seed of the player's random choices."""
    seconds: float = 0.0
    """Wall time of the player's `act` call."""

    def metrics(self) -> dict[str, float]:
        """Flat metrics for a tracking server: rates are fractions in 0..1, counts are counts."""
        out = {
            "suite/keeps_result": self.total.keeps_rate,
            "suite/best_move": self.total.best_rate,
            "suite/counted": float(self.total.counted),
        }
        for name, t in self.buckets.items():
            out[f"suite/keeps_result/{name}"] = t.keeps_rate
            out[f"suite/best_move/{name}"] = t.best_rate
            out[f"suite/counted/{name}"] = float(t.counted)
        return out

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: the metrics, with NaN (an empty bucket) as null."""
        metrics = {k: (None if math.isnan(v) else v) for k, v in self.metrics().items()}
        return {
            "player": self.player,
            "positions": self.positions,
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "metrics": metrics,
        }

    def format(self) -> str:
        """A small table for the terminal."""
        lines = [
            f"{self.player}: {self.total.counted} of {self.positions} positions counted "
            f"(the choice matters), scored in {self.seconds:.1f}s (seed {self.seed})",
            f"  {'bucket':<10}{'counted':>9}{'keeps result':>15}{'best move':>12}",
        ]
        for name, t in (("all", self.total), *self.buckets.items()):
            label = name.removeprefix("ply_").replace("_", "-")
            lines.append(f"  {label:<10}{t.counted:>9}{_pct(t.keeps_rate):>15}{_pct(t.best_rate):>12}")
        return "\n".join(lines)


def _pct(rate: float) -> str:
    return "-" if math.isnan(rate) else percent(rate)


def evaluate_suite(
    player: Player,
    suite: list[SuitePosition],
    seed: int = 0,
    device: str = "cpu",
) -> SuiteReport:
    """Score `player` on the counted positions of `suite`, all in one batched `act` call."""
    import torch

    from c4core.games.connect4.batch import Boards

    counted = [p for p in suite if p.counted]
    buckets = {name: Tally() for name, _, _ in BUCKETS}
    total = Tally()
    seconds = 0.0
    if counted:
        boards = Boards.from_positions([p.position for p in counted], device)
        gen = torch.Generator().manual_seed(seed)
        start = time.perf_counter()
        cols = player.act(boards, gen).cpu().tolist()
        seconds = time.perf_counter() - start
        for p, col in zip(counted, cols, strict=True):
            if not p.position.can_play(col):  # a broken player must not score silently
                raise ValueError(f"{player.name} played the full or missing column {col + 1} at {p.source}")
            keeps, best = p.keeps_result(col), p.is_best(col)
            total = total.add(keeps, best)
            name = bucket_of(p.ply)
            buckets[name] = buckets.get(name, Tally()).add(keeps, best)
    return SuiteReport(player.name, len(suite), total, buckets, seed, seconds)


class FileSuite:
    """A suite file as the game interface's `Suite`: read once (a bad file fails here, naming
    its line), each player scored by `evaluate_suite`."""

    tags = {
        "suite/keeps_result": "suite_keeps_result",
        "suite/best_move": "suite_best_move",
        "suite/counted": "suite_counted",
    }

    def __init__(self, path: str | Path, geometry: Geometry = STANDARD):
        self.name = Path(path).name
        self.positions = load_suite(path, geometry)

    def score(self, player: Player) -> dict[str, float]:
        return evaluate_suite(player, self.positions).metrics()


def default_suite_path(game: Game = ConnectFour()) -> Path | None:
    """The shared dev suite next to the repository (``../shared/suite/dev.jsonl``), if it exists
    and `game` is its game, Connect Four on the standard board (no other has a default suite)."""
    if game != ConnectFour():
        return None
    repository = Path(__file__).resolve().parents[3]  # c4core/games/connect4/suite.py
    path = repository.parent / "shared" / "suite" / "dev.jsonl"
    return path if path.is_file() else None
