"""A build through Podman's Docker-compatible API with secret mounts: Podman's builder
(buildah) runs the BuildKit form of imgkit's contexts (`RUN --mount=type=bind` for files,
`--mount=type=secret` for the CA bundle and index), and its /build endpoint takes a
`secrets` parameter that Docker's legacy builder and docker-py do not know.

Each secret travels in the context's tar as a top-level file, named in `secrets` by its
path there; Podman moves it out of the context before the build reads the context, so no
layer can copy it (podman's pkg/api/handlers/compat/images_build.go, processSecrets). Only
a top-level name works: Podman moves it to the same name one folder up."""
from __future__ import annotations

import io
import json
import tarfile
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generator

if TYPE_CHECKING:
    import docker

SECRET_PREFIX = ".imgkit-secret-"


def context_tar(context_dir: Path, secrets: dict[str, bytes]) -> IO[bytes]:
    """The context folder and each secret (id -> content) as one tar, rewound."""
    spool: IO[bytes] = tempfile.TemporaryFile()
    with tarfile.open(fileobj=spool, mode="w") as tar:
        for path in sorted(context_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(context_dir)), recursive=False)
        for secret_id, content in secrets.items():
            info = tarfile.TarInfo(SECRET_PREFIX + secret_id)
            info.size, info.mode = len(content), 0o600
            tar.addfile(info, io.BytesIO(content))
    spool.seek(0)
    return spool


def build_stream(api: docker.APIClient, context_dir: Path, secrets: dict[str, bytes], *,
                 nocache: bool, buildargs: dict[str, str]) -> Generator[Any, None, None]:
    """The build's decoded JSON stream, as docker-py's own build() returns it. docker-py
    has no way to add a query parameter to /build, so the request is its own: the same
    private helpers (_post, _url, _stream_helper) its build() calls."""
    params = {"rm": True, "forcerm": True, "pull": False, "nocache": nocache,
              "buildargs": json.dumps(buildargs),
              "secrets": json.dumps([f"id={i},src={SECRET_PREFIX}{i}" for i in secrets])}
    tarball = context_tar(context_dir, secrets)
    try:
        response = api._post(api._url("/build"), data=tarball, params=params, stream=True,
                             headers={"Content-Type": "application/x-tar"}, timeout=None)
        api._raise_for_status(response)
    finally:
        tarball.close()      # the request has read it all
    return api._stream_helper(response, decode=True)
