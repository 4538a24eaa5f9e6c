#!/usr/bin/env bash
# The systemd units (deploy/systemd/, configured into BUILD/deploy/systemd/)
# through `systemd-analyze verify`, with their ExecStart= binaries pointed at
# BIN_DIR (the build tree or an installed root): any message about a unit is a
# failure, not only verify's exit status (an unknown key is only a warning
# there). Then the sandboxing each unit promises (docs/deployment.md), and a
# self-test: a unit with a misspelt key must be refused.
#   check_units.sh UNIT_DIR BIN_DIR
set -euo pipefail
units=$1 bin=$(cd "$2" && pwd)
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (scripts/setup.sh --test installs systemd)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
verify() {  # verify FILE: 0 when systemd-analyze has nothing to say about it
  local f=$1 out
  if ! out=$(systemd-analyze verify --man=no "$f" 2>&1); then echo "$out"; return 1; fi
  # messages about other units (the host's) are not ours
  out=$(grep -F "$(basename "$f")" <<<"$out" || true)
  if [[ -n $out ]]; then echo "$out"; return 1; fi
  return 0
}
n=0
for u in "$units"/*.service; do
  name=$(basename "$u")
  # A template is verified as an instance of each exporter it runs.
  targets=("$name")
  if [[ $name == *@.service ]]; then targets=("${name/@./@lustre.}" "${name/@./@health.}"); fi
  for t in "${targets[@]}"; do
    sed -e "s#^ExecStart=/usr/bin/#ExecStart=$bin/#" "$u" > "$work/$t"
    if verify "$work/$t"; then echo "ok: $t verifies"; else echo "FAIL: $t"; fail=1; fi
    n=$((n + 1))
  done
  # What every unit promises.
  for key in "NoNewPrivileges=yes" "Restart=on-failure" "ProtectHome=yes" "PrivateTmp=yes"; do
    grep -qx "$key" "$u" || { echo "FAIL: $name lacks $key"; fail=1; }
  done
  grep -Eqx "ProtectSystem=(strict|full)" "$u" || { echo "FAIL: $name lacks ProtectSystem="; fail=1; }
  # Root only where it is needed: the agent (every user's rings) and the Lustre exporters.
  case $name in
    iosonar-agent.service|iosonar-exporter@.service) ! grep -q "^User=" "$u" || { echo "FAIL: $name should run as root"; fail=1; } ;;
    *) grep -qx "User=iosonar" "$u" || { echo "FAIL: $name runs as root; it should be User=iosonar"; fail=1; } ;;
  esac
  grep -q -- "--config /etc/iosonar/iosonar.toml" "$u" || { echo "FAIL: $name does not read /etc/iosonar/iosonar.toml"; fail=1; }
done
((n >= 7)) || { echo "FAIL: only $n units verified (expected agent, exporter@lustre/health, probe, collector, analyze, serve)"; fail=1; }
# Self-test: the same check refuses a unit with a misspelt key and one whose binary does not exist.
first=$(ls "$units"/iosonar-collector.service)
sed -e "s#^ExecStart=/usr/bin/#ExecStart=$bin/#" -e 's/^NoNewPrivileges=/NoNewPrivilege=/' "$first" > "$work/selftest-key.service"
if verify "$work/selftest-key.service" >/dev/null; then echo "FAIL: a misspelt key passed the check"; fail=1; else echo "ok: a misspelt key is refused"; fi
sed -e "s#^ExecStart=/usr/bin/#ExecStart=$work/nonexistent/#" "$first" > "$work/selftest-exec.service"
if verify "$work/selftest-exec.service" >/dev/null; then echo "FAIL: a missing binary passed the check"; fail=1; else echo "ok: a missing binary is refused"; fi
exit $fail
