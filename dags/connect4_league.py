"""The Connect Four league as an Airflow DAG: one task group per generation.

    generation_1                                                  generation_2
    pick_opponents >> train_generation[*] >> play_match[*]  >>    pick_opponents >> ...
                                             >> fit_elo >> register_and_promote

- ``pick_opponents`` resolves the trigger form into a spec and picks each role's opponents
  (the main agent's, and its exploiters' when the profile has them); its ``pairs`` (each new
  snapshot against every earlier member and the other new snapshots) feed the mapped
  ``play_match``.
- ``train_generation`` trains the generation's snapshots. In-process, one task trains every
  role at once, each learner in a process of its own (``airflow dags test`` runs one task at a
  time, so only processes inside the task keep both cores busy). With
  ``C4_EXECUTOR=kubernetes``, it is a KubernetesPodOperator mapped over the roles: one pod per
  role, each with a GPU, running ``python -m c4core.steps train`` and returning its result
  through ``/airflow/xcom/return.json``. One entry point (`c4core.steps`), two launchers.
- ``play_match`` is mapped over the pairs: one task per pairing.
- ``fit_elo`` refits the ladder; ``register_and_promote`` registers the snapshot, writes Elo to
  every version and moves the ``champion`` alias and the Production stage.

The groups are built up to ``C4_MAX_GENERATIONS`` (default 20, the gpu profile's length) when the
file parses; the generation count in the form takes effect at run time, because the groups past
it skip. Every task is idempotent through the MLflow keys of `c4core.tracking.store.MLflowStore`, so
retries and reruns reuse finished snapshots, matches and versions.

This file is wiring only: it imports neither torch nor mlflow (the steps import them when they
run), and the Kubernetes provider only when ``C4_EXECUTOR=kubernetes``.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import Param, TaskGroup, dag, get_current_context, task

from c4core.config import (  # config imports neither torch nor mlflow
    LEAGUE_VARIANTS,
    MAIN_LEARNERS,
    PRECISIONS,
    ROLES,
    TABULAR_MOVES,
    VALUE_TARGETS,
)

DAG_ID = "connect4_league"
EXECUTORS = ("in-process", "kubernetes")
EXECUTOR = os.environ.get("C4_EXECUTOR", "in-process").strip() or "in-process"
if EXECUTOR not in EXECUTORS:
    raise ValueError(f"C4_EXECUTOR={EXECUTOR!r}: choose {' or '.join(EXECUTORS)}")
MAX_GENERATIONS = int(os.environ.get("C4_MAX_GENERATIONS", "20"))
MAX_ACTIVE_RUNS = 16
"""DAG runs at once: leagues of different names or games run side by side."""

# the Kubernetes side: where the trainer pod runs and where it finds MLflow
TRAINER_IMAGE = os.environ.get("C4_TRAINER_IMAGE", "connect4-trainer:0.1.0")
NAMESPACE = os.environ.get("C4_K8S_NAMESPACE", "connect4")
MLFLOW_SECRET = os.environ.get("C4_MLFLOW_SECRET", "connect4-mlflow")
SECRET_KEYS = ("MLFLOW_TRACKING_URI", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MLFLOW_S3_ENDPOINT_URL")
# the S3 keys matter only to a pod that writes artifacts to S3 itself: behind a tracking server
# with proxied artifacts (mlflow/server.sh) the secret may leave them out
OPTIONAL_SECRET_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MLFLOW_S3_ENDPOINT_URL")
GPU_NODE_SELECTOR = {"nvidia.com/gpu.present": "true"}
# the trainer pod's CPUs: requested and capped alike, and torch told as many threads (more threads
# than the pod's CPU quota only contend for it)
TRAINER_CPUS = 4
# the trainer image's user (docker/trainer.Dockerfile): the pod says so, so that it runs as non-root
# wherever policy demands it, and the XCom emptyDir is the trainer's to write (fsGroup; podman,
# which plays this pod in tests/test_pod.py, hands an emptyDir only to the pod's runAsUser)
TRAINER_UID = 50000
# a hung pod is stopped rather than holding a GPU node forever; generous, because no generation was
# ever timed on a GPU (docs/BENCHMARKS.md); on 2 cores a PPO generation's training has taken 1 to
# 3 minutes, an AlphaZero-style generation on two ranks 3 to 5
TRAIN_TIMEOUT = timedelta(minutes=int(os.environ.get("C4_TRAIN_TIMEOUT_MINUTES", "120")))

PARAMS = {
    "league": Param(
        "default",
        type="string",
        minLength=1,
        maxLength=64,
        pattern="^[A-Za-z0-9._-]+$",
        title="League name",
        examples=["default", "cpu1", "try-2.bf16"],
        description_md="Groups snapshots, matches and versions in MLflow. 1 to 64 letters, digits, `-`, "
        "`_` or `.`, no spaces (e.g. `cpu1`); rerunning a league resumes it.",
    ),
    "profile": Param(
        "cpu",
        type="string",
        enum=["smoke", "cpu", "cpu-az", "gpu"],
        title="Profile",
        description_md="`smoke` (seconds, for tests), `cpu` (six PPO generations, then one "
        "AlphaZero-style, each learner on two data-parallel ranks: about 5 minutes on 2 cores with "
        "AMX, about 7 with AVX-512 BF16 and no AMX; 1.6-1.9 times as long in float32), `cpu-az` "
        "(the `cpu` league run on to 20 generations) or `gpu` (the reference sizing, all three "
        "roles; trains on CUDA).",
    ),
    "game": Param(
        LEAGUE_VARIANTS[0],
        type="string",
        enum=list(LEAGUE_VARIANTS),
        title="Game",
        description_md="The game and board the league plays: `connect4` (Connect Four, 6x7), "
        "`connect3-4x4` (three in a row on a 4x4 board), or Dots and Boxes on `dots-and-boxes-3x3` or "
        "`dots-and-boxes-4x4` boxes (a player who completes a box moves again). Each has a registered "
        "model of its own in MLflow, named so, and its champions never meet another's.",
    ),
    "learner": Param(
        "ppo",
        type="string",
        enum=list(MAIN_LEARNERS),
        title="Learner",
        description_md="How the main agent learns: `ppo` (a network; the profile's AlphaZero-style "
        "generations follow it), or `q-learning` or `sarsa`, a table of every position, by "
        f"self-play. A table needs a game of at most {TABULAR_MOVES} moves: choose the game "
        "`connect3-4x4` with it.",
    ),
    "value_target": Param(
        "outcome",
        type="string",
        enum=list(VALUE_TARGETS),
        title="Value target",
        description_md="What the net's value head learns: `outcome`, the game's result (win, draw or "
        "loss), or `margin`, the result graded by how much it was won by, which only Dots and Boxes "
        "has (its box difference over its boxes): of two winning moves the net then prefers the one "
        "that wins more.",
    ),
    "generations": Param(
        None,
        type=["null", "integer"],
        minimum=1,
        maximum=MAX_GENERATIONS,
        title="Generations",
        description_md=f"Generations to run, 1 to {MAX_GENERATIONS} (empty: the profile's).",
    ),
    "iterations": Param(
        None,
        type=["null", "integer"],
        minimum=1,
        maximum=1000,
        title="Iterations",
        description_md="Training iterations per generation, PPO or AlphaZero, 1 to 1000 (empty: the "
        "profile's).",
    ),
    "games": Param(
        None,
        type=["null", "integer"],
        minimum=2,
        maximum=65536,
        multipleOf=2,
        title="Games per iteration",
        description_md="Self-play games per training iteration: even, 2 to 65536 (empty: the profile's).",
    ),
    "roles": Param(
        None,
        type=["null", "array"],
        items={"type": "string", "enum": list(ROLES)},
        uniqueItems=True,
        minItems=1,
        title="Roles",
        description_md="The league's learners, one per line: `main` first, then `main-exploiter` "
        "(trains only against the champion) and `league-exploiter` (against the whole league, "
        "drawn by PFSP). Empty: the profile's.",
    ),
    "match_games": Param(
        None,
        type=["null", "integer"],
        minimum=2,
        maximum=10000,
        multipleOf=2,
        title="Games per pairing",
        description_md="Games each league match plays, both colours equally: even, 2 to 10000 "
        "(empty: the profile's).",
    ),
    "precision": Param(
        "auto",
        type="string",
        enum=["auto", *PRECISIONS],
        title="Precision",
        description_md="What the net's convolutions compute in. `auto`: the profile's (`cpu` and "
        "`cpu-az` use `bfloat16`, `gpu` `float32`), but `float32` on a CPU without native bfloat16 "
        "(AVX-512 BF16 or AMX), which would emulate it several times slower.",
    ),
    "recipe": Param(
        {},
        type="object",
        title="Recipe fields",
        description_md="Fields of the profile's recipe that no option above names, each by its dotted "
        'path, as JSON, applied last: e.g. `{"alphazero.solve_from": 1, '
        '"alphazero.search.probe_from": 12}` trains Dots and Boxes 3x3 on the exact solver\'s '
        "values. Every field and its meaning is in `c4core/config.py`. A changed recipe is a league "
        "of its own: a league resumes only with the recipe it started with. Empty: the profile's.",
    ),
    # The DAG's shape depends on C4_EXECUTOR where the file is parsed, and in Airflow 3 every
    # component parses it: the dag-processor (the shape the scheduler and the UI see) and each
    # worker, which runs the task it finds in its own parse. So a run carries its executor in its
    # conf and each worker checks it against its own parse (`process_params` on the worker fails
    # the task, "is not one of"), rather than training in-process where a pod was meant, or the
    # other way round. In kubernetes mode the param has no default, so no run can leave it out;
    # in-process it defaults to in-process, which a kubernetes-mode worker refuses as missing.
    "executor": Param(
        **({} if EXECUTOR == "kubernetes" else {"default": EXECUTOR}),
        type="string",
        enum=[EXECUTOR],
        title="Executor",
        description_md=f"Where `train_generation` runs. This deployment: **{EXECUTOR}**"
        + (' (required: give `"executor": "kubernetes"`)' if EXECUTOR == "kubernetes" else "")
        + ". It is chosen where the DAG is parsed: set `C4_EXECUTOR=kubernetes` on the scheduler, the "
        "dag-processor and every worker to train on GPU pods; a worker whose setting differs fails the "
        "task rather than run it the other way.",
    ),
}


def _tags() -> dict[str, str]:
    ti = get_current_context()["ti"]
    return {"airflow.dag_id": ti.dag_id, "airflow.run_id": ti.run_id, "airflow.task_id": ti.task_id}


@task
def pick_opponents(generation: int) -> list[list[str]]:
    """Returns the pairs the new snapshots will play (the list `play_match` maps over: a mapped
    task can only expand a return value); the spec, the main agent's opponents and the
    trainers' requests (one per role) go in XComs of their own name. Past the form's generation
    count it skips itself, and with it this group and every later one: the grid shows the
    groups past the league's length as skipped, none green."""
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    from c4core import steps

    context = get_current_context()
    params = dict(context["params"])
    try:
        spec = steps.resolve(params)
        if spec["generations"] > MAX_GENERATIONS:
            raise ValueError(
                f"profile {spec['profile']!r} runs {spec['generations']} generations and this DAG holds "
                f"{MAX_GENERATIONS}: set generations, or raise C4_MAX_GENERATIONS"
            )
        if generation > spec["generations"]:
            runs = spec["generations"]
            raise AirflowSkipException(f"the league runs {runs} generation(s): skipping the rest")
        picked = steps.pick(spec, generation, _tags(), train_here=EXECUTOR == "in-process")
    except ValueError as e:  # a bad setting: fail at once, as a retry would only repeat it
        raise AirflowFailException(str(e)) from e
    for key in ("spec", "opponents", "requests"):
        context["ti"].xcom_push(key=key, value=picked[key])
    return picked["pairs"]


