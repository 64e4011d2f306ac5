"""Scoring players against solver-labelled positions (`c4core.games.connect4.suite`, ``c4 eval-suite``).

The mini suite below is thirteen lines of the dev suite (exact labels), picked to cover every
bucket, counted and uncounted positions, and won, drawn and lost best moves; the expected
scores of the scripted test players are worked out by hand next to each line. On 4x4 connect-3
a suite is labelled by the exact solver in the test itself. On the shared dev suite, when it is
there, the scripted bots land on the expectations its README states.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from c4core.cli import main
from c4core.config import NetConfig
from c4core.games.connect4.batch import Boards
from c4core.games.connect4.bots import TacticalBot
from c4core.games.connect4.rules import Geometry
from c4core.games.connect4.solver import Solver
from c4core.games.connect4.suite import (
    OTHER,
    FileSuite,
    SuitePosition,
    default_suite_path,
    evaluate_suite,
    load_suite,
    parse_suite,
)
from c4core.games.players import Player, RandomBot
from c4core.learners.net import Checkpoint, PolicyValueNet

SEED = 99
TINY = NetConfig(blocks=1, channels=8, value_hidden=8)
SMALL = Geometry(4, 4, 3)
C4 = Path(sys.executable).with_name("c4")

# "first" = leftmost legal column, "last" = rightmost; K = keeps the result, B = best move
MINI = [
    # counted, 11-20: first 3 (K B), last 1 (K, a slower win)
    {"moves": "577713147446", "ply": 12, "scores": [3, -1, 2, 3, 2, 2, 1]},
    # all lose: not counted
    {"moves": "1365254712142162465645726765", "ply": 28, "scores": [-7, -7, -7, -7, -7, None, -7]},
    # all win: not counted
    {"moves": "23423617453765475216112226344664", "ply": 32, "scores": [5, None, 5, None, 5, None, 4]},
    # counted, 21-36: first 6 (K B), last -5
    {"moves": "2322317317416563243132464251777", "ply": 31, "scores": [6, None, None, -5, -5, -5, -5]},
    # all lose: not counted
    {"moves": "221724135", "ply": 9, "scores": [-4, -2, -3, -4, -2, -2, -4]},
    # counted, 4-10: first 3 (K B), last -3
    {"moves": "61161377", "ply": 8, "scores": [3, 1, -4, 3, -9, -4, -3]},
    # all win: not counted
    {"moves": "732443576653222", "ply": 15, "scores": [10, 8, 14, 13, 13, 9, 9]},
    # counted, 11-20, the best move draws: first -3, last -2
    {"moves": "664617744571", "ply": 12, "scores": [-3, -2, -2, -3, -13, 0, -2]},
    # all draw: not counted
    {
        "moves": "126743624634541315365322276254416355",
        "ply": 36,
        "scores": [0, None, None, None, None, None, 0],
    },
    # counted, 4-10, the best move draws: first -6, last -11
    {"moves": "577312144", "ply": 9, "scores": [-6, -4, -5, 0, -12, -11, -11]},
    # all win: not counted
    {"moves": "3256212766", "ply": 10, "scores": [3, 3, 4, 3, 3, 4, 3]},
    # all lose: not counted
    {"moves": "35113377213", "ply": 11, "scores": [-15, -15, -15, -3, -15, -15, -15]},
    # counted, 21-36: first (column 2) 0 (K B), last -3
    {
        "moves": "163246261471734445624356165511553337",
        "ply": 36,
        "scores": [None, 0, None, None, None, None, -3],
    },
]


@pytest.fixture
def mini_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in MINI))
    return path


class EdgePlayer(Player):
    """Always the leftmost (or rightmost) legal column."""

    def __init__(self, last: bool = False):
        self.last = last
        self.name = "last" if last else "first"

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        legal = boards.legal().long()
        return (legal.shape[1] - 1 - legal.flip(1).argmax(1)) if self.last else legal.argmax(1)


class CentralPlayer(Player):
    """Always the most central legal column (the README's third baseline)."""

    name = "central"

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        cols = boards.geometry.cols
        closeness = torch.tensor([-abs(c - (cols - 1) / 2) for c in range(cols)])
        return torch.where(boards.legal(), closeness, -math.inf).argmax(1)


class LabelPlayer(Player):
    """Reads the labels: the best-scoring column, or the worst."""

    def __init__(self, suite: list[SuitePosition], worst: bool = False):
        self.scores = {p.position.key(): p.scores for p in suite}
        self.worst = worst
        self.name = "worst" if worst else "oracle"

    def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
        out = []
        for i in range(len(boards)):
            scores = self.scores[boards.position(i).key()]
            legal = [(s, c) for c, s in enumerate(scores) if s is not None]
            out.append((min if self.worst else max)(legal)[1])
        return torch.tensor(out)


# ---- metrics ----------------------------------------------------------------------------------------
def test_hand_worked_scores_on_the_mini_suite(mini_file: Path) -> None:
    suite = load_suite(mini_file)
    assert len(suite) == 13 and sum(p.counted for p in suite) == 6
    first = evaluate_suite(EdgePlayer(), suite).metrics()
    assert first["suite/counted"] == 6
    assert first["suite/keeps_result"] == pytest.approx(4 / 6) and first["suite/best_move"] == pytest.approx(
        4 / 6
    )
    assert first["suite/keeps_result/ply_4_10"] == 0.5 and first["suite/keeps_result/ply_11_20"] == 0.5
    assert first["suite/keeps_result/ply_21_36"] == 1.0
    last = evaluate_suite(EdgePlayer(last=True), suite).metrics()
    assert last["suite/keeps_result"] == pytest.approx(1 / 6) and last["suite/best_move"] == 0.0
    assert last["suite/keeps_result/ply_11_20"] == 0.5  # a slower win keeps the result, is not best


def test_oracle_scores_everything_and_the_worst_player_nothing(mini_file: Path) -> None:
    suite = load_suite(mini_file)
    oracle = evaluate_suite(LabelPlayer(suite), suite)
    worst = evaluate_suite(LabelPlayer(suite, worst=True), suite)
    assert oracle.total.keeps_rate == oracle.total.best_rate == 1.0
    assert worst.total.keeps_rate == worst.total.best_rate == 0.0
    assert oracle.total.counted == worst.total.counted == 6


def test_buckets_add_up_and_uncounted_positions_are_left_out(mini_file: Path) -> None:
    suite = load_suite(mini_file)
    report = evaluate_suite(EdgePlayer(), suite)
    assert report.positions == 13
    assert [t.counted for t in report.buckets.values()] == [2, 2, 2]
    for field in ("counted", "keeps", "best"):
        assert sum(getattr(t, field) for t in report.buckets.values()) == getattr(report.total, field)
    # dropping every uncounted line changes nothing
    counted_only = evaluate_suite(EdgePlayer(), [p for p in suite if p.counted])
    assert counted_only.metrics() == report.metrics()


def test_the_player_sees_only_counted_positions_in_one_batch(mini_file: Path) -> None:
    calls: list[int] = []

    class Spy(EdgePlayer):
        def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
            calls.append(len(boards))
            return super().act(boards, generator)

    evaluate_suite(Spy(), load_suite(mini_file))
    assert calls == [6]


def test_an_illegal_answer_is_an_error(mini_file: Path) -> None:
    class Broken(Player):
        name = "broken"

        def act(self, boards: Boards, generator: torch.Generator | None = None) -> torch.Tensor:
            return torch.full((len(boards),), 1)  # column 2 is full in the last line

    with pytest.raises(ValueError, match="broken played the full"):
        evaluate_suite(Broken(), load_suite(mini_file))


def test_a_solver_labelled_small_suite(rng: np.random.Generator, random_move_string) -> None:
    solver = Solver(SMALL)
    lines = []
    for _ in range(60):
        moves = random_move_string(rng, SMALL, int(rng.integers(0, 12)), unfinished=True)
        pos = SuitePosition(moves, (), geometry=SMALL).position
        lines.append(json.dumps({"moves": moves, "ply": len(moves), "scores": solver.move_scores(pos)}))
    suite = parse_suite(lines, "small", SMALL)
    oracle = evaluate_suite(LabelPlayer(suite), suite)
    worst = evaluate_suite(LabelPlayer(suite, worst=True), suite)
    assert oracle.total.counted > 10
    assert (oracle.total.keeps_rate, oracle.total.best_rate) == (1.0, 1.0)
    assert (worst.total.keeps_rate, worst.total.best_rate) == (0.0, 0.0)
    # plies 0-3 fall outside the named buckets: they get their own, and the buckets still add up
    assert OTHER in oracle.buckets
    assert sum(t.counted for t in oracle.buckets.values()) == oracle.total.counted


def test_metrics_and_json_shape(mini_file: Path) -> None:
    suite = FileSuite(mini_file)
    assert suite.name == mini_file.name and list(suite.tags)[-1] == "suite/counted"
    metrics = suite.score(TacticalBot())
    for key in ("suite/keeps_result", "suite/best_move", "suite/counted"):
        assert key in metrics
    for bucket in ("ply_4_10", "ply_11_20", "ply_21_36"):
        assert f"suite/keeps_result/{bucket}" in metrics and f"suite/counted/{bucket}" in metrics
    assert all(0 <= v <= 1 for k, v in metrics.items() if "/counted" not in k)
    rec = evaluate_suite(TacticalBot(), load_suite(mini_file), seed=SEED).to_json()
    assert rec["player"] == "tactical" and rec["positions"] == 13 and rec["seed"] == SEED
    json.dumps(rec)  # plain JSON, NaN-free


def test_stochastic_players_repeat_with_the_seed(mini_file: Path) -> None:
    suite = load_suite(mini_file)
    a, b = (evaluate_suite(RandomBot(), suite, seed=s).metrics() for s in (5, 5))
    assert a == b


# ---- validation ---------------------------------------------------------------------------------------
GOOD = '{"moves": "4453", "ply": 4, "scores": [-5, -5, -2, -3, -4, -2, -2]}'


@pytest.mark.parametrize(
    "line,words",
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        ('{"moves": "4453"}', "missing scores"),
        ('{"moves": 4453, "scores": [0, 0, 0, 0, 0, 0, 0]}', "string of column digits"),
        ('{"moves": "4458", "scores": [0, 0, 0, 0, 0, 0, 0]}', "bad move"),
        ('{"moves": "4444444", "scores": [0, 0, 0, 0, 0, 0, 0]}', "column 4 is full"),
        ('{"moves": "12131415", "scores": [0, 0, 0, 0, 0, 0, 0]}', "after the game was already won"),
        ('{"moves": "1213141", "scores": [0, 0, 0, 0, 0, 0, 0]}', "game is already over"),
        ('{"moves": "121314", "scores": [0, 0, 0, 0, 0, 0, 0]}', "ply"),  # no ply: fine; see next
        ('{"moves": "4453", "ply": 5, "scores": [-5, -5, -2, -3, -4, -2, -2]}', "ply is 5"),
        ('{"moves": "4453", "ply": 4, "scores": [-5, -5, -2]}', "list of 7 entries"),
        ('{"moves": "4453", "ply": 4, "scores": [-5, -5, -2, -3, -4, -2, 1.5]}', "column 7 is 1.5"),
        ('{"moves": "4453", "ply": 4, "scores": [-5, -5, -2, -3, -4, -2, true]}', "column 7 is True"),
        ('{"moves": "4453", "ply": 4, "scores": [-5, -5, -2, null, -4, -2, -2]}', "column 4 is playable"),
        ('{"moves": "444444", "ply": 6, "scores": [0, 0, 0, 0, 0, 0, 0]}', "column 4 is full but"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, words: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{GOOD}\n\n{line}\n")
    if words == "ply":  # a line without "ply" is accepted: the moves say it
        assert len(load_suite(path)) == 2
        return
    with pytest.raises(ValueError, match=f"bad.jsonl:3: .*{words}"):
        load_suite(path)


def test_missing_and_empty_suites(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such suite file"):
        load_suite(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(ValueError, match="holds no positions"):
        load_suite(tmp_path / "empty.jsonl")


# ---- the dev suite ----------------------------------------------------------------------------------
DEV = default_suite_path()
needs_dev = pytest.mark.skipif(DEV is None, reason="no ../shared/suite/dev.jsonl next to the repo")


@pytest.fixture(scope="module")
def dev() -> list[SuitePosition]:
    assert DEV is not None
    return load_suite(DEV)


@needs_dev
def test_dev_suite_baselines_match_the_readme(dev: list[SuitePosition]) -> None:
    counted = [p for p in dev if p.counted]
    assert (len(dev), len(counted)) == (1200, 739)
    # uniform random, exactly: the share of result-keeping legal moves, averaged
    exact = np.mean([np.mean([p.keeps_result(c) for c in p.position.legal_moves()]) for p in counted])
    assert round(100 * exact, 1) == 33.7
    assert round(100 * evaluate_suite(CentralPlayer(), dev).total.keeps_rate, 1) == 52.6
    # the bots are stochastic: five seeds, and their mean within two points of the expectation
    for bot, expected in ((RandomBot(), 0.337), (TacticalBot(), 0.805)):
        rates = [evaluate_suite(bot, dev, seed=s).total.keeps_rate for s in range(5)]
        assert abs(np.mean(rates) - expected) < 0.02, (bot.name, rates)


# ---- the command --------------------------------------------------------------------------------------
def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_eval_suite_json(capsys: pytest.CaptureFixture[str], mini_file: Path) -> None:
    rc, out, err = run(
        capsys, "eval-suite", "--player", "tactical", "--suite", str(mini_file), "--json", "--threads", "1"
    )
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["player"] == "tactical" and rec["metrics"]["suite/counted"] == 6


def test_eval_suite_text(capsys: pytest.CaptureFixture[str], mini_file: Path) -> None:
    rc, out, _ = run(capsys, "eval-suite", "--player", "random", "--suite", str(mini_file), "--seed", "3")
    assert rc == 0
    assert "6 of 13 positions counted" in out
    for label in ("all", "4-10", "11-20", "21-36"):
        assert f"\n  {label} " in out


def test_eval_suite_with_search(capsys: pytest.CaptureFixture[str], mini_file: Path, tmp_path: Path) -> None:
    torch.manual_seed(SEED)
    ckpt = tmp_path / "tiny.pt"
    Checkpoint.of(PolicyValueNet(TINY)).save(ckpt)
    rc, out, err = run(
        capsys,
        "eval-suite",
        "--player",
        str(ckpt),
        "--suite",
        str(mini_file),
        "--simulations",
        "16",
        "--json",
    )
    assert rc == 0, err
    assert json.loads(out)["player"] == "tiny+mcts16"
    rc, out, _ = run(capsys, "eval-suite", "--player", f"{ckpt}+mcts8", "--suite", str(mini_file), "--json")
    assert rc == 0 and json.loads(out)["player"] == "tiny+mcts8"
    rc, _, err = run(
        capsys, "eval-suite", "--player", f"{ckpt}+mcts8", "--suite", str(mini_file), "--simulations", "4"
    )
    assert rc == 2 and "give the simulations once" in err


@pytest.mark.parametrize(
    "content,words",
    [(None, "no such suite file"), (GOOD + "\n{oops\n", "bad.jsonl:2: not JSON"), ("", "holds no positions")],
)
def test_eval_suite_bad_input(capsys, tmp_path: Path, content: str | None, words: str) -> None:
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_text(content)
    rc, out, err = run(capsys, "eval-suite", "--player", "tactical", "--suite", str(path))
    assert rc == 2 and out == ""
    assert words in err and err.startswith("c4 eval-suite: error:") and err.count("\n") == 1


def test_eval_suite_bad_player_and_flags(capsys, mini_file: Path) -> None:
    rc, _, err = run(
        capsys, "eval-suite", "--player", "tactical", "--suite", str(mini_file), "--simulations", "8"
    )
    assert rc == 2 and "network player" in err and err.count("\n") == 1
    rc, _, err = run(capsys, "eval-suite", "--player", "nobody", "--suite", str(mini_file))
    assert rc == 2 and "unknown player" in err
    rc, _, err = run(capsys, "eval-suite", "--player", "random", "--simulations", "0")
    assert rc == 2 and "at least 1" in err
    rc, _, err = run(capsys, "eval-suite", "--suite", str(mini_file))
    assert rc == 2 and "--player" in err


def test_eval_suite_in_a_real_process(tmp_path: Path) -> None:
    if not C4.exists():
        pytest.skip(f"no c4 script next to {sys.executable}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(GOOD + "\n" + '{"moves": "4453", "ply": 4, "scores": [1]}\n')
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [str(C4), "eval-suite", "--player", "tactical", "--suite", str(bad)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("c4 eval-suite: error:") and "bad.jsonl:2" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
