#!/usr/bin/env bash
# The configuration file (/etc/iosonar/iosonar.toml, core/base/config_file.h,
# docs/configuration.md) through the real binaries:
#  - the shipped file (deploy/iosonar.toml) passes `iosonar config check` and
#    `iosonar-exporter config check`;
#  - test/fixtures/config/bad-keys.toml: every line marked BAD is named with
#    its line number, and no other line is;
#  - syntax errors name their line;
#  - a daemon takes its options from its [table] and the shared top level, and
#    a flag on the command line overrides them (the lean exporter's framework
#    and the boost-parsed `iosonar collect`);
#  - a secret's file readable by others is refused, naming its key and line,
#    and a secret's value is never printed.
#   check_config.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
iosonar=$build/iosonar lean=$build/iosonar-exporter
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# ---- the shipped file ----
"$iosonar" config check "$src/deploy/iosonar.toml" >"$work/o" 2>&1 && ok "deploy/iosonar.toml passes iosonar config check" \
  || { cat "$work/o"; bad "deploy/iosonar.toml refused by iosonar"; }
"$lean" config check "$src/deploy/iosonar.toml" >"$work/o" 2>&1 && ok "deploy/iosonar.toml passes iosonar-exporter config check" \
  || { cat "$work/o"; bad "deploy/iosonar.toml refused by iosonar-exporter"; }

# ---- every bad key named with its line, and only those ----
f=$src/test/fixtures/config/bad-keys.toml
"$iosonar" config check "$f" >"$work/out" 2>"$work/err"; rc=$?
[[ $rc == 1 ]] || bad "config check of bad-keys.toml exited $rc, not 1"
want=$(grep -n "# BAD" "$f" | cut -d: -f1 | sort -n | tr '\n' ' ')
got=$(grep -o "bad-keys.toml:[0-9]*:" "$work/err" | cut -d: -f2 | sort -nu | tr '\n' ' ')
got_tables=$(grep -o "bad-keys.toml: \[[a-z]*\]: no command" "$work/err" | wc -l)
# [nosuchcommand] is named by its table (no line of a key): count it apart.
want_keys=$(grep -n "# BAD" "$f" | grep -v "^\S*:\[" | cut -d: -f1 | sort -n | tr '\n' ' ')
if [[ $got == "$want_keys" && $got_tables == 1 ]]; then ok "bad-keys.toml: lines $got named, and [nosuchcommand]"
else cat "$work/err"; bad "bad-keys.toml: named lines [$got] (+$got_tables tables), marked [$want]"; fi

# ---- syntax errors name their line ----
i=0
while IFS='|' read -r text line what; do
  i=$((i + 1))
  printf '%b' "$text" > "$work/syntax$i.toml"
  "$lean" config check "$work/syntax$i.toml" >"$work/o" 2>&1 && { bad "syntax case $i ($what) accepted"; continue; }
  grep -q "syntax$i.toml:$line: " "$work/o" && ok "syntax: $what (line $line)" || { cat "$work/o"; bad "syntax case $i ($what): line $line not named"; }
