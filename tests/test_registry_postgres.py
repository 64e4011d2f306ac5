"""The production-shaped tracking server, for real: Postgres for runs and the registry, S3 artifacts.

A throwaway PostgreSQL cluster (Debian's binaries under /usr/lib/postgresql/*/bin) runs as an
unprivileged process on 127.0.0.1, in a temporary folder, with trust auth. As root, postgres
refuses to start, so there it runs as the `postgres` OS user (`runuser -u postgres --`).
`mlflow/server-postgres-s3.sh` then serves MLflow on top of it with its artifacts in moto's S3,
and a smoke league runs against the server. The test checks what the league left behind in all
three places: the registry (through the server), the bucket, and the database itself.

Without the postgres binaries the test skips, unless C4_REQUIRE_POSTGRES is set (CI sets it), in
which case it fails.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from servers import Server, check_smoke_league_on_server, free_port, runs_of, tracking_server

from c4core.config import profile
from c4core.tracking.runs import run_league_tracked
from c4core.tracking.store import CHAMPION_ALIAS, MODEL_NAME, MLflowStore, Tracking

REPO = Path(__file__).resolve().parents[1]
DATABASE = "mlflow"
BUCKET = "league-postgres"


def postgres_bin() -> Path | None:
    """The newest PostgreSQL bin folder that has initdb, pg_ctl and postgres, or None."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/postgres")]
    found = [d for d in found if all((d / exe).is_file() for exe in ("initdb", "pg_ctl", "postgres"))]
    if not found:
        return None
    return max(found, key=lambda d: [int(x) if x.isdigit() else 0 for x in d.parent.name.split(".")])


def unavailable(reason: str) -> None:
    if os.environ.get("C4_REQUIRE_POSTGRES"):
        pytest.fail(f"{reason}, and C4_REQUIRE_POSTGRES is set")
    pytest.skip(f"{reason} (install Debian's `postgresql` package; set C4_REQUIRE_POSTGRES=1 to fail)")


@dataclass
class Postgres:
    port: int
    folder: Path

    def uri(self, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = DATABASE):
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=database)


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL cluster on 127.0.0.1:<free port>, trust auth, with an empty `mlflow` database."""
    with postgres_cluster() as cluster:
        yield cluster


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Postgres]:
    """`postgres`, outside pytest too (`benchmarks/side_by_side.py`)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        unavailable("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres will not run as root: use its own OS user
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            unavailable("running as root, and there is no `postgres` OS user to run the server as")
        as_user = ["runuser", "-u", "postgres", "--"]
    # not under pytest's tmp_path: that sits in a 0700 folder the postgres user cannot enter
    folder = Path(tempfile.mkdtemp(prefix="c4-pg-"))
    if as_user:
        shutil.chown(folder, user="postgres", group="postgres")
    data, port = folder / "data", free_port()

    def pg(*args: str, timeout: float = 60) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"

    started = False
    try:
        pg(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
           "--no-sync")  # fmt: skip
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
        started = True  # from here on, always try to stop it
        pg(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "postgres.log"), "-w", "-t", "60",
           "-o", options, "start")  # fmt: skip
        cluster = Postgres(port, folder)
        conn = cluster.connect("postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DATABASE}")
        conn.close()
        yield cluster
    finally:
        if started:
            subprocess.run(
                [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_server(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`mlflow/server-postgres-s3.sh` on 127.0.0.1: runs in Postgres, artifacts in moto's S3."""
    home = tmp_path_factory.mktemp("pg-server")
    env = {"BACKEND_STORE_URI": postgres.uri()}
    with tracking_server("server-postgres-s3.sh", home, BUCKET, env) as server:
        yield server


@pytest.mark.slow
def test_a_league_against_postgres_and_s3(pg_server: Server, postgres: Postgres) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny nets run fastest on one thread
    try:
        tracking = Tracking.for_uri(pg_server.url)
        config = profile("smoke", name="pg")
        store = MLflowStore(tracking, config)
        final = run_league_tracked(store, config)
    finally:
        torch.set_num_threads(threads)
    client = tracking.client()

    # the registry, through the server
    check_smoke_league_on_server(store, client, final, "pg")
    champ = client.get_model_version_by_alias(MODEL_NAME, CHAMPION_ALIAS)
    assert final.champion_version.version == champ.version
    stages = {v.version: v.current_stage for v in client.search_model_versions(f"name = '{MODEL_NAME}'")}
    assert [v for v, s in stages.items() if s == "Production"] == [champ.version]

    # the bytes, in S3 (uploaded by the server: the client holds no S3 credentials)
    listing = pg_server.s3.list_objects_v2(Bucket=pg_server.bucket, Prefix=pg_server.prefix)
    keys = [o["Key"] for o in listing["Contents"]]
    assert not listing["IsTruncated"]
    assert sum(k.endswith("checkpoint/gen1.pt") for k in keys) == 1
    assert sum(k.endswith("checkpoint/gen2.pt") for k in keys) == 1
    assert sum(k.endswith("model/MLmodel") for k in keys) == 2
    assert any(k.endswith("champion_history.json") for k in keys)

    # the runs and the registry, in Postgres itself
    gens = runs_of(client, "generation", "pg")
    conn = postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs")
            (run_count,) = cur.fetchone()
            cur.execute("SELECT run_uuid FROM runs WHERE status = 'FINISHED'")
            finished = {row[0] for row in cur.fetchall()}
            cur.execute("SELECT version, current_stage FROM model_versions WHERE name = %s", (MODEL_NAME,))
            db_versions = dict(cur.fetchall())
            cur.execute("SELECT alias, version FROM registered_model_aliases WHERE name = %s", (MODEL_NAME,))
            aliases = dict(cur.fetchall())
    finally:
        conn.close()
    assert run_count >= 1 + 2 + 5  # the league, its generations, its matches
    assert {r.info.run_id for r in gens} <= finished
    assert db_versions == {int(v): s for v, s in stages.items()}
    assert aliases[CHAMPION_ALIAS] == int(champ.version)


@pytest.mark.slow
def test_leagues_started_at_once_against_postgres_and_s3(pg_server: Server, tmp_path: Path) -> None:
    """Four one-generation leagues at once through the server, two of each seed, each contesting
    the title: all finish, the title moves only by recorded matches, and the two leagues of a
    seed come out alike (as each would alone)."""
    from side_by_side import finish_all, league_command, league_state, start, title_problems

    tracking = Tracking.for_uri(pg_server.url)
    names = {"pga1": 1, "pgb1": 1, "pga2": 2, "pgb2": 2}
    procs = [start(league_command(pg_server.url, name, seed, 1), tmp_path) for name, seed in names.items()]
    for rc, _, err in finish_all(procs):
        assert rc == 0 and "Traceback" not in err, err[-3000:]
    assert title_problems(tracking) == []
    for seed in (1, 2):
        assert league_state(tracking, f"pga{seed}") == league_state(tracking, f"pgb{seed}")
    assert league_state(tracking, "pga1")["snapshots"] != league_state(tracking, "pga2")["snapshots"]
