"""MLflow as the league's system of record: runs, match records, the model registry, the champion.

Layout in MLflow (experiment ``connect4-league``)::

    league run  "<league>"              tags c4.kind=league, league, config_hash; params = config
    |                                   metrics elo/<member> and league/exploitability
    |                                   (step = generation); artifact
    |                                   champion_history.json (who held the title, and when);
    |                                   report/ (`log_report`, redrawn after every generation),
    |                                   tag c4.report
    +-- generation run  "<league>/gen3" tags c4.kind=generation, league, generation, role,
    |                                   member, config_hash (one run per role: "<league>/gen3-me")
    |                                   params = the whole LeagueConfig; metrics per iteration;
    |                                   artifacts checkpoint/gen3.pt and model/ (the pyfunc)
    +-- match run  "<league>/gen3-vs-tactical"
                                        tags c4.kind=match, a, b, c4.pair, c4.record (the JSON
                                        record); params games/seed; metrics win/draw/loss, splits

    registered model "connect4": one version per snapshot of every role, tagged league,
    generation, role, member, config_hash, elo, elo_ci95, win_vs_tactical (and
    suite_keeps_result, suite_best_move, suite_counted, suite_file when a suite is given);
    stage Production + alias ``champion`` on the league's best-rated main-agent snapshot, whose
    version also has the final report (tag ``report``, the report/ folder on its source run, a
    link in its description).

The league report. `c4core.report` draws a report from league data and knows nothing of MLflow;
this module reads a league back from MLflow into that data (`open_league` finds a league by name,
`read_league` reads it) and logs the report it draws (`log_report`, or `log_league_report`, which
only warns if drawing fails).

Suite scores. Given a suite file (`after_generation`'s, `run_generation_tracked`'s and
`run_league_tracked`'s ``suite`` argument; None, the default, logs nothing), each snapshot's raw
network (greedy, no search) is scored on it with `c4core.suite`: the ``suite/*`` metrics go on the
generation run, where `c4core.report` draws them as a curve, and the headline numbers become tags
of the version (`log_suite`). A version that already has them is not scored again; a suite
that cannot be read, or does not fit the board, only warns.

Crash safety and idempotency. Every record is keyed by (league, config hash, generation) or
(league, config hash, unordered pair), and counts only once its run carries ``c4.complete=true``,
a tag written in the same `log_batch` that ends the record (after the checkpoint upload, for a
generation). Runs left incomplete by a killed driver are marked FAILED and soft-deleted when
their key is next produced, so a rerun never sees two records for one key. Model versions are
looked up by their (league, generation, config_hash) tags before one is created, the ladder
metrics of a generation are logged only if that step is not yet in the history, and a generation
counts as finalized (``c4.finalized=true`` on its run) only after registration, the Elo refit,
the tags and the promotion are all done; a rerun skips finalized generations entirely.

`MLflowStore` satisfies `c4core.league.LeagueStore`, so `run_league`/`run_generation` work on it
unchanged; `run_league_tracked` adds the registry steps after every generation. Nothing here reads
environment variables: the caller passes a `Tracking`. MLflow configures its own ``mlflow``
logger on import unless ``MLFLOW_CONFIGURE_LOGGING=false`` is set, which hosts with their own
logging set-up (Airflow workers) should set before importing this module.
"""

from __future__ import annotations

import fcntl
import json
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, Run, RunStatus, RunTag, ViewType
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from c4core.config import (
    MAIN,
    TABULAR_LEARNERS,
    TABULAR_MOVES,
    LeagueConfig,
    generation_of,
    role_of,
    snapshot_name,
)
from c4core.elo import EloFit
from c4core.figures import elo, percent
from c4core.games import ConnectFour
from c4core.league import GenerationReport, champion_after, exploitability, iterations_to_beat, run_generation
from c4core.lease import DEFAULT_TTL, FencedClient, Lease, process_owner
from c4core.match import MatchResult, head_to_head
from c4core.net import Checkpoint
from c4core.report import LeagueData, ReportFiles, build_report, is_plotted

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


def _now() -> str:
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


def _download_checkpoint(client: MlflowClient, run: Run, member: str) -> Checkpoint:
    """The snapshot a finished generation run holds in ``checkpoint/<member>.pt``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run.info.run_id, f"checkpoint/{member}.pt", tmp)
        return Checkpoint.load(path)


def _run_member(run: Run) -> str:
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
    """A league's snapshots and match records kept in MLflow (a `c4core.league.LeagueStore`).

    `tags` (for example ``airflow.dag_id``, ``airflow.run_id``, ``airflow.task_id``) are added to
    every run this store creates. A store pickles as its recipe (tracking, config, tags, owner),
    so a learner process opens its own connection to the same league.

    `owner` names who writes: the store then holds the league's lease (`league_lease`) before
    it writes anything, and every write checks it (`c4core.lease.FencedClient`). A second owner
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
                self.client.set_tag(run.info.run_id, "c4.abandoned", _now())
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
        ckpt = _download_checkpoint(self.client, run, snapshot_name(generation, role))
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
        if any(pair_key(r.a, r.b) == key for r in self.results()):
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


# ---- registry steps ------------------------------------------------------------------------------
def _version_role(version: ModelVersion) -> str:
    return version.tags.get("role", MAIN)  # versions from before roles are the main agent's


