#!/usr/bin/env bash
# Lists the SQL statements a running smartmoney process compiles again on every call.
#
#   scripts/reprepares.sh PID [SECONDS]
#
# Attaches gdb (Debian's `gdb` package) to PID, the built binary or a node process running the
# source, for SECONDS (default 30) while you drive it (a bench, a refresh, requests), then prints
# each statement SQLite re-prepared, most often first. Anything listed more than a few times is a
# statement that pays a full parse and plan on each call: see docs/architecture.md, "Statements
# compiled once", for why that happens and the fix (`+?`).
#
# It breaks on sqlite3Reprepare in better-sqlite3's addon (its symbols ship in the prebuilt
# binary) and prints sqlite3_sql of the statement; each hit stops the process briefly, so the
# process runs slower while attached. Needs ptrace rights on PID (root, or the same user with
# kernel.yama.ptrace_scope = 0).
set -euo pipefail

pid="${1:?usage: scripts/reprepares.sh PID [SECONDS]}"
seconds="${2:-30}"
command -v gdb >/dev/null || { echo "reprepares: needs gdb (apt-get install gdb)" >&2; exit 1; }
kill -0 "$pid" 2>/dev/null || { echo "reprepares: no process $pid" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/commands" <<'EOF'
set pagination off
set confirm off
break sqlite3Reprepare
commands
silent
printf "REPREPARE\t%s\n", (char*)sqlite3_sql($rdi)
continue
end
continue
EOF
gdb -q -batch -x "$work/commands" -p "$pid" >"$work/out" 2>/dev/null &
gdb_pid=$!
sleep "$seconds"
# SIGINT stops the inferior inside gdb; gdb's batch mode then detaches and exits.
kill -INT "$gdb_pid" 2>/dev/null || true
wait "$gdb_pid" 2>/dev/null || true

# A statement's SQL spans lines: join each hit's lines, squeeze spaces, count.
awk '/^REPREPARE\t/ { if (sql != "") print sql; sub(/^REPREPARE\t/, ""); sql = $0; next }
     /^(\[|Thread |Program |Breakpoint |Continuing|Detaching|\[Inferior)/ { if (sql != "") print sql; sql = ""; next }
     sql != "" { sql = sql " " $0 }
     END { if (sql != "") print sql }' "$work/out" |
  tr -s ' \t' ' ' | cut -c1-240 | sort | uniq -c | sort -rn
