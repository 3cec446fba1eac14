"""Images in the engine: inspect, tag, remove, load a root filesystem, history."""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import IO, Iterable, Iterator
from urllib.parse import quote

from ..errors import ImgkitError, UsageError, first_line
from .client import Client
from .types import ImageConfig, ImageInfo, Step


def _name_of(ref: str) -> str:
    """The repository part of `ref` (host/path, without :tag or @digest)."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[:len(name) - len(last)] + last.split(":", 1)[0]


def _not_a_reference(ref: str, said: str) -> UsageError:
    """A reference the engine cannot parse (`Paddle:2.6.2`), said as the user's mistake."""
    name = _name_of(ref)
    lowered = name.lower() + ref[len(name):]
    return UsageError(f"{ref!r} is not an image reference the engine takes: {said}",
                      hint=f"try {lowered!r}" if lowered != ref else
                      "name it as `imgkit list` prints it: [host/]path:tag, the path in lowercase")


def _near(ref: str, tags: list[str]) -> str:
    """The tag of `tags` that `ref` misspells (another case, a letter off), or ""."""
    import difflib
    same = [t for t in tags if t.lower() == ref.lower()]
    # another version is another image, not a misspelling (3.12 is no typo of 3.11)
    spelt = [t for t in tags if re.sub(r"\d", "", t.lower()) != re.sub(r"\d", "", ref.lower())]
    close = difflib.get_close_matches(ref.lower(), [t.lower() for t in spelt], n=1, cutoff=0.85)
    return same[0] if same else next((t for t in spelt if close and t.lower() == close[0]), "")


def _missing_hint(ref: str, tags: list[str], hint: str) -> str:
    """What to say of `ref`, which the engine lacks: the tag it misspells, else its own
    repository's tags (before a near name of another's: paddle:...-cudnn9 is not
    paddle-jupyter:...-cudnn8), else `hint`."""
    near = _near(ref, tags)
    name = _name_of(ref)
    mine = sorted(t[len(name) + 1:] for t in tags if t.rpartition(":")[0] == name)
    if near and (near.lower() == ref.lower() or not mine):
        return f"did you mean {near!r}? else {hint}"
    if mine:
        return (f"{name} has: {', '.join(mine[:6])}{', ...' if len(mine) > 6 else ''} "
                f"(name one: {name}:{mine[0]})")
    return hint


