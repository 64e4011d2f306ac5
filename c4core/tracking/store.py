"""The league's runs and records in MLflow: `MLflowStore`, the tracking URI (`Tracking`), and the
store's layout (`c4core.tracking`'s docstring draws it).

Crash safety and idempotency. Every record is keyed by (league, config hash, generation) or
(league, config hash, unordered pair), and counts only once its run carries ``c4.complete=true``,
a tag written in the same `log_batch` that ends the record (after the checkpoint upload, for a
generation). Runs left incomplete by a killed driver are marked FAILED and soft-deleted when
their key is next produced, so a rerun never sees two records for one key. Model versions are
looked up by their (league, generation, config_hash) tags before one is created, the ladder
metrics of a generation are logged only if that step is not yet in the history, and a generation
counts as finalized (``c4.finalized=true`` on its run) only after registration, the Elo refit,
the tags and the promotion are all done; a rerun skips finalized generations entirely.

`MLflowStore` satisfies `c4core.league.store.LeagueStore`, so `run_league`/`run_generation` work on
it unchanged; `c4core.tracking.runs.run_league_tracked` adds the registry steps after every
generation. Nothing here reads environment variables: the caller passes a `Tracking`. MLflow
configures its own ``mlflow`` logger on import unless ``MLFLOW_CONFIGURE_LOGGING=false`` is set,
which hosts with their own logging set-up (Airflow workers) should set before importing this module.
"""

from __future__ import annotations

import fcntl
import json
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, Run, RunStatus, RunTag, ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from c4core.config import (
    MAIN,
    LeagueConfig,
    generation_of,
    snapshot_name,
)
from c4core.evaluation.match import MatchResult
from c4core.learners.net import Checkpoint
from c4core.tracking.lease import DEFAULT_TTL, FencedClient, Lease

EXPERIMENT = "connect4-league"


MODEL_NAME = "connect4"


CHAMPION_ALIAS = "champion"


CHAMPION_TABLE = "champion_history.json"


EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
"""The experiment's tags: its kind makes the MLflow UI open it in the model-training view, not
the GenAI one."""


# tag keys; the dotted ones need backticks in filter strings
KIND, COMPLETE, FINALIZED, PAIR, RECORD = "c4.kind", "c4.complete", "c4.finalized", "c4.pair", "c4.record"


PARENT = "mlflow.parentRunId"


REPORT_DIR = "report"
"""Artifact folder (on the league run and the champion's source run) that holds the report."""


REPORT_TAG = "c4.report"
"""League-run tag: the artifact path of the live report."""


VERSION_TAG = "report"
"""Model-version tag: the artifact URI of the report attached to the champion."""


@dataclass(frozen=True)
class Tracking:
    """Where a league's MLflow state lives (the caller decides; nothing here reads env vars)."""

    tracking_uri: str
    """MLflow tracking URI: ``sqlite:///...`` (embedded) or ``http://host:port`` (a server)."""
    registry_uri: str | None = None
    """Model registry URI; None uses the tracking URI."""
    artifact_root: str | None = None
    """Artifact location given to a newly created experiment; None lets the server choose."""
    experiment: str = EXPERIMENT
    """Experiment that holds league, generation and match runs."""
    model_name: str = MODEL_NAME
    """Registered model that gets one version per snapshot."""

    @classmethod
    def embedded(cls, root: str | Path) -> Tracking:
        """SQLite plus local artifacts under `root` (the repo's gitignored ``mlruns/``)."""
        root = Path(root).resolve()
        root.mkdir(parents=True, exist_ok=True)
        return cls(f"sqlite:///{root / 'mlflow.db'}", artifact_root=(root / "artifacts").as_uri())

    @classmethod
    def for_uri(cls, uri: str) -> Tracking:
        """A tracking URI as given; a SQLite file keeps its artifacts in a folder next to it."""
        if uri.startswith("sqlite:///"):
            db = Path(uri[len("sqlite:///") :])
            db.parent.mkdir(parents=True, exist_ok=True)
            return cls(uri, artifact_root=(db.parent.resolve() / "artifacts").as_uri())
        return cls(uri)

    def client(self) -> MlflowClient:
        """A client; the first in a process on an embedded store creates or migrates the store,
        under a file lock beside it, so that leagues started together on a fresh store wait for
        one migration instead of racing it."""
        fresh = {
            u for u in (self.tracking_uri, self.registry_uri) if u and u.startswith("sqlite:///")
        } - _READY
        if not fresh:
            return MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.registry_uri)
        with ExitStack() as locks:
            for uri in sorted(fresh):
                locks.enter_context(_file_lock(Path(uri[len("sqlite:///") :] + ".lock")))
            # the client opens the tracking store as it is made, and the registry's on first use
            client = MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.registry_uri)
            client.search_registered_models(max_results=1)
        _READY.update(fresh)
        return client


