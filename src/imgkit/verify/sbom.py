"""An image's CycloneDX SBOM from the probe's facts: the OS and its Debian packages, every
Python distribution, and the NVIDIA libraries with the versions read from the libraries
themselves. Pure: facts in, JSON text out (cyclonedx-python-lib does the format)."""
from __future__ import annotations

import re

from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from .. import labels, shipped
from .facts import Inventory, Libraries

PROPERTY = "imgkit"   # property namespace: imgkit:location, imgkit:version-source, ...


def _imgkit_version() -> str:
    return shipped.version()


def _pypi_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _os_components(inventory: Inventory) -> list[Component]:
    release = inventory.os_release
    distro, version_id = release.get("id", ""), release.get("version_id", "")
    out = []
    if distro:
        out.append(Component(type=ComponentType.OPERATING_SYSTEM, name=distro,
                             version=version_id or None, description=release.get("pretty_name"),
                             bom_ref=f"os:{distro}"))
    qualifiers = {"distro": f"{distro}-{version_id}"} if distro and version_id else {}
    for package in inventory.dpkg:
        purl = PackageURL("deb", distro or None, package.name, package.version,
                          qualifiers={**qualifiers, **({"arch": package.arch} if package.arch else {})})
        out.append(Component(type=ComponentType.LIBRARY, name=package.name,
                             version=package.version, purl=purl,
                             bom_ref=f"deb:{package.name}:{package.arch}"))
    return out


def _python_components(inventory: Inventory) -> list[Component]:
    out = []
    for dist in inventory.python:
        name = _pypi_name(dist.name)
        out.append(Component(
            type=ComponentType.LIBRARY, name=name, version=dist.version,
            purl=PackageURL("pypi", None, name, dist.version),
            bom_ref=f"pypi:{name}@{dist.version}:{dist.location}",
            properties=[Property(name=f"{PROPERTY}:location", value=dist.location)]))
    return out


def _nvidia_components(libraries: Libraries) -> list[Component]:
    """One per copy of an NVIDIA library the probe found, versioned as it said."""
    out = []
    for family, found in sorted(libraries.families.items()):
        for copy in found.copies:
            if not copy.version:
                continue
            props = [Property(name=f"{PROPERTY}:path", value=copy.path),
                     Property(name=f"{PROPERTY}:version-source",
                              value=copy.version_source or "the library")]
            if copy.owner is not None:
                props.append(Property(name=f"{PROPERTY}:installed-by",
                                      value=f"{copy.owner.kind} {copy.owner.name} {copy.owner.version}"))
            out.append(Component(type=ComponentType.LIBRARY, group="nvidia", name=family,
                                 version=copy.version, bom_ref=f"lib:{copy.path}",
                                 properties=props))
    return out


def sbom(ref: str, image_id: str, image_labels: dict[str, str], libraries: Libraries,
         inventory: Inventory) -> str:
    """The CycloneDX 1.6 JSON document of image `ref` (id `image_id`)."""
    name, _, tag = ref.rpartition(":")
    bom = Bom()
    bom.metadata.tools.components.add(Component(type=ComponentType.APPLICATION, name="imgkit",
                                                version=_imgkit_version()))
    root = Component(
        type=ComponentType.CONTAINER, name=name or ref, version=tag or None, bom_ref=image_id,
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=image_id.removeprefix("sha256:"))],
        properties=[Property(name=k, value=v) for k, v in sorted(image_labels.items())
                    if k.startswith(labels.PREFIX)])
    bom.metadata.component = root
    components = (_os_components(inventory) + _python_components(inventory)
                  + _nvidia_components(libraries))
    for component in components:
        bom.components.add(component)
    bom.register_dependency(root, components)
    return JsonV1Dot6(bom).output_as_string(indent=1)
