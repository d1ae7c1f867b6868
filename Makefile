# Quorum — see README.md. Every target installs what it needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# `make test` is deps -> typecheck -> lint -> unit -> sim -> integration, in that order even under `make -j`: every
# step needs what deps installs, and the integration tests should not share 2 cores with the simulator.
.NOTPARALLEL:

.PHONY: help deps deps-test npm test test-unit sim test-integration typecheck lint build clean

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

deps: ## install etcd, npm packages, build kube-apiserver + CAPI manager + clusterctl (cached by version)
	@bash hack/deps.sh

deps-test: ## what make test needs: deps without the Kubernetes 1.36 set (only e2e's kubeadm nodes run it)
	@bash hack/deps.sh test

npm: ## npm ci only
	@bash hack/deps.sh npm

test: deps-test typecheck lint test-unit sim-ci test-integration ## everything CI runs: types, lint, unit, 3,000 sim schedules, integration

typecheck: npm ## tsc --noEmit over src, test, e2e
	npx tsc --noEmit

lint: npm ## ESLint (layer import boundaries included) and Prettier's check; npx prettier --write . fixes the format
	npm run --silent lint

test-unit: npm ## unit and property tests of the pure core
	bash hack/run-tests.sh test/unit

sim-ci: npm
	npm run --silent sim -- --schedules 3000 --seed 1

sim: npm ## deterministic simulation: make sim SCHEDULES=10000 SEED=1
	npm run --silent sim -- --schedules $${SCHEDULES:-10000} --seed $${SEED:-1}

test-integration: deps-test ## integration tests on real etcd, kube-apiserver and CAPI core
	bash hack/run-tests.sh test/integration

build: npm ## compile to dist/
	npm run --silent build

clean: ## remove build outputs (keeps the binary cache in ~/.cache/quorum)
	rm -rf dist out bin

.PHONY: release-manifests
release-manifests: npm ## clusterctl artefacts: out/control-plane-components.yaml and out/metadata.yaml
	bash hack/release-manifests.sh

.PHONY: bench
bench: deps ## benchmarks (not part of test): writes bench/results/*.json, *.svg and the table in bench/README.md
	node --import tsx bench/run.ts

.PHONY: e2e run
e2e: deps ## end-to-end scenarios on real stacks (CAPI core + Quorum + process provider); summary in e2e/results/
	node --import tsx e2e/run.ts $(SCENARIOS)

run: ## local management plane + sample 3-replica cluster with a live view (with KUBECONFIG: only the controller)
	@bash hack/run.sh $(ARGS)
