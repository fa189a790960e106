# syntax=docker/dockerfile:1
# One image, both commands:
#   docker build -t keda-ray-scaler .
#   keda-ray-scaler serve    the KEDA external scaler (the default command)
#   keda-ray-scaler agent    the agent beside each Ray head: no Ray inside, it speaks to Ray's GCS
#                            over gRPC, so one image serves every supported Ray version
# Every Python package comes from a hashed lock in locks/ (pip --require-hashes), the package
# itself from its own wheel; `make lock` (tools/lock.py) refreshes the locks and resolves the
# base images' digests from their registry again, rewriting the next line.
# Base image digests: python's as public code pinned it on 2026-09-05 (taken 2026-11-26; no registry here).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:528257d48c1da0dcecc2e725d1ae34498d60c965f1241e39cd6a85a8859bdf84
# The index pip installs the locks from: PyPI. A build with no route to PyPI passes a mirror that
# holds the locks' wheels (e2e/docker/build.py does); the hashes are checked all the same.
ARG PIP_INDEX_URL=https://pypi.org/simple

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY locks/build.txt /tmp/build.txt
COPY pyproject.toml README.md LICENSE ./
COPY keda_ray_scaler ./keda_ray_scaler
ARG PIP_INDEX_URL
RUN pip install --require-hashes --no-deps -r /tmp/build.txt \
 && pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .

# The image: small, no Ray, non-root (65532; the agent sidecar's securityContext says so too),
# works with a read-only root filesystem. `serve` by default; `agent` for the Ray head's sidecar.
FROM ${PYTHON_IMAGE} AS scaler
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 HOME=/tmp
COPY locks/scaler.txt /tmp/scaler.txt
COPY --from=build /wheels /tmp/wheels
ARG PIP_INDEX_URL
RUN pip install --require-hashes --no-deps -r /tmp/scaler.txt \
 && pip install --no-index --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels /tmp/scaler.txt
USER 65532:65532
# serve: gRPC, health, metrics; agent: metrics and /healthz (--port)
EXPOSE 9090 9091 9100 9400
ENTRYPOINT ["keda-ray-scaler"]
CMD ["serve"]
