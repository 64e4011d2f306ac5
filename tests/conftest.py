"""Shared fixtures: fixed seeds, seeded generators, small geometries and random legal move strings.

Random positions come from two sources: `random_moves` (a seeded numpy generator, for bulk
checks) and the `move_strings` hypothesis strategy (for property tests, which shrink). Both only
ever play legal moves, so every string they produce replays with `Position.from_moves`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

from c4core.games.connect4.rules import STANDARD, Geometry, Position
from c4core.games.players import Player

SEED = 20240601
"""The one seed every generator below starts from."""

SMALL = Geometry(4, 4, 3)
"""4x4 connect-3: small enough for the exact solver."""

ODD = Geometry(5, 6, 4)
"""A non-standard board that is neither square nor 6x7."""


def random_moves(
    rng: np.random.Generator,
    geometry: Geometry = STANDARD,
    length: int | None = None,
    unfinished: bool = False,
) -> str:
    """A move string of uniformly random legal moves.

    Plays `length` moves (or until the game ends when None). With `unfinished`, stops one move
    short of any move that would end the game, so the result is always a live position.
    """
    pos = Position(geometry=geometry)
    moves = []
    limit = geometry.cells if length is None else length
    while len(moves) < limit and not pos.is_terminal:
        col = int(rng.choice(pos.legal_moves()))
        nxt = pos.play(col)
        if unfinished and nxt.is_terminal:
            break
        pos = nxt
        moves.append(str(col + 1))
    return "".join(moves)


@st.composite
def move_strings(
    draw: st.DrawFn,
    geometry: Geometry = STANDARD,
    max_size: int | None = None,
    unfinished: bool = False,
) -> str:
    """Hypothesis strategy: a string of legal moves (shrinks towards short, low columns).

    With `unfinished`, never plays a move that ends the game, so the position is still live.
    """
    size = draw(st.integers(0, geometry.cells if max_size is None else max_size))
    pos = Position(geometry=geometry)
    moves = []
    for _ in range(size):
        legal = [c for c in pos.legal_moves() if not (unfinished and pos.play(c).is_terminal)]
        if not legal:
            break
        col = draw(st.sampled_from(legal))
        pos = pos.play(col)
        moves.append(str(col + 1))
    return "".join(moves)


@pytest.fixture
def rng() -> np.random.Generator:
    """A numpy generator with the suite's seed (fresh for every test)."""
    return np.random.default_rng(SEED)


@pytest.fixture
def torch_gen():
    """A seeded `torch.Generator` (fresh for every test) for the bots' sampling."""
    import torch

    return torch.Generator().manual_seed(SEED)


@pytest.fixture(scope="session")
def geometries() -> tuple[Geometry, ...]:
    """The standard board and two non-standard ones."""
    return (STANDARD, SMALL, ODD)


@pytest.fixture(scope="session")
def random_move_string():
    """`random_moves(rng, geometry, length, unfinished)`: random legal moves as a string."""
    return random_moves


@pytest.fixture(scope="session")
def move_strategy():
    """`move_strings(geometry, max_size, unfinished)`: the hypothesis strategy, for `st.data()`."""
    return move_strings


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Every test runs torch on one thread: tiny nets run fastest (and reproducibly) that way,
    above all when the machine is busy. Set per test, since some code under test (`c4 league`)
    sets the thread count itself."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---- slow tests ----------------------------------------------------------------------------------
SLOW_FIXTURES = frozenset(
    {
        "tracked",  # test_registry: a smoke league on MLflow
        "mlflow_server",  # test_registry: an `mlflow server` with S3 artifacts on moto
        "leagues",  # test_registry_suite: leagues scored on a suite
        "postgres",  # test_registry_postgres: a throwaway PostgreSQL cluster
        "servers",  # test_serving: `mlflow models serve` processes
        "browser",  # test_browser: headless Chromium
        "league_run",  # test_dag: the smoke league through `dag.test()`
    }
)
"""Fixtures that run a league or start servers: every test that uses one is marked `slow`, so
`make test-fast` (``-m "not slow"``) leaves it out and `make test` still runs it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


class CountingPlayer(Player):
    """Wraps a player and counts the moves it was asked for (its unfinished games each call)."""

    def __init__(self, inner: Player):
        self.inner, self.name, self.moves = inner, inner.name, 0

    def act(self, boards, generator=None):
        self.moves += int((~boards.done).sum())
        return self.inner.act(boards, generator)


@pytest.fixture(scope="session")
def counting_player() -> type[CountingPlayer]:
    """`CountingPlayer`, for tests that check who was asked to move how often."""
    return CountingPlayer


@pytest.fixture(scope="session")
def blank_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, migrated MLflow SQLite file to copy."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("blank") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path
