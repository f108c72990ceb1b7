#!/bin/bash
# A/B of closed-loop posts and pages under mariadbd thread settings.
B=pushpull   # the binary of 9bb606c
for round in 1 2; do
  for s in none pool pool8 pool4; do
    case $s in
      none) set=(--set thread_handling=one-thread-per-connection);;
      pool) set=();;
      pool8) set=(--set thread_pool_size=8);;
      pool4) set=(--set thread_pool_size=4);;
    esac
    echo "== round $round $s $(date -u +%T)"
    $B bench --models push,pull-sp --scale 0.3 --duration 5s "${set[@]}" --out /tmp/ab/$s-$round > /tmp/ab/$s-$round.log 2>&1
    grep -E "= (push|pull)/(submit|retrieve)" /tmp/ab/$s-$round.log
  done
done
