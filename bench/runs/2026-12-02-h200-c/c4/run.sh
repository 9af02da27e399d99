#!/bin/bash
# Round c, c4: main after the round (its engine d73e771's): parity, and `muser bench` tg128 at
# depth 0. (The steps, which this script held itself when it ran, are shared since as
# tools/bench/parity_tg.sh.)
P=.device/c4
source tools/bench/parity_tg.sh
