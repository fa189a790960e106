# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build -t keda-ray-scaler .                          the scaler (default, last stage)
#   docker build -t keda-ray-scaler-agent --target agent .     the agent, FROM the Ray image, so
#                                                              it runs the cluster's Ray version
# RAY_IMAGE must be the image the Ray cluster runs (same Ray and Python versions).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG RAY_IMAGE=rayproject/ray:2.60.0-py311

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY keda_ray_scaler ./keda_ray_scaler
RUN pip wheel --wheel-dir /wheels --no-deps . \
 && pip wheel --wheel-dir /deps .

# The agent: the Ray image plus this package (Ray itself comes from the base image, not PyPI).
FROM ${RAY_IMAGE} AS agent
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 RAY_USAGE_STATS_ENABLED=0
COPY --from=build /wheels /tmp/wheels
RUN pip install /tmp/wheels/*.whl && rm -rf /tmp/wheels
# rayproject/ray runs as user "ray" (uid 1000); a numeric USER lets runAsNonRoot verify it.
USER 1000
ENTRYPOINT ["keda-ray-scaler"]
CMD ["agent", "--help"]

# The scaler: small, no Ray, non-root, works with a read-only root filesystem.
FROM ${PYTHON_IMAGE} AS scaler
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 HOME=/tmp
COPY --from=build /deps /tmp/deps
RUN pip install --no-index --find-links /tmp/deps keda-ray-scaler && rm -rf /tmp/deps
USER 65532:65532
EXPOSE 9090 9091 9100
ENTRYPOINT ["keda-ray-scaler"]
CMD ["serve"]
