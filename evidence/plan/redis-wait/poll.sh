#!/bin/bash
# usage: poll.sh ROOTPID OUT: polls the epoch keys of the redis-server child of ROOTPID
root=$1; out=$2
while kill -0 $root 2>/dev/null; do
  rp=$(pgrep -P $root redis-server | head -1)
  if [ -n "$rp" ]; then
    port=$(tr '\0' ' ' < /proc/$rp/cmdline | sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p')
    if [ -n "$port" ]; then
      ks=$(redis-cli -p $port --scan --pattern '*epoch' 2>/dev/null | sort)
      line="$(date +%s.%N) dbsize=$(redis-cli -p $port dbsize 2>/dev/null)"
      for k in $ks; do line="$line $k=$(redis-cli -p $port get $k 2>/dev/null)"; done
      echo "$line" >> $out
    fi
  fi
  sleep 0.2
done
