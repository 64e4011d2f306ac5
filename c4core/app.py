"""The play page: the league champion in the browser (``c4 serve-app``, ``make up``).

One FastAPI app serves one static page (``c4core/static/``: HTML, CSS and JS, no network
resources) and a small JSON API::

    GET  /                 the page
    GET  /api/champion     who plays: name, version, league, generation, Elo, win_vs_tactical,
                           suite_keeps_result, suite_counted and nash_conv (null when not
                           measured),
                           promoted_at, source, kind ("net" or "table") and game (its name,
                           variant, title and parameters: the board the page draws; and
                           endgames_from, the `probe_from` of the page's exact-endgames
                           strength, null for a game without an exact solver)
    POST /api/move         {"moves": "4453"} (the game's notation: `Game.state_from_moves`) or,
                           for Connect Four, {"board": [[...rows of columns...]]}, optional
                           {"simulations": N} (0 = the raw network, up to
                           `c4core.serving.MAX_SIMULATIONS`; a table is never searched)
                           and {"probe_from": P} (search leaves of P+ moves, Connect Four's
                           stones or Dots and Boxes' lines, go to the exact solver; 0 = never,
                           the default)
                           -> {"action": its number, "move": in the game's notation, "column":
                               the action again (Connect Four's), "probs": [one per action],
                               "value": -1..1 for the champion,
                               "simulations": N, "probe_from": P, "ms": server time,
                               "champion": {...}}
    GET  /api/health       {"ok": true, "champion": "connect4/7" or null}

The client keeps the move list (undo is client-side); every request carries the whole game, so
the server keeps no per-game state. A body is checked in two steps: its shape by the pydantic
model `MoveRequest` (these four fields and no other, whole numbers, the simulation cap), then its
position as `c4core` checks positions for the champion's game (`c4core.serving.parse_record`,
which rests on `Game.state_from_moves` and Connect Four's `Position.from_board`, and
`probe_of`). One exception handler turns whatever either step refuses into HTTP 400 with a
one-line ``detail``, never a 500; no champion yet is a 503.

Which champion plays. `ChampionSource` resolves ``models:/connect4@champion`` (or any registry
URI: ``models:/connect3-4x4@champion`` plays Connect-3 on 4x4, a table or a network alike) and
polls the registry every `refresh_s` seconds on a background thread; when the alias moves, it
loads the new version's weights and swaps them in between two requests, so a running page plays
the new champion from its next move, with no restart. With `serve_url` the moves come from a
running ``mlflow models serve`` endpoint instead (``POST /invocations``); the registry, if
reachable, still supplies the name, generation, Elo and game shown on the page.

The API answers any game's champion; the page draws Connect Four boards of any size and Dots
and Boxes boards (and says so for a game it cannot draw).

Nothing in `c4core` imports this module; it sits on top of registry, serving and search.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from annotated_types import Ge, Le
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from c4core.games import ConnectFour, Game, State, exact_from, game_of, load, solvable
from c4core.serving import MAX_SIMULATIONS, BadInput, ProbingSolver, parse_record, probe_of
from c4core.tracking.scores import NASH_CONV
from c4core.tracking.store import MODEL_NAME, Tracking
from c4core.tracking.uris import load_checkpoint, resolve_version

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
CHAMPION_URI = f"models:/{MODEL_NAME}@champion"
DEFAULT_REFRESH_S = 30.0
"""How often the app asks the registry who the champion is (the issue asks for under a minute)."""
MAX_BODY = 16_384
"""Largest request body accepted, in bytes (a full board is well under 1 KB)."""


class NoChampion(RuntimeError):
    """No champion to play yet (empty registry, unreachable registry or model server): HTTP 503."""


class Upstream(RuntimeError):
    """The model server answered something unusable: HTTP 502."""


# ---- who plays -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChampionInfo:
    """What the page shows about the champion (from the registered version and its tags)."""

    name: str
    """``<registered model>/<version>``, e.g. ``connect4/7``."""
    model: str
    """The registered model's name."""
    version: str
    """Its version number."""
    member: str | None
    """League member name, e.g. ``gen3``."""
    league: str | None
    """The league that trained it."""
    generation: int | None
    """League generation that produced it."""
    elo: float | None
    """Its Elo on the league ladder (random = 0)."""
    win_vs_tactical: float | None
    """The fraction of its league games against ``tactical`` that it won (0..1); None when it
    never played tactical."""
    suite_keeps_result: float | None
    """The fraction of the test suite's positions where its raw network keeps the result (0..1);
    None when no suite scored it."""
    suite_counted: int | None
    """How many suite positions that fraction counts; None when no suite scored it."""
    nash_conv: float | None
    """Its exact NashConv (`c4core.tracking.scores.NASH_CONV`: 0 is unexploitable, 2 loses every game to
    a best response), on a board small enough to enumerate; None elsewhere."""
    promoted_at: str | None
    """When it became champion (ISO 8601, UTC)."""
    source: str
    """Where its moves come from: ``registry`` (weights loaded here) or the model server URL."""
    uri: str
    """The registry URI the app follows, e.g. ``models:/connect4@champion``."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _info(version: Any, uri: str, source: str) -> ChampionInfo:
    tags = dict(version.tags or {})

    def number(key: str, kind: Callable[[str], Any]) -> Any:
        try:
            value = kind(tags[key])
        except (KeyError, ValueError):
            return None
        return value if math.isfinite(value) else None  # "nan" (a suite that counted nothing) is no score

    promoted = tags.get("champion_since")
    if promoted is None and version.last_updated_timestamp:
        stamp = version.last_updated_timestamp / 1000
        promoted = datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")
    return ChampionInfo(
        name=f"{version.name}/{version.version}",
        model=version.name,
        version=str(version.version),
        member=tags.get("member"),
        league=tags.get("league"),
        generation=number("generation", int),
        elo=number("elo", float),
        win_vs_tactical=number("win_vs_tactical", float),
        suite_keeps_result=number("suite_keeps_result", float),
        suite_counted=number("suite_counted", int),
        nash_conv=number(NASH_CONV, float),
        promoted_at=promoted,
        source=source,
        uri=uri,
    )


ENDGAME_STONES = 16
"""On the standard Connect Four board the exact-endgames strength probes the solver at search
leaves of this many stones or more: the openings stay the search's, where a solve can take
seconds to minutes."""


def endgames_from(game: Game) -> int | None:
    """The `probe_from` of the page's exact-endgames strength ("Search 256, exact endgames") for
    `game`: `ENDGAME_STONES` on the standard Connect Four board; on another board with an exact
    solver, the first ply from which it settles positions cheaply (`c4core.games.exact_from`, 20
    lines on 4x4 boxes), and at least 1, since 0 turns probing off; None without a solver."""
    if not solvable(game):
        return None
    return ENDGAME_STONES if game == ConnectFour() else max(exact_from(game), 1)


@dataclass(frozen=True)
class Champion:
    """A loaded champion: its info, its game, and its network or table (None when a model server
    answers)."""

    info: ChampionInfo
    net: Any = None
    game: Game = ConnectFour()
    kind: str = "net"
    """``"net"`` or ``"table"`` (`c4core.learners.net.Checkpoint.kind`)."""

    def to_json(self) -> dict[str, Any]:
        """What the page is told: the info, what kind of model plays, and the game it draws."""
        game = {"name": self.game.name, "variant": self.game.variant, "title": self.game.title}
        game |= {"params": dict(self.game.params), "endgames_from": endgames_from(self.game)}
        return self.info.to_json() | {"kind": self.kind, "game": game}


class ChampionSource:
    """The champion the page plays, kept current by polling the registry.

    `refresh` asks the registry once (`start` does so now and then every `refresh_s` seconds on a
    daemon thread). A new version is loaded fully before it replaces the old one, so a request
    always sees one complete champion. Registry errors keep the champion already loaded.
    """

    def __init__(
        self,
        tracking: Tracking | None,
        uri: str = CHAMPION_URI,
        refresh_s: float = DEFAULT_REFRESH_S,
        serve_url: str | None = None,
        device: str = "cpu",
    ):
        if tracking is None and serve_url is None:
            raise ValueError("give a registry (tracking URI), a model server URL, or both")
        if not refresh_s > 0:
            raise ValueError(f"refresh interval must be positive, got {refresh_s}")
        self.tracking = tracking
        self.uri = uri
        self.refresh_s = refresh_s
        self.serve_url = serve_url.rstrip("/") if serve_url else None
        self.device = device
        self._champion: Champion | None = None
        self._lock = threading.Lock()  # one refresh at a time
        self._solver = ProbingSolver()  # for moves played in-process with probe_from
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checked_at: float | None = None
        self.last_error: str | None = None

    # -- state --
    def current(self) -> Champion | None:
        return self._champion

    def require(self) -> Champion:
        champ = self._champion
        if champ is None:
            raise NoChampion(self.last_error or f"no champion yet at {self.uri}: train one (make league)")
        return champ

    @property
    def game(self) -> Game:
        champ = self._champion
        return champ.game if champ is not None else ConnectFour()

    # -- refresh --
    def refresh(self) -> bool:
        """Ask the registry who the champion is; load it if it changed. True when it changed."""
        with self._lock:
            try:
                changed = self._refresh()
                self.last_error = None
                return changed
            except Exception as e:  # the registry being down must not take the page down
                self.last_error = f"cannot reach the champion: {_one_line(e)}"
                log.warning("%s", self.last_error)
                return False
            finally:
                self.checked_at = time.time()

    def _refresh(self) -> bool:
        old = self._champion
        source = self.serve_url or "registry"
        if self.tracking is None:  # a model server alone: nothing to poll, nothing to show but its URL
            if old is None:
                self._champion = Champion(_server_only_info(self.serve_url or "", self.uri))
                return True
            return False
        if _missing_sqlite(self.tracking.tracking_uri):  # do not create an empty store by looking
            if self.serve_url is not None and old is None:
                self._champion = Champion(_server_only_info(self.serve_url, self.uri))
                return True
            raise NoChampion(f"no registry yet at {self.tracking.tracking_uri}: train one with `make league`")
        try:
            version = resolve_version(self.tracking.client(), self.uri)
        except ValueError as e:
            if self.serve_url is not None and old is None:
                self._champion = Champion(_server_only_info(self.serve_url, self.uri))
                return True
            raise NoChampion(f"no champion yet ({e})") from None
        info = _info(version, self.uri, source)
        if old is not None and old.info.name == info.name:
            if old.info != info:  # same version, new Elo or tags: no reload
                self._champion = replace(old, info=info)
            return False
        if self.serve_url is not None:
            self._champion = Champion(info, game=_game_of(self.tracking, version))
        else:
            ckpt, _ = load_checkpoint(self.tracking, f"models:/{version.name}/{version.version}")
            self._champion = Champion(info, ckpt.build(self.device), ckpt.game, ckpt.kind)
        log.info("champion is now %s (generation %s, Elo %s)", info.name, info.generation, info.elo)
        return True

    def start(self) -> None:
        """Refresh now, then every `refresh_s` seconds on a daemon thread until `stop`."""
        self.refresh()
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="champion-refresh", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            self.refresh()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    # -- moves --
    def answer(
        self, state: State, simulations: int = 0, probe_from: int = 0, record: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The champion's move in a live position of its game: action (also in the game's
        notation, and as ``column`` in Connect Four), probs, value (for the champion). `record`
        is the position as the request gave it, which a model server is sent."""
        champ = self.require()
        if simulations and champ.kind == "table":
            raise BadInput("the champion is a table of every position, not searched: 'simulations' must be 0")
        if self.serve_url is not None:
            out = _ask_server(self.serve_url, state, record or {}, simulations, probe_from)
        else:
            out = self._solver.evaluate(champ.net, [state], simulations, probe_from)[0]
        return out | {"champion": champ.to_json()}


