"""The bleak side of `make bench`: a BleakScanner (BlueZ backend) on DBUS_SYSTEM_BUS_ADDRESS.

Counts advertisement callbacks and the distinct iBeacons seen; prints one JSON line when it
gets SIGTERM or SIGINT. No work beyond what a minimal presence consumer needs: read the iBeacon
identity from Apple's manufacturer data.
"""

import asyncio
import json
import signal
import sys

from bleak import BleakScanner

APPLE = 0x004C


async def main() -> None:
    seen: set[bytes] = set()
    count = 0

    def detected(device, advertisement) -> None:
        nonlocal count
        count += 1
        data = advertisement.manufacturer_data.get(APPLE)
        if data is not None and len(data) == 23 and data[0] == 0x02:
            seen.add(bytes(data[2:22]))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    async with BleakScanner(detection_callback=detected):
        print("scanning", flush=True)
        await stop.wait()
    print(json.dumps({"callbacks": count, "beacons": len(seen)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
