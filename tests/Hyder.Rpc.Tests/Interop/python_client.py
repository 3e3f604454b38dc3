"""Calls a server of echo.proto with grpcio (the reference C-core implementation) and prints what
happened as one JSON object, for interop tests.

Usage: python_client.py PB2_DIR PORT
Every call has a 10 s timeout; the whole run ends on its own.
"""
import json
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import echo_pb2 as pb  # noqa: E402

SERVICE = "/hyder.rpc.test.Echo/"
TIMEOUT = 10
IN_A_ROW = 300


def metadata_dict(metadata):
    return {k: (v.hex() if isinstance(v, bytes) else v) for k, v in (metadata or ())}


def error(e):
    return {"code": e.code().name, "details": e.details(), "trailers": metadata_dict(e.trailing_metadata())}


def main():
    channel = grpc.insecure_channel("127.0.0.1:" + sys.argv[2])
    ser, des = pb.EchoRequest.SerializeToString, pb.EchoReply.FromString
    unary = channel.unary_unary(SERVICE + "Unary", request_serializer=ser, response_deserializer=des)
    count = channel.unary_stream(SERVICE + "Count", request_serializer=ser, response_deserializer=des)
    collect = channel.stream_unary(SERVICE + "Collect", request_serializer=ser, response_deserializer=des)
    chat = channel.stream_stream(SERVICE + "Chat", request_serializer=ser, response_deserializer=des)
    wait = channel.unary_unary(SERVICE + "Wait", request_serializer=ser, response_deserializer=des)
    wait_streaming = channel.unary_stream(SERVICE + "Wait", request_serializer=ser, response_deserializer=des)
    nope = channel.unary_unary(SERVICE + "Nope", request_serializer=ser, response_deserializer=des)
    out = {"grpc_version": grpc.__version__}

    reply, call = unary.with_call(
        pb.EchoRequest(text="from python", payload=b"\x00\x01\xfe\xff"),
        metadata=[("x-echo", "hello"), ("x-echo-bin", b"\x00\x01\xfe\xff")],
        timeout=TIMEOUT,
    )
    out["unary"] = {
        "text": reply.text,
        "payload": reply.payload.hex(),
        "headers": metadata_dict(call.initial_metadata()),
        "trailers": metadata_dict(call.trailing_metadata()),
        "code": call.code().name,
    }

    big = bytes(range(256)) * (3 * 4096)  # 3 MiB
    out["big"] = {"equal": unary(pb.EchoRequest(payload=big), timeout=TIMEOUT).payload == big}

    out["count"] = [r.index for r in count(pb.EchoRequest(text="s", count=5), timeout=TIMEOUT)]

    seen = []
    try:
        for r in count(pb.EchoRequest(count=2, fail_code=10, fail_message="conflict"), timeout=TIMEOUT):
            seen.append(r.index)
        out["count_fail"] = {"seen": seen, "code": "OK"}
    except grpc.RpcError as e:
        out["count_fail"] = dict(error(e), seen=seen)

    reply = collect(iter([pb.EchoRequest(text=t, payload=b"12345") for t in ("a", "b", "c")]), timeout=TIMEOUT)
    out["collect"] = {"text": reply.text, "index": reply.index, "payload": reply.payload.decode()}

    out["chat"] = [[r.text, r.index] for r in chat(iter([pb.EchoRequest(text="m%d" % i) for i in range(4)]), timeout=TIMEOUT)]

    try:
        unary(pb.EchoRequest(fail_code=5, fail_message="no such key: ключ 100% ✓"), timeout=TIMEOUT)
        out["error"] = {"code": "OK"}
    except grpc.RpcError as e:
        out["error"] = error(e)

    try:
        unary(pb.EchoRequest(payload=b"x" * (5 * 1024 * 1024)), timeout=TIMEOUT)
        out["too_big"] = {"code": "OK"}
    except grpc.RpcError as e:
        out["too_big"] = error(e)

    try:
        nope(pb.EchoRequest(), timeout=TIMEOUT)
        out["unimplemented"] = {"code": "OK"}
    except grpc.RpcError as e:
        out["unimplemented"] = error(e)

    started = time.monotonic()
    try:
        wait(pb.EchoRequest(), timeout=0.3)
        out["deadline"] = {"code": "OK"}
    except grpc.RpcError as e:
        out["deadline"] = dict(error(e), seconds=time.monotonic() - started)

    # Calls the server ends before the client half-closes (as a transaction's commit does), one
    # after another on one channel: each request stream stays open until its call is over.
    done_in_a_row = 0
    out["server_ends_first"] = {"code": "OK"}
    for i in range(IN_A_ROW):
        over = threading.Event()

        def requests(i=i, over=over):
            yield pb.EchoRequest(text="r%d" % i, last=True)
            over.wait(TIMEOUT)

        try:
            if i % 2 == 0:
                texts = [r.text for r in chat(requests(), timeout=TIMEOUT)]
            else:
                texts = [collect(requests(), timeout=TIMEOUT).text]
        except grpc.RpcError as e:
            out["server_ends_first"] = dict(error(e), failed_call=i)
            break
        finally:
            over.set()
        if texts != ["r%d" % i]:
            out["server_ends_first"] = {"code": "OK", "failed_call": i, "texts": texts}
            break
        done_in_a_row += 1
    out["server_ends_first"]["calls"] = done_in_a_row

    # "headers" makes the handler send its response headers once it runs: cancel only after they
    # arrive, so the cancellation cannot overtake the call on its way to the handler. Called as
    # server streaming (the same bytes on the wire) because grpcio hands a unary call's headers
    # over only with its status.
    future = wait_streaming(pb.EchoRequest(text="headers"), timeout=TIMEOUT)
    future.initial_metadata()
    future.cancel()
    out["cancel"] = {"cancelled": future.cancelled()}

    channel.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
