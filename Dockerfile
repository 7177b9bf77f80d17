# kubegc's container image, for the DaemonSet and CronJobs in deploy/kubernetes/.
#
#   docker build -t kubegc:0.1.0 .
#
# It runs as root, deliberately: kubegc works on the host it is given (--host-root /host),
# and the CRI socket and the kubelet's files there are accessible to root only. The manifests
# drop every capability kubegc does not need, make the root filesystem read-only, and give
# only the pruning CronJob (which needs no host access) a non-root user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubegc_cli ./kubegc_cli
RUN pip install . \
    && rm -rf /src \
    && kubegc --version

WORKDIR /
# No ENTRYPOINT: the manifests give the whole command line (`kubegc ...`, or a loop around it).
CMD ["kubegc", "--help"]
