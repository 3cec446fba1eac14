"""The layout's rules, read from the code itself: a folder per stage with its command, the
engine and the registry as layers below the stages, data flowing one way (transitively),
the probe on the standard library alone, and each third-party library in the one place
that owns it."""
from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "imgkit"
# The stages, in the order data flows through them: each may import only those before it.
STAGES = ("matrix", "lock", "render", "builder", "verify", "scan", "publish", "export", "site")
LAYERS = ("engine", "registry")   # below every stage; the registry may use the engine only
# Third-party library -> the modules (or folders) that own it; nothing else imports it.
OWNERS = {
    "docker": {"engine/"},
    "urllib3": {"engine/"},                                  # docker-py's transport errors
    "requests": {"engine/", "registry/client.py"},           # docker-py's transport; the registry API
    "stamina": {"registry/client.py"},
    "typer": {"cli/"},
    "rich": {"console.py"},
    "jinja2": {"render/contexts.py", "render/template_problems.py",   # Dockerfiles and
               "site/pages.py"},                                        # their mistakes; pages
    "yaml": {"yamlload.py"},
    "pydantic": {"matrix/compat_file.py", "verify/facts.py",   # the schemas of what users, images,
                 "verify/attestation.py",                   # signed attestations and earlier
                 "registry/candidates.py",                  # CI jobs hand us; family files:
                 "matrix/family_model.py", "matrix/fields.py", "matrix/problems.py",
                 "matrix/spec.py", "matrix/schema.py",
                 "matrix/checkfile.py",                     # the declared checks' file (CST's)
                 "site/inputs.py",                          # verify --json files, from anywhere
                 "export/cluster.py",                       # a cluster's settings table
                 "matrix/waivers.py",                       # vulnerabilities.yaml
                 "scan/record.py",                          # the scans kept by image id
                 "scan/attested.py"},                       # a signed scan, from a registry
    "pydantic_core": {"matrix/fields.py"},                   # the refusals in imgkit's own words
    "tomli": {"tomlfile.py"},                                # tomllib before Python 3.11
    "packaging": {"versions.py", "matrix/"},                 # version rules: the host's and the matrix's
    "cyclonedx": {"verify/sbom.py"},
    "packageurl": {"verify/sbom.py"},
    "pynvml": {"verify/run.py"},
    "prometheus_client": {"verify/metrics.py", "scan/metrics.py"},   # verdicts and scans as metrics
    "pygal": {"site/plots.py"},                              # the site's charts
    "zstandard": {"publish/zstd.py"},                         # publish --compression zstd
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(("imgkit", *parts))


def runtime_imports(path: Path, typing_too: bool = False) -> set[str]:
    """Every module `path` imports at run time (any depth; relative imports resolved, and
    `from X import name` counted as X.name too); imports under `if TYPE_CHECKING:` left out
    unless `typing_too` (a type named across the layers is a dependency all the same)."""
    package = ["imgkit", *path.parent.relative_to(PACKAGE).parts]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not typing_too:
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(ast.parse(path.read_text()))
    return found


@lru_cache(maxsize=2)
def graph(typing_too: bool = True) -> dict[str, set[str]]:
    """imgkit module -> the imgkit modules it imports directly (type-only imports included
    unless `typing_too` is False: what is loaded at run time)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in runtime_imports(path, typing_too) if m in files}
            for name, path in files.items()}


def reach(start: str) -> set[str]:
    """What `start` loads at run time, at any depth."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph(typing_too=False)[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else ""


# in the standard library from Python 3.11, which this test may run under 3.10 without
LATER_STDLIB = {"tomllib"}


def third_party(path: Path) -> set[str]:
    return {m.split(".")[0] for m in runtime_imports(path) | absolute_imports(path)
            if m.split(".")[0] not in sys.stdlib_module_names | LATER_STDLIB
            and m.split(".")[0] != "imgkit" and m != "__future__"}


def absolute_imports(path: Path) -> set[str]:
    """Every `from X import ...` of an absolute module, TYPE_CHECKING blocks included."""
    return {n.module for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.ImportFrom) and not n.level and n.module}


def test_every_stage_has_a_folder_and_a_command() -> None:
    for stage in STAGES:
        assert (PACKAGE / stage / "command.py").is_file(), stage
    for layer in (*LAYERS, "probe"):
        assert (PACKAGE / layer / "__init__.py").is_file(), layer
    assert not (PACKAGE / "workflows.py").exists()


