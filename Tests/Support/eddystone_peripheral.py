"""An Eddystone beacon serving the Eddystone Configuration GATT Service, as a python-dbusmock
template loaded into the `bluez5` template's mock (org.freedesktop.DBus.Mock.AddTemplate with
this file's path): GattService1 and GattCharacteristic1 objects under an existing device, the
way bluetoothd shows a connected peripheral's services, with ReadValue and WriteValue doing what
google/eddystone configuration-service/README.md says. Its crypto is the oracle's
(Tests/Crypto/oracle.py: X25519, HKDF-SHA256, AES, the EID), never the code under test.

Parameters (a{sv}):
  device        the device's object path (from org.bluez.Mock.AddDevice)
  oracle        the path of Tests/Crypto/oracle.py
  lockKey       the beacon's lock key, 32 hex digits
  beaconPrivate the beacon's X25519 private key, 64 hex digits
  fault         "" or "register": the slot data write answers Invalid Attribute Length
  slots         how many slots (default 2), all empty

The device also gets org.beaconbridge.TestBeacon: ServiceData() returns the Eddystone-EID
frame (0x30, the ranging byte, the EID) the beacon would advertise now, from the key it derived,
and IdentityKey() that key's hex (for a test to check no output holds it); Locked() says
whether it is locked. The beacon's clock starts at 65280 (the spec's suggestion) and counts
seconds of the mock's monotonic clock.
"""
import importlib.util
import os
import time

import dbus

from dbusmock import mockobject

SERVICE = "a3c87500-8ed3-4bdf-8a39-a01bebede295"
CHARACTERISTICS = {
    "a3c87501-8ed3-4bdf-8a39-a01bebede295": "capabilities",
    "a3c87502-8ed3-4bdf-8a39-a01bebede295": "activeSlot",
    "a3c87506-8ed3-4bdf-8a39-a01bebede295": "lockState",
    "a3c87507-8ed3-4bdf-8a39-a01bebede295": "unlock",
    "a3c87508-8ed3-4bdf-8a39-a01bebede295": "publicKey",
    "a3c87509-8ed3-4bdf-8a39-a01bebede295": "identityKey",
    "a3c8750a-8ed3-4bdf-8a39-a01bebede295": "slotData",
}
GATT_SERVICE = "org.bluez.GattService1"
GATT_CHARACTERISTIC = "org.bluez.GattCharacteristic1"
TEST_BEACON = "org.beaconbridge.TestBeacon"


def _error(name, message):
    return dbus.exceptions.DBusException(message, name="org.bluez.Error." + name)


def load(mock, parameters):
    spec = importlib.util.spec_from_file_location("eddystone_oracle", str(parameters["oracle"]))
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    device = str(parameters["device"])
    lock_key = bytes.fromhex(str(parameters["lockKey"]))
    private = bytes.fromhex(str(parameters["beaconPrivate"]))
    public = oracle.x25519_public(private)
    fault = str(parameters.get("fault", ""))
    count = int(parameters.get("slots", 2))
    start = time.monotonic()
    beacon = {"locked": True, "challenge": os.urandom(16), "slot": 0, "slots": [b""] * count, "keys": {}}

    def clock():
        return 65280 + int(time.monotonic() - start)

    def read(name):
        if name == "lockState":
            return bytes([0 if beacon["locked"] else 1])
        if name == "unlock":
            if not beacon["locked"]:
                raise _error("NotPermitted", "Read not permitted")
            return beacon["challenge"]
        if beacon["locked"]:
            raise _error("NotPermitted", "Read not permitted")
        if name == "capabilities":
            return bytes([0, count, 1, 0, 0x00, 0x0F, 0xEC, 0x00])
        if name == "activeSlot":
            return bytes([beacon["slot"]])
        if name == "publicKey":
            return public
        if name == "identityKey":
            key = beacon["keys"].get(beacon["slot"])
            if key is None:
                raise _error("NotPermitted", "Read not permitted")
            return oracle.aes(lock_key, key)
        if name == "slotData":
            data = beacon["slots"][beacon["slot"]]
            key = beacon["keys"].get(beacon["slot"])
            if not data or key is None:
                return data
            k, now = data[1], clock()
            return bytes([0x30, k]) + now.to_bytes(4, "big") + oracle.eid(key, k, now)
        raise _error("NotSupported", "Operation is not supported")

    def write(name, value):
        if name == "unlock":
            if not beacon["locked"]:
                raise _error("NotPermitted", "Write not permitted")
            expected = oracle.aes(lock_key, beacon["challenge"])
            beacon["challenge"] = os.urandom(16)
            if value != expected:
                raise _error("NotPermitted", "Write not permitted")
            beacon["locked"] = False
            return
        if beacon["locked"]:
            raise _error("NotPermitted", "Write not permitted")
        if name == "lockState":
            if value == b"\x00":
                beacon["locked"] = True
            return
        if name == "activeSlot":
            if len(value) != 1 or value[0] >= count:
                raise _error("InvalidValueLength", "Invalid Length")
            beacon["slot"] = value[0]
            return
        if name == "slotData":
            if fault == "register" or len(value) != 34 or value[0] != 0x30 or value[33] > 15:
                raise _error("InvalidValueLength", "Invalid Length")
            resolver = value[1:33]
            key = oracle.identity_key(private, resolver, resolver, public)
            if key is None:
                raise _error("Failed", "Operation failed with ATT error: 0x80")
            beacon["keys"][beacon["slot"]] = key
            beacon["slots"][beacon["slot"]] = bytes([0x30, value[33]])
            return
        raise _error("NotPermitted", "Write not permitted")

    service = device + "/service0010"
    mock.AddObject(service, GATT_SERVICE, {
        "UUID": dbus.String(SERVICE, variant_level=1),
        "Device": dbus.ObjectPath(device, variant_level=1),
        "Primary": dbus.Boolean(True, variant_level=1),
        "Includes": dbus.Array([], signature="o", variant_level=1),
    }, [])
    for index, (uuid, name) in enumerate(CHARACTERISTICS.items()):
        def read_value(_self, _options, name=name):
            return dbus.Array(list(read(name)), signature="y")

        def write_value(_self, value, _options, name=name):
            write(name, bytes(value))

        mock.AddObject(f"{service}/char{0x11 + 2 * index:04x}", GATT_CHARACTERISTIC, {
            "UUID": dbus.String(uuid, variant_level=1),
            "Service": dbus.ObjectPath(service, variant_level=1),
            "Flags": dbus.Array(["read", "write"], signature="s", variant_level=1),
        }, [
            ("ReadValue", "a{sv}", "ay", read_value),
            ("WriteValue", "aya{sv}", "", write_value),
        ])

    def service_data(_self):
        slot = next(iter(beacon["keys"]), None)
        if slot is None:
            raise _error("Failed", "not provisioned")
        k = beacon["slots"][slot][1]
        return dbus.Array(list(bytes([0x30, 0xEB]) + oracle.eid(beacon["keys"][slot], k, clock())), signature="y")

    def identity_key(_self):
        key = next(iter(beacon["keys"].values()), None)
        return key.hex() if key else ""

    mockobject.objects[device].AddMethods(TEST_BEACON, [
        ("ServiceData", "", "ay", service_data),
        ("IdentityKey", "", "s", identity_key),
        ("Locked", "", "b", lambda _self: beacon["locked"]),
    ])
