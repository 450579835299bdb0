"""A browser tab of a Streamlit page without the browser: Streamlit's own WebSocket protocol spoken from Python, so
that a bench can put many sessions on the server and measure the server, not the machine's browsers
(bench/class_load.py --client ws).

What it speaks is what Streamlit 1.67's frontend speaks (read off the installed package: the runtime in
streamlit/runtime, the WebSocket endpoint in streamlit/web/server/starlette/starlette_websocket.py, and the
frontend bundle streamlit/static/static/js/index.*.js: its WebsocketConnection, App and WidgetStateManager):

- Opening: a GET of the page's link (the cookies a browser gets there: deploy/'s sticky replica cookie, Streamlit's
  XSRF cookie), GETs of /_stcore/health and /_stcore/host-config, then the WebSocket ws://HOST/_stcore/stream with
  the subprotocols ["streamlit", the XSRF token or a placeholder, the last session id when reconnecting], the
  cookies and a same-origin Origin, and a first rerun.
- BackMsg rerun_script: a ClientState with the link's query string, every widget state the tab holds, the page's
  script hash, the browser context st.context reads (locale, time zone, URL) and, when the widget that asks is drawn
  in a fragment, that fragment's id (the Delta.fragment_id its element came with), as the frontend does; the server
  then reruns only the fragment.
- Widget states, as WidgetStateManager keeps them: a widget's value recorded when it is first drawn (its default,
  or the value the server sets with set_value) for text inputs and areas, number inputs, checkboxes, select boxes,
  radios, segmented controls and pills; text typed into a form held back until the form is submitted; a button press
  is trigger_value true in one rerun only; a form submit moves the form's pending values into the tab's states and
  sends its submit button's trigger; the states of widgets no longer drawn are dropped when a run ends.
- ForwardMsg: new_session (the run's id, the session id, the page hash; a whole run stops the tab's auto-rerun
  timers, as the frontend does, and draws them again), delta (new_element and add_block, kept by delta path, each with
  the run that drew it, its fragment id and the time.monotonic() its message arrived), page_info_changed (the link's
  new query string, which later reruns carry), session_status_changed, script_finished (a run's or fragment's stale
  elements cleared, then inactive widget states), auto_rerun and stop_auto_rerun. The server does not rerun an
  `st.fragment(run_every=...)` by itself: it sends auto_rerun (interval, fragment id), and the frontend sends a
  rerun_script with that fragment id and is_auto_rerun on a timer of its own (setInterval), which this tab does too.
  Every other message is ignored.
- A lost socket: it reconnects as the frontend does (a random back-off from 250 ms up to 4 s, health pings, the same
  cookies, so through nginx to another replica when its own has died), and then, as the frontend does when it had
  runs or auto-rerun timers going, asks for a whole run with its widget states and its link, which holds the state
  the page keeps there (a class's seat).

What it leaves out: rendering of any kind (no layout, no Markdown to HTML, no JavaScript, no components, charts or
images drawn), the message cache (it announces no cached hashes, so every message comes whole), uploads, custom
components' and other widgets' values it does not model (the server keeps their defaults), transient elements
(spinners, toasts). The text it reads is the elements' own (markdown and caption, alert, text, heading and code
bodies), character references decoded.
"""

import asyncio
import html
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ContextInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, WebSocketException

TEXT = {"markdown": "body", "alert": "body", "text": "body", "heading": "body", "code": "code_text"}
DONE = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


@dataclass
class Node:
    """One element or block of the tab's page, at its delta path."""

    kind: str  # the Element's field ("markdown", "button", ...) or "block"
    proto: object  # that field's message (Markdown, Button, ...) or the Block
    run: str  # the script run that drew it
    fragment: str  # the fragment it was drawn in ("" outside any)
    at: float  # time.monotonic() when its ForwardMsg arrived

    @property
    def text(self) -> str:
        body = getattr(self.proto, TEXT[self.kind]) if self.kind in TEXT else ""
        return html.unescape(body).replace("\u2060", "")

    @property
    def widget(self) -> str:
        return "" if self.kind == "block" else getattr(self.proto, "id", "")


