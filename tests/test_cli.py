"""The ``c4`` command line (`c4core.cli`): match, elo, play and league.

Most checks call `main` in-process and read the output with capsys; a few run the installed
``c4`` script in a real subprocess, where a traceback or a stray line on stderr would really
reach a terminal. User errors must exit with status 2 and a one-line message, never a
traceback; `play` is driven by a scripted stdin.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from c4core.cli import build_parser, cmd_play, main
from c4core.config import NetConfig
from c4core.evaluation.match import WDL, MatchResult, play_match
from c4core.games import ConnectFour
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.rules import Geometry
from c4core.games.players import RandomBot
from c4core.learners.net import Checkpoint, PolicyValueNet

C4 = Path(sys.executable).with_name("c4")
SEED = 31
RESULTS = ("You win!", "random wins.", "Draw.")
# every column in turn, over and over: whichever are full get "try again", a legal one follows
CYCLE = "".join(f"{c}\n" for c in "1234567" * 40)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`main(argv)` in-process: exit status (argparse exits count), stdout, stderr."""
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse rejects bad flags by exiting
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def c4(*argv: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The installed ``c4`` script in a subprocess."""
    if not C4.exists():
        pytest.skip(f"no c4 script next to {sys.executable}")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [str(C4), *argv], input=stdin, capture_output=True, text=True, timeout=timeout, env=env
    )


def assert_one_line_error(rc: int, out: str, err: str, command: str, *words: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"c4 {command}: error: ")
    for w in words:
        assert w in lines[0]


def assert_argparse_error(rc: int, out: str, err: str, command: str, *words: str) -> None:
    """argparse prints its usage, then the one-line error."""
    assert rc == 2 and "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("usage: c4")
    assert lines[-1].startswith(f"c4 {command}: error: ")
    for w in words:
        assert w in lines[-1]


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    """A JSONL file of three match records: tactical, random and a made-up gen1."""
    records = [
        play_match(TacticalBot(), RandomBot(), 200, seed=SEED).to_record(),
        MatchResult("gen1", "random", 0, 4, WDL(30, 2, 18), WDL(25, 3, 22)).to_record(),
        MatchResult("gen1", "tactical", 0, 4, WDL(5, 1, 44), WDL(2, 0, 48)).to_record(),
    ]
    path = tmp_path / "matches.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")  # a blank line is fine
    return path


# ---- match -------------------------------------------------------------------------------------
def test_match_json(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    rc, out, err = run(capsys, "match", "tactical", "random", "--games", "200", "--json", "--seed", "3")
    elapsed = time.perf_counter() - start
    assert rc == 0 and err == ""
    rec = json.loads(out)
    assert (rec["a"], rec["b"], rec["games"], rec["seed"], rec["opening_plies"]) == (
        "tactical",
        "random",
        200,
        3,
        4,
    )
    assert rec["win"] + rec["draw"] + rec["loss"] == 200
    assert rec["win"] > rec["loss"]
    assert sum(rec["a_first"].values()) == sum(rec["b_first"].values()) == 100
    assert 0 <= rec["seconds"] <= elapsed  # the match's own time, within the command's
    # same flags, same games (seconds aside)
    rc, again, _ = run(capsys, "match", "tactical", "random", "--games", "200", "--json", "--seed", "3")
    assert {**json.loads(again), "seconds": 0} == {**rec, "seconds": 0}


def test_match_text(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "match", "random", "tactical", "--games", "20", "--opening-plies", "0")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("random vs tactical: 20 games in ")
    assert "random:" in lines[1] and "wins" in lines[1] and "score" in lines[1]
    assert "random first" in out and "tactical first" in out


def test_match_with_a_checkpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    # one torch thread unless asked: a searched network's small forwards slow down on more
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    torch.manual_seed(SEED)
    path = tmp_path / "tiny.pt"
    Checkpoint.of(PolicyValueNet(NetConfig(blocks=1, channels=8, value_hidden=8))).save(path)
    rc, out, _ = run(capsys, "match", str(path), "random", "--games", "10", "--json")
    assert rc == 0 and threads == [1]
    assert json.loads(out)["a"] == "tiny" and json.loads(out)["games"] == 10
    rc, out, _ = run(capsys, "match", f"{path}+mcts4", "random", "--games", "2", "--threads", "2", "--json")
    assert rc == 0 and threads == [1, 2]
    assert json.loads(out)["a"] == "tiny+mcts4"


def test_match_subprocess_json() -> None:
    proc = c4("match", "tactical", "random", "--games", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rec = json.loads(proc.stdout)
    for key in ("win", "draw", "loss", "games", "seconds"):
        assert key in rec
    assert rec["games"] == 200 == rec["win"] + rec["draw"] + rec["loss"]


# ---- elo ---------------------------------------------------------------------------------------
def test_elo_text(capsys: pytest.CaptureFixture[str], results_file: Path) -> None:
    rc, out, err = run(capsys, "elo", str(results_file))
    assert rc == 0 and err == ""
    assert out.splitlines()[0].split()[:3] == ["rank", "player", "Elo"]
    for name in ("tactical", "random", "gen1"):
        assert name in out
    assert "random" in out.splitlines()[-1]  # the anchor note
    body = [ln.split() for ln in out.splitlines()[2:5]]
    assert [row[1] for row in body] == ["tactical", "gen1", "random"]


def test_elo_json(capsys: pytest.CaptureFixture[str], results_file: Path) -> None:
    rc, out, _ = run(capsys, "elo", str(results_file), "--json")
    assert rc == 0
    fit = json.loads(out)
    assert set(fit) == {"ratings", "ci95"}
    assert set(fit["ratings"]) == set(fit["ci95"]) == {"tactical", "random", "gen1"}
    assert fit["ratings"]["random"] == 0.0 and fit["ci95"]["random"] == [0.0, 0.0]
    assert fit["ratings"]["tactical"] > fit["ratings"]["gen1"] > 0
    for name, (lo, hi) in fit["ci95"].items():
        assert lo <= fit["ratings"][name] <= hi
    rc, out, _ = run(capsys, "elo", str(results_file), "--json", "--anchor", "tactical")
    assert json.loads(out)["ratings"]["tactical"] == 0.0


def test_elo_from_stdin(capsys, results_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(results_file.read_text()))
    rc, out, _ = run(capsys, "elo", "-", "--json")
    assert rc == 0 and json.loads(out)["ratings"]["random"] == 0.0


@pytest.mark.parametrize(
    "content, words",
    [
        ("", ["holds no match records"]),
        ("\n\n  \n", ["holds no match records"]),
        ('{"a": "x", "b": "random", "win": 1,\n', ["line 1", "not JSON"]),
        ('{"a": "x", "b": "random", "win": 1, "draw": 0, "loss": 1}\nnot json\n', ["line 2", "not JSON"]),
        ("[1, 2, 3]\n", ["line 1", "expected an object"]),
        ('{"a": "x", "b": "random", "win": 1, "draw": 0}\n', ["loss"]),
        ('{"a": "x", "win": 1, "draw": 0, "loss": 2}\n', []),
        ('{"a": "x", "b": "random", "win": -1, "draw": 0, "loss": 2}\n', []),
    ],
)
def test_elo_bad_files(capsys, tmp_path: Path, content: str, words: list[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert_one_line_error(*run(capsys, "elo", str(path)), "elo", *words)


def test_elo_missing_file(capsys, tmp_path: Path) -> None:
    assert_one_line_error(*run(capsys, "elo", str(tmp_path / "nope.jsonl")), "elo", "no such file")
    assert_one_line_error(*run(capsys, "elo", str(tmp_path)), "elo", "no such file")  # a directory


# ---- bad input ---------------------------------------------------------------------------------
def test_unknown_player(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "match", "tactical", "nobody")
    assert_one_line_error(rc, out, err, "match", "unknown player 'nobody'", "random", "tactical", ".pt")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["match", "random", "random", "--games", "3"], ["--games", "even"]),
        (["match", "random", "random", "--games", "0"], ["--games"]),
        (["match", "random", "random", "--games", "ten"], ["--games", "whole number"]),
        (["match", "random", "random", "--seed", "-1"], ["--seed", "0 or more"]),
        (["match", "random", "random", "--opening-plies", "-2"], ["--opening-plies"]),
        (["match", "random"], ["b"]),
        (["league", "--games", "5"], ["--games"]),
        (["league", "--generations", "0"], ["--generations"]),
        (["league", "--roles", ","], ["--roles"]),
        (["play", "--first", "nobody"], ["--first"]),
        (["play", "--seed", "-3"], ["--seed"]),
    ],
)
def test_bad_flags(capsys, argv: list[str], words: list[str]) -> None:
    assert_argparse_error(*run(capsys, *argv), argv[0], *words)


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys)
    assert rc == 2 and "Traceback" not in err and "usage: c4" in err


@pytest.mark.parametrize(
    "roles, words",
    [
        ("main-exploiter", ["roles must start with 'main'"]),
        ("main,coach", ["unknown role(s) coach", "main-exploiter", "league-exploiter"]),
    ],
)
def test_bad_roles_are_a_usage_error(capsys, tmp_path: Path, roles: str, words: list[str]) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--roles", roles)
    assert_one_line_error(rc, out, err, "league", *words)
    assert not list(tmp_path.iterdir())  # nothing was written


def test_bad_ranks_are_a_usage_error(capsys, tmp_path: Path) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--ranks", "32")
    assert_one_line_error(rc, out, err, "league", "ranks", "at least 2 of the 32 games, got 32")
    assert not list(tmp_path.iterdir())
    assert_argparse_error(*run(capsys, "league", "--ranks", "0"), "league", "--ranks")


def test_a_bad_precision_is_a_usage_error(capsys, tmp_path: Path) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--precision", "half")
    assert_one_line_error(rc, out, err, "league", "unknown net precision 'half'", "auto, float32, bfloat16")
    assert not list(tmp_path.iterdir())


def test_a_margin_value_target_for_a_game_without_margins_is_a_usage_error(capsys, tmp_path: Path) -> None:
    league = ("league", "--profile", "smoke", "--dir", str(tmp_path), "--value-target")
    rc, out, err = run(capsys, *league, "margin")
    assert_one_line_error(rc, out, err, "league", "Connect Four has no margin to learn")
    assert not list(tmp_path.iterdir())
    assert_argparse_error(*run(capsys, *league, "score"), "league", "--value-target")


def test_opening_plies_too_long_is_a_usage_error(capsys) -> None:
    rc, out, err = run(capsys, "match", "random", "random", "--opening-plies", "42")
    assert_one_line_error(rc, out, err, "match", "opening_plies")


def test_bad_checkpoint_files(capsys, tmp_path: Path) -> None:
    assert_one_line_error(
        *run(capsys, "match", "random", str(tmp_path / "gone.pt")), "match", "no checkpoint"
    )
    torch.save([1, 2], tmp_path / "list.pt")
    assert_one_line_error(
        *run(capsys, "match", str(tmp_path / "list.pt"), "random"), "match", "not a c4core checkpoint"
    )


class _Pickled:
    """Any pickled class instance: a weights_only load refuses it."""

    def __init__(self) -> None:
        self.x = 1


@pytest.mark.parametrize("payload", ["pickled_object", "text_file", "format_1_missing_keys"])
def test_refused_checkpoint_gives_one_line(capsys, tmp_path: Path, payload: str) -> None:
    path = tmp_path / "odd.pt"
    if payload == "text_file":
        path.write_text("not a checkpoint")
    else:
        torch.save(_Pickled() if payload == "pickled_object" else {"format": 1}, path)
    try:
        result = run(capsys, "match", str(path), "random")
    except Exception as e:  # the CLI must not let any exception out
        pytest.fail(f"c4 match raised {type(e).__name__}: {e}")
    assert_one_line_error(*result, "match", "odd.pt")
    assert "\x1b[" not in result[2]


def test_bad_input_in_a_real_process(tmp_path: Path) -> None:
    for argv, words in (
        (["match", "tactical", "nobody"], "unknown player"),
        (["elo", str(tmp_path / "missing.jsonl")], "no such file"),
    ):
        proc = c4(*argv)
        assert proc.returncode == 2 and proc.stdout == ""
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0]


# ---- play --------------------------------------------------------------------------------------
def play(stdin: str, *flags: str) -> tuple[int, str]:
    args = build_parser().parse_args(["play", "--opponent", "random", "--seed", str(SEED), *flags])
    out = io.StringIO()
    rc = cmd_play(args, stdin=io.StringIO(stdin), out=out)
    return rc, out.getvalue()


def test_play_draws_the_board_and_quits() -> None:
    rc, out = play("q\n")
    assert rc == 0
    assert out.startswith("You are X, random is O.")
    assert ". . . . . . ." in out and "1 2 3 4 5 6 7" in out
    assert "your move: " in out
    assert out.rstrip().endswith("bye")
    assert not any(r in out for r in RESULTS)


@pytest.mark.parametrize("bad", ["9", "x", "0", "", "4 5", "-1"])
def test_play_bad_column_asks_again(bad: str) -> None:
    rc, out = play(f"{bad}\nquit\n")
    assert rc == 0
    assert out.count("try again") == 1
    assert "expected a column number 1-7" in out
    assert out.count("your move: ") == 2  # asked again, then quit
    assert out.rstrip().endswith("bye")


def test_play_on_a_variants_board_takes_its_columns() -> None:
    rc, out = play("5\n2\nq\n", "--game", "connect3-4x4", "--moves", "11")
    assert rc == 0
    assert "Type a column 1-4" in out and ". . . ." in out and "1 2 3 4\n" in out
    assert "expected a column number 1-4" in out and out.count("try again") == 1


def test_match_on_a_variants_board(capsys, tmp_path: Path) -> None:
    flags = ("--games", "40", "--json", "--game", "connect3-4x4")
    rc, out, err = run(capsys, "match", "tactical", "random", *flags)
    assert rc == 0, err
    assert json.loads(out)["win"] > json.loads(out)["loss"]
    small = tmp_path / "small.pt"
    net = PolicyValueNet(NetConfig(blocks=1, channels=8), ConnectFour(Geometry(4, 4, 3)))
    Checkpoint.of(net).save(small)
    rc, out, err = run(capsys, "match", str(small), "random", "--games", "2")
    assert_one_line_error(rc, out, err, "match", "plays Connect-3 on 4x4, not Connect Four")
    board = ("--rows", "4", "--cols", "4", "--connect", "3")
    rc, out, err = run(capsys, "match", str(small), "random", "--games", "2", *board)
    assert rc == 0, err
    # another game's match: its bots play it, and Connect Four's refuse it
    rc, out, err = run(capsys, "match", "greedy", "random", "--game", "dots-and-boxes-3x3", "--json")
    assert rc == 0, err
    assert json.loads(out)["win"] > json.loads(out)["loss"]
    rc, out, err = run(capsys, "match", "tactical", "random", "--game", "dots-and-boxes-3x3")
    assert_one_line_error(rc, out, err, "match", "tactical plays connect4 only", "3x3 boxes")
    rc, out, err = run(capsys, "play", "--game", "dots-and-boxes-3x3")
    assert_one_line_error(rc, out, err, "play", "Connect Four boards only, not Dots and Boxes on 3x3 boxes")


def test_play_full_column_asks_again() -> None:
    rc, out = play("1\nQ\n", "--moves", "111111")
    assert rc == 0
    assert "column 1 is full; try again" in out
    assert out.rstrip().endswith("bye")


def test_play_end_of_input_quits() -> None:
    rc, out = play("4\n")
    assert rc == 0 and "random plays" in out and out.rstrip().endswith("bye")


def test_play_to_the_end() -> None:
    rc, out = play(CYCLE)
    assert rc == 0
    assert "bye" not in out
    last = out.rstrip().splitlines()[-1]
    assert last in RESULTS
    # the final board is drawn just above the result
    assert out.rstrip().splitlines()[-2] == "1 2 3 4 5 6 7"
    # the same seed and input replay the same game
    assert play(CYCLE) == (rc, out)


def test_play_bot_first() -> None:
    rc, out = play("q\n", "--first", "bot")
    assert out.startswith("You are O, random is X.")
    assert out.index("random plays") < out.index("your move: ")


def test_play_from_a_finished_position_announces_the_result() -> None:
    rc, out = play("", "--moves", "1212121")  # X wins up column 1; you are O, the side to move
    assert rc == 0 and out.rstrip().endswith("random wins.")
    assert "your move" not in out


def test_play_bad_flags_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run(capsys, "play", "--moves", "19"), "play", "bad move")
    assert_one_line_error(*run(capsys, "play", "--opponent", "nobody"), "play", "unknown player")
    assert_one_line_error(*run(capsys, "play", "--opponent", "perfect"), "play", "16 cells")


def test_play_in_a_real_process() -> None:
    proc = c4("play", "--opponent", "random", "--seed", "1", stdin="9\nx\n" + CYCLE)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr == ""
    out = proc.stdout
    assert "1 2 3 4 5 6 7" in out and ". . . ." in out
    assert out.count("try again") >= 2
    assert out.rstrip().splitlines()[-1] in RESULTS


def test_play_quit_in_a_real_process() -> None:
    proc = c4("play", "--opponent", "random", "--seed", "1", stdin="4\nq\n")
    assert proc.returncode == 0 and proc.stderr == ""
    assert "random plays" in proc.stdout and proc.stdout.rstrip().endswith("bye")


# ---- league ------------------------------------------------------------------------------------
def test_league_smoke(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    # one thread by default: the learners of a generation run in processes of their own
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    start = time.perf_counter()
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--name", "x")
    first_run = time.perf_counter() - start
    assert rc == 0, err
    assert threads == [1]
    root = tmp_path / "x"
    assert (root / "gen1.pt").is_file() and (root / "gen2.pt").is_file()
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["rank", "player", "Elo"]
    ladder_names = {ln.split()[1] for ln in lines[2:6]}
    assert ladder_names == {"random", "tactical", "gen1", "gen2"}
    champ = next(ln for ln in lines if ln.startswith("champion: "))
    name = champ.split()[1]
    assert name in ("gen1", "gen2")
    assert any(ln.startswith("champion vs tactical: ") for ln in lines)
    assert any(ln.startswith("checkpoint: ") and f"{name}.pt" in ln for ln in lines)
    assert "league 'x': profile smoke" in err and "net 1x8 in float32" in err
    assert "generation 1: champion" in err and "generation 2: champion" in err
    assert "Traceback" not in err

    # a rerun resumes the finished league at once and can report it as JSON
    rc, out, err = run(
        capsys,
        "league",
        "--profile",
        "smoke",
        "--dir",
        str(tmp_path),
        "--name",
        "x",
        "--json",
        "--threads",
        "3",
    )
    assert rc == 0, err
    assert threads[-1] == 3
    data = json.loads(out)
    assert data["champion"] == name
    assert set(data["ratings"]) == {"random", "tactical", "gen1", "gen2"}
    assert data["ratings"]["random"] == 0.0
    assert 0 < data["seconds"] < first_run  # a resumed league trains and plays nothing
    assert set(data["ci95"]) == set(data["ratings"])


def test_recipe_fields_reach_the_league_and_bad_ones_are_usage_errors(capsys, tmp_path: Path) -> None:
    league = (
        "league",
        "--profile",
        "smoke",
        "--dir",
        str(tmp_path),
        "--generations",
        "1",
        "--match-games",
        "2",
    )
    rc, out, err = run(capsys, *league, "--set", "net.channels=4", "--set", "ppo.iterations=1")
    assert rc == 0, err
    assert "net 1x4 in float32" in err and "1 PPO generation(s) x 1 iterations" in err
    for flags, words in (
        (["--set", "net.channels"], ["--set expects PATH=VALUE, got 'net.channels'"]),
        (["--set", "net.width=4"], ["unknown recipe field 'net.width'", "NetConfig has blocks, channels"]),
        (["--set", "net.channels=four"], ["net.channels takes a whole number, got 'four'"]),
        (["--set", "name=y"], ["'name' is set by its own option"]),
    ):
        rc, out, err = run(capsys, *league, "--name", "bad", *flags)
        assert_one_line_error(rc, out, err, "league", *words)
    assert not (tmp_path / "bad").exists()


def test_league_bad_name(capsys, tmp_path: Path) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--name", "a b")
    assert_one_line_error(rc, out, err, "league", "league name")
    assert not (tmp_path / "a b").exists()


def test_a_store_that_fails_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"not a database, " * 1000)
    done = c4("league", "--profile", "smoke", "--no-suite", "--tracking-uri", f"sqlite:///{db}")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("c4 league: error: the tracking store failed: ") and "not a database" in last, last


def test_a_running_league_refuses_a_second_process_by_name(capsys, tmp_path: Path) -> None:
    from c4core.config import profile
    from c4core.tracking.store import MLflowStore, Tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    holder = MLflowStore(Tracking.for_uri(uri), profile("smoke", name="busy"), owner="c4 league elsewhere")
    busy = ("league", "--profile", "smoke", "--name", "busy", "--no-suite", "--tracking-uri", uri)
    capsys.readouterr()  # MLflow's lines as it made the store
    try:
        rc, out, err = run(capsys, *busy)
        assert_one_line_error(
            rc, out, err, "league", "league connect4/busy is held by c4 league elsewhere since"
        )
        rc, out, err = run(capsys, *busy, "--lease-wait", "1")
        assert_one_line_error(rc, out, err, "league", "held by c4 league elsewhere")
    finally:
        holder.release()
    rc, out, err = run(capsys, *busy, "--generations", "1", "--lease-ttl", "30")
    assert rc == 0, err


def test_league_unknown_profile(capsys, tmp_path: Path) -> None:
    rc, out, err = run(capsys, "league", "--profile", "huge", "--dir", str(tmp_path))
    assert_one_line_error(rc, out, err, "league", "unknown profile 'huge'")


def test_a_connect3_league_on_4x4_registers_into_a_model_of_its_own(capsys, tmp_path: Path) -> None:
    """``--game connect4 --rows 4 --cols 4 --connect 3`` is the named variant ``connect3-4x4``:
    its snapshots train on 4x4, and its versions and title stay out of ``connect4``."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    board = ("--rows", "4", "--cols", "4", "--connect", "3")
    rc, out, err = run(
        capsys, "league", "--profile", "smoke", "--name", "c3", "--game", "connect4", *board,
        "--generations", "1", "--tracking-uri", uri,
    )  # fmt: skip
    assert rc == 0, err
    assert "league 'c3': profile smoke, Connect-3 on 4x4," in err and "Traceback" not in err
    assert "registry: models:/connect3-4x4@champion-c3 = models:/connect3-4x4/1" in out
    client = MlflowClient(uri)
    assert [m.name for m in client.search_registered_models()] == ["connect3-4x4"]
    (version,) = client.search_model_versions("name = 'connect3-4x4'")
    assert "Connect-3 on 4x4 policy-value net" in version.description
    run_params = client.get_run(version.run_id).data.params
    assert (run_params["game"], run_params["rows"], run_params["cols"], run_params["connect"]) == (
        "connect4", "4", "4", "3",
    )  # fmt: skip
    from c4core.tracking.store import Tracking
    from c4core.tracking.uris import load_checkpoint

    ckpt, _ = load_checkpoint(Tracking.for_uri(uri), "models:/connect3-4x4@champion")
    assert (ckpt.geometry.rows, ckpt.geometry.cols, ckpt.geometry.connect) == (4, 4, 3)

    # the named variant is the same league: it resumes, training nothing
    rc, out, err = run(
        capsys, "league", "--profile", "smoke", "--name", "c3", "--game", "connect3-4x4",
        "--generations", "1", "--tracking-uri", uri, "--json",
    )  # fmt: skip
    assert rc == 0, err
    assert json.loads(out)["model_uri"] == "models:/connect3-4x4/1"


@pytest.mark.parametrize("method", ["q-learning", "sarsa"])
def test_a_tabular_league_registers_tables_each_with_its_nash_conv(
    capsys, tmp_path: Path, method: str
) -> None:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rc, out, err = run(
        capsys, "league", "--profile", "smoke", "--name", "tab", "--game", "connect3-4x4",
        "--learner", method, "--iterations", "2", "--games", "500", "--tracking-uri", uri,
    )  # fmt: skip
    assert rc == 0, err
    assert f"2 {method} generation(s) x 2 iterations x 500 self-play games" in err and "net 1x" not in err
    assert "Traceback" not in err and "was not logged" not in err  # the report drew a table's games too
    client = MlflowClient(uri)
    versions = sorted(client.search_model_versions("name = 'connect3-4x4'"), key=lambda v: int(v.version))
    assert len(versions) == 2
    for v in versions:
        assert "action-value table" in v.description and f"by {method}" in v.description
        exact = float(v.tags["nash_conv"])
        metrics = client.get_run(v.run_id).data.metrics
        assert metrics["nash_conv"] == pytest.approx(exact, abs=5e-5)
        assert 0.0 <= exact <= 2.0 and 0.0 <= metrics["nash_conv/sampling"] <= 2.0
        seats = metrics["nash_conv/best_response_first"], metrics["nash_conv/best_response_second"]
        assert exact == pytest.approx(sum(seats), abs=5e-5)
    league_run = client.get_run(versions[0].run_id).data.tags["mlflow.parentRunId"]
    history = client.get_metric_history(league_run, "league/nash_conv")
    assert [(m.step, m.value) for m in history] == [
        (int(v.tags["generation"]), pytest.approx(float(v.tags["nash_conv"]), abs=5e-5)) for v in versions
    ]
    from c4core.tracking.store import Tracking
    from c4core.tracking.uris import load_checkpoint

    ckpt, _ = load_checkpoint(Tracking.for_uri(uri), "models:/connect3-4x4@champion")
    assert ckpt.kind == "table"


def test_a_tabular_learner_on_a_large_board_is_a_usage_error(capsys, tmp_path: Path) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), "--learner", "sarsa")
    assert_one_line_error(rc, out, err, "league", "at most 16 moves, not Connect Four", "connect3-4x4")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "flags,words",
    [
        (["--game", "chess"], ["unknown game 'chess'", "connect3-4x4", "connect4"]),
        (["--game", "dots-and-boxes-3x3", "--connect", "3"], ["dots_and_boxes has no parameter connect"]),
        (["--cols", "12"], ["2-9 columns", "cols=12"]),
        (["--rows", "4", "--cols", "4", "--connect", "5"], ["connect=5 cannot fit on a 4x4 board"]),
    ],
)
def test_a_bad_game_or_board_is_a_usage_error(capsys, tmp_path: Path, flags: list[str], words) -> None:
    rc, out, err = run(capsys, "league", "--profile", "smoke", "--dir", str(tmp_path), *flags)
    assert_one_line_error(rc, out, err, "league", *words)
    assert list(tmp_path.iterdir()) == []


def test_a_suite_of_another_board_is_refused_before_training(capsys, tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text('{"moves": "577713147446", "ply": 12, "scores": [3, -1, 2, 3, 2, 2, 1]}\n')  # 6x7
    rc, out, err = run(
        capsys, "league", "--profile", "smoke", "--game", "connect3-4x4", "--suite", str(suite),
        "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
    )  # fmt: skip
    assert_one_line_error(rc, out, err, "league", f"{suite}:1", "expected a column digit 1-4")
    rc, out, err = run(
        capsys, "league", "--profile", "smoke", "--game", "dots-and-boxes-3x3", "--suite", str(suite),
        "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
    )  # fmt: skip
    assert_one_line_error(rc, out, err, "league", "makes its suite from the league's seed")
    assert not (tmp_path / "mlflow.db").exists()
