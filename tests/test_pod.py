"""The images, run for real with podman: the stand-in base, the trainer pod the DAG renders, played
by ``podman kube play``, and the MLflow image as the league's tracking server.

The images come from ``docker/build-local.sh`` (a test never builds, since a build takes
minutes). CI builds them beside the tests: C4_IMAGES_BUILT names the file the build leaves with
its exit status, and these tests wait for it. Without podman, or without the images, the tests
skip, unless C4_REQUIRE_PODMAN is set (CI sets it), in which case they fail.

Everything stays on loopback: pods use the host's network (``hostNetwork: true``, ``--network
host``) and every server, in a container or not, binds 127.0.0.1. Podman's bridge network uses
private addresses, and no test sends traffic there. Podman reads ``docker/containers.conf``
(runc, ulimits that fit the sandbox) through CONTAINERS_CONF unless that is set already.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers import Server, check_smoke_league_on_server, free_port, runs_of, tracking_server, wait_for_http

# the Postgres cluster fixture of the Postgres + S3 server test: the MLflow image's own command
# runs that server, so its test uses the same throwaway cluster
from test_registry_postgres import Postgres, postgres  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
TRAINER_IMAGE = "connect4-trainer:0.1.0"
MLFLOW_IMAGE = "connect4-mlflow:0.1.0"
PYTHON_BASE = "python:3.11-slim-bookworm"
IMAGES_BUILT = os.environ.get("C4_IMAGES_BUILT", "")
"""The file `.ci/run`'s image build, which runs beside the tests, leaves when it ends: its exit
status. Empty: the images are built already (or missing, which `require` reports)."""
BUILD_WAIT = 1800
"""Seconds the first pod test waits for that build."""
SMOKE = {"league": "pod", "profile": "smoke", "generations": 1}
RUN_ID = "manual__podman"  # the Airflow run id the pod's tags name


def podman_env() -> dict[str, str]:
    # absolute: podman's helper processes read the file from another directory
    conf = Path(os.environ.get("CONTAINERS_CONF", REPO / "docker/containers.conf")).resolve()
    return os.environ | {"CONTAINERS_CONF": str(conf)}


def podman(
    *args: str, timeout: float = 120, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["podman", *args], env=podman_env(), input=stdin, capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert done.returncode == 0, (
            f"podman {' '.join(args[:3])} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return done


def unavailable(reason: str, fix: str = "apt-get install podman runc debootstrap") -> None:
    if os.environ.get("C4_REQUIRE_PODMAN"):
        pytest.fail(f"{reason}, and C4_REQUIRE_PODMAN is set")
    pytest.skip(f"{reason} ({fix}; set C4_REQUIRE_PODMAN=1 to fail)")


def require(*images: str) -> None:
    """Skip (or, under C4_REQUIRE_PODMAN, fail) unless podman runs here and holds `images`."""
    if shutil.which("podman") is None:
        unavailable("podman is not installed")
    for image in images:
        if podman("image", "exists", image, check=False).returncode != 0:
            unavailable(f"no image {image} here", "run docker/build-local.sh")


if IMAGES_BUILT:  # the module's first test waits for the build, past pytest-timeout's 600 s
    pytestmark = pytest.mark.timeout(BUILD_WAIT + 600)


@pytest.fixture(scope="module", autouse=True)
def _images_built() -> None:
    """Wait for the image build that runs beside the tests (`IMAGES_BUILT`), and fail if it did."""
    if not IMAGES_BUILT:
        return
    status, deadline = Path(IMAGES_BUILT), time.monotonic() + BUILD_WAIT
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"no {status} after {BUILD_WAIT} s: the image build (build-local.sh) still runs")
        time.sleep(5)
    code = status.read_text().strip()
    if code != "0":
        pytest.fail(f"the image build (docker/build-local.sh) exited with {code}: its log follows the tests")


# the digest of a c4core tree's Python files, run here and inside the trainer image
SOURCE_DIGEST = """
import hashlib, pathlib, sys
root, h = pathlib.Path(sys.argv[1]), hashlib.sha256()
for path in sorted(root.rglob("*.py")):
    h.update(path.relative_to(root).as_posix().encode() + b"\\0" + path.read_bytes())