def first_state(kind: str, p) -> WidgetState | None:
    """A widget's state when the frontend first draws it (its default, or the value the server sets), or None for a
    widget without one (buttons: triggers only) or of a kind not modelled here."""
    s = WidgetState(id=p.id)
    if kind in ("text_input", "text_area", "number_input"):
        v = p.value if p.set_value and p.HasField("value") else p.default if p.HasField("default") else None
        if v is None:
            return None
        if kind != "number_input":
            s.string_value = v
        elif p.data_type == NumberInput.INT:
            s.int_value = int(v)
        else:
            s.double_value = v
    elif kind == "checkbox":
        s.bool_value = p.value if p.set_value else p.default
    elif kind in ("selectbox", "radio"):
        if p.set_value:
            v = p.raw_value if p.HasField("raw_value") else None
        else:
            v = p.options[p.default] if p.HasField("default") and p.default < len(p.options) else None
        if v is None:
            return None
        s.string_value = v
    elif kind == "button_group":  # segmented control, pills: the options' shown texts
        shown = [f"{o.content_icon} {o.content}".strip() if o.content_icon else o.content for o in p.options]
        s.string_array_value.data.extend(p.raw_values if p.set_value else
                                         [shown[i] for i in p.default if 0 <= i < len(shown) and shown[i]])
    else:
        return None
    return s