def _game_of(tracking: Tracking, version: Any) -> Game:
    """The game a registered version plays, from its league's parameters (game, rows, cols,
    connect: `LeagueConfig.board`); Connect Four for a version without them."""
    params = tracking.client().get_run(version.run_id).data.params if version.run_id else {}
    name = params.get("game", ConnectFour.name)
    try:
        return load(name, **{k: int(params[k]) for k in load(name).params if k in params})
    except ValueError:
        return ConnectFour()


def _server_only_info(url: str, uri: str) -> ChampionInfo:
    return ChampionInfo(
        name=uri,
        model=MODEL_NAME,
        version="?",
        member=None,
        league=None,
        generation=None,
        elo=None,
        win_vs_tactical=None,
        suite_keeps_result=None,
        suite_counted=None,
        nash_conv=None,
        promoted_at=None,
        source=url,
        uri=uri,
    )


def _missing_sqlite(uri: str) -> bool:
    return uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file()


def _one_line(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e) or type(e).__name__
    return text.strip().splitlines()[0][:300]


def _ask_server(
    url: str, state: State, record: Mapping[str, Any], simulations: int, probe_from: int = 0
) -> dict[str, Any]:
    """One move from ``mlflow models serve`` (`c4core.serving` behind ``/invocations``), sent
    the position as the request gave it (`record`: its ``moves`` or ``board``)."""
    import requests

    params = {"simulations": simulations} | ({"probe_from": probe_from} if probe_from else {})
    position = {k: record[k] for k in ("moves", "board") if record.get(k) is not None}
    body = {"dataframe_records": [position], "params": params}
    try:
        r = requests.post(f"{url}/invocations", json=body, timeout=30)
    except requests.RequestException as e:
        raise NoChampion(f"the model server at {url} is not reachable ({type(e).__name__})") from None
    try:
        payload = r.json()
    except ValueError:
        payload = None
    if r.status_code == 400 and isinstance(payload, dict) and "message" in payload:
        raise BadInput(str(payload["message"]).splitlines()[0])
    if r.status_code != 200 or not isinstance(payload, dict):
        raise Upstream(f"the model server at {url} answered HTTP {r.status_code}")
    game = game_of(state)
    try:
        (pred,) = payload["predictions"]
        # `action` since the game interface; versions registered before it answer `column` alone
        action = int(pred["action"] if "action" in pred else pred["column"])
        probs = [float(p) for p in pred["probs"]]
        value = float(pred["value"])
    except (KeyError, TypeError, ValueError):
        raise Upstream(f"the model server at {url} answered in an unknown format") from None
    if action not in state.legal_actions() or len(probs) != game.num_actions:
        raise Upstream(f"the model server at {url} answered an illegal move (action {action})")
    out = {"action": action, "move": game.format_action(action)}
    if isinstance(game, ConnectFour):
        out["column"] = action
    return out | {"probs": probs, "value": value}