done <<'CASES'
[agent]\ninterval = 1\ninterval = 2\n|3|a key set twice
[agent]\n[agent]\n|2|a table twice
[agent]\noutput = "tcp://x\n|2|an unclosed string
[agent]\noutput = tcp://x\n|2|an unquoted string
\n\n[agent\n|3|an unclosed table header
[agent]\na.b = 1\n|2|a dotted key
[agent]\ninterval = [1, 2\n|2|an unclosed array
[agent]\noutput = "\\\\q"\ninterval = "\\\\x"extra\n|3|text after a value
[agent]\nx = {a = 1}\n|2|an inline table
[agent]\noutput = "\x5cu12"\n|2|a cut \\u escape
CASES

# ---- a daemon reads its table; a flag overrides it ----
fixture=$src/test/fixtures/lustre/2.15
cat > "$work/c.toml" <<TOML
output = "$work/top.jsonl"
[lustre]
proc-root = "$fixture"
count = 1
quiet = true
TOML
"$lean" lustre --config "$work/c.toml" >/dev/null 2>&1 || bad "iosonar-exporter lustre --config"
# (with --proc-root / it would refuse to start: no Lustre here; the fixture's oss source reads fine)
[[ -s $work/top.jsonl ]] && grep -q '"sampler.name":"lustre","sampler.source":"oss","sampler.ok":true' "$work/top.jsonl" \
  && ok "lustre took proc-root, count and the shared output from the file" || bad "lustre did not write to the file's output"
n_top=$(wc -l < "$work/top.jsonl" 2>/dev/null)
"$lean" lustre --config "$work/c.toml" --output "$work/flag.jsonl" >/dev/null 2>&1
[[ -s $work/flag.jsonl && $(wc -l < "$work/top.jsonl") == "$n_top" ]] && ok "--output on the command line overrides the file" \
  || bad "--output did not override the file"
IOSONAR_CONFIG=$work/c.toml "$lean" lustre --output "$work/env.jsonl" >/dev/null 2>&1
[[ -s $work/env.jsonl ]] && ok "\$IOSONAR_CONFIG names the file" || bad "\$IOSONAR_CONFIG not read"
# iosonar collect (boost::program_options): [collect] store, overridden by --store.
printf '%s\n' '{"@timestamp":"2026-11-22T07:18:07.883Z","event.dataset":"iosonar.probe","host.name":"n1","probe.op":"stat","probe.ok":true}' > "$work/rec.jsonl"
printf '[collect]\nstore = "%s"\n' "$work/store-from-file" > "$work/collect.toml"
"$iosonar" collect --config "$work/collect.toml" --from-file "$work/rec.jsonl" >/dev/null 2>&1
[[ -f $work/store-from-file/store.db ]] && ok "collect took --store from [collect]" || bad "collect did not use [collect] store"
"$iosonar" collect --config "$work/collect.toml" --store "$work/store-flag" --from-file "$work/rec.jsonl" >/dev/null 2>&1
[[ -f $work/store-flag/store.db ]] && ok "collect: --store overrides [collect] store" || bad "collect: --store did not override"
printf 'store = "%s"\n[collect]\n' "$work/store-top" > "$work/top.toml"
"$iosonar" collect --config "$work/top.toml" --from-file "$work/rec.jsonl" >/dev/null 2>&1
[[ -f $work/store-top/store.db ]] && ok "collect took the shared top-level store" || bad "collect ignored the top-level store"
printf '[collect]\nstore = "%s"\nmax-connections = "x"\n' "$work/s" > "$work/badcollect.toml"
"$iosonar" collect --config "$work/badcollect.toml" --from-file "$work/rec.jsonl" >"$work/o" 2>&1; rc=$?
[[ $rc == 2 ]] && grep -q "badcollect.toml:3: \[collect\] 'max-connections'" "$work/o" && ok "collect refuses a bad key with its line, exit 2" \
  || { cat "$work/o"; bad "collect with a bad key: exit $rc"; }

# ---- secrets ----
secret="mysql://iosonar:S3cr3t-PW@db.example/iosonar"
echo "$secret" > "$work/mysql.url"
chmod 0644 "$work/mysql.url"
printf 'mysql-file = "%s"\n[serve]\n' "$work/mysql.url" > "$work/s.toml"
"$iosonar" config check "$work/s.toml" >"$work/o" 2>&1 && bad "a world-readable secret file accepted"
grep -q "s.toml:1: 'mysql-file': .*(mode 0644)" "$work/o" && ok "a secret readable by others is refused (line 1, mode 0644)" || { cat "$work/o"; bad "secret refusal message"; }
chmod 0600 "$work/mysql.url"
"$iosonar" config check "$work/s.toml" >"$work/o" 2>&1 && ok "a 0600 secret file is accepted" || { cat "$work/o"; bad "0600 secret refused"; }
grep -q "S3cr3t" "$work/o" && bad "config check printed the secret"
# A secret that is not a valid value is refused without printing it.
echo "not-a-number-S3cr3t" > "$work/smtp"
chmod 0600 "$work/smtp"
printf '[collect]\nmysql-file = "%s"\nredis-file = "%s"\n' "$work/mysql.url" "$work/smtp" > "$work/s2.toml"
"$iosonar" config check "$work/s2.toml" >"$work/o" 2>&1
grep -q "S3cr3t" "$work/o" && bad "a secret's value appeared in the output"
ok "no secret's value in any output above"
exit $fail