class Session:
    """One tab of the page at `base` (http://HOST:PORT) opened with the link's query string `query`. Use it from one
    asyncio loop: `await open()`, then fill, click, wait_for_text, and `await close()`."""

    def __init__(self, base: str, query: str = "", locale: str = "en-US", timeout: float = 15.0):
        self.base, self.query, self.locale, self.timeout = base.rstrip("/"), query.lstrip("?"), locale, timeout
        self.cookies: dict[str, str] = {}
        self.nodes: dict[tuple, Node] = {}  # delta path -> what is drawn there
        self.states: dict[str, WidgetState] = {}  # widget id -> its state, sent with every rerun
        self.forms: dict[str, dict[str, WidgetState]] = {}  # form id -> states typed there, sent on its submit
        self.timers: dict[str, tuple[float, asyncio.Task]] = {}  # fragment id -> (interval, its auto-rerun timer)
        self.page_hash = self.session_id = self.run = self.replica = ""
        self.run_fragments: tuple = ()  # the fragments the current run runs (() for a whole run)
        self.running = False
        self.finished = 0  # runs (whole or fragment) finished
        self.reconnects = 0
        self.connected_at = 0.0  # time.monotonic() when the current socket opened
        self.error: BaseException | None = None  # what stopped the tab's reader, if anything did
        self._ws = self._pump = None
        self._closing = False
        self._tick = asyncio.Event()  # set, and replaced, on every message

    # --- what the page shows -------------------------------------------------------------------------------------
    def find(self, label: str | None = None, key: str | None = None, kind: str | None = None) -> Node | None:
        """The drawn widget with this label (exactly) or this user key, optionally of this kind."""
        for node in list(self.nodes.values()):
            if not node.widget or (kind and node.kind != kind):
                continue
            if (label is not None and getattr(node.proto, "label", None) == label) or \
                    (key is not None and node.widget.endswith("-" + key)):
                return node
        return None

    @property
    def connected(self) -> bool:
        return self._ws is not None

    def text_at(self, text: str, since: float = 0.0) -> float | None:
        """When the element now drawn that holds `text` arrived (its ForwardMsg, time.monotonic()), if one does and it
        arrived at `since` or later; else None."""
        found = [n.at for n in list(self.nodes.values()) if n.at >= since and text in n.text]
        return min(found) if found else None

    async def wait_until(self, ready, timeout: float | None = None):
        """Until ready() is true (checked after each message); TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            tick = self._tick
            if self.error:
                raise RuntimeError(f"the session's reader stopped: {self.error!r}") from self.error
            got = ready()
            if got:
                return got
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the page did not get there in time")
            try:
                await asyncio.wait_for(tick.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def wait_for_text(self, text: str, timeout: float | None = None, since: float = 0.0) -> float:
        """When `text` appeared in an element that arrived at `since` or later (time.monotonic())."""
        return await self.wait_until(lambda: self.text_at(text, since), timeout)

    async def idle(self, timeout: float | None = None, after: int | None = None):
        """Until no run is going and at least `after` runs have finished (default: one more than now)."""
        n = self.finished + 1 if after is None else after
        await self.wait_until(lambda: self.finished >= n and not self.running, timeout)

    # --- what a person does --------------------------------------------------------------------------------------
    async def open(self, timeout: float = 60.0):
        """Open the link as a browser does, and wait until its first run has finished."""
        await self._get("/" + (f"?{self.query}" if self.query else ""))
        await self._ping()
        await self._connect()
        self._pump = asyncio.create_task(self._read())
        await self.rerun()
        await self.idle(timeout, after=1)

    async def rerun(self, fragment: str = "", auto: bool = False, trigger: WidgetState | None = None) -> float:
        """Send rerun_script with the tab's link and widget states (and a trigger, for this rerun only); returns
        time.monotonic() just before the send. ConnectionError while the socket is down."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string, state.page_script_hash = self.query, self.page_hash
        state.fragment_id, state.is_auto_rerun = fragment, auto
        state.widget_states.widgets.extend([*self.states.values(), *([trigger] if trigger else [])])
        state.context_info.CopyFrom(ContextInfo(  # what st.context reads: the browser's locale, time zone, address
            timezone="UTC", timezone_offset=0, locale=self.locale, is_embedded=False, color_scheme="light",
            url=f"{self.base}/" + (f"?{self.query}" if self.query else "")))
        data = msg.SerializeToString()
        if self._ws is None:
            raise ConnectionError("the tab is not connected")
        t = time.monotonic()
        try:
            await self._ws.send(data)
        except ConnectionClosed as e:
            raise ConnectionError("the tab lost its socket") from e
        return t

    async def fill(self, label: str, text: str) -> float | None:
        """Type `text` into the text input (or area) with this label. In a form it waits for the form's submit; else it
        is committed as on Enter: a rerun (its time returned)."""
        node = self.find(label=label)
        if node is None or node.kind not in ("text_input", "text_area"):
            raise LookupError(f"no text input {label!r} drawn")
        state = WidgetState(id=node.widget, string_value=text)
        if node.proto.form_id:
            self.forms.setdefault(node.proto.form_id, {})[node.widget] = state
            return None
        self.states[node.widget] = state
        return await self.rerun(node.fragment)

    async def click(self, label: str | None = None, key: str | None = None) -> float:
        """Press the button with this label or user key (a form's submit button submits its form); returns
        time.monotonic() just before its rerun_script was sent."""
        node = self.find(label, key, "button")
        if node is None:
            raise LookupError(f"no button {label or key!r} drawn")
        if getattr(node.proto, "is_form_submitter", False):
            self.states.update(self.forms.pop(node.proto.form_id, {}))
        return await self.rerun(node.fragment, trigger=WidgetState(id=node.widget, trigger_value=True))

    async def close(self):
        self._closing = True
        for fragment in list(self.timers):
            self._stop_timer(fragment)
        if self._ws is not None:
            await self._ws.close()
        if self._pump is not None:
            self._pump.cancel()
            try:
                await self._pump
            except (asyncio.CancelledError, Exception):  # noqa: BLE001  (closing: what it ended with is moot)
                pass

    # --- the wire ------------------------------------------------------------------------------------------------
    def _http(self, path: str) -> tuple[int, object]:
        req = urllib.request.Request(self.base + path, headers={"Cookie": self._cookie()} if self.cookies else {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                r.read()
                return r.status, r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.headers

    async def _get(self, path: str) -> int:
        status, headers = await asyncio.to_thread(self._http, path)
        self._take(headers)
        return status

    async def _ping(self):
        """The frontend's pings before a socket: health and host config, both answered."""
        for path in ("/_stcore/health", "/_stcore/host-config"):
            status = await self._get(path)
            if status != 200:
                raise ConnectionError(f"{path}: HTTP {status}")

    def _cookie(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def _take(self, headers):
        for line in headers.get_all("Set-Cookie") or []:
            name, _, value = line.split(";", 1)[0].partition("=")
            self.cookies[name.strip()] = value.strip()
        self.replica = headers.get("X-Replica") or self.replica

    async def _connect(self):
        url = urllib.parse.urlsplit(self.base)
        token = self.cookies.get("_streamlit_xsrf", "PLACEHOLDER_AUTH_TOKEN")
        protocols = ["streamlit", token, *([self.session_id] if self.session_id else [])]
        self._ws = await connect(f"ws://{url.netloc}/_stcore/stream", subprotocols=protocols, origin=self.base,
                                 additional_headers={"Cookie": self._cookie()} if self.cookies else None,
                                 max_size=None, ping_interval=None, open_timeout=self.timeout)
        self._take(self._ws.response.headers)
        self.connected_at = time.monotonic()

    async def _read(self):
        try:
            while True:
                try:
                    async for data in self._ws:
                        at = time.monotonic()
                        msg = ForwardMsg()
                        msg.ParseFromString(data)
                        self._handle(msg, at)
                        self._notify()
                except ConnectionClosed:
                    pass
                if self._closing:
                    return
                self._ws = None
                self._notify()
                await self._reconnect()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001  (kept for the waiters, who raise it)
            self.error = e
            self._notify()

    async def _reconnect(self):
        """As the frontend's WebsocketConnection: back off, ping, connect again (through the proxy: maybe another
        replica), then ask for a whole run when it had a run, fragment runs or auto-rerun timers going."""
        attempt = 0
        while not self._closing:
            attempt += 1
            top = min(4.0, 0.5 * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(0.25 if attempt == 1 else top / 2, top))
            try:
                await self._ping()
                await self._connect()
            except (OSError, WebSocketException, TimeoutError, ConnectionError):
                continue
            self.reconnects += 1
            if not self.session_id or self.running or self.run_fragments or self.timers:
                await self.rerun()
            return

    def _notify(self):
        self._tick.set()
        self._tick = asyncio.Event()

    def _handle(self, msg: ForwardMsg, at: float):
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.session_id = msg.new_session.initialize.session_id or self.session_id
            self.page_hash = msg.new_session.page_script_hash
            self.run, self.run_fragments = msg.metadata.run.script_run_id, tuple(msg.metadata.run.fragment_ids)
            if not self.run_fragments:  # a whole run: its fragments send their auto_rerun again
                for fragment in list(self.timers):
                    self._stop_timer(fragment)
            self.running = True
        elif kind == "delta":
            self._delta(msg.delta, tuple(msg.metadata.delta_path), at)
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "script_finished":
            if msg.script_finished in DONE:
                self._clear_stale(msg.metadata.run.script_run_id, tuple(msg.metadata.run.fragment_ids))
            self.finished += 1
        elif kind == "auto_rerun":
            fragment, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if fragment and self.timers.get(fragment, (None,))[0] != interval:
                self._stop_timer(fragment)
                self.timers[fragment] = (interval, asyncio.create_task(self._every(fragment, interval)))
        elif kind == "stop_auto_rerun":
            for fragment in msg.stop_auto_rerun.fragment_ids:
                self._stop_timer(fragment)

    def _delta(self, delta, path: tuple, at: float):
        which = delta.WhichOneof("type")
        if which == "new_element":
            kind = delta.new_element.WhichOneof("type")
            proto = getattr(delta.new_element, kind)
            for p in [p for p in self.nodes if len(p) > len(path) and p[:len(path)] == path]:
                del self.nodes[p]  # an element in a block's place: the block's children go with it
            node = self.nodes[path] = Node(kind, proto, self.run, delta.fragment_id, at)
            if node.widget and (node.widget not in self.states or getattr(proto, "set_value", False)):
                state = first_state(kind, proto)
                if state is not None:
                    self.states[node.widget] = state
        elif which == "add_block":  # its children stay until the run's end finds them stale
            self.nodes[path] = Node("block", delta.add_block, self.run, delta.fragment_id, at)

    def _clear_stale(self, run: str, fragments: tuple):
        """The frontend's clearStaleNodes at a run's end: a whole run keeps what it drew; a fragment run drops what an
        earlier run drew in that fragment. Then the states of widgets no longer drawn go."""
        if not fragments and run != self.run:
            return  # a later run has begun: it will clear
        self.nodes = {p: n for p, n in self.nodes.items()
                      if n.run == run or (fragments and n.fragment not in fragments)}
        drawn = {n.widget for n in self.nodes.values() if n.widget}
        self.states = {k: v for k, v in self.states.items() if k in drawn}
        self.forms = {f: {k: v for k, v in s.items() if k in drawn} for f, s in self.forms.items()}

    async def _every(self, fragment: str, interval: float):
        """The frontend's setInterval for a fragment's run_every: a rerun of it every `interval` s, while connected."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            due += interval
            await asyncio.sleep(max(0.0, due - loop.time()))
            if self._ws is not None:
                try:
                    await self.rerun(fragment, auto=True)
                except ConnectionError:
                    pass

    def _stop_timer(self, fragment: str):
        entry = self.timers.pop(fragment, None)
        if entry:
            entry[1].cancel()