# ---- the request -----------------------------------------------------------------------------------
_EXAMPLE = '{"moves": "4453"}'


class MoveRequest(BaseModel):
    """The body of ``POST /api/move``: a position, in one of two forms, and how hard to think.

    The model checks the body's shape only. The position (a legal move string, a reachable board,
    a game still on) and `probe_from` against the board's size are checked where `c4core` checks
    them for the model server too (`parse_record`, `probe_of`), in `parse_move_request`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    moves: StrictStr | None = None
    """The game's move notation (`Game.state_from_moves`): for Connect Four one column digit per
    move (``"4453"``), for Dots and Boxes lines (``"h0,0 v1,2"``); or give `board`."""
    board: Any = None
    """Connect Four's rows top to bottom of 0 (empty), 1 and 2; `Position.from_board` checks its
    shape and stones."""
    simulations: Annotated[int, Field(strict=True, ge=0, le=MAX_SIMULATIONS)] = 0
    """Search simulations; 0 (or null) answers with the raw network."""
    probe_from: StrictInt = 0
    """Search leaves of this many stones or more go to the exact solver; 0 (or null) never.
    Its bounds depend on the board, so `probe_of` checks them."""

    @field_validator("simulations", "probe_from", mode="before")
    @classmethod
    def _null_is_zero(cls, value: Any) -> Any:
        return 0 if value is None else value

    @field_validator("board")
    @classmethod
    def _board_not_nan(cls, value: Any) -> Any:
        # parse_record reads NaN as no board at all (pandas' missing cell); in JSON it is a bad board
        if isinstance(value, float) and math.isnan(value):
            raise ValueError("'board' must be a list of rows, got NaN")
        return value


def parse_move_request(body: bytes, game: Game = ConnectFour()) -> tuple[State, int, int, dict[str, Any]]:
    """The live position of `game`, simulation count and solver-probe stone count (0 none) a
    ``POST /api/move`` body asks for, and the body as a record. A body of the wrong shape raises
    pydantic's `ValidationError`, a bad position `BadInput`; `bad_request_detail` words either in
    one line."""
    if len(body) > MAX_BODY:
        raise BadInput(f"request body too large ({len(body)} bytes; at most {MAX_BODY})")
    request = MoveRequest.model_validate_json(body)
    record = request.model_dump()
    state = parse_record(record, game)
    return state, request.simulations, probe_of(record, request.simulations, game), record


def bad_request_detail(e: Exception) -> str:
    """The one-line ``detail`` of the 400 answering a refused body (`ValidationError`,
    `RequestValidationError` or `BadInput`): the first problem found."""
    if isinstance(e, (ValidationError, RequestValidationError)):
        return _error_text(e.errors()[0])
    return str(e)


def _error_text(error: Mapping[str, Any]) -> str:
    # FastAPI's own errors start their location with where the value was (body, query, ...)
    loc = [str(x) for x in error["loc"] if x not in ("body", "query", "path", "header", "cookie")]
    name, kind, got = ".".join(loc), error["type"], error.get("input")
    fields = MoveRequest.model_fields
    if kind == "json_invalid":
        why = (error.get("ctx") or {}).get("error", "not JSON")
        return f"request body must be JSON ({why}), e.g. {_EXAMPLE}"
    if not name and kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"request body must be a JSON object, e.g. {_EXAMPLE}"
    if kind == "value_error":  # raised by a validator of ours, already in words
        return str((error.get("ctx") or {}).get("error", error["msg"]))
    if kind == "extra_forbidden":
        return f"unknown field {name!r}: use {', '.join(fields)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{name!r} must be a whole number, got {got!r}"
    if kind == "string_type":
        return f"{name!r} must be a string, got {type(got).__name__}"
    if kind in ("greater_than_equal", "less_than_equal") and name in fields:
        low, high = _bounds(name)
        return f"{name!r} must be between {low} and {high}, got {got}"
    return f"{name or 'request body'}: {str(error['msg']).splitlines()[0]}"


def _bounds(name: str) -> tuple[Any, Any]:
    """The ``ge``/``le`` bounds a `MoveRequest` field declares."""
    meta = MoveRequest.model_fields[name].metadata
    low = next((m.ge for m in meta if isinstance(m, Ge)), None)
    high = next((m.le for m in meta if isinstance(m, Le)), None)
    return low, high


# ---- the app ---------------------------------------------------------------------------------------
def create_app(source: ChampionSource, start: bool = True) -> FastAPI:
    """The FastAPI app around `source`; `start` runs its refresh thread for the app's lifetime."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if start:
            source.start()
        try:
            yield
        finally:
            if start:
                source.stop()

    app = FastAPI(title="Connect Four: play the champion", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.source = source

    async def bad_request(request: Request, e: Exception) -> JSONResponse:
        """Every refused body, whichever check refused it: 400 with a one-line ``detail``."""
        return JSONResponse({"detail": bad_request_detail(e)}, status_code=400)

    for refused in (RequestValidationError, ValidationError, BadInput):
        app.add_exception_handler(refused, bad_request)

    @app.exception_handler(NoChampion)
    async def no_champion(request: Request, e: NoChampion) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, status_code=503)

    @app.exception_handler(Upstream)
    async def upstream(request: Request, e: Upstream) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, status_code=502)

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Any]) -> Any:
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/health")
    def health() -> dict[str, Any]:
        champ = source.current()
        return {"ok": True, "champion": champ.info.name if champ else None, "error": source.last_error}

    @app.get("/api/champion")
    def champion() -> dict[str, Any]:
        info = source.require().to_json()
        return info | {"refresh_s": source.refresh_s, "checked_at": _iso(source.checked_at)}

    @app.post("/api/move")
    async def move(request: Request) -> dict[str, Any]:
        start_t = time.perf_counter()
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            raise BadInput(f"request body too large ({declared} bytes; at most {MAX_BODY})")
        state, sims, probe, record = parse_move_request(await request.body(), source.game)
        # the network or search runs on a worker thread, so a long search never blocks the loop
        out = await run_in_threadpool(source.answer, state, sims, probe, record)
        ms = round((time.perf_counter() - start_t) * 1000, 2)
        return out | {"simulations": sims, "probe_from": probe, "ms": ms}

    return app


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