def find_version(store: MLflowStore, generation: int, role: str = MAIN) -> ModelVersion | None:
    """The registered version of `role`'s snapshot of `generation`, looked up by its
    league/generation/role/config tags."""
    flt = (
        f"name = '{store.tracking.model_name}' and tags.league = '{store.config.name}' "
        f"and tags.generation = '{generation}' and tags.config_hash = '{store.config_hash}'"
    )
    versions = [v for v in store.client.search_model_versions(flt) if _version_role(v) == role]
    versions = sorted(versions, key=lambda v: int(v.version))
    return versions[0] if versions else None


def member_versions(store: MLflowStore) -> dict[str, ModelVersion]:
    """Every registered version of this league and config, by member name (every role)."""
    flt = (
        f"name = '{store.tracking.model_name}' and tags.league = '{store.config.name}' "
        f"and tags.config_hash = '{store.config_hash}'"
    )
    out: dict[str, ModelVersion] = {}
    for v in sorted(store.client.search_model_versions(flt), key=lambda v: int(v.version)):
        out.setdefault(v.tags.get("member") or snapshot_name(int(v.tags["generation"])), v)
    return out


def league_versions(store: MLflowStore, role: str = MAIN) -> dict[int, ModelVersion]:
    """The registered versions of `role`'s snapshots in this league and config, by generation."""
    return {int(v.tags["generation"]): v for m, v in member_versions(store).items() if role_of(m) == role}


def _win_vs_tactical(results: Iterable[MatchResult], member: str) -> float | None:
    """The fraction of its games against ``tactical`` that `member` won; None if they never met."""
    wdl = head_to_head(results, member, "tactical")
    return wdl.win / wdl.games if wdl is not None else None


ROLE_CARD = {
    MAIN: "main agent (the league's learner; its snapshots can be champion)",
    "main-exploiter": "main exploiter (trains only against the current champion, to find its "
    "weaknesses; never champion)",
    "league-exploiter": "league exploiter (trains against the whole league, drawn by PFSP; never champion)",
}
"""What each role is, as the model card says it."""


def model_card(
    store: MLflowStore,
    generation: int,
    fit: EloFit | None,
    win_vs_tactical: float | None,
    role: str = MAIN,
) -> str:
    """The version's description: a short model card."""
    c = store.config
    member = snapshot_name(generation, role)
    training = (
        replace(c, generations=generation).describe_training()
        if role == MAIN
        else f"{c.ppo.iterations} PPO iterations x {c.ppo.games} games a generation"
    )
    from c4core.serving import example_moves

    tabular = c.learner(generation, role) in TABULAR_LEARNERS
    four = isinstance(c.board, ConnectFour)
    board = f"board {c.rows}x{c.cols}, connect {c.connect}" if four else f"board {c.rows}x{c.cols} boxes"
    # the first line is plain text: the registered model's versions table shows it raw
    lines = [
        f"{c.board.title} {'action-value table' if tabular else 'policy-value net'}, snapshot "
        f"{member} of league {c.name} (config {store.config_hash}, profile {c.profile}).",
        "",
        f"- Role: {ROLE_CARD[role]}.",
        f"- Table: one row of action values per position in play, by {c.learner(generation, role)}, "
        f"{board}; served without search (`simulations` 0)."
        if tabular
        else f"- Network: {c.net.blocks} residual blocks x {c.net.channels} channels "
        f"({c.net.precision} convolutions), {board}.",
        f"- Training: {training}.",
    ]
    if fit is not None and member in fit.ratings:
        lo, hi = fit.ci95[member]
        lines.append(f"- Elo: {elo(fit.ratings[member])} (95% CI {elo(lo)}..{elo(hi)}; random = 0).")
    if win_vs_tactical is not None:
        lines.append(f"- Wins vs the tactical bot: {percent(win_vs_tactical)} of {c.match_games} games.")
    n = c.board.num_actions
    lines += [
        "",
        f'Input: records with `moves` (solver notation, e.g. `"{example_moves(c.board)}"`) or `board` '
        f"({c.rows}x{c.cols}, rows top to bottom, 0 empty / 1 first player / 2 second player). "
        f"Output: `action` and `column` (0-{n - 1}), one number under both names, the column to play, "
        f"and `move`, its digit; `probs` ({n} floats, 0 on full columns), `value` (-1..1 for the side "
        "to move)."
        if four
        else f'Input: records with `moves` (lines such as `"{example_moves(c.board)}"`, `h<row>,<col>` '
        "and `v<row>,<col>` from 0, separated by spaces). Output: `action` (0-"
        f"{n - 1}), the line to draw, and `move`, the same line in that notation; `probs` ({n} floats, "
        "0 on drawn lines), `value` (-1..1 for the player to move).",
    ]
    return "\n".join(lines)


def model_description(title: str, champion: ModelVersion | None = None) -> str:
    """A registered model's description, for game `title`: the registry-wide `champion` first
    (its version, league, snapshot, Elo and a link to its page), then what the aliases mean. The
    title's holder rewrites it on every title change (`_take_title`)."""
    return f"{champion_line(champion)}\n\n{title} {_ABOUT}\n\n{_ALIASES}"


def champion_line(champion: ModelVersion | None) -> str:
    """The first line of the registered model's description: who holds the title."""
    if champion is None:
        return "**No champion yet**: the first league to finish a generation takes the title."
    t = champion.tags
    rating = f", Elo {t['elo']}" if t.get("elo") else ""  # as its league last rated it
    page = f"#/models/{champion.name}/versions/{champion.version}?workflowType=machine_learning"
    return (
        f"**Champion: version {champion.version}**, snapshot `{t.get('member', '?')}` of league "
        f"`{t.get('league', '?')}`{rating} ([its page]({page})). "
        f"Serve it as `models:/{champion.name}@champion`."
    )


