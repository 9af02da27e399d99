#!/bin/bash
# Round n, n6: parity after review (flat_applies: even nb >= 4; the parity model q4km_e1536,
# nb 6, for the flat gate/up launch's lane shifts 8 and 24). Binary: .device/n6.
( time timeout 240 .device/n6/cuda_test parity ) > $OUT/cuda_test.log 2>&1; echo "cuda_test rc $?" >> $OUT/rc.txt