print(h.hexdigest())
"""


def require_current_trainer() -> None:
    """The trainer image must hold this working tree's c4core: a pod run on older code would test
    that code instead."""
    require(TRAINER_IMAGE)
    here = subprocess.run(
        ["python3", "-c", SOURCE_DIGEST, str(REPO / "c4core")], capture_output=True, text=True
    )
    there = podman("run", "--rm", "--network", "none", TRAINER_IMAGE, "python", "-c", SOURCE_DIGEST, "c4core")
    assert here.returncode == 0 and len(here.stdout.strip()) == 64, here.stderr
    if here.stdout.strip() != there.stdout.strip():
        unavailable(
            f"{TRAINER_IMAGE} holds another c4core than this tree", "run docker/build-local.sh trainer"
        )


def labels(image: str) -> dict[str, str]:
    return json.loads(podman("image", "inspect", "--format", "{{json .Labels}}", image).stdout) or {}


# ---- the images ----------------------------------------------------------------------------------
def test_the_stand_in_base_is_labelled_and_behaves_like_the_official_image() -> None:
    require(PYTHON_BASE)
    assert labels(PYTHON_BASE)["connect4.stand-in"] == "true"
    assert "STAND-IN" in labels(PYTHON_BASE)["org.opencontainers.image.description"]
    probe = (
        "import json, shutil, sys, sysconfig, pathlib; print(json.dumps({"
        "'version': sys.version_info[:2], 'python': shutil.which('python'), 'pip': shutil.which('pip'),"
        "'marker': pathlib.Path(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED').exists()}))"
    )
    out = json.loads(podman("run", "--rm", "--network", "none", PYTHON_BASE, "python", "-c", probe).stdout)
    # what the Dockerfiles rely on: `python` and `pip` on PATH, and a pip that may install (PEP 668)
    assert out == {"version": [3, 11], "python": "/usr/local/bin/python", "pip": "/usr/local/bin/pip",
                   "marker": False}  # fmt: skip
    cmd = json.loads(podman("image", "inspect", "--format", "{{json .Config.Cmd}}", PYTHON_BASE).stdout)
    assert cmd == ["python3"]  # the official image's CMD


def test_the_trainer_image_holds_c4core_and_the_cpu_torch_it_was_built_with() -> None:
    require(TRAINER_IMAGE)
    probe = (
        "import json, os, torch, c4core.steps; print(json.dumps({'torch': torch.__version__, "
        "'cuda': torch.version.cuda, 'uid': os.getuid(), 'xcom': c4core.steps.XCOM_RETURN, "
        "'telemetry_off': __import__('mlflow.telemetry.utils').telemetry.utils.is_telemetry_disabled()}))"
    )
    out = json.loads(podman("run", "--rm", "--network", "none", TRAINER_IMAGE, "python", "-c", probe).stdout)
    pinned = next(
        line.split("==")[1]
        for line in (REPO / "requirements.txt").read_text().split()
        if line.startswith("torch==")
    )
    # the local build feeds in the CPU wheel (build-local.sh's TORCH); the Dockerfile's default is CUDA
    assert out["torch"] == f"{pinned}+cpu" and out["cuda"] is None
    assert out["uid"] == 50000 and out["xcom"] == "/airflow/xcom/return.json"  # never root
    assert out["telemetry_off"]  # MLflow reports nothing out of the pod (outside pytest it would)


# ---- the trainer pod, played ---------------------------------------------------------------------
def trainer_pod(requests: list[str], generation: int = 1) -> Any:
    """The DAG's trainer pod for the first of `requests` (the main agent's): its mapped
    KubernetesPodOperator unmapped with the arguments `trainer_commands` gives that request, as
    the worker does for map index 0."""
    from test_dag import load_dag

    dag = load_dag("kubernetes")
    module = sys.modules[dag.get_task(f"generation_{generation}.trainer_commands").python_callable.__module__]
    task_id = f"generation_{generation}.train_generation"
    tags = {"airflow.dag_id": dag.dag_id, "airflow.run_id": RUN_ID, "airflow.task_id": task_id}
    return dag.get_task(task_id).unmap({"arguments": module.pod_arguments(requests, tags)[0]})


# Every field of the operator's pod that this test changes, and why; `played_pod` checks that it
# changes these and nothing else. Paths name list items by their `name` (containers, env).
CHANGES = {
    "spec.hostNetwork": "true: the pod reaches the tracking server on 127.0.0.1 (a cluster: a service name)",
    "spec.nodeSelector": "dropped: no GPU nodes (podman has no scheduler)",
    "spec.tolerations": "dropped: no tainted GPU nodes",
    "spec.containers[base].resources.limits.nvidia.com/gpu": "dropped: no GPU; smoke trains on the CPU",
    "spec.containers[base].resources.limits.cpu": "lowered to this machine's CPUs, as podman refuses a "
    "CPU limit above them",
    "spec.containers[base].resources.requests.cpu": "lowered with the limit, as the DAG ties the two",
    "spec.containers[base].env[C4_TORCH_THREADS].value": "lowered with the limit, as the DAG ties them",
}
SECRET_CHANGE = (
    "The Kubernetes Secret becomes a podman secret of a name of the test's own (through the DAG's "
    "C4_MLFLOW_SECRET): a JSON map of base64 values, the form of a Secret's `data`, holding "
    "MLFLOW_TRACKING_URI only, which also shows that the S3 keys are optional."
)


def flat(obj: Any, path: str = "") -> dict[str, Any]:
    """A manifest as {path: leaf}; list items that have a `name` are keyed by it."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = ((o["name"] if isinstance(o, dict) and "name" in o else str(i), o) for i, o in enumerate(obj))
        return {k: v for key, o in items for k, v in flat(o, f"{path}[{key}]").items()}
    else:
        return {path: obj}
    return {k: v for key, o in items for k, v in flat(o, f"{path}.{key}" if path else key).items()}