_ABOUT = "self-play league snapshots, one version per snapshot of every league."


_ALIASES = (
    "- Alias `champion-<league>` (a `.` in the name becomes `_`): that league's best-rated "
    "main-agent snapshot, moved after every generation. Exploiters (tag `role`) are rated on the "
    "same ladder and never champion.\n"
    "- Alias `champion` (and stage Production): the registry-wide champion. A league's champion "
    "takes it when there is none yet, when the holder comes from the same league, or by beating "
    "the holder in a recorded gating match (400 games, colours alternated, random openings, a "
    "score of at least 0.55, as AlphaZero gated its new networks). The versions carry the gating "
    "result as tags (`gating_*`), and each league run's `champion_history.json` logs every "
    "challenge, won or lost."
)


def _ensure_registered_model(store: MLflowStore) -> None:
    client, name = store.client, store.tracking.model_name
    title = store.config.board.title
    try:
        model = client.get_registered_model(name)
    except MlflowException:
        try:
            client.create_registered_model(name, description=model_description(title))
            return
        except MlflowException:  # created concurrently
            model = client.get_registered_model(name)
    # a registry from before the description led with the champion; its first line is otherwise
    # the title holder's to write (`_take_title`, under the title lease)
    if not (model.description or "").endswith(model_description(title).split("\n\n", 1)[1]):
        description = model_description(title, current_champion(client, name))
        client.update_registered_model(name, description=description)


def register_snapshot(
    store: MLflowStore, generation: int, fit: EloFit | None = None, role: str = MAIN
) -> ModelVersion:
    """Register `role`'s snapshot of `generation` as a version of the model (reusing one that
    exists)."""
    from c4core.serving import save_pyfunc

    existing = find_version(store, generation, role)
    if existing is not None:
        return existing
    run = store.generation_run(generation, role)
    ckpt = store.snapshot(generation, role)
    member = snapshot_name(generation, role)
    if run is None or ckpt is None:
        raise ValueError(f"league {store.config.name!r} has no finished snapshot {member}")
    win = _win_vs_tactical(store.results(), member)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        save_pyfunc(model_dir, ckpt)
        # an upload to a fixed path: a retry after a crash overwrites, never duplicates
        store.client.log_artifacts(run.info.run_id, str(model_dir), "model")
    _ensure_registered_model(store)
    tags = store._key_tags() | {"generation": str(generation), "member": member, "role": role}
    if win is not None:
        tags["win_vs_tactical"] = f"{win:.4f}"
    if fit is not None and member in fit.ratings:
        tags |= _elo_tags(fit, member)
    return store.client.create_model_version(
        store.tracking.model_name,
        source=f"{run.info.artifact_uri}/model",
        run_id=run.info.run_id,
        tags=tags,
        description=model_card(store, generation, fit, win, role),
    )


def _elo_tags(fit: EloFit, member: str) -> dict[str, str]:
    lo, hi = fit.ci95[member]
    return {"elo": elo(fit.ratings[member]), "elo_ci95": f"[{elo(lo)}, {elo(hi)}]"}


def update_ratings(store: MLflowStore, fit: EloFit, generation: int) -> None:
    """Write the refit's Elo to every version's tags and card, and the ladder as metrics."""
    results = store.results()
    for member, v in member_versions(store).items():
        if member not in fit.ratings:
            continue
        for k, val in _elo_tags(fit, member).items():
            if v.tags.get(k) != val:
                store.client.set_model_version_tag(v.name, v.version, k, val)
        g, role = generation_of(member), role_of(member)
        assert g is not None and role is not None  # a version's member names a snapshot
        card = model_card(store, g, fit, _win_vs_tactical(results, member), role)
        if v.description != card:
            store.client.update_model_version(v.name, v.version, description=card)
    # the ladder, once per step: a rerun must not add a second point at the same step
    history = store.client.get_metric_history(store.league_run_id, "elo/" + snapshot_name(generation))
    if not any(m.step == generation for m in history):
        now = int(time.time() * 1000)
        # one decimal, as everywhere an Elo is shown (`c4core.figures.elo`)
        ladder = sorted(fit.ratings.items())
        metrics = [Metric(f"elo/{m}", float(elo(r)), now, generation) for m, r in ladder]
        store.client.log_batch(store.league_run_id, metrics=metrics)


def champion_history(store: MLflowStore) -> list[dict[str, Any]]:
    """The league's audit trail of champions, oldest first."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = store.client.download_artifacts(store.league_run_id, CHAMPION_TABLE, tmp)
            table = json.loads(Path(path).read_text())
    except (MlflowException, OSError, ValueError):
        return []
    return [dict(zip(table["columns"], row, strict=True)) for row in table.get("data", [])]


def current_champion(client: MlflowClient, model_name: str = MODEL_NAME) -> ModelVersion | None:
    try:
        return client.get_model_version_by_alias(model_name, CHAMPION_ALIAS)
    except MlflowException:
        return None


def league_alias(league: str) -> str:
    """The alias of league `league`'s own champion: ``champion-<league>``, a ``.`` in the name
    written ``_`` (an alias holds only letters, digits, ``_`` and ``-``)."""
    return f"{CHAMPION_ALIAS}-{league.replace('.', '_')}"


def league_champion(store: MLflowStore) -> ModelVersion | None:
    """The version that holds this league's alias."""
    try:
        return store.client.get_model_version_by_alias(
            store.tracking.model_name, league_alias(store.config.name)
        )
    except MlflowException:
        return None