_READY: set[str] = set()
"""The embedded stores this process has opened (and so created or migrated) already."""


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive `flock` on `path` (made if missing), held for the block; the kernel lets go
    should the process die."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def config_params(config: LeagueConfig) -> dict[str, str]:
    """The whole config, flattened to MLflow params (``ppo.learning_rate``, ``net.blocks``, ...)."""
    out: dict[str, str] = {}

    def walk(prefix: str, d: Mapping[str, Any]) -> None:
        for k, v in d.items():
            if isinstance(v, Mapping):
                walk(f"{prefix}{k}.", v)
            else:
                out[f"{prefix}{k}"] = str(v)

    walk("", config.to_dict())
    out["config_hash"] = config.training_hash()
    return out


def pair_key(a: str, b: str) -> str:
    """The unordered pair a match record is keyed by."""
    return "|".join(sorted((a, b)))


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def search_runs(client: MlflowClient, experiment_id: str, kind: str, tags: Mapping[str, str]) -> list[Run]:
    """Active runs of one kind (``c4.kind``) carrying every tag in `tags`, oldest first."""
    clauses = [f"tags.`{KIND}` = '{kind}'"]
    for k, v in tags.items():
        clauses.append(f"tags.`{k}` = '{v}'")
    runs: list[Run] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            " and ".join(clauses),
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    runs.sort(key=lambda r: (r.info.start_time or 0, r.info.run_id))
    return runs


