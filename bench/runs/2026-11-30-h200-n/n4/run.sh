#!/bin/bash
# Round n, n4: the final device check of main (binaries of 1436b04 in .device/n4):
# tools/bench/final_check.sh (parity, prefetch A/B, bench, depth 131072, run, serve load).
bash tools/bench/final_check.sh .device/n4
