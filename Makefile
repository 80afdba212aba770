# ma2h-hub — the two commands a newcomer needs: `make run` and `make test`.
CARGO ?= cargo
# `make run BIND=… DATA_DIR=…`; MA2H_BIND / MA2H_DATA_DIR from the environment are honoured too
# (the make variables win when both are given).
DATA_DIR ?= $(or $(MA2H_DATA_DIR),data)
BIND ?= $(or $(MA2H_BIND),127.0.0.1:8080)

.PHONY: help run test check build lint lint-infra fmt clean

## help: list the targets
help:
	@grep -E '^## [a-z-]+:' $(MAKEFILE_LIST) | sed -e 's/^## //' | awk -F': ' '{ printf "  %-11s %s\n", $$1, $$2 }'

## run: build ma2h-hub and ma2h (release) and start the local Hub on $(BIND) (dev mode, data in $(DATA_DIR))
run:
	$(CARGO) build --release -p ma2h-hub -p ma2h-cli
	MA2H_MODE=dev MA2H_BIND=$(BIND) MA2H_PUBLIC_URL=$(or $(MA2H_PUBLIC_URL),http://$(BIND)) MA2H_DATA_DIR=$(DATA_DIR) \
		$(or $(CARGO_TARGET_DIR),./target)/release/ma2h-hub serve

# moto stands in for DynamoDB + SQS (same endpoint contract as localstack/).
AWS_TEST_ENV = AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	AWS_REGION=us-east-1 MA2H_REQUIRE_AWS_TESTS=1

# Every function's AWS calls in make test are evaluated against its IAM policy (shared/sam);
# the decisions land here for `make iam-report`.
IAM_DIR = $(abspath $(or $(CARGO_TARGET_DIR),target))/iam
SHELL = /bin/bash

# The Router suite (shared/http/tests): `make test` runs it on each store (MA2H_TEST_STORE).
# Selected with `--workspace` (not `-p`) so the build reuses the workspace's feature set: no rebuild.
ROUTER_SUITE = --test hardening --test submit --test read --test resolve --test cancel --test operator --test ui --test mailbox --test ui_agents --test sessions --test inter_agent --test inter_agent_races --test ui_front --test openapi --test channels --test ui_live --test ui_triage --test approvals --test ladder --test webpush --test passkeys --test audit --test audit_events --test sso --test sso_settings

## test: start moto, run every test in the workspace (the Router suite again on an SQLite file and on DynamoDB), stop moto; clippy, fmt, core's import circles, the browser/first-hour/MCP/Python SDK/channels tests, conformance on the local Hub and on the Lambda functions (aws-local), template lint
test:
	bash scripts/moto.sh start
	rm -rf $(IAM_DIR) && mkdir -p $(IAM_DIR)
	$(AWS_TEST_ENV) MA2H_IAM_LOG=$(IAM_DIR)/lambda.jsonl bash -c '.venv/bin/python scripts/moto_serial_test.py && $(CARGO) test --workspace --locked && \
		for store in sqlite-file dynamodb; do echo "Router suite on $$store"; \
		MA2H_TEST_STORE=$$store $(CARGO) test --locked --workspace $(ROUTER_SUITE) || exit 1; done'; \
		status=$$?; bash scripts/moto.sh stop; exit $$status
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) fmt --all -- --check
	python3 scripts/import_graph.py shared/core/src
	bash scripts/ui-test.sh
	bash scripts/first-hour-test.sh
	bash scripts/mcp-test.sh
	bash scripts/python-sdk-test.sh
	bash scripts/channels-test.sh
	python3 scripts/bench_compare.py --self-test
	bash scripts/conformance.sh
	MA2H_IAM_LOG=$(IAM_DIR)/aws-local.jsonl MA2H_CONFORMANCE_STACK=aws-local bash scripts/conformance.sh
	$(MAKE) iam-report
	$(MAKE) lint-infra

