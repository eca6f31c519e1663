#!/bin/sh
# Bootstrap a Debian root for the ft-harness base image, without any image registry.
#
#   bootstrap-base.sh ROOT SUITE MIRROR PACKAGES KEYRING
#
# ROOT must not exist yet.  PACKAGES is a comma-separated --include list.  KEYRING is the
# Debian archive keyring debootstrap checks the suite's signed Release file with (the mirror
# may be plain http: every package is then checked against the signed Release's hashes).
# harness/images.py runs this, then streams `tar -C ROOT -c .` into `docker import`
# (docker SDK) and tags the result with a digest of (this file, SUITE, MIRROR, PACKAGES).
# Bump SCRIPT_VERSION when the output of this script changes in a way the digest cannot see.
# SCRIPT_VERSION=1
set -eu
ROOT=$1 SUITE=$2 MIRROR=$3 PACKAGES=$4 KEYRING=${5:-}

if [ -z "$KEYRING" ] || [ ! -s "$KEYRING" ]; then
    echo "bootstrap-base.sh: no archive keyring at '$KEYRING': refusing to debootstrap unchecked" >&2
    exit 2
fi
debootstrap --variant=minbase --keyring="$KEYRING" --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR"

# apt inside the image talks to the same mirror, over the same suite.
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" > "$ROOT/etc/apt/sources.list"
# Smaller, reproducible-ish root: no downloaded .debs, no apt lists, no logs.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/*.log
# Recommends stay out of every later apt-get install.
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    > "$ROOT/etc/apt/apt.conf.d/90ft-harness"