@task
def trainer_commands(requests: list[str]) -> list[list[str]]:
    """Each role's trainer pod's arguments (`pod_arguments`). A task of its own, because a
    mapped task expands only a task's return value."""
    ti = get_current_context()["ti"]
    group = ti.task_id.rsplit(".", 1)[0]
    tags = {
        "airflow.dag_id": ti.dag_id,
        "airflow.run_id": ti.run_id,
        "airflow.task_id": f"{group}.train_generation",
    }
    return pod_arguments(requests, tags)


def pod_arguments(requests: list[str], tags: dict[str, str]) -> list[list[str]]:
    """A trainer pod's arguments for each request: ``train`` for that role, its runs tagged, its
    result written where the sidecar reads it."""
    from c4core.steps import XCOM_RETURN  # where the sidecar reads: one home, checked against the provider

    tagged = [arg for k, v in tags.items() for arg in ("--tag", f"{k}={v}")]
    return [["train", "--request", r, *tagged, "--xcom", XCOM_RETURN] for r in requests]


@task(multiple_outputs=False)
def train_generation(requests: list[str]) -> list[dict[str, Any]]:
    """Every role of the generation at once, each learner in a process of its own."""
    from c4core import steps

    return steps.train_all(requests, _tags())


def train_pod(generation: int, arguments: Any) -> Any:
    """`train_generation` as GPU pods running ``python -m c4core.steps train``: mapped over the
    generation's roles, one pod each."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
    from airflow.providers.cncf.kubernetes.secret import Secret
    from kubernetes.client import models as k8s

    required = [
        Secret("env", key, MLFLOW_SECRET, key) for key in SECRET_KEYS if key not in OPTIONAL_SECRET_KEYS
    ]
    optional = [  # the provider's Secret has no `optional`: these are plain env refs
        k8s.V1EnvVar(
            name=key,
            value_from=k8s.V1EnvVarSource(
                secret_key_ref=k8s.V1SecretKeySelector(name=MLFLOW_SECRET, key=key, optional=True)
            ),
        )
        for key in OPTIONAL_SECRET_KEYS
    ]
    plain = {
        "MLFLOW_CONFIGURE_LOGGING": "false",
        "PYTHONUNBUFFERED": "1",
        "C4_TORCH_THREADS": str(TRAINER_CPUS),
    }
    return KubernetesPodOperator.partial(
        task_id="train_generation",
        name=f"c4-train-gen{generation}",
        namespace=NAMESPACE,
        image=TRAINER_IMAGE,
        cmds=["python", "-m", "c4core.steps"],
        env_vars=[k8s.V1EnvVar(name=k, value=v) for k, v in plain.items()] + optional,
        secrets=required,
        container_resources=k8s.V1ResourceRequirements(
            requests={"cpu": str(TRAINER_CPUS), "memory": "16Gi"},
            limits={"nvidia.com/gpu": "1", "cpu": str(TRAINER_CPUS), "memory": "32Gi"},
        ),
        execution_timeout=TRAIN_TIMEOUT,
        security_context=k8s.V1PodSecurityContext(
            run_as_user=TRAINER_UID, run_as_group=TRAINER_UID, fs_group=TRAINER_UID, run_as_non_root=True
        ),
        node_selector=GPU_NODE_SELECTOR,
        tolerations=[k8s.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
        labels={"app.kubernetes.io/name": "connect4-trainer", "c4/generation": str(generation)},
        do_xcom_push=True,
        get_logs=True,
        log_events_on_failure=True,
        startup_timeout_seconds=900,  # a first pull of a CUDA image takes minutes
        on_finish_action="delete_succeeded_pod",
    ).expand(arguments=arguments)


@task(multiple_outputs=False)
def play_match(spec: dict[str, Any], pair: list[str]) -> dict[str, Any]:
    from c4core import steps

    member, opponent = pair
    return steps.match(spec, member, opponent, _tags())


@task(multiple_outputs=False)
def fit_elo(spec: dict[str, Any], generation: int, matches: Any) -> dict[str, Any]:
    from c4core import steps

    out = steps.fit(spec, generation)  # reads every record from MLflow, so a rerun fits the same
    print(f"generation {generation}: {len(matches)} matches played\n{out['ladder']}")
    return out


@task(multiple_outputs=False)
def register_and_promote(
    spec: dict[str, Any], generation: int, opponents: list[str], trained: Any, elo: dict[str, Any]
) -> dict[str, Any]:
    from c4core import steps

    seconds = max((t.get("seconds", 0.0) for t in trained), default=0.0)  # the learners ran at once
    out = steps.register(spec, generation, opponents, seconds, _tags())
    if out["champion"] != elo["champion"]:  # fit_elo and this refit read the same records
        raise RuntimeError(f"the refit crowned {out['champion']}, fit_elo {elo['champion']}")
    return out


@dag(
    dag_id=DAG_ID,
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    # it has no schedule and runs only when triggered, so it starts unpaused: paused, a refused
    # trigger from the UI would unpause it anyway (the form's "unpause" box goes first)
    is_paused_upon_creation=False,
    # leagues run side by side; each run holds its league's lease in MLflow (c4core.steps.run_owner),
    # so a second run of the same league fails at its first task, naming the run that holds it
    max_active_runs=MAX_ACTIVE_RUNS,
    params=PARAMS,
    default_args={
        "retries": 2,
        "retry_delay": timedelta(seconds=30),
        "retry_exponential_backoff": 2.0,  # 30 s, then 60 s
    },
    tags=["connect4", "league", "mlflow"],
    doc_md=__doc__,
)
def connect4_league() -> None:
    previous = None
    for g in range(1, MAX_GENERATIONS + 1):
        with TaskGroup(group_id=f"generation_{g}") as group:
            picked = pick_opponents(g)
            if EXECUTOR == "kubernetes":
                trainer = train_pod(g, trainer_commands(picked["requests"]))
                trained = trainer.output
            else:
                trained = train_generation(picked["requests"])
            matches = play_match.partial(spec=picked["spec"]).expand(pair=picked)
            trained >> matches
            elo = fit_elo(picked["spec"], g, matches)
            register_and_promote(picked["spec"], g, picked["opponents"], trained, elo)
        if previous is not None:
            previous >> group
        previous = group


connect4_league()