def same_version(a: ModelVersion, b: ModelVersion) -> bool:
    """Whether two looked-up versions are one (MLflow returns the number as int or str)."""
    return (a.name, str(a.version)) == (b.name, str(b.version))


def _same_league(version: ModelVersion, store: MLflowStore) -> bool:
    return (version.tags.get("league"), version.tags.get("config_hash")) == (
        store.config.name,
        store.config_hash,
    )


def gating_match(store: MLflowStore, challenger: ModelVersion, holder: ModelVersion) -> MatchResult | None:
    """The gating match (played once, then read from its record) of `challenger`, this league's
    champion, against `holder`, another league's registry-wide champion: `gating_games` games
    from `challenger`'s side, greedy nets, colours alternated, random openings. None when the
    two play different boards, so no match can compare them."""
    from c4core.match import play_match

    recorded = store.gating_record(str(challenger.version), str(holder.version))
    if recorded is not None:
        return recorded
    mine = store.snapshot(int(challenger.tags["generation"]))
    theirs = _download_version(store.client, holder)
    if mine is None or mine.game != theirs.game:
        return None
    c = store.config
    result = play_match(
        mine.player(f"{challenger.name}/{challenger.version}"),
        theirs.player(f"{holder.name}/{holder.version}"),
        c.gating_games,
        seed=zlib.crc32(f"gating:{challenger.version}:{holder.version}:{c.seed}".encode()),
        opening_plies=c.opening_plies,
        game=c.board,
    )
    store.record_gating(result, str(challenger.version), str(holder.version))
    return result


TITLE_TTL = 60.0
"""Seconds the holder of a title's lease may go without a heartbeat before another league may
take the lease over (its process died mid-promotion)."""
TITLE_WAIT = 900.0
"""Seconds a promotion waits for the title's lease while other leagues play their gating
matches, before it fails with `LeaseHeld`."""


def title_lease(model_name: str) -> str:
    """The lease key of a registered model's title (alias ``champion`` and stage Production)."""
    return f"title {model_name}"


def promote_champion(store: MLflowStore, member: str, fit: EloFit, generation: int) -> ModelVersion:
    """Make `member` this league's champion (alias `league_alias`), and the registry-wide
    champion (alias ``champion``, stage Production) when there is none, when the holder is of
    this league, or when `member` wins the gating match against the holder (`gating_match`,
    a score of at least `gating_score`). Every title change and every gating match gets a row
    in the league's champion history; the gating result goes into both versions' tags.
    The holder is read, challenged and replaced under the model's title lease (`title_lease`),
    so the title moves only from the holder that `member` beat. Returns `member`'s version. A
    no-op when nothing changed."""
    generation_held = generation_of(member)
    if generation_held is None or role_of(member) != MAIN:
        raise ValueError(f"only main-agent snapshots can be champion, not {member!r}")
    version = find_version(store, generation_held)
    if version is None:
        raise ValueError(f"{member} of league {store.config.name!r} is not registered")
    client, name = store.client, store.tracking.model_name
    held = league_champion(store)
    if held is not None and not _same_league(held, store):
        raise ValueError(
            f"alias {league_alias(store.config.name)!r} belongs to league {held.tags.get('league')!r}: "
            "league names that differ only in '.' and '_' share one alias; rename one"
        )
    if held is None or not same_version(held, version):
        client.set_registered_model_alias(name, league_alias(store.config.name), version.version)
    # the holder is read, challenged and replaced under the title's lease, so that no other
    # league moves the title in between: a challenger takes it only from the holder it beat
    owner = process_owner(f"league {store.config.name} gen{generation}")
    with Lease(client, title_lease(name), owner, TITLE_TTL).acquire(wait=TITLE_WAIT) as title:
        holder = current_champion(client, name)
        gating = None
        if holder is None or same_version(holder, version) or _same_league(holder, store):
            takes = True
        else:
            gating = gating_match(store, version, holder)
            takes = gating is not None and gating.total.score >= store.config.gating_score
            _tag_gating(client, version, holder, gating, takes)
        if holder is None or not same_version(holder, version):
            # the audit row first: a rerun after a crash finds it and only finishes the move
            _log_history(store, generation, member, version, fit, holder, takes, gating)
        if takes:
            title.check()
            latest = client.get_model_version(name, version.version)  # its Elo tags as refitted
            _take_title(client, name, latest, holder, store.config.board.title)
    client.set_tag(store.league_run_id, "champion", f"models:/{name}/{version.version} ({member})")
    return client.get_model_version(name, version.version)


def _download_version(client: MlflowClient, version: ModelVersion) -> Checkpoint:
    """The checkpoint of a registered version (any league's), from its source run."""
    run = client.get_run(version.run_id)
    return _download_checkpoint(client, run, _run_member(run))


def _tag_gating(
    client: MlflowClient,
    challenger: ModelVersion,
    holder: ModelVersion,
    gating: MatchResult | None,
    won: bool,
) -> None:
    score = f"{gating.total.score:.4f}" if gating is not None else "none: the two play different boards"
    tags = {
        challenger.version: {
            "gating_opponent": holder.version,
            "gating_score": score,
            "gating_won": str(won).lower(),
        },
        holder.version: {
            "gating_last_challenger": str(challenger.version),
            "gating_last_challenger_score": score,
        },
    }
    for v, kv in tags.items():
        for k, val in kv.items():
            client.set_model_version_tag(challenger.name, v, k, val)


