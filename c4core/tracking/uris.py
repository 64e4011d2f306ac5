"""Registry URIs as players: ``models:/connect4@champion``, ``models:/connect4/7`` and
``models:/connect4/Production`` resolved to a version and its checkpoint.
"""

from __future__ import annotations

import tempfile
import warnings

from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from c4core.learners.net import Checkpoint
from c4core.tracking.store import Tracking


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
