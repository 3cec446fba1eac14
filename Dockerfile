# imgkit's own image: what a fleet check's pods run `imgkit judge` in (`imgkit export k8s
# --fleet --judge-image IMAGE`). It needs no Docker engine and no GPU: it reads the judged
# image's config from its registry and the report the probe wrote beside it.
#
#   docker build -t registry.example.com/ml/imgkit:0.1 .
#   docker push registry.example.com/ml/imgkit:0.1
#
# BASE: any image with Python 3.10 or later and pip.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
COPY pyproject.toml setup.py MANIFEST.in README.md /src/
COPY src /src/src
COPY templates /src/templates
RUN python3 -m pip install --no-cache-dir /src && rm -rf /src
# nobody: the pod runs it as a non-root user with a read-only root (HOME and the cache on /tmp)
USER 65534:65534
ENV HOME=/tmp IMGKIT_CACHE_DIR=/tmp/imgkit
ENTRYPOINT ["imgkit"]
