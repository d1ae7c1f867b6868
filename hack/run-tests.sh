#!/usr/bin/env bash
# Runs every *.test.ts below the given folders with node's test runner (Node 20 does not expand globs itself), two
# files at a time by default (TEST_CONCURRENCY=1 for one at a time): each test file starts its own processes on ports
# and loopback subnets it has locked against the other (test/env/net.ts), so they share only the CPU.
set -euo pipefail
files=()
for dir in "$@"; do
  while IFS= read -r f; do files+=("$f"); done < <(find "$dir" -name '*.test.ts' | sort)
done
if [ ${#files[@]} -eq 0 ]; then echo "run-tests: no *.test.ts under $*" >&2; exit 1; fi
exec node --import tsx --test --test-concurrency="${TEST_CONCURRENCY:-2}" "${files[@]}"
