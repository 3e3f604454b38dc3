"""Every role boundary of hyder.v1.Hyder with grpcio over TLS, for the security test.

Usage: python_security.py PB2_DIR PORT CA_PEM WRONG_CA_PEM TOKEN_FILE
TOKEN_FILE holds one 'NAME TOKEN' per line (the name 'none' is sent without credentials).
Prints one JSON object: {name: {call: status code name}}, plus "plaintext" and "wrong_ca".
Every call has a 10 s timeout; the whole run ends on its own.
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import hyder_pb2 as pb  # noqa: E402

SERVICE = "/hyder.v1.Hyder/"
TIMEOUT = 10
OPTIONS = [("grpc.ssl_target_name_override", "localhost")]


def method(channel, kind, name, request, response):
    return getattr(channel, kind)(SERVICE + name, request_serializer=request.SerializeToString, response_deserializer=response.FromString)


def code_of(call):
    try:
        result = call()
        if isinstance(result, str):
            return result
        if hasattr(result, "__iter__") and not isinstance(result, (bytes, str)):
            list(result)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


def transact(channel, metadata, operation):
    def requests():
        yield pb.TransactRequest(begin=pb.BeginRequest())
        yield pb.TransactRequest(operation=operation)
        yield pb.TransactRequest(commit=pb.CommitRequest())
    call = method(channel, "stream_stream", "Transact", pb.TransactRequest, pb.TransactResponse)
    return lambda: list(call(requests(), timeout=TIMEOUT, metadata=metadata))


def execute_stream(channel, metadata, operations):
    """One transaction on ExecuteStream: a refusal of it alone comes back as its TransactionError."""
    call = method(channel, "stream_stream", "ExecuteStream", pb.ExecuteStreamRequest, pb.ExecuteStreamResponse)

    def run():
        answers = list(call(iter([pb.ExecuteStreamRequest(id=7, request=pb.ExecuteRequest(operations=operations))]), timeout=TIMEOUT, metadata=metadata))
        mine = [a for a in answers if a.id == 7]
        if len(mine) != 1:
            raise RuntimeError("ExecuteStream answered request 7 %d times" % len(mine))
        if mine[0].WhichOneof("result") == "error":
            return next(c.name for c in grpc.StatusCode if c.value[0] == mine[0].error.code)
        return "OK"
    return run


def calls(channel, metadata, key):
    get = pb.Operation(kind=pb.OPERATION_KIND_GET, key=key)
    put = pb.Operation(kind=pb.OPERATION_KIND_PUT, key=key, value=b"v")
    unary = lambda name, req, resp: method(channel, "unary_unary", name, req, resp)  # noqa: E731
    return {
        "read": lambda: unary("Read", pb.ReadRequest, pb.ReadResponse)(pb.ReadRequest(keys=[key]), timeout=TIMEOUT, metadata=metadata),
        "scan": lambda: method(channel, "unary_stream", "Scan", pb.ScanRequest, pb.ScanResponse)(pb.ScanRequest(), timeout=TIMEOUT, metadata=metadata),
        "execute_read": lambda: unary("Execute", pb.ExecuteRequest, pb.ExecuteResponse)(pb.ExecuteRequest(operations=[get]), timeout=TIMEOUT, metadata=metadata),
        "execute_write": lambda: unary("Execute", pb.ExecuteRequest, pb.ExecuteResponse)(pb.ExecuteRequest(operations=[get, put]), timeout=TIMEOUT, metadata=metadata),
        "stream_read": execute_stream(channel, metadata, [get]),
        "stream_write": execute_stream(channel, metadata, [get, put]),
        "transact_read": transact(channel, metadata, get),
        "transact_write": transact(channel, metadata, put),
        "status": lambda: unary("Status", pb.StatusRequest, pb.StatusResponse)(pb.StatusRequest(), timeout=TIMEOUT, metadata=metadata),
        "state_hash": lambda: unary("StateHash", pb.StateHashRequest, pb.StateHashResponse)(pb.StateHashRequest(), timeout=TIMEOUT, metadata=metadata),
        "checkpoint": lambda: unary("Checkpoint", pb.CheckpointRequest, pb.CheckpointResponse)(pb.CheckpointRequest(), timeout=TIMEOUT, metadata=metadata),
    }


def main():
    port, ca_path, wrong_ca_path, token_path = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    target = "127.0.0.1:" + port
    with open(ca_path, "rb") as f:
        ca = f.read()
    with open(wrong_ca_path, "rb") as f:
        wrong_ca = f.read()
    with open(token_path) as f:
        tokens = [line.split() for line in f if line.strip()]

    report = {}
    with grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=ca), options=OPTIONS) as channel:
        for name, token in tokens:
            metadata = [] if name == "none" else [("authorization", "Bearer " + token)]
            report[name] = {call: code_of(run) for call, run in calls(channel, metadata, ("py-" + name).encode()).items()}

    admin = [t for n, t in tokens if n == "admin"][0]
    metadata = [("authorization", "Bearer " + admin)]
    with grpc.insecure_channel(target) as channel:
        report["plaintext"] = code_of(calls(channel, metadata, b"k")["status"])
    with grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=wrong_ca), options=OPTIONS) as channel:
        report["wrong_ca"] = code_of(calls(channel, metadata, b"k")["status"])
    print(json.dumps(report))


main()
