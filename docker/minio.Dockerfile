# The MinIO server of the local Kubernetes (devtools/kube_local/manifests/minio.yaml):
# the binary scripts/minio-build.sh builds from MinIO's Go module, on the registry-free
# Debian base. Built by scripts/minio-image.sh, whose build context is a temporary
# directory holding only that binary (it is never committed):
#
#   docker build --network host --build-arg BASE_IMAGE=cjob-base:bookworm \
#       -f docker/minio.Dockerfile -t cjob-minio:RELEASE.<date> <dir with ./minio>
#
# Runs as UID/GID 10001 (numeric, so `runAsNonRoot` can verify it) with a read-only root
# filesystem: it writes only to its data directory (/data) and HOME (/tmp, where MinIO
# keeps its certs directory), so mount something writable on both (an emptyDir each).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ARG MINIO_RELEASE
LABEL org.opencontainers.image.title="cjob-minio" \
      org.opencontainers.image.description="MinIO ${MINIO_RELEASE}, the local Kubernetes' object store" \
      org.opencontainers.image.licenses="AGPL-3.0-only" \
      org.opencontainers.image.version="${MINIO_RELEASE}" \
      io.checkpointed-jobs.target="minio"
RUN set -eux; \
    groupadd --system --gid 10001 minio; \
    useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
        --shell /usr/sbin/nologin minio; \
    mkdir -p /data; \
    chown 10001:10001 /data
COPY --chmod=0755 minio /usr/local/bin/minio
ENV HOME=/tmp
WORKDIR /tmp
USER 10001:10001
EXPOSE 9000
ENTRYPOINT ["/usr/local/bin/minio"]
CMD ["server", "/data", "--address", ":9000"]
