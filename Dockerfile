# syntax=docker/dockerfile:1
# dra-migrate admission webhook / translator image.
#   docker build -t dra-migrate:0.1.0 .
# Both stages use the same base so the venv's interpreter path stays valid.
# For reproducible builds pin a digest: --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- builder: build the wheel and install it with its dependencies into a venv
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    PYTHONUNBUFFERED=1
WORKDIR /src
RUN python -m venv /opt/venv
# .dockerignore keeps .git, .venv, tests, deploy (and its private keys) out.
COPY . .
RUN --mount=type=cache,target=/root/.cache/pip \
    /opt/venv/bin/pip wheel --wheel-dir /tmp/wheels --no-deps . \
 && /opt/venv/bin/pip install /tmp/wheels/*.whl \
 && /opt/venv/bin/pip uninstall --yes pip setuptools

# ---- runtime: interpreter + venv only; no compilers, no pip in the venv
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="dra-migrate" \
      org.opencontainers.image.description="Mutating admission webhook and translator: device-plugin GPU requests to Kubernetes DRA (resource.k8s.io/v1)" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH="/opt/venv/bin:${PATH}"
# A named user for 65532 (libraries that look up the passwd entry), no home.
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin nonroot \
 && mkdir -p /etc/dra-migrate/tls
COPY --from=builder /opt/venv /opt/venv
# Numeric, so Kubernetes runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["dra-migrate"]
# Keep in sync with deploy/base/deployment.yaml (tests/deploy checks it).
CMD ["serve", "--config", "/etc/dra-migrate/config.yaml", "--cert", "/etc/dra-migrate/tls/tls.crt", "--key", "/etc/dra-migrate/tls/tls.key", "--port", "8443"]
