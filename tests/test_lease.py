"""Leases on the tracking store (`c4core.tracking.lease`), and leagues side by side on one store."""

from __future__ import annotations

import pickle
import shutil
import threading
import time
from pathlib import Path

import pytest
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient
from side_by_side import finish_all, league_command, league_state, start, title_problems

from c4core.config import profile
from c4core.tracking.lease import FencedClient, Lease, LeaseHeld, LeaseLost, process_owner
from c4core.tracking.store import MLflowStore, Tracking, league_lease


@pytest.fixture
def client(blank_db: Path, tmp_path: Path) -> MlflowClient:
    shutil.copy(blank_db, tmp_path / "mlflow.db")
    return MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")


def test_one_owner_holds_a_lease_and_another_is_refused_by_name(client: MlflowClient) -> None:
    a = Lease(client, "league connect4/x", "owner A", ttl=30).acquire()
    with pytest.raises(LeaseHeld, match=r"league connect4/x is held by owner A since .* heartbeat 0 s ago"):
        Lease(client, "league connect4/x", "owner B", ttl=30).acquire()
    a.check()  # still ours
    assert Lease(client, "league connect4/y", "owner B", ttl=30).acquire().epoch == 1  # another key
    a.release()
    b = Lease(client, "league connect4/x", "owner B", ttl=30).acquire()
    assert (a.epoch, b.epoch) == (None, 2)  # epochs never repeat
    with pytest.raises(LeaseLost):
        a.check()
    b.release()


def test_the_same_owner_adopts_the_lease_in_another_process(client: MlflowClient) -> None:
    a = Lease(client, "k", "airflow run 1", ttl=30).acquire()
    again = pickle.loads(pickle.dumps(a))  # how a learner process gets it
    assert again.acquire().epoch == a.epoch == 1
    again.stop_heartbeat()  # a task that ends leaves the lease to the run
    a.check()
    a.release()
    assert Lease(client, "k", "x").holder().deleted  # type: ignore[union-attr]


def test_keys_that_match_as_like_patterns_stay_apart(client: MlflowClient) -> None:
    a = Lease(client, "league connect4/my_league", "A").acquire()
    b = Lease(client, "league connect4/myXleague", "B").acquire()  # '_' is LIKE's any-character
    c = Lease(client, "league connect4/m%", "C").acquire()
    assert (a.epoch, b.epoch, c.epoch) == (1, 1, 1)
    for lease in (a, b, c):
        lease.check()
        lease.release()


def test_an_expired_lease_is_taken_over_and_its_holder_is_fenced(client: MlflowClient) -> None:
    a = Lease(client, "k", "A", ttl=60).acquire()
    later = time.time() + 61  # B's clock: A has gone a whole ttl without a heartbeat
    b = Lease(client, "k", "B", ttl=60, clock=lambda: later)
    b.acquire()
    assert b.epoch == 2
    with pytest.raises(LeaseLost, match="taken over by B"):
        a.check()
    fenced = FencedClient(client, a)
    with pytest.raises(LeaseLost):
        fenced.create_experiment("written by a holder that lost its lease")
    assert client.get_experiment_by_name("written by a holder that lost its lease") is None
    assert fenced.get_experiment_by_name("Default") is not None  # reads are not fenced
    released = [e for e in client.search_experiments(ViewType.DELETED_ONLY) if e.name.startswith(".lease k")]
    assert [e.name.rsplit("#")[1] for e in released] == ["1"]  # the dead holder's epoch is hidden
    a.stop_heartbeat()
    b.release()


def test_a_holder_that_cannot_heartbeat_stops_before_its_lease_can_be_taken(client: MlflowClient) -> None:
    now = [time.time()]
    a = Lease(client, "k", "A", ttl=60, clock=lambda: now[0]).acquire()
    a.stop_heartbeat()
    now[0] += 40
    a.check()
    now[0] += 10  # 50 s of silence, 10 s before anyone may take it over
    with pytest.raises(LeaseLost, match="no heartbeat"):
        a.check()


def test_a_heartbeat_keeps_a_short_lease_alive(client: MlflowClient) -> None:
    a = Lease(client, "k", "A", ttl=2).acquire()
    time.sleep(5)  # two and a half ttls: heartbeats every 0.5 s
    a.check()
    with pytest.raises(LeaseHeld):
        Lease(client, "k", "B", ttl=2).acquire()
    a.release()


