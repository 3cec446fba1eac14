"""The family file format, published: a JSON Schema (`imgkit schema`, docs/matrix.schema.json,
read by editors through a yaml-language-server line in each family file) and the key
reference docs/matrix.md, both made from family_model.py so neither can drift from what
imgkit accepts."""
from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import models_json_schema

from ..yamlload import Document
from .family_model import EXTENSION_FIELDS, KIND_WORDS, KINDS, TAG_FIELDS, Axes, Extends, Point, UserModel

SCHEMA_FILE = "matrix.schema.json"   # where a project keeps it, beside images/
# the line that points editors (VS Code's YAML extension, and every yaml-language-server
# client) at the schema: a path relative to the family file, so it works offline
SCHEMA_LINE = f"# yaml-language-server: $schema=../{SCHEMA_FILE}"
PLACEHOLDERS = {
    "os": "the OS release, e.g. bookworm (on a family with `base:`, the base's name)",
    "python": "the OS's python, e.g. 3.11",
    "cuda": "the CUDA release, e.g. 12.8",
    "cudnn": "cuDNN major.minor, e.g. 9.1",
    "cudnn_major": "cuDNN major, e.g. 9",
    "nccl": "NCCL major.minor, e.g. 2.21",
    "framework": "the framework's name, e.g. torch",
    "framework_version": "the framework's version, e.g. 2.10.0",
    "framework_minor": "its major.minor, e.g. 2.10",
    "parent_tag": "the extended image's own tag (extension families)",
}

BASE_SECTION = """\
A stack or framework family may build on an image your organisation blesses (a golden image,
NVIDIA's `nvcr.io/nvidia/cuda:*-runtime-*`) instead of an OS imgkit makes:

```yaml
family: torch-golden
framework: torch
repository: ml/pytorch
tag: "{framework_version}-cuda{cuda}-{os}"
base: registry.example.com/golden/ubuntu:24.04
axes:
  cuda: ["12.8"]
  cudnn: [default]
  nccl: [default]
  framework_version: ["2.10.0"]
```

imgkit reads what the base holds from the image itself, not its name: its OS
(`/etc/os-release`), glibc, python3 and any CUDA runtime (`CUDA_VERSION`, else the
`libcudart.so.*` it carries). It pulls the base when it is not on the engine, and keeps
what it read in its cache by image id, so later runs read nothing again (and `imgkit list`
works with the engine down). The family's layers are built on the base **by digest**
(`FROM REPO@sha256:...`, the digest the engine knows the image by; a base built here and
never pushed is used by its name), so a new base is a new digest, which rebuilds what
stands on it. The digest is also written into every lock on the base (`# base:`; a new base
makes those locks stale) and into the signed provenance (a resolved dependency). imgkit does
not pull a tag it already has: `docker pull` a moved tag, or write the new digest in the
file.

What is refused, each at the family's `base:` or axes, with the reason:

- a base that is not Debian or Ubuntu based (imgkit's layers install with apt);
- a base with no python3 on a release imgkit does not know (it cannot tell which python
  to install); a base with python3 sets the family's python;
- a family asking for a CUDA release other than the one the base holds (a base with the
  CUDA 12.4 runtime under `cuda: ["12.8"]`);
- `axes.os` or `max_base_age` beside `base:` (the OS is the base's; imgkit does not make it).

The layers imgkit tags on the base carry its name where an OS name would be: the base
`nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04` gives `imgkit/python:3.12-cuda-12.8.1-runtime-ubuntu24.04`,
and `{os}` in a tag is that name too.

The CUDA libraries the base already holds (cudart, cuBLAS, cuFFT, ... found under
`/usr/local/cuda*` or the system library folders) are the CUDA layer's: it pins the versions
the base holds and installs only the libraries the base lacks, so the loader finds one copy
of each (verify fails two). cuDNN and NCCL come as imgkit's wheels, as on any base. A
framework whose wheel brings its own CUDA runtime (PyTorch's) still adds a second copy on
such a base; build those on a base without CUDA.
"""


def family_schema() -> Document:
    """One JSON Schema for every family file: the kind is told by its keys, as imgkit does."""
    return _schema()


def _schema() -> dict[str, Any]:
    _, top = models_json_schema([(model, "validation") for model in KINDS.values()],
                                ref_template="#/$defs/{model}")
    names = {kind: model.__name__ for kind, model in KINDS.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "imgkit family file",
        "description": "One family of images (images/*.yaml); see docs/matrix.md",
        "type": "object",
        "if": {"required": ["extends"]},
        "then": {"$ref": f"#/$defs/{names['extension']}"},
        "else": {"if": {"required": ["framework"]},
                 "then": {"$ref": f"#/$defs/{names['framework']}"},
                 "else": {"$ref": f"#/$defs/{names['stack']}"}},
        "$defs": top["$defs"],
    }


