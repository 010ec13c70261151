# Two commands on a fresh machine with Python 3.11+:
#   make demo   install, then ingest the bundled sample and write the report
#   make test   install, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,notebooks]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/calibrate demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check calibrate tests benchmarks
	$(BIN)/ruff format --check calibrate tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format calibrate tests benchmarks
	$(BIN)/ruff check --fix calibrate tests benchmarks

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache calibrate.duckdb
