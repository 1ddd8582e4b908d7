"""An asyncio server of a test fixture (tampering_proxy.py, dtls_mitm.py) run on its own loop in a daemon thread, so
a synchronous scenario can start it, use its port and stop it."""
import asyncio
import threading


class BackgroundLoop:
    def __init__(self, name):
        self.name, self.loop, self.thread = name, None, None

    def start(self, serve, close):
        """Runs `serve()` (a coroutine function returning the bound port) on a new loop in a thread, then the loop
        until `stop()`, then `close()`. Returns the port, or raises what `serve()` raised."""
        ready, box = threading.Event(), {}

        def run():
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
            try:
                box["port"] = self.loop.run_until_complete(serve())
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                box["error"] = error
            ready.set()
            if "port" in box:
                self.loop.run_forever()
                self.loop.run_until_complete(close())
            self.loop.close()

        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()
        ready.wait()
        if "error" in box:
            raise box["error"]
        return box["port"]

    def stop(self, timeout):
        if self.loop and self.thread and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
