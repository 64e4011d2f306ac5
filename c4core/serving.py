"""The champion behind ``mlflow models serve``: a pyfunc model that answers one move per position.

``mlflow models serve -m models:/connect4@champion --env-manager local`` loads `SnapshotModel`
from a registered version; ``POST /invocations`` then takes records such as::

    {"dataframe_records": [{"moves": "4453"}, {"board": [[0, 0, 0, 0, 0, 0, 0], ...]}],
     "params": {"simulations": 0, "probe_from": 0}}

``moves`` is a move string in the snapshot's game's notation (`Game.state_from_moves`: for Connect
Four column digits from 1, ``"4453"``; for Dots and Boxes lines such as ``"h0,0 v1,2"``). A Connect
Four snapshot also takes ``board``, the board's rows (six on the standard board) top to bottom with
0 empty, 1 first player, 2 second player. Each record gets ``{"action": the move's number
(`c4core.games`), "move": the same in the game's notation, "probs": [a float per action, 0 on
illegal ones], "value": -1..1 for the player to move}``, and a Connect Four snapshot ``"column"``
too, the action's number again, kept for clients from before other games. A snapshot of another
board (a Connect-3 league on 4x4) answers with that board's columns, and its messages name its size.
With ``simulations`` > 0 the answer comes from `c4core.learners.search` (PUCT over the same net; the
package ships all of ``c4core``), and with ``probe_from`` P > 0 too the search lets the game's exact
solver settle its leaves of P or more moves played (`SearchConfig.probe_from`), so the champion
plays those endgames perfectly (boards without a solver, Dots and Boxes beyond 3x3, take 0).
Versions registered before ``probe_from`` existed do not declare it, and MLflow drops the parameter
for them.

Bad input raises `MlflowException` with ``INVALID_PARAMETER_VALUE``, which the scoring server
turns into HTTP 400 carrying our message (any other exception would become a generic error with
a stack trace). The weights load once, in `load_context`; `predict` is a pure function of its
input. The model ships exactly the ``c4core`` package through ``code_paths``.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import mlflow.pyfunc
import numpy as np
import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.models import ModelSignature
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.types.schema import AnyType, Array, ColSpec, DataType, ParamSchema, ParamSpec, Schema

from c4core.games import ConnectFour, ExactSolver, Game, State, exact_solver, game_of, solvable
from c4core.games.connect4.rules import Geometry, Position
from c4core.learners.net import Checkpoint, PolicyValueNet
from c4core.learners.tabular import QTable

MAX_SIMULATIONS = 4096
"""Upper bound on `simulations` per request, so one request cannot hold a worker for minutes;
shared by the model server and the play page (`c4core.app`)."""
MAX_RECORDS = 4096
"""Upper bound on records per request."""


def signature(game: Game = ConnectFour()) -> ModelSignature:
    """What a version of `game` takes and answers: ``moves`` (and Connect Four's ``board``) in,
    ``action``, ``move``, ``probs`` and ``value`` (and Connect Four's ``column``) out."""
    # `board` is declared Any so that our validation, not MLflow's type coercion, explains what
    # is wrong with a bad board (a float, a ragged row, a string) in one line
    four = isinstance(game, ConnectFour)
    inputs = [ColSpec(DataType.string, "moves", required=False)]
    outputs = [ColSpec(DataType.long, "action"), ColSpec(DataType.string, "move")]
    if four:
        inputs.append(ColSpec(AnyType(), "board", required=False))
        outputs.append(ColSpec(DataType.long, "column"))
    outputs += [ColSpec(Array(DataType.double), "probs"), ColSpec(DataType.double, "value")]
    return ModelSignature(
        inputs=Schema(inputs),
        outputs=Schema(outputs),
        params=ParamSchema(
            [ParamSpec("simulations", DataType.long, 0), ParamSpec("probe_from", DataType.long, 0)]
        ),
    )


def example_moves(game: Game = ConnectFour()) -> str:
    """A short legal game of `game`, for examples and messages: ``"4453"`` on the standard
    Connect Four board, elsewhere the middle action twice (the centre column twice in Connect
    Four, two lines in Dots and Boxes)."""
    if game == ConnectFour():
        return "4453"
    state = game.new_state()
    actions = []
    for _ in range(2):
        legal = state.legal_actions()
        actions.append(legal[len(legal) // 2])
        state = state.apply(actions[-1])
    return game.moves_string(actions)


def input_example(game: Game = ConnectFour()) -> pd.DataFrame:
    """The example request a version carries: a short game of its own, and the empty board."""
    return pd.DataFrame({"moves": [example_moves(game), ""]})


class BadInput(ValueError):
    """A request the model cannot answer; becomes HTTP 400 with this message."""


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def parse_record(record: Mapping[str, Any], game: Game = ConnectFour()) -> State:
    """The live position of `game` a record names; `BadInput` saying what is wrong otherwise."""
    if not isinstance(game, ConnectFour):
        return _parse_moves(record, game)
    geometry = game.geometry
    moves, board = record.get("moves"), record.get("board")
    if isinstance(board, np.ndarray):
        board = board.tolist()
    has_moves, has_board = not _missing(moves), not _missing(board)
    if has_moves and has_board:
        raise BadInput("give either 'moves' or 'board', not both")
    if not has_moves and not has_board:
        raise BadInput(
            f"each record needs 'moves' (a string such as \"{example_moves(game)}\") or 'board' "
            f"({_board_help(geometry)})"
        )
    try:
        if has_moves:
            if not isinstance(moves, str):
                raise BadInput(f"'moves' must be a string of column digits, got {type(moves).__name__}")
            pos = Position.from_moves(moves, geometry)
        else:
            pos = Position.from_board(_plain(board), geometry)
    except BadInput:
        raise
    except ValueError as e:
        raise BadInput(str(e)) from None
    if pos.won:
        raise BadInput(f"the game is already over: player {3 - pos.to_move} has won")
    if pos.is_full:
        raise BadInput("the board is full: there is no move to make")
    return pos


def _parse_moves(record: Mapping[str, Any], game: Game) -> State:
    """A record of a game other than Connect Four: its ``moves`` alone."""
    moves = record.get("moves")
    if not _missing(record.get("board")):
        raise BadInput(f"'board' is Connect Four's: give {game.title} as 'moves'")
    if _missing(moves):
        raise BadInput(f"each record needs 'moves' (a string such as \"{example_moves(game)}\")")
    if not isinstance(moves, str):
        raise BadInput(f"'moves' must be a string of moves, got {type(moves).__name__}")
    try:
        state = game.state_from_moves(moves)
    except ValueError as e:
        raise BadInput(str(e)) from None
    if state.is_terminal:
        raise BadInput("the game is already over: there is no move to make")
    return state


def _board_help(geometry: Geometry) -> str:
    return f"{geometry.rows} rows of {geometry.cols} cells, each 0, 1 or 2"


def _plain(board: Any) -> Any:
    """Nested numpy arrays (how the scoring server may hand over lists) as plain lists."""
    if isinstance(board, np.ndarray):
        return _plain(board.tolist())
    if isinstance(board, (list, tuple)):
        return [_plain(x) for x in board]
    if isinstance(board, np.generic):
        return board.item()
    return board


def records_of(model_input: Any) -> list[Mapping[str, Any]]:
    """The records of a request, as dicts (a DataFrame, a list of dicts or one dict)."""
    if isinstance(model_input, pd.DataFrame):
        if len(model_input.columns) == 0:  # records with neither field lose every column
            return [{} for _ in range(len(model_input))]
        return model_input.to_dict(orient="records")
    if isinstance(model_input, Mapping):
        return [model_input]
    if isinstance(model_input, Sequence) and all(isinstance(r, Mapping) for r in model_input):
        return list(model_input)
    raise BadInput("input must be records, each an object with 'moves' or 'board'")


def simulations_of(params: Mapping[str, Any] | None) -> int:
    sims = (params or {}).get("simulations", 0)
    if sims is None:
        return 0
    if isinstance(sims, bool) or not isinstance(sims, (int, np.integer)):
        raise BadInput(f"'simulations' must be a whole number, got {sims!r}")
    if not 0 <= sims <= MAX_SIMULATIONS:
        raise BadInput(f"'simulations' must be between 0 and {MAX_SIMULATIONS}, got {sims}")
    return int(sims)


def probe_of(params: Mapping[str, Any] | None, simulations: int, game: Game = ConnectFour()) -> int:
    """The ``probe_from`` parameter: 0 (no solver probes) or a count of moves played (Connect
    Four's stones, Dots and Boxes' lines), only with search on a board with an exact solver
    (`c4core.games.solvable`)."""
    probe = (params or {}).get("probe_from", 0)
    if probe is None:
        return 0
    if isinstance(probe, bool) or not isinstance(probe, (int, np.integer)):
        raise BadInput(f"'probe_from' must be a whole number, got {probe!r}")
    if probe and not solvable(game):
        raise BadInput(f"'probe_from' probes the exact solver: {game.title} has none, so it must be 0")
    if not 0 <= probe <= game.max_game_length:
        raise BadInput(f"'probe_from' must be between 0 and {game.max_game_length} moves, got {probe}")
    if probe and not simulations:
        raise BadInput("'probe_from' probes search leaves: it needs 'simulations' above 0")
    return int(probe)


def evaluate(
    net: PolicyValueNet | QTable,
    positions: list[State],
    simulations: int = 0,
    probe_from: int = 0,
    solver: Any = None,
) -> list[dict[str, Any]]:
    """One answer per live position of one game: the chosen action (also in the game's notation, and
    for Connect Four as ``column``), move probabilities and value, from a network or a table
    (`c4core.learners.tabular.QTable`). With `probe_from`, search probes `solver` (the game's
    `ExactSolver`; a fresh one when None) at its leaves; a solver must not be shared by two calls
    at once (its table is not locked)."""
    import torch

    if not positions:
        return []
    game = game_of(positions[0])
    boards = game.batch_of(positions)
    legal = boards.legal().numpy()
    if simulations > 0:
        from c4core.learners.search import SearchConfig, search

        config = replace(SearchConfig(), simulations=simulations, probe_from=probe_from)
        result = search(net, boards, config, solver=solver)
        probs, columns, values = result.probs, result.columns, result.values
    else:
        with torch.inference_mode():
            p, v = net.evaluate(boards)
        probs = p.double().numpy()
        columns = np.where(legal, probs, -1.0).argmax(1)
        values = v.double().numpy()
    probs = np.where(legal, probs, 0.0)
    out = []
    four = isinstance(game, ConnectFour)
    for i in range(len(positions)):
        action = int(columns[i])
        assert legal[i, action], "a model answered an illegal action"
        answer: dict[str, Any] = {"action": action, "move": game.format_action(action)}
        if four:
            answer["column"] = action
        answer |= {"probs": [float(x) for x in probs[i]], "value": float(np.clip(values[i], -1.0, 1.0))}
        out.append(answer)
    return out


class ProbingSolver:
    """The exact solver behind probing searches (``probe_from`` > 0) of one served net: made at
    the first such request (Connect Four's: 76 MB of table), then kept warm, and used by one
    search at a time, since the scoring server and the play page answer requests from several
    threads. The positions of one call share a game (the net's)."""

    def __init__(self) -> None:
        self._solver: ExactSolver | None = None
        self._game: Game | None = None  # the game `_solver` solves
        self._lock = threading.Lock()

    def evaluate(
        self, net: PolicyValueNet | QTable, positions: list[State], simulations: int, probe_from: int
    ) -> list[dict[str, Any]]:
        """`evaluate` with this solver's table (plain `evaluate` when `probe_from` is 0)."""
        if not probe_from:
            return evaluate(net, positions, simulations)
        if not positions:
            return []
        game = game_of(positions[0])
        with self._lock:
            if self._solver is None or self._game != game:
                self._solver, self._game = exact_solver(game), game
            return evaluate(net, positions, simulations, probe_from, self._solver)


class SnapshotModel(mlflow.pyfunc.PythonModel):
    """A league snapshot of any game as a pyfunc: records in, one move per record out."""

    def load_context(self, context: Any) -> None:
        ckpt = Checkpoint.load(context.artifacts["weights"])
        self.game, self.kind = ckpt.game, ckpt.kind
        self.net = ckpt.build("cpu")
        self.solver = ProbingSolver()

    # no type hints on predict: MLflow would read them as a second, conflicting signature
    def predict(
        self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """One ``{"action", "move", "probs", "value"}`` (and Connect Four's ``"column"``) per
        record; `MlflowException` (HTTP 400) for bad input.

        The input is hinted as the DataFrame that the signature's columns make of every request,
        a hint MLflow infers no schema from, so the declared `SIGNATURE` stays the contract and
        logging the model warns of nothing."""
        try:
            sims = simulations_of(params)
            if sims and self.kind == "table":
                raise BadInput(
                    "this version is a table of every position, not searched: 'simulations' must be 0"
                )
            probe = probe_of(params, sims, self.game)
            records = records_of(model_input)
            if not records:
                # MLflow drops records that hold neither known field, so this covers those too
                fields = f"'moves' (a string such as \"{example_moves(self.game)}\")"
                if isinstance(self.game, ConnectFour):
                    fields += f" or 'board' ({_board_help(self.game.geometry)})"
                raise BadInput(f"no position given: send records with {fields}")
            if len(records) > MAX_RECORDS:
                raise BadInput(f"at most {MAX_RECORDS} records per request, got {len(records)}")
            positions = []
            for i, rec in enumerate(records):
                try:
                    positions.append(parse_record(rec, self.game))
                except BadInput as e:
                    raise BadInput(f"record {i}: {e}") from None
            return self.solver.evaluate(self.net, positions, sims, probe)
        except BadInput as e:
            raise MlflowException(str(e), error_code=INVALID_PARAMETER_VALUE) from None


def _requirements() -> list[str]:
    """Explicit pins (inference would probe the network): what `c4core.serving` imports."""
    import importlib.metadata as md

    out = []
    for dist in ("mlflow", "torch", "numpy", "numba", "pandas"):
        try:
            version = md.version(dist).split("+")[0]  # drop local labels such as +cpu
            out.append(f"{dist}=={version}")
        except md.PackageNotFoundError:
            out.append(dist)
    return out


_MODEL_CODE = """\
# The pyfunc entry point (MLflow "models from code"): no pickled objects in the model.
import mlflow.models

from c4core.serving import SnapshotModel

mlflow.models.set_model(SnapshotModel())
"""


def save_pyfunc(path: str | Path, checkpoint: Checkpoint) -> None:
    """Write the pyfunc model of a snapshot to `path` (weights without optimizer state)."""
    package = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "connect4_model.py"
        entry.write_text(_MODEL_CODE)
        weights = Path(tmp) / "weights.pt"
        replace(checkpoint, optimizer=None).save(weights)
        code = Path(tmp) / "c4core"
        shutil.copytree(package, code, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.tmp"))
        mlflow.pyfunc.save_model(
            str(path),
            python_model=str(entry),
            artifacts={"weights": str(weights)},
            code_paths=[str(code)],
            signature=signature(checkpoint.game),
            input_example=input_example(checkpoint.game),
            pip_requirements=_requirements(),
            metadata={
                "generation": checkpoint.generation,
                "game": {"name": checkpoint.game.name, "params": dict(checkpoint.game.params)},
            },
        )
