# syntax=docker/dockerfile:1
# Two images from one build:
#   docker build -t keda-ray-scaler .                          the scaler (default, last stage)
#   docker build -t keda-ray-scaler-agent --target agent .     the agent, FROM the Ray image, so
#                                                              it runs the cluster's Ray version
# RAY_IMAGE must be the image the Ray cluster runs (same Ray and Python versions).
# Every Python package comes from a hashed lock in locks/ (pip --require-hashes), the package
# itself from its own wheel; `make lock` (tools/lock.py) refreshes the locks and resolves the
# base images' digests from their registry again, rewriting the next line.
# Base image digests: python's as public code pinned it on 2026-09-05 (taken 2026-11-26; no registry here); Ray's none found, so its tag alone.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:528257d48c1da0dcecc2e725d1ae34498d60c965f1241e39cd6a85a8859bdf84
ARG RAY_IMAGE=rayproject/ray:2.60.0-py311

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY locks/build.txt /tmp/build.txt
COPY pyproject.toml README.md LICENSE ./
COPY keda_ray_scaler ./keda_ray_scaler
RUN pip install --require-hashes --no-deps -r /tmp/build.txt \
 && pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .

# The agent: the Ray image plus this package (Ray itself comes from the base image, not PyPI;
# locks/agent.txt holds only what the package needs beyond Ray's own dependencies).
FROM ${RAY_IMAGE} AS agent
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 RAY_USAGE_STATS_ENABLED=0
# rayproject/ray builds as user "ray" (1000, group users): it must own what it removes
COPY --chown=1000:100 locks/agent.txt /tmp/agent.txt
COPY --chown=1000:100 --from=build /wheels /tmp/wheels
RUN pip install --require-hashes --no-deps -r /tmp/agent.txt \
 && pip install --no-index --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels /tmp/agent.txt
# rayproject/ray runs as user "ray" (uid 1000); a numeric USER lets runAsNonRoot verify it.
USER 1000
ENTRYPOINT ["keda-ray-scaler"]
CMD ["agent", "--help"]

# The scaler: small, no Ray, non-root, works with a read-only root filesystem.
FROM ${PYTHON_IMAGE} AS scaler
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 HOME=/tmp
COPY locks/scaler.txt /tmp/scaler.txt
COPY --from=build /wheels /tmp/wheels
RUN pip install --require-hashes --no-deps -r /tmp/scaler.txt \
 && pip install --no-index --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels /tmp/scaler.txt
USER 65532:65532
EXPOSE 9090 9091 9100
ENTRYPOINT ["keda-ray-scaler"]
CMD ["serve"]
