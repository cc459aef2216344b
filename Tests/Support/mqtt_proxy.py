#!/usr/bin/env python3
"""A TCP proxy in front of a real MQTT broker that withholds its PUBACKs: a broker that takes
every message and never acknowledges one, or one slow to acknowledge. Everything else (CONNECT,
CONNACK, SUBSCRIBE, the messages it delivers, PINGs, DISCONNECT) passes both ways unchanged, so
the client's session, keep-alive and subscriptions work as against the broker itself.

usage: mqtt_proxy.py --broker PORT --log FILE [--listen PORT] [--puback pass|drop|delay:SECONDS]

It prints its listening port on stdout (one line) once it accepts connections. Its log has one
line per event: "connected", "publish TOPIC" (client to broker), "deliver TOPIC" (broker to
client), "puback dropped", "puback delayed", "puback passed",
"closed"; a test waits on these lines instead of sleeping.
"""

import argparse
import asyncio
import sys


def read_length(buffer, start):
    """The MQTT remaining length at `start`: (length, bytes used), or None when incomplete."""
    multiplier, value = 1, 0
    for used in range(1, 5):
        if start + used - 1 >= len(buffer):
            return None
        byte = buffer[start + used - 1]
        value += (byte & 0x7F) * multiplier
        if byte & 0x80 == 0:
            return value, used
        multiplier *= 128
    raise ValueError("malformed remaining length")


def packets(buffer):
    """Splits whole packets off the front of `buffer`: (packets, rest)."""
    found = []
    while len(buffer) >= 2:
        length = read_length(buffer, 1)
        if length is None:
            break
        total = 1 + length[1] + length[0]
        if len(buffer) < total:
            break
        found.append(bytes(buffer[:total]))
        buffer = buffer[total:]
    return found, buffer


class Proxy:
    def __init__(self, broker_port, mode, log_path):
        self.broker_port = broker_port
        self.mode = mode
        self.log = open(log_path, "a", buffering=1)

    def note(self, line):
        self.log.write(line + "\n")

    async def handle(self, client_reader, client_writer):
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self.broker_port)
        except OSError as error:
            self.note(f"broker refused: {error}")
            client_writer.close()
            return
        self.note("connected")
        lock = asyncio.Lock()

        async def to_client(packet):
            async with lock:
                client_writer.write(packet)
                await client_writer.drain()

        async def delayed(packet, seconds):
            await asyncio.sleep(seconds)
            try:
                await to_client(packet)
            except (ConnectionError, OSError):
                pass

        async def upstream():
            buffer = b""
            while True:
                data = await client_reader.read(65536)
                if not data:
                    break
                buffer += data
                found, buffer = packets(buffer)
                for packet in found:
                    if packet[0] >> 4 == 3:
                        length, used = read_length(packet, 1)
                        at = 1 + used
                        size = int.from_bytes(packet[at : at + 2], "big")
                        topic = packet[at + 2 : at + 2 + size].decode("utf-8", "replace")
                        self.note(f"publish {topic}")
                    broker_writer.write(packet)
                await broker_writer.drain()

        async def downstream():
            buffer = b""
            while True:
                data = await broker_reader.read(65536)
                if not data:
                    break
                buffer += data
                found, buffer = packets(buffer)
                for packet in found:
                    if packet[0] >> 4 == 3:
                        length, used = read_length(packet, 1)
                        at = 1 + used
                        size = int.from_bytes(packet[at : at + 2], "big")
                        topic = packet[at + 2 : at + 2 + size].decode("utf-8", "replace")
                        self.note(f"deliver {topic}")
                    if packet[0] >> 4 == 4:
                        if self.mode == "drop":
                            self.note("puback dropped")
                            continue
                        if self.mode.startswith("delay:"):
                            self.note("puback delayed")
                            asyncio.ensure_future(delayed(packet, float(self.mode[6:])))
                            continue
                        self.note("puback passed")
                    await to_client(packet)

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except (ConnectionError, OSError):
            pass
        for task in tasks:
            task.cancel()
        for writer in (client_writer, broker_writer):
            try:
                writer.close()
            except (ConnectionError, OSError):
                pass
        self.note("closed")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", type=int, required=True)
    parser.add_argument("--listen", type=int, default=0)
    parser.add_argument("--puback", default="drop")
    parser.add_argument("--log", required=True)
    options = parser.parse_args()
    if options.puback not in ("pass", "drop") and not options.puback.startswith("delay:"):
        parser.error("--puback must be pass, drop or delay:SECONDS")
    proxy = Proxy(options.broker, options.puback, options.log)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", options.listen)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
