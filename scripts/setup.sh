#!/usr/bin/env bash
# Idempotent installer for what `make test` needs on a fresh Debian machine (runs as root, no
# sudo, no stdin, works with CI=true). Re-runs are fast: every step checks first.
#   - redis-server, redis-tools (redis-cli, redis-benchmark), tcl: reference server for
#     differential tests and benchmarks. Debian's redis-server service is never left running.
#   - redis-sentinel: a real Sentinel for tests/python/test_sentinel.py (its service, too, is
#     never left running).
#   - a Python virtualenv in .venv with tests/python/requirements.txt
#   - a Rust toolchain with rustfmt and clippy
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export DEBIAN_FRONTEND=noninteractive

log() { echo "[setup] $*"; }

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then
    SUDO="sudo -n"
fi

# ---- Debian packages ------------------------------------------------------------------------
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
command -v tclsh >/dev/null 2>&1 || missing+=(tcl)
command -v redis-sentinel >/dev/null 2>&1 || [ -x /usr/bin/redis-sentinel ] || missing+=(redis-sentinel)
# openssl CLI: the Python TLS tests make their certificates with it.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# python3-venv only matters for Debian's own python3; a pyenv/other python with a working venv
# module (ensurepip included) needs nothing.
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    have_pkg python3-venv || missing+=(python3-venv)
fi
if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
        log "installing: ${missing[*]}"
        # Keep apt from starting the redis-server service at install time (policy-rc.d 101 =
        # "action not allowed"); remove our policy file afterwards if we created it.
        created_policy=0
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
            $SUDO chmod +x /usr/sbin/policy-rc.d
            created_policy=1
        fi
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
        if [ "$created_policy" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
    else
        log "WARNING: apt-get not available; missing: ${missing[*]}"
    fi
fi
# If a distribution redis-server or redis-sentinel service runs anyway (installed earlier, or
# started by apt), stop and disable it so it does not hold its port (6379, 26379).
for svc_pattern in "redis-server:^/usr/bin/redis-server 127.0.0.1:6379" "redis-sentinel:^/usr/bin/redis-sentinel"; do
    svc=${svc_pattern%%:*}
    pattern=${svc_pattern#*:}
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
        log "stopping and disabling the $svc service"
        $SUDO systemctl stop "$svc" || true
        $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ] && pgrep -f "$pattern" >/dev/null 2>&1; then
        log "stopping the $svc init service"
        $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
        command -v update-rc.d >/dev/null 2>&1 && $SUDO update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
done

# ---- Rust toolchain ---------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "[setup] ERROR: no Rust toolchain (cargo) found; install rustup's stable toolchain" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    for comp in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^$comp"; then
            log "adding rustup component $comp"
            rustup component add "$comp"
        fi
    done
fi
cargo fmt --version >/dev/null 2>&1 || { echo "[setup] ERROR: cargo fmt missing" >&2; exit 1; }
cargo clippy --version >/dev/null 2>&1 || { echo "[setup] ERROR: cargo clippy missing" >&2; exit 1; }

# ---- Python virtualenv ------------------------------------------------------------------------
REQ="$ROOT/tests/python/requirements.txt"
VENV="$ROOT/.venv"
STAMP="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "creating virtualenv $VENV"
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV"; then
        # Debian's python3 ships venv/ensurepip separately
        log "python3 -m venv failed; installing python3-venv"
        rm -rf "$VENV"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq --no-install-recommends python3-venv
        python3 -m venv "$VENV"
    fi
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
    log "installing Python test requirements"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
    echo "$want" >"$STAMP"
fi
log "ok: $(redis-server --version | cut -d' ' -f1-3), $(cargo --version), $("$VENV/bin/python" --version)"