def test_many_takers_of_an_expired_lease_leave_exactly_one_holder(
    client: MlflowClient, tmp_path: Path
) -> None:
    dead = Lease(client, "k", "dead", ttl=1).acquire()
    dead.stop_heartbeat()
    later = time.time() + 5
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    won, refused, barrier = [], [], threading.Barrier(6)

    def take(i: int) -> None:
        lease = Lease(MlflowClient(uri), "k", f"taker {i}", ttl=60, clock=lambda: later)
        barrier.wait()
        try:
            won.append(lease.acquire())
        except LeaseHeld as e:
            refused.append(str(e))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1 and len(refused) == 5
    assert all(f"held by {won[0].owner}" in msg for msg in refused)
    won[0].check()
    won[0].release()


def test_a_waiter_gets_the_lease_once_its_holder_lets_go(client: MlflowClient) -> None:
    a = Lease(client, "k", "A", ttl=30).acquire()
    threading.Timer(0.5, a.release).start()
    start_at = time.monotonic()
    b = Lease(client, "k", "B", ttl=30).acquire(wait=20)
    assert b.epoch == 2 and 0.4 < time.monotonic() - start_at < 20
    b.release()


def test_a_second_store_of_a_running_league_is_refused_before_it_writes(
    blank_db: Path, tmp_path: Path
) -> None:
    shutil.copy(blank_db, tmp_path / "mlflow.db")
    tracking = Tracking.for_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    config = profile("smoke", name="solo")
    first = MLflowStore(tracking, config, owner=process_owner("first"))
    assert first.lease is not None and first.lease.key == league_lease(first.tracking, config) == (
        "league connect4/solo"
    )
    with pytest.raises(LeaseHeld, match="held by first on"):
        MLflowStore(tracking, config, owner=process_owner("second"))
    client = tracking.client()
    runs = client.search_runs([first.experiment_id], "tags.`c4.kind` = 'league'")
    assert [r.info.run_id for r in runs] == [first.league_run_id]  # the second made no league run
    learner = pickle.loads(pickle.dumps(first))  # a learner process: adopts, and writes
    learner.start_generation(1)
    learner.close()
    first.release()
    MLflowStore(tracking, config, owner=process_owner("third")).release()


@pytest.mark.slow
def test_leagues_started_at_once_on_a_fresh_store_match_running_alone(tmp_path: Path) -> None:
    """Three one-generation leagues of different names and seeds at once on a fresh store (which
    they create), each contesting the title, one of them started twice (four processes racing
    for the store), beside the three leagues alone. The title's race on a store that already
    exists is the Postgres round's (test_registry_postgres.py), whose server creates the store
    first."""
    seeds = (1, 2, 3)
    shared = Tracking.for_uri(f"sqlite:///{tmp_path / 'shared' / 'mlflow.db'}")  # made by the leagues
    alone = {s: Tracking.for_uri(f"sqlite:///{tmp_path / f'alone{s}' / 'mlflow.db'}") for s in seeds}
    leagues = [start(league_command(shared.tracking_uri, f"fresh{s}", s, 1), tmp_path) for s in seeds]
    twin = start(league_command(shared.tracking_uri, "fresh1", 1, 1), tmp_path)
    refs = [start(league_command(alone[s].tracking_uri, "ref", s, 1), tmp_path) for s in seeds]
    done = finish_all([*leagues, twin, *refs])
    n = len(seeds)
    for rc, _, err in done[1:n] + done[n + 1 :]:
        assert rc == 0 and "Traceback" not in err, err[-3000:]
    # fresh1 twice: one runs it, the other is refused at once, naming the holder (unless it
    # started only once the first had finished, and found the work done)
    pair = [done[0], done[n]]
    assert sorted(rc for rc, _, _ in pair) in ([0, 2], [0, 0]), [err[-2000:] for _, _, err in pair]
    for rc, _, err in pair:
        assert "Traceback" not in err
        if rc == 2:
            assert (
                err.strip()
                .splitlines()[-1]
                .startswith("c4 league: error: league connect4/fresh1 is held by c4 league on ")
            ), err
    assert title_problems(shared) == []

    for s in seeds:
        assert league_state(shared, f"fresh{s}") == league_state(alone[s], "ref")
    versions = shared.client().search_model_versions("name = 'connect4' and tags.league = 'fresh1'")
    assert [v.tags["member"] for v in versions] == ["gen1"]  # registered once
