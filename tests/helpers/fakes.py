"""Small in-memory stand-ins for the Docker engine and a registry, for fast unit tests of the
scheduler, the publish gate and the promote refusals. They keep what was asked of them, so a
test can say what did not happen (nothing pushed, nothing tagged). The real-engine and
real-registry tests stay: these only cover the decisions made above them."""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Callable

from imgkit.engine import ImageInfo
from imgkit.errors import BuildFailed
from imgkit.registry.client import Endpoint, Manifest, sha256_of


def image_id(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


MADE = 1731542400      # 2024-11-14: when every image added here was made


class FakeEngine:
    """The part of imgkit.engine.Engine the scheduler and the publisher use."""

    def __init__(self, failing: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.failing = set(failing)          # tags whose build fails
        self.images: dict[str, ImageInfo] = {}
        self.events: list[tuple[str, str]] = []   # (what, tag), in the order they happened
        self.buildargs: dict[str, dict[str, str]] = {}   # tag -> the build args it was built with
        self.removed: list[str] = []
        self.pushed: list[str] = []
        self._lock = threading.Lock()

    def _note(self, what: str, ref: str) -> None:
        with self._lock:
            self.events.append((what, ref))

    def add(self, ref: str, identity: str | None = None) -> ImageInfo:
        info = ImageInfo(id=identity or image_id(ref), tags=(ref,), labels={}, layers=(), size=1000,
                         created=MADE)
        self.images[ref] = info
        return info

    def refuse_containerd_store(self, what: str) -> None:
        """The classic image store's engine, as the tests' own: nothing refused."""

    # -- what the scheduler asks
    def image(self, ref: str) -> ImageInfo | None:
        return self.images.get(ref)

    def known(self, ref: str, *hint: str) -> ImageInfo:
        from imgkit.engine.images import Images
        return Images.known(self, ref, *hint)  # type: ignore[arg-type]  # the engine's rule, on image()

    def build(self, context_dir: Path, label: str, *, extra_hosts: dict[str, str],
              on_line: Callable[[str], None], cancel: threading.Event, nocache: bool = False,
              buildargs: dict[str, str] | None = None,
              secrets: dict[str, bytes] | None = None) -> str:
        self._note("build without cache" if nocache else "build", label)
        self.buildargs[label] = dict(buildargs or {})
        if not (context_dir / "Dockerfile").is_file():
            raise AssertionError(f"{label}: built without its Dockerfile")
        if label in self.failing:
            raise BuildFailed(label, "step 2/3 (RUN false)", "exit code 1", ["false"],
                              images=(image_id(label + "-step1"),))
        on_line(f"Step 1/1 : FROM {label}")
        return image_id(label + "-built")

    def tag(self, identity: str, ref: str) -> None:
        self._note("tag", ref)
        self.images[ref] = ImageInfo(id=identity, tags=(ref,), labels={}, layers=(), size=1000)

    def remove_made(self, images: tuple[str, ...]) -> None:
        self.removed += images

    def remove_if_unused(self, identity: str) -> None:
        self.removed.append(identity)

    def stop_build_steps(self, tag: str) -> int:
        return 0

    # -- what the publisher asks
    def registry_is_secure(self, registry: str) -> bool:
        return False

    def registry_credentials(self, registry: str) -> tuple[str, str] | None:
        return None

    def push(self, ref: str, credentials: tuple[str, str] | None = None,
             on_progress: Callable[[str, int, int], None] | None = None) -> str:
        self.pushed.append(ref)
        raise AssertionError(f"{ref} was pushed")

    def untag(self, ref: str) -> None:
        self._note("untag", ref)


class FakeRegistry:
    """The part of imgkit.registry.client.RegistryClient that promotion reads and writes."""

    def __init__(self, registry: str) -> None:
        self.endpoint = Endpoint(registry, secure=False)
        self.manifests: dict[tuple[str, str], Manifest] = {}
        self.blobs: dict[str, bytes] = {}
        self.writes: list[str] = []

    def put_image(self, repository: str, config: bytes) -> Manifest:
        """A one-layer image manifest whose config is `config`; returns it (by digest)."""
        self.blobs[sha256_of(config)] = config
        body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": sha256_of(config), "size": len(config)},
                           "layers": []}).encode()
        manifest = Manifest(sha256_of(body), "application/vnd.oci.image.manifest.v1+json", body)
        self.manifests[(repository, manifest.digest)] = manifest
        return manifest

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        return self.manifests.get((repository, reference))

    def digest(self, repository: str, reference: str) -> str | None:
        found = self.manifest(repository, reference)
        return found.digest if found else None

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        self.writes.append(f"{repository}:{reference}")
        manifest = Manifest(sha256_of(body), media_type, body)
        self.manifests[(repository, reference)] = manifest
        self.manifests[(repository, manifest.digest)] = manifest
        return manifest.digest

    def put_blob(self, repository: str, data: bytes) -> str:
        self.blobs[sha256_of(data)] = data
        return sha256_of(data)

    def blob(self, repository: str, digest: str) -> bytes:
        return self.blobs[digest]

    def check_push(self, repository: str) -> None:
        self.writes.append(f"check {repository}")

    def close(self) -> None:
        pass
