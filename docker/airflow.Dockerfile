# The Airflow image: Airflow 3.3 with the Kubernetes provider, c4core (CPU torch: pick, matches,
# Elo and registration run on the workers), the league DAG and its MLflow links plugin.
# Build from the repository root:  docker build -f docker/airflow.Dockerfile -t connect4-airflow:0.1.0 .
FROM apache/airflow:3.3.2-python3.11

# MLFLOW_DISABLE_TELEMETRY: MLflow 3 reports usage to its makers unless told not to
ENV MLFLOW_CONFIGURE_LOGGING=false \
    MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false \
    MLFLOW_DISABLE_TELEMETRY=true \
    AIRFLOW__CORE__LOAD_EXAMPLES=False

COPY requirements.txt /opt/connect4/requirements.txt
# the CPU build of torch is enough on the workers; the lock pins everything else
RUN pip install --no-cache-dir -c /opt/connect4/requirements.txt \
        --extra-index-url https://download.pytorch.org/whl/cpu \
        "apache-airflow==3.3.2" apache-airflow-providers-cncf-kubernetes torch numpy numba scipy tqdm mlflow boto3
COPY --chown=airflow:root pyproject.toml README.md /opt/connect4/
COPY --chown=airflow:root c4core /opt/connect4/c4core
RUN pip install --no-cache-dir --no-deps /opt/connect4
COPY --chown=airflow:root dags /opt/airflow/dags
COPY --chown=airflow:root plugins /opt/airflow/plugins
