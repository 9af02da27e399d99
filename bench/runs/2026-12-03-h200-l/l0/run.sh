#!/bin/bash
# Round l, l0: tools/bench/mvbw/lastblk.cu (the norm tails in the projections' last blocks).
bash tools/bench/mvbw/run.sh $OUT lastblk
