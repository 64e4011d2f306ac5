"""The league report (`c4core.report`): its numbers, its figures, its page, and where it is logged.

Small hand-made match records check the arithmetic (ladder history, score matrix, first/second
split, winning runs), and, in a league with exploiters, the roles on the page, the champion, and
the exploitability curve and table. A smoke league in a folder checks the figures and the page; a smoke league
run by another process against a SQLite MLflow store checks that the report is logged live and
at the end, attached to the champion, and rebuilt from MLflow alone once that process is gone.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import subprocess
import sys
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from c4core import cli
from c4core.config import profile
from c4core.evaluation.elo import fit_elo
from c4core.evaluation.match import WDL, MatchResult, head_to_head
from c4core.figures import percent
from c4core.games.connect4.rules import Position
from c4core.league.generation import run_league
from c4core.league.members import champion, champion_after, exploitability, fit_ratings
from c4core.league.store import LocalStore
from c4core.learners.net import Checkpoint, PolicyValueNet
from c4core.report import (
    LeagueData,
    ReportFiles,
    bit_cell,
    build_report,
    compute,
    draw_ladder,
    draw_suite,
    first_second,
    ladder_history,
    order_members,
    read_local,
    score_matrix,
    winning_runs,
)

REPO = Path(__file__).resolve().parents[1]


def rec(a: str, b: str, a_first: tuple[int, int, int], b_first: tuple[int, int, int]) -> MatchResult:
    return MatchResult(a, b, 0, 4, WDL(*a_first), WDL(*b_first))


RECORDS = [
    rec("gen1", "random", (5, 0, 0), (4, 0, 1)),
    rec("tactical", "gen1", (4, 0, 1), (3, 1, 1)),
    rec("gen2", "random", (5, 0, 0), (5, 0, 0)),
    rec("gen2", "tactical", (3, 0, 2), (1, 0, 4)),
    rec("gen1", "gen2", (2, 1, 2), (0, 0, 5)),
]


# ---- numbers from hand-made records -------------------------------------------------------------
def test_the_ladder_after_each_generation_uses_only_the_matches_played_by_then() -> None:
    history = ladder_history(RECORDS)
    assert sorted(history) == [1, 2]
    assert set(history[1].ratings) == {"random", "tactical", "gen1"}
    assert history[1].ratings == pytest.approx(fit_elo([r.to_record() for r in RECORDS[:2]]).ratings)
    assert history[2].ratings == pytest.approx(fit_ratings(RECORDS).ratings)


def test_the_score_matrix_reads_row_against_column() -> None:
    members = order_members({"gen2", "random", "gen1", "tactical"})
    assert members == ["random", "tactical", "gen1", "gen2"]
    scores, games = score_matrix(RECORDS, members)
    i = {m: k for k, m in enumerate(members)}
    assert scores[i["gen1"], i["random"]] == pytest.approx(0.9)
    assert scores[i["tactical"], i["gen1"]] == pytest.approx(7.5 / 10)  # a draw counts half
    assert scores[i["gen2"], i["gen1"]] == pytest.approx(1 - 2.5 / 10)
    assert games[i["gen1"], i["gen2"]] == games[i["gen2"], i["gen1"]] == 10
    played = ~np.isnan(scores)
    assert np.allclose((scores + scores.T)[played], 1.0)  # zero-sum, seen from either side
    assert np.isnan(np.diag(scores)).all() and math.isnan(scores[i["random"], i["tactical"]])


def test_first_and_second_mover_results_are_from_the_members_side() -> None:
    rows = {r.opponent: r for r in first_second(RECORDS, "gen1", ["random", "tactical", "gen2"])}
    assert list(rows) == ["random", "tactical", "gen2"]
    assert (rows["random"].first, rows["random"].second) == (WDL(5, 0, 0), WDL(4, 0, 1))
    # gen1 was b: its first-mover games are tactical's b_first, flipped to gen1's side
    assert (rows["tactical"].first, rows["tactical"].second) == (WDL(1, 1, 3), WDL(1, 0, 4))
    assert rows["gen2"].total == WDL(2, 1, 7)


@pytest.mark.parametrize(
    ("moves", "cells"),
    [
        ("4455667", {(5, 3), (5, 4), (5, 5), (5, 6)}),  # along the bottom row
        ("1212121", {(5, 0), (4, 0), (3, 0), (2, 0)}),  # up the first column
        ("12234334744", {(5, 0), (4, 1), (3, 2), (2, 3)}),  # a rising diagonal
    ],
)
def test_the_winning_run_is_found(moves: str, cells: set[tuple[int, int]]) -> None:
    pos = Position.from_moves(moves)
    assert pos.won
    runs = winning_runs(pos.opponent, pos.geometry)  # the stones of the side that just moved
    assert [{bit_cell(b, pos.geometry) for b in run} for run in runs] == [cells]
    assert winning_runs(pos.current, pos.geometry) == []


# ---- a league with exploiters, from hand-made records ------------------------------------------
ROLES_CONFIG = profile("smoke", name="roles", generations=3, roles=("main", "main-exploiter"))

# gen2-me crushes everyone (gen1, the champion it trained on, above all); gen3-me only draws with
# gen2, the champion it trained on: exploitability 0.95, then 0.5
EXPLOITED = [
    *RECORDS,
    rec("gen2-me", "random", (5, 0, 0), (5, 0, 0)),
    rec("gen2-me", "tactical", (5, 0, 0), (4, 0, 1)),
    rec("gen2-me", "gen1", (5, 0, 0), (4, 1, 0)),
    rec("gen2-me", "gen2", (4, 0, 1), (4, 0, 1)),
    rec("gen3", "random", (5, 0, 0), (5, 0, 0)),
    rec("gen3", "tactical", (3, 1, 1), (2, 0, 3)),
    rec("gen3", "gen2", (3, 0, 2), (2, 1, 2)),
    rec("gen3", "gen2-me", (1, 0, 4), (0, 1, 4)),
    rec("gen3-me", "random", (5, 0, 0), (4, 0, 1)),
    rec("gen3-me", "gen2", (2, 1, 2), (2, 1, 2)),
    rec("gen3-me", "gen3", (2, 0, 3), (2, 0, 3)),
]

# the main exploiter's training games: 55% reached on gen1 at its 2nd iteration, never on gen2
EXPLOITER_METRICS = {
    "gen2-me": [{"vs/gen1/win": 0.3}, {"vs/gen1/win": 0.5, "vs/gen1/draw": 0.2}, {"vs/gen1/win": 0.8}],
    "gen3-me": [{"vs/gen2/win": 0.2, "vs/gen2/draw": 0.3}, {"vs/gen2/win": 0.4, "vs/gen2/draw": 0.2}],
}


def exploited(records: list[MatchResult] = EXPLOITED) -> LeagueData:
    return LeagueData("roles", ROLES_CONFIG, records, {}, role_metrics=EXPLOITER_METRICS)


def test_members_are_ordered_by_generation_main_agent_first() -> None:
    names = {"gen3", "gen2-le", "gen10", "gen2-me", "tactical", "gen2", "random", "gen1", "zed"}
    assert order_members(names) == [
        "random", "tactical", "gen1", "gen2", "gen2-me", "gen2-le", "gen3", "gen10", "zed"
    ]  # fmt: skip


def test_the_champion_is_the_main_agent_even_below_an_exploiter() -> None:
    rep = compute(exploited())
    assert rep.members == ["random", "tactical", "gen1", "gen2", "gen2-me", "gen3", "gen3-me"]
    best = max(rep.fit.ratings, key=rep.fit.ratings.__getitem__)
    assert best == "gen2-me" and rep.champion != best
    assert rep.champion == champion(rep.fit) and rep.champion in ("gen1", "gen2", "gen3")
    assert all(c in ("gen1", "gen2", "gen3") for c in rep.champions.values())


def test_exploitability_is_the_main_exploiters_score_per_generation() -> None:
    rep = compute(exploited())
    assert rep.exploitability == {g: exploitability(EXPLOITED, g) for g in (2, 3)}
    assert rep.exploitability == pytest.approx({2: 0.95, 3: 0.5})


def test_iterations_to_beat_each_champion_in_turn() -> None:
    assert (champion_after(EXPLOITED, 1), champion_after(EXPLOITED, 2)) == ("gen1", "gen2")
    rep = compute(exploited())
    assert rep.iterations_to_beat == [
        {"champion": "gen1", "from_generation": 2, "trained": 3, "iterations": 2},
        {"champion": "gen2", "from_generation": 3, "trained": 2, "iterations": None},
    ]


def test_a_long_leagues_ladder_keeps_its_axes_and_few_labels(tmp_path: Path) -> None:
    """One key entry a snapshot: forty of them once squeezed the ladder's axes to nothing."""
    n = 40
    records = [rec(f"gen{g}", "random", (4, 0, 1), (3, 1, 1)) for g in range(1, n + 1)]
    records += [rec(f"gen{g}", f"gen{g - 1}", (3, 0, 2), (2, 1, 2)) for g in range(2, n + 1)]
    records.append(rec("tactical", "random", (4, 0, 1), (4, 0, 1)))
    config = dataclasses.replace(profile("smoke"), generations=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns when the layout collapses the axes
        fig = draw_ladder(compute(LeagueData("long", config, records, {})))
        fig.savefig(tmp_path / "ladder.png")
    ax = fig.axes[0]
    assert ax.get_position().width > 0.4 and ax.get_position().height > 0.5  # of the figure
    assert len(ax.get_legend().get_texts()) == n + 3  # every snapshot, both bots, the champion
    assert 10 <= len(ax.get_xticks()) <= 20


def test_the_page_shows_roles_and_exploitability(tmp_path: Path) -> None:
    files = build_report(exploited(), tmp_path)
    assert list(files.images) == ["ladder", "exploitability", "matrix", "training"]
    assert files.images["exploitability"] == tmp_path / "exploitability.png"
    assert files.images["exploitability"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = parse(files.html)
    images = [base64.b64decode(a["src"].split(",", 1)[1]) for t, a in page.tags if t == "img"]
    assert images == [path.read_bytes() for path in files.images.values()]  # page order = FIGURES

    ladder = page.tables["ladder"]
    assert ladder[0][:2] == ["member", "role"]
    roles = {row[0]: row[1] for row in ladder[1:]}
    assert roles == {
        "random": "bot", "tactical": "bot", "gen1": "main", "gen2": "main", "gen3": "main",
        "gen2-me": "main exploiter", "gen3-me": "main exploiter",
    }  # fmt: skip
    assert ladder[1][0] == "gen2-me" and roles[files.report.champion] == "main"  # the top is no champion

    assert page.tables["to-beat"] == [
        ["champion", "first faced in generation", "iterations trained", "iterations to 55%"],
        ["gen1", "2", "3", "2"],
        ["gen2", "3", "2", "not yet"],
    ]
    data = json.loads(files.data.read_text())
    assert data["exploitability"] == pytest.approx({"2": 0.95, "3": 0.5})
    assert data["roles"]["gen3-me"] == "main exploiter" and data["champion"] == files.report.champion


def test_the_header_describes_every_kind_of_generation(tmp_path: Path) -> None:
    cpu = profile("cpu")  # PPO generations, then AlphaZero-style ones
    assert 1 < cpu.alphazero_from <= cpu.generations
    files = build_report(dataclasses.replace(exploited(), config=cpu), tmp_path)
    header = " ".join(files.html.read_text().split("<h1>", 1)[1].split("</p>", 1)[0].split())
    assert f"net {cpu.net.blocks}x{cpu.net.channels}" in header
    assert f"{cpu.alphazero_from - 1} PPO generation(s) x {cpu.ppo.iterations} iterations" in header
    az = cpu.generations - cpu.alphazero_from + 1
    assert f"then {az} AlphaZero generation(s) x {cpu.alphazero.iterations} iterations" in header


@pytest.mark.parametrize(
    ("records", "roles_column"),
    [(RECORDS, False), ([*RECORDS, rec("gen2-le", "gen1", (3, 0, 2), (2, 0, 3))], True)],
    ids=["no-exploiters", "league-exploiter-only"],
)
def test_without_a_main_exploiter_there_is_no_exploitability(
    records: list[MatchResult], roles_column: bool, tmp_path: Path
) -> None:
    files = build_report(exploited(records), tmp_path)
    assert "exploitability" not in files.images and not (tmp_path / "exploitability.png").exists()
    assert files.report.exploitability == {} and files.report.iterations_to_beat == []
    page = parse(files.html)
    assert "to-beat" not in page.tables and "Exploitability" not in files.html.read_text()
    assert (page.tables["ladder"][0][1] == "role") == roles_column
    data = json.loads(files.data.read_text())
    assert "exploitability" not in data and ("roles" in data) == roles_column


def test_read_local_reads_the_exploiters_metrics(tmp_path: Path) -> None:
    config = profile("smoke", name="roles", roles=("main", "main-exploiter", "league-exploiter"))
    store = LocalStore(tmp_path / "roles")
    net = PolicyValueNet(config.net, config.board)

    def save(generation: int, role: str, metrics: list[dict[str, float]]) -> None:
        ckpt = Checkpoint.of(net, config.board, generation, train_config=config.to_dict(), role=role)
        store.save_snapshot(ckpt, metrics)

    save(1, "main", [{"losses/value": 1.0}])
    save(2, "main", [{"losses/value": 0.5}])
    save(2, "main-exploiter", [{"vs/gen1/win": 0.25}, {"vs/gen1/win": 0.75}])
    save(2, "league-exploiter", [{"vs/gen1/win": 0.5}])
    save(3, "main-exploiter", [{"vs/gen2/win": 0.1}])  # generation 3 under way: its main agent isn't done
    (store.root / "gen2-le.metrics.json").unlink()  # a snapshot whose metrics went missing
    data = read_local(store)
    assert data.metrics == {
        1: [{"losses/value": 1.0}],
        2: [{"losses/value": 0.5}],
    }  # the main agent's, as before
    assert data.role_metrics == {
        "gen2-me": [{"vs/gen1/win": 0.25}, {"vs/gen1/win": 0.75}],
        "gen2-le": [],
        "gen3-me": [{"vs/gen2/win": 0.1}],
    }


# ---- a league in a folder -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, ReportFiles]:
    root = tmp_path_factory.mktemp("runs") / "loc"
    store = LocalStore(root)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_league(store, profile("smoke", name="loc"))
        files = build_report(root, tmp_path_factory.mktemp("report"))
    finally:
        torch.set_num_threads(threads)
    return store, files


def test_the_figures_are_real_pngs_with_content(local: tuple[LocalStore, ReportFiles]) -> None:
    _, files = local
    assert set(files.images) == {"ladder", "matrix", "training", "game"}  # no suite metrics here
    for name, path in files.images.items():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        with Image.open(path) as im:
            width, height = im.size
            colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert width >= 300 and height >= 250, name
        assert len(colours) > 20, name  # anti-aliased text and lines, not a blank canvas
    with Image.open(files.images["matrix"]) as im:
        rgb = np.asarray(im.convert("RGB")).reshape(-1, 3)
    # the heatmap's cells: saturated colours (not the grey of text, axes and never-played cells)
    saturated = rgb[(rgb.max(1).astype(int) - rgb.min(1)) > 80]
    assert len({tuple(c) for c in saturated // 16}) > 3


class Page(HTMLParser):
    """Every tag with its attributes, and the text of every table cell by table id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        self.tags.append((tag, d))
        if tag == "table":
            self._table = d.get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def test_the_page_parses_and_fetches_nothing(local: tuple[LocalStore, ReportFiles]) -> None:
    _, files = local
    page = parse(files.html)
    names = [t for t, _ in page.tags]
    assert names[0] == "html" and "body" in names
    assert "link" not in names and "script" not in names and "iframe" not in names
    for tag, attrs in page.tags:
        for key in ("src", "href", "srcset", "data"):
            value = (attrs.get(key) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//")), (tag, key, value[:60])
    text = files.html.read_text()
    assert "@import" not in text and "url(" not in text
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert all(src.startswith("data:image/png;base64,") for src in images)
    decoded = [base64.b64decode(src.split(",", 1)[1]) for src in images]
    assert decoded == [path.read_bytes() for path in files.images.values()]  # the very same PNGs, in order


def test_the_numbers_on_the_page_are_the_fit_and_the_records(local: tuple[LocalStore, ReportFiles]) -> None:
    store, files = local
    results = store.results()
    fit = fit_elo([r.to_record() for r in results])  # refit independently of the report
    champ = champion(fit)
    page = parse(files.html)

    ladder = page.tables["ladder"][1:]
    assert [row[0] for row in ladder] == [name for name, *_ in fit.ladder()]
    for name, elo, lo, hi, games in ladder:
        assert float(elo) == pytest.approx(fit.ratings[name], abs=0.051)
        assert (float(lo), float(hi)) == pytest.approx(fit.ci95[name], abs=0.051)
        assert int(games) == fit.games[name]

    splits = page.tables["splits"][2:]
    assert {row[0] for row in splits} == {m for m in fit.ratings if m != champ}
    for row in splits:
        (r,) = [r for r in results if {r.a, r.b} == {champ, row[0]}]
        first, second = (r.a_first, r.b_first) if r.a == champ else (r.b_first, r.a_first)
        if r.a != champ:  # from the champion's side
            first, second = WDL(first.loss, first.draw, first.win), WDL(second.loss, second.draw, second.win)
        assert [int(x) for x in row[1:4]] == [first.win, first.draw, first.loss]
        assert [int(x) for x in row[5:8]] == [second.win, second.draw, second.loss]
        total = first + second
        assert float(row[12]) == pytest.approx(total.score, abs=5e-4)

    matrix = page.tables["matrix"]
    members = matrix[0][1:]
    for row in matrix[1:]:
        for col, cell in zip(members, row[1:], strict=True):
            found = [r for r in results if {r.a, r.b} == {row[0], col}]
            if not found:
                assert cell == ""
                continue
            t = found[0].total
            if found[0].a != row[0]:
                t = WDL(t.loss, t.draw, t.win)
            assert float(cell) == pytest.approx(t.score, abs=5e-4)

    # the champion's score against tactical, as a percent like every rate the project shows
    vs_tactical = head_to_head(results, champ, "tactical")
    assert vs_tactical is not None
    assert f'id="tile-score-vs-tactical">{percent(vs_tactical.score)}</b>' in files.html.read_text()

    data = json.loads(files.data.read_text())
    assert data["champion"] == champ and data["ratings"] == pytest.approx(fit.ratings)
    assert data["generations"] == 2 and [h["generation"] for h in data["ladder"]] == [1, 2]


def test_the_sample_game_is_a_legal_game_of_the_champion_and_tactical(
    local: tuple[LocalStore, ReportFiles],
) -> None:
    _, files = local
    game = files.report.sample
    assert game is not None
    assert (game.first, game.second) == (files.report.champion, "tactical")
    pos = Position.from_moves(game.moves)  # replays legally
    assert pos.is_terminal
    if game.winner is None:
        assert not pos.won and game.run == ()
    else:
        assert game.winner == (game.first if len(game.moves) % 2 else game.second)
        board = pos.board()
        stone = 1 if game.winner == game.first else 2
        assert len(game.run) >= 4 and all(board[r][c] == stone for r, c in game.run)
    again = build_report(files.report.data, files.folder.parent / "again").report.sample
    assert again == game  # seeded: the same game every time


@pytest.mark.slow
def test_a_dots_and_boxes_league_gets_a_sample_game_of_its_own(tmp_path: Path) -> None:
    """The sample game goes through the game interface: a Dots and Boxes champion plays the
    league's baseline bot, `greedy`, a player who takes a box moves again, the winner is who
    owns more boxes, and the figure draws it."""
    from c4core.games import load

    root = tmp_path / "dots"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_league(LocalStore(root), profile("smoke", name="dots", game="dots_and_boxes", rows=2, cols=2))
        files = build_report(root, tmp_path / "report")
    finally:
        torch.set_num_threads(threads)
    game = files.report.sample
    assert game is not None and (game.first, game.second) == (files.report.champion, "greedy")
    dots = load("dots_and_boxes", rows=2, cols=2)
    assert game.game == dots and game.run == ()
    state = dots.new_state()
    for action, mover in zip(game.actions, game.movers, strict=True):
        assert state.current_player() == mover
        state = state.apply(action)
    assert state.is_terminal and state == dots.state_from_moves(game.moves)
    names = {1.0: game.first, -1.0: game.second, 0.0: None}
    assert game.winner == names[state.returns()[0]]
    assert "game" in files.images and files.images["game"].is_file()
    assert game.moves in files.html.read_text() and "lines h&lt;row&gt;" in files.html.read_text()


def test_c4_report_on_a_folder(local: tuple[LocalStore, ReportFiles], tmp_path: Path, capsys) -> None:
    store, files = local
    assert cli.main(["report", "--dir", str(store.root), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"champion {files.report.champion}: ")
    assert str(tmp_path / "report.html") in out and (tmp_path / "ladder.png").is_file()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["report", "--dir", "/nonexistent/league"], "no league folder"),
        (["report", "--league", "a b", "--tracking-uri", "sqlite:///{tmp}/m.db"], "league 'a b'"),
    ],
)
def test_c4_report_errors_are_one_line(argv: list[str], words: str, tmp_path: Path, capsys) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("c4 report: error: ") and words in err and err.count("\n") == 1


def test_names_on_the_page_are_text_never_markup(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    records = [*RECORDS, rec(hostile, "random", (0, 0, 5), (0, 0, 5))]
    source = '"><img src=x onerror=alert(2)>'
    data = LeagueData(hostile, profile("smoke", name="x"), records, {}, source=source)
    files = build_report(data, tmp_path)  # no store: no sample game
    page = parse(files.html)
    assert "script" not in [t for t, _ in page.tags]
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert len(images) == len(files.images) and all(s.startswith("data:image/png;base64,") for s in images)
    assert hostile in [row[0] for row in page.tables["ladder"][1:]]  # shown, as text
    text = files.html.read_text()
    assert hostile not in text and source not in text
    assert "<title>League &lt;script&gt;alert(1)&lt;/script&gt;: report</title>" in text


# ---- a league in MLflow, run by a process that is gone ------------------------------------------
DRIVER = """
import json, sys, tempfile, warnings
warnings.filterwarnings("error", message="the league report")  # a report that fails must fail here
import torch
torch.set_num_threads(1)
from c4core.config import profile
from c4core.tracking.store import MLflowStore, Tracking
from c4core.tracking.runs import run_generation_tracked, run_league_tracked
uri = sys.argv[1]
config = profile("smoke", name="rep")
store = MLflowStore(Tracking.for_uri(uri), config)
run_generation_tracked(store, config, 1)
with tempfile.TemporaryDirectory() as tmp:  # the live report, after generation 1
    live = json.load(open(store.client.download_artifacts(store.league_run_id, "report/report.json", tmp)))
final = run_league_tracked(store, config)
print(json.dumps({"live_generations": live["generations"], "version": final.champion_version.version}))
"""


@pytest.mark.slow
@pytest.mark.slow
def test_the_report_is_logged_live_and_rebuilt_from_mlflow_alone(tmp_path: Path, capsys) -> None:
    from mlflow.tracking import MlflowClient

    from c4core.tracking.reports import open_league, read_league
    from c4core.tracking.store import MODEL_NAME, Tracking

    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, uri], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ran = json.loads(proc.stdout.strip().splitlines()[-1])
    assert ran["live_generations"] == 1

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("connect4-league")
    (league_run,) = client.search_runs(
        [exp.experiment_id], "tags.`c4.kind` = 'league' and tags.league = 'rep'"
    )
    assert league_run.data.tags["c4.report"] == "report/report.html"
    logged = {f.path for f in client.list_artifacts(league_run.info.run_id, "report")}
    assert {f"report/{n}" for n in ("report.html", "report.json", "ladder.png", "matrix.png")} <= logged
    version = client.get_model_version(MODEL_NAME, ran["version"])
    assert (
        version.tags["report"].endswith("/report/report.html")
        and version.tags["report"] in version.description
    )
    # and a link that the MLflow UI resolves to the report in the source run's artifacts
    run_page = f"#/experiments/{exp.experiment_id}/runs/{version.run_id}"
    ui_link = f"({run_page}/artifacts/report/report.html?workflowType=machine_learning)"
    assert f"League report: [report.html]{ui_link}" in version.description
    on_version = {f.path for f in client.list_artifacts(version.run_id, "report")}
    assert on_version == logged

    # rebuilt here, from MLflow alone
    matches = client.search_runs([exp.experiment_id], "tags.`c4.kind` = 'match' and tags.league = 'rep'")
    fit = fit_elo([json.loads(r.data.tags["c4.record"]) for r in matches])
    files = build_report(read_league(open_league(Tracking.for_uri(uri), "rep")), tmp_path / "rebuilt")
    data = json.loads(files.data.read_text())
    assert data["ratings"] == pytest.approx(fit.ratings) and data["champion"] == champion(fit)
    assert data["champion"] == version.tags["member"]
    # the ladder over generations is the one the league logged as it went
    for step in data["ladder"]:
        for member, elo in step["ratings"].items():
            history = client.get_metric_history(league_run.info.run_id, f"elo/{member}")
            logged = next(m.value for m in history if m.step == step["generation"])
            assert elo == pytest.approx(logged, abs=0.05)  # logged to one decimal
    # the training curves are the generation runs' metrics
    gen1 = files.report.data.metrics[1]
    assert len(gen1) == profile("smoke").ppo.iterations and "vs/tactical/win" in gen1[0]

    assert cli.main(["report", "--league", "rep", "--tracking-uri", uri, "--out", str(tmp_path / "cli")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"champion {data['champion']}: ") and (tmp_path / "cli" / "report.html").is_file()
    assert cli.main(["report", "--league", "nope", "--tracking-uri", uri]) == 2
    assert "no league 'nope'" in capsys.readouterr().err


def test_suite_metrics_add_a_curve(local: tuple[LocalStore, ReportFiles], tmp_path: Path) -> None:
    _, files = local
    suite = {1: {"suite/keeps_result": 0.4, "suite/best_move": 0.2}, 2: {"suite/keeps_result": 0.5}}
    suite[2] |= {"suite/probe/double_cross": 0.1, "suite/probe/loop_control": float("nan")}
    data = dataclasses.replace(files.report.data, suite=suite)
    again = build_report(data, tmp_path)
    assert list(again.images) == ["ladder", "matrix", "game", "training", "suite"]
    assert json.loads(again.data.read_text())["suite"]["1"] == suite[1]
    assert "Solver-labelled suite" in again.html.read_text()
    labels = [line.get_label() for line in draw_suite(again.report).axes[0].lines]
    assert labels == ["keeps result", "best move", "double cross"]  # a probe with no score is not drawn


def test_the_exact_nash_conv_is_drawn_beside_the_exploiter_or_alone(
    local: tuple[LocalStore, ReportFiles], tmp_path: Path
) -> None:
    """Each generation's exact NashConv (where the board allows one) shares the exploitability
    figure with the main exploiter's score, on an axis of its own, and is drawn alone in a
    league without exploiters; `report.json` carries it."""
    both = build_report(dataclasses.replace(exploited(), nash_conv={2: 2.0, 3: 0.0}), tmp_path / "both")
    assert list(both.images) == ["ladder", "exploitability", "matrix", "training"]
    assert json.loads(both.data.read_text())["nash_conv"] == {"2": 2.0, "3": 0.0}
    page = both.html.read_text()
    assert "NashConv, computed exactly" in page and "The main exploiter trains" in page
    _, files = local
    alone = build_report(
        dataclasses.replace(files.report.data, nash_conv={1: 2.0, 2: 0.0}), tmp_path / "alone"
    )
    assert list(alone.images) == ["ladder", "exploitability", "matrix", "game", "training"]
    page = alone.html.read_text()
    assert "NashConv, computed exactly" in page and "The main exploiter trains" not in page
    assert "exploitability" not in json.loads(alone.data.read_text())  # no exploiter's numbers
