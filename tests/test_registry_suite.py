"""Suite scores in the registry (`c4core.tracking.scores.log_suite`): every registered snapshot of a league
given a suite file carries ``suite/*`` metrics on its generation run and ``suite_*`` tags on its
version, a rerun leaves them as they are, a league without a suite gets none, and the report draws
the suite curve from the store.

One embedded SQLite store holds two smoke leagues: ``s`` with a ten-position suite (lines of
``shared/suite/dev.jsonl``, inlined so the test needs no shared folder), ``n`` without one.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

import c4core.league.generation as league
import c4core.learners.plugins as learners
from c4core import steps
from c4core.cli import main
from c4core.config import profile, snapshot_name
from c4core.games.connect4.suite import evaluate_suite, load_suite
from c4core.learners.net import NetPlayer
from c4core.report import build_report
from c4core.tracking.reports import read_league
from c4core.tracking.runs import run_league_tracked
from c4core.tracking.scores import log_suite
from c4core.tracking.store import MLflowStore, Tracking
from c4core.tracking.versions import find_version, league_versions

SUITE_LINES = """\
{"moves": "61161377", "ply": 8, "scores": [3, 1, -4, 3, -9, -4, -3]}
{"moves": "162341235", "ply": 9, "scores": [-3, 0, 2, -3, -2, -1, -4]}
{"moves": "62451162", "ply": 8, "scores": [-3, -4, -4, 3, -3, 1, -3]}
{"moves": "577713147446", "ply": 12, "scores": [3, -1, 2, 3, 2, 2, 1]}
{"moves": "22136416537772751533", "ply": 20, "scores": [11, -11, -11, -11, -11, -11, -11]}
{"moves": "715721522432453346", "ply": 18, "scores": [-12, -12, -12, 11, 12, 12, -12]}
{"moves": "2322317317416563243132464251777", "ply": 31, "scores": [6, null, null, -5, -5, -5, -5]}
{"moves": "355663621175632577233636425711", "ply": 30, "scores": [-6, -6, null, 6, -6, null, -6]}
{"moves": "76543673156212424447222467", "ply": 26, "scores": [-8, null, 8, null, 8, 7, 7]}
{"moves": "1365254712142162465645726765", "ply": 28, "scores": [-7, -7, -7, -7, -7, null, -7]}
"""
COUNTED = 9  # the last position is lost whatever is played: it does not count
TAGS = ("suite_keeps_result", "suite_best_move", "suite_counted")
WITH, WITHOUT = profile("smoke", name="s"), profile("smoke", name="n")


@dataclass
class Leagues:
    tracking: Tracking
    suite: Path
    scored: MLflowStore
    plain: MLflowStore

    @property
    def client(self) -> MlflowClient:
        return self.tracking.client()


@pytest.fixture(scope="module")
def leagues(tmp_path_factory: pytest.TempPathFactory) -> Leagues:
    root = tmp_path_factory.mktemp("suite-store")
    suite = root / "tiny.jsonl"
    suite.write_text(SUITE_LINES)
    tracking = Tracking.for_uri(f"sqlite:///{root / 'mlflow.db'}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        scored = MLflowStore(tracking, WITH)
        run_league_tracked(scored, WITH, suite=suite)
        plain = MLflowStore(tracking, WITHOUT)
        run_league_tracked(plain, WITHOUT)
    finally:
        torch.set_num_threads(threads)
    return Leagues(tracking, suite, scored, plain)


def expected(store: MLflowStore, g: int, suite: Path) -> dict[str, float]:
    ckpt = store.snapshot(g)
    assert ckpt is not None
    return evaluate_suite(NetPlayer(ckpt.build("cpu"), snapshot_name(g)), load_suite(suite)).metrics()


def suite_state(store: MLflowStore) -> dict[int, tuple[dict[str, str], dict[str, list[tuple[int, float]]]]]:
    """Per generation: the version's suite tags, and the full history of every suite metric."""
    out = {}
    client = store.client
    for g, v in league_versions(store).items():
        run = client.get_run(v.run_id)
        keys = sorted(k for k in run.data.metrics if k.startswith("suite/"))
        history = {k: [(m.step, m.value) for m in client.get_metric_history(v.run_id, k)] for k in keys}
        out[g] = ({k: t for k, t in v.tags.items() if k.startswith("suite_")}, history)
    return out


def test_every_version_carries_the_suite_scores_as_tags_and_run_metrics(leagues: Leagues) -> None:
    versions = league_versions(leagues.scored)
    assert sorted(versions) == list(range(1, WITH.generations + 1))
    for g, v in versions.items():
        want = expected(leagues.scored, g, leagues.suite)
        assert want["suite/counted"] == COUNTED
        assert v.tags["suite_keeps_result"] == f"{want['suite/keeps_result']:.4f}"
        assert v.tags["suite_best_move"] == f"{want['suite/best_move']:.4f}"
        assert v.tags["suite_counted"] == str(COUNTED)
        assert v.tags["suite_file"] == "tiny.jsonl"
        metrics = leagues.client.get_run(v.run_id).data.metrics  # the version's run is the generation's
        assert metrics["suite/keeps_result"] == pytest.approx(want["suite/keeps_result"])
        assert metrics["suite/best_move"] == pytest.approx(want["suite/best_move"])
        assert metrics["suite/counted"] == COUNTED
        for bucket in ("ply_4_10", "ply_11_20", "ply_21_36"):
            assert metrics[f"suite/counted/{bucket}"] == want[f"suite/counted/{bucket}"] == 3
            assert 0.0 <= metrics[f"suite/keeps_result/{bucket}"] <= 1.0
        assert not any(math.isnan(x) for k, x in metrics.items() if k.startswith("suite/"))


