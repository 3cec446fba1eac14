"""Images in the engine: inspect, tag, remove, import a root filesystem, history."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from ..errors import ImgkitError
from .client import Client
from .types import ImageInfo, Step


class Images(Client):
    def image(self, ref: str) -> ImageInfo | None:
        if self.socket_path is not None:
            attrs = self._get_local(f"/images/{quote(ref, safe='/:@')}/json")
            if attrs is None:
                return None
        else:
            import docker.errors
            try:
                attrs = self.api.inspect_image(ref)
            except docker.errors.ImageNotFound:
                return None
        config = attrs.get("Config") or {}
        return ImageInfo(id=attrs["Id"], tags=tuple(attrs.get("RepoTags") or ()),
                         labels=dict(config.get("Labels") or {}),
                         layers=tuple(attrs.get("RootFS", {}).get("Layers") or ()),
                         size=int(attrs.get("Size") or 0), user=str(config.get("User") or ""))

    def tag(self, image_id: str, ref: str) -> None:
        """Point `ref` at `image_id`; the image it pointed at before is removed if nothing
        else uses it, so a rebuild leaves no dangling <none> image behind."""
        old = self.image(ref)
        repository, tag = ref.rsplit(":", 1)
        if not self.api.tag(image_id, repository, tag, force=True):
            raise ImgkitError(f"could not tag {image_id[:19]} as {ref}")
        if old is not None and old.id != image_id:
            self.remove_if_unused(old.id)

    def remove_if_unused(self, image_id: str) -> None:
        info = self.image(image_id)
        if info is None or info.tags:
            return
        import docker.errors
        try:
            self.api.remove_image(image_id, noprune=False)
        except docker.errors.APIError:
            pass  # still a parent of another image or used by a container: keep it

    def remove_made(self, images: tuple[str, ...]) -> None:
        """Remove the images a failed or stopped build's steps made, newest first, so no
        `<none>` image lingers. Exactly those: no engine-wide prune, which the engine refuses
        while another runs (two builds stopping together). An image still tagged, or still
        the parent of another, is kept; removing one also removes its untagged parents."""
        for image in reversed(images):
            self.remove_if_unused(image)


    def remove_image(self, ref: str) -> None:
        import docker.errors
        try:
            self.api.remove_image(ref, force=True)
        except docker.errors.ImageNotFound:
            pass

    def import_rootfs(self, tarball: Path, ref: str, changes: list[str]) -> str:
        repository, tag = ref.rsplit(":", 1)
        out = self.api.import_image_from_file(str(tarball), repository=repository, tag=tag,
                                              changes=changes)
        for line in str(out).splitlines():
            if '"error"' in line:
                raise ImgkitError(f"docker import of {ref} failed: {line}")
        info = self.image(ref)
        if info is None:
            raise ImgkitError(f"docker import of {ref} reported no image: {out}")
        return info.id

    def pull(self, ref: str) -> bool:
        import docker.errors
        try:
            self.client.images.pull(ref)
            return True
        except docker.errors.APIError:
            return False


    def history(self, ref: str) -> list[Step]:
        """The steps that made `ref`, oldest first (empty steps included: they keep the
        history of a child aligned with its parent's)."""
        return [Step(int(h.get("Size") or 0), str(h.get("CreatedBy") or ""),
                     int(h.get("Created") or 0)) for h in reversed(self.api.history(ref))]

    def made_at(self, ref: str) -> int | None:
        """When the image's first layer (its base's filesystem) was made, in seconds since
        the epoch; None when the engine does not say."""
        steps = self.history(ref)
        return steps[0].created if steps and steps[0].created else None

    def untag(self, ref: str) -> None:
        """Remove the tag `ref` only (never the image it names)."""
        import docker.errors
        try:
            self.api.remove_image(ref, force=False, noprune=True)
        except docker.errors.NotFound:
            pass
