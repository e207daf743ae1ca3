#!/bin/sh
# spinscope with the events client's io_uring submission off (plain send per request), for A/B
# runs of sweep_vs_sysbench.sh: CLIENTS="... plain=docs/bench/spinscope_no_uring.sh,--client,events"
SPINSCOPE_NO_URING=1 exec "$(dirname "$0")/../../target/release/spinscope" "$@"
