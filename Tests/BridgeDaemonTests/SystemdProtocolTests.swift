import BeaconCore
import BridgeDaemon
import Testing

@Suite struct SystemdProtocolTests {
  @Test func journalPrefixesOnlyWhenStderrIsTheJournal() {
    let plain = DaemonLogger(environment: [:])
    #expect(!plain.toJournal)
    #expect(plain.format(.warning, "x") == "warning: x")
    // A JOURNAL_STREAM that is not our stderr's device:inode is ignored.
    #expect(!DaemonLogger(environment: ["JOURNAL_STREAM": "1:2"]).toJournal)
    #expect(!DaemonLogger(environment: ["JOURNAL_STREAM": "garbage"]).toJournal)
  }

  /// A value with a CR/LF cannot forge a journal line: one record is one line.
  @Test func aLogRecordIsOneLine() {
    let logger = DaemonLogger(environment: [:])
    logger.log(.error, "trip t\r\n<3>forged \u{1B}[2J")
    #expect(logger.recent.last == #"error: trip t\r\n<3>forged \u{1B}[2J"#)
  }

  @Test func watchdogIntervalIsHalfOfWatchdogUsec() {
    let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000"])
    #expect(notifier.watchdogInterval == .seconds(15))
    #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "30000000"]).watchdogInterval == nil)
    #expect(
      SystemdNotifier(environment: [
        "NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1",
      ])
      .watchdogInterval == nil)
    #expect(!SystemdNotifier(environment: [:]).notify("READY=1"))
  }
}
