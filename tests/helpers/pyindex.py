"""A package index of our own (PEP 503 "simple" pages with sha256 fragments), to move on
purpose: a test publishes a new release and sees what locks, gates and schedules make of
it. Real wheels (pure Python, with a RECORD pip accepts), served from a directory or over
HTTP on every interface (build containers reach it at the Docker bridge's gateway)."""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import http.server
import re
import shutil
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class LocalIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "files").mkdir(parents=True, exist_ok=True)

    def add_wheel(self, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
        """A pure-Python wheel of `name` `version` (one module saying its version) that
        requires `requires`."""
        module = normalized(name).replace("-", "_")
        dist = f"{module}-{version}"
        files = {f"{module}/__init__.py": f'__version__ = "{version}"\n'.encode(),
                 f"{dist}.dist-info/METADATA":
                     (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                      + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode(),
                 f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: imgkit-tests\n"
                                            b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
        record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
        files[f"{dist}.dist-info/RECORD"] = (record + f"{dist}.dist-info/RECORD,,\n").encode()
        return self.add_file(name, self._zip(f"{dist}-py3-none-any.whl", files))

    def add_file(self, name: str, wheel: Path) -> Path:
        """Publish a wheel file (ours, or one fetched from elsewhere) under `name`."""
        kept = self.root / "files" / wheel.name
        if wheel != kept:
            shutil.copy(wheel, kept)
        self._page(name)
        return kept

    def _zip(self, filename: str, files: dict[str, bytes]) -> Path:
        path = self.root / "files" / filename
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, data in files.items():
                archive.writestr(zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0)), data)
        return path

    def _page(self, name: str) -> None:
        project = normalized(name)
        page = self.root / "simple" / project / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in sorted((self.root / "files").glob("*.whl")):
            if normalized(wheel.name.split("-")[0]) != project:
                continue
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            links.append(f'<a href="../../files/{html.escape(wheel.name)}#sha256={digest}">'
                         f"{html.escape(wheel.name)}</a><br>")
        page.write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")

    @property
    def file_url(self) -> str:
        return (self.root / "simple").as_uri() + "/"

    @contextmanager
    def served(self, host: str) -> Iterator[str]:
        """Over HTTP on every interface; yields the index URL as `host` names it."""
        handler = functools.partial(_Quiet, directory=str(self.root))
        server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{host}:{server.server_address[1]}/simple/"
        finally:
            server.shutdown()
            server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
