#!/usr/bin/python3
"""An Eddystone-EID beacon on one of the VM's controllers, through bluetoothd's own GATT server
and advertising APIs (BlueZ doc/gatt-api.txt, doc/advertising-api.txt): a GattApplication with
the Eddystone Configuration Service (google/eddystone configuration-service/README.md),
registered with GattManager1, and a connectable advertisement with LEAdvertisingManager1. Once
provisioned and relocked, it advertises Eddystone-EID frames from the key it derived instead.
Its crypto is the oracle's (Tests/Crypto/oracle.py), never the code under test. Scenario 11 of
Tests/VM/guest.sh runs it; it needs python3-dbus and python3-gi on the host (the guest sees the
host's root read-only).

    eddystone_peripheral.py --adapter hci1 --lock-key HEX --private HEX --state FILE
                            [--refuse-first-registration]

FILE gets one line per event: "ready", "unlocked", "refused registration", "registered K",
"advertising EID HEX" (the frame it then sends), for the scenario to wait on and the host to
check.
"""
import argparse
import os
import sys
import time

import dbus
import dbus.exceptions
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Crypto"))
import oracle  # noqa: E402

BLUEZ = "org.bluez"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
DEVICE = "org.bluez.Device1"
PROPERTIES = "org.freedesktop.DBus.Properties"
GATT_MANAGER = "org.bluez.GattManager1"
ADVERTISING_MANAGER = "org.bluez.LEAdvertisingManager1"
GATT_SERVICE = "org.bluez.GattService1"
GATT_CHARACTERISTIC = "org.bluez.GattCharacteristic1"
ADVERTISEMENT = "org.bluez.LEAdvertisement1"
SERVICE_UUID = "a3c87500-8ed3-4bdf-8a39-a01bebede295"
NAMES = {
    "a3c87501-8ed3-4bdf-8a39-a01bebede295": "capabilities",
    "a3c87502-8ed3-4bdf-8a39-a01bebede295": "activeSlot",
    "a3c87506-8ed3-4bdf-8a39-a01bebede295": "lockState",
    "a3c87507-8ed3-4bdf-8a39-a01bebede295": "unlock",
    "a3c87508-8ed3-4bdf-8a39-a01bebede295": "publicKey",
    "a3c8750a-8ed3-4bdf-8a39-a01bebede295": "slotData",
}
SLOTS = 2
ADVERTISE_AGAIN_MS = 3000


class NotPermitted(dbus.exceptions.DBusException):
    _dbus_error_name = "org.bluez.Error.NotPermitted"


class InvalidValueLength(dbus.exceptions.DBusException):
    _dbus_error_name = "org.bluez.Error.InvalidValueLength"


