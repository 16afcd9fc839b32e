#!/usr/bin/env bash
# Makes a Debian base image without a registry: debootstrap + docker import.
#
#   scripts/docker-base-image.sh [IMAGE [ROOTFS_DIR]]    (default cjob-base:bookworm)
#
# Debian CJOB_DEBIAN_SUITE (default bookworm), minbase variant, from DEBIAN_MIRROR or
# else the first Debian archive configured in /etc/apt/sources.list* (deb.debian.org
# when none is). Slimmed like Debian's -slim images (no docs, man pages or
# translations, now or from later installs), with the suite's updates and security
# archives in its sources.list. Needs root, debootstrap and a Docker engine
# ($DOCKER, default docker). Prints the mirror it used as its last line.
set -euo pipefail

suite=${CJOB_DEBIAN_SUITE:-bookworm}
image=${1:-cjob-base:$suite}
rootfs=${2:-$(mktemp -d /var/tmp/cjob-rootfs.XXXXXX)}
DOCKER=${DOCKER:-docker}

die() { echo "docker-base-image: error: $*" >&2; exit 1; }

# First configured Debian archive for a suite (bookworm, bookworm-security, ...).
debian_uri() {
    python3 - "$1" <<'PY'
import glob, re, sys
want = sys.argv[1]
entries = []
for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*"))]:
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        continue
    if path.endswith(".sources"):
        for block in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", block, re.M))
            if fields.get("Enabled", "yes").lower() == "no":
                continue
            for uri in fields.get("URIs", "").split():
                entries += [(uri, s) for s in fields.get("Suites", "").split()]
    elif path.endswith(".list"):
        for line in text.splitlines():
            m = re.match(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m:
                entries.append((m.group(1), m.group(2)))
for uri, suite in entries:
    if suite == want and re.search(r"/debian(-security)?/?$", uri):
        print(uri.rstrip("/"))
        break
PY
}

case "$rootfs" in
    / | /*/ | "") die "refusing to use '$rootfs' as the scratch root filesystem" ;;
esac
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap is missing (apt-get install debootstrap)"
mirror=${DEBIAN_MIRROR:-$(debian_uri "$suite")}
mirror=${mirror:-http://deb.debian.org/debian}
security=$(debian_uri "$suite-security")

trap 'rm -rf "$rootfs"' EXIT
rm -rf "$rootfs"
echo "debootstrap --variant=minbase $suite $rootfs $mirror"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" || die "debootstrap failed"

cat >"$rootfs/etc/dpkg/dpkg.cfg.d/cjob-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
{
    echo "deb $mirror $suite main"
    echo "deb $mirror $suite-updates main"
    [ -z "$security" ] || echo "deb $security $suite-security main"
} >"$rootfs/etc/apt/sources.list"
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
    -exec rm -rf {} +
rm -rf "$rootfs"/usr/share/{man,info,groff,lintian}/* "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/var/log/{apt,dpkg.log,bootstrap.log}

echo "docker import as $image"
tar --numeric-owner -C "$rootfs" -c . | "$DOCKER" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    --change 'LABEL io.checkpointed-jobs.target=base' \
    --message "debootstrap --variant=minbase $suite $mirror" - "$image" >/dev/null ||
    die "docker import of the $suite root filesystem failed"
echo "$suite from $mirror"