def played_pod(op: Any) -> dict[str, Any]:
    """The operator's own pod as a manifest: its templates rendered by the operator, built by the
    provider (`build_pod_request_obj`, sidecar, secret refs and volumes included), then `CHANGES`
    applied."""
    import copy

    from kubernetes.client import ApiClient

    op.render_template_fields({"dag": op.dag, "run_id": RUN_ID, "task": op})
    rendered = ApiClient().sanitize_for_serialization(op.build_pod_request_obj(dry_run=True))
    pod = copy.deepcopy(rendered)
    spec = pod["spec"]
    spec["hostNetwork"] = True
    assert spec.pop("nodeSelector") == {"nvidia.com/gpu.present": "true"}
    assert spec.pop("tolerations")[0]["key"] == "nvidia.com/gpu"
    base = next(c for c in spec["containers"] if c["name"] == "base")
    resources = base["resources"]
    assert resources["limits"].pop("nvidia.com/gpu") == "1"
    threads = next(e for e in base["env"] if e["name"] == "C4_TORCH_THREADS")
    assert threads["value"] == resources["limits"]["cpu"] == resources["requests"]["cpu"]  # the DAG ties them
    cpus = str(min(int(threads["value"]), os.cpu_count() or 1))
    resources["limits"]["cpu"] = resources["requests"]["cpu"] = threads["value"] = cpus
    # nothing but CHANGES differs from what the provider built (a CPU field only where lowered)
    before, after = flat(rendered), flat(pod)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert all(
        any(k == c or k.startswith(f"{c}.") or k.startswith(f"{c}[") for c in CHANGES) for k in changed
    ), sorted(changed)
    assert {c for c in CHANGES if "cpu" not in c and "THREADS" not in c} <= {
        c for c in CHANGES for k in changed if k == c or k.startswith((f"{c}.", f"{c}["))
    }
    return pod


