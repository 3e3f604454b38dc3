"""Calls every method of hyder.v1.Hyder with grpcio (the reference C-core implementation) and
prints what happened as one JSON object, for the interop test.

Usage: python_client.py PB2_DIR PORT
Every call has a 10 s timeout; the whole run ends on its own.
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import hyder_pb2 as pb  # noqa: E402

SERVICE = "/hyder.v1.Hyder/"
TIMEOUT = 10


def method(channel, kind, name, request, response):
    return getattr(channel, kind)(SERVICE + name, request_serializer=request.SerializeToString, response_deserializer=response.FromString)


def code_of(call):
    try:
        result = call()
        if hasattr(result, "__iter__") and not isinstance(result, (bytes, str)):
            list(result)
        return {"code": "OK"}
    except grpc.RpcError as e:
        return {"code": e.code().name, "details": e.details()}


def rows(rs):
    return [[r.key.decode(), r.value.decode()] for r in rs]


def outcome(o):
    return {"status": pb.TransactionStatus.Name(o.status), "cause": pb.AbortCause.Name(o.abort_cause), "ordinal": o.ordinal, "detail": o.detail}


def main():
    channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
    execute = method(channel, "unary_unary", "Execute", pb.ExecuteRequest, pb.ExecuteResponse)
    transact = method(channel, "stream_stream", "Transact", pb.TransactRequest, pb.TransactResponse)
    scan = method(channel, "unary_stream", "Scan", pb.ScanRequest, pb.ScanResponse)
    read = method(channel, "unary_unary", "Read", pb.ReadRequest, pb.ReadResponse)
    status = method(channel, "unary_unary", "Status", pb.StatusRequest, pb.StatusResponse)
    state_hash = method(channel, "unary_unary", "StateHash", pb.StateHashRequest, pb.StateHashResponse)
    checkpoint = method(channel, "unary_unary", "Checkpoint", pb.CheckpointRequest, pb.CheckpointResponse)
    out = {"grpc_version": grpc.__version__}

    put = lambda k, v: pb.Operation(kind=pb.OPERATION_KIND_PUT, key=k, value=v)  # noqa: E731
    get = lambda k: pb.Operation(kind=pb.OPERATION_KIND_GET, key=k)  # noqa: E731
    r = execute(pb.ExecuteRequest(isolation=pb.ISOLATION_LEVEL_SERIALIZABLE, operations=[
        put(b"a", b"1"), put(b"b", b"2"), put(b"c", b"3"), get(b"a"), get(b"zz"),
        pb.Operation(kind=pb.OPERATION_KIND_SCAN, key=b"a", end=b"c"),
        pb.Operation(kind=pb.OPERATION_KIND_DELETE, key=b"c"),
    ]), timeout=TIMEOUT)
    out["execute"] = {
        "outcome": outcome(r.outcome),
        "get": [r.results[3].found, r.results[3].value.decode(), r.results[4].found],
        "scan": rows(r.results[5].rows),
        "deleted": r.results[6].found,
    }

    r = read(pb.ReadRequest(keys=[b"b", b"c", b"a"]), timeout=TIMEOUT)
    out["read"] = [x.value.decode() if x.found else None for x in r.results]

    batches = list(scan(pb.ScanRequest(batch_size=1), timeout=TIMEOUT))
    out["scan"] = {"batches": len(batches), "rows": [row for b in batches for row in rows(b.rows)]}

    responses = list(transact(iter([
        pb.TransactRequest(begin=pb.BeginRequest(isolation=pb.ISOLATION_LEVEL_SNAPSHOT_ISOLATION)),
        pb.TransactRequest(operation=put(b"d", b"4")),
        pb.TransactRequest(operation=get(b"d")),
        pb.TransactRequest(operation=pb.Operation(kind=pb.OPERATION_KIND_SCAN, limit=10)),
        pb.TransactRequest(commit=pb.CommitRequest()),
    ]), timeout=TIMEOUT))
    out["transact"] = {
        "kinds": [x.WhichOneof("response") for x in responses],
        "get": responses[2].result.value.decode(),
        "scan": rows(responses[3].result.rows),
        "outcome": outcome(responses[4].outcome),
    }

    responses = list(transact(iter([
        pb.TransactRequest(begin=pb.BeginRequest()),
        pb.TransactRequest(operation=put(b"e", b"never")),
        pb.TransactRequest(abort=pb.AbortRequest()),
    ]), timeout=TIMEOUT))
    out["transact_abort"] = outcome(responses[-1].outcome)

    s = status(pb.StatusRequest(), timeout=TIMEOUT)
    out["status"] = {"server_id": s.server_id, "last_melded": s.last_melded, "committed": s.committed, "peers": list(s.peers)}

    h = state_hash(pb.StateHashRequest(at_least_ordinal=s.last_melded), timeout=TIMEOUT)
    out["state_hash"] = {"ordinal": h.ordinal, "sequence": h.sequence, "hash": str(h.hash)}

    out["checkpoint"] = checkpoint(pb.CheckpointRequest(), timeout=TIMEOUT).ordinal

    add = lambda k, d, **bounds: pb.Operation(kind=pb.OPERATION_KIND_ADD, key=k, delta=d, **bounds)  # noqa: E731
    r = execute(pb.ExecuteRequest(operations=[
        add(b"n", 5), add(b"n", 2, min=0, max=10),
        pb.Operation(kind=pb.OPERATION_KIND_MAX, key=b"m", delta=3),
        pb.Operation(kind=pb.OPERATION_KIND_MIN, key=b"m2", delta=-3),
        pb.Operation(kind=pb.OPERATION_KIND_OPUT, key=b"o", order=2, value=b"two"),
        pb.Operation(kind=pb.OPERATION_KIND_TOP_K_INSERT, key=b"t", k=3, order=1, value=b"one"),
    ]), timeout=TIMEOUT)
    values = read(pb.ReadRequest(keys=[b"n", b"m", b"m2"]), timeout=TIMEOUT).results
    out["commutative"] = {
        "outcome": outcome(r.outcome),
        "counters": [int.from_bytes(x.value, "little", signed=True) for x in values],
    }
    r = execute(pb.ExecuteRequest(operations=[add(b"n", -8, min=0)]), timeout=TIMEOUT)
    out["bound_violated"] = outcome(r.outcome)

    out["bad"] = {
        "empty_key": code_of(lambda: execute(pb.ExecuteRequest(operations=[put(b"x", b"1"), put(b"", b"2")]), timeout=TIMEOUT)),
        "unknown_isolation": code_of(lambda: execute(pb.ExecuteRequest(isolation=42, operations=[put(b"x", b"1")]), timeout=TIMEOUT)),
        "transact_without_begin": code_of(lambda: transact(iter([pb.TransactRequest(operation=put(b"x", b"1"))]), timeout=TIMEOUT)),
        "read_empty_key": code_of(lambda: read(pb.ReadRequest(keys=[b""]), timeout=TIMEOUT)),
        "scan_negative_limit": code_of(lambda: scan(pb.ScanRequest(limit=-1), timeout=TIMEOUT)),
        "negative_ordinal": code_of(lambda: state_hash(pb.StateHashRequest(at_least_ordinal=-1), timeout=TIMEOUT)),
        "add_empty_bounds": code_of(lambda: execute(pb.ExecuteRequest(operations=[put(b"x", b"1"), add(b"n", 1, min=5, max=1)]), timeout=TIMEOUT)),
        "top_k_zero": code_of(lambda: execute(pb.ExecuteRequest(operations=[put(b"x", b"1"), pb.Operation(kind=pb.OPERATION_KIND_TOP_K_INSERT, key=b"t", k=0)]), timeout=TIMEOUT)),
        "unknown_kind": code_of(lambda: execute(pb.ExecuteRequest(operations=[put(b"x", b"1"), pb.Operation(kind=99, key=b"t")]), timeout=TIMEOUT)),
        "deadline": code_of(lambda: state_hash(pb.StateHashRequest(at_least_ordinal=1000000), timeout=0.3)),
        "transact_nested_batch": code_of(lambda: transact(iter([pb.TransactRequest(batch=pb.TransactRequestBatch(requests=[
            pb.TransactRequest(begin=pb.BeginRequest()),
            pb.TransactRequest(batch=pb.TransactRequestBatch(requests=[pb.TransactRequest(operation=put(b"x", b"1"))])),
        ]))]), timeout=TIMEOUT)),
    }
    # One-shot transactions multiplexed on one stream: answered by id; a bad one gets an error, the stream goes on.
    execute_stream = method(channel, "stream_stream", "ExecuteStream", pb.ExecuteStreamRequest, pb.ExecuteStreamResponse)
    answers = list(execute_stream(iter([
        pb.ExecuteStreamRequest(id=7, request=pb.ExecuteRequest(operations=[put(b"s1", b"x"), get(b"a")])),
        pb.ExecuteStreamRequest(id=8, request=pb.ExecuteRequest(operations=[put(b"", b"y")])),
        pb.ExecuteStreamRequest(id=9, request=pb.ExecuteRequest(operations=[get(b"s1")]), deadline_ms=5000),
    ]), timeout=TIMEOUT))
    by_id = {a.id: a for a in answers}
    out["execute_stream"] = {
        "ids": sorted(by_id),
        "committed": [pb.TransactionStatus.Name(by_id[i].response.outcome.status) for i in (7, 9)],
        "found": by_id[7].response.results[1].found,
        "bad": [by_id[8].WhichOneof("result"), by_id[8].error.code, by_id[8].error.message],
    }
    out["x_after_bad"] = [x.found for x in read(pb.ReadRequest(keys=[b"x"]), timeout=TIMEOUT).results]

    # A whole interactive transaction in one batch message, answered by one batch of answers.
    responses = list(transact(iter([pb.TransactRequest(batch=pb.TransactRequestBatch(requests=[
        pb.TransactRequest(begin=pb.BeginRequest()),
        pb.TransactRequest(operation=put(b"bt", b"5")),
        pb.TransactRequest(operation=get(b"bt")),
        pb.TransactRequest(commit=pb.CommitRequest()),
    ]))]), timeout=TIMEOUT))
    answers = [a for r in responses for a in r.batch.responses]
    out["transact_batch"] = {
        "messages": [r.WhichOneof("response") for r in responses],
        "kinds": [a.WhichOneof("response") for a in answers],
        "get": answers[2].result.value.decode(),
        "status": pb.TransactionStatus.Name(answers[3].outcome.status),
    }

    channel.close()
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
