#!/bin/bash
# A block runs in one place (issue 66; docs/architecture.md, "One forward, many observers"): no file
# outside engine/src/model/ calls a block's pieces (LN1, LN2, the final norm, a mixer's forward,
# step, prefill or map, the FFN) or names a layer's parameter by its registered name. An analysis
# observes the one forward (model/sites.h); a decoder reads the weights off the modules.
# Fails naming each such line.
#   usage: check_block_pieces.sh REPO_DIR
set -u
cd "${1:?usage: check_block_pieces.sh REPO_DIR}" || exit 2
calls='(ln1|ln2|ln_f)->forward|ffn->(forward|add_forward_to)|mixer->(forward|step|prefill|mixing_matrices)\(|(forward|step|prefill)_qk\(|attention_weights(_qk)?\('
names='"(ln1|ln2|ln_f|ffn|mixer)\.[A-Za-z0-9_.]+"'
found=$(grep -rnE "$calls|$names" engine/src engine/cli engine/include app --include=*.cpp --include=*.h --include=*.cu |
        grep -v "^engine/src/model/")
if [[ -n $found ]]; then
  echo "$found"
  echo "a block's pieces run (or a parameter named) outside engine/src/model/: observe GptImpl::hidden(idx, observers) (model/sites.h), read weights off the modules"
  exit 1
fi
echo "block pieces: run in engine/src/model/ only"
