# The syncer agent image: `syncer run` (and `syncer controller`) as a non-root user.
#
#   docker build -t syncer:0.1.0.dev0 .
#
# Two stages: the first builds a virtual environment with syncer and its runtime dependencies only
# (no dev extras, no compilers left behind); the second is the slim Python base plus git, gnupg and
# openssh-client, which commit signature verification and ssh:// remotes need.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md ./
COPY syncer ./syncer
RUN python -m venv /opt/syncer \
    && /opt/syncer/bin/pip install --no-compile . \
    && /opt/syncer/bin/python -m compileall -q /opt/syncer/lib

FROM ${PYTHON_IMAGE}
# The Debian release is pinned by the base image tag; package versions follow its security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git gnupg openssh-client \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 syncer \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin syncer \
    && install -d -o 10001 -g 10001 -m 0750 /var/cache/syncer
COPY --from=build /opt/syncer /opt/syncer
ENV PATH=/opt/syncer/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# Numeric, so that PodSecurity runAsNonRoot can check it; the chart runs it with the same ids.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["syncer", "run"]
