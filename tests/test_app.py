"""The play page's server (`c4core.app`) and ``c4 play`` against the champion.

Champions here are tiny untrained nets, published through the real registry steps
(`MLflowStore.save_snapshot`, `register_snapshot`, `promote_champion`) into a throw-away MLflow
store, so the app follows exactly what a league leaves behind. The JSON API is driven in-process
(FastAPI's TestClient, lifespan and refresh thread included); one test starts the real
``c4 serve-app``, one answers through MLflow's own scoring server.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests
import torch
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from mlflow.entities.model_registry import ModelVersion
from servers import free_port, wait_for_http

from c4core.app import (
    STATIC,
    ChampionSource,
    bad_request_detail,
    create_app,
    default_opponent,
    endgames_from,
    parse_move_request,
)
from c4core.cli import build_parser, cmd_play
from c4core.config import NetConfig, league_config, profile
from c4core.evaluation.elo import EloFit
from c4core.evaluation.positions import position_index
from c4core.games import load
from c4core.games.connect4.rules import Geometry, Position
from c4core.learners.net import Checkpoint, PolicyValueNet
from c4core.learners.tabular import QTable
from c4core.serving import MAX_SIMULATIONS, evaluate
from c4core.tracking.champion import promote_champion
from c4core.tracking.scores import log_nash_conv
from c4core.tracking.store import MLflowStore, Tracking
from c4core.tracking.versions import register_snapshot

TINY = {"blocks": 1, "channels": 8, "value_hidden": 8}
C4 = Path(sys.executable).with_name("c4")
CYCLE = "".join(f"{c}\n" for c in "1234567" * 40)  # every column in turn: full ones get "try again"
RESULTS = ("You win!", "wins.", "Draw.")


# ---- helpers shared with test_browser.py ---------------------------------------------------------
def tiny_net(seed: int) -> PolicyValueNet:
    torch.manual_seed(seed)
    return PolicyValueNet(NetConfig(**TINY)).eval()


def publish(tracking: Tracking, generation: int, seed: int, elo: float, league: str = "app") -> ModelVersion:
    """Register an untrained tiny net as snapshot `generation` and promote it to champion."""
    config = profile("smoke", name=league, net=TINY)
    store = MLflowStore(tracking, config)
    store.save_snapshot(Checkpoint.of(tiny_net(seed), generation=generation), [])
    member = f"gen{generation}"
    fit = EloFit(ratings={member: elo}, ci95={member: (elo - 50, elo + 50)}, anchor=None, games={member: 20})
    register_snapshot(store, generation, fit)
    return promote_champion(store, member, fit, generation)


def publish_connect3(tracking: Tracking, kind: str) -> PolicyValueNet | QTable:
    """Register a random Connect-3 4x4 snapshot of `kind` ("net" or "table") as the champion of
    its own model, ``connect3-4x4``; returns what plays."""
    return publish_game(tracking, league_config("smoke", "app3", game="connect3-4x4"), kind)


def publish_dots(tracking: Tracking) -> PolicyValueNet:
    """Register an untrained tiny net of Dots and Boxes on 2x2 boxes as the champion of its own
    model, ``dots-and-boxes-2x2``; returns it."""
    config = league_config("smoke", "appdots", game="dots_and_boxes", rows=2, cols=2)
    net = publish_game(tracking, config, "net")
    assert isinstance(net, PolicyValueNet)
    return net


def publish_game(tracking: Tracking, config: Any, kind: str) -> PolicyValueNet | QTable:
    """Register a random snapshot of `kind` of `config`'s game as the champion of its model."""
    config = replace(config, net=replace(config.net, **TINY))
    game = config.board
    if kind == "table":
        shape = (len(position_index(game)), game.num_actions)
        q = torch.rand(shape, generator=torch.Generator().manual_seed(3))
        ckpt = Checkpoint({"q": q}, None, game, generation=1, kind="table")
    else:
        torch.manual_seed(3)
        ckpt = Checkpoint.of(PolicyValueNet(config.net, game).eval(), generation=1)
    store = MLflowStore(tracking, config)
    store.save_snapshot(ckpt, [])
    fit = EloFit(ratings={"gen1": 50.0}, ci95={"gen1": (0.0, 100.0)}, anchor=None, games={"gen1": 20})
    register_snapshot(store, 1, fit)
    promote_champion(store, "gen1", fit, 1)
    log_nash_conv(store, 1)  # as a league does on a board small enough (else it logs why not)
    return ckpt.build()