class Beacon:
    """The configuration service's state, as the spec describes it."""

    def __init__(self, lock_key, private, refuse_first, state_file, on_provisioned):
        self.lock_key, self.private = lock_key, private
        self.public = oracle.x25519_public(private)
        self.refuse = refuse_first
        self.state_file = state_file
        self.on_provisioned = on_provisioned
        self.locked, self.challenge = True, os.urandom(16)
        self.slot, self.slots, self.keys = 0, [b""] * SLOTS, {}
        self.start = time.monotonic()
        self.pending = {}

    def note(self, line):
        with open(self.state_file, "a") as f:
            f.write(line + "\n")

    def clock(self):
        return 65280 + int(time.monotonic() - self.start)

    def frame(self):
        slot = next(iter(self.keys))
        k = self.slots[slot][1]
        return bytes([0x30, 0xEB]) + oracle.eid(self.keys[slot], k, self.clock())

    def read(self, name):
        if name == "lockState":
            return bytes([0 if self.locked else 1])
        if name == "unlock":
            if not self.locked:
                raise NotPermitted("Read not permitted")
            return self.challenge
        if self.locked:
            raise NotPermitted("Read not permitted")
        if name == "capabilities":
            return bytes([0, SLOTS, 1, 0, 0x00, 0x0F, 0xEC, 0x00])
        if name == "activeSlot":
            return bytes([self.slot])
        if name == "publicKey":
            return self.public
        if name == "slotData":
            data, key = self.slots[self.slot], self.keys.get(self.slot)
            if not data or key is None:
                return data
            now = self.clock()
            return bytes([0x30, data[1]]) + now.to_bytes(4, "big") + oracle.eid(key, data[1], now)
        raise NotPermitted("Read not permitted")

    def write(self, name, value, offset):
        # A long write arrives in pieces with their offsets: put them together first.
        if offset:
            value = self.pending.get(name, b"")[:offset] + value
        self.pending[name] = value
        if name == "slotData" and value[:1] == b"\x30" and len(value) < 34:
            return
        if name == "unlock":
            if not self.locked:
                raise NotPermitted("Write not permitted")
            expected = oracle.aes(self.lock_key, self.challenge)
            self.challenge = os.urandom(16)
            if value != expected:
                self.note("wrong unlock token")
                raise NotPermitted("Write not permitted")
            self.locked = False
            self.note("unlocked")
            return
        if self.locked:
            raise NotPermitted("Write not permitted")
        if name == "lockState":
            if value == b"\x00":
                self.locked = True
                if self.keys:
                    self.on_provisioned()
            return
        if name == "activeSlot":
            if len(value) != 1 or value[0] >= SLOTS:
                raise InvalidValueLength("Invalid Length")
            self.slot = value[0]
            return
        if name == "slotData":
            if self.refuse:
                self.refuse = False
                self.note("refused registration")
                raise InvalidValueLength("Invalid Length")
            if len(value) != 34 or value[33] > 15:
                raise InvalidValueLength("Invalid Length")
            resolver = value[1:33]
            key = oracle.identity_key(self.private, resolver, resolver, self.public)
            if key is None:
                raise InvalidValueLength("Invalid Length")
            self.keys[self.slot] = key
            self.slots[self.slot] = bytes([0x30, value[33]])
            self.note("registered %d" % value[33])
            return
        raise NotPermitted("Write not permitted")


