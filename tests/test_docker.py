"""``docker/``: what can be checked without building or running anything.

Every Dockerfile parses into known instructions from a pinned base image, every path it copies
exists and survives its ``.dockerignore``, its version pins agree with ``requirements.txt``; the
compose file parses, and everything it builds, mounts or depends on exists; the Kubernetes
secret example holds exactly the keys the DAG's trainer pod reads; the local build script and
its podman settings are sound. The images themselves are built by ``docker/build-local.sh`` and
run by ``tests/test_pod.py`` (with podman).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))
INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
    "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        word, _, rest = pending.partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    assert not pending, f"{path.name} ends inside a continued line"
    return out


def locked() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[name.lower().replace("_", "-")] = version
    return pins


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; ``!`` re-includes."""
    result = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat.lstrip("!")
        if fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat.removesuffix("/**")):
            result = not negate
    return result


def test_there_are_the_three_images_and_no_package_marker() -> None:
    assert {p.name for p in DOCKERFILES} == {"trainer.Dockerfile", "airflow.Dockerfile", "mlflow.Dockerfile"}
    # an __init__.py would make docker/ a package that shadows the real `docker` library
    assert not list(DOCKER.rglob("__init__.py"))


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_parses_copies_what_exists_and_pins_its_base(dockerfile: Path) -> None:
    steps = instructions(dockerfile)
    assert steps and steps[0][0] == "FROM"
    assert {word for word, _ in steps} <= INSTRUCTIONS
    for word, args in steps:
        if word == "FROM":
            image = args.split()[0]
            assert ":" in image and not image.endswith(":latest"), image
        if word in ("CMD", "ENTRYPOINT") and args.startswith("["):
            assert isinstance(ast.literal_eval(args), list)  # exec form is a JSON list
    patterns = [
        line.strip()
        for line in (DOCKER / f"{dockerfile.name}.dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = []
    for word, args in steps:
        if word != "COPY":
            continue
        parts = [p for p in shlex.split(args) if not p.startswith("--")]
        for src in parts[:-1]:
            assert (REPO / src).exists(), f"{dockerfile.name} copies {src}, which the repo lacks"
            assert not ignored(src, patterns), f"{src} is excluded by {dockerfile.name}.dockerignore"
            copied.append(src)
    assert "requirements.txt" in copied  # the lock constrains every install
    # a pin written in a Dockerfile agrees with the lock
    pins = locked()
    text = dockerfile.read_text()
    for name, version in re.findall(r"([A-Za-z0-9_.-]+)==([0-9][^\s\"']*)", text):
        if name.lower() in pins:
            assert pins[name.lower()] == version, (dockerfile.name, name)
    # every image runs MLflow, and MLflow 3 reports usage unless told not to (it stays quiet only
    # under pytest and CI)
    assert any(word == "ENV" and "MLFLOW_DISABLE_TELEMETRY=true" in args for word, args in steps)
    if dockerfile.name == "airflow.Dockerfile":
        assert f"apache/airflow:{pins['apache-airflow']}-python3.11" in text
        assert "COPY --chown=airflow:root dags /opt/airflow/dags" in text
        assert "plugins /opt/airflow/plugins" in text
    if dockerfile.name == "trainer.Dockerfile":
        assert "c4core" in copied and "download.pytorch.org/whl/cpu" not in text
        # the torch requirement is a build argument whose default is PyPI's wheel, the CUDA
        # build a GPU node needs; only a local build (build-local.sh) names the CPU wheel
        assert ("ARG", "TORCH=torch") in steps
        assert any(word == "RUN" and '"$TORCH"' in args for word, args in steps)
        # the pod runs as the image's user (the DAG's TRAINER_UID), so the XCom volume is its own
        assert f"--uid {dag_constant('TRAINER_UID')} connect4" in text
    if dockerfile.name == "mlflow.Dockerfile":
        cmd = ast.literal_eval(next(args for word, args in steps if word == "CMD"))
        script = cmd[-1].removeprefix("/opt/connect4/")
        assert (REPO / script).is_file() and "mlflow" in copied


def test_compose_parses_and_everything_it_references_exists() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    expected = {
        "postgres",
        "minio",
        "mlflow",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
    }
    assert expected <= set(services)
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        if "image" in svc and "build" not in svc:
            assert ":" in svc["image"] and not svc["image"].endswith(":latest"), name
        if "build" in svc:
            context = (DOCKER / svc["build"]["context"]).resolve()
            assert context == REPO, name  # the repo root, as the Dockerfiles expect
            assert (context / svc["build"]["dockerfile"]).is_file(), name
        for dep in svc.get("depends_on", {}):
            assert dep in services, (name, dep)
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)  # localhost only
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DOCKER / source).exists(), (name, source)
            else:
                assert source in compose["volumes"], (name, source)
    airflow = services["airflow-scheduler"]["environment"]
    assert airflow["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
    assert airflow["MLFLOW_CONFIGURE_LOGGING"] == "false"
    # the two stores are apart: Airflow and MLflow each have their own database
    assert airflow["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith("/airflow")
    assert services["mlflow"]["environment"]["BACKEND_STORE_URI"].endswith("/mlflow")
    assert services["mlflow"]["environment"]["ARTIFACTS_DESTINATION"].startswith("s3://")
    # the execution API's first request (its routes built) is the api-server's health check, and
    # no task starts before it: the scheduler waits for it, on top of what every Airflow service waits for
    check = " ".join(services["airflow-apiserver"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8080/execution/health" in check, check
    waits = services["airflow-scheduler"]["depends_on"]
    assert waits["airflow-apiserver"] == {"condition": "service_healthy"}, waits
    assert services["airflow-dag-processor"]["depends_on"].items() < waits.items(), waits
    init = (DOCKER / "postgres-init.sql").read_text()
    assert "CREATE DATABASE airflow" in init and "CREATE DATABASE mlflow" in init


def dag_constant(name: str) -> object:
    """A constant of the DAG file, read without importing Airflow."""
    tree = ast.parse((REPO / "dags" / "connect4_league.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"the DAG file has no constant {name}")


def test_the_secret_example_holds_the_keys_the_trainer_pod_reads() -> None:
    secret = yaml.safe_load((DOCKER / "k8s-secret.example.yaml").read_text())
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == "connect4-mlflow"
    keys, optional = set(dag_constant("SECRET_KEYS")), set(dag_constant("OPTIONAL_SECRET_KEYS"))
    assert set(secret["stringData"]) == keys
    assert keys - optional == {"MLFLOW_TRACKING_URI"}  # the one key a pod cannot start without
    readme = (DOCKER / "README.md").read_text()
    assert "connect4-trainer:0.1.0" in readme and "**Never run:**" in readme and "STAND-IN" in readme
    assert 'C4_TRAINER_IMAGE", "connect4-trainer:0.1.0"' in (REPO / "dags" / "connect4_league.py").read_text()


def test_the_local_build_script_parses_and_builds_the_dockerfiles_unchanged() -> None:
    script = DOCKER / "build-local.sh"
    assert script.stat().st_mode & 0o111, "build-local.sh is not executable"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    # it builds the repo's own Dockerfiles (no copies), from the base names they name, never pulling
    assert "trainer.Dockerfile" in text and "mlflow.Dockerfile" in text and "--pull=never" in text
    assert "docker.io/library/python:3.11-slim-bookworm" in text
    base = {
        args.split()[0]
        for f in ("trainer.Dockerfile", "mlflow.Dockerfile")
        for w, args in instructions(DOCKER / f)
        if w == "FROM"
    }
    assert base == {"python:3.11-slim-bookworm"}
    # a stand-in says so, and behaves like the image it stands in for
    assert "connect4.stand-in" in text and "EXTERNALLY-MANAGED" in text
    # the network it gives builds is the host's, never podman's bridge
    assert "--network host" in text and "--network bridge" not in text
    bad = subprocess.run(["bash", str(script), "everything"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown step everything (bases, trainer, mlflow)" in bad.stderr


def test_the_podman_settings_pick_runc_and_ulimits_the_sandbox_allows() -> None:
    conf = tomllib.loads((DOCKER / "containers.conf").read_text())
    assert conf["engine"]["runtime"] == "runc"  # crun stops on this machine's hybrid cgroups
    limits = dict(item.split("=") for item in conf["containers"]["default_ulimits"])
    assert set(limits) == {"nofile", "nproc"}
    assert all(int(v) <= 1024 for pair in limits.values() for v in pair.split(":"))
