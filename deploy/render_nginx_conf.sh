#!/usr/bin/env bash
# Writes an nginx configuration for minfer replicas from deploy/nginx.conf.template.
#   deploy/render_nginx_conf.sh LISTEN PREFIX HOST:PORT... > nginx.conf
# LISTEN: nginx's address (8080 or 0.0.0.0:8080); PREFIX: a writable folder for its pid file,
# log and temporary files. DAEMON=off keeps nginx in the foreground; FAIL_TIMEOUT (default 10s)
# is how long a failed replica is skipped.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 LISTEN PREFIX HOST:PORT..." >&2; exit 2; }
listen=$1
prefix=$2
shift 2
fail_timeout=${FAIL_TIMEOUT:-10s}
servers=""
for s in "$@"; do
  servers+="        server $s max_fails=1 fail_timeout=$fail_timeout;"$'\n'
done
servers=${servers%$'\n'}
template="$(dirname "$0")/nginx.conf.template"
while IFS= read -r line; do
  case "$line" in
    *@SERVERS@*) printf '%s\n' "$servers" ;;
    *)
      line=${line//@LISTEN@/$listen}
      line=${line//@PREFIX@/$prefix}
      line=${line//@DAEMON@/${DAEMON:-on}}
      line=${line//@FAIL_TIMEOUT@/$fail_timeout}
      printf '%s\n' "$line"
      ;;
  esac
done < "$template"
