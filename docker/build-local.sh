#!/usr/bin/env bash
# Build this repo's images with podman on a machine that can reach no image registry.
#
#   docker/build-local.sh [STEP...]     STEP: bases, trainer, mlflow (default: all three, in order)
#
# bases   stand-ins for the two base images nothing here can pull, made from Debian packages and
#         labelled as stand-ins (label connect4.stand-in=true):
#         - python:3.11-slim-bookworm: a debootstrap'ed bookworm (Debian's Python 3.11), made to
#           behave as the official image does: `python` and `pip` on PATH, no PEP 668
#           EXTERNALLY-MANAGED marker, CMD python3;
#         - the provider's XCom sidecar image (alpine:<pinned>): a static busybox, which gives the
#           sidecar the `sh` and `sleep` it runs.
#         An existing stand-in is kept (REBUILD_BASES=1 makes it anew); an image of that name that
#         is not a stand-in (a real pull) is kept and built on, never replaced.
# trainer docker/trainer.Dockerfile, unchanged, with the CPU torch wheel (TORCH below): the default
#         of the Dockerfile, PyPI's CUDA build, is several GB.
# mlflow  docker/mlflow.Dockerfile, unchanged.
#
# Environment (all optional):
#   CONTAINERS_CONF  podman settings (default: docker/containers.conf: runc, ulimits that fit a sandbox)
#   DEBIAN_MIRROR    where debootstrap fetches bookworm (default: the first deb822 URI apt uses)
#   TORCH            the trainer's torch requirement (default: torch==<lock's version>+cpu)
#   TRAINER_IMAGE / MLFLOW_IMAGE   tags (default connect4-trainer:0.1.0, connect4-mlflow:0.1.0)
#
# pip inside the builds: when this machine's pip config names local sources (file:// indexes,
# find-links folders), the builds get the same sources, the local ones mounted read-only and a
# pip.conf at /etc/pip.conf for the build only (nothing of it lands in an image); PyPI stays
# pip's index unless that config replaces it. A `cert` there (a proxy's CA bundle) is mounted too.
# Containers and builds use the host's network (loopback included), never podman's bridge.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/docker/containers.conf}"
[[ -f "$CONTAINERS_CONF" ]] || { echo "build-local.sh: no CONTAINERS_CONF file $CONTAINERS_CONF" >&2; exit 2; }
# absolute: podman's helper processes (the build's copier) read it from another directory
CONTAINERS_CONF="$(realpath "$CONTAINERS_CONF")"
export CONTAINERS_CONF
PY="${PY:-$repo/.venv/bin/python}"
[[ -x "$PY" ]] || PY=python3
TRAINER_IMAGE="${TRAINER_IMAGE:-connect4-trainer:0.1.0}"
MLFLOW_IMAGE="${MLFLOW_IMAGE:-connect4-mlflow:0.1.0}"
PYTHON_BASE="docker.io/library/python:3.11-slim-bookworm"
# the sidecar image the provider pins (read from it, so an upgrade of the provider follows)
SIDECAR_IMAGE="docker.io/library/$("$PY" -c 'from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import XCOM_SIDECAR_IMAGE as i; print(i)' 2>/dev/null || echo alpine:3.24.2)"
STAND_IN_LABEL="connect4.stand-in"

