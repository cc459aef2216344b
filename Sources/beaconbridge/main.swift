print("beaconbridge")
