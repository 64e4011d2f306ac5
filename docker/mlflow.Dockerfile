# The MLflow tracking server: Postgres for runs and the registry, S3 (MinIO here) for artifacts,
# proxied, so clients need only the tracking URI. It runs the repo's mlflow/server-postgres-s3.sh.
# Build from the repository root:  docker build -f docker/mlflow.Dockerfile -t connect4-mlflow:0.1.0 .
FROM python:3.11-slim-bookworm

# MLFLOW_DISABLE_TELEMETRY: MLflow 3 reports usage to its makers unless told not to; the
# league's server sends nothing out
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 MLFLOW_DISABLE_TELEMETRY=true
COPY requirements.txt /opt/connect4/requirements.txt
RUN pip install -c /opt/connect4/requirements.txt mlflow boto3 \
    && pip install psycopg2-binary==2.9.13
COPY mlflow /opt/connect4/mlflow
RUN useradd --create-home --uid 50001 mlflow
USER mlflow
# MLFLOW_HOME: server.sh creates it, and the default (the repo's mlruns/) is root's in the image
ENV HOST=0.0.0.0 PORT=5000 MLFLOW=mlflow MLFLOW_HOME=/home/mlflow
EXPOSE 5000
CMD ["bash", "/opt/connect4/mlflow/server-postgres-s3.sh"]
