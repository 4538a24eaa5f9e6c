#!/usr/bin/env bash
# The packages (cmake/Packaging.cmake): CPack builds iosonar-node and
# iosonar-server as .deb and .rpm from BUILD; the .debs are installed with
# dpkg into a fresh, empty root (their declared Depends checked against this
# machine's packages, since the root has none), the installed binaries run
# from there (--help, `config check` of the shipped configuration file, a
# traced program), the node package's binaries link no MariaDB, SQLite,
# libmicrohttpd, hiredis, boost or libcurl, the postinst creates the service
# user inside the root, the installed units verify, and a purge leaves
# nothing of the packages behind (the user systemd-sysusers made stays in
# the root's /etc/passwd and group, as Debian leaves system users). The .rpms
# are installed with rpm into another fresh root, run, and erased the same way.
#   check_packages.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# ---- build them (stripped, from the build tree's install rules) ----
if ! (cd "$build" && cpack -G "DEB;RPM" -B "$work/pkg") >"$work/cpack.log" 2>&1; then
  tail -30 "$work/cpack.log"; echo "FAIL: cpack"; exit 1
fi
node=$(ls "$work"/pkg/iosonar-node_*.deb) server=$(ls "$work"/pkg/iosonar-server_*.deb)
node_rpm=$(ls "$work"/pkg/iosonar-node-*.rpm) server_rpm=$(ls "$work"/pkg/iosonar-server-*.rpm)
echo "built: $(cd "$work/pkg" && ls -s --block-size=K ./*.deb ./*.rpm | tr '\n' ' ')"

# ---- what each holds ----
want_node=(./usr/bin/iosonar-exporter ./usr/lib/libiosonar-trace.so ./etc/iosonar/iosonar.toml
           ./usr/lib/systemd/system/iosonar-agent.service ./usr/lib/systemd/system/iosonar-exporter@.service
           ./usr/lib/systemd/system/iosonar-probe.service)
want_server=(./usr/bin/iosonar ./usr/lib/systemd/system/iosonar-collector.service
             ./usr/lib/systemd/system/iosonar-analyze.service ./usr/lib/systemd/system/iosonar-serve.service
             ./usr/share/iosonar/mysql-schema/001_jobs.sql ./usr/share/iosonar/es-templates/manifest.json)
dpkg-deb -c "$node" | awk '{print $6}' > "$work/node.list"
dpkg-deb -c "$server" | awk '{print $6}' > "$work/server.list"
for f in "${want_node[@]}"; do grep -qx "$f" "$work/node.list" || bad "iosonar-node lacks $f"; done
for f in "${want_server[@]}"; do grep -qx "$f" "$work/server.list" || bad "iosonar-server lacks $f"; done
grep -q "bin/iosonar$" "$work/node.list" && bad "iosonar-node holds the full iosonar binary"
rpm -qpl "$node_rpm" > "$work/node.rpm.list" 2>/dev/null
rpm -qpl "$server_rpm" > "$work/server.rpm.list" 2>/dev/null
for f in "${want_node[@]}"; do grep -qx "${f#.}" "$work/node.rpm.list" || bad "iosonar-node .rpm lacks ${f#.}"; done
for f in "${want_server[@]}"; do grep -qx "${f#.}" "$work/server.rpm.list" || bad "iosonar-server .rpm lacks ${f#.}"; done
rpm -qp --requires "$server_rpm" 2>/dev/null | grep -q "^iosonar-node" || bad "iosonar-server .rpm does not require iosonar-node"

# ---- declared dependencies: none of the analysis host's for the node; all present here ----
ndeps=$(dpkg-deb -f "$node" Depends) sdeps=$(dpkg-deb -f "$server" Depends)
echo "iosonar-node Depends: $ndeps"
echo "iosonar-server Depends: $sdeps"
for lib in libmariadb libsqlite3 libmicrohttpd libhiredis libboost libcurl; do
  grep -q "$lib" <<<"$ndeps" && bad "iosonar-node depends on $lib"
done
grep -q "iosonar-node" <<<"$sdeps" || bad "iosonar-server does not depend on iosonar-node"
for d in $(tr ',' '\n' <<<"$ndeps, $sdeps" | sed -E 's/\(.*\)//; s/\|.*//; s/ //g' | sort -u); do
  [[ -z $d || $d == iosonar-node ]] && continue
  dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || bad "declared dependency $d is not installed here"
done

# ---- install into a fresh root ----
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: > "$root/var/lib/dpkg/status"
dpk() { dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null "$@"; }
if ! dpk -i "$node" "$server" >"$work/install.log" 2>&1; then cat "$work/install.log"; bad "dpkg -i into a fresh root"; fi
[[ $(dpkg --root="$root" -s iosonar-node 2>/dev/null | grep -c "^Status: install ok installed") == 1 ]] || bad "iosonar-node not installed"
[[ $(dpkg --root="$root" -s iosonar-server 2>/dev/null | grep -c "^Status: install ok installed") == 1 ]] || bad "iosonar-server not installed"
grep -q "^iosonar:" "$root/etc/passwd" 2>/dev/null && echo "ok: postinst created the user iosonar in the root" || bad "postinst did not create the user iosonar"
dpkg --root="$root" -s iosonar-node | grep -q "^Conffiles:" || bad "iosonar.toml is not a conffile"

# ---- the compute node's binaries link no database or HTTP server ----
for f in "$root/usr/bin/iosonar-exporter" "$root"/usr/lib/libiosonar-*.so; do
  l=$(ldd "$f")
  for lib in libmariadb libsqlite3 libmicrohttpd libhiredis libboost libcurl; do
    grep -q "$lib" <<<"$l" && bad "$(basename "$f") links $lib"
  done