def schema_text() -> str:
    return json.dumps(family_schema(), indent=2) + "\n"


def _type_of(schema: dict[str, Any]) -> str:
    """A field's JSON Schema as a few words."""
    if "anyOf" in schema:
        return " or ".join(_type_of(s) for s in schema["anyOf"] if s.get("type") != "null")
    if "$ref" in schema:
        return "mapping (" + schema["$ref"].rsplit("/", 1)[1] + ")"
    if "enum" in schema:
        return " / ".join(f"`{v}`" for v in schema["enum"] if isinstance(v, str))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type_of(schema.get('items', {}))}"
    if kind == "object":
        return "mapping"
    return {"string": "text", "integer": "whole number"}.get(str(kind), str(kind))


def _example(value: Any) -> str:
    return "`" + json.dumps(value).replace("|", "\\|") + "`"


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    return "" if field.default in (None, [], {}, "") else f"`{field.default}`"


def _rows(models: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """One table row per key: the kinds it is allowed in, type, default, meaning, example."""
    keys: dict[str, list[str]] = {}
    for kind, model in models.items():
        for key in model.model_fields:
            keys.setdefault(key, []).append(kind)
    rows = []
    for key, kinds in keys.items():
        model = models[kinds[0]]
        field = model.model_fields[key]
        schema = defs[model.__name__]["properties"][key]
        defaults = {kind: _default(models[kind].model_fields[key]) for kind in kinds}
        default = (next(iter(defaults.values())) if len(set(defaults.values())) == 1 else
                   "; ".join(f"{value or 'none'} ({kind})" for kind, value in defaults.items()))
        example = _example(field.examples[0]) if field.examples else ""
        rows.append(f"| `{key}` | {', '.join(kinds)} | {_type_of(schema)} | {default} | "
                    f"{field.description or ''} | {example} |")
    return rows


def _sub_table(model: Any, defs: dict[str, Any]) -> list[str]:
    rows = ["| key | type | meaning |", "|---|---|---|"]
    for key, field in model.model_fields.items():
        schema = defs[model.__name__]["properties"][key]
        rows.append(f"| `{key}` | {_type_of(schema)} | {field.description or ''} |")
    return rows


def reference_page() -> str:
    """docs/matrix.md."""
    defs = _schema()["$defs"]
    lines = ["# Family files: the reference", "",
             "<!-- made by `make docs` from src/imgkit/matrix/family_model.py: do not edit -->", "",
             "A matrix is a folder of family files (`images/*.yaml`). A family file is one of "
             "three kinds, told apart by its keys:", ""]
    lines += [f"- **{kind}**: {KIND_WORDS[kind]}. {KINDS[kind].__doc__}" for kind in KINDS]
    lines += ["", "Every problem in every file is reported in one run, each with its file, "
              "line, key and a hint; a key that belongs to another kind says which. Editors "
              "(VS Code's YAML extension, any yaml-language-server client) check and complete "
              "keys with the JSON Schema `imgkit schema` prints: write it to the project's root "
              f"(`imgkit schema > {SCHEMA_FILE}`, again after upgrading imgkit) and put this "
              "line at the top of each family file:", "", "```yaml", SCHEMA_LINE, "```", "", "## Keys", "",
              "| key | kinds | type | default | what it is | example |", "|---|---|---|---|---|---|"]
    lines += _rows(KINDS, defs)
    lines += ["", "## Axes", "", str(Axes.__doc__), ""] + _sub_table(Axes, defs)
    lines += ["", "Quote versions (`\"12.8\"`): YAML reads an unquoted `12.8` as a number, "
              "which is refused with that hint.", "", "## Include and exclude points", "",
              str(Point.__doc__) + " A point names axes by their singular value, e.g. "
              "`{cuda: \"12.8\", cudnn: \"8\"}`.", "", "## Extends", "", str(Extends.__doc__),
              "Narrow by any of these axes, each a list of values the extended image must have.",
              ""] + _sub_table(Extends, defs)
    lines += ["", "## User", "", str(UserModel.__doc__) + " For example `user: {name: ml, uid: "
              "1001}`; the name `root` needs a `reason:`.", ""] + _sub_table(UserModel, defs)
    lines += ["", "## Your own base", "", BASE_SECTION]
    lines += ["", "## Tag placeholders", "", "| placeholder | value |", "|---|---|"]
    lines += [f"| `{{{name}}}` | {PLACEHOLDERS[name]} |"
              for name in dict.fromkeys((*TAG_FIELDS, *EXTENSION_FIELDS))]
    return "\n".join(lines) + "\n"