def test_each_third_party_library_has_one_owner() -> None:
    for path in PACKAGE.rglob("*.py"):
        relative = str(path.relative_to(PACKAGE))
        if "probe" in path.parts:
            continue
        for library in third_party(path):
            owners = OWNERS.get(library)
            assert owners is not None, f"{relative} imports {library}, which has no owner here"
            assert any(relative == o or relative.startswith(o) for o in owners if o), (
                f"{relative} imports {library}, owned by {sorted(owners)}")


# What the probe may import of the image's own: the requirement check reads metadata with the
# packaging that the image's pip vendors (or the image's packaging), in a helper interpreter.
FROM_THE_IMAGE = {"requirements.py": {"pip", "packaging"}}


def test_the_probe_imports_only_the_standard_library() -> None:
    for path in (PACKAGE / "probe").rglob("*.py"):
        outside = {m.split(".")[0] for m in runtime_imports(path)} - set(sys.stdlib_module_names)
        assert outside <= {"__future__", "imgkit"} | FROM_THE_IMAGE.get(path.name, set()), \
            (path.name, outside)
        assert not {m for m in runtime_imports(path) if m.startswith("imgkit.")
                    and not m.startswith("imgkit.probe")}, path.name


def test_stages_import_only_the_stages_before_them_and_layers_no_stage() -> None:
    rank = {stage: i for i, stage in enumerate(STAGES)}
    for module, imported in graph().items():
        mine = folder(module)
        for other in imported:
            theirs = folder(other)
            if theirs in rank and mine in rank:
                assert rank[theirs] <= rank[mine], f"{module} imports {other}: against the flow"
            if mine in LAYERS or mine == "":
                if module.split(".")[-1] in ("cli", "entry", "__main__"):
                    continue
                assert theirs not in rank, f"{module} (a layer) imports the stage module {other}"
            if mine == "registry":
                assert theirs in ("registry", "engine", ""), f"{module} imports {other}"


def test_the_engine_is_reached_only_through_its_package() -> None:
    for module, imported in graph().items():
        if folder(module) == "engine":
            continue
        inner = {m for m in imported if m.startswith("imgkit.engine.")}
        assert inner <= {f"imgkit.engine.{name}" for name in
                         ("Engine", "connect", "ImageInfo", "RunSpec", "ContainerRun", "PathStat",
                          "FileEntry", "Step")}, (module, inner)


def test_the_pure_stages_never_reach_the_engine_even_indirectly() -> None:
    for module in graph():
        if folder(module) in ("matrix", "render", "export") or module.endswith(
                ("imgkit.selection", "imgkit.console", "imgkit.options")):
            assert "imgkit.engine" not in reach(module), module
    assert "imgkit.engine" in reach("imgkit.builder.command")      # it does see imports
    assert "imgkit.engine" in reach("imgkit.verify.command")


def test_the_no_op_build_path_loads_only_the_standard_library() -> None:
    path = reach("imgkit.builder.noopcache")      # what entry.py loads for it
    assert path <= {"imgkit.builder.noopcache", "imgkit.localhttp", "imgkit.cache", "imgkit",
                    "imgkit.builder", "imgkit.docker_context"}, path


