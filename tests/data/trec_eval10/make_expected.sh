#!/bin/sh
# Regenerate expected/*.out from cases.tsv with the trec_eval binaries (local verification only; see README.md).
# Usage: TREC_EVAL_10=/tmp/trec_eval10/trec_eval TREC_EVAL_9=/tmp/trec_eval9/trec_eval SHARED=/work/shared \
#        sh tests/data/trec_eval10/make_expected.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CRAN=$(mktemp -d)
python3 "$HERE/make_inputs.py" --cranfield "$SHARED/data/cranfield" "$CRAN"
mkdir -p "$HERE/expected"
grep -v '^#' "$HERE/cases.tsv" | while IFS="$(printf '\t')" read -r name version qrels run options; do
  resolve() {
    case "$1" in
      shared:*) echo "$SHARED/data/trec_eval/${1#shared:}" ;;
      cranfield:*) echo "$CRAN/${1#cranfield:}" ;;
      *) echo "$HERE/$1" ;;
    esac
  }
  if [ "$version" = 9 ]; then binary=$TREC_EVAL_9; else binary=$TREC_EVAL_10; fi
  # shellcheck disable=SC2086
  "$binary" $options "$(resolve "$qrels")" "$(resolve "$run")" > "$HERE/expected/$name.out"
done
rm -r "$CRAN"
