#!/usr/bin/env bash
# Prepare a fresh Debian machine for novalab: the few system packages pip cannot
# provide, then a virtual environment at .venv with novalab installed editable.
# Safe to run again: it only installs what is missing or changed.
#   scripts/setup.sh          what `novalab` needs to run
#   scripts/setup.sh --test   also what the tests use to check the pictures
#   scripts/setup.sh --bench  also what the benchmarks plot with (the `bench` extra)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
# pkg-config + libvirt-dev: libvirt-python compiles against the C library.
# libvirt0 ships the `test:///default` driver used by the embedded cloud.
# graphviz: the `dot` binary behind call-graph rendering.
APT_PACKAGES="pkg-config libvirt-dev libvirt0 graphviz"
# chromium: renders the SVG/HTML diagrams headless in the tests;
# chromium-driver: lets Selenium drive that chromium through the trace page (novalab web);
# plantuml: checks the PlantUML text with PlantUML's own parser;
# dnsmasq-base: the real dnsmasq binary (no system service) for the DHCP driver's
# test against the real thing; the embedded cloud still uses the stand-in.
if [ "${1:-}" = "--test" ]; then
  APT_PACKAGES="$APT_PACKAGES chromium chromium-driver plantuml dnsmasq-base"
fi

missing=()
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    echo "setup: installing system packages with sudo: ${missing[*]}"
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${missing[*]}" >&2
    echo "setup: run as root:  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# Mermaid's own parser (mermaid.min.js, run in chromium by the tests) comes from
# the npm registry; where npm is not installed the Mermaid check is skipped.
if [ "${1:-}" = "--test" ] && command -v npm >/dev/null \
    && [ ! -f .cache/mermaid/package/dist/mermaid.min.js ]; then
  echo "setup: fetching mermaid.min.js (npm pack mermaid@11) for the Mermaid syntax check"
  mkdir -p .cache/mermaid
  if (cd .cache/mermaid && npm pack --silent mermaid@11 >/dev/null 2>&1 \
      && tar xzf mermaid-*.tgz package/dist/mermaid.min.js && rm -f mermaid-*.tgz); then :
  else echo "setup: could not fetch mermaid; its syntax check will be skipped" >&2; fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# Reinstall only when the project's metadata changed since the last install.
extras=test stamp=.venv/.novalab-installed
if [ "${1:-}" = "--bench" ]; then extras=test,bench stamp=.venv/.novalab-installed-bench; fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing novalab and its dependencies ($extras) into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
  touch "$stamp"
fi

# Byte-compile novalab's own modules. Python reads a .pyc even where
# PYTHONDONTWRITEBYTECODE forbids writing one (as on CI's machines), and otherwise
# every novalab process (serve, each of up's services, every CLI call a lab or test
# makes) compiles the whole package from source again. Only changed files are redone.
.venv/bin/python -m compileall -q -j 0 reference tracing diagrams labs >/dev/null