def test_package_folders_form_no_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for module, imported in graph().items():
        for other in imported:
            if folder(module) and folder(other) and folder(module) != folder(other):
                edges.setdefault(folder(module), set()).add(folder(other))

    def cycle_from(node: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in edges.get(node, ()):
            if nxt in path:
                return (*path, nxt)
            found = cycle_from(nxt, (*path, nxt))
            if found:
                return found
        return None
    for start in edges:
        assert cycle_from(start, (start,)) is None, cycle_from(start, (start,))


def import_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `edges` (its nodes in order, the first again at the end), or None."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str] | None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                return [*path[path.index(nxt):], nxt]
            if nxt not in done:
                found = walk(nxt, [*path, nxt])
                if found:
                    return found
        done.add(node)
        return None
    for start in sorted(edges):
        found = walk(start, [start]) if start not in done else None
        if found:
            return found
    return None


def test_modules_form_no_import_cycle() -> None:
    """No file imports, at any depth, a file that imports it back: imports inside
    functions and under TYPE_CHECKING count too (a lazy import is still a dependency)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}

    def every_import(path: Path) -> set[str]:
        """The files `path` imports: `from . import flags` is the file flags.py, not the
        package's __init__ as well."""
        package = ["imgkit", *path.parent.relative_to(PACKAGE).parts]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names = {f"{module}.{alias.name}" for alias in node.names}
                found.update(names & files.keys())
                if names - files.keys():       # a name defined in the module itself
                    found.add(module)
        return found
    edges = {name: {m for m in every_import(path) if m in files and m != name}
             for name, path in files.items()}
    assert import_cycle(edges) is None, " -> ".join(import_cycle(edges) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_assert_for_control_flow_in_the_package() -> None:
    for path in PACKAGE.rglob("*.py"):
        asserts = [n.lineno for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Assert)]
        assert not asserts, f"{path.relative_to(PACKAGE)}: assert at line(s) {asserts}"


def test_modules_and_functions_stay_small() -> None:
    """No module over 450 lines, no function over 50 outside the probe (which runs inside
    images as one stdlib-only script), the CLI's declarations under 400."""
    long_modules, long_functions = [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if len(text.splitlines()) > 450:
            long_modules.append(str(path.relative_to(PACKAGE)))
        if "probe" in path.parts:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    (node.end_lineno or 0) - node.lineno + 1 > 50:
                long_functions.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert not long_modules and not long_functions, (long_modules, long_functions)
    assert len((PACKAGE / "cli" / "commands.py").read_text().splitlines()) < 400


UNTYPED = re.compile(r"\b(?:dict|Dict|Mapping|MutableMapping)\[str, *Any\]")
# parsers of raw input: what they take is the untyped JSON they turn into a typed value
RAW_INPUT_PARSERS = {"engine/types.py:ImageConfig.of"}    # the engine's `Config` JSON


def _crossings(path: Path, tree: ast.Module, imported: set[str]) -> list[str]:
    """The names in `path` whose signature or field type says dict[str, Any] and that
    another module can reach: public ones, and private ones some other module imports."""

    def untyped(node: ast.AST) -> bool:
        return bool(UNTYPED.search(ast.unparse(node)))

    def signature_untyped(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        arguments = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                     *(a for a in (fn.args.vararg, fn.args.kwarg) if a is not None)]
        annotations = [a.annotation for a in arguments if a.annotation is not None]
        return any(untyped(a) for a in [*annotations, *([fn.returns] if fn.returns else [])])

    def reachable(name: str) -> bool:
        return not name.startswith("_") or name in imported

    where = str(path.relative_to(PACKAGE))
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and reachable(node.name) \
                and signature_untyped(node):
            found.append(f"{where}:{node.name}")
        if isinstance(node, ast.ClassDef) and reachable(node.name):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        not member.name.startswith("_") and signature_untyped(member):
                    found.append(f"{where}:{node.name}.{member.name}")
                if isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name) \
                        and not member.target.id.startswith("_") and untyped(member.annotation):
                    found.append(f"{where}:{node.name}.{member.target.id}")
    return [f for f in found if f not in RAW_INPUT_PARSERS]


def test_no_dict_of_any_crosses_a_module_boundary() -> None:
    """What one module hands another is typed (a model, a dataclass, a TypedDict, a JSON
    document type), never dict[str, Any]; the probe, a stdlib script inside images, aside."""
    trees = {path: ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}
    imported = {alias.name for tree in trees.values() for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    crossing = [c for path, tree in trees.items() if "probe" not in path.parts
                for c in _crossings(path, tree, imported)]
    assert not crossing, crossing


def test_no_test_module_imports_another_or_conftest() -> None:
    """What tests share lives in tests/helpers/ (and fixtures in conftest.py, which pytest
    hands out): a test module imported by another runs its module-level code twice and ties
    their fixtures together."""
    tests = PACKAGE.parent.parent / "tests"
    bench = PACKAGE.parent.parent / "bench"
    found = []
    for path in [*tests.rglob("*.py"), *bench.rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names]
            for name in names:
                last = name.split(".")[-1]
                if last.startswith("test_") or last == "conftest":
                    found.append(f"{path.relative_to(tests.parent)}:{node.lineno} {name}")
    assert not found, found
