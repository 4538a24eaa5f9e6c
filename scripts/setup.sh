#!/usr/bin/env bash
# Installs the Debian packages iosonar needs, idempotently (only what is
# missing; apt-get update only when something is). Debian 12.
#   scripts/setup.sh          what building iosonar needs (scripts/build.sh)
#   scripts/setup.sh --demo   that, less `iosonar serve`'s libmicrohttpd-dev and npm
#                             (npm alone is ~300 packages): scripts/demo.sh
#   scripts/setup.sh --test   that + the test suite's packages (catch2, redis-server, fio, ...)
set -euo pipefail
BUILD_PKGS=(build-essential cmake ninja-build ccache pkg-config libcurl4-openssl-dev rapidjson-dev libhiredis-dev
            libmariadb-dev libmariadb-dev-compat libboost-program-options-dev libsqlite3-dev
            zlib1g-dev   # zlib1g-dev: health reads .gz captures
            # iosonar serve: HTTP server (loaded at run time), npm ci of the pinned charting library
            libmicrohttpd-dev npm)
TEST_PKGS=(catch2 redis-server fio python3 python3-yaml
           # job DB, Slurm: a private MariaDB and a one-node Slurm started by the tests
           mariadb-server munge slurmctld slurmd slurm-client slurmdbd
           # oracles (PyWavelets, SciPy) and MPI-IO runs (OpenMPI)
           python3-pywt python3-scipy openmpi-bin libopenmpi-dev
           # a Fortran MPI-IO program (OpenMPI's Fortran bindings call PMPI_* directly)
           gfortran
           # the tracer's paths beyond read/write (test_tracer_paths): libaio's library (tp_paths links
           # it), Node's copyFileSync (nodejs: also npm's), setpriv for the setuid case
           libaio1 nodejs util-linux
           # hostile local users (test_hostile_users): useradd makes the second user; /usr/bin/time
           # measures the agent's peak RSS (test_output_hygiene, the agent benchmarks)
           passwd time
           # LASSi, slowdown, report: pandas/numpy oracles, headless Chromium
           python3-pandas python3-numpy chromium
           # deployment artifacts: `docker-compose config` parses the compose files (no Docker
           # engine is needed for that), shellcheck checks the shell embedded in them
           docker-compose shellcheck
           # libFuzzer targets of every parser (scripts/fuzz.sh)
           clang libclang-rt-14-dev
           # iosonar serve's benchmark (64 connections on loopback)
           wrk curl
           # anomaly: scikit-learn's DBSCAN as the oracle, a real SMTP server for alerts
           python3-sklearn python3-aiosmtpd
           # lustre --listen-metrics: the Prometheus text parser (prometheus_client 0.16, Debian 12)
           python3-prometheus-client
           # Darshan import: pydarshan from PyPI in a venv (install_pydarshan below)
           python3-venv
           # the tracer's acceptance run on real programs (test/acceptance): strace is its ground truth
           strace sqlite3 git xz-utils
           # real OpenSearch / Elasticsearch (scripts/engines.sh fetches them with Maven; Java 17 runs them)
           maven openjdk-17-jre-headless unzip openssl util-linux
           # packages: CPack's .rpm (rpmbuild), .deb checks (dpkg-deb, ldd); the SPANK plugin (slurm/spank.h);
           # the service units (systemd-analyze verify)
           rpm libslurm-dev systemd)
pkgs=("${BUILD_PKGS[@]}")
if [[ "${1:-}" == "--demo" ]]; then
  pkgs=()
  for p in "${BUILD_PKGS[@]}"; do [[ $p == npm || $p == libmicrohttpd-dev ]] || pkgs+=("$p"); done
fi
# pydarshan (PyPI `darshan`, pinned; it carries libdarshan-util and the Darshan
# project's example logs): the oracle of the Darshan import tests
# (test/darshan), in a venv that also sees Debian's scipy.
# drishti (PyPI `drishti-io`, pinned) in the same venv: the advice the
# darshan "advice against drishti" test compares iosonar's with (the test
# installs it too when it is missing).
PYDARSHAN_VERSION=3.5.0
DRISHTI_VERSION=0.8
install_pydarshan() {
  [[ "${1:-}" == "--test" ]] || return 0
  local venv="${IOSONAR_PYDARSHAN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/iosonar/pydarshan-$PYDARSHAN_VERSION}"
  if "$venv/bin/python" -c "import darshan, sys, importlib.metadata as m
sys.exit(darshan.__version__ != '$PYDARSHAN_VERSION' or m.version('drishti-io') != '$DRISHTI_VERSION')" 2>/dev/null; then
    return 0
  fi
  [[ -x "$venv/bin/pip" ]] || python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q "darshan==$PYDARSHAN_VERSION" "drishti-io==$DRISHTI_VERSION"
  echo "setup: pydarshan $PYDARSHAN_VERSION and drishti-io $DRISHTI_VERSION in $venv"
}
# The search engines refuse to run as root: the tests run them as this unprivileged system user.
make_engine_user() {
  if [[ "${1:-}" == "--test" ]] && [[ $(id -u) -eq 0 ]] && ! id iosonar-test >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin iosonar-test
    echo "setup: created system user iosonar-test (runs the test search engines)"
  fi
}
if [[ "${1:-}" == "--test" ]]; then pkgs+=("${TEST_PKGS[@]}"); fi

missing=()
for p in "${pkgs[@]}"; do
  # npm: a Node.js from elsewhere (NodeSource's nodejs package carries its own
  # npm and conflicts with Debian's) is as good as Debian's npm package.
  if [[ $p == npm ]] && command -v npm >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  make_engine_user "${1:-}"
  install_pydarshan "${1:-}"
  echo "setup: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The redis-server package starts a system instance; tests start their own on private ports.
# Likewise mariadb-server, munge and the slurm packages may start system services: the tests
# never use them (private datadirs, sockets, ports and keys under a temporary directory).
make_engine_user "${1:-}"
install_pydarshan "${1:-}"
echo "setup: done"
