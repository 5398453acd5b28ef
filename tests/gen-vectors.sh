#!/usr/bin/env bash
# Regenerates tests/data/murmur3_vectors.tsv and route_vectors.tsv with
# OpenSearch's own Murmur3HashFunction and OperationRouting, from the jars
# that tests/cluster/opensearch.sh fetches. The output is committed; run this
# only to refresh it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/cluster/opensearch.sh" fetch
cache=${ESBULK_CLUSTER_CACHE:-$HOME/.cache/libesbulk/opensearch-2.19.6}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac -nowarn -cp "$cache/lib/*" -d "$out" "$here/data/gen/GenVectors.java"
java -cp "$out:$cache/lib/*" GenVectors "$here/data"
echo "wrote $here/data/murmur3_vectors.tsv and route_vectors.tsv"
