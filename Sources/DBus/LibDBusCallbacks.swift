import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

// libdbus at its C edge: its error struct taken into `DBusError`, and the callbacks it makes into
// a `ConnectionCore`.

extension DBusError {
  /// Takes the name and message out of a C `DBusError` and frees it.
  /// The corresponding C function is `dbus_error_free`.
  init(
    consuming error: inout CDBus.DBusError, fallback: ErrorName, _ context: String,
    file: String = #fileID, line: Int = #line
  ) {
    defer { dbus_error_free(&error) }
    if dbus_error_is_set(&error) != 0 {
      let name = error.name.map { String(cString: $0) } ?? fallback.rawValue
      let message = error.message.map { String(cString: $0) } ?? ""
      self.init(ErrorName(name), message.isEmpty ? context : message, file: file, line: line)
    } else {
      self.init(fallback, context, file: file, line: line)
    }
  }
}

// C callbacks: `data` is the unretained `ConnectionCore`, alive while the reader thread runs.

private func core(_ data: UnsafeMutableRawPointer?) -> ConnectionCore {
  Unmanaged<ConnectionCore>.fromOpaque(data!).takeUnretainedValue()
}

let coreFilter: DBusHandleMessageFunction = { _, message, data in
  guard let message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
  return core(data).filter(message)
}

let coreAddWatch: DBusAddWatchFunction = { watch, data in
  guard let watch else { return 0 }
  core(data).addWatch(watch)
  return 1
}

let coreRemoveWatch: DBusRemoveWatchFunction = { watch, data in
  guard let watch else { return }
  core(data).removeWatch(watch)
}

let coreToggleWatch: DBusWatchToggledFunction = { watch, data in
  guard let watch else { return }
  core(data).toggleWatch(watch)
}

let coreWake: DBusWakeupMainFunction = { data in
  core(data).wake()
}

let coreDispatchStatus: DBusDispatchStatusFunction = { _, _, data in
  core(data).wake()
}
