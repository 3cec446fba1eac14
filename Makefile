# imgkit: the two commands a newcomer needs are `make build` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
CUDA   ?= 11.8

.PHONY: setup setup-test host test-tools test-tools-first scanner scanner-background build test test-fast lint docs bench bench-cold bench-engines bench-pull bench-verify bench-base bench-site render clean-venv

$(BIN)/imgkit: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test-deps: $(BIN)/imgkit pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/imgkit  ## the virtualenv with imgkit (what `make build` needs)
	@# bytecode for the editable install, also where PYTHONDONTWRITEBYTECODE is set:
	@# start-up is most of what a no-op `imgkit build` costs
	@$(BIN)/python -m compileall -q src

setup-test: setup $(VENV)/.test-deps  ## imgkit's test tools in the virtualenv too (pytest, ruff, mypy, zizmor...)

host:                 ## a Docker engine with BuildKit (buildx) + mmdebstrap and debootstrap, installed and running (needs root/sudo)
	bash .ci/setup-host.sh

test-tools: host      ## what the tests need on the host: QEMU, a registry, skopeo, cosign, gitlab-ci-local
	bash .ci/setup-test-tools.sh
	bash .ci/setup-gitlab-ci-local.sh

# What `make test` waits for: the host's packages (the first tests need the registry and
# QEMU), then gitlab-ci-local's npm install (three minutes of compiling its native module on
# a fresh 2-core machine) beside the tests; only the tests that run it wait for it
# (tests/helpers/background.py).
test-tools-first: host
	bash .ci/setup-test-tools.sh
	@mkdir -p $(TOOLS) && echo building > $(TOOLS)/gitlab-ci-local.status
	@nohup bash .ci/setup-gitlab-ci-local.sh > $(TOOLS)/setup-gitlab-ci-local.out 2>&1 &

TOOLS ?= $(HOME)/.cache/imgkit-tools

scanner:              ## osv-scanner and trivy, pinned, built from their Go modules into ~/.cache/imgkit-tools/bin (imgkit scan runs them)
	bash .ci/build-scanner.sh

# The scanners' build is minutes of compiling that only the scan tests wait for: started
# here and left running beside the tests (tests/helpers/scanner.py waits while a status
# says building; the build writes done or failed, and its log beside it).
scanner-background:
	@mkdir -p $(TOOLS) && for n in osv-scanner trivy-fixture trivy; do echo building > $(TOOLS)/$$n.status; done
	@nohup bash .ci/build-scanner.sh > $(TOOLS)/build-scanner.out 2>&1 &

podman:               ## Podman 5.7, pinned, built from its Go module; its API served rootful and rootless (needs root)
	bash .ci/setup-podman.sh

# The same for Podman (about two minutes of compiling): only tests/test_podman.py waits for
# it (tests/helpers/podman.py).
podman-background:
	@mkdir -p $(TOOLS) && echo building > $(TOOLS)/podman.status
	@nohup bash .ci/setup-podman.sh > $(TOOLS)/setup-podman.out 2>&1 &

build: host setup     ## the main job: build the CUDA $(CUDA) slice of the bundled matrix
	$(BIN)/imgkit build --cuda $(CUDA)

# One pytest run for every test, on two workers: each test file runs on one worker (--dist
# loadfile), so a module's fixtures (test_package builds and installs the package, ~15 s;
# the arm64 family) are made once, not once per worker. The tests that need no engine run
# beside the engine's instead of before them: one command, one summary (on a 2-core machine
# 2% shorter than two runs, within what the machine drifts). Two sessions share the engine
# as two users would: each judges only its own namespaces' images and containers
# (tests/helpers/leftovers.py), legacy builds take the host's build lock, and BuildKit shares one
# cache. More workers than two gain nothing on a 2-core CI machine and only load a larger
# one's engine. (xdist_group marks would say it per module, but pytest 9.2 drops them
# silently: pytest-xdist issue 1386.) Files go out longest first (tests/conftest.py
# LONGEST_FIRST), so no long file is left to run alone at the end. The host's test packages
# (apt; they need the host, so it is set up first) and the venv's (pip) are installed side
# by side; the Go builds (scanners, Podman) and gitlab-ci-local's npm install run beside the
# tests, and only the tests that use them wait.
# Bytecode is kept between runs even where the environment sets PYTHONDONTWRITEBYTECODE:
# without it every test worker rewrites every test module's asserts again.
PYTEST = PYTHONDONTWRITEBYTECODE= PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q

test:                 ## every test, the real Docker engine included
	@$(MAKE) --no-print-directory scanner-background podman-background
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-tools-first setup-test
	$(PYTEST) -n 2 --dist loadfile --no-loadscope-reorder
	@cat $(TOOLS)/build-scanner.out $(TOOLS)/setup-podman.out $(TOOLS)/setup-gitlab-ci-local.out 2>/dev/null || true

test-fast: setup-test ## only the tests that need no Docker engine, on every core
	$(PYTEST) -m "not docker" -n auto --dist loadfile

lint: setup-test      ## ruff (pyflakes, pycodestyle, import order) and mypy on src and tests
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src tests

docs: setup           ## docs/cli.md, docs/matrix.md, docs/known.md, the family files' and the verdict predicate's JSON Schemas, from the code (tests fail on drift)
	$(BIN)/python -c "from imgkit.cli import reference; print(reference(), end='')" > docs/cli.md
	$(BIN)/python -c "from imgkit.matrix.schema import reference_page; print(reference_page(), end='')" > docs/matrix.md
	$(BIN)/imgkit schema > docs/matrix.schema.json
	$(BIN)/python -c "from imgkit.matrix.compat import load; from imgkit.matrix.known import known_page; print(known_page(load()), end='')" > docs/known.md
	$(BIN)/python -c "from imgkit.verify.claims_page import claims_page; print(claims_page(), end='')" > docs/claims.md
	mkdir -p docs/attestations
	$(BIN)/python -c "import json; from imgkit.verify.attestation import VerdictPredicate as V; print(json.dumps(V.model_json_schema(), indent=2))" > docs/attestations/verdict-v1.schema.json

bench: setup          ## builder benchmark: no-op rebuild vs docker's cache check (docs/benchmarks.md)
	$(BIN)/python bench/build_bench.py

bench-site: setup-test  ## imgkit site for 500 images: seconds and the grid page's size (docs/benchmarks.md)
	$(BIN)/python bench/site_bench.py

bench-cold: setup     ## also the cold shared-vs-independent build (slow: ~20 min, ~40 GB)
	$(BIN)/python bench/build_bench.py --cold

bench-engines: host setup  ## the cold 11.8 slice by each builder, on the host's engine (slow: ~10 min, ~25 GB)
	$(BIN)/python bench/build_bench.py --engines --rounds 2

bench-pull: test-tools setup  ## a cold pull of the Paddle image with gzip and zstd layers, and its first import (needs make build's image; ~20 GB free)
	$(BIN)/python bench/pull_bench.py

bench-verify: setup   ## verify --gpus none vs docker run + import (needs the built Paddle image)
	$(BIN)/python bench/verify_bench.py

bench-base: setup     ## the base made by debootstrap and by mmdebstrap, twice each (root, both tools, the mirror)
	$(BIN)/python bench/base_bench.py

render: setup
	$(BIN)/imgkit render --cuda $(CUDA) --out out/contexts