def _log_history(
    store: MLflowStore,
    generation: int,
    member: str,
    version: ModelVersion,
    fit: EloFit,
    holder: ModelVersion | None,
    takes: bool,
    gating: MatchResult | None,
) -> None:
    """A row in the league's champion history: `version` took the title from `holder` (with or
    without a gating match), or challenged it and lost. The same row twice is written once."""
    row = {
        "time": _now(),
        "after_generation": generation,
        "member": member,
        "version": int(version.version),
        "elo": round(fit.ratings[member], 1),
        "previous_version": int(holder.version) if holder is not None else None,
        "title": takes,
        "gating_score": round(gating.total.score, 4) if gating is not None else None,
    }
    history = champion_history(store)
    same = ("version", "previous_version", "title")
    if history and all(history[-1].get(k) == row[k] for k in same):
        return
    # the whole table rewritten at one path (MLflow's table layout): old or new, never half
    rows = history + [row]
    table = {"columns": list(row), "data": [[r.get(c) for c in row] for r in rows]}
    store.client.log_dict(store.league_run_id, table, CHAMPION_TABLE)


def _take_title(
    client: MlflowClient, name: str, version: ModelVersion, holder: ModelVersion | None, title: str
) -> None:
    """Move the title to `version`: stage, alias, the since/until tags, and the registered
    model's description, whose first line names the holder. A rerun finishes a half-done move."""
    description = model_description(title, version)
    if (
        holder is not None
        and same_version(holder, version)
        and version.current_stage == "Production"
        and client.get_registered_model(name).description == description
    ):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # stages are deprecated, but users serve them
        client.transition_model_version_stage(name, version.version, "Production", True)
    client.set_registered_model_alias(name, CHAMPION_ALIAS, version.version)
    when = _now()
    if holder is not None and not same_version(holder, version):
        client.set_model_version_tag(name, holder.version, "champion_until", when)
    client.set_model_version_tag(name, version.version, "champion_since", when)
    client.update_registered_model(name, description=description)


SUITE_TAGS = {
    "suite/keeps_result": "suite_keeps_result",
    "suite/best_move": "suite_best_move",
    "suite/counted": "suite_counted",
}
"""The suite metrics that also become version tags, and their tag keys."""


def log_suite(store: MLflowStore, generation: int, suite: str | Path) -> dict[str, float] | None:
    """Score snapshot `generation`'s raw network (greedy `NetPlayer`, no search) on the suite
    file `suite`, log the ``suite/*`` metrics on its generation run and the headline numbers as
    tags of its version (rates to 4 decimals, the count as a whole number, and ``suite_file``).

    Returns the metrics, or None when nothing was done: the version is not registered, or it
    already has the tags. The tags come last, so after a crash in between, a rerun scores again
    (greedy: the same numbers) and adds the tags without logging the metrics twice. A suite that
    does not fit the league's board is a `ValueError`."""
    import math

    from c4core.suite import evaluate_suite, load_suite

    version = find_version(store, generation)
    if version is None or all(t in version.tags for t in SUITE_TAGS.values()):
        return None
    run, ckpt = store.generation_run(generation), store.snapshot(generation)
    assert run is not None and ckpt is not None  # a registered version has a finished run
    positions = load_suite(suite, ckpt.geometry)
    player = ckpt.player(snapshot_name(generation))
    metrics = evaluate_suite(player, positions).metrics()
    logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: the cached run predates it
    if "suite/keeps_result" not in logged and "suite/counted" not in logged:
        now = int(time.time() * 1000)
        batch = [Metric(k, v, now, 0) for k, v in metrics.items() if not math.isnan(v)]  # empty buckets
        store.client.log_batch(run.info.run_id, metrics=batch)
    tags = {
        "suite_keeps_result": f"{metrics['suite/keeps_result']:.4f}",
        "suite_best_move": f"{metrics['suite/best_move']:.4f}",
        "suite_file": Path(suite).name,
        "suite_counted": str(int(metrics["suite/counted"])),  # last: its presence marks the step done
    }
    for k, v in tags.items():
        store.client.set_model_version_tag(version.name, version.version, k, v)
    return metrics


DOTS_SUITE_TAGS = {
    "suite/keeps_value": "suite_keeps_value",
    "suite/keeps_outcome": "suite_keeps_outcome",
    "suite/counted": "suite_counted",
}
"""The Dots and Boxes suite metrics that also become version tags, and their tag keys."""


def log_dots_suite(store: MLflowStore, generation: int) -> dict[str, float] | None:
    """In a Dots and Boxes league on a board the exact solver takes (`c4core.dots_suite.DRAWN`),
    score the main agent's snapshot of `generation` (greedy, no search) on the league's suite,
    made from its seed, and log it as `log_suite` logs a Connect Four suite: the metrics on its
    generation run, then the tags (`DOTS_SUITE_TAGS`, the count last). None when nothing was done."""
    from c4core.dots_suite import DRAWN, make_suite, score_suite
    from c4core.games import DotsAndBoxes

    game = store.config.board
    if not isinstance(game, DotsAndBoxes) or (game.boxes.rows, game.boxes.cols) not in DRAWN:
        return None
    version = find_version(store, generation)
    if version is None or all(t in version.tags for t in DOTS_SUITE_TAGS.values()):
        return None
    run, ckpt = store.generation_run(generation), store.snapshot(generation)
    assert run is not None and ckpt is not None  # a registered version has a finished run
    items = make_suite(game, seed=store.config.seed)
    metrics = score_suite(ckpt.player(snapshot_name(generation)), game, items).metrics()
    logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: the cached run predates it
    if "suite/keeps_value" not in logged:
        now = int(time.time() * 1000)
        store.client.log_batch(run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()])
    for key in ("suite/keeps_value", "suite/keeps_outcome", "suite/counted"):
        value = metrics[key]
        text = str(int(value)) if key == "suite/counted" else f"{value:.4f}"
        store.client.set_model_version_tag(version.name, version.version, DOTS_SUITE_TAGS[key], text)
    return metrics


