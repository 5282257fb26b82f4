#!/usr/bin/python3
"""A Python service asking the limiter store for decisions over gRPC (limiter.v1.RateLimiter).

Uses Debian's python3-grpcio and python3-grpc-tools: the stubs are generated from the published
proto (wire-protocol/src/main/proto/limiter/v1/rate_limiter.proto) into a temporary directory at
start, so nothing generated is kept in the repository. See docs/api.md.

    ./limiter api --servers 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403 --token-file api-tokens &
    /usr/bin/python3 examples/python/limiter_example.py --target 127.0.0.1:8091 \\
        --token "$(head -1 api-tokens)" --tenant acme --route /v1/orders/1 --lease-route /v1/exports

It takes tokens until the store refuses (printing each decision), then takes a lease of a
concurrency limit, shows that a second one is refused while it is held, and gives it back.
Exit status: 0 done, 1 the store or gateway failed, 2 bad input.
"""
import argparse
import atexit
import importlib
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_ROOT = os.path.join(HERE, "..", "..", "wire-protocol", "src", "main", "proto")


def load_stubs(proto_root):
    """Generates limiter/v1/rate_limiter_pb2(_grpc).py into a temporary directory (removed at exit) and imports them."""
    from grpc_tools import protoc
    out = tempfile.mkdtemp(prefix="limiter-stubs-")
    atexit.register(shutil.rmtree, out, True)
    status = protoc.main(["grpc_tools.protoc", "-I" + proto_root, "--python_out=" + out, "--grpc_python_out=" + out,
                          os.path.join(proto_root, "limiter", "v1", "rate_limiter.proto")])
    if status != 0:
        raise SystemExit("protoc failed on %s (exit %d)" % (proto_root, status))
    sys.path.insert(0, out)
    return importlib.import_module("limiter.v1.rate_limiter_pb2"), importlib.import_module("limiter.v1.rate_limiter_pb2_grpc")


def show(what, answer):
    d = answer.decision
    print("%s allowed=%s reason=%s remaining=%d limit=%d retry_after_ms=%d policy=%s%s" % (
        what, d.allowed, d.reason, d.remaining, d.limit, d.retry_after_ms, d.policy_id,
        " lease=" + answer.lease_id if answer.lease_id else ""), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:8091", help="the gateway's gRPC port (./limiter api --grpc-listen)")
    parser.add_argument("--token", default=os.environ.get("LIMITER_TOKEN", ""), help="a bearer token of its --token-file")
    parser.add_argument("--tenant", default="acme")
    parser.add_argument("--route", default="/v1/orders/1", help="a route under a rate limit")
    parser.add_argument("--lease-route", default="", help="a route under a concurrency limit (maxConcurrent 1): leases are shown")
    parser.add_argument("--max-calls", type=int, default=100, help="stop after this many acquires even if none is refused")
    parser.add_argument("--proto-root", default=DEFAULT_PROTO_ROOT)
    args = parser.parse_args()
    if not args.token:
        print("limiter_example: --token (or LIMITER_TOKEN) is required", file=sys.stderr)
        return 2

    import grpc
    pb, rpc = load_stubs(os.path.abspath(args.proto_root))
    metadata = (("authorization", "Bearer " + args.token),)
    with grpc.insecure_channel(args.target) as channel:
        limiter = rpc.RateLimiterStub(channel)
        try:
            for _ in range(args.max_calls):
                answer = limiter.Acquire(pb.AcquireRequest(tenant=args.tenant, route=args.route), metadata=metadata, timeout=5)
                show("acquire", answer)
                if not answer.decision.allowed:
                    break
            try:
                limiter.Acquire(pb.AcquireRequest(tenant=args.tenant, route=args.route, cost=-1), metadata=metadata, timeout=5)
                print("invalid: not refused", flush=True)
                return 1
            except grpc.RpcError as e:
                print("invalid %s %s" % (e.code().name, e.details()), flush=True)
            if args.lease_route:
                first = limiter.AcquireLease(pb.AcquireRequest(tenant=args.tenant, route=args.lease_route), metadata=metadata, timeout=5)
                show("lease", first)
                second = limiter.AcquireLease(pb.AcquireRequest(tenant=args.tenant, route=args.lease_route), metadata=metadata, timeout=5)
                show("lease", second)
                if first.lease_id:
                    limiter.Release(pb.ReleaseRequest(lease_id=first.lease_id), metadata=metadata, timeout=5)
                    print("released " + first.lease_id, flush=True)
        except grpc.RpcError as e:
            print("limiter_example: %s %s" % (e.code().name, e.details()), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
