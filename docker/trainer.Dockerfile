# The trainer image: CUDA torch plus c4core. The DAG's KubernetesPodOperator runs
#   python -m c4core.steps train --request '{...}' --xcom /airflow/xcom/return.json
# in it, on a node with an NVIDIA GPU (the NVIDIA container toolkit supplies the driver).
# Build from the repository root:  docker build -f docker/trainer.Dockerfile -t connect4-trainer:0.1.0 .
FROM python:3.11-slim-bookworm

# MLFLOW_DISABLE_TELEMETRY: MLflow 3 reports usage to its makers unless told not to (it stays
# quiet under pytest and CI only); a training pod sends nothing but its runs to its own server
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MLFLOW_CONFIGURE_LOGGING=false \
    MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR=false \
    MLFLOW_DISABLE_TELEMETRY=true

WORKDIR /opt/connect4
# only the lock before the dependencies' layer: an edit of the README or of pyproject.toml then
# reuses the layer instead of reinstalling torch and the rest
COPY requirements.txt ./
# TORCH: the torch requirement. The default, PyPI's Linux wheel, is the CUDA build (its CUDA
# runtime comes as nvidia-* wheels, several GB): what a GPU node needs. A CPU-only build names
# the CPU wheel, e.g. --build-arg TORCH=torch==<the lock's version>+cpu, with the CPU wheel index
# as an extra pip index or a wheel folder pip finds (docker/build-local.sh). The lock file pins
# every version the league was tested with.
ARG TORCH=torch
RUN pip install -c requirements.txt "$TORCH" numpy numba scipy tqdm mlflow boto3
COPY pyproject.toml README.md ./
COPY c4core ./c4core
RUN pip install --no-deps . \
    && python -c "import c4core.steps, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

RUN useradd --create-home --uid 50000 connect4
USER connect4
ENTRYPOINT []
CMD ["python", "-m", "c4core.steps", "--help"]
