"""How a subscriber fares when its relay node dies: three `aep relay`
nodes on one nats-server, events posted to node A at a steady rate, one
SSE subscriber on node B. Node B is killed (SIGKILL); the subscriber
resumes on node C at once with `Last-Event-ID`. A measurement for
docs/relay.md, not a test.

    python3 failover.py AEP_BINARY NATS_SERVER [RUNS]

For each run (default 5) it prints the time from the kill to the first
event the subscriber receives from node C (having read what node B had
sent before it died), and how many acknowledged
(202) events it missed or received twice; then the medians. Everything
listens on 127.0.0.1; each run has its own nats-server and store.
"""
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

RATE_BATCH = 10  # events per POST
RATE_TICK = 0.01  # seconds between POSTs: 1,000 events a second
BEFORE_KILL = 2.0  # seconds of traffic before node B is killed
AFTER_KILL = 2.0  # seconds of traffic after


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, what, limit=15.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {limit} s")


def event(session, seq):
    return json.dumps({
        "aep": "0.1",
        "id": f"{session}-{seq}",
        "type": "progress.status",
        "time": "2026-12-07T00:00:00Z",
        "source": "urn:aep:bench:failover",
        "agent": "bench",
        "session": session,
        "seq": seq,
        "data": {"message": "tick"},
    })


def poster(port, session, stop, acked):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    seq = 0
    next_tick = time.monotonic()
    while not stop.is_set():
        body = "\n".join(event(session, seq + i) for i in range(RATE_BATCH))
        conn.request("POST", "/events", body, {
            "Content-Type": "application/x-ndjson", "AEP-Version": "0.1"})
        response = conn.getresponse()
        response.read()
        if response.status == 202:
            acked.update(range(seq, seq + RATE_BATCH))
        seq += RATE_BATCH
        next_tick += RATE_TICK
        time.sleep(max(0.0, next_tick - time.monotonic()))


def read_stream(port, session, last_id, received, on_event, dead):
    # on_event() is called after each of the session's events is taken.
    """Reads the session's events from the node on `port` until the
    connection ends; returns the last SSE id read."""
    query = "/stream?filter=" + urllib.parse.quote(json.dumps({"session": session}))
    headers = {"Accept": "text/event-stream"}
    if last_id:
        headers["Last-Event-ID"] = last_id
    else:
        query += "&from=all"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", query, headers=headers)
        response = conn.getresponse()
        # An SSE event is dispatched at its blank line, with the `id` and
        # `data` fields it had (in whatever order they came).
        sse_id, data = None, None
        while not dead.is_set():
            line = response.fp.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("id:"):
                sse_id = line[3:].strip()
            elif line.startswith("data:"):
                data = line[5:]
            elif line == "":
                if data is not None:
                    event = json.loads(data)
                    if event.get("session") == session and "seq" in event:
                        received.append(event["seq"])
                        on_event()
                if sse_id:
                    last_id = sse_id
                sse_id, data = None, None
    except (OSError, http.client.HTTPException):
        pass
    finally:
        conn.close()
    return last_id


def one_run(binary, server, run):
    store = tempfile.mkdtemp(prefix="aep-failover-")
    nats_port = free_port()
    procs = []
    nats = subprocess.Popen(
        [server, "-js", "-a", "127.0.0.1", "-p", str(nats_port), "-sd", store],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    procs.append(nats)
    try:
        wait_listening(nats_port, "nats-server")
        ports = {}
        nodes = {}
        for name in "abc":
            ports[name] = free_port()
            nodes[name] = subprocess.Popen(
                [binary, "relay", "--listen", f"127.0.0.1:{ports[name]}", "--buffer", "10000",
                 "--nats", f"nats://127.0.0.1:{nats_port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            procs.append(nodes[name])
        for name in "abc":
            wait_listening(ports[name], f"node {name}")
        session = f"failover-{run}"
        acked, received = set(), []
        killed_at, first_after = [None], [None]

        def on_event():
            pass

        def on_event_from_c():
            if first_after[0] is None:
                first_after[0] = time.monotonic()

        stop, dead = threading.Event(), threading.Event()
        post = threading.Thread(target=poster, args=(ports["a"], session, stop, acked))
        post.start()

        def subscriber():
            last = read_stream(ports["b"], session, None, received, on_event, dead)
            # Node B is gone: resume on node C at once.
            read_stream(ports["c"], session, last, received, on_event_from_c, dead)

        read = threading.Thread(target=subscriber)
        read.start()
        time.sleep(BEFORE_KILL)
        killed_at[0] = time.monotonic()
        nodes["b"].send_signal(signal.SIGKILL)
        time.sleep(AFTER_KILL)
        stop.set()
        post.join(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not acked <= set(received):
            time.sleep(0.05)
        dead.set()
        # Ends the subscriber's read on node C.
        nodes["c"].send_signal(signal.SIGTERM)
        read.join(10)
        missing = len(acked - set(received))
        twice = len(received) - len(set(received))
        gap = (first_after[0] - killed_at[0]) * 1000 if first_after[0] else float("nan")
        return gap, len(acked), missing, twice
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", store], check=False)


def main():
    binary, server = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    results = []
    for run in range(1, runs + 1):
        gap, acked, missing, twice = one_run(binary, server, run)
        results.append((gap, acked, missing, twice))
        print(f"run {run}: first event from node C {gap:.1f} ms after node B was killed; "
              f"{acked} events acknowledged, {missing} missed, {twice} received twice")
    print(f"median: {statistics.median(r[0] for r in results):.1f} ms to resume; "
          f"missed {sum(r[2] for r in results)}, received twice {sum(r[3] for r in results)} "
          f"of {sum(r[1] for r in results)} acknowledged, over {runs} runs "
          f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
