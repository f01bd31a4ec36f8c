"""Load a local HTML file in real headless Chromium, driven over the DevTools protocol on a pipe.

`--remote-debugging-pipe` speaks the protocol on file descriptors 3 (commands in) and 4 (events and
replies out), NUL-separated JSON: no port, no websocket library. The page is opened with the network
emulated offline, JavaScript disabled and every request intercepted (Fetch domain): anything but the
page's own file URL is failed and recorded, so a test can assert that no request left the page.
Console messages, exceptions and log entries (CSP violations land there) are collected; the DOM
domain gives element boxes without running page script; the screenshot covers the whole page.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

WIDTH = 1280


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Box:
    selector: str
    index: int
    x: float
    y: float
    width: float
    height: float


@dataclass
class PageLoad:
    screenshot: bytes  # PNG of the whole page at WIDTH css pixels
    boxes: dict[str, list[Box]]  # selector -> the boxes of its elements
    requests: list[str] = field(default_factory=list)  # every URL the page asked for, its own included
    blocked: list[str] = field(default_factory=list)  # requests other than the page itself (failed)
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, error log entries
    height: int = 0


class DevTools:
    def __init__(self, binary: str, profile: str):
        self._read_fd, child_write = os.pipe()  # child writes fd 4 -> we read
        child_read, self._write_fd = os.pipe()  # we write -> child reads fd 3
        args = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]

        def fds() -> None:  # in the child: our pipe ends become 3 and 4 (moved high first: no clobbering)
            import fcntl

            high_read = fcntl.fcntl(child_read, fcntl.F_DUPFD, 10)
            high_write = fcntl.fcntl(child_write, fcntl.F_DUPFD, 10)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        # 3 and 4 stay open in the child: subprocess closes the others after preexec_fn has run.
        self.process = subprocess.Popen(
            args, pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(child_read)
        os.close(child_write)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def post(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        """Send a command without waiting for its reply (navigation answers only once its request is let through)."""
        self._next += 1
        message: dict = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        return self._next

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self.post(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for k, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(k)
        while True:
            event = self._read_message(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._read_fd)
        os.close(self._write_fd)


def load(path: Path, selectors: list[str], binary: str | None = None) -> PageLoad:
    """Open `path` offline with scripts off, and return its screenshot, element boxes, requests and errors."""
    binary = binary or chromium_binary()
    if binary is None:
        raise FileNotFoundError("no chromium binary on PATH")
    url = Path(path).resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        tools = DevTools(binary, profile)
        try:
            target = tools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network", "DOM"):
                tools.send(f"{domain}.enable", session=session)
            tools.send(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
                session=session,
            )
            tools.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
            tools.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session=session)
            tools.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            tools.post("Page.navigate", {"url": url}, session=session)
            requests, blocked, seen = [], [], []
            deadline = time.monotonic() + 60
            loaded = False
            while not loaded:  # answer every intercepted request until the load event
                event = tools.events.pop(0) if tools.events else tools._read_message(deadline)
                if event.get("method") == "Fetch.requestPaused":
                    request_url = event["params"]["request"]["url"]
                    requests.append(request_url)
                    if request_url == url:
                        tools.send(
                            "Fetch.continueRequest", {"requestId": event["params"]["requestId"]}, session=session
                        )
                    else:
                        blocked.append(request_url)
                        tools.send(
                            "Fetch.failRequest",
                            {"requestId": event["params"]["requestId"], "errorReason": "BlockedByClient"},
                            session=session,
                        )
                elif event.get("method") == "Page.loadEventFired":
                    loaded = True
                else:
                    seen.append(event)
            tools.events[:0] = seen
            metrics = tools.send("Page.getLayoutMetrics", session=session)
            height = int(metrics["cssContentSize"]["height"]) + 1
            tools.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            root = tools.send("DOM.getDocument", {"depth": 0}, session=session)["root"]["nodeId"]
            boxes: dict[str, list[Box]] = {}
            for selector in selectors:
                nodes = tools.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector}, session=session)
                boxes[selector] = []
                for index, node in enumerate(nodes["nodeIds"]):
                    quad = tools.send("DOM.getBoxModel", {"nodeId": node}, session=session)["model"]["border"]
                    xs, ys = quad[0::2], quad[1::2]
                    boxes[selector].append(Box(selector, index, min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)))
            shot = tools.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1},
                },
                session=session,
            )
            errors = []
            for event in tools.events:
                method, params = event.get("method"), event.get("params", {})
                if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    errors.append(f"console: {params.get('args')}")
                elif method == "Runtime.exceptionThrown":
                    errors.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
                elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                    errors.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
                elif method == "Network.loadingFailed" and params.get("errorText") and params.get("type") != "Document":
                    errors.append(f"network: {params.get('errorText')}")
            return PageLoad(base64.b64decode(shot["data"]), boxes, requests, blocked, errors, height)
        finally:
            tools.close()


def non_blank_share(png: bytes, box: Box) -> float:
    """Share of the box's pixels that are not the page's white background."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    crop = image.crop((int(box.x), int(box.y), int(box.x + box.width), int(box.y + box.height)))
    pixels = crop.tobytes()
    return sum(1 for p in pixels if p < 245) / max(1, len(pixels))
