# Checkpointed Jobs images. Two targets:
#
#   operator  the Kubernetes operator (kopf + kubernetes + prometheus-client, and
#             jsonschema + cel-python: it checks every job against the CRD it ships);
#             what charts/checkpointed-operator deploys.
#   runtime   Java 17 JRE + pyspark 4 + the runtime and `cjob`; the image of job
#             drivers and of their Spark executors (spec.image of a CheckpointedJob).
#
# Build (BuildKit; needs network access to Debian and PyPI):
#
#   DOCKER_BUILDKIT=1 docker build --target operator -t cjob-operator:dev .
#   DOCKER_BUILDKIT=1 docker build --target runtime  -t cjob-runtime:dev .
#
# Behind a TLS-intercepting proxy, hand pip the CA bundle that trusts it as a build
# secret (used for the pip steps only, never stored in a layer):
#
#   docker build --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt ...
#
# Where no registry can be pulled from, make a Debian base with debootstrap and
# pass it as BASE_IMAGE (scripts/docker-smoke.sh does exactly this and then
# smoke-tests both images):
#
#   docker build --network host --build-arg BASE_IMAGE=cjob-base:bookworm ...
#
# Both images run as UID/GID 10001 (numeric, so `runAsNonRoot` can verify it)
# and work with a read-only root filesystem; /tmp is the only path they write
# to (HOME, Spark's local dirs, caches), so mount something writable there. Spark
# loads native libraries it unpacks into /tmp, so the runtime's /tmp must allow
# exec (Docker's --tmpfs does not by default; a Kubernetes emptyDir does):
#
#   docker run --rm --read-only --tmpfs /tmp:exec cjob-runtime:dev \
#       demo --store file:///tmp/cp --json
#   docker run --rm --read-only --tmpfs /tmp --network host -e KUBECONFIG=/kubeconfig \
#       -v "$HOME/.kube/config:/kubeconfig:ro" cjob-operator:dev
#
# (the kubeconfig must be readable by UID 10001). Under another UID that has no
# passwd entry, Spark needs HADOOP_USER_NAME, SPARK_USER and
# SPARK_SUBMIT_OPTS=-Duser.home=/tmp.
#
# The final images contain no compiler, no pip, no pip cache and no apt lists.

ARG BASE_IMAGE=debian:bookworm-slim

# -- python-base: the interpreter and the unprivileged user, shared by both images --
FROM ${BASE_IMAGE} AS python-base
ENV LANG=C.UTF-8 \
    LC_ALL=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 ca-certificates; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    groupadd --system --gid 10001 cjob; \
    useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin cjob

# -- builder: venv + pip; never part of a final image --------------------------------
FROM python-base AS builder
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv; \
    rm -rf /var/lib/apt/lists/*
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# docker/requirements.py: the dependencies pyproject.toml declares, for a layer of their
# own keyed on pyproject.toml only, so a source change does not download them again.
COPY docker/requirements.py /usr/local/lib/requirements.py
COPY pyproject.toml /src/pyproject.toml

# -- wheel: the project itself, built once for both images ---------------------------
FROM builder AS wheel
COPY README.md /src/README.md
COPY runtime/src /src/runtime/src
COPY operator/src /src/operator/src
# A cache of its own: the venv stages may hold theirs locked for a while.
RUN --mount=type=cache,id=pip-wheel,target=/root/.cache/pip,sharing=locked \
    --mount=type=secret,id=ca-bundle \
    set -eux; \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    python3 -m venv /opt/build; \
    /opt/build/bin/pip wheel --no-deps --wheel-dir /wheels /src

# -- operator-venv: /opt/venv with the project and its operator extra ----------------
FROM builder AS operator-venv
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked \
    --mount=type=secret,id=ca-bundle \
    set -eux; \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    python3 -m venv /opt/venv; \
    python3 /usr/local/lib/requirements.py /src/pyproject.toml operator > /tmp/requirements.txt; \
    /opt/venv/bin/pip install --requirement /tmp/requirements.txt
COPY --from=wheel /wheels /wheels
RUN set -eux; \
    /opt/venv/bin/pip install --no-deps --no-index /wheels/*.whl; \
    /opt/venv/bin/pip check; \
    /opt/venv/bin/pip uninstall --yes pip setuptools; \
    /opt/venv/bin/python -c 'import cjob_operator.main'; \
    /opt/venv/bin/python -c 'from cjob_operator import admission; admission.validator()'

# -- runtime-venv: /opt/venv with the project, its connector extras and pyspark ------
FROM builder AS runtime-venv
ARG PYSPARK_REQUIREMENT="pyspark>=4,<5"
RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked \
    --mount=type=secret,id=ca-bundle \
    set -eux; \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    python3 -m venv /opt/venv; \
    python3 /usr/local/lib/requirements.py /src/pyproject.toml nats,kafka \
        > /tmp/requirements.txt; \
    echo "${PYSPARK_REQUIREMENT}" >> /tmp/requirements.txt; \
    /opt/venv/bin/pip install --requirement /tmp/requirements.txt
COPY --from=wheel /wheels /wheels
RUN set -eux; \
    /opt/venv/bin/pip install --no-deps --no-index /wheels/*.whl; \
    /opt/venv/bin/pip check; \
    /opt/venv/bin/pip uninstall --yes pip setuptools; \
    ls /opt/venv/lib/python3*/site-packages/pyspark/jars/spark-kubernetes_*.jar

# -- operator: the image charts/checkpointed-operator runs ---------------------------
FROM python-base AS operator
LABEL org.opencontainers.image.title="cjob-operator" \
      org.opencontainers.image.description="Checkpointed Jobs Kubernetes operator (kopf)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.checkpointed-jobs.target="operator"
COPY --from=operator-venv /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    CJOB_METRICS_HOST=0.0.0.0 \
    CJOB_METRICS_PORT=8080
WORKDIR /tmp
USER 10001:10001
EXPOSE 8080
# /healthz answers while the event loop runs (Kubernetes uses its own probes from the chart).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CJOB_METRICS_PORT', '8080'), timeout=4)"]
# The chart overrides both (command: kopf, args: run --module=... --namespace=...).
ENTRYPOINT ["kopf", "run", "--module=cjob_operator.main", "--standalone"]
CMD ["--all-namespaces"]

# -- runtime: drivers and Spark executors -------------------------------------------
FROM python-base AS runtime
LABEL org.opencontainers.image.title="cjob-runtime" \
      org.opencontainers.image.description="Checkpointed Jobs runtime: cjob, pyspark and a Java 17 JRE" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.checkpointed-jobs.target="runtime"
# The JRE's man pages directory must exist for its postinst on slim bases.
RUN set -eux; \
    mkdir -p /usr/share/man/man1; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        openjdk-17-jre-headless tini; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /opt/java; \
    /opt/java/bin/java -version
COPY --from=runtime-venv /opt/venv /opt/venv
RUN ln -s "$(/opt/venv/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" \
        /opt/spark
COPY docker/runtime-entrypoint.sh /usr/local/bin/cjob-entrypoint
ENV PATH=/opt/venv/bin:$PATH \
    JAVA_HOME=/opt/java \
    SPARK_HOME=/opt/spark \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    HOME=/tmp \
    SPARK_LOCAL_DIRS=/tmp \
    XDG_CACHE_HOME=/tmp/.cache
WORKDIR /work
USER 10001:10001
# `executor` starts a Spark executor (Spark on Kubernetes passes only that argument);
# anything that is not a program on PATH is a `cjob` subcommand (`demo`, `driver`, ...).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/cjob-entrypoint"]
CMD ["--help"]