def blank_store(blank_db: Path, folder: Path) -> Tracking:
    """A fresh store from a copy of an already migrated, empty MLflow database (saves seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(blank_db, folder / "mlflow.db")
    return Tracking.for_uri(f"sqlite:///{folder / 'mlflow.db'}")


class ServerThread:
    """An ASGI app on a real port, served by uvicorn on a thread of this process."""

    def __init__(self, app, port: int | None = None):
        import uvicorn

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)


# ---- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tracking(blank_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Tracking:
    """A store whose champion is generation 1 (seed 0, Elo 100); tests here never change it."""
    tracking = blank_store(blank_db, tmp_path_factory.mktemp("store"))
    publish(tracking, 1, seed=0, elo=100.0)
    return tracking


@pytest.fixture(scope="module")
def client(tracking: Tracking) -> Iterator[TestClient]:
    with TestClient(create_app(ChampionSource(tracking, refresh_s=5))) as c:
        yield c


def move(client: TestClient, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = client.post("/api/move", content=data, headers={"Content-Type": "application/json"})
    return r.status_code, r.json()


def board_of(moves: str) -> list[list[int]]:
    return Position.from_moves(moves).board()


# ---- who plays -----------------------------------------------------------------------------------
def test_the_champion_is_named_with_generation_elo_and_promotion_time(client: TestClient) -> None:
    r = client.get("/api/champion")
    assert r.status_code == 200
    info = r.json()
    assert info["name"] == "connect4/1" and info["version"] == "1"
    assert info["member"] == "gen1" and info["generation"] == 1 and info["league"] == "app"
    assert info["elo"] == pytest.approx(100.0)
    assert info["promoted_at"].startswith("20") and "T" in info["promoted_at"]
    assert info["source"] == "registry" and info["uri"] == "models:/connect4@champion"
    assert info["kind"] == "net" and info["game"] == {
        "name": "connect4",
        "variant": "connect4",
        "title": "Connect Four",
        "params": {"rows": 6, "cols": 7, "connect": 4},
        "endgames_from": 16,
    }
    assert 0 < info["refresh_s"] <= 60
    assert client.get("/api/health").json()["champion"] == "connect4/1"


def test_unmeasured_strengths_are_null_not_missing(client: TestClient) -> None:
    """This champion never met tactical and no suite scored it: the fields are there, as null."""
    info = client.get("/api/champion").json()
    for key in ("win_vs_tactical", "suite_keeps_result", "suite_counted", "nash_conv"):
        assert key in info and info[key] is None, key
    assert move(client, {"moves": "4"})[1]["champion"]["win_vs_tactical"] is None


def test_the_champion_carries_its_league_and_measured_strength(blank_db: Path, tmp_path: Path) -> None:
    """League, win rate against tactical and suite score come from the version's tags, as numbers;
    a tag changed in the registry reaches the API at the next refresh, and a suite that counted
    nothing ("nan") is reported as not measured, never as a NaN the JSON could not hold."""
    tracking = blank_store(blank_db, tmp_path / "measured")
    version = publish(tracking, 6, seed=0, elo=1086.0, league="cpu1")
    client = tracking.client()
    tags = {"win_vs_tactical": "0.9550", "suite_keeps_result": "0.8770", "suite_counted": "120"}
    for key, value in tags.items():
        client.set_model_version_tag(version.name, version.version, key, value)
    source = ChampionSource(tracking, refresh_s=60)
    with TestClient(create_app(source)) as c:
        info = c.get("/api/champion").json()
        assert info["league"] == "cpu1" and info["generation"] == 6
        assert info["elo"] == pytest.approx(1086.0)
        assert info["win_vs_tactical"] == pytest.approx(0.955)
        assert info["suite_keeps_result"] == pytest.approx(0.877) and info["suite_counted"] == 120
        assert move(c, {"moves": "44"})[1]["champion"]["suite_counted"] == 120

        client.set_model_version_tag(version.name, version.version, "suite_keeps_result", "nan")
        client.set_model_version_tag(version.name, version.version, "suite_counted", "0")
        client.set_model_version_tag(version.name, version.version, "win_vs_tactical", "n/a")
        assert source.refresh() is False  # the same version: new tags, no reload
        r = c.get("/api/champion")
        assert "NaN" not in r.text
        info = r.json()
        assert info["suite_keeps_result"] is None and info["suite_counted"] == 0
        assert info["win_vs_tactical"] is None and info["league"] == "cpu1"


def test_answers_are_the_champions_and_always_legal(client: TestClient, rng, random_move_string) -> None:
    net = tiny_net(0)  # the champion's own weights, rebuilt from its seed
    for _ in range(40):
        moves = random_move_string(rng, unfinished=True)
        pos = Position.from_moves(moves)
        status, out = move(client, {"moves": moves})
        assert status == 200, out
        assert out["column"] in pos.legal_moves()
        assert out["action"] == out["column"]  # the game interface's name, and the one clients knew
        assert all((p > 0) == (c in pos.legal_moves()) for c, p in enumerate(out["probs"]))
        assert sum(out["probs"]) == pytest.approx(1.0, abs=1e-5)
        assert -1 <= out["value"] <= 1
        (expected,) = evaluate(net, [pos])
        assert out["column"] == expected["column"]
        assert out["probs"] == pytest.approx(expected["probs"], abs=1e-6)
        assert out["champion"]["name"] == "connect4/1" and out["simulations"] == 0
        # the same position as a board gets the same answer
        status, by_board = move(client, {"board": pos.board()})
        assert status == 200 and by_board["column"] == out["column"]


def test_the_strength_setting_searches(client: TestClient) -> None:
    status, out = move(client, {"moves": "4453", "simulations": 32})
    assert status == 200, out
    assert out["simulations"] == 32 and out["column"] in Position.from_moves("4453").legal_moves()
    assert sum(out["probs"]) == pytest.approx(1.0)
    # a win in one is found by search whatever the untrained net thinks
    status, out = move(client, {"moves": "112233", "simulations": 16})
    assert status == 200 and out["column"] == 3 and out["value"] == 1.0


def test_the_exact_endgame_setting_probes_the_solver(client: TestClient) -> None:
    """With probe_from, search hands late leaves to the exact solver: an untrained champion
    then finds the only result-keeping move of a 19-stone position (column 6, index 5)."""
    only_defence = "6562471451742442257"
    status, out = move(client, {"moves": only_defence, "simulations": 64, "probe_from": 20})
    assert status == 200, out
    assert out["column"] == 5 and out["value"] == 1.0 and out["probe_from"] == 20


@pytest.mark.parametrize(
    ("variant", "expected"),
    [("connect4", 16), ("connect3-4x4", 1), ("dots-and-boxes-3x3", 1), ("dots-and-boxes-4x4", 20)],
)
def test_the_exact_endgames_strength_probes_from_where_the_solver_is_cheap(
    variant: str, expected: int
) -> None:
    """Connect Four's standard board from 16 stones; a table, or a small board's solver, from
    the first move; 4x4 boxes from the ply the endgame search reaches; no solver, no setting."""
    assert endgames_from(load(variant)) == expected
    assert endgames_from(load("dots_and_boxes", rows=4, cols=5)) is None


def test_an_empty_board_is_a_valid_request(client: TestClient) -> None:
    for body in ({"moves": ""}, {"board": [[0] * 7 for _ in range(6)]}, {"moves": "", "simulations": None}):
        status, out = move(client, body)
        assert status == 200, out


DRAWN_MOVES = "472424756645422154157737216635626711335331"  # 42 plies, nobody wins
DRAWN = Position.from_moves(DRAWN_MOVES[:-1]).play(0).board()
EMPTY_ROW = [0] * 7
FLOATING = [[0] * 7 for _ in range(4)] + [[1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 2]]
COUNTS_OFF = [[0] * 7 for _ in range(5)] + [[1, 1, 1, 0, 0, 0, 2]]
WON = [[0] * 7 for _ in range(5)] + [[1, 1, 1, 1, 2, 2, 2]]

BAD = [
    ("not json", b"nonsense", "must be JSON"),
    ("empty body", b"", "must be JSON"),
    ("bad utf-8", b"\xff\xfe\x00", "must be JSON"),
    ("a list", b"[]", "JSON object"),
    ("a string", b'"4453"', "JSON object"),
    ("null", b"null", "JSON object"),
    ("deeply nested", b"[" * 5000, "JSON"),
    ("too large", b'{"moves": "' + b"4" * 20_000 + b'"}', "too large"),
    ("no position", {}, "needs 'moves'"),
    ("both null", {"moves": None, "board": None}, "needs 'moves'"),
    ("unknown field", {"move": "44"}, "unknown field 'move'"),
    ("both forms", {"moves": "44", "board": board_of("44")}, "not both"),
    ("moves a number", {"moves": 4453}, "must be a string"),
    ("moves a list", {"moves": [4, 4]}, "must be a string"),
    ("moves NaN", b'{"moves": NaN}', "must be a string"),
    ("board NaN", b'{"moves": "44", "board": NaN}', "got NaN"),
    ("column 8", {"moves": "48"}, "bad move '8'"),
    ("long and wrong", {"moves": "4" * 5000}, f"{'4' * 40!r}... (5,000 characters)"),
    ("column 0", {"moves": "40"}, "bad move '0'"),
    ("letters", {"moves": "4a"}, "bad move 'a'"),
    ("full column", {"moves": "1111111"}, "column 1 is full"),
    ("moves after a win", {"moves": "12121217"}, "after the game was already won"),
    ("game over", {"moves": "1212121"}, "already over"),
    ("board full", {"board": DRAWN}, "board is full"),
    ("board a string", {"board": "x"}, "list of 6 rows"),
    ("board 5 rows", {"board": [EMPTY_ROW] * 5}, "list of 6 rows"),
    ("ragged row", {"board": [EMPTY_ROW] * 2 + [[0] * 6] + [EMPTY_ROW] * 3}, "row 3 must have 7 cells"),
    ("cell 3", {"board": [EMPTY_ROW] * 5 + [[3, 0, 0, 0, 0, 0, 0]]}, "use 0, 1 or 2"),
    ("cell float", {"board": [EMPTY_ROW] * 5 + [[1.0, 0, 0, 0, 0, 0, 0]]}, "use 0, 1 or 2"),
    ("cell bool", {"board": [EMPTY_ROW] * 5 + [[True, 0, 0, 0, 0, 0, 0]]}, "use 0, 1 or 2"),
    ("cell text", {"board": [EMPTY_ROW] * 5 + [["1", 0, 0, 0, 0, 0, 0]]}, "use 0, 1 or 2"),
    ("floating stone", {"board": FLOATING}, "floating stone"),
    ("stone counts", {"board": COUNTS_OFF}, "impossible stone counts"),
    ("board already won", {"board": WON}, "player 1 has already won"),
    ("negative simulations", {"moves": "4", "simulations": -1}, "between 0"),
    ("huge simulations", {"moves": "4", "simulations": 10**100}, "between 0"),
    ("text simulations", {"moves": "4", "simulations": "64"}, "whole number"),
    ("bool simulations", {"moves": "4", "simulations": True}, "whole number"),
    ("float simulations", {"moves": "4", "simulations": 1.5}, "whole number"),
    ("probe without search", {"moves": "4", "probe_from": 16}, "needs 'simulations'"),
    ("negative probe", {"moves": "4", "simulations": 8, "probe_from": -1}, "between 0 and 42"),
    ("probe past the board", {"moves": "4", "simulations": 8, "probe_from": 43}, "between 0 and 42"),
    ("text probe", {"moves": "4", "simulations": 8, "probe_from": "16"}, "whole number"),
]


@pytest.mark.parametrize("name,body,hint", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_400_that_says_what_is_wrong(client: TestClient, name: str, body, hint: str) -> None:
    status, out = move(client, body)
    assert status == 400, out
    assert set(out) == {"detail"} and isinstance(out["detail"], str)
    assert hint in out["detail"]
    assert "\n" not in out["detail"] and "Traceback" not in out["detail"]
    assert len(out["detail"]) < 300  # a long body is never echoed back whole


@pytest.mark.parametrize("kind", ["table", "net"])
def test_a_connect3_champion_plays_on_its_own_board_as_a_table_or_a_network(
    blank_db: Path, tmp_path: Path, kind: str
) -> None:
    tracking = blank_store(blank_db, tmp_path)
    model = publish_connect3(tracking, kind)
    source = ChampionSource(tracking, uri="models:/connect3-4x4@champion", refresh_s=60)
    with TestClient(create_app(source)) as c:
        info = c.get("/api/champion").json()
        assert info["name"] == "connect3-4x4/1" and info["kind"] == kind
        assert info["game"] == {
            "name": "connect4",
            "variant": "connect3-4x4",
            "title": "Connect-3 on 4x4",
            "params": {"rows": 4, "cols": 4, "connect": 3},
            "endgames_from": 1,  # a small board's solver is cheap from the first stone
        }
        (version,) = tracking.client().search_model_versions("name = 'connect3-4x4'")
        assert info["nash_conv"] == float(version.tags["nash_conv"]) and 0 <= info["nash_conv"] <= 2
        assert info["suite_keeps_result"] is None  # the suites are standard Connect Four's
        small = Geometry(4, 4, 3)
        for moves in ("", "1213", "2323"):
            status, out = move(c, {"moves": moves})
            assert status == 200, out
            (expected,) = evaluate(model, [Position.from_moves(moves, small)])
            assert out["action"] == out["column"] == expected["action"] and len(out["probs"]) == 4
            assert out["move"] == str(out["action"] + 1)
        board = Position.from_moves("1213", small).board()
        assert move(c, {"board": board})[1]["action"] == move(c, {"moves": "1213"})[1]["action"]
        # the board is the champion's: a 6x7 board or a fifth column is refused, saying why
        status, out = move(c, {"board": board_of("")})
        assert status == 400 and "4 rows, got 6" in out["detail"], out
        status, out = move(c, {"moves": "5"})
        assert status == 400 and "5" in out["detail"], out
        status, out = move(c, {"moves": "12121"})  # three in a row wins on this board
        assert status == 400 and "already over" in out["detail"], out
        status, out = move(c, {"moves": "", "simulations": 8})
        if kind == "table":
            assert status == 400 and "not searched" in out["detail"], out
        else:
            assert status == 200 and out["simulations"] == 8


def test_a_dots_and_boxes_champion_answers_lines_in_its_notation(blank_db: Path, tmp_path: Path) -> None:
    tracking = blank_store(blank_db, tmp_path)
    net = publish_dots(tracking)
    source = ChampionSource(tracking, uri="models:/dots-and-boxes-2x2@champion", refresh_s=60)
    with TestClient(create_app(source)) as c:
        info = c.get("/api/champion").json()
        assert info["kind"] == "net" and info["game"]["name"] == "dots_and_boxes"
        assert info["game"]["params"] == {"rows": 2, "cols": 2}
        assert info["game"]["endgames_from"] == 1  # the table settles every position
        game = load("dots_and_boxes", rows=2, cols=2)
        for moves in ("", "h0,0 v0,0", "h0,0 h1,0 v0,0 v0,1"):  # the last: the second player took a box
            status, out = move(c, {"moves": moves})
            assert status == 200, out
            (expected,) = evaluate(net, [game.state_from_moves(moves)])
            assert out["action"] == expected["action"] and out["move"] == game.format_action(out["action"])
            assert "column" not in out and len(out["probs"]) == game.num_actions == 12
        assert move(c, {"moves": "h0,0", "simulations": 8})[0] == 200
        assert move(c, {"moves": "h0,0", "simulations": 8, "probe_from": 4})[0] == 200  # its solver
        for body, words in (
            ({"moves": "h0,0 h0,0"}, "already drawn"),
            ({"moves": "h5,0"}, "off the 2x2 board"),
            ({"moves": "x1"}, "expected a line such as"),
            ({"board": [[0]]}, "'board' is Connect Four's"),
            ({"moves": "h0,0", "simulations": 8, "probe_from": 13}, "between 0 and 12 moves"),
        ):
            status, out = move(c, body)
            assert status == 400 and words in out["detail"], (body, out)


def test_the_parser_agrees_with_the_game_rules(rng, random_move_string) -> None:
    for _ in range(100):
        moves = random_move_string(rng, unfinished=True)
        pos, sims, probe, record = parse_move_request(json.dumps({"moves": moves, "simulations": 7}).encode())
        assert pos == Position.from_moves(moves) and sims == 7 and probe == 0 and record["moves"] == moves
    assert parse_move_request(b'{"moves": "4", "simulations": %d}' % MAX_SIMULATIONS)[1] == MAX_SIMULATIONS


def test_fastapis_own_validation_errors_are_worded_like_ours() -> None:
    """A body FastAPI itself refuses gets the same one-line detail as one `MoveRequest` refuses."""
    invalid = {"type": "json_invalid", "loc": ("body", 1), "msg": "JSON decode error", "input": {}}
    assert bad_request_detail(RequestValidationError([invalid | {"ctx": {"error": "Expecting value"}}])) == (
        'request body must be JSON (Expecting value), e.g. {"moves": "4453"}'
    )
    extra = {"type": "extra_forbidden", "loc": ("body", "move"), "msg": "Extra inputs", "input": 1}
    assert bad_request_detail(RequestValidationError([extra])).startswith("unknown field 'move'")


def test_other_routes_and_methods_are_never_500(client: TestClient) -> None:
    assert client.get("/api/move").status_code == 405
    assert client.get("/api/nothing").status_code == 404
    assert client.get("/static/../app.py").status_code == 404


# ---- the page ------------------------------------------------------------------------------------
def test_the_page_and_its_assets_are_served_without_network_resources(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="board"' in page.text and "/static/app.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("app.js", "app.css"):
        assert client.get(f"/static/{name}").status_code == 200
    for path in STATIC.iterdir():
        text = path.read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, path.name


# ---- no champion ---------------------------------------------------------------------------------
def test_without_a_registry_the_app_waits_with_503s_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "none" / "mlflow.db"
    source = ChampionSource(Tracking(f"sqlite:///{db}"), refresh_s=60)
    with TestClient(create_app(source)) as c:
        r = c.get("/api/champion")
        assert r.status_code == 503 and "make league" in r.json()["detail"]
        assert move(c, {"moves": "44"})[0] == 503
        assert move(c, {"moves": "49"})[0] == 400  # bad input is still bad input
        assert c.get("/").status_code == 200
        assert c.get("/api/health").json() == {"ok": True, "champion": None, "error": source.last_error}
    assert not db.exists()


def test_a_registry_without_a_champion_is_a_503(blank_db: Path, tmp_path: Path) -> None:
    tracking = blank_store(blank_db, tmp_path / "empty")
    with TestClient(create_app(ChampionSource(tracking, refresh_s=60))) as c:
        r = c.get("/api/champion")
        assert r.status_code == 503 and "no champion" in r.json()["detail"]


# ---- a new champion, no restart ------------------------------------------------------------------
def test_a_new_champion_is_played_without_a_restart(blank_db: Path, tmp_path: Path) -> None:
    tracking = blank_store(blank_db, tmp_path / "promote")
    publish(tracking, 1, seed=0, elo=100.0)
    old, new = tiny_net(0), tiny_net(1)
    # a position where the two nets disagree, so the answer shows who played it
    moves = next(m for m in ("", "4", "44", "43", "1", "7", "4453") if _argmax(old, m) != _argmax(new, m))
    with TestClient(create_app(ChampionSource(tracking, refresh_s=0.2))) as c:
        assert c.get("/api/champion").json()["name"] == "connect4/1"
        status, before = move(c, {"moves": moves})
        assert status == 200 and before["column"] == _argmax(old, moves)
        publish(tracking, 2, seed=1, elo=250.0)  # the league promotes a new champion
        deadline = time.monotonic() + 20
        while c.get("/api/champion").json()["name"] != "connect4/2":
            assert time.monotonic() < deadline, "the app never noticed the new champion"
            time.sleep(0.1)
        info = c.get("/api/champion").json()
        assert info["generation"] == 2 and info["elo"] == pytest.approx(250.0)
        status, after = move(c, {"moves": moves})
        assert status == 200 and after["champion"]["name"] == "connect4/2"
        assert after["column"] == _argmax(new, moves)


def _argmax(net: PolicyValueNet, moves: str) -> int:
    return evaluate(net, [Position.from_moves(moves)])[0]["column"]


def test_the_refresh_interval_is_configurable_and_at_most_a_minute_by_default() -> None:
    args = build_parser().parse_args(["serve-app"])
    assert 0 < args.refresh <= 60 and args.host == "127.0.0.1"
    assert build_parser().parse_args(["serve-app", "--refresh", "0.5"]).refresh == 0.5
    with pytest.raises(ValueError, match="positive"):
        ChampionSource(Tracking("sqlite:///x.db"), refresh_s=0)


# ---- through `mlflow models serve` ---------------------------------------------------------------
def test_moves_can_come_from_mlflows_scoring_server(tracking: Tracking) -> None:
    import mlflow.pyfunc
    from mlflow.pyfunc import scoring_server

    client = tracking.client()
    source_uri = client.get_model_version_download_uri("connect4", "1")
    scoring = scoring_server.init(mlflow.pyfunc.load_model(source_uri))  # what `mlflow models serve` runs
    with ServerThread(scoring) as server:
        app = create_app(ChampionSource(tracking, refresh_s=60, serve_url=server.url))
        with TestClient(app) as c:
            info = c.get("/api/champion").json()
            assert info["source"] == server.url and info["name"] == "connect4/1"
            status, out = move(c, {"moves": "4453"})
            assert status == 200, out
            (expected,) = evaluate(tiny_net(0), [Position.from_moves("4453")])
            assert out["column"] == expected["column"] == out["action"]
            assert out["probs"] == pytest.approx(expected["probs"], abs=1e-6)
            status, out = move(c, {"moves": "4453", "simulations": 8})
            assert status == 200 and out["column"] in Position.from_moves("4453").legal_moves()
            assert move(c, {"moves": "1212121"}) == (
                400,
                {"detail": "the game is already over: player 1 has won"},
            )
        # a server alone (no registry) plays too, and a dead one is a 503, not a 500
        with TestClient(create_app(ChampionSource(None, serve_url=server.url))) as c:
            assert move(c, {"moves": "44"})[0] == 200
    with TestClient(create_app(ChampionSource(None, serve_url=server.url))) as c:
        status, out = move(c, {"moves": "44"})
        assert status == 503 and "not reachable" in out["detail"]


# ---- the real command ----------------------------------------------------------------------------
@pytest.mark.slow  # a real `c4 serve-app` process
def test_c4_serve_app_serves_the_page_on_localhost(tracking: Tracking, tmp_path: Path) -> None:
    if not C4.exists():
        pytest.skip(f"no c4 script next to {sys.executable}")
    port = free_port()
    env = os.environ | {"OMP_NUM_THREADS": "1", "MLFLOW_TRACKING_URI": tracking.tracking_uri}
    log_path = tmp_path / "serve-app.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [str(C4), "serve-app", "--port", str(port), "--refresh", "1"], env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/api/health", proc, log_path, "c4 serve-app", 90)
        assert requests.get(f"{url}/api/champion", timeout=5).json()["name"] == "connect4/1"
        r = requests.post(f"{url}/api/move", json={"moves": "4453"}, timeout=10)
        assert r.status_code == 200 and r.json()["column"] in range(7)
        assert requests.post(f"{url}/api/move", data="{", timeout=10).status_code == 400
        assert "<title>" in requests.get(url, timeout=5).text
    finally:
        proc.terminate()
        proc.wait(15)
    assert "Traceback" not in (tmp_path / "serve-app.log").read_text()


# ---- c4 play -------------------------------------------------------------------------------------
def play(stdin: str, *flags: str) -> tuple[int, str]:
    args = build_parser().parse_args(["play", "--seed", "3", *flags])
    out = io.StringIO()
    rc = cmd_play(args, stdin=io.StringIO(stdin), out=out)
    return rc, out.getvalue()


def test_play_defaults_to_the_registry_champion(tracking: Tracking) -> None:
    rc, out = play(CYCLE, "--tracking-uri", tracking.tracking_uri)
    assert rc == 0
    assert out.startswith("You are X, connect4/1 is O.")
    assert "connect4/1 plays" in out and "note:" not in out
    lines = out.rstrip().splitlines()
    assert lines[-2] == "1 2 3 4 5 6 7" and any(lines[-1].endswith(r) for r in RESULTS)
    # every board drawn is a real position: 6 rows of 7 cells, then the column numbers
    boards = [lines[i - 6 : i] for i, line in enumerate(lines) if line == "1 2 3 4 5 6 7"]
    assert boards and all(
        len(row.split()) == 7 and set(row.split()) <= set(".XO") for b in boards for row in b
    )


def test_play_falls_back_to_tactical_with_a_note(tmp_path: Path) -> None:
    db = tmp_path / "nowhere" / "mlflow.db"
    rc, out = play("q\n", "--tracking-uri", f"sqlite:///{db}")
    assert rc == 0 and out.startswith("note: no registry at") and "you play tactical" in out
    assert "You are X, tactical is O." in out
    assert not db.exists()


def test_play_falls_back_when_the_registry_has_no_champion(blank_db: Path, tmp_path: Path) -> None:
    tracking = blank_store(blank_db, tmp_path / "empty")
    rc, out = play("q\n", "--tracking-uri", tracking.tracking_uri)
    assert rc == 0 and "note: no champion at models:/connect4@champion" in out and "tactical is O" in out


def test_play_falls_back_at_once_when_no_tracking_server_answers() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    start = time.monotonic()
    rc, out = play("q\n", "--tracking-uri", url)
    assert rc == 0 and "note: no champion at models:/connect4@champion" in out and "tactical is O" in out
    assert time.monotonic() - start < 10  # one refused connection, not MLflow's minutes of retries


def test_the_default_opponent_changes_no_environment(tracking: Tracking, tmp_path: Path) -> None:
    before = dict(os.environ)
    assert default_opponent(tracking.tracking_uri) == ("models:/connect4@champion", None)
    assert default_opponent(f"http://127.0.0.1:{free_port()}")[0] == "tactical"
    assert default_opponent(f"sqlite:///{tmp_path / 'none.db'}")[0] == "tactical"
    assert dict(os.environ) == before


def test_play_still_takes_any_opponent(tracking: Tracking) -> None:
    rc, out = play("q\n", "--opponent", "random", "--tracking-uri", tracking.tracking_uri)
    assert rc == 0 and out.startswith("You are X, random is O.")


@pytest.mark.slow  # a real `c4 play` process
def test_play_the_champion_through_stdin_in_a_real_process(tracking: Tracking) -> None:
    if not C4.exists():
        pytest.skip(f"no c4 script next to {sys.executable}")
    env = os.environ | {"OMP_NUM_THREADS": "1", "MLFLOW_TRACKING_URI": tracking.tracking_uri}
    proc = subprocess.run(
        [str(C4), "play", "--seed", "5", "--first", "bot"],
        input="9\nx\n" + CYCLE,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    assert out.startswith("You are O, connect4/1 is X.")
    assert out.index("connect4/1 plays") < out.index("your move: ")
    assert out.count("try again") >= 2  # 9 and x were refused
    assert any(out.rstrip().splitlines()[-1].endswith(r) for r in RESULTS)
