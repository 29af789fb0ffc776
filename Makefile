# Two commands: `make demo` and `make test`. Both install everything they need first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench proto clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/seaway demo --data-dir .seaway-demo

lint: $(STAMP)
	$(BIN)/ruff check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/seaway bench log

proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I src --python_out=src --grpc_python_out=src --pyi_out=src \
		src/seaway/wire/seaway.proto

clean:
	rm -rf $(VENV) .seaway-demo .pytest_cache .mypy_cache .ruff_cache
