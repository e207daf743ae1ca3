# Writes the segments of one TCP port on `lo` to a pcap file (nanosecond format), for replaying
# through `spinscope rt --read` (the machine has no tcpdump). A packet socket bound to `lo`,
# the received copy of each segment only (the sent copy is skipped), the port matched here in
# Python; the timestamps are taken on receipt, which is enough for counting CPU per request.
# Usage (as root): python3 docs/bench/rt_lo_pcap.py PORT SECONDS OUT.pcap
import socket, struct, sys, time
port, secs, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE
s.bind(("lo", 0))
s.settimeout(0.2)
f = open(out, "wb", buffering=1 << 22)
f.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
pb = struct.pack(">H", port)
end = time.monotonic() + secs
n = 0
while time.monotonic() < end:
    try:
        data, addr = s.recvfrom(65536)
    except socket.timeout:
        continue
    if addr[2] == 4:  # PACKET_OUTGOING
        continue
    if len(data) < 38 or data[12:14] != b"\x08\x00" or data[23] != 6:
        continue
    ihl = (data[14] & 15) * 4
    t = 14 + ihl
    if data[t:t+2] != pb and data[t+2:t+4] != pb:
        continue
    ns = time.time_ns()
    f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(data), len(data)))
    f.write(data)
    n += 1
f.close()
st = s.getsockopt(263, 6, 8)  # PACKET_STATISTICS
print("packets", n, "kernel tp_packets,tp_drops", struct.unpack("II", st))
