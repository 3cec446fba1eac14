"""What NVIDIA's own CUDA images set, for images built the way NVIDIA builds them."""
from __future__ import annotations

NVIDIA_ENV = ('ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility '
              'NVIDIA_REQUIRE_CUDA="cuda>={cuda}"\nLABEL org.imgkit.cuda="{cuda}"\n')


EXTRACT = "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))"