# ---- the terminal's default opponent ---------------------------------------------------------------
def default_opponent(tracking_uri: str, uri: str = CHAMPION_URI) -> tuple[str, str | None]:
    """The player spec ``c4 play`` uses without ``--opponent``: the registry's champion when one
    exists, else ``tactical``, with a one-line note saying why. Changes no process settings."""
    if _missing_sqlite(tracking_uri):
        return "tactical", f"no registry at {tracking_uri} yet, so you play tactical (make league trains one)"
    try:
        if tracking_uri.startswith(("http://", "https://")):
            _probe_server(tracking_uri)
        resolve_version(Tracking.for_uri(tracking_uri).client(), uri)
        return uri, None
    except Exception as e:  # no champion, no such model, no server: all mean "play tactical"
        return "tactical", f"no champion at {uri} ({_one_line(e)}), so you play tactical"


def _probe_server(tracking_uri: str, timeout_s: float = 5.0) -> None:
    """One request to a tracking server, no retries; `MlflowException` when nothing answers.

    The client's own calls retry a refused connection for minutes (``MLFLOW_HTTP_REQUEST_*``
    settings are process-wide), and a server that is down must not hang the terminal. Any HTTP
    answer counts: the client's next call says what is wrong with it.
    """
    # MLflow's request helper, so that the tracking URI's credentials and TLS settings apply
    from mlflow.tracking._tracking_service.utils import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    http_request(
        get_default_host_creds(tracking_uri),
        "/health",
        "GET",
        max_retries=0,
        timeout=timeout_s,
        raise_on_status=False,
    )