def download_checkpoint(client: MlflowClient, run: Run, member: str) -> Checkpoint:
    """The snapshot a finished generation run holds in ``checkpoint/<member>.pt``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run.info.run_id, f"checkpoint/{member}.pt", tmp)
        return Checkpoint.load(path)


def run_member(run: Run) -> str:
    """The member a generation run trained (runs from before roles carry no ``member`` tag)."""
    return run.data.tags.get("member") or snapshot_name(int(run.data.tags["generation"]))


# ---- the store -----------------------------------------------------------------------------------
def model_name_for(tracking: Tracking, config: LeagueConfig) -> str:
    """The registered model a league's versions go to: one per game variant, so that champions
    and gating never mix boards. Standard Connect Four keeps `MODEL_NAME` (``connect4``); a
    Connect-3 league on 4x4 registers into ``connect3-4x4``. A `Tracking` that names another
    model than the default keeps its own."""
    if tracking.model_name != MODEL_NAME:
        return tracking.model_name
    return config.variant


def league_lease(tracking: Tracking, config: LeagueConfig) -> str:
    """The lease key of a league: its registered model (the game and board) and its name."""
    return f"league {model_name_for(tracking, config)}/{config.name}"


class MLflowStore:
    """A league's snapshots and match records kept in MLflow (a `c4core.league.store.LeagueStore`).

    `tags` (for example ``airflow.dag_id``, ``airflow.run_id``, ``airflow.task_id``) are added to
    every run this store creates. A store pickles as its recipe (tracking, config, tags, owner),
    so a learner process opens its own connection to the same league.

    `owner` names who writes: the store then holds the league's lease (`league_lease`) before
    it writes anything, and every write checks it (`c4core.tracking.lease.FencedClient`). A second owner
    of the same league waits up to `wait` seconds, then gets `LeaseHeld`, naming the holder; the
    lease frees when its holder releases it (`release`) or goes `ttl` seconds without a
    heartbeat. A store of the same owner adopts the lease: the learner processes of a league, or
    the tasks of one DAG run. Without an owner the store takes no lease: for readers, and for
    tests that drive the steps one by one.
    """

    def __init__(
        self,
        tracking: Tracking,
        config: LeagueConfig,
        tags: Mapping[str, str] | None = None,
        owner: str | None = None,
        ttl: float = DEFAULT_TTL,
        wait: float = 0.0,
    ):
        self.tracking = replace(tracking, model_name=model_name_for(tracking, config))
        self.config = config
        self.config_hash = config.training_hash()
        self.extra_tags = dict(tags or {})
        self.owner, self.ttl = owner, ttl
        self.client: Any = tracking.client()
        self.experiment_id = self._experiment()
        self.lease: Lease | None = None
        if owner is not None:
            lease = Lease(self.client, league_lease(self.tracking, config), owner, ttl)
            self.lease = lease.acquire(wait)
            self.client = FencedClient(self.client, self.lease)
        self.league_run_id = self._league_run()
        self._snapshots: dict[tuple[int, str], Checkpoint] = {}
        self._generation_runs: dict[tuple[int, str], Run] = {}
        # (generation, role) -> (incomplete run id, steps logged)
        self._live: dict[tuple[int, str], tuple[str, int]] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tracking, self.config, self.extra_tags, self.owner, self.ttl))

    def release(self) -> None:
        """Let go of the league's lease (a no-op without one): the league's work is done."""
        if self.lease is not None:
            self.lease.release()

    def close(self) -> None:
        """Stop heartbeating, and leave the lease to the owner's other processes (an Airflow
        task that is not the league's last)."""
        if self.lease is not None:
            self.lease.stop_heartbeat()

    # -- set-up --
    def _experiment(self) -> str:
        exp = self.client.get_experiment_by_name(self.tracking.experiment)
        if exp is None:
            try:
                return self.client.create_experiment(
                    self.tracking.experiment,
                    artifact_location=self.tracking.artifact_root,
                    tags=EXPERIMENT_TAGS,
                )
            except MlflowException:  # created concurrently
                exp = self.client.get_experiment_by_name(self.tracking.experiment)
                if exp is None:
                    raise
        for k, v in EXPERIMENT_TAGS.items():  # an experiment from before these tags
            if exp.tags.get(k) != v:
                self.client.set_experiment_tag(exp.experiment_id, k, v)
        return exp.experiment_id

    def _key_tags(self) -> dict[str, str]:
        return {"league": self.config.name, "config_hash": self.config_hash}

    def _league_run(self) -> str:
        runs = self._search("league")
        if runs:
            run = runs[0]
        else:
            tags = self._key_tags() | self.extra_tags | {KIND: "league"}
            run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.config.name)
        if not run.data.params:  # also when a killed driver created the run but logged nothing
            self._log_params(run.info.run_id, config_params(self.config))
        return run.info.run_id

    # -- queries --
    def _search(self, kind: str, **tags: str) -> list[Run]:
        """Active runs of this league and config of one kind, oldest first."""
        return search_runs(self.client, self.experiment_id, kind, self._key_tags() | tags)

    @staticmethod
    def _complete(run: Run) -> bool:
        return run.data.tags.get(COMPLETE) == "true"

    def _runs_of(self, generation: int, role: str) -> list[Run]:
        """The runs that train `role`'s snapshot of `generation`, complete or not (a run from
        before roles, with no ``role`` tag, is the main agent's)."""
        runs = self._search("generation", generation=str(generation))
        return [r for r in runs if r.data.tags.get("role", MAIN) == role]

    def generation_run(self, generation: int, role: str = MAIN) -> Run | None:
        """The complete run of `role`'s snapshot of `generation` (the oldest, should there ever
        be two)."""
        key = (generation, role)
        if key in self._generation_runs:
            return self._generation_runs[key]
        done = [r for r in self._runs_of(generation, role) if self._complete(r)]
        if not done:
            return None
        self._generation_runs[key] = done[0]
        return done[0]

    def _abandon(self, runs: Iterable[Run]) -> None:
        """Mark runs a killed driver left incomplete FAILED, and soft-delete them."""
        for run in runs:
            if not self._complete(run):
                self.client.set_tag(run.info.run_id, "c4.abandoned", utc_now())
                self.client.set_terminated(run.info.run_id, RunStatus.to_string(RunStatus.FAILED))
                self.client.delete_run(run.info.run_id)

    def _abandon_incomplete(self, kind: str, **tags: str) -> None:
        """`_abandon` the incomplete runs of one key."""
        self._abandon(self._search(kind, **tags))

    def _log_params(self, run_id: str, params: Mapping[str, str]) -> None:
        items = [Param(k, v) for k, v in params.items()]
        for lo in range(0, len(items), 100):  # MLflow takes at most 100 params per batch
            self.client.log_batch(run_id, params=items[lo : lo + 100])

    # -- LeagueStore --
    def snapshot(self, generation: int, role: str = MAIN) -> Checkpoint | None:
        key = (generation, role)
        if key in self._snapshots:
            return self._snapshots[key]
        run = self.generation_run(generation, role)
        if run is None:
            return None
        ckpt = download_checkpoint(self.client, run, snapshot_name(generation, role))
        self._snapshots[key] = ckpt
        return ckpt

    def start_generation(self, generation: int, role: str = MAIN) -> str:
        """Open the (incomplete) run that `role`'s snapshot of `generation` trains in; returns
        its id."""
        key = (generation, role)
        if key in self._live:
            return self._live[key][0]
        self._abandon(self._runs_of(generation, role))
        member = snapshot_name(generation, role)
        tags = self._key_tags() | self.extra_tags
        tags |= {
            KIND: "generation",
            "generation": str(generation),
            "role": role,
            "member": member,
            PARENT: self.league_run_id,
        }
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=f"{self.config.name}/{member}")
        self._log_params(run.info.run_id, config_params(self.config))
        self._live[key] = (run.info.run_id, 0)
        return run.info.run_id

    def log_iteration(
        self, generation: int, iteration: int, metrics: Mapping[str, float], role: str = MAIN
    ) -> None:
        """Log one training iteration's metrics as it finishes (step = iteration)."""
        run_id = self.start_generation(generation, role)
        now = int(time.time() * 1000)
        batch = [Metric(k, float(v), now, iteration) for k, v in metrics.items()]
        self.client.log_batch(run_id, metrics=batch)
        self._live[(generation, role)] = (run_id, iteration + 1)

    def save_snapshot(self, checkpoint: Checkpoint, metrics: list[dict[str, float]]) -> None:
        g, role = checkpoint.generation, checkpoint.role
        if self.generation_run(g, role) is not None:
            return
        run_id = self.start_generation(g, role)
        logged = self._live[(g, role)][1]
        for i in range(logged, len(metrics)):
            self.log_iteration(g, i, metrics[i], role)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{snapshot_name(g, role)}.pt"
            checkpoint.save(path)
            self.client.log_artifact(run_id, str(path), "checkpoint")
        # the completion tag comes last: a run without it is an unfinished generation
        self.client.log_batch(run_id, tags=[RunTag(COMPLETE, "true")])
        self.client.set_terminated(run_id, "FINISHED")
        self._live.pop((g, role), None)
        self._snapshots[(g, role)] = checkpoint

    def results(self) -> list[MatchResult]:
        seen: dict[str, MatchResult] = {}
        for run in self._search("match"):
            if self._complete(run) and run.data.tags.get(PAIR) not in seen:
                seen[run.data.tags[PAIR]] = MatchResult.from_record(json.loads(run.data.tags[RECORD]))
        return list(seen.values())

    def record_match(self, result: MatchResult) -> None:
        key = pair_key(result.a, result.b)
        if any(self._complete(run) for run in self._search("match", **{PAIR: key})):
            return
        self._abandon_incomplete("match", **{PAIR: key})
        tags = {PAIR: key}
        gens = [g for g in map(generation_of, (result.a, result.b)) if g is not None]
        if gens:
            tags["generation"] = str(max(gens))
        self._log_match_run("match", tags, result)

    def gating_record(self, challenger: str, holder: str) -> MatchResult | None:
        """The recorded gating match of version `challenger` against version `holder`."""
        for run in self._search("gating", challenger_version=challenger, champion_version=holder):
            if self._complete(run):
                return MatchResult.from_record(json.loads(run.data.tags[RECORD]))
        return None

    def record_gating(self, result: MatchResult, challenger: str, holder: str) -> None:
        """Record a gating match (A is the challenger); recording it twice keeps one."""
        if self.gating_record(challenger, holder) is not None:
            return
        key = {"challenger_version": challenger, "champion_version": holder}
        self._abandon_incomplete("gating", **key)
        self._log_match_run("gating", key, result)

    def _log_match_run(self, kind: str, key: Mapping[str, str], result: MatchResult) -> None:
        """One complete run holding a match: its JSON record as a tag, its numbers as metrics,
        and the completion tag in the same batch as the numbers."""
        rec = result.to_record()
        tags = self._key_tags() | self.extra_tags | dict(key)
        tags |= {
            KIND: kind,
            "a": result.a,
            "b": result.b,
            RECORD: json.dumps(rec),
            PARENT: self.league_run_id,
        }
        run = self.client.create_run(
            self.experiment_id, tags=tags, run_name=f"{self.config.name}/{result.a}-vs-{result.b}"
        )
        now = int(time.time() * 1000)
        metrics = {"win": rec["win"], "draw": rec["draw"], "loss": rec["loss"], "score": result.total.score}
        for side in ("a_first", "b_first"):
            metrics |= {f"{side}/{k}": v for k, v in rec[side].items()}
        metrics["seconds"] = rec["seconds"]
        params = {"games": rec["games"], "seed": rec["seed"], "opening_plies": rec["opening_plies"]}
        self.client.log_batch(
            run.info.run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            params=[Param(k, str(v)) for k, v in params.items()],
            tags=[RunTag(COMPLETE, "true")],
        )
        self.client.set_terminated(run.info.run_id, "FINISHED")

    # -- league run --
    def set_league_status(self, status: str) -> None:
        """RUNNING while the league runs; a finished status also records the end time, which
        the UI's Duration column reads."""
        if status == "RUNNING":
            self.client.update_run(self.league_run_id, status=status)
        else:
            self.client.set_terminated(self.league_run_id, status)
