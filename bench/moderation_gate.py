"""The address check every call of both APIs and /v1 meets (horde/app.py's hook, horde/oversight/gate.py): what it
costs per request with no timeout, with one, and with thousands of addresses and networks in timeout, on this
process's view (no database on the way). Printed: the median time of one check, over a client address that is in
timeout and one that is not, and the prefix lengths each lookup probes.

    .venv/bin/python bench/moderation_gate.py
    .venv/bin/python bench/moderation_gate.py --checks 200000
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import random
import time

import _support as S

from horde import errors
from horde.oversight.addresses import Matcher
from horde.oversight.gate import refuse_timed_out
from horde.oversight.view import Snapshot

ROUNDS = 7


def networks(count: int, seed: int) -> list[str]:
    """`count` networks in timeout, of every IPv4 prefix length from /16 to /32 and some IPv6 /48 to /128."""
    rng = random.Random(seed)
    found = []
    for index in range(count):
        if index % 5 == 4:
            prefix = rng.choice((48, 56, 64, 128))
            address = ipaddress.IPv6Address(rng.getrandbits(128))
            found.append(str(ipaddress.IPv6Network((address, prefix), strict=False)))
        else:
            prefix = rng.randint(16, 32)
            address = ipaddress.IPv4Address(rng.getrandbits(32))
            found.append(str(ipaddress.IPv4Network((address, prefix), strict=False)))
    return found


def per_check_ns(snapshot: Snapshot, address: str, checks: int) -> float:
    """The median over ROUNDS of the time of one check of `address`, in nanoseconds."""
    results = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(checks):
            with contextlib.suppress(errors.TimeoutIP):
                refuse_timed_out(snapshot, address)
        results.append((time.perf_counter() - started) / checks * 1e9)
    return S.median(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=50_000, help="checks per round (default 50000)")
    args = parser.parse_args()
    far = time.time() + 3600
    rows = []
    for count in (0, 1, 100, 10_000):
        listed = networks(count, seed=count)
        snapshot = Snapshot(timeouts=Matcher.of([(network, far) for network in listed]))
        inside = str(ipaddress.ip_network(listed[0]).network_address) if listed else "203.0.113.7"
        probes = len(snapshot.timeouts._by_prefix)
        rows.append(
            [
                count,
                probes,
                f"{per_check_ns(snapshot, '198.51.100.23', args.checks):.0f}",
                f"{per_check_ns(snapshot, inside, args.checks):.0f}" if listed else "-",
            ]
        )
    print(f"the address check of one request ({args.checks} checks a round, median of {ROUNDS} rounds)")
    print(S.table(["timeouts", "prefix lengths probed", "ns, address not in timeout", "ns, in timeout"], rows))
    print(f"machine: a Python loop of 10,000,000 additions took {S.machine_speed_s():.2f} s")


if __name__ == "__main__":
    main()
