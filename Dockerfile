# The syncer agent image: `syncer run` (and `syncer controller`) as a non-root user.
#
#   scripts/image                      # here: buildah, FROM a local debootstrap base
#   scripts/image --base docker.io/library/python:3.11-slim-bookworm
#
# scripts/image first writes build/image/: the wheels of syncer and its runtime dependencies (built
# outside the image, so no compiler enters it) and requirements.lock with their sha256 hashes. Two
# stages: the first installs those wheels alone (--no-index --require-hashes) into a virtual
# environment; the second is the base plus git, gnupg and openssh-client, which commit signature
# verification and ssh:// remotes need. PYTHON_IMAGE is any Debian bookworm image with python3.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY build/image/ /wheels/
RUN python3 -m venv /opt/syncer \
    && /opt/syncer/bin/pip install --no-index --find-links /wheels/wheels --require-hashes \
       --requirement /wheels/requirements.lock \
    && /opt/syncer/bin/pip uninstall --yes pip

FROM ${PYTHON_IMAGE}
# The Debian release is pinned by the base image tag; package versions follow its security updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git gnupg openssh-client \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
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
