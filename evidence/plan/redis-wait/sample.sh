#!/bin/bash
# usage: sample.sh ROOTPID OUT ; samples every 0.5 s the CPU ticks of ROOTPID's descendants by name
root=$1; out=$2
hz=$(getconf CLK_TCK)
while kill -0 $root 2>/dev/null; do
  t=$(date +%s.%N)
  for p in $(pgrep -P $root) $root $(for c in $(pgrep -P $root); do pgrep -P $c; done); do
    if [ -r /proc/$p/stat ]; then
      read -r line < /proc/$p/stat || continue
      name=$(echo "$line" | sed 's/^[0-9]* (\(.*\)) .*/\1/')
      rest=$(echo "$line" | sed 's/^.*) //')
      set -- $rest
      echo "$t $p $name ${12} ${13}"
    fi
  done >> $out
  sleep 0.5
done
