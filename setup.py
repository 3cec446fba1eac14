"""Everything is declared in pyproject.toml; this only puts the top-level templates/ (the
one copy in the repository) inside the built package, where an installed imgkit finds its
default templates (imgkit/shipped.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TEMPLATES = Path(__file__).resolve().parent / "templates"


class BuildWithTemplates(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:            # an editable install reads the checkout's
            shutil.copytree(TEMPLATES, Path(self.build_lib, "imgkit", "templates"), dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithTemplates})