NASH_CONV = "nash_conv"
"""Version tag and generation-run metric: the snapshot's exact NashConv (`log_nash_conv`); on
the league run, a tag saying why none is computed, where the board is too large."""
NASH_CONV_SAMPLING = "nash_conv/sampling"
"""Generation-run metric: the snapshot's exact NashConv as it plays in training games, sampling
(a network at its temperature, a table ε-greedy), beside `NASH_CONV`, greedy as in its matches."""
LEAGUE_NASH_CONV = "league/nash_conv"
"""League-run metric (step = generation): the NashConv of that generation's main-agent snapshot."""


def log_nash_conv(store: MLflowStore, generation: int) -> dict[str, dict[str, float]]:
    """On a game small enough to enumerate (`LeagueConfig.enumerable`), the exact NashConv
    of every role's snapshot of `generation` as it plays its league matches (greedy;
    `c4core.exploitability`), and as it plays training games (`NASH_CONV_SAMPLING`): the
    ``nash_conv*`` metrics on its generation run, `NASH_CONV` on
    its version (to 4 decimals) and, for the main agent, `LEAGUE_NASH_CONV` on the league run.
    Returns what it computed, by member; a snapshot already tagged is skipped. The tag comes
    last, so a rerun after a crash in between computes again (the same numbers) without
    logging twice. On a larger game the league run's `NASH_CONV` tag says why there is none."""
    from c4core.exploitability import nash_conv, policy_of

    config = store.config
    if not config.enumerable:
        reason = f"not computed: {config.board.title} lasts over {TABULAR_MOVES} moves, too many positions"
        store.client.set_tag(store.league_run_id, NASH_CONV, reason)
        return {}
    done = {}
    for role in config.roles_at(generation):
        version, run = find_version(store, generation, role), store.generation_run(generation, role)
        if version is None or run is None or NASH_CONV in version.tags:
            continue
        member = snapshot_name(generation, role)
        ckpt = store.snapshot(generation, role)
        assert ckpt is not None  # a finished run holds its snapshot
        result = nash_conv(config.board, policy_of(ckpt.player(member), config.board))
        # and as it plays in other members' training games: sampling, at its play temperature
        sampling = nash_conv(config.board, policy_of(ckpt.player(member, greedy=False), config.board))
        metrics = result.metrics() | {NASH_CONV_SAMPLING: sampling.value}
        now = int(time.time() * 1000)
        if not metrics.keys() & store.client.get_run(run.info.run_id).data.metrics.keys():
            store.client.log_batch(
                run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()]
            )
        if role == MAIN:
            logged = {m.step for m in store.client.get_metric_history(store.league_run_id, LEAGUE_NASH_CONV)}
            if generation not in logged:
                store.client.log_metric(store.league_run_id, LEAGUE_NASH_CONV, result.value, now, generation)
        store.client.set_model_version_tag(version.name, version.version, NASH_CONV, f"{result.value:.4f}")
        done[member] = metrics
    return done


def _try_log_suite(store: MLflowStore, generation: int, suite: str | Path) -> None:
    """`log_suite`, but a suite that cannot be read or does not fit the board only warns: the
    scores are a view of the snapshot, and registering and promoting it must go on without them."""
    try:
        log_suite(store, generation, suite)
    except ValueError as e:
        warnings.warn(f"{snapshot_name(generation)} was not scored on the suite: {e}", stacklevel=3)


def after_generation(
    store: MLflowStore, report: GenerationReport, suite: str | Path | None = None
) -> ModelVersion:
    """Everything MLflow needs once a generation has played: register its snapshot, score it
    on `suite` when one is given (`log_suite`), refit Elo into every version's tags, log the
    ladder, promote the champion, mark it finalized. A finalized generation is only scored on
    `suite` if it has not been yet. Returns the league's champion version (`promote_champion`),
    which need not hold the registry-wide title."""
    g = report.generation
    run = store.generation_run(g)
    assert run is not None  # run_generation stored it
    if run.data.tags.get(FINALIZED) != "true":
        registered = member_versions(store)
        for earlier in range(1, g + 1):
            for role in store.config.roles_at(earlier):
                member = snapshot_name(earlier, role)
                if member not in registered and store.generation_run(earlier, role) is not None:
                    register_snapshot(store, earlier, report.fit, role)
        if suite is not None:
            _try_log_suite(store, g, suite)  # before the report below, so its curve has this point
        log_dots_suite(store, g)
        update_ratings(store, report.fit, g)
        log_exploitability(store, g)
        log_nash_conv(store, g)
        promote_champion(store, report.champion, report.fit, g)
        store.client.set_tag(run.info.run_id, FINALIZED, "true")
        run.data.tags[FINALIZED] = "true"  # the cached copy too
        log_league_report(store)  # live: redrawn once per newly finalized generation
    elif suite is not None:
        _try_log_suite(store, g, suite)  # a league finalized before it had a suite: the final report shows it
    champ = league_champion(store)
    assert champ is not None  # promote_champion set it
    return champ


