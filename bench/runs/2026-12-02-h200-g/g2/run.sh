#!/bin/bash
# Round g, g2: the LM head's last wave prefetching the next token's first Q/K/V/gate matrices
# into L2 (TailPrefetch::next_token, off by default in this build): parity (the flat LM head's
# tail-prefetch entry in the same-bits check), `cuda_test nexttok` (interleaved, bit-identity
# checked) at depths 0 and 32768, the profile labels, `muser bench` tg128 at depth 0.
P=.device/g2
source bench/runs/2026-12-02-h200-e/flip.sh nexttok
