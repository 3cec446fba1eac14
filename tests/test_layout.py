"""The layout's rules, read from the code itself: one folder per stage, docker-py only in
engine.py, typer only in cli.py, and the pure stages (matrix, export) never reach the engine."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "imgkit"


def imports(path: Path) -> set[str]:
    """Every module `path` imports (relative imports resolved), at any depth."""
    package = ["imgkit", *path.parent.relative_to(PACKAGE).parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def modules() -> dict[str, set[str]]:
    return {str(p.relative_to(PACKAGE)): imports(p) for p in PACKAGE.rglob("*.py")
            if "probe" not in p.parts}


def importers(prefix: str) -> set[str]:
    return {name for name, found in modules().items()
            if any(m == prefix or m.startswith(prefix + ".") for m in found)}


def test_one_folder_per_stage() -> None:
    for stage in ("matrix", "build", "verify", "publish", "export", "probe"):
        assert (PACKAGE / stage / "__init__.py").is_file(), stage


def test_only_engine_py_imports_docker_and_only_cli_py_imports_typer() -> None:
    assert importers("docker") == {"engine.py"}
    assert importers("typer") == {"cli.py"}


def test_the_pure_stages_never_reach_the_engine() -> None:
    reaching = importers("imgkit.engine")
    assert not {m for m in reaching if m.startswith(("matrix/", "export/"))}, reaching
    assert "render.py" not in reaching
    assert {"workflows.py", "build/scheduler.py", "verify/run.py"} <= reaching  # it does see imports