class PlayedPod:
    """One `podman kube play` of a manifest: waits for the trainer, reads the sidecar's XCom the way
    the operator does (an exec in the sidecar), then `podman kube down`."""

    def __init__(self, manifest: Path, name: str) -> None:
        self.manifest, self.name = manifest, name

    def run(self, timeout: float = 600) -> tuple[int, str, dict[str, Any], float]:
        start = time.perf_counter()
        podman("kube", "play", str(self.manifest), timeout=300)
        try:
            podman("wait", f"{self.name}-base", timeout=timeout)
            seconds = time.perf_counter() - start
            code = int(podman("inspect", "--format", "{{.State.ExitCode}}", f"{self.name}-base").stdout)
            shown = podman("logs", f"{self.name}-base")
            logs = shown.stdout + shown.stderr  # podman logs keeps the container's two streams apart
            sidecar = f"{self.name}-airflow-xcom-sidecar"
            # the sidecar keeps the pod alive until the operator has read the result ...
            assert podman("inspect", "--format", "{{.State.Running}}", sidecar).stdout.strip() == "true"
            read = podman("exec", sidecar, "cat", "/airflow/xcom/return.json", check=False)
            xcom = json.loads(read.stdout) if read.returncode == 0 else {}
            # ... which then stops it with SIGINT, as the provider's `extract_xcom` does
            podman("exec", sidecar, "kill", "-2", "1")
            podman("wait", sidecar, timeout=30)
            stopped = podman("inspect", "--format", "{{.State.ExitCode}}", sidecar).stdout.strip()
            assert stopped == "0", f"the sidecar exited {stopped} on SIGINT"
            return code, logs, xcom, seconds
        finally:
            podman("kube", "down", str(self.manifest), timeout=120, check=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """mlflow/server.sh on 127.0.0.1 (SQLite, artifacts proxied to moto's S3): the pod needs only
    the tracking URI."""
    with tracking_server("server.sh", tmp_path_factory.mktemp("pod-server"), "pod-league") as running:
        yield running


@pytest.mark.slow
def test_the_dags_trainer_pod_trains_a_generation_into_mlflow_and_a_rerun_reuses_it(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import XCOM_SIDECAR_IMAGE

    require_current_trainer()
    require(XCOM_SIDECAR_IMAGE)  # build-local.sh makes a stand-in of the provider's pin

    from c4core import steps
    from mlflow import MlflowClient

    secret = f"c4-podtest-{os.getpid()}"  # a name of its own: a real connect4-mlflow is never touched
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    monkeypatch.setenv("C4_MLFLOW_SECRET", secret)  # the DAG's own knob for the secret's name
    picked = steps.pick(SMOKE, 1, train_here=False)  # what pick_opponents pushes
    op = trainer_pod(picked["requests"])
    pod = played_pod(op)
    # the two images podman plays are the ones here: the trainer, and the sidecar's stand-in
    images = {c["name"]: c["image"] for c in pod["spec"]["containers"]}
    assert images == {"base": TRAINER_IMAGE, "airflow-xcom-sidecar": XCOM_SIDECAR_IMAGE}
    base = next(c for c in pod["spec"]["containers"] if c["name"] == "base")
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in base["env"] if "valueFrom" in e}
    assert {r["name"] for r in refs.values()} == {secret} and not refs["MLFLOW_TRACKING_URI"].get("optional")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod, sort_keys=False))
    data = {"MLFLOW_TRACKING_URI": base64.b64encode(server.url.encode()).decode()}
    podman("secret", "create", secret, "-", stdin=json.dumps(data))
    played = PlayedPod(manifest, pod["metadata"]["name"])
    try:
        code, logs, xcom, first = played.run()
        assert code == 0, logs[-3000:]
        code, logs2, again, rerun = played.run()
        assert code == 0, logs2[-3000:]
    finally:
        podman("secret", "rm", secret, check=False)
    print(f"\npod: trained in {first:.1f} s, rerun in {rerun:.1f} s (kube play to the trainer's exit)")

    # the sidecar held what the trainer printed: the task's XCom
    assert xcom == json.loads(logs.strip().splitlines()[-1])
    assert xcom["generation"] == 1 and xcom["member"] == "gen1" and not xcom["reused"]
    assert xcom["device"] == "cpu" and xcom["seconds"] > 0
    # the generation, trained into the server: its run, the checkpoint, the completion tag
    client = MlflowClient(server.url)
    (gen,) = runs_of(client, "generation", SMOKE["league"])
    assert gen.info.run_id == xcom["run_id"] and gen.info.experiment_id == xcom["experiment_id"]
    tags = gen.data.tags
    assert tags["c4.complete"] == "true" and tags["generation"] == "1"
    assert (tags["airflow.dag_id"], tags["airflow.run_id"]) == ("connect4_league", RUN_ID)
    assert tags["airflow.task_id"] == "generation_1.train_generation"
    assert [a.path for a in client.list_artifacts(xcom["run_id"], "checkpoint")] == ["checkpoint/gen1.pt"]
    keys = [o["Key"] for o in server.s3.list_objects_v2(Bucket=server.bucket)["Contents"]]
    assert sum(k.endswith(f"{xcom['run_id']}/artifacts/checkpoint/gen1.pt") for k in keys) == 1
    # the rerun found the finished generation and trained nothing
    assert again["reused"] and again["run_id"] == xcom["run_id"]
    assert len(runs_of(client, "generation", SMOKE["league"])) == 1

    # the rest of the generation as the workers run it: the DAG's own task functions, the sidecar's
    # XCom as `trained` (with no Airflow run here, the task-instance tags are stubbed)
    tasks = op.dag.task_dict
    register = tasks["generation_1.register_and_promote"].python_callable
    # the same DAG run as the pod's, so the task adopts the league's lease the pod took
    run_tags = {"airflow.dag_id": "connect4_league", "airflow.run_id": RUN_ID}
    monkeypatch.setitem(register.__globals__, "_tags", lambda: run_tags)
    matches = [steps.match(picked["spec"], a, b) for a, b in picked["pairs"]]
    elo = tasks["generation_1.fit_elo"].python_callable(picked["spec"], 1, matches)
    out = register(picked["spec"], 1, picked["opponents"], [xcom], elo)
    assert out["run_id"] == xcom["run_id"] and out["champion"] == elo["champion"]
    version = client.get_model_version(out["model_name"], str(out["version"]))
    assert version.run_id == xcom["run_id"] and version.tags["generation"] == "1"