die() { echo "build-local.sh: $*" >&2; exit 2; }
steps=("$@")
((${#steps[@]})) || steps=(bases trainer mlflow)
for s in "${steps[@]}"; do
    case "$s" in bases | trainer | mlflow) ;; *) die "unknown step $s (bases, trainer, mlflow)" ;; esac
done
for exe in podman runc debootstrap; do
    command -v "$exe" >/dev/null || die "$exe is missing (apt-get install -y podman runc debootstrap)"
done
[[ "$(id -u)" == 0 ]] || die "debootstrap and rootful podman need root"

work="$(mktemp -d /tmp/c4-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
timed() {  # timed WHAT CMD...: run CMD, then say how long it took
    local what="$1" start=$SECONDS
    shift
    "$@"
    echo "build-local.sh: $what in $((SECONDS - start)) s" >&2
}
size_of() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB\n", $1 / 1e6}'; }

# ---- the stand-in bases -------------------------------------------------------------------------
keep_base() {  # 0: keep the image of that name (a stand-in, or the real one); 1: build a stand-in
    podman image exists "$1" || return 1
    local label
    label="$(podman image inspect --format "{{index .Labels \"$STAND_IN_LABEL\"}}" "$1")"
    if [[ "$label" != true ]]; then
        echo "build-local.sh: keeping $1: it is not a stand-in (a real image, pulled or loaded)" >&2
        return 0
    fi
    [[ -z "${REBUILD_BASES:-}" ]] || return 1
    echo "build-local.sh: keeping the stand-in $1 (REBUILD_BASES=1 makes it anew)" >&2
}

labels() {  # labels STANDS_IN_FOR HOW: --change flags that mark an imported image as a stand-in
    printf '%s\n' --change "LABEL $STAND_IN_LABEL=true" \
        --change "LABEL connect4.stands-in-for=$1" \
        --change "LABEL org.opencontainers.image.description=\"STAND-IN for $1, not the official image: $2 (docker/build-local.sh)\""
}

python_base() {
    local mirror="${DEBIAN_MIRROR:-}"
    if [[ -z "$mirror" ]]; then  # the mirror apt already uses, so nothing new must be reachable
        mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
        mirror="${mirror:-http://deb.debian.org/debian}"
    fi
    local root="$work/python-rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
    # what the official image has and Debian's Python lacks: `python` and `pip` on PATH, and a
    # pip that installs into the system Python (no PEP 668 marker; Debian's pip then installs
    # into /usr/local/lib/python3.11/dist-packages, the image's own site-packages stays Debian's)
    ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
    ln -sf /usr/bin/pip3 "$root/usr/local/bin/pip"
    rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
    # slim: no package downloads or lists in the image (the official one drops them too)
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    local version
    version="$(chroot "$root" python3 -c 'import platform; print(platform.python_version())')"
    mapfile -t flags < <(labels python:3.11-slim-bookworm "Debian bookworm's python3 $version, debootstrap'ed")
    tar -C "$root" -c . | podman import -q "${flags[@]}" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' - "$PYTHON_BASE" >/dev/null
    echo "build-local.sh: $PYTHON_BASE (stand-in, Python $version): $(size_of "$PYTHON_BASE")" >&2
}

sidecar_base() {
    local root="$work/sidecar-rootfs"
    mkdir -p "$root/bin" "$root/tmp" "$work/deb"
    (cd "$work/deb" && apt-get download -o APT::Sandbox::User=root busybox-static >/dev/null) || die "apt-get download busybox-static failed"
    dpkg-deb -x "$work"/deb/busybox-static_*.deb "$work/deb/x"
    cp "$work/deb/x/bin/busybox" "$root/bin/busybox"
    for applet in $("$root/bin/busybox" --list); do
        [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
    done
    mapfile -t flags < <(labels "${SIDECAR_IMAGE#docker.io/library/}" "Debian's static busybox")
    tar -C "$root" -c . | podman import -q "${flags[@]}" --change 'ENV PATH=/bin' \
        --change 'CMD ["sh"]' - "$SIDECAR_IMAGE" >/dev/null
    echo "build-local.sh: $SIDECAR_IMAGE (stand-in): $(size_of "$SIDECAR_IMAGE")" >&2
}

# ---- pip's sources inside the builds ------------------------------------------------------------
pip_mounts=()
pip_checked=""
pip_sources() {
    pip_checked=1
    local conf="$work/pip.conf" dirs
    dirs="$("$PY" - "$conf" <<'EOF'
import subprocess, sys
from pathlib import Path

# `pip config list` prints scope.key='value' lines: the same sources, with PyPI kept unless the
# config replaces it (the local ones on the dev VM do not hold every pinned version)
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
index, indexes, links, cert = None, [], [], None
for line in out.splitlines():
    key, _, value = line.partition("=")
    key, values = key.rsplit(".", 1)[-1], value.strip().strip("'\"").split()
    for v in values:
        if key == "index-url":
            index = v
        if key == "extra-index-url" and v not in indexes:
            indexes.append(v)
        if key == "find-links" and v not in links:
            links.append(v)
        if key == "cert":
            cert = v
local = [v for v in [index or "", *indexes] if v.startswith("file://")] + [v for v in links if v.startswith("/")]
if not local and not cert:
    sys.exit(0)  # nothing here to mount: the builds use pip's defaults (PyPI)
lines = ["[global]"] + ([f"index-url = {index}"] if index else [])
if indexes:
    lines.append("extra-index-url = " + " ".join(indexes))
if links:
    lines.append("find-links = " + " ".join(links))
if cert:  # a TLS-intercepting proxy's CA, which the image's own bundle lacks: mounted below
    lines.append("cert = /run/c4-build/ca.crt")
    print(f"{cert}:/run/c4-build/ca.crt")
Path(sys.argv[1]).write_text("\n".join(lines) + "\n")
# the folders to mount: each index's root (file:///opt/pypi/simple -> /opt/pypi) and each link
for v in sorted(set(local)):
    folder = Path(v.removeprefix("file://")).parent if v.endswith("/simple") else v.removeprefix("file://")
    print(f"{folder}:{folder}")
EOF
)" || die "could not read this machine's pip config"
    if [[ -f "$conf" ]]; then
        pip_mounts=(--volume "$conf:/etc/pip.conf:ro")
        for mount in $dirs; do pip_mounts+=(--volume "$mount:ro"); done
        echo "build-local.sh: pip inside the builds uses $(grep -v '^\[' "$conf" | tr '\n' ' ')" >&2
    else
        echo "build-local.sh: pip inside the builds uses PyPI" >&2
    fi
}

build() {  # build DOCKERFILE TAG [podman build flags]
    local file="$1" tag="$2"
    shift 2
    # --pull=never: the bases are the local stand-ins (or real images already here), never a pull
    podman build --pull=never --network host "${pip_mounts[@]}" "$@" \
        -f "docker/$file" -t "$tag" . >"$work/$file.log" 2>&1 \
        || { tail -40 "$work/$file.log" >&2; die "podman build -f docker/$file failed"; }
    echo "build-local.sh: $tag: $(size_of "$tag")" >&2
}

for s in "${steps[@]}"; do
    case "$s" in
        bases)
            keep_base "$PYTHON_BASE" || timed "the python stand-in" python_base
            keep_base "$SIDECAR_IMAGE" || timed "the sidecar stand-in" sidecar_base
            ;;
        trainer | mlflow)
            podman image exists "$PYTHON_BASE" || die "no $PYTHON_BASE here: run docker/build-local.sh bases first"
            [[ -n "$pip_checked" ]] || pip_sources
            if [[ "$s" == trainer ]]; then
                pinned="$(sed -n 's/^torch==//p' requirements.txt)"
                timed "$TRAINER_IMAGE" build trainer.Dockerfile "$TRAINER_IMAGE" \
                    --build-arg "TORCH=${TORCH:-torch==$pinned+cpu}"
            else
                timed "$MLFLOW_IMAGE" build mlflow.Dockerfile "$MLFLOW_IMAGE"
            fi
            ;;
    esac
done
