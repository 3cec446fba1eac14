"""The validators the tests hold imgkit's outputs to: check-jsonschema (GitHub's and GitLab's
pipeline schemas, vendored), kubernetes-validate and CycloneDX's schema, run in the test's
own process and imported when first asked.

Each of them imports jsonschema's format checkers first, and one of those (rfc3987-syntax)
builds a grammar at import: about a second. Started as commands, that was paid per call;
imported at the top of a test module, by every worker collecting it. In process and on
first use it is paid once per worker that validates. What they are asked, and what they
answer, is what the commands would be asked and answer (the same entry points)."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Checked:
    returncode: int
    output: str                 # what it printed, stdout and stderr together


def check_jsonschema(schema: str, *paths: Path) -> Checked:
    """`check-jsonschema --builtin-schema SCHEMA PATH...`."""
    from check_jsonschema.cli.main_command import main
    from click.testing import CliRunner
    result = CliRunner().invoke(main, ["--builtin-schema", schema, *map(str, paths)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash is not a verdict about the file
    return Checked(result.exit_code, result.output)


def kubernetes_validate(*paths: Path) -> Checked:
    """`kubernetes-validate --strict --quiet PATH...` against its latest Kubernetes."""
    import kubernetes_validate.utils as utils
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        for path in paths:
            code |= utils.validate_file(str(path), utils.latest_version(), True, True, False)
    return Checked(code, out.getvalue())


def cyclonedx_error(text: str) -> object:
    """What CycloneDX 1.6's schema says against the JSON `text` (None: valid)."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    return JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)


def validate(*paths: Path) -> Checked:
    return kubernetes_validate(*paths)