# ---- the MLflow image as the tracking server -----------------------------------------------------
@pytest.mark.slow
def test_the_mlflow_image_serves_a_smoke_league_from_postgres_and_s3(
    postgres: Postgres,  # noqa: F811  (the imported fixture)
    tmp_path: Path,
) -> None:
    require(MLFLOW_IMAGE)
    import boto3
    import torch
    from moto.server import ThreadedMotoServer

    from c4core.config import profile
    from c4core.tracking.runs import run_league_tracked
    from c4core.tracking.store import MLflowStore, Tracking

    s3_port, port, bucket = free_port(), free_port(), "league-image"
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=s3_port, verbose=False)
    moto.start()
    endpoint = f"http://127.0.0.1:{s3_port}"
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    s3 = boto3.client("s3", endpoint_url=endpoint, **keys)
    s3.create_bucket(Bucket=bucket)
    name = f"c4-mlflow-test-{os.getpid()}"
    env = {
        "BACKEND_STORE_URI": postgres.uri(),
        "ARTIFACTS_DESTINATION": f"s3://{bucket}/mlflow",
        "MLFLOW_S3_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        # the image listens on 0.0.0.0 (a container's own network); on the host's network that
        # would be every interface of this machine
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    flags = [f"--env={k}={v}" for k, v in env.items()]
    log_path = tmp_path / "server.log"
    cmd = ["podman", "run", "--rm", "--name", name, "--network", "host", *flags, MLFLOW_IMAGE]  # its own CMD
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=podman_env())
    url = f"http://127.0.0.1:{port}"
    threads = torch.get_num_threads()
    try:
        wait_for_http(f"{url}/health", proc, log_path, "the connect4-mlflow image", 180)
        assert podman("exec", name, "id", "-un").stdout.strip() == "mlflow"  # not root in the image
        quiet = "from mlflow.telemetry.utils import is_telemetry_disabled as off; print(off())"
        assert podman("exec", name, "python", "-c", quiet).stdout.strip() == "True"  # reports nothing out
        torch.set_num_threads(1)
        tracking = Tracking.for_uri(url)
        config = profile("smoke", name="image")
        store = MLflowStore(tracking, config)
        final = run_league_tracked(store, config)
        check_smoke_league_on_server(store, tracking.client(), final, "image")
        # the bytes went to S3 through the server in the container, the runs into Postgres
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="mlflow/")["Contents"]]
        assert sum(k.endswith("checkpoint/gen1.pt") for k in keys) == 1
    finally:
        torch.set_num_threads(threads)
        podman("rm", "--force", "--time", "5", name, check=False)
        proc.wait(30)
        moto.stop()
    conn = postgres.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs WHERE status = 'FINISHED'")
            (finished,) = cur.fetchone()
    finally:
        conn.close()
    assert finished >= 1 + 2 + 5  # the league, its generations, its matches
