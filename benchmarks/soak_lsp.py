"""The soak of the language server: a seeded editing session against `holefill serve`.

    python benchmarks/soak_lsp.py --minutes 10 [--seed 0] [--model PATH] [--table]

Runs `holefill.lsp.soak` (random edits with UTF-16/emoji/CJK/CRLF, inline requests,
cancellations, code actions, Fill holes, malformed input) for the given time and prints the
figures: requests sent/answered per method, errors by code, latency p50/p90/p99 per request
type, cancellation latency (client and server side), the server's RSS at start (model
loaded), peak and end, the oracle's verdicts, and every violation of the session's
invariants. `--table` first prints the bad-input table: each malformed input, the server's
answer, and that the next valid request was answered. Exit status 1 when anything was
violated. Without --model the bundled model serves (the tests use a tiny random model).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from holefill.lsp.badinput import bad_input_table, format_table
from holefill.lsp.client import RawClient
from holefill.lsp.soak import SoakConfig, soak
from holefill.lsp.soak_report import format_report

SERVER = [sys.executable, "-m", "holefill", "serve"]


async def table(model: str | None) -> str:
    client = await RawClient.spawn(SERVER, env={"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    try:
        await client.initialize({"model": model} if model else {}, timeout=120)
        uri = "file:///soak/bad.py"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1,
            "text": "def f(a):\n    return (a +\n"}})
        rows = await bad_input_table(client, uri, timeout=60)
        return format_table(rows)
    finally:
        await client.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="a model folder (default: the bundled model)")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--table", action="store_true", help="print the bad-input table first")
    args = parser.parse_args()
    if args.table:
        print(asyncio.run(table(args.model)), flush=True)
        print()
    report = asyncio.run(soak(SoakConfig(seed=args.seed, seconds=60 * args.minutes,
                                         model=args.model,
                                         max_new_tokens=args.max_new_tokens)))
    print(format_report(report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
