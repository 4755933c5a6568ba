#!/usr/bin/env python3
"""Does a client reading one byte a second slow the others' tokens per second? (issue 21's 10%)

  python3 bench/serve/slow_reader.py --model M.gguf [--bin build/minfer] [--np 8] [--clients 8]
      [--max-tokens 256] [--rounds 5] [--threads 2]

Starts `minfer serve -np NP --timeout 120` and runs the same CLIENTS streaming completions (greedy,
one prompt) in rounds, alternately all read at full speed and with the last client reading one
byte a second (from a 2 KiB receive buffer) until the others are done. The others' tokens per
second (data events over the time to their reply's end, mean over them) are compared: the median
over rounds of each arrangement, and the slowdown in percent, the median over pairs of a slow
round and the normal round before it. The long --timeout keeps the slow
reader in the batch for its whole request (its queue stays under the 1 MiB bound), so both
arrangements compute the same batch and only the reading differs. A first round warms up and is
not counted.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--model', required=True)
    p.add_argument('--bin', default='build/minfer')
    p.add_argument('--np', type=int, default=8)
    p.add_argument('--clients', type=int, default=8)
    p.add_argument('--max-tokens', type=int, default=256)
    p.add_argument('--rounds', type=int, default=5, help='rounds of each arrangement')
    p.add_argument('--threads', type=int, default=2)
    return p.parse_args()


def start_server(args):
    proc = subprocess.Popen(
        [args.bin, 'serve', '-m', args.model, '--port', '0', '-t', str(args.threads),
         '-np', str(args.np), '--timeout', '120', '--no-prefix-cache'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r'listening on http://[0-9.]+:(\d+)', line)
        if m:
            port = int(m.group(1))
        if 'minfer serve: ready' in line:
            break
    if port is None:
        sys.exit('minfer serve did not start')
    # Keep its stderr drained.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def request(max_tokens):
    body = ('{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 0, "stream": true}'
            % max_tokens).encode()
    return (b'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json'
            b'\r\nConnection: close\r\nContent-Length: %d\r\n\r\n' % len(body)) + body


def read_fast(sock, t0, out, i):
    raw = bytearray()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        raw += chunk
    seconds = time.perf_counter() - t0
    events = raw.count(b'data: {')
    out[i] = events / max(seconds, 1e-3)
    if not raw.endswith(b'0\r\n\r\n') or b'data: [DONE]' not in raw:
        print(f'  client {i}: incomplete reply ({events} events)', file=sys.stderr)


def read_slowly(sock, others_done):
    sock.setblocking(False)
    while not others_done.wait(1.0):
        try:
            sock.recv(1)
        except BlockingIOError:
            pass


def one_round(port, args, slow):
    socks = []
    for i in range(args.clients):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if slow and i == args.clients - 1:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        s.connect(('127.0.0.1', port))
        socks.append(s)
    n_others = args.clients - 1
    rates = [0.0] * args.clients
    others_done = threading.Event()
    t0 = time.perf_counter()
    for s in socks:
        s.sendall(request(args.max_tokens))
    threads = [threading.Thread(target=read_fast, args=(socks[i], t0, rates, i))
               for i in range(n_others if slow else args.clients)]
    if slow:
        threads.append(threading.Thread(target=read_slowly, args=(socks[-1], others_done)))
    for t in threads:
        t.start()
    for t in threads[:n_others]:
        t.join()
    others_done.set()
    for t in threads[n_others:]:
        t.join()
    for s in socks:
        s.close()
    time.sleep(0.2)  # the closed slow reader's request ends before the next round
    return statistics.mean(rates[:n_others])


def main():
    args = parse_args()
    load_before = os.getloadavg()[0]
    proc, port = start_server(args)
    try:
        one_round(port, args, False)
        normal, slow = [], []
        for r in range(2 * args.rounds):
            with_slow = r % 2 == 1
            rate = one_round(port, args, with_slow)
            (slow if with_slow else normal).append(rate)
            print(f'round {r}: {"one slow reader" if with_slow else "all normal    "}: '
                  f'others {rate:.0f} tokens/s each')
    finally:
        proc.terminate()
        proc.wait()
    a, b = statistics.median(normal), statistics.median(slow)
    # Each slow round against the normal round just before it (the machine's load drifts less
    # within a pair than across the run).
    paired = statistics.median(y / x for x, y in zip(normal, slow))
    slowdown = 100.0 * (1.0 - paired)
    print(f'-np {args.np}, {args.clients} clients of {args.max_tokens} tokens, {args.rounds} '
          f'rounds each: the other {args.clients - 1} streams {a:.0f} tokens/s each (median) with '
          f'all normal, {b:.0f} with one 1 byte/s reader; paired rounds: {slowdown:+.1f}% slower '
          f'(median; {"within" if slowdown <= 10 else "PAST"} the 10% bound); load average '
          f'{load_before:.1f} before, {os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores')


if __name__ == '__main__':
    main()
