#!/bin/sh
# Installs the node-advisory-lock example client offline, from the npm tarballs in vendor/, into the
# folder given (created if missing): it gets lock_client.js, package.json and node_modules/, and
# `<folder>/lock_client.js` is the command for `--lock exec:postgres-advisory:<folder>/lock_client.js`.
# Reaches no registry. Usage: install.sh <folder>
#
# With npm on the PATH: `npm install --offline` of package.json, whose dependencies are the
# tarballs. Without it (Debian 12's nodejs package has no npm, and Debian's npm conflicts with
# NodeSource's nodejs): the tarballs are unpacked into node_modules/ as the same flat tree npm
# makes of them (every dependency of every package is one of the tarballs, at the top level).
set -eu
dir=${1:?usage: install.sh <folder>}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cp "$here/package.json" "$here/lock_client.js" "$dir/"
chmod +x "$dir/lock_client.js"
rm -rf "$dir/vendor" "$dir/node_modules"
cp -R "$here/vendor" "$dir/vendor"
cd "$dir"
if command -v npm >/dev/null 2>&1; then
  # npm's cache goes next to the install, so that nothing is written to the user's home.
  npm install --offline --no-audit --no-fund --no-package-lock --no-update-notifier \
    --cache "$dir/.npm-cache" --loglevel=error >&2
else
  # package.json's "name": "file:vendor/<tarball>" lines say which tarball is which package.
  sed -n 's/^ *"\([^"]*\)": "file:\(vendor\/[^"]*\.tgz\)",\{0,1\}$/\1 \2/p' package.json |
    while read -r name tarball; do
      mkdir -p "node_modules/$name"
      tar -xzf "$tarball" -C "node_modules/$name" --strip-components=1 --no-same-owner
    done
fi
for package in advisory-lock debug minimist ms pg pg-cloudflare pg-connection-string pg-int8 pg-pool pg-protocol pg-types pgpass postgres-array postgres-bytea postgres-date postgres-interval split2 xtend; do
  [ -f "node_modules/$package/package.json" ] || { echo "install.sh: $package missing" >&2; exit 1; }
done