EXPLOITABILITY = "league/exploitability"
"""League-run metric (step = generation): that generation's main exploiter's score against the
champion it trained on (`c4core.league.exploitability`)."""
TO_BEAT = "league/exploiter_iterations_to_55"
"""League-run metric (step = the generation a champion first faced the main exploiter): the
training iterations the main exploiter needed to beat that champion in at least 55% of its
training games (`c4core.league.iterations_to_beat`); logged once it has."""


def log_exploitability(store: MLflowStore, generation: int) -> None:
    """Log `EXPLOITABILITY` for `generation` and any `TO_BEAT` that its exploiter's training
    settled, each once per step (a rerun adds nothing)."""
    if "main-exploiter" not in store.config.roles_at(generation):
        return
    results = store.results()
    points: dict[str, dict[int, float]] = {}
    score = exploitability(results, generation)
    if score is not None:
        points[EXPLOITABILITY] = {generation: score}
    # only the current champion's count can change now (earlier ones were logged by earlier
    # generations), so only the generations since it was first trained on are fetched
    target = champion_after(results, generation - 1)
    first = generation
    while first > 2 and champion_after(results, first - 2) == target:
        first -= 1
    metrics = {
        g: _run_metrics(store, store.generation_run(g, "main-exploiter"))
        for g in range(first, generation + 1)
    }
    current = iterations_to_beat(results, store.config, metrics, generation)[-1:]
    points[TO_BEAT] = {
        row["from_generation"]: row["iterations"] for row in current if row["iterations"] is not None
    }
    now = int(time.time() * 1000)
    batch = []
    for key, by_step in points.items():
        logged = {m.step for m in store.client.get_metric_history(store.league_run_id, key)}
        batch += [Metric(key, float(v), now, step) for step, v in by_step.items() if step not in logged]
    if batch:
        store.client.log_batch(store.league_run_id, metrics=batch)


def _run_metrics(store: MLflowStore, run: Run | None) -> list[dict[str, float]]:
    """A generation run's per-iteration metrics that `c4core.report` plots or the league reads
    (``vs/*``), one dict per step."""
    if run is None:
        return []
    steps: dict[int, dict[str, float]] = {}
    for key in sorted(k for k in run.data.metrics if is_plotted(k) or k.startswith("vs/")):
        for m in store.client.get_metric_history(run.info.run_id, key):
            steps.setdefault(m.step, {})[key] = m.value
    return [steps[s] for s in sorted(steps)]


# ---- the league report ---------------------------------------------------------------------------
def open_league(tracking: Tracking, league: str, config_hash: str | None = None) -> MLflowStore:
    """The store of a league in MLflow, found by name alone (the newest config, unless one is given).

    The config comes from a finished snapshot's checkpoint, so nothing but MLflow is needed.
    Raises `ValueError` when there is no such league or it has no finished generation yet.
    """
    for what, value in (("league", league), ("config hash", config_hash or "x")):
        if not value or not all(ch.isalnum() or ch in "-_." for ch in value):
            raise ValueError(f"{what} {value!r} must be letters, digits, '-', '_' or '.'")
    client = tracking.client()
    exp = client.get_experiment_by_name(tracking.experiment)
    if exp is None:
        raise ValueError(f"no experiment {tracking.experiment!r} at {tracking.tracking_uri}")
    key = {"league": league} | ({"config_hash": config_hash} if config_hash else {})
    runs = search_runs(client, exp.experiment_id, "league", key)
    if not runs:
        raise ValueError(f"no league {league!r} in {tracking.tracking_uri}")
    chash = runs[-1].data.tags["config_hash"]  # oldest first: the last is the newest
    key = {"league": league, "config_hash": chash, COMPLETE: "true"}
    gens = search_runs(client, exp.experiment_id, "generation", key)
    if not gens:
        raise ValueError(f"league {league!r} has no finished generation yet")
    ckpt = _download_checkpoint(client, gens[0], _run_member(gens[0]))
    config = LeagueConfig.from_dict(ckpt.train_config)
    if config.training_hash() != chash:
        raise ValueError(f"league {league!r}: the snapshot's config does not hash to {chash}")
    return MLflowStore(tracking, config)


def read_league(store: MLflowStore) -> LeagueData:
    """A league kept in MLflow, as the report's data: match records from the match runs, the
    training metrics and ``suite/*`` scores from the generation runs, the store for snapshots."""
    metrics: dict[int, list[dict[str, float]]] = {}
    suite: dict[int, dict[str, float]] = {}
    exact: dict[int, float] = {}
    g = 1
    while (run := store.generation_run(g)) is not None:  # generations run in order
        metrics[g] = _run_metrics(store, run)
        logged = store.client.get_run(run.info.run_id).data.metrics  # fresh: suite and NashConv come late
        found = {k: v for k, v in logged.items() if k.startswith("suite/")}
        if found:
            suite[g] = found
        if NASH_CONV in logged:
            exact[g] = logged[NASH_CONV]
        g += 1
    role_metrics = {
        snapshot_name(h, role): _run_metrics(store, store.generation_run(h, role))
        for h in range(2, g + 1)  # an exploiter may finish before its generation's main agent
        for role in store.config.roles_at(h)
        if role != MAIN and store.generation_run(h, role) is not None
    }
    source = f"{store.tracking.tracking_uri}, experiment {store.tracking.experiment}"
    return LeagueData(
        store.config.name,
        store.config,
        store.results(),
        metrics,
        suite,
        source,
        store,
        role_metrics=role_metrics,
        nash_conv=exact,
    )