def test_a_league_without_a_suite_logs_no_suite_scores(leagues: Leagues) -> None:
    versions = league_versions(leagues.plain)
    assert sorted(versions) == list(range(1, WITHOUT.generations + 1))
    for v in versions.values():
        assert not any(k.startswith("suite") for k in v.tags)
        assert not any(k.startswith("suite/") for k in leagues.client.get_run(v.run_id).data.metrics)


def test_a_rerun_neither_rescores_nor_duplicates(leagues: Leagues, monkeypatch: pytest.MonkeyPatch) -> None:
    before = suite_state(leagues.scored)

    def fail(*a, **k):
        raise AssertionError("a finished league must not train or play again")

    monkeypatch.setattr(learners, "train_ppo", fail)
    monkeypatch.setattr(league, "play_match", fail)
    again = MLflowStore(leagues.tracking, WITH)
    run_league_tracked(again, WITH, suite=leagues.suite)
    assert suite_state(again) == before
    assert all(len(h) == 1 for _, hist in before.values() for h in hist.values())
    assert log_suite(again, 1, again.config.board.suite(leagues.suite)) is None  # already tagged


def test_a_crash_between_metrics_and_tags_is_finished_without_logging_twice(leagues: Leagues) -> None:
    store = MLflowStore(leagues.tracking, WITH)
    before = suite_state(store)
    v = find_version(store, 1)
    assert v is not None
    for key in TAGS:
        leagues.client.delete_model_version_tag(v.name, v.version, key)
    assert log_suite(store, 1, store.config.board.suite(leagues.suite)) is not None
    assert suite_state(store) == before


def test_the_report_draws_the_suite_curve(leagues: Leagues, tmp_path: Path) -> None:
    files = build_report(read_league(MLflowStore(leagues.tracking, WITH)), tmp_path / "scored")
    assert "suite" in files.images and files.images["suite"].stat().st_size > 0
    assert sorted(files.report.data.suite) == list(range(1, WITH.generations + 1))
    assert "Solver-labelled suite" in files.html.read_text()
    plain = build_report(read_league(MLflowStore(leagues.tracking, WITHOUT)), tmp_path / "plain")
    assert "suite" not in plain.images


def test_a_finalized_league_given_a_suite_later_is_scored_on_rerun_and_a_bad_one_warns(
    leagues: Leagues, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    db = Path(leagues.tracking.tracking_uri[len("sqlite:///") :])
    shutil.copy(db, folder / "mlflow.db")  # the artifacts stay where the copied store points
    tracking = Tracking(f"sqlite:///{folder / 'mlflow.db'}")
    monkeypatch.setattr(learners, "train_ppo", lambda *a, **k: pytest.fail("trained again"))
    store = MLflowStore(tracking, WITHOUT)
    with pytest.warns(UserWarning, match="not scored on the suite: no such suite file"):
        run_league_tracked(store, WITHOUT, suite=tmp_path / "missing.jsonl")  # registration goes on
    assert not any("suite_counted" in v.tags for v in league_versions(store).values())
    run_league_tracked(store, WITHOUT, suite=leagues.suite)
    for g, v in league_versions(store).items():
        assert v.tags["suite_counted"] == str(COUNTED)
        want = expected(store, g, leagues.suite)
        assert v.tags["suite_keeps_result"] == f"{want['suite/keeps_result']:.4f}"


# ---- where the suite comes from ------------------------------------------------------------------
def test_steps_take_the_suite_from_c4_suite_else_the_shared_dev_suite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from c4core.games import VARIANTS
    from c4core.games.connect4.suite import default_suite_path

    monkeypatch.setenv("C4_SUITE", "/some/suite.jsonl")
    assert steps.suite_path() == "/some/suite.jsonl"
    # the suite holds standard Connect Four positions: a league of another game is not scored
    assert steps.suite_path(VARIANTS["connect3-4x4"]) is None
    monkeypatch.setenv("C4_SUITE", "")
    assert steps.suite_path() is None
    monkeypatch.delenv("C4_SUITE")
    default = default_suite_path()
    assert steps.suite_path() == (str(default) if default is not None else None)


def test_c4_league_rejects_a_bad_suite_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(learners, "train_ppo", lambda *a, **k: pytest.fail("trained with a bad suite"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"moves": "44", "scores": [0, 0]}\n')
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["league", "--profile", "smoke", "--suite", str(bad), "--tracking-uri", uri]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert not (tmp_path / "mlflow.db").exists()  # failed before the store was opened
    args = ["league", "--profile", "smoke", "--dir", str(tmp_path / "runs"), "--suite", str(bad)]
    assert main(args) == 2
    assert "--store mlflow" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["league", "--suite", str(bad), "--no-suite"])
