"""Typed decoding of a JSONL corpus with the published Python SDK
(`agenteventprotocol-sdk`, pydantic models): the envelope model, then the
payload model its `type` selects, for every line. A comparison for the
README (see README.md), not a test.

    python python_sdk.py FILE.jsonl [PASSES]

Prints the median time of PASSES passes (default 3) and the throughput.
"""
import statistics
import sys
import time

from aep_sdk.gen.aep_types import PAYLOAD_MODELS, AepEvent


def decode_all(lines):
    typed = 0
    for line in lines:
        event = AepEvent.model_validate_json(line)
        model = PAYLOAD_MODELS.get(event.type)
        if model is not None and event.data is not None:
            model.model_validate(event.data)
            typed += 1
    return typed


def main():
    path = sys.argv[1]
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(path, "rb") as f:
        lines = [line for line in f.read().split(b"\n") if line.strip()]
    size = sum(len(line) + 1 for line in lines)
    times = []
    typed = 0
    for _ in range(passes):
        start = time.perf_counter()
        typed = decode_all(lines)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(
        f"python-sdk typed: {len(lines)} events ({typed} with a typed payload), "
        f"{size / 1e6:.1f} MB, median {median:.3f} s of {passes}: "
        f"{size / 1e6 / median:.1f} MB/s, {len(lines) / median:.0f} events/s"
    )


if __name__ == "__main__":
    main()
