"""A public classroom server against a hostile visitor: raw WebSocket messages, crafted links, typed and pasted
text. Each test here failed on the code before the fix it guards."""

import asyncio

import pytest

from appserver import free_port, start_app, stop_app, until_quiet
from conftest import run_async


def threads_and_rss(pid: int) -> tuple[int, int]:
    """The process's thread count and resident memory in MB, from /proc."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


async def clear_caches_and_rerun(port: int, times: int, query: str):
    """A client without a browser: Streamlit's own protocol over /_stcore/stream, a run of the page for a link, then
    `times` x (clear_cache, run again)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"])

    async def send(**fields):
        msg = BackMsg()
        for name, value in fields.items():
            if name == "rerun_script":
                msg.rerun_script.query_string = value
            else:
                setattr(msg, name, value)
        await ws.write_message(msg.SerializeToString(), binary=True)

    async def run():
        await send(rerun_script=query)
        while True:
            out = ForwardMsg()
            out.ParseFromString(await asyncio.wait_for(ws.read_message(), 120))
            if out.WhichOneof("type") == "script_finished":
                return

    await run()
    yield
    for _ in range(times):
        await send(clear_cache=True)
        await run()
    ws.close()
    yield


@pytest.mark.slow
def test_clear_cache_messages_leave_memory_and_threads_flat():
    """Any client can send `clear_cache` (the page hides the menu item, the server takes the message). Before the
    fix each one stranded a model and its batching thread: 8 messages took a server from 7 threads and 454 MB to
    15 threads and 763 MB. Now the model is the server's own: 20 messages, each followed by a run that translates."""
    port = free_port()
    proc = start_app(port)
    try:
        steps = clear_caches_and_rerun(port, 20, "s=Ein+Hund+l%C3%A4uft+durch+den+Schnee.")

        async def drive():
            await anext(steps)
            until_quiet(proc.pid)  # the first run's last work done: what follows is the messages' alone
            before = threads_and_rss(proc.pid)
            await anext(steps)
            return before, threads_and_rss(proc.pid)

        (threads_before, rss_before), (threads_after, rss_after) = run_async(drive())
    finally:
        stop_app(proc)
    assert threads_after <= threads_before + 1, (threads_before, threads_after)
    assert rss_after - rss_before < 60, (rss_before, rss_after)
