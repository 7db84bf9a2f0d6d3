# tern — developer and CI entry points.
#   make test   the ONE command that runs every test (what CI runs via .ci/run)
#   make bench  side-by-side benchmark against redis-server (never part of `make test`)
#   make bench-memory     memory per entry, redis-server vs tern (BENCH_MEM_SCALE=0.1 for a quick run)
#   make bench-isolation  db 0 GET/SET while a huge command loops on db 1 (ARGS="--ops 'KEYS nomatch*'")
#   make bench-atomic     MULTI/EXEC of 5 INCRs, EVALSHA, PUBLISH fan-out (tern-bench load generator)
#   make bench-durable    appendfsync always, 1:1 SET/GET, -P1 and -P20, fsyncs 2 ms slower (BENCH_FSYNC_DELAY_US); checks the AOFs grew
#   make bench-field-expiry  hash-field TTLs vs Redis 7.4.1: bytes per field with a time, GET/SET while 1M fields expire
#   make bench-member-expiry the same for set members (KeyDB's EXPIREMEMBER; tern alone)
#   make bench-snapshot   BGSAVE under writes: peak RSS/PSS incl. fork child, save/load time (BENCH_SNAP_KEYS=5000000)
#   make bench-two-cores  tern --threads 2 vs Redis 7.2.6 io-threads 2 on both cores: where each core's time goes
#   make bench-replication  full sync of 5M keys to a fresh replica, resume after a 5 s link drop (BENCH_REPL_KEYS=500000: quick run)
#   make bench-reshard    redis-cli --cluster reshard of 1M keys between two masters under a RedisCluster load (BENCH_RESHARD_KEYS=100000: quick run)
#   make run    build and start tern-server on port 6379 (extra args: make run ARGS="--port 7000")
#   make fuzz   run the RESP parser fuzz target (needs nightly + cargo-fuzz; FUZZ_SECONDS=600)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(HOME)/.cargo/bin:$(PATH)
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
FUZZ_SECONDS ?= 600

.PHONY: test setup fmt clippy cargo-test build pytest bench bench-memory bench-isolation bench-atomic bench-durable bench-field-expiry bench-member-expiry bench-snapshot bench-replication bench-two-cores bench-cluster-mode bench-reshard run fuzz clean

test: setup fmt clippy cargo-test pytest
	@echo "make test: all suites passed"

setup:
	bash scripts/setup.sh

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings

# The fsync-delay shim is a cdylib that `cargo test` does not build; the AOF tests preload it.
cargo-test:
	cargo build --release -p tern-fsync-delay
	cargo test --workspace --release

build:
	cargo build --release --bin tern-server

pytest: build
	TERN_SERVER=$(CURDIR)/target/release/tern-server $(PY) -m pytest tests/python -q -ra $(PYTEST_ARGS)

bench:
	bash scripts/bench.sh

bench-memory:
	BENCH_SCRIPT=bench_memory.py bash scripts/bench.sh $(ARGS)

bench-isolation:
	BENCH_SCRIPT=bench_isolation.py bash scripts/bench.sh $(ARGS)

bench-field-expiry:
	BENCH_SCRIPT=bench_field_expiry.py bash scripts/bench.sh $(ARGS)

bench-member-expiry:
	BENCH_FE_KIND=set BENCH_SCRIPT=bench_field_expiry.py bash scripts/bench.sh $(ARGS)

bench-atomic:
	cargo build --release -p tern-bench
	BENCH_SCRIPT=bench_atomic.py bash scripts/bench.sh $(ARGS)

bench-durable:
	cargo build --release -p tern-bench -p tern-fsync-delay
	BENCH_SCRIPT=bench_durable.py bash scripts/bench.sh $(ARGS)

bench-snapshot:
	cargo build --release -p tern-bench
	BENCH_SCRIPT=bench_snapshot.py bash scripts/bench.sh $(ARGS)

bench-replication:
	BENCH_SCRIPT=bench_replication.py bash scripts/bench.sh $(ARGS)

bench-two-cores:
	BENCH_SCRIPT=bench_two_cores.py bash scripts/bench.sh $(ARGS)

bench-cluster-mode:
	BENCH_SCRIPT=bench_cluster_mode.py bash scripts/bench.sh $(ARGS)

bench-reshard: setup
	BENCH_SCRIPT=bench_reshard.py bash scripts/bench.sh $(ARGS)

run: build
	./target/release/tern-server $(ARGS)

fuzz:
	cd fuzz && cargo +nightly fuzz run resp_parser -- -max_total_time=$(FUZZ_SECONDS)

clean:
	cargo clean
