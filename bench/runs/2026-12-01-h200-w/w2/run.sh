#!/bin/bash
# Round w, call 2: tools/bench/mvbw/forkffn.cu (the FFN in pieces on parallel graph branches).
( timeout 200 bash tools/bench/mvbw/run.sh $OUT forkffn ) > $OUT/forkffn.out 2>&1; echo "forkffn rc $?"
tail -30 $OUT/forkffn.out