def log_report(store: MLflowStore, version: ModelVersion | None = None, seed: int = 0) -> ReportFiles:
    """Draw the league's report and log it to the league run's ``report/`` artifacts (overwriting
    the last one, so the run always shows the latest). With `version` (the champion's), also log
    it to that version's source run and link it from the version's tag ``report`` and its
    description. The returned paths live in a temporary folder that is gone once this returns."""
    client = store.client
    with tempfile.TemporaryDirectory() as tmp:
        files = build_report(read_league(store), Path(tmp) / REPORT_DIR, seed=seed)
        client.log_artifacts(store.league_run_id, str(files.folder), REPORT_DIR)
        client.set_tag(store.league_run_id, REPORT_TAG, f"{REPORT_DIR}/report.html")
        if version is not None and version.run_id:
            client.log_artifacts(version.run_id, str(files.folder), REPORT_DIR)
            uri = f"{client.get_run(version.run_id).info.artifact_uri}/{REPORT_DIR}/report.html"
            client.set_model_version_tag(version.name, version.version, VERSION_TAG, uri)
            # a link into the MLflow UI (it resolves against the page showing the description, so
            # it opens on any tracking server; the query picks the model-training view), and the
            # artifact URI for tools
            run_page = f"#/experiments/{store.experiment_id}/runs/{version.run_id}"
            page = f"{run_page}/artifacts/{REPORT_DIR}/report.html?workflowType=machine_learning"
            line = f"League report: [report.html]({page}) (`{uri}`)"
            desc = version.description or ""
            if line not in desc:
                kept = [ln for ln in desc.splitlines() if not ln.startswith("League report: ")]
                while kept and not kept[-1].strip():
                    kept.pop()
                client.update_model_version(
                    version.name, version.version, "\n".join([*kept, "", line]).strip()
                )
    return files


def log_league_report(store: MLflowStore, champion: ModelVersion | None = None) -> None:
    """`log_report` onto the league run, and onto `champion`'s version when given. The report is
    a view of the records: if it fails to draw, this warns and the league goes on."""
    try:
        log_report(store, champion)
    except Exception as e:
        warnings.warn(f"the league report was not logged: {type(e).__name__}: {e}", stacklevel=2)


@dataclass(frozen=True)
class TrackedReport:
    """A generation's report plus the champion's registry version after it."""

    report: GenerationReport
    champion_version: ModelVersion = field(compare=False)


def run_generation_tracked(
    store: MLflowStore,
    config: LeagueConfig,
    generation: int,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
    suite: str | Path | None = None,
) -> TrackedReport:
    """`c4core.league.run_generation`, with metrics streamed to the generation's run and the
    registry steps after it (scoring the snapshot on `suite`, a suite file, when given). Safe to
    rerun: finished work is reused, never redone."""

    report = run_generation(store, config, generation, on_iteration)  # it logs each iteration
    return TrackedReport(report, after_generation(store, report, suite))


def run_league_tracked(
    store: MLflowStore,
    config: LeagueConfig,
    on_generation: Callable[[GenerationReport], None] | None = None,
    on_iteration: Callable[[str, int, dict[str, float]], None] | None = None,
    suite: str | Path | None = None,
) -> TrackedReport:
    """Every generation in order on MLflow, resuming whatever it already holds; each snapshot
    is scored on `suite` (a suite file) when one is given."""
    store.set_league_status("RUNNING")
    tracked = None
    for g in range(1, config.generations + 1):
        tracked = run_generation_tracked(store, config, g, on_iteration, suite)
        if on_generation is not None:
            on_generation(tracked.report)
    assert tracked is not None
    log_league_report(store, tracked.champion_version)  # the final report, on the champion too
    store.set_league_status("FINISHED")
    return tracked


# ---- registry URIs as players --------------------------------------------------------------------
def resolve_version(client: MlflowClient, uri: str) -> ModelVersion:
    """The version a ``models:/name@alias``, ``models:/name/<version>`` or
    ``models:/name/<stage>`` URI names; `ValueError` when it names none."""
    if not uri.startswith("models:/"):
        raise ValueError(f"{uri!r} is not a registry URI (models:/name@alias or models:/name/7)")
    rest = uri[len("models:/") :].strip("/")
    try:
        if "@" in rest:
            name, alias = rest.split("@", 1)
            return client.get_model_version_by_alias(name, alias)
        name, _, ref = rest.partition("/")
        if not name or not ref:
            raise ValueError(f"{uri!r} names no version: use models:/name@alias or models:/name/7")
        if ref.isdigit():
            return client.get_model_version(name, ref)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            found = client.get_latest_versions(name, [ref])
        if not found:
            raise ValueError(f"model {name!r} has no version in stage {ref!r}")
        return found[0]
    except MlflowException as e:
        raise ValueError(f"cannot resolve {uri}: {e.message}") from None


def load_checkpoint(tracking: Tracking, uri: str) -> tuple[Checkpoint, ModelVersion]:
    """The play-only checkpoint of the version a registry URI names."""
    import mlflow.artifacts

    client = tracking.client()
    version = resolve_version(client, uri)
    source = client.get_model_version_download_uri(version.name, version.version)
    with tempfile.TemporaryDirectory() as tmp:
        path = mlflow.artifacts.download_artifacts(
            artifact_uri=f"{source.rstrip('/')}/artifacts/weights.pt",
            dst_path=tmp,
            tracking_uri=tracking.tracking_uri,
        )
        return Checkpoint.load(path), version
