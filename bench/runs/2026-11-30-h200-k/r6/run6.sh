#!/bin/bash
# Round k, call 6: does programmatic dependent launch overlap on this device, on a stream and
# inside a captured graph? (cuda_test pdl: kernel A spins 20 us after pdl_trigger, B is
# launched with the attribute and stamps its start before pdl_wait.)
P=.device/s10
( time timeout 60 $P/cuda_test pdl ) > $OUT/pdl.log 2>&1; echo "pdl rc $?" >> $OUT/rc.txt
