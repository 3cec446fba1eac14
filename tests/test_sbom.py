"""The SBOM document: CycloneDX 1.6 JSON, valid against the schema (cyclonedx-python-lib's
strict validator, offline), from the probe's facts. The real images' SBOMs are checked in
test_docker_verify.py (a small image) and test_slow_paddle.py (the Paddle image)."""
from __future__ import annotations

import json

from imgkit.verify.facts import Inventory, Libraries
from imgkit.verify.sbom import sbom

from .helpers.sbom import components, valid
from .helpers.validators import cyclonedx_error

IMAGE_ID = "sha256:" + "ab" * 32






def facts() -> tuple[Libraries, Inventory]:
    libraries = Libraries.model_validate({"families": {"cudnn": {"copies": [
        {"path": "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8",
         "realpath": "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.8",
         "version": "8.6.0", "version_source": "the library", "loadable": True,
         "owner": {"kind": "wheel", "name": "nvidia-cudnn-cu11", "version": "8.6.0.163",
                   "component": True}},
        {"path": "/x/libcudnn.so.9", "realpath": "/x/libcudnn.so.9"}]}}})
    inventory = Inventory.model_validate({
        "os_release": {"id": "debian", "version_id": "12", "pretty_name": "Debian 12"},
        "dpkg": [{"name": "libgomp1", "version": "12.2.0-14", "arch": "amd64"},
                 {"name": "tzdata", "version": "2024a-0+deb12u1", "arch": "all"}],
        "python": [{"name": "PaddlePaddle_GPU", "version": "2.6.2",
                    "location": "/opt/venv/lib/python3.11/site-packages"},
                   {"name": "pip", "version": "23.0.1", "location": "/usr/lib/python3/dist-packages"},
                   {"name": "pip", "version": "23.0.1",
                    "location": "/opt/venv/lib/python3.11/site-packages"}]})
    return libraries, inventory


def test_the_document_is_valid_cyclonedx_with_every_kind_of_component() -> None:
    libraries, inventory = facts()
    document = valid(sbom("paddle:2.6.2-gpu-cuda11.8-cudnn8", IMAGE_ID,
                          {"org.imgkit.cudnn": "8.6.0.163", "maintainer": "x"},
                          libraries, inventory))
    found = components(document)
    assert found[("deb", "libgomp1")] == {"12.2.0-14"}
    assert found[("pypi", "paddlepaddle-gpu")] == {"2.6.2"}                # normalised name
    assert found[("nvidia", "cudnn")] == {"8.6.0"}                         # unversioned copy left out
    assert found[("operating-system", "debian")] == {"12"}
    purls = {c["purl"] for c in document["components"] if "purl" in c}
    assert "pkg:deb/debian/libgomp1@12.2.0-14?arch=amd64&distro=debian-12" in purls
    assert len([c for c in document["components"] if c["name"] == "pip"]) == 2  # two locations
    root = document["metadata"]["component"]
    assert (root["type"], root["name"], root["version"]) == ("container", "paddle",
                                                             "2.6.2-gpu-cuda11.8-cudnn8")
    assert root["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]
    assert root["properties"] == [{"name": "org.imgkit.cudnn", "value": "8.6.0.163"}]
    depends = next(d for d in document["dependencies"] if d["ref"] == IMAGE_ID)["dependsOn"]
    assert len(depends) == len(document["components"])


def test_the_validator_does_reject_a_broken_document() -> None:
    libraries, inventory = facts()
    document = json.loads(sbom("x:1", IMAGE_ID, {}, libraries, inventory))
    document["components"][0]["type"] = "not-a-type"
    assert cyclonedx_error(json.dumps(document)) is not None
