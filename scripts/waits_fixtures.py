#!/usr/bin/env python3
"""Regenerate tests/fixtures/waits/*.json (see the README there): the wait document of the
d6000 perf script, with the identity of the snapshot mariadb1011_delay6000.json added."""
import json
import subprocess
import sys

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/spinscope"
SCRIPT = "tests/fixtures/perf/waits/mariadbd-waits-d6000-l1.perf"
snap = json.load(open("tests/fixtures/snapshots/mariadb1011_delay6000.json"))
out = subprocess.run([BIN, "profile", "--waits", "--json", "--perf-script", SCRIPT],
                     check=True, capture_output=True, text=True).stdout
doc = json.loads(out)
v = snap["variables"]
started = snap["captured_at_unix_s"] - int(snap["status_after"]["uptime"])
doc["server"] = {
    "hostname": v["hostname"],
    "pid": snap["host"]["server_pid"],
    "started_unix_s": started,
    "recorded_at_unix_s": snap["captured_at_unix_s"],
    "ports": [],
    "sockets": [v["socket"]],
    "datadir": v["datadir"].rstrip("/"),
}
with open("tests/fixtures/waits/waits-d6000-vm.json", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
doc["server"]["hostname"] = "db-other"
with open("tests/fixtures/waits/waits-d6000-otherhost.json", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
