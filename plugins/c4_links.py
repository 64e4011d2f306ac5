"""Links from the league DAG's tasks to MLflow: the generation's run, its model version, the champion.

Every task of a ``generation_<g>`` group of the ``connect4_league`` DAG gets three extra links
(the buttons on a task instance's page):

- **MLflow run**: the generation's run (the main agent's), from ``train_generation``'s result.
- **Model version**: the snapshot's registered version, from ``register_and_promote``'s result.
- **Champion**: the version that held the ``champion`` alias once that generation finished.

They are *global* links, computed by the API server when the page asks: each reads the XCom
results of its own group, so a link appears as soon as the task that knows it has finished and
stays empty before that, or on any other DAG. The MLflow UI refuses to be framed, so these are
plain links out, to ``$C4_MLFLOW_UI_URL`` (default ``http://127.0.0.1:5000``, what ``make up``
starts).

The plugin also puts an "MLflow" entry in the navigation bar's **Browse** menu, a plain link out
(``<a href target=_blank>``) to MLflow's experiments in the model-training view. An external
view with no ``url_route`` and none of the menu categories (``browse``, ``admin``, ``docs`` or
``user``) becomes a top-level icon instead, and Airflow 3.3.2's UI renders that icon as
``<button href=...>``, which goes nowhere when clicked; a menu entry is rendered as a real
link. A ``url_route`` would frame the page, which the MLflow UI refuses.
"""

from __future__ import annotations

import json
import os
from typing import Any

from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperatorLink

DAG_ID = "connect4_league"


TRAINING_VIEW = "?workflowType=machine_learning"
"""Opens MLflow 3.17's pages in its model-training view: the UI's workflow is a global toggle
that starts on GenAI, and this query parameter is how a link chooses. Every link here carries it."""


EXPERIMENTS = f"/#/experiments{TRAINING_VIEW}"
"""Where the navigation bar's MLflow entry lands: the experiments, in the model-training view."""


def mlflow_ui() -> str:
    return os.environ.get("C4_MLFLOW_UI_URL", "http://127.0.0.1:5000").rstrip("/")


def group_result(ti_key: Any, step: str) -> dict[str, Any] | None:
    """The return value of `step` in the same generation group as the task of `ti_key`: for a
    step that trains every role (a list in-process, a task mapped over the roles on Kubernetes,
    the main agent first), the main agent's."""
    if ti_key.dag_id != DAG_ID:
        return None
    group = ti_key.task_id.split(".", 1)[0]
    if not group.startswith("generation_"):
        return None
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.execute(
            XComModel.get_many(
                key="return_value",
                run_id=ti_key.run_id,
                dag_ids=ti_key.dag_id,
                task_ids=f"{group}.{step}",
            )
            .with_only_columns(XComModel.value)
            .order_by(None)
            .order_by(XComModel.map_index)
        ).first()
    if row is None:
        return None
    value = row.value
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list):  # every role's result: the main agent's
        value = next((v for v in value if isinstance(v, dict) and v.get("role", "main") == "main"), None)
    return value if isinstance(value, dict) else None


class MLflowRunLink(BaseOperatorLink):
    """The generation's MLflow run (params, per-iteration metrics, checkpoint, model)."""

    name = "MLflow run"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        out = group_result(ti_key, "train_generation")
        if not out or not out.get("run_id"):
            return ""
        return f"{mlflow_ui()}/#/experiments/{out['experiment_id']}/runs/{out['run_id']}{TRAINING_VIEW}"


class ModelVersionLink(BaseOperatorLink):
    """The snapshot's version of the registered model (tags: elo, elo_ci95, win_vs_tactical)."""

    name = "Model version"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        out = group_result(ti_key, "register_and_promote")
        if not out:
            return ""
        return f"{mlflow_ui()}/#/models/{out['model_name']}/versions/{out['version']}{TRAINING_VIEW}"


class ChampionLink(BaseOperatorLink):
    """The champion (alias ``champion``, stage Production) once the generation was promoted."""

    name = "Champion"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        out = group_result(ti_key, "register_and_promote")
        if not out:
            return ""
        return f"{mlflow_ui()}/#/models/{out['model_name']}/versions/{out['champion_version']}{TRAINING_VIEW}"


class Connect4LinksPlugin(AirflowPlugin):
    name = "connect4_links"
    global_operator_extra_links = [MLflowRunLink(), ModelVersionLink(), ChampionLink()]
    # category "browse": a link in the Browse menu (see the module docstring for why not top-level)
    # the experiments list in the model-training view: MLflow's own home page is the GenAI one
    external_views = [
        {"name": "MLflow", "href": mlflow_ui() + EXPERIMENTS, "destination": "nav", "category": "browse"}
    ]
