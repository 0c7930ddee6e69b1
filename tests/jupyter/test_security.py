"""Messages whose HMAC-SHA256 signature does not verify are dropped, never executed: a message
signed with the wrong key, an unsigned one, one altered after signing, and a replay of a
genuine message. Each would assign a variable if it ran; the genuine client then checks that the
variable does not exist (or kept its value) and that no output was published for it."""

import time

import zmq
from jupyter_client.session import Session


def shell_socket(km):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"{km.transport}://{km.ip}:{km.shell_port}")
    return sock


def run(kc, code):
    """Executes `code` with the genuine client; returns (reply content, output messages)."""
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=20)
    return reply["content"], outputs


def value_of(kc, name):
    reply, outputs = run(kc, name)
    if reply["status"] != "ok":
        return None
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    return results[0]["content"]["data"]["text/plain"]


def no_iopub_for(kc, msg_id, wait=1.0):
    """True when nothing on iopub is a child of `msg_id` within `wait` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.1)
        except Exception:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return False
    return True


def test_forged_signature_is_not_executed(kernel):
    km, kc = kernel
    forger = Session(key=b"not-the-key", signature_scheme="hmac-sha256")
    sock = shell_socket(km)
    msg = forger.msg("execute_request", {"code": "forged = 1", "silent": False,
                                          "store_history": True, "user_expressions": {},
                                          "allow_stdin": False, "stop_on_error": True})
    forger.send(sock, msg)
    assert no_iopub_for(kc, msg["header"]["msg_id"])
    assert sock.poll(500) == 0, "the kernel answered a forged message"
    reply, _ = run(kc, "forged")
    assert reply["status"] == "error" and reply["ename"] == "E0100", reply
    # The kernel is alive and still executes genuine messages.
    assert value_of(kc, "40 + 2") == "42"


def test_unsigned_and_tampered_messages_are_not_executed(kernel):
    km, kc = kernel
    sock = shell_socket(km)
    genuine = Session(key=km.session.key, signature_scheme="hmac-sha256")
    content = {"code": "unsigned = 1", "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}

    unsigned = genuine.msg("execute_request", content)
    frames = genuine.serialize(unsigned)
    frames[1] = b""  # no signature
    sock.send_multipart(frames)

    tampered = genuine.msg("execute_request", dict(content, code="print(1)"))
    frames = genuine.serialize(tampered)
    frames[5] = frames[5].replace(b"print(1)", b"unsigned = 1")  # content altered after signing
    sock.send_multipart(frames)

    assert no_iopub_for(kc, unsigned["header"]["msg_id"])
    assert sock.poll(500) == 0
    reply, _ = run(kc, "unsigned")
    assert reply["status"] == "error" and reply["ename"] == "E0100", reply


def test_replayed_message_is_not_executed(kernel):
    km, kc = kernel
    sock = shell_socket(km)
    genuine = Session(key=km.session.key, signature_scheme="hmac-sha256")
    assert run(kc, "counter = 0")[0]["status"] == "ok"
    msg = genuine.msg("execute_request", {"code": "counter = counter + 1", "silent": False,
                                           "store_history": True, "user_expressions": {},
                                           "allow_stdin": False, "stop_on_error": True})
    frames = genuine.serialize(msg)
    sock.send_multipart(frames)
    assert sock.poll(5000) != 0, "the genuine message got no reply"
    sock.recv_multipart()
    sock.send_multipart(frames)  # the same signature again
    assert sock.poll(1000) == 0, "the kernel answered a replayed message"
    assert value_of(kc, "counter") == "1"
