// libbluetooth (Debian libbluetooth-dev): the raw HCI socket structures and helpers.
// Only the HCI module imports this.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
