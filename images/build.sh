#!/bin/sh
# build.sh builds the jepsen-lite node image without a registry: a Debian root
# filesystem made with debootstrap from the machine's configured Debian mirror,
# with the servers under test and the clock-skew library installed, imported
# into the local Docker engine with `docker import`.
#
# Usage: images/build.sh [--dry-run]
#   --dry-run   print the image, mirror, suite and packages it would use, and stop
#
# Environment (all optional):
#   JEPSEN_LITE_NODE_IMAGE  image name and tag       (default jepsen-lite/node:latest)
#   FORCE=1                 rebuild even if the image exists (an image built
#                           with other packages than these is always rebuilt)
#   NODE_PACKAGES           Debian packages to install (default: images/packages.txt)
#   DEBIAN_MIRROR           mirror URL                (default: read from /etc/apt)
#   DEBIAN_SUITE            suite                     (default: this machine's codename)
#   CLOCKSKEW_LIB           built preload library     (default build/libclockskew.so;
#                           compiled from clockskew/clockskew.c when absent)
#   TMPDIR                  where the temporary root filesystem is made (default /var/tmp)
set -eu

IMAGE="${JEPSEN_LITE_NODE_IMAGE:-jepsen-lite/node:latest}"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
CLOCKSKEW_LIB="${CLOCKSKEW_LIB:-$ROOT/build/libclockskew.so}"

say() { echo "images: $*" >&2; }
die() { say "$*"; exit 1; }

DRY_RUN=0
case "${1:-}" in
--dry-run) DRY_RUN=1 ;;
"") ;;
*) die "unknown argument $1 (usage: images/build.sh [--dry-run])" ;;
esac

if [ "$DRY_RUN" = 0 ]; then
	command -v docker >/dev/null 2>&1 || die "docker not found in PATH"
	docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"
fi

PACKAGES="$(echo ${NODE_PACKAGES:-$(grep -v '^[[:space:]]*#' "$HERE/packages.txt")})"
INCLUDE="$(echo $PACKAGES | tr ' ' ',')"

