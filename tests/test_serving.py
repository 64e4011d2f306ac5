"""Serving the champion (`c4core.serving`): the pyfunc's contract, then `mlflow models serve` over HTTP.

The in-process tests call `SnapshotModel.predict` on a tiny untrained net. The HTTP tests run a
one-generation smoke league into a fresh SQLite store, start ``mlflow/serve-champion.sh`` twice
(``models:/connect4/Production`` and ``models:/connect4@champion``, ``--env-manager local``) on
free ports, and check every answer: legal columns, probabilities that are 0 exactly on full
columns, values in -1..1, and HTTP 400 with a message saying what is wrong for every bad input.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import requests
import torch
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from servers import free_port, wait_for_http

from c4core.config import NetConfig, league_config, profile
from c4core.games import load
from c4core.games.connect4.rules import Geometry, Position
from c4core.learners.net import Checkpoint, PolicyValueNet
from c4core.serving import BadInput, SnapshotModel, probe_of, save_pyfunc
from c4core.tracking.runs import run_league_tracked
from c4core.tracking.store import MLflowStore, Tracking

REPO = Path(__file__).resolve().parents[1]
EMPTY = [[0] * 7 for _ in range(6)]
FOUR_FULL = "111111222222444444777777"
"""Columns 1, 2, 4 and 7 full, nobody has won."""
ONE = [{"moves": "4"}]


def board_of(moves: str) -> list[list[int]]:
    return Position.from_moves(moves).board()


def full_drawn_board() -> list[list[int]]:
    """A full board on which nobody has won (random play that never completes a run)."""
    rng = random.Random(0)
    while True:
        pos = Position()
        while not pos.is_full:
            safe = [c for c in pos.legal_moves() if not pos.play(c).won]
            if not safe:
                break
            pos = pos.play(rng.choice(safe))
        if pos.is_full and not pos.won:
            return pos.board()


def floating() -> list[list[int]]:
    b = [row[:] for row in EMPTY]
    b[4][3] = 1  # one row above the bottom, nothing under it
    return b


def counts_off() -> list[list[int]]:
    b = [row[:] for row in EMPTY]
    b[5][3] = 2  # player 2 cannot have moved first
    return b


# (name, request body, text the 400 message must contain)
BAD_INPUTS = [
    ("malformed JSON", '{"dataframe_records": [{"moves": "44"}', "JSON"),
    ("not records", "[1, 2]", "exactly one of"),
    ("no records", {"dataframe_records": []}, "no position given"),
    ("neither field", {"dataframe_records": [{"foo": 1}]}, "'moves' (a string"),
    ("both fields", {"dataframe_records": [{"moves": "4", "board": EMPTY}]}, "not both"),
    ("moves not a string", {"dataframe_records": [{"moves": 4453}]}, "must be a string"),
    ("moves off the board", {"dataframe_records": [{"moves": "48"}]}, "expected a column digit 1-7"),
    ("moves into a full column", {"dataframe_records": [{"moves": "1111111"}]}, "column 1 is full"),
    ("moves after a win", {"dataframe_records": [{"moves": "12121212"}]}, "already won"),
    ("moves end in a win", {"dataframe_records": [{"moves": "1212121"}]}, "already over"),
    ("board not a list", {"dataframe_records": [{"board": "abc"}]}, "list of 6 rows"),
    ("five rows", {"dataframe_records": [{"board": EMPTY[:5]}]}, "list of 6 rows, got 5"),
    ("short row", {"dataframe_records": [{"board": [[0] * 6] + EMPTY[1:]}]}, "row 1 must have 7 cells"),
    ("value 3", {"dataframe_records": [{"board": [[3] + [0] * 6] + EMPTY[1:]}]}, "use 0, 1 or 2"),
    ("a float", {"dataframe_records": [{"board": [[0.5] + [0] * 6] + EMPTY[1:]}]}, "use 0, 1 or 2"),
    ("a boolean", {"dataframe_records": [{"board": EMPTY[:5] + [[True] + [0] * 6]}]}, "use 0, 1 or 2"),
    ("floating stone", {"dataframe_records": [{"board": floating()}]}, "floating stone"),
    ("impossible counts", {"dataframe_records": [{"board": counts_off()}]}, "impossible stone counts"),
    ("won board", {"dataframe_records": [{"board": board_of("1212121")}]}, "already won"),
    ("full board", {"dataframe_records": [{"board": full_drawn_board()}]}, "board is full"),
    ("second record bad", {"dataframe_records": [{"moves": "4"}, {"moves": "x"}]}, "record 1"),
    (
        "negative simulations",
        {"dataframe_records": ONE, "params": {"simulations": -1}},
        "between 0",
    ),
    (
        "huge simulations",
        {"dataframe_records": ONE, "params": {"simulations": 10**6}},
        "between 0",
    ),
    (
        "text simulations",
        {"dataframe_records": ONE, "params": {"simulations": "x"}},
        "simulations",
    ),
    (
        "probe without search",
        {"dataframe_records": ONE, "params": {"probe_from": 16}},
        "needs 'simulations'",
    ),
    (
        "probe past the board",
        {"dataframe_records": ONE, "params": {"simulations": 8, "probe_from": 43}},
        "between 0 and 42",
    ),
]


# ---- in process ----------------------------------------------------------------------------------
def test_saving_the_model_warns_of_nothing(tmp_path: Path) -> None:
    """MLflow warns about a `predict` without type hints; the hint is there, so a league's log
    stays free of it (no filter hides it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_pyfunc(tmp_path / "model", Checkpoint.of(PolicyValueNet(NetConfig(blocks=1, channels=8))))
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> SnapshotModel:
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=16))
    path = tmp_path_factory.mktemp("weights") / "weights.pt"
    Checkpoint.of(net).save(path)
    m = SnapshotModel()
    m.load_context(SimpleNamespace(artifacts={"weights": str(path)}))
    return m


