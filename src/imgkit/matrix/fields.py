"""The value types of family files, each a pydantic type that checks one value with a
message a person can act on (the file and line are added by spec.py) and carries its JSON
Schema (the published schema and docs/matrix.md come from these).

Every value that can reach a Dockerfile is checked against a pattern here first."""
from __future__ import annotations

import difflib
import json
import re
import shlex
from typing import Annotated, Any

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import (
    AfterValidator,
    BeforeValidator,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainValidator,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError, core_schema

from .. import tf32
from ..budget import SIZE_PATTERN, parse_size
from ..yamlload import written

AXIS_PATTERNS: dict[str, re.Pattern[str]] = {
    "os": re.compile(r"^[a-z][a-z0-9]{1,19}$"),
    "python": re.compile(r"^3\.[0-9]{1,2}$"),
    "cuda": re.compile(r"^[0-9]{1,2}\.[0-9]{1,2}$"),
    "cudnn": re.compile(r"^([0-9]{1,2}(\.[0-9]{1,4}){0,3}|default|none)$"),
    "nccl": re.compile(r"^([0-9]{1,2}(\.[0-9]{1,4}){0,3}|default|none)$"),
    "framework_version": re.compile(r"^[0-9]{1,4}(\.[0-9]{1,4}){0,3}$"),
    # the family key `platforms:` fills this axis; one tag names the image of every platform
    "platform": re.compile(r"^linux/(amd64|arm64)$"),
}
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
REPOSITORY_PATTERN = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
TEMPLATE_PATTERN = re.compile(r"^[^\n\r]{1,128}$")
# an image reference: [host[:port]/]path[:tag][@sha256:digest]
IMAGE_PATTERN = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
                           r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$")
AGE_PATTERN = re.compile(r"^[1-9][0-9]{0,3}d$")
APT_PATTERN = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,63}(=[A-Za-z0-9.+:~-]{1,64})?$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
LINE_PATTERN = re.compile(r"^[^\n\r\x00]{0,1024}$")
SOURCE_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")
DESTINATION_PATTERN = re.compile(r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
CUDA_LIBS = ("cudart", "nvrtc", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvjitlink")


def refusal(reason: str, hint: str = "") -> PydanticCustomError:
    """A value refused with imgkit's own words (spec.py reads `reason` and `hint` back)."""
    return PydanticCustomError("imgkit", "{reason}", {"reason": reason, "hint": hint})


def kind_of(value: Any) -> str:
    """What YAML made of a value, as a person would say it: `got a yes/no (true)`."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a yes/no ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"the number {written(value) if isinstance(value, float) else value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) \
        else f"a {type(value).__name__}"


def meant(key: str, known: list[str], cutoff: float = 0.75) -> str:
    """The known name `key` misspells: the same in other case, one a letter or two off,
    one it extends or shortens by a word (cuda_version: cuda), else the nearest by spelling
    down to `cutoff`; "" when none is near."""
    lowered = {k.lower(): k for k in known}
    for found in (lowered.get(key.lower()) or "",
                  *difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.85)):
        if found:
            return lowered.get(found, found)
    worded = [k for k in known if key.lower().startswith(k.lower() + "_")
              or k.lower().startswith(key.lower() + "_")]
    near = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=cutoff)
    return worded[0] if worded else lowered[near[0]] if near else ""


def as_list_hint(value: Any, words: bool = True) -> str:
    """How a single value is written as the list the key takes: split as a command line
    where the list is one of words (`cmd: jupyter lab`), else as its one item."""
    if words and isinstance(value, str) and " " in value.strip():
        try:
            return f"write a list of words: {json.dumps(shlex.split(value))}"
        except ValueError:                  # an unclosed quote: split where the spaces are
            return f"write a list of words: {json.dumps(value.split())}"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        shown = written(value) if isinstance(value, float) else str(value)
        return f"write it as a list: [{json.dumps(shown)}]"
    return ""


def _checked_text(value: Any, pattern: re.Pattern[str], what: str, rule: str = "") -> str:
    if isinstance(value, bool):
        raise refusal(f"expected {what}, got {kind_of(value)}: YAML reads an unquoted true, "
                      "false, yes, no, on or off so",
                      hint="quote it as the file spells it, e.g. " + (
                          "'true' or 'yes'" if value else "'false' or 'no'"))
    if value is None:
        raise refusal(f"expected {what}, got nothing", hint="give it a value, or '' for empty")
    if isinstance(value, float):
        typed = written(value)
        number = "a number" if typed == repr(value) else f"the number {value!r}"
        raise refusal(f"{typed} was read as {number}",
                      hint=f"quote versions so YAML keeps them as text: '{typed}'")
    if isinstance(value, int):
        value = str(value)
    if isinstance(value, dict) and len(value) == 1:
        # `chown ml: /data` unquoted: YAML reads a `: ` inside a line as a key and its value
        raise refusal(f"expected {what}, got a mapping: YAML read the ': ' in "
                      f"{next(iter(value))!r}: ... as a key and its value",
                      hint="quote the whole line, or write it as a block after `|`")
    if not isinstance(value, str):
        raise refusal(f"expected {what}, got {kind_of(value)}")
    if value.strip() == "" and not pattern.match(""):
        raise refusal(f"empty value; expected {what}")
    if not pattern.match(value):
        raise refusal(f"{value!r} is not a valid {what}", hint=_rule_hint(value, pattern, rule))
    return value


def _rule_hint(value: str, pattern: re.Pattern[str], rule: str) -> str:
    """What the value must be, in words where the field has them; and the lower-case
    spelling where that alone would do (`ml/Team`)."""
    hint = rule or f"allowed pattern: {pattern.pattern}"
    ported = re.match(r"^([a-z0-9.-]+:[0-9]{1,5})/(.+)$", value)
    if ported and pattern.match(ported.group(2)):   # a registry named in the image's name
        return (f"name the registry when the images are pushed, not here: imgkit publish "
                f"--to {ported.group(1)}/..., imgkit ci --registry {ported.group(1)}/...; "
                f"{ported.group(2)!r} would do")
    for better in (value.lower(), f"/{value}", _codename(value)):   # `ml/Team`; `workspace`
        if better and better != value and pattern.match(better):
            return f"{hint}; {better!r} would do"
    return hint


def prefix_hint(value: str) -> str:
    """What a repository prefix (--namespace) may be, and its lower-case spelling where that
    alone would do (`ML/Team`: 'ml/team')."""
    return _rule_hint(value, REPOSITORY_PATTERN, "lowercase letters, digits and . _ - "
                      "separated by /, e.g. ml or team/ml")


# an OS release as people number it, by the codename imgkit names it (`ubuntu22.04`: jammy)
CODENAMES = {"ubuntu": {"20.04": "focal", "22.04": "jammy", "24.04": "noble"},
             "debian": {"11": "bullseye", "12": "bookworm", "13": "trixie"}}


def _codename(value: str) -> str:
    found = re.match(r"^(ubuntu|debian)[-_: ]?(\d+(?:\.\d+)?)$", value.strip().lower())
    return CODENAMES[found.group(1)].get(found.group(2), "") if found else ""


class Text:
    """Metadata for `Annotated[str, Text(pattern, what)]`: a YAML scalar as validated text
    (a whole number taken as its digits), with the pattern in the JSON Schema; `rule` says
    in words what the pattern allows, for the hint of a value it refuses."""

    def __init__(self, pattern: re.Pattern[str], what: str, rule: str = "") -> None:
        self.pattern = pattern
        self.what = what
        self.rule = rule

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return core_schema.no_info_plain_validator_function(
            lambda value: _checked_text(value, self.pattern, self.what, self.rule))

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        return {"type": "string", "pattern": self.pattern.pattern}


def _is_list(value: Any) -> Any:
    if not isinstance(value, list):
        raise refusal(f"must be a list, got {kind_of(value)}", hint=as_list_hint(value))
    return value


def _non_empty(value: list[Any]) -> list[Any]:
    if not value:
        raise refusal("must be a non-empty list")
    return value


def _each_once(value: list[Any]) -> list[Any]:
    if len(set(value)) != len(value):
        raise refusal("lists a value twice")
    return value


def _is_mapping(value: Any) -> Any:
    if not isinstance(value, dict):
        raise refusal(f"must be a mapping, got {kind_of(value)}", hint=_as_mapping_hint(value))
    return value


def _plain(value: Any) -> str:
    """A value as YAML takes it in a flow mapping: bare where it can be, else quoted."""
    text = str(value)
    return text if re.fullmatch(r"[A-Za-z_/][\w./-]*", text) else json.dumps(text)


def _as_mapping_hint(value: Any) -> str:
    """A list written where a mapping goes, as that mapping: `[{from: a, to: b}]` and
    `["A=1"]` are `{a: b}` and `{A: "1"}`."""
    if not isinstance(value, list) or not value:
        return "write KEY: VALUE pairs, e.g. {APP_MODE: prod}"
    pairs = [tuple(item.values()) if isinstance(item, dict) and len(item) == 2 else
             tuple(item.split("=", 1)) if isinstance(item, str) and "=" in item else None
             for item in value]
    if all(pairs):
        shown = ", ".join(f"{_plain(k)}: {_plain(v)}" for k, v in pairs)  # type: ignore[misc]
        return f"write it as a mapping: {{{shown}}}"
    return "write KEY: VALUE pairs, not a list"


# metadata for Annotated lists and mappings
IS_LIST = BeforeValidator(_is_list)
NON_EMPTY = AfterValidator(_non_empty)
EACH_ONCE = AfterValidator(_each_once)
IS_MAPPING = BeforeValidator(_is_mapping)

VERSION_RULE = "a version such as '9', '9.10' or '2.27.5' (quoted), default, or none"
OsValue = Annotated[str, Text(AXIS_PATTERNS["os"], "os value",
                              "a release by its codename, such as bookworm or trixie (Debian), "
                              "jammy or noble (Ubuntu); `imgkit list --known` lists them")]
PythonValue = Annotated[str, Text(AXIS_PATTERNS["python"], "python value",
                                  "MAJOR.MINOR of Python 3, such as '3.11' (quoted)")]
CudaValue = Annotated[str, Text(AXIS_PATTERNS["cuda"], "cuda value",
                                "a CUDA release as MAJOR.MINOR, such as '12.8' (quoted)")]
CudnnValue = Annotated[str, Text(AXIS_PATTERNS["cudnn"], "cudnn value", VERSION_RULE)]
NcclValue = Annotated[str, Text(AXIS_PATTERNS["nccl"], "nccl value", VERSION_RULE)]
FrameworkVersion = Annotated[str, Text(AXIS_PATTERNS["framework_version"], "framework_version value",
                                       "the framework's release, such as '2.10.0' (quoted)")]
PlatformValue = Annotated[str, Text(AXIS_PATTERNS["platform"], "platform value",
                                    "linux/amd64 or linux/arm64")]
Name = Annotated[str, Text(NAME_PATTERN, "family name",
                           "lower-case letters, digits and '-', starting with a letter, "
                           "at most 40 characters")]
Repository = Annotated[str, Text(REPOSITORY_PATTERN, "image repository",
                                 "lower-case letters and digits, joined by '.', '_' or '-', in "
                                 "parts separated by '/' (Docker's rule), such as ml/pytorch")]
ImageRef = Annotated[str, Text(IMAGE_PATTERN, "image reference (IMAGE[:TAG][@sha256:DIGEST])",
                               "[HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST], the host and path "
                               "in lower case, such as nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04")]
Line = Annotated[str, Text(LINE_PATTERN, "value (one line)", "one line of at most 1024 characters")]
AptPackage = Annotated[str, Text(APT_PATTERN, "apt package",
                                 "a package name in lower case, with =VERSION if pinned, "
                                 "such as libgomp1 or libgomp1=12.2.0-14")]
EnvName = Annotated[str, Text(ENV_NAME_PATTERN, "variable name",
                              "letters, digits and '_', not starting with a digit")]
Source = Annotated[str, Text(SOURCE_PATTERN, "relative path (no '..')",
                             "a path under the family file's folder, such as config/team.toml")]
Destination = Annotated[str, Text(DESTINATION_PATTERN, "absolute path in the image",
                                  "a path from /, of letters, digits, '.', '_' and '-', "
                                  "such as /etc/team/config.py")]
TemplateText = Annotated[str, Text(TEMPLATE_PATTERN, "tag template", "one line of at most 128 characters")]
UserName = Annotated[str, Text(re.compile(r"^[a-z_][a-z0-9_-]{0,31}$"), "user name",
                               "a Linux user name: lower-case letters, digits, '_' and '-'")]
LabelName = Annotated[str, Text(re.compile(r"^[a-z0-9]([a-z0-9.-]{0,126}[a-z0-9])?$"), "label key",
                                "lower-case letters, digits, '.' and '-', such as "
                                "org.example.team")]
# a shell step: one line or several (a YAML block), never a NUL
Shell = Annotated[str, Text(re.compile(r"^[^\x00]{1,4096}$"), "shell step")]


def _size(value: str) -> int:
    budget = parse_size(value)
    if budget <= 0:
        raise refusal(f"{value!r} leaves no room for any image")
    return budget


Size = Annotated[int, PlainValidator(
    lambda value: _size(_checked_text(value, SIZE_PATTERN, "size such as 7.5GB or 800MB"))),
    WithJsonSchema({"type": "string", "pattern": SIZE_PATTERN.pattern})]
Age = Annotated[str, Text(AGE_PATTERN, "age in days such as 30d")]


def _on_off(value: Any) -> str:
    # YAML 1.1 reads on/off as booleans
    word = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
    if word not in ("on", "off"):
        raise refusal(f"expected on or off, got {value!r}")
    return str(word)


OnOff = Annotated[str, PlainValidator(_on_off), WithJsonSchema({"enum": ["on", "off", True, False]})]


def _cuda_lib(value: Any) -> str:
    if value in ("cudnn", "nccl"):           # a layer of their own, chosen by an axis
        raise refusal(f"{value} is not a library of cuda_libs: it is an axis of its own",
                      hint=f"axes: {{{value}: [\"{'9' if value == 'cudnn' else 'default'}\"]}}")
    if value not in CUDA_LIBS:
        raise refusal(f"unknown CUDA library {value!r}", hint=f"known: {', '.join(CUDA_LIBS)}")
    return str(value)


def _with_cudart(libs: list[str]) -> list[str]:
    if "cudart" not in libs:
        raise refusal("must include cudart")
    return libs


CudaLibs = Annotated[list[Annotated[str, PlainValidator(_cuda_lib)]], IS_LIST, NON_EMPTY,
                     AfterValidator(_with_cudart),
                     WithJsonSchema({"type": "array", "minItems": 1, "contains": {"const": "cudart"},
                                     "items": {"enum": list(CUDA_LIBS)}})]


def _pinned(value: Any) -> str:
    """A requirement pinned to one exact version: what is built is what was declared."""
    line = _checked_text(value, LINE_PATTERN, "pinned requirement")
    try:
        requirement = Requirement(line)
    except InvalidRequirement as exc:
        raise refusal(f"{line!r} is not a requirement: {exc}")
    specs = list(requirement.specifier)
    if requirement.url or requirement.marker or len(specs) != 1 or specs[0].operator != "==" \
            or "*" in specs[0].version:
        raise refusal(*_not_pinned(line, requirement))
    return line


def _not_pinned(line: str, requirement: Requirement) -> tuple[str, str]:
    """Why `line` is not one exact version, and the pin to write instead: each image's
    packages are locked, scanned and held to its stack by name and version."""
    index_name = requirement.name
    name = index_name + (f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else "")
    listed = f"{name}==VERSION (`pip index versions {index_name}` lists them)"
    specs = list(requirement.specifier)
    if requirement.url:
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename
        try:
            version = str(parse_wheel_filename(requirement.url.rsplit("/", 1)[-1])[1])
        except InvalidWheelFilename:
            version = "VERSION"
        return (f"{line!r} names a file by URL, not a release: imgkit locks, scans and holds "
                "to the stack a version from a package index",
                f"publish it to your index (docs/building.md: a private index) and pin "
                f"{name}=={version}")
    exact = [spec.version for spec in specs if spec.operator in ("==", "===")]
    if requirement.marker and len(specs) == 1 and exact and "*" not in exact[0]:
        return (f"{line!r} has an environment marker ({requirement.marker}): every image of "
                "the family gets the same pins, so a marker would leave it out unsaid",
                f"drop the marker: {name}=={exact[0]} (narrow which images an extension covers "
                "with `extends: {family: ..., cuda: [...]}`, or give those images a family "
                "of their own)")
    if len(specs) == 1 and specs[0].operator == "===":
        return (f"{line!r} uses ===, which compares text, not versions",
                f"pin it with ==: {name}=={specs[0].version}")
    if exact and "*" in exact[0]:
        series = exact[0].rstrip(".*")
        return (f"{line!r} is not pinned to one version: {exact[0]} is every {series} release",
                f"pin one of them: {name}=={series}.N (`pip index versions {index_name}` lists "
                "them)")
    floor = next((spec.version for spec in specs if spec.operator in (">=", "~=", "==")), "")
    return (f"{line!r} is not pinned to one version",
            f"pin it exactly, e.g. {name}=={floor}" if floor else f"pin it exactly: {listed}")


Pin = Annotated[str, PlainValidator(_pinned),
                WithJsonSchema({"type": "string", "pattern": r"^[A-Za-z0-9._-]+(\[[^\]]*\])?==[^*]+$"})]


def _port(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        raise refusal(f"{value!r} is text, not a number", hint=f"write the port unquoted: {value.strip()}")
    spelt = re.match(r"^\s*(\d+)\s*/\s*(tcp|udp)\s*$", value, re.I) if isinstance(value, str) else None
    if spelt and 0 < int(spelt.group(1)) < 65536:     # as Dockerfile's EXPOSE spells it
        raise refusal(f"{value!r} is not a port (1 to 65535)",
                      hint=f"write the number: {spelt.group(1)}" + (
                          " (ports are TCP; imgkit does not expose UDP)"
                          if spelt.group(2).lower() == "udp" else " (TCP, as EXPOSE's default)"))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise refusal(f"{value!r} is not a port (1 to 65535)")
    return value


Port = Annotated[int, PlainValidator(_port),
                 WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 65535})]


def known_tf32(framework: str) -> str | None:
    """Why `tf32:` cannot be honoured for `framework`, or None."""
    if framework in tf32.ENV:
        return None
    return f"imgkit knows how to switch TF32 for {', '.join(sorted(tf32.ENV))}, not {framework!r}"
