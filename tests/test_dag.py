"""The Airflow DAG (``dags/connect4_league.py``), its links plugin and `c4core.steps`.

Airflow reads its configuration once, on first import, so this module points ``AIRFLOW_HOME``
at a fresh temporary folder before anything imports Airflow (nothing else in the suite does),
and every MLflow store is a temporary SQLite file: the tests never touch ``~/airflow``, the
repo's ``.airflow/`` or ``mlruns/``.

- Parsing runs in a subprocess, so the check that the DAG file imports neither torch nor mlflow
  (and its parse time) is not muddied by what the test process has already imported.
- One ``dag.test()`` run of a 2-generation smoke league is shared by the in-process tests.
- The pod test builds the trainer's pod with ``build_pod_request_obj(dry_run=True)``: no cluster.
- Bad params are tried through ``airflow dags test -c``; the REST API's refusal, and leagues
  run by a real scheduler, are test_ui.py's, on `make up`'s stack.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from c4core.config import PRECISIONS, PROFILES, league_config
from c4core.entry import native_bfloat16
from c4core.games import ConnectFour
from c4core.games.connect4.rules import Geometry

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DAG_ID = "connect4_league"
STEPS = ("pick_opponents", "train_generation", "play_match", "fit_elo", "register_and_promote")
# a smoke league with one exploiter: two learners from generation 2 on
SMOKE_CONF = {"league": "dagtest", "profile": "smoke", "generations": 2, "roles": ["main", "main-exploiter"]}


def airflow_env(home: Path) -> dict[str, str]:
    """The environment of an Airflow with its own home and SQLite DB, examples off."""
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "MLFLOW_CONFIGURE_LOGGING": "false",
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
        "C4_TORCH_THREADS": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }


# before any `import airflow` in this process (see the module docstring)
HOME = Path(tempfile.mkdtemp(prefix="c4-airflow-"))
atexit.register(shutil.rmtree, HOME, ignore_errors=True)
os.environ.update(airflow_env(HOME))
os.environ.pop("C4_EXECUTOR", None)


def run(
    cmd: list[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    full = os.environ | (env or {})
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def migrated() -> Path:
    """This module's Airflow metadata DB, migrated (SQLite under the temporary home)."""
    proc = run([str(BIN / "airflow"), "db", "migrate"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return HOME


def load_dag(executor: str = "in-process") -> Any:
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as mp:
        if executor == "kubernetes":
            mp.setenv("C4_EXECUTOR", "kubernetes")
        bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag.dags[DAG_ID]


# ---- parsing -------------------------------------------------------------------------------------
PARSE = """
import json, sys, time
from airflow.dag_processing.dagbag import DagBag
cpu = time.process_time()
bag = DagBag(dag_folder=sys.argv[1])
cpu = time.process_time() - cpu
dag = bag.dags.get("connect4_league")
print(json.dumps({
    "errors": {k: v[-500:] for k, v in bag.import_errors.items()},
    "seconds": max(s.duration.total_seconds() for s in bag.dagbag_stats),
    "cpu_seconds": cpu,
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "mlflow", "kubernetes"}),
    "tasks": len(dag.tasks) if dag else 0,
}))
"""


@pytest.mark.parametrize("executor", ["in-process", "kubernetes"])
def test_the_dagbag_loads_without_errors_fast_and_without_heavy_imports(executor: str) -> None:
    proc = run([sys.executable, "-c", PARSE, str(REPO / "dags")], {"C4_EXECUTOR": executor})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["errors"] == {}
    # in kubernetes mode a task builds the trainer pods' arguments (a mapped task expands only
    # a task's return value)
    assert out["tasks"] == 20 * (len(STEPS) + (executor == "kubernetes"))
    assert "torch" not in out["heavy"] and "mlflow" not in out["heavy"]
    # the budget is on CPU time: Airflow's own stat is wall time, which a busy shared machine
    # (and this test's `nice`) can stretch many times over
    if executor == "in-process":
        assert "kubernetes" not in out["heavy"]  # the provider loads only for pods
        assert out["cpu_seconds"] < 1.0, out
    else:
        # the first import of the Kubernetes provider alone takes about a second; the budget is
        # checked in-process below, with the provider loaded as in a long-lived dag-processor
        assert out["cpu_seconds"] < 5.0, out


def test_kubernetes_parse_is_fast_once_the_provider_is_loaded() -> None:
    import airflow.providers.cncf.kubernetes.operators.pod  # noqa: F401  (what a dag-processor holds)
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("C4_EXECUTOR", "kubernetes")
        cpu = time.process_time()
        bag = DagBag(dag_folder=str(REPO / "dags"))
        cpu = time.process_time() - cpu
    assert bag.import_errors == {}
    assert cpu < 1.0


def test_each_generation_is_a_task_group_of_five_steps_in_order() -> None:
    dag = load_dag()
    edges = [(a, b) for a, b in zip(STEPS, STEPS[1:], strict=False)]
    edges += [("pick_opponents", "play_match"), ("train_generation", "register_and_promote")]
    for g in (1, 2, 20):
        for before, after in edges:
            downstream = dag.get_task(f"generation_{g}.{before}").downstream_task_ids
            assert f"generation_{g}.{after}" in downstream, (g, before, after)
        if g > 1:  # generations run one after another
            prev = dag.get_task(f"generation_{g - 1}.register_and_promote")
            assert prev.downstream_task_ids == {f"generation_{g}.pick_opponents"}
    assert {t.task_group.group_id for t in dag.tasks} == {f"generation_{g}" for g in range(1, 21)}
    match = dag.get_task("generation_1.play_match")
    assert type(match).__name__.endswith("MappedOperator")  # dynamic task mapping over the pairs
    assert dag.default_args["retries"] >= 1
    assert all(t.retries >= 1 for t in dag.tasks)
    assert dag.max_active_runs > 1 and dag.schedule is None and not dag.catchup  # leagues side by side


def test_params_make_a_trigger_form_whose_bounds_reject_bad_values() -> None:
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    dag = load_dag()
    expected = {
        "league",
        "generations",
        "iterations",
        "games",
        "match_games",
        "profile",
        "executor",
        "roles",
        "precision",
        "game",
        "learner",
        "value_target",
        "recipe",
    }
    assert set(dag.params) == expected
    for name in expected:
        schema = dag.params.get_param(name).schema
        assert schema.get("title") and schema.get("description_md"), name
    assert dag.params.get_param("profile").schema["enum"] == list(PROFILES)
    assert dag.params.get_param("executor").schema["enum"] == ["in-process"]
    assert dag.params.get_param("precision").schema["enum"] == ["auto", *PRECISIONS]
    assert dag.params.get_param("game").schema["enum"] == [
        "connect4",
        "connect3-4x4",
        "dots-and-boxes-3x3",
        "dots-and-boxes-4x4",
    ]
    assert dag.params.get_param("game").value == "connect4"
    assert dag.params.get_param("learner").schema["enum"] == ["ppo", "q-learning", "sarsa"]
    assert dag.params.get_param("learner").value == "ppo"
    assert dag.params.get_param("value_target").schema["enum"] == ["outcome", "margin"]
    assert dag.params.get_param("value_target").value == "outcome"
    assert dag.params.get_param("recipe").value == {}
    good = {
        "league": "a-b.c_1",
        "generations": 20,
        "iterations": 3,
        "games": 64,
        "match_games": 2,
        "roles": ["main", "main-exploiter"],
        "precision": "bfloat16",
        "game": "connect3-4x4",
        "learner": "sarsa",
        "value_target": "margin",
        "recipe": {"alphazero.solve_from": 1},
    }
    bad = {
        "recipe": ["alphazero.solve_from", 1],
        "value_target": "score",
        "learner": "dqn",
        "game": "dots-and-boxes-9x9",
        "precision": "half",
        "roles": ["main", "coach"],
        "generations": 21,
        "iterations": 0,
        "games": 33,
        "match_games": -2,
        "league": "a b",
        "profile": "tpu",
    }
    for key, value in list(good.items()) + list(bad.items()):
        params = ParamsDict({k: dag.params.get_param(k) for k in dag.params})
        if key in good and good[key] == value:
            params[key] = value
            continue
        with pytest.raises(ParamValidationError, match=f"Invalid input for param {key}"):
            params[key] = value


# ---- the trainer pod -----------------------------------------------------------------------------
def role_pods(dag: Any, generation: int, roles: tuple[str, ...]) -> list[Any]:
    """The trainer pods generation `generation`'s mapped KubernetesPodOperator starts, one per
    role, built by the provider as a dry run from the arguments `trainer_commands` returns."""
    module = sys.modules[dag.get_task(f"generation_{generation}.trainer_commands").python_callable.__module__]
    spec = {"league": "k", "profile": "smoke", "roles": list(roles)}
    requests = [
        json.dumps({"spec": spec, "generation": generation, "role": r, "opponents": ["gen1"]}) for r in roles
    ]
    tags = {"airflow.run_id": "manual__1", "airflow.task_id": f"generation_{generation}.train_generation"}
    mapped = dag.get_task(f"generation_{generation}.train_generation")
    return [
        mapped.unmap({"arguments": a}).build_pod_request_obj(dry_run=True)
        for a in module.pod_arguments(requests, tags)
    ]


def test_train_generation_is_a_gpu_pod_per_role_with_secrets_and_an_xcom_sidecar() -> None:
    dag = load_dag("kubernetes")
    op = dag.get_task("generation_2.train_generation")
    assert (
        type(op).__name__.endswith("MappedOperator") and op.operator_class.__name__ == "KubernetesPodOperator"
    )
    assert op.upstream_task_ids == {"generation_2.trainer_commands"}
    assert dag.get_task("generation_2.trainer_commands").upstream_task_ids == {"generation_2.pick_opponents"}
    assert "generation_2.play_match" in op.downstream_task_ids
    roles = ("main", "main-exploiter", "league-exploiter")
    pods = role_pods(dag, 2, roles)
    assert len(pods) == len(roles)  # one pod per role, each asking for a GPU of its own
    trained = [json.loads(p.spec.containers[0].args[2])["role"] for p in pods]
    assert trained == list(roles)
    assert all(p.spec.containers[0].resources.limits["nvidia.com/gpu"] == "1" for p in pods)
    pod = pods[0]
    base = next(c for c in pod.spec.containers if c.name == "base")
    assert base.image == "connect4-trainer:0.1.0"
    assert base.command == ["python", "-m", "c4core.steps"]
    args = base.args
    assert args[0] == "train" and args[args.index("--xcom") + 1] == "/airflow/xcom/return.json"
    assert "airflow.run_id=manual__1" in args
    assert base.resources.limits["nvidia.com/gpu"] == "1"
    assert pod.spec.node_selector == {"nvidia.com/gpu.present": "true"}
    (tol,) = pod.spec.tolerations
    assert (tol.key, tol.operator, tol.effect) == ("nvidia.com/gpu", "Exists", "NoSchedule")
    env = {e.name: e for e in base.env}
    assert env["MLFLOW_CONFIGURE_LOGGING"].value == "false"
    for key in (
        "MLFLOW_TRACKING_URI",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "MLFLOW_S3_ENDPOINT_URL",
    ):
        ref = env[key].value_from.secret_key_ref
        assert (ref.name, ref.key) == ("connect4-mlflow", key)
        assert env[key].value is None  # never a literal credential in the pod spec
        # only the tracking URI must be in the secret: behind a proxied-artifact server the S3
        # keys are unused, and a missing required key would keep the pod from starting
        assert bool(ref.optional) == (key != "MLFLOW_TRACKING_URI"), key
    # CPUs requested and capped alike, and torch told as many threads
    cpus = base.resources.requests["cpu"]
    assert base.resources.limits["cpu"] == cpus == env["C4_TORCH_THREADS"].value
    assert op.execution_timeout is not None and op.execution_timeout.total_seconds() > 0
    security = pod.spec.security_context
    assert security.run_as_non_root and security.run_as_user == security.fs_group == 50000
    sidecar = next(c for c in pod.spec.containers if c.name == "airflow-xcom-sidecar")
    assert any(m.mount_path == "/airflow/xcom" for m in sidecar.volume_mounts)
    assert any(m.mount_path == "/airflow/xcom" for m in base.volume_mounts)
    # one home for the result's path (c4core.steps), and it is where the provider's sidecar reads
    from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import PodDefaults

    from c4core import steps

    assert args[args.index("--xcom") + 1] == steps.XCOM_RETURN == f"{PodDefaults.XCOM_MOUNT_PATH}/return.json"


def test_a_worker_whose_executor_differs_from_the_runs_fails_instead_of_training_the_other_way() -> None:
    """Airflow 3 workers parse the DAG file again: one without C4_EXECUTOR builds the in-process
    shape, so the run carries its executor and the worker's own params check refuses a mismatch."""
    from airflow.sdk.definitions.param import process_params
    from airflow.sdk.exceptions import ParamValidationError

    pods, here = load_dag("kubernetes"), load_dag()
    pod_task, local_task = (d.get_task("generation_1.train_generation") for d in (pods, here))
    assert pod_task.operator_class.__name__ == "KubernetesPodOperator"
    assert local_task.task_type != "KubernetesPodOperator"
    # a kubernetes deployment's runs must say so: the param has no default there
    with pytest.raises(ParamValidationError, match="executor: No value passed"):
        process_params(pods, pod_task, {}, suppress_exception=False)
    assert process_params(pods, pod_task, {"executor": "kubernetes"}, suppress_exception=False)["executor"]
    # a worker that parsed the other shape refuses the run, in both directions
    with pytest.raises(ParamValidationError, match="is not one of \\['in-process'\\]"):
        process_params(here, local_task, {"executor": "kubernetes"}, suppress_exception=False)
    with pytest.raises(ParamValidationError, match="executor"):
        process_params(pods, pod_task, {"executor": "in-process"}, suppress_exception=False)
    # and an in-process deployment runs as before, with or without the field
    for conf in ({}, {"executor": "in-process"}):
        assert process_params(here, local_task, conf, suppress_exception=False)["executor"] == "in-process"


@pytest.mark.slow
def test_the_pod_entry_point_writes_its_result_where_the_sidecar_reads(tmp_path: Path) -> None:
    spec = {"league": "pod", "profile": "smoke", "generations": 1}
    request = json.dumps({"spec": spec, "generation": 1, "opponents": ["random", "tactical", "self"]})
    xcom = tmp_path / "airflow" / "xcom" / "return.json"
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    cmd = [sys.executable, "-m", "c4core.steps", "train", "--request", request, "--xcom", str(xcom)]
    proc = run(cmd + ["--tag", "airflow.task_id=generation_1.train_generation"], env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(xcom.read_text())
    assert out == json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["generation"] == 1 and out["member"] == "gen1" and out["run_id"] and not out["reused"]
    bad = run([sys.executable, "-m", "c4core.steps", "train", "--request", "{"], env)
    assert bad.returncode == 2 and "error" in bad.stderr


# ---- the steps ----------------------------------------------------------------------------------
def test_a_spec_is_the_form_resolved_against_its_profile() -> None:
    from c4core import steps

    spec = steps.resolve({"league": "x", "profile": "smoke", "executor": "in-process"})
    assert spec == {
        "league": "x",
        "profile": "smoke",
        "generations": 2,
        "iterations": None,
        "games": None,
        "match_games": None,
        "roles": ["main"],
        "precision": "float32",
        "game": "connect4",
        "learner": "ppo",
        "value_target": "outcome",
        "recipe": {},
    }
    assert steps.resolve({})["profile"] == "cpu" and steps.resolve({})["league"] == "default"
    mixed = steps._config(steps.resolve({"profile": "cpu-az", "iterations": 3, "games": 8}))
    assert (mixed.ppo.iterations, mixed.alphazero.iterations, mixed.alphazero.games) == (3, 3, 8)
    with pytest.raises(ValueError, match="unknown profile"):
        steps.resolve({"profile": "tpu"})
    with pytest.raises(ValueError, match="match_games"):
        steps.resolve({"profile": "smoke", "match_games": 3})
    # "auto" is resolved in the spec, which every later task and pod reads
    cpu = steps.resolve({"profile": "cpu", "precision": "auto"})["precision"]
    assert cpu == league_config("cpu", native_bfloat16=native_bfloat16()).net.precision and cpu in PRECISIONS
    assert steps.resolve({"profile": "smoke", "precision": "bfloat16"})["precision"] == "bfloat16"
    with pytest.raises(ValueError, match="unknown net precision 'half'"):
        steps.resolve({"profile": "smoke", "precision": "half"})
    margin = steps.resolve({"profile": "smoke", "game": "dots-and-boxes-3x3", "value_target": "margin"})
    assert steps._config(margin).net.value_target == "margin"
    with pytest.raises(ValueError, match="Connect Four has no margin to learn"):
        steps.resolve({"profile": "smoke", "value_target": "margin"})
    with pytest.raises(ValueError, match="unknown league settings: colour"):
        steps.resolve({"colour": "red"})
    roles = steps.resolve({"profile": "smoke", "roles": ["main", "league-exploiter"]})["roles"]
    assert roles == ["main", "league-exploiter"]
    for bad in ("main", ["main", "coach"], ["main-exploiter"], [1]):
        with pytest.raises(ValueError, match="role"):
            steps.resolve({"profile": "smoke", "roles": bad})
    small = steps.resolve({"profile": "smoke", "game": "connect3-4x4"})
    assert small["game"] == "connect3-4x4" and steps._config(small).board == ConnectFour(Geometry(4, 4, 3))
    with pytest.raises(ValueError, match="unknown game 'go'"):
        steps.resolve({"profile": "smoke", "game": "go"})
    tab = steps.resolve({"profile": "smoke", "game": "connect3-4x4", "learner": "sarsa"})
    assert tab["learner"] == "sarsa" and steps._config(tab).main_learner == "sarsa"
    with pytest.raises(ValueError, match="at most 16 moves, not Connect Four"):
        steps.resolve({"profile": "smoke", "learner": "sarsa"})


def test_a_recipe_in_the_form_reaches_every_task_through_the_spec() -> None:
    from c4core import steps

    exact = {"alphazero.solve_from": 1, "alphazero.search.probe_from": 12}
    spec = steps.resolve({"profile": "cpu", "game": "dots-and-boxes-3x3", "recipe": exact})
    assert spec["recipe"] == exact
    assert json.loads(json.dumps(spec)) == spec  # as XCom and the trainer pod carry it
    config = steps._config(spec)
    assert (config.alphazero.solve_from, config.alphazero.search.probe_from) == (1, 12)
    assert (
        config.training_hash()
        != steps._config(steps.resolve({"profile": "cpu", "game": "dots-and-boxes-3x3"})).training_hash()
    )
    for bad, message in (
        (["alphazero.solve_from", 1], "recipe must be an object"),
        ({"alphazero.solve_form": 1}, "unknown recipe field 'alphazero.solve_form'"),
        ({"alphazero.solve_from": "1"}, "takes a whole number"),
        ({"league": "other"}, "unknown recipe field 'league'"),
    ):
        with pytest.raises(ValueError, match=message):
            steps.resolve({"profile": "smoke", "recipe": bad})


def test_a_trainer_request_names_a_role_that_trains_in_its_generation() -> None:
    from c4core import steps

    spec = {"league": "r", "profile": "smoke", "roles": ["main", "main-exploiter"]}
    _, g, role, opponents = steps._request(
        {"spec": spec, "generation": 2, "role": "main-exploiter", "opponents": ["gen1"]}
    )
    assert (g, role, opponents) == (2, "main-exploiter", ["gen1"])
    old = steps._request(json.dumps({"spec": spec, "generation": 1, "opponents": ["random"]}))
    assert old[2] == "main"  # a request from before roles trains the main agent
    for bad, message in (
        ({"spec": spec, "generation": 1, "role": "main-exploiter", "opponents": []}, "does not train"),
        ({"spec": spec, "generation": 2, "role": "league-exploiter", "opponents": []}, "does not train"),
        ({"spec": spec, "generation": 2}, "needs spec, generation and opponents"),
        ("[1, 2]", "needs spec"),
    ):
        with pytest.raises(ValueError, match=message):
            steps._request(bad)


def test_gpu_training_without_cuda_fails_before_mlflow_is_touched(tmp_path: Path) -> None:
    import torch

    from c4core import steps

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    db = tmp_path / "mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
        with pytest.raises(ValueError, match="C4_EXECUTOR=kubernetes"):
            steps.pick({"league": "g", "profile": "gpu"}, 1)
    assert not db.exists()


# ---- one dag.test() run --------------------------------------------------------------------------
class LeagueRun:
    def __init__(self, state: str, run_id: str, tis: dict[tuple[str, int], str], tracking_uri: str):
        self.state, self.run_id, self.tis, self.tracking_uri = state, run_id, tis, tracking_uri

    def client(self) -> Any:
        from mlflow.tracking import MlflowClient

        return MlflowClient(self.tracking_uri)


@pytest.fixture(scope="module")
def league_run(migrated: Path, tmp_path_factory: pytest.TempPathFactory) -> LeagueRun:
    import torch
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    dag = load_dag()
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        try:
            dr = dag.test(run_conf=SMOKE_CONF)
        finally:
            torch.set_num_threads(threads)
    with create_session() as session:
        rows = session.query(TaskInstance).filter(TaskInstance.run_id == dr.run_id).all()
        tis = {(t.task_id, t.map_index): state_text(t.state) for t in rows}
    return LeagueRun(state_text(dr.state), dr.run_id, tis, uri)


def state_text(state: Any) -> str:
    """A state enum (or its string, or None) as its plain value."""
    return str(getattr(state, "value", state))


def dag_test(uri: str, conf: dict) -> str:
    """The state of a `dag.test()` run of `conf` into the tracking store at `uri`."""
    import torch

    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        try:
            dr = load_dag().test(run_conf=conf)
        finally:
            torch.set_num_threads(threads)
    return state_text(dr.state)


def test_dag_test_runs_a_connect3_league_mixing_a_q_learning_table_and_a_network_exploiter(
    migrated: Path, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    conf = {"league": "mix", "profile": "smoke", "generations": 2, "game": "connect3-4x4"}
    conf |= {"learner": "q-learning", "roles": ["main", "main-exploiter"], "iterations": 1, "games": 64}
    assert dag_test(uri, conf) == "success"
    # a model of the game's own, holding the title
    client = LeagueRun("", "", {}, uri).client()
    assert [m.name for m in client.search_registered_models()] == ["connect3-4x4"]
    versions = {v.tags["member"]: v for v in client.search_model_versions("name = 'connect3-4x4'")}
    assert set(versions) == {"gen1", "gen2", "gen2-me"}
    assert {v.tags["league"] for v in versions.values()} == {"mix"}
    champion = client.get_model_version_by_alias("connect3-4x4", "champion")
    assert champion.version in {v.version for v in versions.values()}
    params = client.get_run(versions["gen1"].run_id).data.params
    assert (params["game"], params["rows"], params["cols"], params["connect"]) == ("connect4", "4", "4", "3")
    assert params["main_learner"] == "q-learning"
    # tables for the main agent, a network for its exploiter, each with its exact NashConv
    from c4core.tracking.store import Tracking
    from c4core.tracking.uris import load_checkpoint

    tracking = Tracking.for_uri(uri)
    kinds = {
        m: load_checkpoint(tracking, f"models:/connect3-4x4/{v.version}")[0].kind for m, v in versions.items()
    }
    assert kinds == {"gen1": "table", "gen2": "table", "gen2-me": "net"}
    assert all(0.0 <= float(v.tags["nash_conv"]) <= 2.0 for v in versions.values())
    # the first generation played both bots, and nothing else
    matches = client.search_runs(
        [client.get_run(versions["gen1"].run_id).info.experiment_id],
        "tags.`c4.kind` = 'match' and tags.generation = '1'",
    )
    pairs = sorted(tuple(sorted((r.data.tags["a"], r.data.tags["b"]))) for r in matches)
    assert pairs == [("gen1", "random"), ("gen1", "tactical")]


def test_dag_test_runs_a_dots_and_boxes_league_scored_on_its_suite_and_probes(
    migrated: Path, tmp_path: Path
) -> None:
    """A 3x3 Dots and Boxes league through the DAG: its own registered model, each version
    scored on the solver-labelled suite and per principle on the strategy probes (version tags
    and generation-run metrics), and a registered snapshot plays legal lines. Its recipe field
    reaches the trained net and the run's params under the same dotted path."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    conf = {"league": "dots", "profile": "smoke", "generations": 2, "game": "dots-and-boxes-3x3"}
    conf |= {"iterations": 1, "games": 32, "recipe": {"net.channels": 4}}
    assert dag_test(uri, conf) == "success"
    client = LeagueRun("", "", {}, uri).client()
    assert [m.name for m in client.search_registered_models()] == ["dots-and-boxes-3x3"]
    versions = {v.tags["member"]: v for v in client.search_model_versions("name = 'dots-and-boxes-3x3'")}
    assert set(versions) == {"gen1", "gen2"}
    for version in versions.values():
        tags = version.tags
        assert tags["suite_counted"] == "1200" and tags["suite_file"] == "dots-and-boxes-3x3, seed 0"
        for tag in ("double_cross", "forced_capture", "loop_control", "parity_sacrifice"):
            assert 0.0 <= float(tags[f"probe_{tag}"]) <= 1.0
        run = client.get_run(version.run_id)
        assert run.data.params["net.channels"] == "4"
        metrics = run.data.metrics
        assert metrics["suite/probe/forced_capture"] == pytest.approx(
            float(tags["probe_forced_capture"]), abs=1e-4
        )
    from c4core.games import load
    from c4core.tracking.store import Tracking
    from c4core.tracking.uris import load_checkpoint

    ckpt, name = load_checkpoint(
        Tracking.for_uri(uri), f"models:/dots-and-boxes-3x3/{versions['gen2'].version}"
    )
    assert ckpt.net_config is not None and ckpt.net_config.channels == 4
    game = load("dots-and-boxes-3x3")
    state = game.state_from_moves("h0,0 v0,0 h1,0")
    assert state.lines >> ckpt.player(name).act_position(state) & 1 == 0  # an undrawn line


@pytest.mark.slow
def test_a_league_started_from_airflow_and_the_cli_at_once_runs_once(migrated: Path, tmp_path: Path) -> None:
    from c4core.tracking.lease import Lease
    from c4core.tracking.store import Tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    conf = {"league": "twice", "profile": "smoke", "generations": 1, "iterations": 10}
    dag = subprocess.Popen(
        [str(BIN / "airflow"), "dags", "test", DAG_ID, "-c", json.dumps(conf)],
        env=os.environ | {"MLFLOW_TRACKING_URI": uri}, cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        tracking = Tracking.for_uri(uri)
        lease = Lease(tracking.client(), "league connect4/twice", "a watcher")
        deadline = time.monotonic() + 300
        while lease.holder() is None and dag.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        holder = lease.holder()
        assert holder is not None and holder.owner.startswith(f"airflow {DAG_ID} manual__"), holder
        cli = run(
            [str(BIN / "c4"), "league", "--profile", "smoke", "--name", "twice", "--generations", "1",
             "--iterations", "10", "--no-suite", "--tracking-uri", uri],
        )  # fmt: skip
        assert dag.poll() is None, "the DAG run ended before the CLI tried the league"
        out, _ = dag.communicate(timeout=600)
    finally:
        if dag.poll() is None:
            dag.kill()
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr[-3000:]
    assert (
        cli.stderr.strip()
        .splitlines()[-1]
        .startswith(f"c4 league: error: league connect4/twice is held by {holder.owner} since ")
    ), cli.stderr
    assert dag.returncode == 0, out[-3000:]
    # the store holds what one run leaves: one league run, one generation, its two matches, one
    # version; and the run let go of the league at its end
    client = tracking.client()
    exp = client.get_experiment_by_name("connect4-league")
    kinds = sorted(r.data.tags["c4.kind"] for r in client.search_runs([exp.experiment_id]))
    assert kinds == ["generation", "league", "match", "match"]
    assert [v.tags["member"] for v in client.search_model_versions("name = 'connect4'")] == ["gen1"]
    after = lease.holder()
    assert after is not None and (after.epoch, after.deleted) == (holder.epoch, True)


def test_dag_test_runs_the_smoke_league_and_skips_the_groups_past_its_length(league_run: LeagueRun) -> None:
    assert league_run.state == "success"
    for g in (1, 2):
        for step in ("pick_opponents", "train_generation", "fit_elo", "register_and_promote"):
            assert league_run.tis[(f"generation_{g}.{step}", -1)] == "success", (g, step)
    # mapped over the pairs: gen1 plays the two bots; gen2 and gen2-me each play them and gen1,
    # then each other
    played = {
        g: sorted(i for (t, i), s in league_run.tis.items() if t == f"generation_{g}.play_match")
        for g in (1, 2)
    }
    assert played == {1: [0, 1], 2: list(range(7))}
    assert all(league_run.tis[("generation_2.play_match", i)] == "success" for i in played[2])
    for g in range(3, 21):
        assert league_run.tis[(f"generation_{g}.register_and_promote", -1)] == "skipped"
    # the group past the length skips itself and every later group: none of them shows green
    assert league_run.tis[("generation_3.pick_opponents", -1)] == "skipped"
    assert league_run.tis[("generation_3.train_generation", -1)] == "skipped"


def test_mlflow_holds_the_versions_the_champion_and_the_elo_tags(league_run: LeagueRun) -> None:
    client = league_run.client()
    versions = client.search_model_versions("name = 'connect4' and tags.league = 'dagtest'")
    assert sorted(v.tags["member"] for v in versions) == ["gen1", "gen2", "gen2-me"]
    assert {v.tags["member"]: v.tags["role"] for v in versions}["gen2-me"] == "main-exploiter"
    champ = client.get_model_version_by_alias("connect4", "champion")
    assert champ.current_stage == "Production" and champ.tags["league"] == "dagtest"
    assert champ.tags["role"] == "main"  # an exploiter is never champion
    mains = [v for v in versions if v.tags["role"] == "main"]
    assert [v.version for v in versions if v.current_stage == "Production"] == [champ.version]
    elo = {int(v.tags["generation"]): float(v.tags["elo"]) for v in mains}
    assert float(champ.tags["elo"]) == max(elo.values())
    for v in versions:
        lo, hi = json.loads(v.tags["elo_ci95"])
        assert lo <= float(v.tags["elo"]) <= hi
    exp = client.get_experiment_by_name("connect4-league")
    matches = client.search_runs([exp.experiment_id], "tags.`c4.kind` = 'match' and tags.league = 'dagtest'")
    assert len(matches) == 2 + 7  # one run per mapped task
    gens = client.search_runs(
        [exp.experiment_id], "tags.`c4.kind` = 'generation' and tags.league = 'dagtest'"
    )
    assert {r.data.tags["c4.finalized"] for r in gens if r.data.tags["role"] == "main"} == {"true"}
    # generation 2's task trained two learners, each into a run of its own
    trained = sorted((r.data.tags["airflow.task_id"], r.data.tags["role"]) for r in gens)
    assert trained == [
        ("generation_1.train_generation", "main"),
        ("generation_2.train_generation", "main"),
        ("generation_2.train_generation", "main-exploiter"),
    ]
    assert {r.data.tags["airflow.run_id"] for r in gens + matches} == {league_run.run_id}
    assert {r.data.tags["airflow.dag_id"] for r in gens} == {DAG_ID}
    (league,) = client.search_runs(
        [exp.experiment_id], "tags.`c4.kind` = 'league' and tags.league = 'dagtest'"
    )
    assert league.info.status == "FINISHED"  # the last generation ends the league, as `c4 league` does
    # the exploiter's score against the champion it trained on: its match against gen1
    (point,) = client.get_metric_history(league.info.run_id, "league/exploitability")
    record = next(
        json.loads(r.data.tags["c4.record"])
        for r in matches
        if {r.data.tags["a"], r.data.tags["b"]} == {"gen2-me", "gen1"}
    )
    score = (record["win"] + record["draw"] / 2) / record["games"]
    assert point.step == 2 and point.value == pytest.approx(score if record["a"] == "gen2-me" else 1 - score)
    assert league.data.tags["champion"].startswith(f"models:/connect4/{champ.version} ")


def test_the_links_plugin_points_at_the_run_the_version_and_the_champion(league_run: LeagueRun) -> None:
    from airflow.models.taskinstancekey import TaskInstanceKey

    spec = importlib.util.spec_from_file_location("c4_links", REPO / "plugins" / "c4_links.py")
    links = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(links)
    client = league_run.client()
    champ = client.get_model_version_by_alias("connect4", "champion")
    found = client.search_model_versions("tags.league = 'dagtest' and tags.generation = '2'")
    v2 = next(v for v in found if v.tags["role"] == "main")  # the links lead to the main agent
    key = TaskInstanceKey(DAG_ID, "generation_2.play_match", league_run.run_id, map_index=1)
    experiment = client.get_run(v2.run_id).info.experiment_id
    run_url = links.MLflowRunLink().get_link(None, ti_key=key)
    assert (
        run_url
        == f"http://127.0.0.1:5000/#/experiments/{experiment}/runs/{v2.run_id}?workflowType=machine_learning"
    )
    assert (
        links.ModelVersionLink()
        .get_link(None, ti_key=key)
        .endswith(f"/#/models/connect4/versions/{v2.version}?workflowType=machine_learning")
    )
    assert (
        links.ChampionLink()
        .get_link(None, ti_key=key)
        .endswith(f"/#/models/connect4/versions/{champ.version}?workflowType=machine_learning")
    )
    skipped = TaskInstanceKey(DAG_ID, "generation_5.fit_elo", league_run.run_id)
    other = TaskInstanceKey("another_dag", "generation_2.fit_elo", league_run.run_id)
    assert links.MLflowRunLink().get_link(None, ti_key=skipped) == ""
    assert links.ChampionLink().get_link(None, ti_key=other) == ""
    plugin = links.Connect4LinksPlugin
    assert {link.name for link in plugin.global_operator_extra_links} == {
        "MLflow run",
        "Model version",
        "Champion",
    }


# ---- bad params ----------------------------------------------------------------------------------
@pytest.mark.slow  # `airflow dags test` in a fresh process, twice
@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"generations": 0}, "generations"),
        ({"profile": "smoke", "games": 33}, "games"),
    ],
)
def test_dags_test_rejects_bad_params_and_leaves_mlflow_alone(
    migrated: Path, tmp_path: Path, conf: dict[str, Any], message: str
) -> None:
    db = tmp_path / "mlflow.db"
    proc = run(
        [str(BIN / "airflow"), "dags", "test", DAG_ID, "-c", json.dumps(conf)],
        {"MLFLOW_TRACKING_URI": f"sqlite:///{db}"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Invalid input for param" in out and message in out, out[-3000:]
    assert not db.exists()  # nothing ran, so not even an empty store was made
