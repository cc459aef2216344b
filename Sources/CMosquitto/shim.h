// libmosquitto (MQTT 5 client), as seen from Swift. Only BridgeDaemon/Upload/MQTTClient.swift
// imports this.
#ifndef CMOSQUITTO_SHIM_H
#define CMOSQUITTO_SHIM_H

#include <mosquitto.h>
#include <mqtt_protocol.h>

#endif