# An image whose packages are not the list's (a system was added since it
# was built) is built again.
if [ "$DRY_RUN" = 0 ] && [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1 &&
	[ "$(docker image inspect -f '{{index .Config.Labels "org.jepsen-lite.packages"}}' "$IMAGE" 2>/dev/null || true)" != "$PACKAGES" ]; then
	say "$IMAGE was built with other packages than $PACKAGES; building it again"
	FORCE=1
fi

if [ "$DRY_RUN" = 0 ] && [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
	say "$IMAGE exists; skipping (FORCE=1 rebuilds)"
	# Say so when the image's clock-skew library differs from this checkout's.
	if [ -f "$ROOT/clockskew/clockskew.c" ]; then
		want="$(sha256sum "$ROOT/clockskew/clockskew.c" | cut -d' ' -f1)"
		have="$(docker image inspect -f '{{index .Config.Labels "org.jepsen-lite.clockskew-source"}}' "$IMAGE" 2>/dev/null || true)"
		[ "$have" = "$want" ] || say "warning: $IMAGE was built from another clockskew/clockskew.c; FORCE=1 rebuilds"
	fi
	exit 0
fi


# The mirror: the first non-security Debian URI this machine's apt uses.
mirror_from_apt() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas: print the URIs of stanzas whose Suites has no "-security".
		awk '
			/^[[:space:]]*$/ { if (uris != "" && suites !~ /-security/ && types ~ /(^| )deb( |$)/) { print uris; done = 1; exit } uris=""; suites=""; types=""; next }
			/^URIs:/   { uris=$2 }
			/^Suites:/ { $1=""; suites=$0 }
			/^Types:/  { $1=""; types=$0 " " }
			END { if (!done && uris != "" && suites !~ /-security/ && types ~ /(^| )deb( |$)/) print uris }
		' "$f" | head -n1
	done | head -n1
	if [ -f /etc/apt/sources.list ]; then
		awk '$1 == "deb" && $0 !~ /-security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list
	fi
}
MIRROR="${DEBIAN_MIRROR:-$(mirror_from_apt | head -n1)}"
[ -n "$MIRROR" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d/*.sources}; set DEBIAN_MIRROR"
SUITE="${DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}"
[ -n "$SUITE" ] || die "cannot tell this machine's Debian suite; set DEBIAN_SUITE"


if [ "$DRY_RUN" = 1 ]; then
	echo "image=$IMAGE"
	echo "mirror=$MIRROR"
	echo "suite=$SUITE"
	echo "packages=$PACKAGES"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "debootstrap needs root; run as root"
if ! command -v debootstrap >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "debootstrap not found and no apt-get to install it"
	say "installing debootstrap"
	apt-get install -y debootstrap >/dev/null || die "apt-get install debootstrap failed"
fi

WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/jepsen-lite-rootfs.XXXXXX")"
cleanup() {
	# debootstrap mounts proc/sys into the root filesystem; never delete through a mount.
	if [ -d "$WORK" ]; then
		awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
		rm -rf --one-file-system "$WORK"
	fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
ROOTFS="$WORK/rootfs"

# The clock-skew library: the built one, or compiled here from its source.
if [ ! -f "$CLOCKSKEW_LIB" ]; then
	[ -f "$ROOT/clockskew/clockskew.c" ] || die "neither $CLOCKSKEW_LIB nor clockskew/clockskew.c exists"
	say "compiling clockskew/clockskew.c"
	CLOCKSKEW_LIB="$WORK/libclockskew.so"
	${CC:-cc} -shared -fPIC -O2 -Wall -o "$CLOCKSKEW_LIB" "$ROOT/clockskew/clockskew.c" -ldl
fi

CLOCKSKEW_SOURCE=none
[ -f "$ROOT/clockskew/clockskew.c" ] && CLOCKSKEW_SOURCE="$(sha256sum "$ROOT/clockskew/clockskew.c" | cut -d' ' -f1)"

start=$(date +%s)
say "debootstrap $SUITE (minbase) with: $PACKAGES"
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOTFS" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
	tail -n 30 "$WORK/debootstrap.log" >&2
	die "debootstrap failed"
}

install -D -m 0755 "$CLOCKSKEW_LIB" "$ROOTFS/usr/local/lib/libclockskew.so"
mkdir -p "$ROOTFS/data" "$ROOTFS/jepsen/clock"

# Slim the filesystem: nothing here is needed at run time.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
	"$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
	"$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/* "$ROOTFS"/debootstrap 2>/dev/null || true
find "$ROOTFS/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
# Debian's postgresql-common makes a default cluster; the backend makes its own.
rm -rf "$ROOTFS"/var/lib/postgresql/*/main "$ROOTFS"/etc/postgresql/*/main 2>/dev/null || true
# Debian's mariadb-server initialises /var/lib/mysql; the backend makes its own.
rm -rf "$ROOTFS"/var/lib/mysql/* 2>/dev/null || true
# The image must not carry this machine's mirror.
rm -f "$ROOTFS/etc/apt/sources.list" "$ROOTFS"/etc/apt/sources.list.d/* 2>/dev/null || true
: >"$ROOTFS/etc/resolv.conf"
: >"$ROOTFS/etc/hostname"

awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done

old_id="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
say "importing $IMAGE"
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
	--change 'ENV LANG=C.UTF-8' \
	--change 'WORKDIR /data' \
	--change 'CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"]' \
	--change "LABEL org.jepsen-lite.packages=\"$PACKAGES\"" \
	--change "LABEL org.jepsen-lite.suite=$SUITE" \
	--change "LABEL org.jepsen-lite.clockskew-source=$CLOCKSKEW_SOURCE" \
	- "$IMAGE" >/dev/null
# A rebuild leaves the previous image untagged: remove it unless in use.
if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect -f '{{.Id}}' "$IMAGE")" ]; then
	docker rmi "$old_id" >/dev/null 2>&1 || true
fi

# Smoke test: the servers start and the clock-skew library loads.
smoke="$(docker run --rm -e LD_PRELOAD=/usr/local/lib/libclockskew.so "$IMAGE" sh -c '
	for p in '"$PACKAGES"'; do
		case "$p" in
		redis-server) redis-server --version ;;
		postgresql) ls /usr/lib/postgresql/*/bin/postgres ;;
		zookeeper) ls /usr/share/java/zookeeper.jar && java -version ;;
		etcd-server) etcd --version ;;
		mariadb-server) /usr/sbin/mariadbd --version ;;
		esac || exit 1
	done' 2>&1)" ||
	die "the new image $IMAGE does not run its servers: $smoke"
case "$smoke" in
*"cannot be preloaded"*) die "the clock-skew library does not load in $IMAGE: $smoke" ;;
esac

say "built $IMAGE in $(( $(date +%s) - start ))s, $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
