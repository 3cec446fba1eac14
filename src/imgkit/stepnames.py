"""A build step named as the person who wrote it would: a failure's "step 7/9 (RUN pip
install ...)" without the secret and bind mounts imgkit adds to RUN, and a family's own
`run:` step as its command, not as the wrapper that runs it (render/contexts.py writes it
as ["/bin/sh", "-ec", HELPERS, "imgkit-step", STEP]). Pure text."""
from __future__ import annotations

import json
import re

MOUNTS = re.compile(r"^(RUN)\s+(?:--mount=\S+\s+)+")
WRAPPED = "imgkit-step"


def step_words(instruction: str) -> str:
    """`instruction` (one Dockerfile instruction, as a builder's log prints it) in words."""
    text = MOUNTS.sub(r"\1 ", " ".join(instruction.split()))
    if not text.startswith("RUN ["):
        return text
    try:
        argv = json.loads(text[len("RUN "):])
    except ValueError:
        return text
    if isinstance(argv, list) and len(argv) == 5 and argv[3] == WRAPPED:
        return f"RUN {argv[4]}"
    return text
