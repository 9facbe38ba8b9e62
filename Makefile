# Convenience front end over CMake. The README's quick start:
#   make demo   install what is missing, build, optimize the default model with the shipped rule set
#               (then the numerical check) and print the before/after summary
#   make test   build with ASan+UBSan and run the whole test suite (under CI, set CI=true: warnings
#               are errors, TASC_WERROR), the Python package's tests included (TASC_PYTHON, with
#               the interpreter of the virtual environment scripts/setup.sh makes)
JOBS ?= $(shell nproc)
BUILD ?= build
TEST_BUILD ?= build-test
DEMO_MODEL ?= models/resnet50.json
DEMO_RULES ?= rules/verified-4.json
PY_VENV ?= $(HOME)/.cache/tasc/py-venv
# the venv's interpreter once setup has made it (looked up when the recipe runs), else python3
PY_TEST = $$(test -x $(PY_VENV)/bin/python && echo $(PY_VENV)/bin/python || command -v python3)

.PHONY: all setup build demo test clean
all: build

setup:
	@TASC_PY_VENV=$(PY_VENV) bash scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/tasc info $(DEMO_MODEL)
	mkdir -p $(BUILD)/demo
	./$(BUILD)/tasc optimize $(DEMO_MODEL) --rules $(DEMO_RULES) --out $(BUILD)/demo/optimized.json

test: setup
	cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTASC_SANITIZE=ON \
	    -DTASC_WERROR=$(if $(CI),ON,OFF) -DTASC_PYTHON=ON -DPython3_EXECUTABLE=$(PY_TEST) >/dev/null
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cd $(TEST_BUILD) && ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(TEST_BUILD)
