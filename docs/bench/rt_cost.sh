#!/bin/bash
# rt's own CPU while mariadb-slap drives point selects over loopback TCP.
# Needs a throwaway MariaDB listening on 127.0.0.1:13306 with table t.a(id INT PRIMARY KEY, c VARCHAR(20)).
B=${SPINSCOPE:-target/release/spinscope}
/usr/bin/time -f "rt_cpu user=%U sys=%S wall=%e" $B rt --port 13306 --interval 1s --duration 8s --json > /tmp/rt_bench.jsonl 2>/tmp/rt_bench.err &
sleep 0.5
mariadb-slap --no-defaults -h127.0.0.1 -P13306 -uroot --concurrency=8 --iterations=1 --number-of-queries=400000 --query="select c from t.a where id=1" --create-schema=t 2>&1 | grep "Average"
wait
grep rt_cpu /tmp/rt_bench.err
tail -1 /tmp/rt_bench.jsonl | python3 -c "import json,sys; d=json.load(sys.stdin); print('requests',d['requests'],'rate',round(d['rate_per_s']),'capture',d['capture'],'p50',d['ttlb_us']['p50_us'],'p99',d['ttlb_us']['p99_us'])"
python3 -c "
import json
for l in open('/tmp/rt_bench.jsonl'):
    d=json.loads(l)
    if d['kind']=='interval': print(round(d['rate_per_s']), d['capture']['received'], d['capture']['dropped'])"