done
echo "ok: ldd of iosonar-exporter and the tracer: $(ldd "$root/usr/bin/iosonar-exporter" | awk '{print $1}' | tr '\n' ' ')"

# ---- run what was installed ----
"$root/usr/bin/iosonar-exporter" --help >/dev/null || bad "iosonar-exporter --help"
"$root/usr/bin/iosonar" --help >/dev/null || bad "iosonar --help"
"$root/usr/bin/iosonar-exporter" config check "$root/etc/iosonar/iosonar.toml" >/dev/null || bad "iosonar-exporter config check of the shipped file"
"$root/usr/bin/iosonar" config check "$root/etc/iosonar/iosonar.toml" >/dev/null || bad "iosonar config check of the shipped file"
# A traced program: `iosonar trace` finds the installed tracer beside it (../lib)
# and records the file the program writes.
mkdir -p "$work/data"
env -u IOSONAR_TRACE_LIB "$root/usr/bin/iosonar" trace --output "$work/trace.jsonl" -- \
  sh -c "echo hello > $work/data/out.txt" || bad "iosonar trace from the root"
grep -q "\"file.path\":\"$work/data/out.txt\"" "$work/trace.jsonl" && grep -q '"io.op":"write"' "$work/trace.jsonl" \
  && echo "ok: a traced program's write recorded by the installed tracer" || bad "no write record of the traced program"
# The tracer the package installed, preloaded directly: the program's output unchanged.
out=$(LD_PRELOAD="$root/usr/lib/libiosonar-trace.so" IOSONAR_OUTPUT="$work/t2.jsonl" true; echo "rc=$?")
[[ $out == "rc=0" ]] || bad "true under the installed tracer: $out"
# The installed units verify, their binaries those of the root.
bash "$src/test/deploy/check_units.sh" "$root/usr/lib/systemd/system" "$root/usr/bin" >"$work/units.log" 2>&1 \
  && echo "ok: the installed units verify" || { cat "$work/units.log"; bad "installed units"; }

# ---- the .rpms, installed with rpm into another fresh root and removed ----
# rpm runs scriptlets chrooted into the root, which has no /bin/sh: they are
# skipped there (--noscripts) and the %post is run here as dpkg runs the
# postinst (DPKG_ROOT), the same script.
rroot=$work/rpmroot
mkdir -p "$rroot"
rpmr() { rpm --root "$rroot" --dbpath /var/lib/rpm "$@"; }
rpmr --initdb 2>/dev/null || bad "rpm --initdb"
if ! rpmr -i --nodeps --noscripts "$node_rpm" "$server_rpm" >"$work/rpm-install.log" 2>&1; then
  cat "$work/rpm-install.log"; bad "rpm -i into a fresh root"
fi
[[ $(rpmr -qa 2>/dev/null | grep -c "^iosonar-") == 2 ]] || bad "rpm -qa does not list both packages"
for f in "${want_node[@]}" "${want_server[@]}"; do [[ -e "$rroot/${f#./}" ]] || bad "rpm install lacks ${f#.}"; done
rpm -qp --scripts "$node_rpm" 2>/dev/null | sed -n '/^#!\/bin\/sh/,$p' > "$work/post.sh"
DPKG_ROOT=$rroot sh "$work/post.sh" 1 && grep -q "^iosonar:" "$rroot/etc/passwd" 2>/dev/null \
  && echo "ok: the .rpm's %post created the user iosonar in its root" || bad "the .rpm's %post did not create the user"
"$rroot/usr/bin/iosonar" --help >/dev/null && "$rroot/usr/bin/iosonar-exporter" config check "$rroot/etc/iosonar/iosonar.toml" >/dev/null \
  && echo "ok: binaries installed from the .rpm run" || bad "binaries installed from the .rpm"
LD_PRELOAD="$rroot/usr/lib/libiosonar-trace.so" IOSONAR_OUTPUT="$work/t3.jsonl" sh -c "echo x > $work/data/rpm.txt" \
  && grep -q "\"file.path\":\"$work/data/rpm.txt\"" "$work/t3.jsonl" && echo "ok: the .rpm's tracer records a write" \
  || bad "the .rpm's tracer recorded nothing"
rpmr -e --noscripts iosonar-server iosonar-node >"$work/rpm-remove.log" 2>&1 || { cat "$work/rpm-remove.log"; bad "rpm -e"; }
left=$(cd "$rroot" && find . \( -path ./var/lib/rpm -o -path './etc/passwd*' -o -path './etc/group*' -o -path './etc/shadow*' \
        -o -path './etc/gshadow*' -o -path ./etc/.pwd.lock \) -prune -o -type f -print -o -type l -print)
# The shipped configuration file is %config(noreplace): rpm keeps it if changed; unchanged, it goes.
[[ -z $left ]] && echo "ok: rpm -e left no file of the packages" || bad "left after rpm -e: $left"

# ---- remove cleanly ----
if ! dpk --purge iosonar-server iosonar-node >"$work/remove.log" 2>&1; then cat "$work/remove.log"; bad "dpkg --purge"; fi
left=$(cd "$root" && find . \( -path ./var/lib/dpkg -o -path ./etc/passwd -o -path './etc/passwd-' -o -path ./etc/group \
        -o -path './etc/group-' -o -path ./etc/shadow -o -path './etc/shadow-' -o -path ./etc/gshadow -o -path './etc/gshadow-' -o -path ./etc/.pwd.lock \) -prune \
        -o -type f -print -o -type l -print)
[[ -z $left ]] && echo "ok: purge left no file of the packages" || bad "left after purge: $left"
exit $fail
