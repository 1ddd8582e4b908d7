#!/bin/bash
# What an operator installs instead of building (issue 35; docs/deploy.md, step 3). Into dist/ (or --output DIR):
#
#   duet-<version>-linux-<arch>.tar.gz  `duet` with the Swift runtime linked in (--static-swift-stdlib) and its web
#                                       client (the Duet_DuetWeb.resources folder it serves, kept beside it): unpack
#                                       anywhere, run `./duet serve`. It links glibc, libstdc++, libgcc and zlib only.
#   duet_<version>_<arch>.deb           the same in /opt/duet (and `duet` on the PATH), the systemd unit
#                                       (deploy/systemd/duet.service), /etc/duet/duet.env (deploy/duet.env, a conffile:
#                                       an upgrade keeps the operator's), a system user `duet` and /var/lib/duet.
#                                       `apt install ./duet_<version>_<arch>.deb` on a Debian 12 root without Swift.
#
# <version> is DuetVersion's (CHANGELOG.md) and the build's place in history, `0.1.0+git<commits>.<commit>`
# (`.dirty` for a tree with changes), so that each later build is a newer package to apt.
#
#   scripts/package.sh            # release build (about 20 minutes on 2 cores from nothing); the long tier's
#   scripts/package.sh --debug    # a debug build: the same files, a bigger binary (about 8 minutes from nothing)
#
# Needs dpkg-dev (dpkg-shlibdeps) beside the Swift toolchain.
#
# The files are deploy/'s, not copies: what the deploy tests run is what the package installs. The package depends on
# the shared libraries the binary links (dpkg-shlibdeps), nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=release
output=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --debug) configuration=debug ;;
    --output) [ $# -ge 2 ] || { echo "package: --output needs a folder" >&2; exit 64; }; output="$2"; shift ;;
    *) echo "usage: scripts/package.sh [--debug] [--output DIR]" >&2; exit 64 ;;
  esac
  shift
done

# A build directory of its own (.build-package): objects compiled for the ordinary, dynamically linked build do not
# carry what a static link of Foundation needs (CoreFoundation, ICU), and relinking them statically in .build failed
# once an incremental build had recompiled some of them (undefined CF* and ICU symbols).
scratch=.build-package
swift build -c "$configuration" --product duet --static-swift-stdlib --scratch-path "$scratch"
bin="$(swift build -c "$configuration" --static-swift-stdlib --scratch-path "$scratch" --show-bin-path)"

linked="$(ldd "$bin/duet")"
if grep -q 'libswift\|libFoundation\|lib_FoundationICU\|libdispatch\|libBlocksRuntime' <<< "$linked"; then
  echo "package: $bin/duet still links the Swift runtime dynamically:" >&2
  echo "$linked" >&2
  exit 1
fi
base="$("$bin/duet" --version | cut -d' ' -f1)"
version="$base+git$(git rev-list --count HEAD).$(git rev-parse --short=10 HEAD)"
[ -z "$(git status --porcelain)" ] || version="$version.dirty"
arch="$(dpkg --print-architecture)"
mkdir -p "$output"
output="$(cd "$output" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The self-contained folder: the binary and the web client it serves, side by side (SwiftPM's resource accessor
# looks beside the executable).
folder="$work/duet-$version"
mkdir -p "$folder"
install -m 755 "$bin/duet" "$folder/duet"
cp -r "$bin/Duet_DuetWeb.resources" "$folder/"
cp LICENSE "$folder/"
tarball="$output/duet-$version-linux-$(uname -m).tar.gz"
tar -C "$work" -czf "$tarball" "duet-$version"

# The Debian package.
root="$work/deb"
install -d -m 755 "$root/opt/duet" "$root/usr/bin" "$root/etc/duet" "$root/lib/systemd/system" "$root/DEBIAN" \
  "$root/usr/share/doc/duet"
cp -a "$folder/duet" "$folder/Duet_DuetWeb.resources" "$root/opt/duet/"
ln -s /opt/duet/duet "$root/usr/bin/duet"
install -m 600 deploy/duet.env "$root/etc/duet/duet.env"
install -m 644 deploy/systemd/duet.service "$root/lib/systemd/system/duet.service"
install -m 644 LICENSE "$root/usr/share/doc/duet/copyright"
gzip -9n -c CHANGELOG.md > "$root/usr/share/doc/duet/changelog.gz"

# dpkg-shlibdeps reads a source package's debian/control: a minimal one, in the scratch folder.
mkdir -p "$work/src/debian"
printf 'Source: duet\n\nPackage: duet\nArchitecture: any\n' > "$work/src/debian/control"
depends="$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/opt/duet/duet" 2> "$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')" || {
  cat "$work/shlibdeps.log" >&2
  exit 1
}
[ -n "$depends" ] || { echo "package: dpkg-shlibdeps found no dependency for the binary" >&2; exit 1; }

cat > "$root/DEBIAN/control" <<EOF
Package: duet
Version: $version
Architecture: $arch
Maintainer: The Duet developers <duet@duet.invalid>
Depends: $depends, passwd
Section: net
Priority: optional
Installed-Size: $(du -sk "$root" | cut -f1)
Description: resilient 1:1 WebRTC calling: the signaling server
 duet serve: WebSocket and SSE signaling for 1:1 rooms, reconnect tokens, TURN
 credentials for coturn, metrics, and the browser client it serves. Settings
 in /etc/duet/duet.env; run by systemd as duet.service (docs/deploy.md).
EOF
echo /etc/duet/duet.env > "$root/DEBIAN/conffiles"

cat > "$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# The system user the service runs as (duet.service's User=; with DynamicUser=yes systemd uses this static one, so
# the data keeps its owner across reinstalls) and its data directory, where secrets.json lives (systemd moves it under
# /var/lib/private/ at the first start, as DynamicUser= does). The service is neither enabled nor started here: it
# needs the operator's secret first (duet serve refuses the placeholder), and docs/deploy.md step 6 enables it. An
# upgrade restarts a running server (it drains its calls first: SIGTERM) and leaves a stopped or disabled one so.
set -e
if [ "$1" = configure ]; then
  getent group duet > /dev/null || groupadd --system duet
  getent passwd duet > /dev/null || useradd --system --gid duet --home-dir /var/lib/duet --no-create-home \
    --shell /usr/sbin/nologin --comment "Duet signaling server" duet
  [ -e /var/lib/duet ] || install -d -m 700 -o duet -g duet /var/lib/duet
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    [ -z "$2" ] || systemctl try-restart duet.service || true
  fi
  if [ -z "$2" ]; then
    echo "duet: set the TURN secret and names in /etc/duet/duet.env (docs/deploy.md, step 5), then: systemctl enable --now duet"
  fi
fi
EOF
cat > "$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop duet.service || true
  systemctl disable duet.service > /dev/null 2>&1 || true
fi
EOF
cat > "$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# Purge removes the data (the TURN and token secrets in secrets.json); the user stays, as Debian's packages leave
# theirs (files elsewhere may still be owned by it).
set -e
if [ "$1" = purge ]; then
  rm -rf /var/lib/duet /var/lib/private/duet
  # An enabled service's link (the operator's `systemctl enable`) would dangle.
  rm -f /etc/systemd/system/multi-user.target.wants/duet.service
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
EOF
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)

deb="$output/duet_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" > /dev/null
echo "package: $tarball"
echo "package: $deb"
