#!/bin/bash
# Round m, final check (m8): the L1 prefetches on by default (the attention's K/V rows and
# gate, the Q/K/V epilogue's norm weights and RoPE values) beside the L2 prefetch.
# Binaries: .device/m8.
bash tools/bench/final_check.sh .device/m8