class Characteristic(dbus.service.Object):
    def __init__(self, bus, path, service, uuid, beacon):
        self.path, self.service, self.uuid, self.beacon = path, service, uuid, beacon
        dbus.service.Object.__init__(self, bus, path)

    def properties(self):
        return {GATT_CHARACTERISTIC: {
            "Service": dbus.ObjectPath(self.service), "UUID": self.uuid,
            "Flags": dbus.Array(["read", "write"], signature="s")}}

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties()[GATT_CHARACTERISTIC]

    @dbus.service.method(GATT_CHARACTERISTIC, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        value = self.beacon.read(NAMES[self.uuid])
        return dbus.Array(list(value[int(options.get("offset", 0)):]), signature="y")

    @dbus.service.method(GATT_CHARACTERISTIC, in_signature="aya{sv}")
    def WriteValue(self, value, options):
        self.beacon.write(NAMES[self.uuid], bytes(value), int(options.get("offset", 0)))


class Service(dbus.service.Object):
    def __init__(self, bus, path, characteristics):
        self.path, self.characteristics = path, characteristics
        dbus.service.Object.__init__(self, bus, path)

    def properties(self):
        return {GATT_SERVICE: {
            "UUID": SERVICE_UUID, "Primary": True,
            "Characteristics": dbus.Array([c.path for c in self.characteristics], signature="o")}}

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties()[GATT_SERVICE]


class Application(dbus.service.Object):
    def __init__(self, bus, path, objects):
        self.objects = objects
        dbus.service.Object.__init__(self, bus, path)

    @dbus.service.method(OBJECT_MANAGER, out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return {o.path: o.properties() for o in self.objects}


class Advertisement(dbus.service.Object):
    def __init__(self, bus, path, kind, service_uuids, service_data=None):
        self.path = path
        self.props = {"Type": kind, "ServiceUUIDs": dbus.Array(service_uuids, signature="s")}
        if service_data:
            self.set_service_data(service_data)
        dbus.service.Object.__init__(self, bus, path)

    def set_service_data(self, service_data):
        self.props["ServiceData"] = dbus.Dictionary(
            {u: dbus.Array(list(v), signature="y") for u, v in service_data.items()}, signature="sv")

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.props

    @dbus.service.method(ADVERTISEMENT)
    def Release(self):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--lock-key", required=True)
    parser.add_argument("--private", required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--refuse-first-registration", action="store_true")
    args = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    adapter = "/org/bluez/" + args.adapter
    loop = GLib.MainLoop()
    advertising = dbus.Interface(bus.get_object(BLUEZ, adapter), ADVERTISING_MANAGER)
    state = {"advertisement": None}

    def fail(what):
        def handler(error):
            beacon.note("error %s: %s" % (what, error))
            loop.quit()
        return handler

    def advertise(advertisement, then=None):
        def registered():
            state["advertisement"] = advertisement
            if then:
                then()
        advertising.RegisterAdvertisement(dbus.ObjectPath(advertisement.path), {}, reply_handler=registered,
                                          error_handler=fail("RegisterAdvertisement"))

    def connected():
        """Whether a central (the box) is still connected to this adapter."""
        objects = dbus.Interface(bus.get_object(BLUEZ, "/"), OBJECT_MANAGER).GetManagedObjects()
        return any(path.startswith(adapter + "/") and bool(interfaces.get(DEVICE, {}).get("Connected", False))
                   for path, interfaces in objects.items())

    def provisioned():
        # The box disconnects after relocking. Like a beacon, go back to advertising (EIDs now)
        # only once it has: switching while the link is up depends on the controller advertising
        # during a connection, which a slow run then waits on. Bounded: after 60 s, switch anyway.
        deadline = time.monotonic() + 60

        def switch():
            still = connected()
            if still and time.monotonic() < deadline:
                return True
            beacon.note("box still connected after 60 s" if still else "box disconnected")
            advertising.UnregisterAdvertisement(dbus.ObjectPath(state["advertisement"].path))
            frame = beacon.frame()
            eid = Advertisement(bus, "/bb/advertisement1", "broadcast", ["feaa"], {"feaa": frame})
            advertise(eid, lambda: beacon.note("advertising EID " + frame.hex()))
            GLib.timeout_add(ADVERTISE_AGAIN_MS, again, eid)
            return False

        # btvirt's controllers report an advertiser to a scanner when either starts, never again
        # while both go on, and the kernel drops a report that comes before its discovery is
        # under way (each restart of the box's scan, about every 10 s, is such a race). A real
        # beacon is heard at every advertising interval: advertise anew, from the clock as it
        # is, every few seconds, so that the box hears it while its scan runs.
        def again(eid):
            def register():
                eid.set_service_data({"feaa": beacon.frame()})
                advertise(eid)
            advertising.UnregisterAdvertisement(dbus.ObjectPath(eid.path), reply_handler=register,
                                                error_handler=fail("UnregisterAdvertisement"))
            return True
        GLib.timeout_add(500, switch)

    beacon = Beacon(bytes.fromhex(args.lock_key), bytes.fromhex(args.private), args.refuse_first_registration,
                    args.state, provisioned)
    service_path = "/bb/service0"
    characteristics = [Characteristic(bus, "%s/char%d" % (service_path, i), service_path, uuid, beacon)
                       for i, uuid in enumerate(NAMES)]
    service = Service(bus, service_path, characteristics)
    application = Application(bus, "/bb", [service] + characteristics)
    connectable = Advertisement(bus, "/bb/advertisement0", "peripheral", [SERVICE_UUID])
    manager = dbus.Interface(bus.get_object(BLUEZ, adapter), GATT_MANAGER)
    manager.RegisterApplication(
        dbus.ObjectPath("/bb"), {}, reply_handler=lambda: advertise(connectable, lambda: beacon.note("ready")),
        error_handler=fail("RegisterApplication"))
    loop.run()


if __name__ == "__main__":
    main()