class Images(Client):
    def image(self, ref: str) -> ImageInfo | None:
        if not ref.strip():      # the engine would answer a redirect for /images//json
            raise UsageError("an empty image reference (an unset variable?)",
                             hint="name it as `imgkit list` prints it: [host/]path:tag")
        if self.socket_path is not None:
            try:
                attrs = self._get_local(f"/images/{quote(ref, safe='/:@')}/json")
            except ImgkitError as exc:
                said = re.search(r'"message":\s*"(invalid reference format[^"]*)"', exc.message)
                if said:
                    raise _not_a_reference(ref, said.group(1)) from None
                raise
            if attrs is None:
                return None
        else:
            import docker.errors
            try:
                attrs = self.api.inspect_image(ref)
            except docker.errors.ImageNotFound:
                return None
            except docker.errors.APIError as exc:
                if "invalid reference format" in str(exc):
                    raise _not_a_reference(ref, str(exc.explanation or exc)) from None
                raise
        config = attrs.get("Config") or {}
        size = int(attrs.get("Size") or 0)
        if "Descriptor" in attrs:    # the containerd image store: Size is what it holds packed
            size = sum(step.size for step in self.history(str(attrs["Id"]))) or size
        return ImageInfo(id=attrs["Id"], tags=tuple(attrs.get("RepoTags") or ()),
                         labels=dict(config.get("Labels") or {}),
                         layers=tuple(attrs.get("RootFS", {}).get("Layers") or ()),
                         size=size, user=str(config.get("User") or ""),
                         platform="/".join(str(attrs[k]) for k in ("Os", "Architecture", "Variant")
                                           if attrs.get(k)),
                         env=tuple((name, value) for name, _, value in
                                   (str(e).partition("=") for e in config.get("Env") or ())),
                         digests=tuple(attrs.get("RepoDigests") or ()),
                         created=seconds_of(str(attrs.get("Created") or "")))

    def known(self, ref: str, hint: str = "build it (imgkit build) or pull it first") -> ImageInfo:
        """What the engine says of `ref`; an image it does not hold is a usage error (exit 2)
        saying what to do (`hint`): the tag it misspells, or the tags its repository has."""
        info = self.image(ref)
        if info is None:
            raise UsageError(f"image {ref!r} not found in the local engine",
                             hint=_missing_hint(ref, self._tags(), hint))
        return info

    def _tags(self) -> list[str]:
        """Every name:tag the engine holds ([] where it cannot list them: a hint only)."""
        try:
            listed = (self._get_local("/images/json") if self.socket_path is not None
                      else self.api.images())
        except Exception:  # noqa: BLE001 - a hint only: no list, no hint
            return []
        return [t for image in listed or [] for t in image.get("RepoTags") or []
                if t != "<none>:<none>"]

    def config(self, ref: str) -> ImageConfig:
        """The image's config as the engine reports it (env, entrypoint, cmd, user, workdir,
        exposed ports, volumes, labels); empty for an image it does not hold."""
        import docker.errors
        try:
            return ImageConfig.of(self.api.inspect_image(ref).get("Config") or {})
        except docker.errors.ImageNotFound:
            return ImageConfig()

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

    def load_rootfs(self, tarball: Path, ref: str, *, platform: str, labels: dict[str, str],
                    env: list[str], cmd: list[str], created: int) -> str:
        """`ref` as a one-layer image of `tarball` whose config names `platform` (what
        `docker import` cannot do: engine 20.10 ignores its --platform), dated `created`
        (seconds since the epoch; never the clock: the same tarball gives the same image id
        on any machine). Written as the archive `docker save` makes and loaded."""
        import datetime as dt
        import hashlib
        import json
        import tarfile
        import tempfile
        os_name, architecture, *variant = platform.split("/")
        digest = hashlib.sha256()
        with tarball.open("rb") as layer:
            for block in iter(lambda: layer.read(1 << 20), b""):
                digest.update(block)
        when = dt.datetime.fromtimestamp(created, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        config = {"architecture": architecture, "os": os_name, "created": when,
                  **({"variant": variant[0]} if variant else {}),
                  "config": {"Env": env, "Cmd": cmd, "Labels": labels},
                  "rootfs": {"type": "layers", "diff_ids": [f"sha256:{digest.hexdigest()}"]},
                  "history": [{"created": when, "created_by": "imgkit: root filesystem"}]}
        config_bytes = json.dumps(config).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        manifest = json.dumps([{"Config": config_name, "RepoTags": [ref],
                                "Layers": [f"{digest.hexdigest()}/layer.tar"]}]).encode()
        with tempfile.TemporaryFile(dir=tarball.parent) as archive:
            with tarfile.open(fileobj=archive, mode="w") as out:
                out.add(str(tarball), arcname=f"{digest.hexdigest()}/layer.tar")
                for name, data in ((config_name, config_bytes), ("manifest.json", manifest)):
                    member = tarfile.TarInfo(name)
                    member.size = len(data)
                    out.addfile(member, io.BytesIO(data))
            archive.seek(0)
            self.load(archive, ref)
        info = self.image(ref)
        if info is None:
            raise ImgkitError(f"docker load of {ref} reported no image")
        return info.id

    def save(self, image_id: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """`docker save` of one image, as it streams; the engine failing on the way raises
        ImgkitError naming the image."""
        import docker.errors
        import requests.exceptions
        try:
            yield from self.api.get_image(image_id, chunk_size=chunk_size)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise ImgkitError(f"the engine could not save {image_id}: {first_line(exc)}")

    def load(self, archive: Iterable[bytes] | IO[bytes], name: str) -> None:
        """`docker load` of an archive as `docker save` writes it (a file, or another
        engine's save as it streams); the engine refusing it raises ImgkitError naming
        `name`, the image it holds."""
        import docker.errors
        try:
            for line in self.api.load_image(archive, quiet=True):
                if isinstance(line, dict) and line.get("error"):
                    raise ImgkitError(f"docker load of {name} failed: {line['error']}")
        except docker.errors.DockerException as exc:
            raise ImgkitError(f"docker load of {name} failed: {first_line(exc)}")

    def pull(self, ref: str) -> bool:
        import docker.errors
        try:
            self.client.images.pull(ref)
            return True
        except docker.errors.APIError:
            return False


    def history(self, ref: str) -> list[Step]:
        """The steps that made `ref`, oldest first (empty steps included: they keep the
        history of a child aligned with its parent's); [] for an image the engine lacks."""
        if self.socket_path is not None:     # the no-op build asks this: no docker-py import
            found = self._get_local(f"/images/{quote(ref, safe='/:@')}/history") or []
        else:
            import docker.errors
            try:
                found = self.api.history(ref)
            except docker.errors.ImageNotFound:
                found = []
        return [Step(int(h.get("Size") or 0), str(h.get("CreatedBy") or ""),
                     int(h.get("Created") or 0)) for h in reversed(found)]

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


def seconds_of(created: str) -> int:
    """An image's `Created` ("2026-11-26T02:14:46.123456789Z") in seconds; 0 for none."""
    import datetime as dt
    if created[10:11] != "T":
        return 0
    try:   # fromisoformat: strptime imports _strptime, locale and calendar on every verify
        when = dt.datetime.fromisoformat(created[:19])
    except ValueError:
        return 0
    return int(when.replace(tzinfo=dt.timezone.utc).timestamp())
