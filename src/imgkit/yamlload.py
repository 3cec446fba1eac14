"""The one module that uses PyYAML. Parsing goes through libyaml when PyYAML was built with
it: about ten times faster than the pure-Python loader, which matters because every command
parses the matrix and the compat data before doing anything (a no-op `imgkit build`
included). Writing (pipelines, manifests) keeps the document's key order, one line a value."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import yaml

from .errors import SpecError

# A JSON value, and a document imgkit writes (a manifest, a policy, a schema): what crosses
# from the module that builds one to the one that writes it, instead of dict[str, Any]
Json = Union[str, int, float, bool, None, Sequence["Json"], Mapping[str, "Json"]]
Document = Mapping[str, Json]

YAMLError = yaml.YAMLError


class WrittenFloat(float):
    """A YAML float that keeps the text it was read from: `cudnn: [9.10]` is the number 9.1,
    and the error that says so must quote the 9.10 the person typed, not 9.1."""

    written: str

    def __new__(cls, value: float, written: str) -> "WrittenFloat":
        number = super().__new__(cls, value)
        number.written = written
        return number


class SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader (libyaml's where there is one), its floats as WrittenFloat."""


def _float(loader: Any, node: yaml.ScalarNode) -> WrittenFloat:
    return WrittenFloat(yaml.SafeLoader.construct_yaml_float(loader, node), node.value)


SafeLoader.add_constructor("tag:yaml.org,2002:float", _float)


def written(value: float) -> str:
    """How a number was written in the file, where it was read from one."""
    return value.written if isinstance(value, WrittenFloat) else repr(value)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python


def read_file(path: Path) -> Any:
    """A user's YAML file, or a SpecError naming the file and where it broke."""
    try:
        text = path.read_text()
        return safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from None
    except yaml.YAMLError as exc:
        raise _broken(path, text, exc) from None


def _unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> SpecError:
    """A file that is not there to read, or not text, in words."""
    if isinstance(exc, UnicodeDecodeError):
        return SpecError(str(path), "(file)", "is not a text file (not UTF-8)",
                         hint="name the YAML file itself")
    if isinstance(exc, IsADirectoryError):
        return SpecError(str(path), "(file)", "is a folder, not a file",
                         hint="name the YAML file in it")
    return SpecError(str(path), "(file)", f"cannot be read: {exc.strerror or exc}")


def _broken(path: Path, text: str, exc: yaml.YAMLError) -> SpecError:
    """Where a file stopped being YAML, and what the usual cause of that is."""
    mark = getattr(exc, "problem_mark", None)
    problem = str(getattr(exc, "problem", None) or exc)
    lines = text.splitlines()
    line = lines[mark.line] if mark and mark.line < len(lines) else ""
    hint = ""
    if "\t" in line:
        hint = "the line holds a tab: YAML indents with spaces only"
    elif "mapping values are not allowed" in problem:
        hint = "a value holding ': ' must be quoted, e.g. cmd: \"echo a: b\""
    elif "found undefined alias" in problem or "expected alphabetic or numeric" in problem:
        hint = "a value starting with * or & must be quoted, e.g. only: [\"*\"]"
    return SpecError(str(path), f"line {mark.line + 1}" if mark else "(parse)",
                     f"not valid YAML: {problem}", hint=hint)


Path_ = tuple[str | int, ...]


def _lines(node: Any, path: Path_, out: dict[Path_, int]) -> None:
    """Where each key and item of a composed document starts (1-based), by its path."""
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out[path + (key.value,)] = key.start_mark.line + 1
                _lines(value, path + (key.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, path + (i,), out)


def read_with_lines(path: Path) -> tuple[Any, dict[Path_, int]]:
    """A user's YAML file and the line of each of its keys and items, parsed once."""
    try:
        text = path.read_text()
        loader = SafeLoader(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from None
    try:
        node = loader.get_single_node()
        lines: dict[Path_, int] = {}
        if node is not None:
            _lines(node, (), lines)
        return (loader.construct_document(node) if node is not None else None), lines
    except yaml.YAMLError as exc:
        raise _broken(path, text, exc) from None
    finally:
        loader.dispose()


class _ScriptDumper(yaml.SafeDumper):
    """Text of several lines as a literal block (`run: |`), as a person writes a script; a
    short list of words on one line (`needs: [build-python]`)."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                   style="|" if "\n" in text else None)


def _list(dumper: yaml.SafeDumper, items: list[Any]) -> yaml.SequenceNode:
    short = (all(isinstance(i, str) and "\n" not in i for i in items)
             and sum(len(i) + 2 for i in items) <= 60)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=short)


_ScriptDumper.add_representer(str, _text)
_ScriptDumper.add_representer(list, _list)


def dump(document: Document, scripts: bool = False) -> str:
    """`document` as block-style YAML in its own key order, no line folded; `scripts`: text
    of several lines as literal blocks."""
    return yaml.dump(document, Dumper=_ScriptDumper if scripts else yaml.SafeDumper,
                     sort_keys=False, width=1000, default_flow_style=False)
