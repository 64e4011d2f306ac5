"""The ``c4`` command: league, match, elo, play, eval-suite and report; it only parses flags and calls
the library.

Errors a user can cause (a bad player spec, a malformed results file, an illegal move) print one
line on stderr and exit with status 2; no traceback ever reaches the terminal. Heavy imports
(torch, scipy) happen inside the commands that need them, so ``c4 match random random`` starts
in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from c4core.config import MAIN_LEARNERS, TABULAR_LEARNERS, TABULAR_MOVES, VALUE_TARGETS
from c4core.entry import (
    TRACKING_HELP,
    closing_summary,
    native_bfloat16,
    parse_fields,
    parse_tags,
    quiet_mlflow,
    registry_fetch,
    registry_line,
    tracking_uri,
)
from c4core.figures import elo
from c4core.tracking.lease import DEFAULT_TTL, process_owner

if TYPE_CHECKING:
    from c4core.games import Game
    from c4core.games.connect4.rules import Geometry


class UsageError(ValueError):
    """Bad input from the user: reported as one line, exit status 2."""


def _positive_even(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 2 or n % 2:
        raise argparse.ArgumentTypeError(f"must be an even number of at least 2 (both colours play), got {n}")
    return n


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {n}")
    return n


def _positive(text: str) -> int:
    n = _non_negative(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _roles(text: str) -> tuple[str, ...]:
    # which names are roles, and in what order, is the config's to check (LeagueConfig)
    roles = tuple(r.strip() for r in text.split(",") if r.strip())
    if not roles:
        raise argparse.ArgumentTypeError(f"name at least one role, got {text!r}")
    return roles


def _add_threads(parser: argparse.ArgumentParser) -> None:
    help_ = "torch CPU threads (default: %(default)s)"
    parser.add_argument("--threads", type=_positive, default=1, help=help_)


def _add_board(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--game",
        help="the game: connect4 (the default), dots_and_boxes, or a named variant such as "
        "connect3-4x4 (three in a row on 4x4) or dots-and-boxes-3x3; each variant registers into a "
        "model of its own name",
    )
    parser.add_argument(
        "--rows", type=_positive, help="board rows, of boxes in Dots and Boxes (default: the game's)"
    )
    parser.add_argument(
        "--cols", type=_positive, help="board columns, of boxes in Dots and Boxes (default: the game's)"
    )
    parser.add_argument(
        "--connect", type=_positive, help="Connect Four's stones in a row that win (default: the game's)"
    )


def _board(args: argparse.Namespace) -> dict[str, Any]:
    """The board flags given, as `c4core.config.league_config` takes them."""
    return {k: getattr(args, k) for k in ("game", "rows", "cols", "connect") if getattr(args, k) is not None}


def _game(args: argparse.Namespace) -> Game:
    """The game the board flags name (standard Connect Four by default)."""
    from c4core.games import load

    board = _board(args)
    return load(board.pop("game", "connect4"), **board)


def _geometry(args: argparse.Namespace) -> Geometry:
    """The Connect Four board the board flags name (the standard one by default)."""
    from c4core.games import ConnectFour

    game = _game(args)
    if not isinstance(game, ConnectFour):
        raise UsageError(f"c4 {args.command} plays Connect Four boards only, not {game.title}")
    return game.geometry


def _registry(args: argparse.Namespace) -> Any:
    return registry_fetch(tracking_uri(args.tracking_uri))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="c4", description="Connect Four self-play league.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lg = sub.add_parser("league", help="run a self-play league")
    lg.add_argument(
        "--profile", default=None, help="smoke, cpu, cpu-az or gpu (default: gpu with CUDA, else cpu)"
    )
    lg.add_argument("--name", default="default", help="league name (default: %(default)s)")
    _add_board(lg)
    lg.add_argument("--generations", type=_positive, help="override the profile's generations")
    lg.add_argument(
        "--iterations", type=_non_negative, help="override iterations per generation (either learner)"
    )
    lg.add_argument("--games", type=_positive_even, help="override games per iteration (either learner)")
    lg.add_argument("--match-games", type=_positive_even, help="override games per league pairing")
    lg.add_argument("--seed", type=_non_negative, help="league seed")
    lg.add_argument(
        "--roles",
        type=_roles,
        help="the league's learners, comma-separated: main first, then main-exploiter and/or "
        "league-exploiter (default: the profile's)",
    )
    lg.add_argument(
        "--learner",
        choices=MAIN_LEARNERS,
        help="the main agent's learner: ppo (the default; the profile's AlphaZero-style generations "
        "follow it), or q-learning or sarsa, a table of every position, for games of at most "
        f"{TABULAR_MOVES} moves (--game connect3-4x4)",
    )
    lg.add_argument(
        "--value-target",
        choices=VALUE_TARGETS,
        help="what the net's value head learns: outcome (win, draw or loss) or margin (the result "
        "graded by how much it was won by; Dots and Boxes' box difference) (default: the profile's)",
    )
    lg.add_argument(
        "--ranks",
        type=_positive,
        help="data-parallel processes per learner, one torch thread each (default: the profile's)",
    )
    lg.add_argument(
        "--precision",
        default="auto",
        help="what the net's convolutions compute in: float32, bfloat16 (fast on CPUs with AMX or "
        "AVX-512 BF16, emulated and slow elsewhere) or auto, the profile's unless this CPU would "
        "emulate its bfloat16 (default: %(default)s)",
    )
    lg.add_argument("--threads", type=_positive, help="torch CPU threads of this process (default: 1)")
    lg.add_argument(
        "--store",
        choices=("mlflow", "local"),
        help="mlflow (runs, registry, champion; the default) or local (a plain folder; implied by --dir)",
    )
    lg.add_argument("--dir", help="folder that holds local leagues (default: runs)")
    lg.add_argument("--tracking-uri", help=TRACKING_HELP)
    lg.add_argument(
        "--lease-ttl",
        type=_positive,
        default=int(DEFAULT_TTL),
        metavar="SECONDS",
        help="a league runs in one process at a time: this one holds its lease in MLflow, and another "
        "may take it over once this one has gone this long without a heartbeat, having died "
        "(default: %(default)s)",
    )
    lg.add_argument(
        "--lease-wait",
        type=_non_negative,
        default=0,
        metavar="SECONDS",
        help="when another process runs this league, wait this long for it to finish or expire "
        "(default: %(default)s, fail at once naming it)",
    )
    lg.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="tag every MLflow run (repeatable), e.g. airflow.dag_id=connect4",
    )
    lg.add_argument(
        "--set",
        action="append",
        default=[],
        dest="recipe",
        metavar="PATH=VALUE",
        help="replace a field of the recipe by its dotted path, VALUE in JSON or a plain word, after "
        "the profile and the options above (repeatable; a changed recipe is a league of its own), "
        "e.g. alphazero.solve_from=1 or alphazero.search.root=gumbel",
    )
    suite = lg.add_mutually_exclusive_group()
    suite.add_argument(
        "--suite",
        metavar="FILE",
        help="score every snapshot's raw network on this suite JSONL, logged to MLflow "
        "(default: ../shared/suite/dev.jsonl next to the repo, when it exists)",
    )
    suite.add_argument("--no-suite", action="store_true", help="do not score snapshots on a suite")
    lg.add_argument("--json", action="store_true", help="print the final ladder as JSON")

    m = sub.add_parser("match", help="play a match between two players")
    m.add_argument(
        "a",
        help="a bot of the game (random; tactical, lookahead; greedy, defensive, heuristic, mcts<N>; "
        "perfect), a checkpoint .pt, or models:/connect4@champion (+mcts<N> searches a network)",
    )
    m.add_argument("b", help="the other player")
    m.add_argument("--games", type=_positive_even, default=400, help="games, even (default: %(default)s)")
    m.add_argument("--seed", type=_non_negative, default=0)
    m.add_argument("--opening-plies", type=_non_negative, default=4, help="random opening plies (default: 4)")
    _add_threads(m)
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.add_argument("--tracking-uri", help=TRACKING_HELP)
    _add_board(m)

    e = sub.add_parser("elo", help="fit Elo ratings to match records (JSONL)")
    e.add_argument("results", help="JSONL file, one match a line: {a, b, win, draw, loss}; - for stdin")
    e.add_argument("--anchor", default="random", help="player pinned at 0 (default: %(default)s)")
    e.add_argument("--json", action="store_true", help='print {"ratings": ..., "ci95": ...}')

    pl = sub.add_parser("play", help="play a game in the terminal")
    pl.add_argument(
        "--opponent",
        help="player spec (default: the game's champion, models:/connect4@champion on the standard board, "
        "if one exists, else tactical)",
    )
    pl.add_argument("--first", choices=("you", "bot"), default="you", help="who moves first")
    pl.add_argument("--moves", default="", help="start from this move string (solver notation)")
    pl.add_argument("--seed", type=_non_negative, default=None)
    pl.add_argument("--tracking-uri", help=TRACKING_HELP)
    _add_board(pl)

    ev = sub.add_parser("eval-suite", help="score a player against solver-labelled positions")
    ev.add_argument(
        "--player",
        required=True,
        help="player spec, e.g. tactical, gen6.pt, gen6.pt+mcts256, gen6.pt+mcts256+probe16",
    )
    ev.add_argument("--suite", help="suite JSONL (default: ../shared/suite/dev.jsonl next to the repo)")
    ev.add_argument("--simulations", type=_positive, help="search a network player with N simulations a move")
    ev.add_argument("--seed", type=_non_negative, default=0, help="seed of a stochastic player's choices")
    _add_threads(ev)
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--tracking-uri", help=TRACKING_HELP)
    ev.add_argument(
        "--positions",
        type=_positive,
        default=1200,
        help="Dots and Boxes: positions of the suite made on the spot (default: %(default)s)",
    )
    _add_board(ev)

    rp = sub.add_parser("report", help="draw a league's report (HTML + PNGs) from MLflow or a folder")
    where = rp.add_mutually_exclusive_group(required=True)
    where.add_argument("--league", help="a league in MLflow, by name (its newest config)")
    where.add_argument("--dir", help="a local league folder, e.g. runs/NAME")
    rp.add_argument("--config-hash", help="with --league: the config to report (default: the newest)")
    rp.add_argument("--out", help="output folder (default: runs/<league>/report, or <dir>/report)")
    rp.add_argument("--seed", type=_non_negative, default=0, help="seed of the sample game's opponent")
    rp.add_argument("--tracking-uri", help=TRACKING_HELP)

    sa = sub.add_parser("serve-app", help="serve the play page: the champion in the browser")
    sa.add_argument("--host", default="127.0.0.1", help="bind address (default: %(default)s, this host only)")
    sa.add_argument("--port", type=_positive, default=8000, help="port (default: %(default)s)")
    sa.add_argument("--model", default="models:/connect4@champion", help="registry URI to follow")
    sa.add_argument("--refresh", type=float, default=30.0, help="seconds between registry checks (30)")
    sa.add_argument("--serve-url", help="take moves from `mlflow models serve`, e.g. http://127.0.0.1:5001")
    _add_threads(sa)
    sa.add_argument("--tracking-uri", help=TRACKING_HELP)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_mlflow()  # keep stderr to our own lines
    try:
        commands = {
            "league": cmd_league,
            "match": cmd_match,
            "elo": cmd_elo,
            "play": cmd_play,
            "eval-suite": cmd_eval_suite,
            "serve-app": cmd_serve_app,
            "report": cmd_report,
        }
        return commands[args.command](args)
    except (UsageError, ValueError) as e:
        print(f"c4 {args.command}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        if not type(e).__module__.startswith(("mlflow", "sqlalchemy")):
            raise
        # the tracking store failed (unreachable, locked, refused): one line, not a traceback
        message = str(getattr(e, "message", e)).strip().splitlines() or [type(e).__name__]
        print(f"c4 {args.command}: error: the tracking store failed: {message[0][:300]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


# ---- match ---------------------------------------------------------------------------------------
def cmd_match(args: argparse.Namespace) -> int:
    import torch

    from c4core.evaluation.match import play_match
    from c4core.players import make_player

    # a searched player runs thousands of small forwards, which extra threads slow down, and
    # matches often run side by side (docs/BENCHMARKS.md)
    torch.set_num_threads(args.threads)
    fetch, game = _registry(args), _game(args)
    a, b = make_player(args.a, game, registry=fetch), make_player(args.b, game, registry=fetch)
    result = play_match(a, b, args.games, seed=args.seed, opening_plies=args.opening_plies, game=game)
    rec = result.to_record()
    if args.json:
        print(json.dumps(rec))
    else:
        t = result.total
        print(
            f"{a.name} vs {b.name}: {args.games} games in {result.seconds:.2f}s "
            f"({args.games / max(result.seconds, 1e-9):,.0f} games/s)"
        )
        print(f"  {a.name}: {t.win} wins, {t.draw} draws, {t.loss} losses (score {t.score:.3f})")
        for label, w in ((f"{a.name} first", result.a_first), (f"{b.name} first", result.b_first)):
            print(f"  {label:>20}: W {w.win}  D {w.draw}  L {w.loss}")
    return 0


# ---- elo -----------------------------------------------------------------------------------------
def read_records(stream: TextIO, source: str) -> list[dict[str, Any]]:
    records = []
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"{source}, line {n}: not JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise UsageError(f'{source}, line {n}: expected an object like {{"a": ..., "b": ...}}')
        records.append(rec)
    if not records:
        raise UsageError(f"{source} holds no match records")
    return records


def cmd_elo(args: argparse.Namespace) -> int:
    from c4core.evaluation.elo import fit_elo, format_ladder

    if args.results == "-":
        records = read_records(sys.stdin, "stdin")
    else:
        path = Path(args.results)
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
        with path.open() as f:
            records = read_records(f, str(path))
    fit = fit_elo(records, anchor=args.anchor)
    print(json.dumps(fit.to_json()) if args.json else format_ladder(fit))
    return 0


# ---- eval-suite ----------------------------------------------------------------------------------
def cmd_eval_suite(args: argparse.Namespace) -> int:
    from c4core.games import DotsAndBoxes
    from c4core.games.connect4.suite import default_suite_path, evaluate_suite, load_suite

    game = _game(args)
    dots = isinstance(game, DotsAndBoxes)
    if dots:
        if args.suite is not None:
            raise UsageError(f"{game.title}'s suite is made on the spot (--positions), not read from --suite")
        from c4core.games.dots_and_boxes.suite import SeededSuite

        suite: Any = SeededSuite(game, args.seed, args.positions)
    else:
        path = args.suite or default_suite_path(game)
        if path is None:
            raise UsageError("no --suite given, and no ../shared/suite/dev.jsonl next to the repository")
        suite = load_suite(path, _geometry(args))  # before any network loads: a bad suite fails fast

    import torch

    from c4core.learners.search import SearchPlayer
    from c4core.players import make_player

    # search runs hundreds of small forwards: extra threads mostly spin, and on a shared CPU
    # two threads measured 6-18x slower than one (benchmarks/bench_search.py)
    torch.set_num_threads(args.threads)
    player = make_player(args.player, game, registry=_registry(args))
    if args.simulations is not None:
        if isinstance(player, SearchPlayer):
            raise UsageError(f"{args.player} already searches: give the simulations once")
        player = SearchPlayer.around(player, args.simulations)
    if dots:
        out = {"player": player.name, "game": game.variant, **suite.score(player)}
        print(json.dumps(out) if args.json else "\n".join(f"{k}: {v:.4g}" for k, v in out.items()))
        return 0
    report = evaluate_suite(player, suite, seed=args.seed)
    print(json.dumps(report.to_json()) if args.json else report.format())
    return 0


# ---- league --------------------------------------------------------------------------------------
def cmd_league(args: argparse.Namespace) -> int:
    import torch
    from tqdm import tqdm

    from c4core.config import league_config
    from c4core.league.generation import run_league
    from c4core.league.store import LocalStore

    name = args.profile or ("gpu" if torch.cuda.is_available() else "cpu")
    config = league_config(
        name,
        args.name,
        generations=args.generations,
        iterations=args.iterations,
        games=args.games,
        match_games=args.match_games,
        seed=args.seed,
        roles=args.roles,
        learner=args.learner,
        value_target=args.value_target,
        ranks=args.ranks,
        precision=args.precision,
        native_bfloat16=native_bfloat16(),
        recipe=parse_fields(args.recipe),
        **_board(args),
    )
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"profile {name!r} needs a CUDA device; use --profile cpu here")
    # one thread by default: the learners of a generation train in processes of their own, and
    # small forwards scale badly across threads (docs/BENCHMARKS.md)
    torch.set_num_threads(args.threads or 1)
    tags = parse_tags(args.tag)
    if args.store is None:
        args.store = "local" if args.dir is not None else "mlflow"
    if args.suite is not None and args.store != "mlflow":
        raise UsageError("--suite scores snapshots into MLflow: it needs --store mlflow")
    suite = None
    if args.store == "mlflow" and not args.no_suite:
        from c4core.games.connect4.suite import default_suite_path

        board = config.board
        suite = args.suite or default_suite_path(board)
        suite_of = getattr(board, "suite", None)
        if suite is not None and suite_of is None:
            raise UsageError(f"--suite: {board.title} has no suite")
        if suite is not None:
            # a bad suite, one of another board, or one for a game that reads none fails now,
            # naming file:line, not after a generation
            suite_of(suite, config.seed)
    if args.store == "mlflow":
        from c4core.tracking.runs import run_league_tracked
        from c4core.tracking.store import MLflowStore, Tracking

        tracking = Tracking.for_uri(tracking_uri(args.tracking_uri))
        store: Any = MLflowStore(
            tracking, config, tags, process_owner("c4 league"), args.lease_ttl, args.lease_wait
        )
        where = f"MLflow {tracking.tracking_uri}, experiment {tracking.experiment}"
    else:
        store = LocalStore(Path(args.dir or "runs") / config.name)
        where = str(store.root)
    net = f"net {config.net.blocks}x{config.net.channels} in {config.net.precision}, "
    print(
        f"league {config.name!r}: profile {config.profile}, {config.board.title}, "
        f"{config.describe_training()}, {'' if config.main_learner in TABULAR_LEARNERS else net}"
        f"{config.match_games} games per pairing, store {where}"
        + (f", suite {suite}" if suite is not None else ""),
        file=sys.stderr,
    )
    start = time.perf_counter()
    done_by = [0]  # iterations up to the end of each generation, every role's
    for g in range(1, config.generations + 1):
        done_by.append(done_by[-1] + sum(config.iterations(g, role) for role in config.roles_at(g)))
    total = done_by[-1]
    with tqdm(total=total, unit="it", desc="training", file=sys.stderr, disable=None) as bar:

        def on_iteration(member: str, i: int, m: dict[str, float]) -> None:
            bar.set_description(member)
            if "vs/tactical/win" in m:  # PPO plays the bot; AlphaZero only itself
                bar.set_postfix(vs_tactical=f"{m['vs/tactical/win']:.2f}", refresh=False)
            else:
                bar.set_postfix(policy_loss=f"{m.get('losses/policy', 0):.3f}", refresh=False)
            bar.update(1)

        def on_generation(r: Any) -> None:
            bar.n = done_by[r.generation]  # resumed generations jump ahead
            bar.refresh()
            champ = r.fit.ratings[r.champion]
            tqdm.write(
                f"generation {r.generation}: champion {r.champion} ({elo(champ)} Elo), {r.seconds:.0f}s",
                file=sys.stderr,
            )

        if args.store == "mlflow":
            try:
                tracked = run_league_tracked(store, config, on_generation, on_iteration, suite)
            finally:  # a killed process keeps it until it expires
                store.release()
            report, version = tracked.report, tracked.champion_version
        else:
            report, version = run_league(store, config, on_generation, on_iteration), None
    elapsed = time.perf_counter() - start
    if args.json:
        out = report.fit.to_json() | {"champion": report.champion, "seconds": elapsed}
        if version is not None:
            out["model_uri"] = f"models:/{version.name}/{version.version}"
        print(json.dumps(out))
        return 0
    if args.store == "mlflow":
        where = registry_line(store, report.champion)
    else:
        where = f"checkpoint: {store.root / (report.champion + '.pt')}"
    summary = closing_summary(report.fit, report.champion, store.results(), where, config.bots[-1])
    print(f"{summary}  ({elapsed:.0f}s)")
    return 0


# ---- report --------------------------------------------------------------------------------------
def cmd_report(args: argparse.Namespace) -> int:
    from c4core.report import build_report

    if args.dir is not None:
        folder = Path(args.dir)
        if not folder.is_dir():
            raise UsageError(f"no league folder at {folder}")
        source: Any = folder
        out = Path(args.out) if args.out else folder / "report"
    else:
        from c4core.tracking.reports import open_league, read_league
        from c4core.tracking.store import Tracking

        store = open_league(Tracking.for_uri(tracking_uri(args.tracking_uri)), args.league, args.config_hash)
        source = read_league(store)
        out = Path(args.out) if args.out else Path("runs") / args.league / "report"
    files = build_report(source, out, seed=args.seed)
    rep = files.report
    lo, hi = rep.fit.ci95[rep.champion]
    print(f"champion {rep.champion}: {elo(rep.fit.ratings[rep.champion])} Elo (95% CI {elo(lo)}..{elo(hi)})")
    for path in files.paths():
        print(path)
    return 0


# ---- play ----------------------------------------------------------------------------------------
def cmd_play(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    import torch

    from c4core.games import ConnectFour
    from c4core.games.connect4.rules import Position, parse_column
    from c4core.players import make_player

    stdin = stdin or sys.stdin
    out = out or sys.stdout
    geometry = _geometry(args)
    pos = Position.from_moves(args.moves, geometry)  # a bad --moves fails before any network loads
    spec = args.opponent
    if spec is None:
        from c4core.app import default_opponent

        uri = f"models:/{ConnectFour(geometry).variant}@champion"
        spec, note = default_opponent(tracking_uri(args.tracking_uri), uri)
        if note:
            print(f"note: {note}.", file=out)
    bot = make_player(spec, ConnectFour(geometry), registry=_registry(args))
    gen = torch.Generator().manual_seed(args.seed if args.seed is not None else int(time.time()))
    human = pos.to_move if args.first == "you" else 3 - pos.to_move
    mark = {1: "X", 2: "O"}
    print(
        f"You are {mark[human]}, {bot.name} is {mark[3 - human]}. "
        f"Type a column 1-{geometry.cols}, q to quit.",
        file=out,
    )
    while not pos.is_terminal:
        if pos.to_move == human:
            print(f"\n{pos}", file=out)
            print("your move: ", end="", file=out, flush=True)
            line = stdin.readline()
            if not line or line.strip().lower() in ("q", "quit"):
                print("\nbye", file=out)
                return 0
            try:
                col = parse_column(line, pos.geometry)
                pos = pos.play(col)
            except ValueError as e:
                print(f"  {e}; try again", file=out)
                continue
        else:
            col = bot.act_position(pos, gen)
            print(f"{bot.name} plays {col + 1}", file=out)
            pos = pos.play(col)
    print(f"\n{pos}", file=out)
    if pos.won:
        winner = 3 - pos.to_move
        print("You win!" if winner == human else f"{bot.name} wins.", file=out)
    else:
        print("Draw.", file=out)
    return 0


# ---- serve-app -----------------------------------------------------------------------------------
def cmd_serve_app(args: argparse.Namespace) -> int:
    import torch
    import uvicorn

    from c4core.app import ChampionSource, create_app
    from c4core.tracking.store import Tracking

    if not args.refresh > 0:
        raise UsageError(f"--refresh must be a positive number of seconds, got {args.refresh}")
    torch.set_num_threads(args.threads)  # one position at a time: more threads only add latency
    source = ChampionSource(
        Tracking.for_uri(tracking_uri(args.tracking_uri)), args.model, args.refresh, args.serve_url
    )
    source.refresh()
    champ = source.current()
    who = champ.info.name if champ else f"none yet ({source.last_error}); checking every {args.refresh:g}s"
    print(f"play page on http://{args.host}:{args.port}/  champion: {who}", file=sys.stderr)
    uvicorn.run(create_app(source), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
