#if canImport(Glibc)
  import Glibc
#endif

/// Comparisons of C strings (as libdbus and the wire hold header fields) with Swift strings,
/// without copying either.
enum CString {
  static func equal(_ text: UnsafePointer<CChar>?, _ expected: String) -> Bool {
    guard let text else { return false }
    var expected = expected
    return expected.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { chars in
        strncmp(text, chars.baseAddress!, chars.count) == 0 && text[chars.count] == 0
      }
    }
  }
}
