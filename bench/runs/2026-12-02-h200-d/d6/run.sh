#!/bin/bash
# Round d, d6: main after the round (36c9c11): parity, and `muser bench` tg128 at depth 0.
# (The steps, which this script held itself when it ran, are shared since as
# tools/bench/parity_tg.sh.)
P=.device/d6
source tools/bench/parity_tg.sh
