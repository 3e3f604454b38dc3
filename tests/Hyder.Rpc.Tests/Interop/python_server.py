"""The echo service of echo.proto on grpcio (the reference C-core implementation), for interop tests.

Usage: python_server.py PB2_DIR TIME_LIMIT_SECONDS
Listens on 127.0.0.1 at a port the OS picks, prints the port on stdout, and stops when stdin closes
or the time limit passes, whichever comes first.
"""
import sys
import threading
import time
from concurrent import futures

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import echo_pb2 as pb  # noqa: E402

CODES = {code.value[0]: code for code in grpc.StatusCode}


def echo_metadata(context):
    received = dict(context.invocation_metadata())
    initial, trailing = [], []
    if "x-echo" in received:
        initial.append(("x-echo", received["x-echo"]))
        trailing.append(("x-echo-trailer", received["x-echo"]))
    if "x-echo-bin" in received:
        initial.append(("x-echo-bin", received["x-echo-bin"]))
        trailing.append(("x-echo-trailer-bin", received["x-echo-bin"]))
    if initial:
        context.send_initial_metadata(initial)
    return trailing


def fail_if_asked(request, context, trailing=()):
    if request.fail_code:
        context.set_trailing_metadata(list(trailing) + [("x-fail", "yes")])
        context.abort(CODES[request.fail_code], request.fail_message)
    if trailing:
        context.set_trailing_metadata(list(trailing))


def unary(request, context):
    fail_if_asked(request, context, echo_metadata(context))
    return pb.EchoReply(text=request.text, payload=request.payload)


def count(request, context):
    for i in range(request.count):
        yield pb.EchoReply(text=request.text, index=i, payload=request.payload)
    fail_if_asked(request, context)


def collect(requests, context):
    texts, payload = [], 0
    for request in requests:
        fail_if_asked(request, context)
        texts.append(request.text)
        payload += len(request.payload)
        if request.last:
            break
    return pb.EchoReply(text=",".join(texts), index=len(texts), payload=str(payload).encode())


def chat(requests, context):
    for i, request in enumerate(requests):
        fail_if_asked(request, context)
        yield pb.EchoReply(text=request.text, index=i, payload=request.payload)
        if request.last:
            return


def wait(request, context):
    end = time.monotonic() + 30
    while context.is_active() and time.monotonic() < end:
        time.sleep(0.01)
    return pb.EchoReply()


def main():
    limit = float(sys.argv[2])
    des, ser = pb.EchoRequest.FromString, pb.EchoReply.SerializeToString
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, request_deserializer=des, response_serializer=ser),
        "Count": grpc.unary_stream_rpc_method_handler(count, request_deserializer=des, response_serializer=ser),
        "Collect": grpc.stream_unary_rpc_method_handler(collect, request_deserializer=des, response_serializer=ser),
        "Chat": grpc.stream_stream_rpc_method_handler(chat, request_deserializer=des, response_serializer=ser),
        "Wait": grpc.unary_unary_rpc_method_handler(wait, request_deserializer=des, response_serializer=ser),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("hyder.rpc.test.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def stop_when_stdin_closes():
        sys.stdin.read()
        server.stop(0)

    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    server.wait_for_termination(timeout=limit)
    server.stop(0)


if __name__ == "__main__":
    main()