## iam-report: every function's IAM grants beside the calls make test made (docs/iam.md); fails on a denied call or an unjustified unused grant
.PHONY: iam-report
iam-report:
	bash scripts/venv.sh
	cp docs/iam.md $(IAM_DIR)/iam.md
	$(CARGO) run -q --locked -p ma2h-sam --bin ma2h-iam-report -- --log $(IAM_DIR)/lambda.jsonl --log $(IAM_DIR)/aws-local.jsonl --write $(IAM_DIR)/iam.md
	@if ! diff -q <(sed -n '/iam-table:begin/,/iam-table:end/p' $(IAM_DIR)/iam.md) <(sed -n '/iam-table:begin/,/iam-table:end/p' docs/iam.md) >/dev/null; then \
		echo "note: docs/iam.md's table differs from this run's ($(IAM_DIR)/iam.md): cp $(IAM_DIR)/iam.md docs/iam.md"; fi

## lint-infra: cfn-lint and `sam validate --lint` on the SAM template, the OpenAPI document's validity, then lint-workflows (offline)
lint-infra:
	bash scripts/venv.sh
	.venv/bin/cfn-lint infra/template.yaml
	.venv/bin/openapi-spec-validator docs/openapi.json
	SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=us-east-1 .venv/bin/sam validate --lint -t infra/template.yaml
	$(MAKE) lint-workflows

## lint-workflows: the example GitHub Actions workflows — schema, expressions, no `${{ }}` in run:, shellcheck (offline)
.PHONY: lint-workflows
lint-workflows:
	bash scripts/venv.sh
	bash scripts/lint-workflows.sh

## check: the inner loop — build, unit and Router tests (no moto, browser or template lint), clippy
check:
	$(CARGO) test --workspace --lib --bins $(ROUTER_SUITE)
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/import_graph.py shared/core/src

## import-graph: ma2h-core's file imports as Graphviz (`make import-graph | dot -Tsvg > core.svg`); `make test` fails on a circle of more than two files
.PHONY: import-graph
import-graph:
	@python3 scripts/import_graph.py shared/core/src --dot

## build: the release binary target/release/ma2h-hub
build:
	$(CARGO) build --release -p ma2h-hub

## aws-local: the Lambda functions run locally end to end (moto, an API Gateway-style front on LISTEN=127.0.0.1:8090, SQS to deliver, the schedule to sweep)
.PHONY: aws-local
aws-local:
	CARGO=$(CARGO) bash scripts/aws-local.sh

## package: build what SAM deploys (sam build: arm64 bootstraps via cargo-lambda + zig, ~30 min cold), print sizes, enforce the zip budget
.PHONY: package
package:
	bash scripts/package.sh

## lambda-measure: the functions built with the Lambda profile for x86_64, their sizes and init times (scripts/lambda-measure.sh)
.PHONY: lambda-measure
lambda-measure:
	CARGO=$(CARGO) bash scripts/lambda-measure.sh

## bench: release build, a fresh Hub on a temp data dir, then submit / push / long-poll benchmarks (scripts/bench.sh)
.PHONY: bench
bench:
	CARGO=$(CARGO) bash scripts/bench.sh

## bench-reference: the same submit load against the MA2H reference Hub (TypeScript, in memory) behind node:http (scripts/bench-reference.sh; REFERENCE_DIR=… or it clones the public repository)
.PHONY: bench-reference
bench-reference:
	CARGO=$(CARGO) bash scripts/bench-reference.sh

## bench-compare: both, in interleaved rounds (BENCH_ROUNDS=10) — each round's ratio, then the median with a 95 % interval (scripts/bench-compare.sh)
.PHONY: bench-compare
bench-compare:
	CARGO=$(CARGO) bash scripts/bench-compare.sh

## lint: clippy on every target, warnings as errors
lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## fmt: format the workspace
fmt:
	$(CARGO) fmt --all

## clean: remove build output
clean:
	$(CARGO) clean