def test_predict_answers_moves_and_boards_alike(model: SnapshotModel) -> None:
    by_moves = model.predict(None, [{"moves": "4453"}])
    by_board = model.predict(None, [{"board": board_of("4453")}])
    assert by_moves == by_board


def test_answers_are_legal_and_probabilities_skip_full_columns(
    model: SnapshotModel, rng, random_move_string
) -> None:
    records = [{"moves": random_move_string(rng, unfinished=True)} for _ in range(200)]
    records.append({"moves": FOUR_FULL})  # four full columns
    for rec, out in zip(records, model.predict(None, records), strict=True):
        pos = Position.from_moves(rec["moves"])
        legal = pos.legal_moves()
        assert out["column"] in legal
        assert all((p > 0) == (c in legal) for c, p in enumerate(out["probs"]))
        assert sum(out["probs"]) == pytest.approx(1.0, abs=1e-5)
        assert -1.0 <= out["value"] <= 1.0
        assert out["probs"][out["column"]] == max(out["probs"])


@pytest.mark.parametrize(
    "name,body,hint",
    [b for b in BAD_INPUTS if isinstance(b[1], dict)],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_bad_records_raise_invalid_parameter_value(model: SnapshotModel, name: str, body, hint: str) -> None:
    with pytest.raises(MlflowException) as err:
        model.predict(None, body["dataframe_records"], body.get("params"))
    assert err.value.error_code == "INVALID_PARAMETER_VALUE"
    assert hint in err.value.message


def test_simulations_search(model: SnapshotModel) -> None:
    (out,) = model.predict(None, [{"moves": "4453"}], {"simulations": 8})
    assert out["column"] in Position.from_moves("4453").legal_moves()
    assert sum(out["probs"]) == pytest.approx(1.0)
    # a win in one is found by search whatever the untrained net thinks
    (out,) = model.predict(None, [{"moves": "112233"}], {"simulations": 16})
    assert out["column"] == 3 and out["value"] == 1.0


def test_probe_from_settles_late_positions_exactly(model: SnapshotModel) -> None:
    only_defence = "6562471451742442257"  # 19 stones: only column 6 keeps O's win
    (out,) = model.predict(None, [{"moves": only_defence}], {"simulations": 64, "probe_from": 20})
    assert out["column"] == 5 and out["value"] == 1.0
    assert model.solver._solver is not None  # kept warm for the next request


DOTS = load("dots_and_boxes", rows=2, cols=2)


@pytest.fixture(scope="module")
def dots_model(tmp_path_factory: pytest.TempPathFactory) -> SnapshotModel:
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=16), DOTS)
    path = tmp_path_factory.mktemp("dots") / "weights.pt"
    Checkpoint.of(net, DOTS).save(path)
    m = SnapshotModel()
    m.load_context(SimpleNamespace(artifacts={"weights": str(path)}))
    return m


