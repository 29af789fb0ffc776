# Two commands: `make demo` and `make test`. Both install everything they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench sim proto clean

$(STAMP): pyproject.toml
	@# The power-loss tests mount a FUSE filesystem: fusermount3 and libfuse 3 (Debian's fuse3).
	@# A failed install stops here; where none can be made, the tests fail and say why.
	@if ! command -v fusermount3 >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing fuse3 (fusermount3, libfuse 3) for tests/powerloss"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 >/dev/null; \
		else \
			echo "warning: fusermount3 is missing and fuse3 cannot be installed here (needs root and apt-get):" \
				"tests/powerloss will fail" >&2; \
		fi; \
	fi
	@# The notification tests start a real NATS broker (Debian's nats-server).
	@if ! command -v nats-server >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing nats-server for tests/notify"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null; \
		else \
			echo "warning: nats-server is missing and cannot be installed here (needs root and apt-get):" \
				"tests/notify's NATS tests will fail" >&2; \
		fi; \
	fi
	@# The cluster tests start a real ZooKeeper of their own: Debian's zookeeper package (the server's
	@# jar; not zookeeperd, whose system service the tests never use).
	@if [ ! -e /usr/share/java/zookeeper.jar ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing zookeeper for tests/cluster"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null; \
		else \
			echo "warning: zookeeper is missing and cannot be installed here (needs root and apt-get):" \
				"tests/cluster will fail" >&2; \
		fi; \
	fi
	@# The console's browser tests drive Debian's chromium with Playwright (never `playwright install`).
	@if ! command -v chromium >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing chromium for tests/console"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "warning: chromium is missing and cannot be installed here (needs root and apt-get):" \
				"tests/console's browser tests will fail" >&2; \
		fi; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,spark,console,cluster]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/seaway demo --data-dir .seaway-demo

lint: $(STAMP)
	$(BIN)/ruff check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

# On every core (pytest-xdist): a test goes to whichever worker is free, except those of one
# xdist_group, which share a worker (the Spark tests: one Spark session per run). Each worker starts
# its own session-scoped servers (on ports the kernel picks). WORKERS=0 runs in this process.
WORKERS ?= auto
unit: $(STAMP)
	$(BIN)/pytest -q --durations=25 -n $(WORKERS) --dist loadgroup

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/seaway bench log

# The replicated log's seeded simulation: SEEDS seeds from FIRST; prints the first failing seed.
SEEDS ?= 1000
FIRST ?= 1
sim: $(STAMP)
	$(BIN)/python -m seaway.testing.cluster_sim --seeds $(SEEDS) --first $(FIRST)

proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I src --python_out=src --grpc_python_out=src --pyi_out=src \
		src/seaway/wire/seaway.proto src/seaway/wire/cluster.proto

clean:
	rm -rf $(VENV) .seaway-demo .pytest_cache .mypy_cache .ruff_cache
