# ma2h-hub — the two commands a newcomer needs: `make run` and `make test`.
CARGO ?= cargo
DATA_DIR ?= ./data
BIND ?= 127.0.0.1:8080

.PHONY: run test build lint fmt clean

## run: build and start the local Hub on 127.0.0.1:8080 (dev mode, data in ./data)
run:
	MA2H_MODE=dev MA2H_BIND=$(BIND) MA2H_PUBLIC_URL=http://$(BIND) MA2H_DATA_DIR=$(DATA_DIR) \
		$(CARGO) run --release -p ma2h-hub -- serve

## test: every test in the workspace, then clippy with warnings as errors
test:
	$(CARGO) test --workspace --locked
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

build:
	$(CARGO) build --release -p ma2h-hub

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