def test_a_dots_and_boxes_snapshot_answers_a_line_in_its_notation(dots_model: SnapshotModel) -> None:
    """Another game's snapshot takes its move strings and answers a legal line, by number and in
    notation, with or without search; Connect Four's `column` is not among its fields."""
    moves = ["", "h0,0 v0,0 h1,0", "h0,0 h0,1 h1,0 h1,1 h2,0 h2,1 v0,0 v0,1 v0,2 v1,0"]
    for sims in (0, 8):
        answers = dots_model.predict(None, [{"moves": m} for m in moves], {"simulations": sims})
        for rec, out in zip(moves, answers, strict=True):
            legal = DOTS.state_from_moves(rec).legal_actions()
            assert set(out) == {"action", "move", "probs", "value"}
            assert out["action"] in legal and DOTS.parse_action(out["move"]) == out["action"]
            assert all(p == 0 for a, p in enumerate(out["probs"]) if a not in legal)
            assert sum(out["probs"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "records,params,hint",
    [
        ([{"moves": "h0,0 h0,0"}], None, "h0,0 is already drawn"),
        ([{"moves": "h5,0"}], None, "is off the 2x2 board"),
        ([{"moves": "4453"}], None, "expected a line such as h0,1"),
        ([{"moves": 7}], None, "'moves' must be a string of moves"),
        ([{"board": [[0]]}], None, "'board' is Connect Four's"),
        ([{"moves": " ".join(DOTS.format_action(a) for a in range(12))}], None, "the game is already over"),
        ([{"moves": ""}], {"simulations": 8, "probe_from": 13}, "must be between 0 and 12 moves"),
    ],
)
def test_a_dots_and_boxes_snapshot_refuses_bad_input_by_name(
    dots_model: SnapshotModel, records: list, params: dict | None, hint: str
) -> None:
    with pytest.raises(MlflowException) as err:
        dots_model.predict(None, records, params)
    assert err.value.error_code == "INVALID_PARAMETER_VALUE"
    assert hint in err.value.message


def test_a_dots_and_boxes_snapshot_probes_its_games_solver(dots_model: SnapshotModel) -> None:
    """With probes from the first line, the search of a 2x2 snapshot settles every root move
    through Dots and Boxes' solver, so its answer keeps the position's exact value; a board the
    solver does not reach refuses probes by name."""
    from c4core.games.dots_and_boxes.solver import DotsSolver

    solver = DotsSolver(DOTS.boxes)
    moves = ["", "h0,0 v0,0", "h0,0 h1,0 v0,0 v0,1", "h0,0 h0,1 h1,0 h1,1 v0,0"]
    answers = dots_model.predict(None, [{"moves": m} for m in moves], {"simulations": 64, "probe_from": 1})
    for rec, out in zip(moves, answers, strict=True):
        state = DOTS.state_from_moves(rec)
        values = solver.action_values(np.array([state.lines]))[0]
        assert values[out["action"]] == values.max() == solver.value(state)
    assert probe_of({"probe_from": 3}, 8, load("dots-and-boxes-4x4")) == 3  # the endgame search's board
    with pytest.raises(BadInput, match="Dots and Boxes on 4x5 boxes has none"):
        probe_of({"probe_from": 3}, 8, load("dots_and_boxes", rows=4, cols=5))


# ---- over HTTP -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Four `mlflow models serve` processes: Connect Four's Production stage and champion alias,
    and the champion of a Connect-3 league on 4x4, registered in the same store; and, from a
    store of its own, the champion of a Connect-3 league whose main agent is a Q-learning table."""
    root = tmp_path_factory.mktemp("serving")
    uri, tables = f"sqlite:///{root / 'mlflow.db'}", f"sqlite:///{root / 'tables.db'}"
    MlflowClient(uri).search_experiments()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for store_uri, config in (
            (uri, profile("smoke", name="serve", generations=1)),
            (uri, league_config("smoke", "serve3", generations=1, game="connect3-4x4")),
            (tables, league_config("smoke", "q", generations=1, game="connect3-4x4", learner="q-learning")),
        ):
            run_league_tracked(MLflowStore(Tracking.for_uri(store_uri), config), config)
    finally:
        torch.set_num_threads(threads)
    procs, urls = [], {}
    for key, store_uri, model_uri in (
        ("production", uri, "models:/connect4/Production"),
        ("champion", uri, "models:/connect4@champion"),
        ("connect3-4x4", uri, "models:/connect3-4x4@champion"),
        ("table", tables, "models:/connect3-4x4@champion"),
    ):
        port = free_port()
        env = os.environ | {
            "MLFLOW_TRACKING_URI": store_uri,
            "MODEL_URI": model_uri,
            "PORT": str(port),
            "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
        }
        log = (root / f"{key}.log").open("w")
        script = REPO / "mlflow" / "serve-champion.sh"
        procs.append(
            subprocess.Popen(["bash", str(script)], env=env, stdout=log, stderr=log, start_new_session=True)
        )
        urls[key] = f"http://127.0.0.1:{port}"
    try:
        for (key, url), proc in zip(urls.items(), procs, strict=True):
            wait_for_http(f"{url}/ping", proc, root / f"{key}.log", f"mlflow models serve ({key})", 240)
        yield {**urls, "table-store": tables}
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(root / "artifacts", ignore_errors=True)


def post(url: str, body) -> requests.Response:
    data = body if isinstance(body, str) else json.dumps(body)
    return requests.post(
        f"{url}/invocations", data=data, headers={"Content-Type": "application/json"}, timeout=60
    )


@pytest.mark.slow
@pytest.mark.parametrize("which", ["production", "champion"])
def test_both_registry_uris_answer_invocations(servers: dict[str, str], which: str) -> None:
    r = post(servers[which], {"dataframe_records": [{"moves": "4453"}, {"board": board_of("4453")}]})
    assert r.status_code == 200, r.text
    a, b = r.json()["predictions"]
    assert a == b
    assert a["column"] in range(7) and len(a["probs"]) == 7 and -1 <= a["value"] <= 1
    assert a["action"] == a["column"]  # the game interface's name, and the one clients knew


@pytest.mark.slow
def test_served_answers_are_always_legal(servers: dict[str, str], rng, random_move_string) -> None:
    moves = [random_move_string(rng, unfinished=True) for _ in range(100)] + [FOUR_FULL, ""]
    r = post(servers["champion"], {"dataframe_records": [{"moves": m} for m in moves]})
    assert r.status_code == 200, r.text
    for m, out in zip(moves, r.json()["predictions"], strict=True):
        legal = Position.from_moves(m).legal_moves()
        assert out["column"] in legal
        assert [c for c, p in enumerate(out["probs"]) if p == 0.0] == [c for c in range(7) if c not in legal]


@pytest.mark.slow
def test_served_simulations_search(servers: dict[str, str]) -> None:
    r = post(servers["champion"], {"dataframe_records": [{"moves": "4453"}], "params": {"simulations": 8}})
    assert r.status_code == 200, r.text
    assert r.json()["predictions"][0]["column"] in range(7)


@pytest.mark.slow
def test_served_search_probes_the_solver(servers: dict[str, str]) -> None:
    body = {
        "dataframe_records": [{"moves": "6562471451742442257"}],
        "params": {"simulations": 64, "probe_from": 20},
    }
    r = post(servers["champion"], body)
    assert r.status_code == 200, r.text
    assert r.json()["predictions"][0]["column"] == 5


@pytest.mark.slow
@pytest.mark.parametrize("name,body,hint", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_a_400_that_says_what_is_wrong(
    servers: dict[str, str], name: str, body, hint: str
) -> None:
    r = post(servers["champion"], body)
    assert r.status_code == 400, (name, r.status_code, r.text[:300])
    message = r.json()["message"]
    assert hint in message, message
    assert "Traceback" not in message


@pytest.mark.slow
def test_a_wrong_content_type_is_refused(servers: dict[str, str]) -> None:
    r = requests.post(
        f"{servers['champion']}/invocations", data="4453", headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 415


@pytest.mark.slow
def test_a_connect3_champion_on_4x4_answers_on_its_own_board(
    servers: dict[str, str], rng, random_move_string
) -> None:
    g = Geometry(4, 4, 3)
    moves = [random_move_string(rng, unfinished=True, geometry=g) for _ in range(50)] + [""]
    r = post(servers["connect3-4x4"], {"dataframe_records": [{"moves": m} for m in moves]})
    assert r.status_code == 200, r.text
    for m, out in zip(moves, r.json()["predictions"], strict=True):
        legal = Position.from_moves(m, g).legal_moves()
        assert out["action"] == out["column"] and out["action"] in legal
        assert [c for c, p in enumerate(out["probs"]) if p == 0.0] == [c for c in range(4) if c not in legal]
    for body, hint in (
        ({"dataframe_records": [{"moves": "45"}]}, "expected a column digit 1-4"),
        ({"dataframe_records": [{"board": EMPTY}]}, "list of 4 rows, got 6"),
        ({"dataframe_records": [{"foo": 1}]}, "such as \"33\") or 'board' (4 rows of 4 cells"),
        ({"dataframe_records": ONE, "params": {"simulations": 8, "probe_from": 17}}, "between 0 and 16"),
    ):
        r = post(servers["connect3-4x4"], body)
        assert r.status_code == 400 and hint in r.json()["message"], (body, r.text[:300])


@pytest.mark.slow
def test_a_tabular_champion_answers_its_table_s_best_action(
    servers: dict[str, str], rng, random_move_string
) -> None:
    """A Q-learning table served: every answer is legal and is the table's best action, its
    probability shared by equal best actions, its value the best action's; it is not searched."""
    from c4core.games import load
    from c4core.tracking.store import Tracking
    from c4core.tracking.uris import load_checkpoint

    g = Geometry(4, 4, 3)
    moves = [random_move_string(rng, unfinished=True, geometry=g) for _ in range(50)] + [""]
    r = post(servers["table"], {"dataframe_records": [{"moves": m} for m in moves]})
    assert r.status_code == 200, r.text
    ckpt, _ = load_checkpoint(Tracking.for_uri(servers["table-store"]), "models:/connect3-4x4@champion")
    table = ckpt.build()
    game = load("connect3-4x4")
    for m, out in zip(moves, r.json()["predictions"], strict=True):
        state = game.state_from_moves(m)
        q = table.q[table.index.rows([state.key()])[0]]
        legal = state.legal_actions()
        best = max(q[a] for a in legal)
        assert out["action"] == out["column"] and out["action"] in legal and q[out["action"]] == best
        assert out["value"] == pytest.approx(float(best), abs=1e-6)
        assert sum(out["probs"]) == pytest.approx(1.0) and out["probs"][out["action"]] > 0
    r = post(servers["table"], {"dataframe_records": ONE, "params": {"simulations": 8}})
    assert r.status_code == 400 and "a table of every position, not searched" in r.json()["message"]
