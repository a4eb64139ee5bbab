#!/bin/sh
# Installs the node-redlock example client offline, from the npm tarballs in vendor/, into the
# folder given (created if missing): it gets lock_client.js, package.json and node_modules/,
# and `<folder>/lock_client.js` is the command for `--lock exec:redlock:<folder>/lock_client.js`.
# Needs Debian's nodejs and npm; reaches no registry. Usage: install.sh <folder>
set -eu
dir=${1:?usage: install.sh <folder>}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cp "$here/package.json" "$here/lock_client.js" "$dir/"
rm -rf "$dir/vendor"
cp -R "$here/vendor" "$dir/vendor"
chmod +x "$dir/lock_client.js"
# npm's cache goes next to the install, so that nothing is written to the user's home.
cd "$dir"
npm install --offline --no-audit --no-fund --no-package-lock --no-update-notifier \
  --cache "$dir/.npm-cache" --loglevel=error >&2
